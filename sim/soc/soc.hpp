// The SoC at cycle level: one SystemC module holding the memory system (sim/mem: crossbar, L2
// slices, DRAM channels behind TLM-2.0) and the masters sharing it — the DLA (its engines from
// the engine registry, octasim's OCTAV unit among them) and, when the configuration has one
// (ppu_gpcs > 0), the PPU (sim/ppu) — with the CSB register file, the CSB decoder that routes
// register writes, and the interrupt controller. The PPU's front-end registers live in the same
// register file (unit PPU) and its push buffers program the DLA (REG_WRITE, WAIT_DLA).
//
// The Soc only runs inside the kernel; a host (the trace player) drives it from sc_main through
// HostAdapter (host_adapter.hpp), which runs the kernel for the time each access takes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <systemc>

#include "sim/core/device_memory.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/core/register_file.hpp"
#include "sim/mem/memory_system.hpp"
#include "sim/ppu/ppu.hpp"
#include "sim/soc/csb_decoder.hpp"
#include "sim/soc/dla.hpp"
#include "sim/soc/interrupt_controller.hpp"

namespace octasim::soc {

class Soc final : public sc_core::sc_module {
 public:
  // Children are named <name>.mem, <name>.CONV (one per engine), <name>.ppu; statistics groups
  // after them (the report's names: run_command names the SoC "dla").
  Soc(const sc_core::sc_module_name& name, HwConfig hw);
  Soc(const Soc&) = delete;
  Soc& operator=(const Soc&) = delete;
  ~Soc() override;

  // Resets the registers (groups, pointers, interrupt status, LUTs) as NVDLA's reset does;
  // memory keeps its contents. Only while the DLA and the PPU are idle.
  void reset();

  [[nodiscard]] const HwConfig& config() const { return hw_; }
  [[nodiscard]] const sc_core::sc_time& clock_period() const { return period_; }
  // The current cycle (simulated time in clock periods).
  [[nodiscard]] std::uint64_t cycle() const;
  [[nodiscard]] MemoryImage& memory() { return memory_; }  // DRAM
  // DRAM and the CV-SRAM (when the configuration has a secondary memory interface).
  [[nodiscard]] DeviceMemory& device_memory() { return device_memory_; }
  [[nodiscard]] RegisterFile& registers() { return regs_; }
  [[nodiscard]] CsbDecoder& csb() { return csb_; }
  [[nodiscard]] InterruptController& interrupts() { return interrupts_; }
  [[nodiscard]] const Dla& dla() const { return dla_; }
  [[nodiscard]] const MemorySystem& memory_system() const { return memory_system_; }
  // The PPU, or null when the configuration has none.
  [[nodiscard]] const ppu::Ppu* ppu() const { return ppu_.get(); }

  // Every statistics group: the engines' (dla.CONV, dla.SDP, ...), the memory system's
  // (mem.xbar, mem.l2.slice<i>, mem.dram.ch<i>) and the PPU's.
  [[nodiscard]] std::vector<const stats::Group*> statistics() const;
  // Records a timeline of the engines, their units, the DRAM and the PPU from now on (null:
  // stop): a layer track per engine, then the units' tracks. Call before the trace runs.
  void set_timeline(stats::Timeline* timeline);
  // Adds the SoC's signals to a VCD trace file and drives them from now on: per engine
  // <ENGINE>.busy (an operation running), glb.intr_status (GLB S_INTR_STATUS), and the
  // engines' and DRAM's own (CONV.cacc_credits, dram.bytes, dram.bus_busy_cycles). Call
  // before the trace runs.
  void trace_signals(sc_core::sc_trace_file* file);

 private:
  // What the PPU's front end does to the SoC (its PpuHost).
  class PpuPort;

  HwConfig hw_;
  sc_core::sc_time period_;
  MemoryImage memory_;
  std::unique_ptr<MemoryImage> cvsram_;  // null without a secondary memory interface
  DeviceMemory device_memory_;
  RegisterFile regs_;
  MemorySystem memory_system_;
  InterruptController interrupts_;
  Dla dla_;
  CsbDecoder csb_;
  std::unique_ptr<PpuPort> ppu_port_;
  std::unique_ptr<ppu::Ppu> ppu_;
};

}  // namespace octasim::soc
