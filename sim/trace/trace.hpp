// NVDLA's trace format (.cfg): the commands of NVDLA's verification guide, parsed and checked
// up front so that a malformed line, an unknown register or a missing file is reported before
// anything runs — one error naming file, line and what was expected.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "firmware/ppu/commands.hpp"
#include "firmware/regmap/regmap.hpp"
#include "sim/core/device_memory.hpp"

namespace octasim::trace {

// A user-visible error in a trace or data file: "file:line: message".
class TraceError : public std::runtime_error {
 public:
  TraceError(std::string file, int line, const std::string& message);
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] int line() const { return line_; }

 private:
  std::string file_;
  int line_;
};

// The largest region one trace command may initialise or check (mem_init, check_crc,
// check_file sizes): 1 GiB. A larger one stops the trace at its line when it plays, before
// anything is allocated or read — a mem_init fills host memory page by page, a check_file with
// an FP16 rule holds the region twice, and with 64-bit addresses nothing else would bound them.
inline constexpr std::uint64_t kMaxRegionBytes = std::uint64_t{1} << 30;

enum class Compare : std::uint8_t { kEqual, kGreater, kLess, kNotEqual, kNotGreater, kNotLess };

// check_file's comparison (octasim extension: an optional sixth argument). kBytes is NVDLA's
// byte-exact comparison; the FP16 rules compare the region as FP16 elements with the thresholds
// of NVDLA's precision guide (models/precision/thresholds.hpp).
enum class FileCompare : std::uint8_t {
  kBytes,           // check_file(id, mem, addr, size, "golden.dat")
  kFp16Sdp,         // ..., FP16_SDP): bit-by-bit identical FP16 elements, worst element reported
  kFp16CcDirect,    // ..., FP16_CC_DIRECT, R*S*C, scale, max_exp): the CC direct threshold
  kFp16CcWinograd,  // ..., FP16_CC_WINOGRAD, C, scale, max_exp): the CC Winograd threshold
  // Tolerance rules for PPU results (octasim): elements of the format, |got - want| <=
  // abs_tol + rel_tol * |want|; a NaN must meet a NaN, an infinity the same infinity.
  kFp32Tol,  // ..., FP32_TOL, abs_tol, rel_tol)
  kFp16Tol,  // ..., FP16_TOL, abs_tol, rel_tol)
};
enum class MemPattern : std::uint8_t { kAllZero, kAllOne, kRandom };

// The interrupts of GLB S_INTR_STATUS, named as traces name them (SDP_0, CDMA_DAT_1, ...).
struct Interrupt {
  std::string name;
  std::uint32_t status_bit;
};

