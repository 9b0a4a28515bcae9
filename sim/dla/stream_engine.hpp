// One DLA post-processing engine (SDP, PDP or CDP) at cycle level: its RDMA, datapath and WDMA
// as three SystemC threads joined by bounded buffers, so DMA latency, bus bandwidth shared with
// the other clients, datapath throughput and back-pressure all shape its timing. It replays a
// TimingPlan: per step, the RDMA requests the step's bytes (one request per cycle, at most
// `primary_memif_max_burst` atoms each) while its latency buffer has room; the datapath starts
// a step once its data has arrived and spends the step's compute cycles; the WDMA writes the
// results after the pipeline latency. The engine finishes when the last write is acknowledged.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "octasim/regs/nvdla.hpp"
#include "sim/core/address_generator.hpp"
#include "sim/core/bounded_channel.hpp"
#include "sim/core/clocked.hpp"
#include "sim/core/dma_client.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/engine_model.hpp"
#include "sim/dla/flying_link.hpp"
#include "sim/dla/timing_plan.hpp"

namespace octasim::dla {

// What distinguishes SDP, PDP and CDP to the stream engine: how an operation becomes a plan (from
// its OpResult and descriptor, timing_plan.hpp), and which perf registers hold its DMA stall
// counters (RDMA perf enable and its DMA_EN field, the read-stall register; the core's perf
// enable, its field, the write-stall register).
struct StreamSpec {
  TimingPlan (*plan)(const OpResult& op, const HwConfig& hw);
  std::uint32_t rdma_enable;
  regs::Field rdma_enable_field;
  std::uint32_t read_stall;
  std::uint32_t core_enable;
  regs::Field core_enable_field;
  std::uint32_t write_stall;
};
[[nodiscard]] const StreamSpec& sdp_stream();
[[nodiscard]] const StreamSpec& pdp_stream();
[[nodiscard]] const StreamSpec& cdp_stream();

class StreamEngine final : public sc_core::sc_module, public EngineModel, private Clocked {
 public:
  tlm_utils::simple_initiator_socket<StreamEngine> rdma_socket{"rdma_socket"};
  tlm_utils::simple_initiator_socket<StreamEngine> wdma_socket{"wdma_socket"};

  StreamEngine(const sc_core::sc_module_name& name, const HwConfig& hw,
               const sc_core::sc_time& clock_period, const StreamSpec& spec);
  StreamEngine(const StreamEngine&) = delete;
  StreamEngine& operator=(const StreamEngine&) = delete;

  // EngineModel: plans the operation (the spec's planner, from op and op.descriptor; the
  // registers are not read) and starts it; the RDMA walks the input and operand surfaces, the
  // WDMA the output surface (OpResult::dma), on real addresses.
  void start(const Engine& engine, const OpResult& op, const RegRead& regs,
             std::function<void()> on_done) override;
  [[nodiscard]] bool busy() const override { return busy_; }
  // SDP producing for a flying PDP: its WDMA hands each output step to the link (no writes);
  // a flying PDP: its RDMA side waits on the link for each input step (no reads).
  void set_flying_link(FlyingLink* link) override { next_link_ = link; }
  [[nodiscard]] const stats::Group& statistics() const override { return stats_; }
  [[nodiscard]] const std::vector<UnitCounters>& units() const override { return units_; }
  void set_timeline(stats::Timeline* timeline) override;
  [[nodiscard]] std::vector<std::pair<std::uint32_t, std::uint32_t>> perf_registers(
      const Engine& engine, const RegRead& regs) const override;

 private:
  static constexpr std::size_t kWriteQueueSteps = 2;  // lines of results the WDMA can hold
  struct InFlight {
    std::size_t step;
    sc_core::sc_time ready;  // data arrived (RDMA->core) or result available (core->WDMA)
  };

  void rdma_thread();
  void core_thread();
  void wdma_thread();
  void consume_flying_step(const Step& s);

  const HwConfig& hw_;
  const StreamSpec& spec_;
  TimingPlan plan_;
  AddressGenerator read_walk_, write_walk_;
  DmaClient rdma_, wdma_;
  std::function<void()> on_done_;
  bool busy_ = false;
  FlyingLink* next_link_ = nullptr;  // set for the next start()
  FlyingLink* link_ = nullptr;       // the running operation's, when on the fly
  bool fly_out_ = false;             // SDP output -> link_ (no WDMA writes)
  bool fly_in_ = false;              // PDP input <- link_ (no RDMA reads)
  std::uint64_t fly_consumed_ = 0;   // flying input: bytes the datapath has taken
  sc_core::sc_time started_at_;

  sc_core::sc_event start_ev_;
  BoundedChannel<InFlight> to_core_;                    // RDMA -> datapath
  BoundedChannel<InFlight> to_wdma_{kWriteQueueSteps};  // datapath -> WDMA
  std::size_t steps_written_ = 0;
  sc_core::sc_event written_ev_;
  stats::Group stats_;
  EngineCounters counters_;
  stats::Counter rdma_busy_, rdma_stall_, wdma_busy_, bytes_on_the_fly_;
  std::vector<UnitCounters> units_;
  stats::Timeline* timeline_ = nullptr;  // only when a timeline was asked for
  std::uint32_t rdma_track_ = 0, core_track_ = 0, wdma_track_ = 0;
  [[nodiscard]] bool tiles() const {
    return timeline_ != nullptr && timeline_->wants(stats::Detail::kTile);
  }
};

}  // namespace octasim::dla
