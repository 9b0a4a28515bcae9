// The OCTAV unit at cycle level: one streaming pass over the input per Newton-Raphson iteration
// (plus pass 0, the statistics), its DMA on the shared DRAM socket, and the divider. The
// functional result (sim/octav/octav_functional.hpp) says how many passes the operation makes
// and how many groups it has; this model gives them their time:
// - A pass is a sequence of read requests of memory_atomic_size * primary_memif_max_burst bytes
//   (the input's lines in feature layout, the array when flat), one request per cycle while at
//   most dma_latency_buffer_atoms atoms are requested and not yet consumed. The datapath takes
//   a request's data once it has arrived, in ceil(elements / octav_elements_per_cycle) cycles
//   (padding lanes of a feature surface are not elements).
// - An input of at most octav_buffer_bytes is read from DRAM in pass 0 only; later passes read
//   the buffer, at the datapath's rate. A larger input is read from DRAM in every pass.
// - After each iteration pass the divider takes octav_divide_latency + groups - 1 cycles (one
//   group per cycle, pipelined; every group goes through it).
// - Per channel/vector, the FP32 results are written (one DMA write) and the operation ends
//   when the write is acknowledged.
// Hence, bandwidth-bound (requests of R bytes, DRAM b bytes/cycle, R/b >= compute per request),
// a DRAM pass of n requests takes n * R/b + latency + compute(last) cycles; compute-bound, it
// takes R/b + latency + the sum of the compute cycles.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "sim/core/clocked.hpp"
#include "sim/core/dma_client.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/engine_model.hpp"

namespace octasim::octav {

class OctavCore final : public sc_core::sc_module, public dla::EngineModel, private Clocked {
 public:
  tlm_utils::simple_initiator_socket<OctavCore> dma_socket{"dma_socket"};

  OctavCore(const sc_core::sc_module_name& name, const HwConfig& hw,
            const sc_core::sc_time& clock_period);
  OctavCore(const OctavCore&) = delete;
  OctavCore& operator=(const OctavCore&) = delete;
  OctavCore(OctavCore&&) = delete;
  OctavCore& operator=(OctavCore&&) = delete;
  ~OctavCore() override = default;

  void start(const dla::Engine& engine, const dla::OpResult& op, const dla::RegRead& regs,
             std::function<void()> on_done) override;
  [[nodiscard]] bool busy() const override { return busy_; }
  [[nodiscard]] const stats::Group& statistics() const override { return stats_; }
  [[nodiscard]] const std::vector<dla::UnitCounters>& units() const override { return units_; }
  [[nodiscard]] std::vector<std::pair<std::uint32_t, std::uint32_t>> perf_registers(
      const dla::Engine& engine, const dla::RegRead& regs) const override;
  // Tracks DMA (one slice per read request, joined at tile detail), datapath (its compute per
  // request, or per buffered pass) and divider (per iteration).
  void set_timeline(stats::Timeline* timeline) override;

  // Cycles of the last operation's passes (pass 0 first) and divisions, for tests and reports.
  [[nodiscard]] const std::vector<std::uint64_t>& last_pass_cycles() const { return pass_cycles_; }

 private:
  struct Request {
    std::uint64_t addr;
    std::uint32_t bytes;
    std::uint32_t elements;
  };

  void run_thread();
  [[nodiscard]] std::uint64_t compute_cycles(std::uint32_t elements) const;
  void dram_pass();
  void buffer_pass();

  const HwConfig& hw_;
  DmaClient dma_;
  bool busy_ = false;
  std::function<void()> on_done_;
  sc_core::sc_event start_ev_;
  sc_core::sc_time started_at_;

  // The operation.
  std::vector<Request> requests_;  // one pass
  unsigned passes_ = 0;
  bool buffered_ = false;
  std::uint32_t groups_ = 1;
  std::uint64_t result_addr_ = 0;
  std::uint32_t result_bytes_ = 0;
  std::vector<std::uint64_t> pass_cycles_;

  stats::Group stats_;
  dla::EngineCounters counters_;
  stats::Counter passes_count_, iterations_, divide_cycles_, dma_busy_, dma_stall_,
      stats_pass_cycles_, iteration_cycles_;
  std::vector<dla::UnitCounters> units_;
  stats::Timeline* timeline_ = nullptr;  // only when a timeline was asked for
  std::uint32_t dma_track_ = 0, datapath_track_ = 0, divider_track_ = 0;
  unsigned pass_ = 0;  // the pass running (timeline slice names)
};

}  // namespace octasim::octav
