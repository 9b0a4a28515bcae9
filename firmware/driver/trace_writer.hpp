// An Mmio that records firmware's register programming as an NVDLA trace (.cfg, the syntax of
// NVDLA's trace tests) with register names from the generated map (NVDLA_SDP.D_CVT_SCALE_0),
// plus the trace commands that prepare memory (mem_init, mem_load of .dat packet files) and
// check results (check_crc, reg_read_check). `octasim run` plays what it saves.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "firmware/driver/mmio.hpp"

namespace octasim::firmware {

// Largest payload of one .dat packet (NVDLA's trace files use 4 and 32).
inline constexpr std::size_t kDatPacketBytes = 32;

// `bytes` (loaded at offset 0) as an NVDLA .dat file: "{", one packet per line
// "{offset:0x20, size:32, payload:0x01 0x02 ...} ,", "}". Packets hold at most
// kDatPacketBytes; an empty input gives a file with no packets.
[[nodiscard]] std::string format_dat(const std::vector<std::uint8_t>& bytes);

// The name traces give a register: NVDLA_<UNIT>.<NAME>_0. Throws FirmwareError when no
// register lives at `addr`.
[[nodiscard]] std::string trace_register_name(std::uint32_t addr);
// The name traces give the interrupt of GLB S_INTR_STATUS bit `status_bit` (SDP_DONE_STATUS0
// -> SDP_0). Throws FirmwareError for a bit that is no unit's done interrupt.
[[nodiscard]] std::string trace_interrupt_name(unsigned status_bit);

// Writes `text` to `path`, replacing it; throws FirmwareError ("cannot write 'path': reason").
void write_text_file(const std::string& path, const std::string& text);

// The memory a trace command addresses: pri_mem (DRAM, the primary interface) or sec_mem (the
// CV-SRAM behind the secondary interface, on configurations with one).
enum class TraceMemory : std::uint8_t { kPrimary, kSecondary };
[[nodiscard]] inline const char* trace_memory_name(TraceMemory m) {
  return m == TraceMemory::kSecondary ? "sec_mem" : "pri_mem";
}

class TraceWriter final : public Mmio {
 public:
  struct DataFile {
    std::string name;  // file name next to the trace
    std::vector<std::uint8_t> bytes;
  };

  TraceWriter() = default;

  // reg_write(NVDLA_UNIT.REG_0, 0x..);
  void write32(std::uint32_t addr, std::uint32_t value) override;
  // reg_read(NVDLA_UNIT.REG_0, read_N); a trace is written before anything runs, so the value
  // is unknown here: returns 0. Firmware that must branch on a read cannot be recorded.
  [[nodiscard]] std::uint32_t read32(std::uint32_t addr) override;
  // intr_notify(UNIT_G, sync_id_N); the player waits for the interrupt and clears it.
  void wait_interrupt(unsigned status_bit) override;

  // "// text" (one line; newlines become spaces).
  void comment(const std::string& text);
  // mem_init(pri_mem, addr, size, ALL_ZERO); sec_mem with TraceMemory::kSecondary (also below).
  void mem_init_zero(std::uint64_t addr, std::uint64_t size,
                     TraceMemory memory = TraceMemory::kPrimary);
  // mem_load(pri_mem, addr, "name"); `bytes` become the .dat file `name` that save() writes.
  // `name` must be a plain file name ending in .dat, used once.
  void mem_load(std::uint64_t addr, const std::string& name, std::vector<std::uint8_t> bytes,
                TraceMemory memory = TraceMemory::kPrimary);
  // check_crc(sync_id_N, pri_mem, addr, size, crc); with the sync id of the latest
  // wait_interrupt (throws FirmwareError when there was none).
  void check_crc(std::uint64_t addr, std::uint64_t size, std::uint32_t crc,
                 TraceMemory memory = TraceMemory::kPrimary);
  // ppu_submit(channel, pri_mem, addr, "name"): `bytes` (a push buffer) become the .dat file
  // `name`; the player loads it and rings the channel's doorbell.
  void ppu_submit(unsigned channel, std::uint64_t addr, const std::string& name,
                  std::vector<std::uint8_t> bytes);
  // check_file(sync_id_N, pri_mem, addr, size, "name"[, rule]) against `golden` (written as
  // `name`), with the sync id of the latest wait_interrupt; `rule` as the trace takes it after
  // the file name ("FP32_TOL, 0, 1e-6"), empty for byte-exact.
  void check_file(std::uint64_t addr, const std::string& name, std::vector<std::uint8_t> golden,
                  const std::string& rule = "", TraceMemory memory = TraceMemory::kPrimary);
  // reg_read_check(NVDLA_UNIT.REG_0, expected);
  void check_register(std::uint32_t addr, std::uint32_t expected);

  [[nodiscard]] const std::string& text() const { return text_; }
  [[nodiscard]] const std::vector<DataFile>& data_files() const { return files_; }

  // Writes the trace as `dir`/`cfg_name`, every data file and the `beside` files (name, text)
  // beside it, all or none (each under a temporary name first: models/io/atomic_file.hpp);
  // `dir` must exist. Returns the trace's path. Throws FirmwareError naming the file that could
  // not be written.
  std::string save(const std::string& dir, const std::string& cfg_name,
                   const std::vector<std::pair<std::string, std::string>>& beside = {}) const;

 private:
  void line(const std::string& text);
  // Records a .dat file to write beside the trace: a plain name ending in .dat, used once.
  void add_file(const std::string& name, std::vector<std::uint8_t> bytes);

  std::string text_;
  std::vector<DataFile> files_;
  std::string last_sync_id_;
  unsigned syncs_ = 0;
  unsigned reads_ = 0;
};

}  // namespace octasim::firmware
