// The trace player: runs a parsed NVDLA trace against a device — register writes and reads,
// polls, memory initialisation and loads, interrupt waits, sync points and result checks —
// and reports one line per check. The device decides how time passes: the functional device
// executes operations in zero time, the SystemC device cycle by cycle.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/device_memory.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/trace/trace.hpp"

namespace octasim::trace {

class Device {
 public:
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  virtual ~Device() = default;

  virtual void csb_write(std::uint32_t addr, std::uint32_t value) = 0;
  [[nodiscard]] virtual std::uint32_t csb_read(std::uint32_t addr) = 0;
  [[nodiscard]] virtual MemoryImage& memory() = 0;  // DRAM (pri_mem)
  // The image of `space` (sec_mem: the CV-SRAM). std::out_of_range naming the configuration
  // when it has no such memory; a device with DRAM only keeps this default.
  [[nodiscard]] virtual MemoryImage& memory_of(MemorySpace space) {
    if (space == MemorySpace::kDram) return memory();
    return DeviceMemory(memory(), nullptr).image(space);
  }
  // Lets simulated time pass until GLB S_INTR_STATUS has `status_bit` set (true) or
  // `timeout_cycles` have passed without it (false).
  [[nodiscard]] virtual bool wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) = 0;
  // Lets `cycles` of simulated time pass (between poll reads).
  virtual void wait_cycles(std::uint64_t cycles) = 0;
  [[nodiscard]] virtual std::uint64_t cycle() const = 0;
};

// DRAM and, when `device` has one, the CV-SRAM behind DMA addresses (sim/core/device_memory.hpp):
// the memory a host reaches a compiled network's data through (firmware/net/runtime.hpp).
[[nodiscard]] inline DeviceMemory dma_memory(Device& device) {
  MemoryImage* cvsram = nullptr;
  try {
    cvsram = &device.memory_of(MemorySpace::kCvSram);
  } catch (const std::out_of_range&) {  // no secondary memory interface
  }
  return DeviceMemory(device.memory(), cvsram);
}

struct PlayerOptions {
  std::uint64_t timeout_cycles = 50'000'000;  // an interrupt or poll that takes longer fails
  std::uint64_t poll_interval_cycles = 16;
  // Called with one line per check and per reg_read, as they happen.
  std::function<void(const std::string&)> report;
};

struct CheckOutcome {
  int line;
  std::string description;  // "check_crc 0x90000040+0x8"
  bool pass;
  std::string detail;  // on failure: first mismatch
};

struct PlayResult {
  std::vector<CheckOutcome> checks;
  std::uint64_t first_write_cycle = 0;
  std::uint64_t compute_start_cycle = 0;  // last register write before the last interrupt wait
  std::uint64_t end_cycle = 0;            // when the last awaited interrupt arrived
  [[nodiscard]] bool all_passed() const;
  // 0 for a trace that awaited no interrupt (nothing ended it after its first write).
  [[nodiscard]] std::uint64_t trace_cycles() const {
    return end_cycle > first_write_cycle ? end_cycle - first_write_cycle : 0;
  }
  [[nodiscard]] std::uint64_t compute_cycles() const { return end_cycle - compute_start_cycle; }
};

// Plays `trace` on `device`. A failed check is reported in the result; anything that stops the
// trace (a register access the device rejects, an interrupt that never comes, an operation the
// device cannot execute, memory outside the address space) throws TraceError naming the line.
[[nodiscard]] PlayResult play(const Trace& trace, Device& device, const PlayerOptions& options);

}  // namespace octasim::trace