// The arguments of each command, parsed and checked. Which command a trace line is, how its
// arguments are read and what the player does with it are one row of the command table
// (sim/trace/commands.cpp); data-file paths are resolved against the trace's directory.
struct RegWrite {  // reg_write(REG, value)
  const regs::RegisterInfo* reg = nullptr;
  std::uint32_t value = 0;
  // Counts towards the trace's timing (first and last write cycles). The .txn reader clears it
  // for its interrupt-status clears, which .cfg traces leave to intr_notify.
  bool timed = true;
};
struct RegRead {  // reg_read(REG, name): reads and reports the value
  const regs::RegisterInfo* reg = nullptr;
  std::string target;
};
struct RegReadCheck {  // reg_read_check / reg_read_expected(REG, value)
  const regs::RegisterInfo* reg = nullptr;
  std::uint32_t value = 0;
  std::uint32_t mask = ~0u;  // compares (register & mask) with value (.txn read_reg)
};
struct Poll {  // poll_reg_<cmp>(REG, value) / poll_field_<cmp>(REG, FIELD, value)
  const regs::RegisterInfo* reg = nullptr;
  const regs::FieldInfo* field = nullptr;  // poll_field_* only
  Compare compare = Compare::kEqual;
  std::uint32_t value = 0;
  std::uint32_t mask = ~0u;  // compares (register & mask) (.txn read_reg)
  // At most this many reads (0: bounded by the player's timeout only).
  std::uint64_t max_reads = 0;
  // An interrupt wait (.txn read_reg of GLB S_INTR_STATUS expecting a bit set): its match ends
  // the trace's timing as intr_notify's interrupt does.
  bool interrupt_wait = false;
};
struct MemInit {  // mem_init(mem, addr, size, ALL_ZERO | ALL_ONE | RANDOM[, seed])
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  MemPattern pattern = MemPattern::kAllZero;
  std::uint32_t seed = 0;
  MemorySpace space = MemorySpace::kDram;  // pri_mem or sec_mem
};
// How a data file is written: NVDLA's packet .dat of .cfg traces, or the first release's
// (.txn traces) plain byte lists (sim/trace/txn_data.cpp).
enum class DataFormat : std::uint8_t {
  kPackets,    // {offset:0x.., size:N, payload:0x.. ..}
  kV1Surface,  // "Key = value" header lines, then whitespace-separated 0x.. bytes
  kV1Dump,     // "dumped memory,start_address=0x.. size=0x..", decoration, 0x.. bytes
};
struct MemLoad {  // mem_load(mem, addr, "file.dat")
  std::uint64_t addr = 0;
  std::string path;
  DataFormat format = DataFormat::kPackets;
  std::uint64_t size = 0;  // kV1Surface: the bytes to load (the file holds at least as many)
  MemorySpace space = MemorySpace::kDram;  // pri_mem or sec_mem
  bool space_by_address = false;  // .txn: the memory whose range holds addr (memory_space_at)
};
struct IntrNotify {  // intr_notify(INTR, sync_id)
  Interrupt interrupt;
  std::string sync_id;
};
struct SyncNotify {  // sync_notify(target, sync_id)
  std::string target;
  std::string sync_id;
};
struct SyncWait {  // sync_wait(target, sync_id)
  std::string target;
  std::string sync_id;
};
struct CheckCrc {  // check_crc(sync_id, mem, addr, size, crc)
  std::string sync_id;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::uint32_t crc = 0;
  MemorySpace space = MemorySpace::kDram;  // pri_mem or sec_mem
};
struct CheckFile {      // check_file(sync_id, mem, addr, size, "golden.dat"[, rule, ...])
  std::string sync_id;  // empty: no sync point (.txn output_feature_map.dat)
  DataFormat format = DataFormat::kPackets;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::string path;
  // FP16 rules: R*S*C (Winograd: C) and scale of the CC rule, and max_exp — one value for every
  // element, or (max_exp_path non-empty) a .dat file of one signed byte per FP16 element.
  FileCompare file_compare = FileCompare::kBytes;
  std::uint32_t cc_terms = 0;
  double cc_scale = 1.0;
  int max_exp = 0;
  std::string max_exp_path;
  double abs_tol = 0.0;  // FP32_TOL / FP16_TOL
  double rel_tol = 0.0;
  MemorySpace space = MemorySpace::kDram;  // pri_mem or sec_mem
  bool space_by_address = false;  // .txn: the memory whose range holds addr (memory_space_at)
};
struct CheckNothing {  // check_nothing(sync_id)
  std::string sync_id;
};
struct PpuSubmit {  // ppu_submit(channel, pri_mem, address, "pushbuffer.dat") (octasim)
  unsigned channel = 0;
  std::uint64_t addr = 0;
  std::string path;
};

using Args = std::variant<RegWrite, RegRead, RegReadCheck, Poll, MemInit, MemLoad, IntrNotify,
                          SyncNotify, SyncWait, CheckCrc, CheckFile, CheckNothing, PpuSubmit>;

// A command's kind, named for code that asks which command it is: the position of its
// arguments in Args (kCommands in commands.cpp holds the row of each, in this order).
enum class Op : std::uint8_t {
  kRegWrite,
  kRegRead,
  kRegReadCheck,
  kPoll,
  kMemInit,
  kMemLoad,
  kIntrNotify,
  kSyncNotify,
  kSyncWait,
  kCheckCrc,
  kCheckFile,
  kCheckNothing,
  kPpuSubmit,
};

struct Command {
  Op op = Op::kRegWrite;
  int line = 0;
  Args args;
  // The arguments of a command known to be a T (std::bad_variant_access otherwise).
  template <class T>
  [[nodiscard]] const T& as() const {
    return std::get<T>(args);
  }
};

struct Trace {
  std::string path;
  std::vector<Command> commands;
};

// Parses a trace file; throws TraceError on the first problem.
[[nodiscard]] Trace parse_trace_file(const std::string& path);
// Parses trace text; `path` names it in errors and resolves relative data-file names.
[[nodiscard]] Trace parse_trace(const std::string& text, const std::string& path);

// One packet of a .dat memory file: {offset:0x.., size:N, payload:0x.. ..}.
struct DatPacket {
  std::uint64_t offset;
  std::vector<std::uint8_t> payload;
};
// Reads a .dat file; throws TraceError naming the file and line of a malformed packet.
[[nodiscard]] std::vector<DatPacket> read_dat_file(const std::string& path);
// Reads a data file of any format as packets (sim/trace/txn_data.cpp): kV1Surface as one
// packet of its first `size` bytes (TraceError when it holds fewer), kV1Dump as one packet of
// its bytes at offset 0.
[[nodiscard]] std::vector<DatPacket> read_data_file(const std::string& path, DataFormat format,
                                                    std::uint64_t size = 0);

// The name the player's messages give a command (reg_read_check, poll, ...).
[[nodiscard]] const char* op_name(Op op);

}  // namespace octasim::trace
