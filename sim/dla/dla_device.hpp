// The cycle-level device: the CSB register file, the memory system (sim/mem) behind TLM-2.0, the
// DLA's engines (CONV, SDP, PDP, CDP) and the OCTAV unit as SystemC modules, and — when the
// configuration has one (ppu_gpcs > 0) — the PPU (sim/ppu) on the same memory system, whose
// front-end registers live in the same register file (unit PPU) and whose push buffers can
// program the DLA (REG_WRITE, WAIT_DLA). DLA engines: Register writes that complete a group's
// programming start the engine; its functional result is computed at start (into an overlay) and
// becomes visible in DRAM, with its status registers and interrupt, when the engine's last write is
// acknowledged. The trace player drives it from sc_main (not from a SystemC thread) through the
// trace::Device interface: every access or wait runs the kernel for the time it takes.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/core/overlay_memory.hpp"
#include "sim/core/register_file.hpp"
#include "sim/dla/conv_core.hpp"
#include "sim/dla/engines.hpp"
#include "sim/dla/stream_engine.hpp"
#include "sim/mem/memory_system.hpp"
#include "sim/ppu/ppu.hpp"
#include "sim/trace/player.hpp"

namespace octasim::dla {

struct LayerTiming {
  std::string engine;
  unsigned group = 0;
  std::uint64_t start_cycle = 0;
  std::uint64_t end_cycle = 0;
  OpResult result;
  EngineStats at_start;  // the engine's counters when the layer started (for per-layer deltas)
  std::uint64_t read_stall_cycles = 0;
  std::uint64_t write_stall_cycles = 0;
  std::size_t engine_index = 0;  // into engines() and DlaDevice::engine()
  // The engine's statistics counters (its stats::Group, in registration order): values when the
  // layer started, and their growth over the layer once it finished.
  std::vector<std::uint64_t> counters_at_start;
  std::vector<std::uint64_t> counters;
  // The performance registers the layer set when it finished (CSB address, value).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> perf_registers;
};

class DlaDevice final : public sc_core::sc_module, public trace::Device {
 public:
  DlaDevice(const sc_core::sc_module_name& name, HwConfig hw);
  DlaDevice(const DlaDevice&) = delete;
  DlaDevice& operator=(const DlaDevice&) = delete;
  ~DlaDevice() override;

  // trace::Device — call from sc_main, outside the kernel (after elaboration).
  void csb_write(std::uint32_t addr, std::uint32_t value) override;
  [[nodiscard]] std::uint32_t csb_read(std::uint32_t addr) override;
  [[nodiscard]] MemoryImage& memory() override { return memory_; }
  [[nodiscard]] bool wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) override;
  void wait_cycles(std::uint64_t cycles) override;
  [[nodiscard]] std::uint64_t cycle() const override;

  // Resets the registers (groups, pointers, interrupt status, LUTs) as NVDLA's reset does;
  // memory keeps its contents. Only while every engine is idle.
  void reset();

  [[nodiscard]] const HwConfig& config() const { return hw_; }
  [[nodiscard]] const std::vector<LayerTiming>& layers() const { return layers_; }
  [[nodiscard]] const EngineModel& engine(std::size_t i) const { return *modules_[i]; }
  [[nodiscard]] const MemorySystem& memory_system() const { return memory_system_; }
  // The PPU, or null when the configuration has none.
  [[nodiscard]] const ppu::Ppu* ppu() const { return ppu_.get(); }
  [[nodiscard]] const sc_core::sc_time& clock_period() const { return period_; }
  // Every statistics group of the device: the engines' (dla.CONV, dla.SDP, ...) and the memory
  // system's (mem.xbar, mem.l2.slice<i>, mem.dram.ch<i>).
  [[nodiscard]] std::vector<const stats::Group*> statistics() const;
  // Records a timeline of the engines, their units and the DRAM from now on (null: stop): a
  // layer track per engine, then the units' tracks. Call before the trace runs.
  void set_timeline(stats::Timeline* timeline);
  // Adds the device's signals to a VCD trace file and drives them from now on: per engine
  // <ENGINE>.busy (an operation running), glb.intr_status (GLB S_INTR_STATUS), and the
  // engines' and DRAM's own (CONV.cacc_credits, dram.bytes, dram.bus_busy_cycles). Call
  // before the trace runs.
  void trace_signals(sc_core::sc_trace_file* file);

 private:
  void run_for(std::uint64_t cycles);
  // What a busy engine is executing: the register groups and units it took at start.
  struct Running {
    RegisterFile::Groups groups;
    UnitList units;
  };

  void start_ready_engines();
  // A CSB write's effect, without the time it takes: the register, an operation it lets start,
  // a PPU doorbell or rebase, the VCD signals. The host's writes and a push buffer's REG_WRITE.
  void write_register(std::uint32_t addr, std::uint32_t value);
  // What the PPU's front end does to the device (its PpuHost, below).
  class PpuPort;
  friend class PpuPort;
  // CSB writes to the PPU's registers: a write to PUT rings the channel's doorbell, one to
  // PB_BASE_LOW points it at a new push buffer (Ppu::rebase). check_ppu_write throws for a
  // channel the configuration lacks (the host's writes); ppu_register_written ignores it (a
  // push buffer's REG_WRITE).
  [[nodiscard]] static ppu_format::ChannelRegister ppu_control_register(std::uint32_t addr);
  void check_ppu_write(std::uint32_t addr) const;
  void ppu_register_written(std::uint32_t addr);
  void raise_interrupt(unsigned status_bit);
  [[nodiscard]] bool units_free(const UnitList& units) const;
  void finish(std::size_t engine_index, std::size_t layer);

  HwConfig hw_;
  sc_core::sc_time period_;
  MemoryImage memory_;
  RegisterFile regs_;
  MemorySystem memory_system_;
  std::array<std::unique_ptr<EngineModel>, kEngineCount> modules_;
  std::array<std::unique_ptr<OverlayMemory>, kEngineCount> overlays_;
  std::array<Running, kEngineCount> running_;
  sc_core::sc_event interrupt_event_;  // a GLB interrupt bit was raised
  std::unique_ptr<PpuPort> ppu_port_;
  std::unique_ptr<ppu::Ppu> ppu_;
  bool waiting_for_interrupt_ = false;
  std::vector<LayerTiming> layers_;
  stats::Timeline* timeline_ = nullptr;
  std::vector<std::uint32_t> layer_tracks_;
  using Flag = sc_core::sc_signal<bool, sc_core::SC_UNCHECKED_WRITERS>;
  std::vector<std::unique_ptr<Flag>> busy_signals_;
  sc_core::sc_signal<unsigned, sc_core::SC_UNCHECKED_WRITERS> intr_signal_{"intr_status"};
  bool drive_signals_ = false;
  void update_signals();
};

}  // namespace octasim::dla
