// Rubik (RBK) at cycle level: a read DMA and a write DMA on the shared memory system, slice by
// slice as NVDLA's unit description says ("it takes one W x 1 x C input slice and converts it
// to a W' x H' x C' output sub cube, then continues with the next input slice; it never sends a
// request across a line boundary; it always tries to send 256-byte requests"):
// - The RDMA walks each slice's input lines (rubik_slice: the real addresses and strides of the
//   mode) in requests of at most 256 bytes that never cross a line, issuing one interface width
//   (primary_memif_width / 8 bytes) per cycle.
// - Slice buffer: dma_latency_buffer_atoms memory atoms. The RDMA reserves a whole slice's atoms
//   before requesting it (an empty buffer takes a slice of any size) and the WDMA frees them
//   once it has written the slice; a slice that does not fit waits (D_PERF_READ_STALL).
// - The WDMA starts a slice once all its data have arrived and writes its output lines in the
//   same 256-byte requests at the same interface rate; the operation ends when the last write
//   is acknowledged (the wait for it: D_PERF_WRITE_STALL).
// Hence a layer takes at least max(bytes read, bytes written) / interface bytes per cycle.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "sim/core/bounded_channel.hpp"
#include "sim/core/clocked.hpp"
#include "sim/core/dma_client.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/engine_model.hpp"
#include "sim/dla/rubik_functional.hpp"

namespace octasim::dla {

class RubikCore final : public sc_core::sc_module, public EngineModel, private Clocked {
 public:
  static constexpr std::uint32_t kRequestBytes = 256;

  tlm_utils::simple_initiator_socket<RubikCore> rdma_socket{"rdma_socket"};
  tlm_utils::simple_initiator_socket<RubikCore> wdma_socket{"wdma_socket"};

  RubikCore(const sc_core::sc_module_name& name, const HwConfig& hw,
            const sc_core::sc_time& clock_period);
  RubikCore(const RubikCore&) = delete;
  RubikCore& operator=(const RubikCore&) = delete;
  RubikCore(RubikCore&&) = delete;
  RubikCore& operator=(RubikCore&&) = delete;
  ~RubikCore() override = default;

  void start(const Engine& engine, const OpResult& op, const RegRead& regs,
             std::function<void()> on_done) override;
  [[nodiscard]] bool busy() const override { return busy_; }
  [[nodiscard]] const stats::Group& statistics() const override { return stats_; }
  [[nodiscard]] const std::vector<UnitCounters>& units() const override { return units_; }
  // D_PERF_READ_STALL (cycles the RDMA held a slice back: slice buffer full) and
  // D_PERF_WRITE_STALL (cycles the WDMA waited for its last acknowledge) of the operation, when
  // D_PERF_ENABLE.PERF_EN is set.
  [[nodiscard]] std::vector<std::pair<std::uint32_t, std::uint32_t>> perf_registers(
      const Engine& engine, const RegRead& regs) const override;
  void set_timeline(stats::Timeline* timeline) override;

 private:
  struct SliceReady {
    sc_core::sc_time arrival;  // the slice's last read data
    std::uint64_t atoms;       // what it holds of the slice buffer
  };

  void read_thread();
  void write_thread();
  // Moves `lines` through `dma` in requests of at most kRequestBytes; returns the time the last
  // read data arrive / the last write is acknowledged.
  sc_core::sc_time move(DmaClient& dma, tlm::tlm_command cmd, const std::vector<RubikLine>& lines);

  const HwConfig& hw_;
  DmaClient rdma_, wdma_;
  BoundedChannel<SliceReady> slices_;  // read, not yet written (sized by the atoms)
  models::ops::RubikParams params_;
  bool busy_ = false;
  std::function<void()> on_done_;
  sc_core::sc_event start_ev_;
  sc_core::sc_time started_at_;

  stats::Group stats_;
  EngineCounters counters_;
  stats::Counter rdma_busy_, rdma_stall_, wdma_busy_;
  std::vector<UnitCounters> units_;
  stats::Timeline* timeline_ = nullptr;
  std::uint32_t rdma_track_ = 0, wdma_track_ = 0;
};

}  // namespace octasim::dla
