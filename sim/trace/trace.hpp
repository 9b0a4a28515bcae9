// NVDLA's trace format (.cfg): the commands of NVDLA's verification guide, parsed and checked
// up front so that a malformed line, an unknown register or a missing file is reported before
// anything runs — one error naming file, line and what was expected.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "firmware/ppu/commands.hpp"
#include "firmware/regmap/regmap.hpp"

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

enum class Op : std::uint8_t {
  kRegWrite,      // reg_write(REG, value)
  kRegRead,       // reg_read(REG, name): reads and reports the value
  kRegReadCheck,  // reg_read_check / reg_read_expected(REG, value)
  kPoll,          // poll_reg_<cmp>(REG, value) / poll_field_<cmp>(REG, FIELD, value)
  kMemInit,       // mem_init(mem, addr, size, ALL_ZERO | ALL_ONE | RANDOM[, seed])
  kMemLoad,       // mem_load(mem, addr, "file.dat")
  kIntrNotify,    // intr_notify(INTR, sync_id)
  kSyncNotify,    // sync_notify(target, sync_id)
  kSyncWait,      // sync_wait(target, sync_id)
  kCheckCrc,      // check_crc(sync_id, mem, addr, size, crc)
  kCheckFile,     // check_file(sync_id, mem, addr, size, "golden.dat")
  kCheckNothing,  // check_nothing(sync_id)
  kPpuSubmit,     // ppu_submit(channel, pri_mem, address, "pushbuffer.dat") (octasim)
};

enum class Compare : std::uint8_t { kEqual, kGreater, kLess, kNotEqual, kNotGreater, kNotLess };

// check_file's comparison (octasim extension: an optional sixth argument). kBytes is NVDLA's
// byte-exact comparison; the FP16 rules compare the region as FP16 elements with the thresholds
// of NVDLA's precision guide (models/precision/thresholds.hpp).
enum class FileCompare : std::uint8_t {
  kBytes,         // check_file(id, mem, addr, size, "golden.dat")
  kFp16Sdp,       // ..., FP16_SDP): bit-by-bit identical FP16 elements, worst element reported
  kFp16CcDirect,  // ..., FP16_CC_DIRECT, R*S*C, scale, max_exp): the CC direct threshold
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

struct Command {
  Op op;
  int line;
  // Register commands.
  const regs::RegisterInfo* reg = nullptr;
  const regs::FieldInfo* field = nullptr;  // poll_field_* only
  std::uint32_t value = 0;
  Compare compare = Compare::kEqual;
  // Memory commands.
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  MemPattern pattern = MemPattern::kAllZero;
  std::uint32_t seed = 0;
  std::string path;  // mem_load / check_file: resolved against the trace's directory
  // check_file FP16 rules: R*S*C and scale of the CC rule, and max_exp — one value for every
  // element, or (max_exp_path non-empty) a .dat file of one signed byte per FP16 element.
  FileCompare file_compare = FileCompare::kBytes;
  std::uint32_t cc_terms = 0;
  double cc_scale = 1.0;
  int max_exp = 0;
  std::string max_exp_path;
  double abs_tol = 0.0;  // FP32_TOL / FP16_TOL
  double rel_tol = 0.0;
  unsigned channel = 0;  // ppu_submit
  // Synchronisation.
  std::string sync_id;
  std::string target;  // sync_notify / sync_wait target, reg_read variable
  Interrupt interrupt;
  std::uint32_t crc = 0;
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

[[nodiscard]] const char* op_name(Op op);

}  // namespace octasim::trace
