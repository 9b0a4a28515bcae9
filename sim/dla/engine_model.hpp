// What the cycle-level device needs of an engine's SystemC model: start an operation whose
// functional result is known, report when its last write is acknowledged, and count what it
// did. StreamEngine (SDP, PDP, CDP) and ConvCore (the convolution pipeline) implement it.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/stats.hpp"
#include "sim/dla/engines.hpp"

namespace sc_core {
class sc_trace_file;
}

namespace octasim::dla {

class FlyingLink;

// The counter handles every engine registers in its stats::Group, each with its own
// description (the group is the one place their values are read: the report's unit totals,
// a layer's deltas, the perf registers). Names: operations, active_cycles (OP start to
// completion), busy_cycles (datapath computing; convolution: CSC issuing packages),
// read_stall_cycles (datapath waiting for DMA data), write_stall_cycles (waiting for room
// towards the output), bytes_read, bytes_written, and elements processed (convolution: macs).
struct EngineCounters {
  stats::Counter operations, active_cycles, busy_cycles, read_stall_cycles, write_stall_cycles,
      bytes_read, bytes_written, elements;
};

// One hardware unit inside an engine (CDMA data DMA, CSC, RDMA, WDMA, ...) as its statistics
// counters describe it: indices into the engine's stats::Group, -1 where the unit has none.
struct UnitCounters {
  std::string name;         // CDMA_DAT, CDMA_WT, CSC, CACC; RDMA, core, WDMA
  int busy = -1;            // cycles the unit worked
  std::vector<int> stalls;  // cycles it waited (summed)
  int bytes_read = -1;
  int bytes_written = -1;
};

class EngineModel {
 public:
  EngineModel() = default;
  EngineModel(const EngineModel&) = delete;
  EngineModel& operator=(const EngineModel&) = delete;
  virtual ~EngineModel() = default;

  // Starts the operation `engine` runs with registers `regs` and functional result `op`;
  // `on_done` runs (in simulation context) when its last write is acknowledged. Only when idle.
  virtual void start(const Engine& engine, const OpResult& op, const RegRead& regs,
                     std::function<void()> on_done) = 0;
  [[nodiscard]] virtual bool busy() const = 0;
  // SDP -> PDP on the fly (engines.hpp, feeds_pdp): the next start() hands its SDP output to
  // `link` (its OpResult::to_pdp is set) or, for a flying PDP, takes its input from `link`,
  // instead of a WDMA writing / an RDMA reading memory. Null: memory. Engines that hold neither
  // SDP nor PDP have no such path.
  virtual void set_flying_link(FlyingLink* link) {
    if (link != nullptr) throw std::logic_error("this engine has no SDP -> PDP flying path");
  }
  // While busy, the engine's other register group holds an enabled operation (`next_regs` reads
  // it): an engine whose DMA works ahead (the convolution's CDMA fetching the next layer's
  // weights into free CBUF banks) may start on it. No effect by default.
  virtual void prefetch(const RegRead& next_regs) { (void)next_regs; }
  // The engine's statistics counters (group named after the module: dla.CONV), the one source of
  // its totals, of a layer's counts and of the perf registers.
  [[nodiscard]] virtual const stats::Group& statistics() const = 0;
  // The engine's units and which of its counters describe them.
  [[nodiscard]] virtual const std::vector<UnitCounters>& units() const = 0;
  // Records the engine's activity into `timeline` from now on (null: stop); one track per unit.
  virtual void set_timeline(stats::Timeline* timeline) { (void)timeline; }
  // Adds the engine's own handshake/status signals (if any) to a VCD trace file and starts
  // driving them (they are left alone otherwise, which costs nothing). Before the first sc_start.
  virtual void trace_signals(sc_core::sc_trace_file* file) { (void)file; }
  // The performance registers (CSB address, value) the operation that just finished sets, as
  // its D_PERF_ENABLE fields (read through `regs`) select: the DMA stall and latency counters
  // NVDLA's C-model leaves at zero, filled from the simulated timing.
  [[nodiscard]] virtual std::vector<std::pair<std::uint32_t, std::uint32_t>> perf_registers(
      const Engine& engine, const RegRead& regs) const = 0;

  // Where the engine reports that one of its stages finished before the whole operation: the
  // index into Engine::interrupts of the interrupt that stage raises (the convolution pipeline:
  // CDMA_DAT when the input is in CBUF, CDMA_WT when the last weights are, CACC after its last
  // delivery). The SoC raises it at that time; the rest come with on_done.
  using StageDone = std::function<void(std::size_t interrupt_index)>;
  void on_stage_done(StageDone hook) { stage_done_ = std::move(hook); }

 protected:
  void stage_done(std::size_t interrupt_index) const {
    if (stage_done_) stage_done_(interrupt_index);
  }

 private:
  StageDone stage_done_;
};

// A 64-bit count in a 32-bit counter register (sticks at the maximum).
[[nodiscard]] inline std::uint32_t saturate32(std::uint64_t v) {
  return v > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(v);
}

}  // namespace octasim::dla
