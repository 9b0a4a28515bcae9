// The SoC's DLA: its engines' cycle-level models, built from the engine registry
// (sim/dla/engines.hpp: CONV, SDP, CDP, PDP and octasim's OCTAV unit) on the memory system,
// and what sequences them: an engine starts when the register writes complete its programming
// and the units it needs are free; its functional result is computed at start (into an
// overlay) and becomes visible in memory, with its status and perf registers and interrupts,
// when its last write is acknowledged. Each operation is recorded as a LayerTiming. An operation
// whose SDP output goes to PDP starts together with the flying PDP it pairs with
// (dla::feeds_pdp): two layers, joined by a FlyingLink.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

#include "sim/core/device_memory.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/core/overlay_memory.hpp"
#include "sim/core/register_file.hpp"
#include "sim/dla/engine_model.hpp"
#include "sim/dla/engines.hpp"
#include "sim/dla/flying_link.hpp"
#include "sim/mem/memory_system.hpp"
#include "sim/soc/interrupt_controller.hpp"

namespace octasim::soc {

// One operation of an engine (a layer) as it ran.
struct LayerTiming {
  std::string engine;
  unsigned group = 0;
  std::uint64_t start_cycle = 0;
  std::uint64_t end_cycle = 0;
  dla::OpResult result;
  std::size_t engine_index = 0;  // into dla::engines() and Dla::engine()
  // The engine's statistics counters (its stats::Group, in registration order): values when the
  // layer started, and their growth over the layer once it finished.
  std::vector<std::uint64_t> counters_at_start;
  std::vector<std::uint64_t> counters;
  // The performance registers the layer set when it finished (CSB address, value).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> perf_registers;
};

class Dla {
 public:
  // Builds every engine's model (a child of the module under construction, named after the
  // engine) with its DMA sockets bound to `memory_system`.
  Dla(const HwConfig& hw, const sc_core::sc_time& clock_period, DeviceMemory& memory,
      RegisterFile& regs, MemorySystem& memory_system, InterruptController& interrupts);
  Dla(const Dla&) = delete;
  Dla& operator=(const Dla&) = delete;
  ~Dla();

  // Starts every engine whose programming is complete and whose units are free (after a
  // D_OP_ENABLE write, and when an operation finishes).
  void start_ready_engines();
  [[nodiscard]] bool busy() const;
  // An operation that could not start when another finished (programming refused while the
  // kernel ran: a BDMA copy queued behind another) pauses the kernel; the host rethrows it here
  // after sc_start returns, so it reaches the user as one line naming the trace line.
  void rethrow_pending_error() const;

  [[nodiscard]] const std::vector<LayerTiming>& layers() const { return layers_; }
  [[nodiscard]] const dla::EngineModel& engine(std::size_t i) const { return *models_[i]; }
  // The growth of the counter `name` of layer `l`'s engine over the layer (0 when the engine has
  // no such counter or the layer has not finished).
  [[nodiscard]] std::uint64_t layer_counter(const LayerTiming& l, const std::string& name) const;
  // The engines' statistics groups (dla.CONV, dla.SDP, ...), in registry order.
  [[nodiscard]] std::vector<const stats::Group*> statistics() const;
  // A layer track per engine, then the engines' unit tracks.
  void set_timeline(stats::Timeline* timeline);
  // <ENGINE>.busy per engine (an operation running).
  void trace_busy_signals(sc_core::sc_trace_file* file);
  // The engines' own signals (CONV.cacc_credits).
  void trace_engine_signals(sc_core::sc_trace_file* file);
  void update_signals();

 private:
  // What a busy engine is executing: the register groups and units it took at start.
  struct Running {
    RegisterFile::Groups groups;
    dla::UnitList units;
    std::uint32_t raised_early = 0;  // interrupts its stages raised (by index)
    bool prefetch_offered = false;   // the next group's operation was offered to prefetch()
  };
  // Offers a busy CONV engine the operation waiting in its other register group (CDMA and CSC
  // enabled there): CDMA may fetch its weights ahead.
  void offer_prefetch(std::size_t engine_index);

  [[nodiscard]] bool units_free(const dla::UnitList& units) const;
  [[nodiscard]] std::uint64_t cycle() const;
  void start(std::size_t engine_index, RegisterFile::Groups groups, const dla::UnitList& units);
  // Records operation `r` of engine `i` as a layer and starts its model; `link` set for an
  // SDP -> PDP pair (dla::feeds_pdp).
  void launch(std::size_t i, const RegisterFile::Groups& groups, const dla::UnitList& units,
              dla::OpResult r, dla::FlyingLink* link);
  void finish(std::size_t engine_index, std::size_t layer);
  // A stage of a running engine finished: its interrupt `index` is raised now.
  void stage_done(std::size_t engine_index, std::size_t index);

  const HwConfig& hw_;
  sc_core::sc_time period_;
  DeviceMemory& memory_;
  RegisterFile& regs_;
  InterruptController& interrupts_;
  std::array<std::unique_ptr<dla::EngineModel>, dla::kEngineCount> models_;
  std::array<std::unique_ptr<OverlayMemory>, dla::kEngineCount> overlays_;
  std::array<Running, dla::kEngineCount> running_;
  dla::FlyingLink flying_link_;  // SDP -> PDP on the fly (one pair runs at a time: one PDP)
  std::vector<LayerTiming> layers_;
  stats::Timeline* timeline_ = nullptr;
  std::vector<std::uint32_t> layer_tracks_;
  using Flag = sc_core::sc_signal<bool, sc_core::SC_UNCHECKED_WRITERS>;
  std::vector<std::unique_ptr<Flag>> busy_signals_;
  bool drive_signals_ = false;
  mutable std::exception_ptr pending_error_;  // cleared when rethrown
};

}  // namespace octasim::soc
