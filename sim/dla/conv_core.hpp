// NVDLA's convolution pipeline at cycle level (nv_small direct convolution; the mechanisms and
// their sources are in the comments of conv_core.cpp):
//
//   CDMA data DMA   --> CBUF (whole input cube) --.
//   CDMA weight DMA --> CBUF (WEIGHT_BANK space) --+-> CSC issues packages -> CMAC -> CACC
//                                                         ^ credits (16 atoms)       |
//                                                         '--- CACC delivery <-------'
//                                                               1 atom / 9 cycles -> SDP -> WDMA
//
// - CDMA's data and weight clients share the DRAM bus (HwConfig::dram_bandwidth()); each keeps at
//   most dma_latency_buffer_atoms in flight. The weight client fetches whole kernel groups and
//   stalls while the CBUF weight space (WEIGHT_BANK banks) is full; a group's space is released
//   when the CSC has issued its last package.
// - The CSC starts once the whole input cube is in CBUF and, per kernel group, once the group's
//   weights are. Loop order: kernel group, stripe, channel block, kernel row, kernel column; one
//   package (one kernel position x one channel block for a stripe of output atoms) takes
//   max(stripe length, MAC cells) cycles, whatever the group's kernels: the weight loader fills
//   one MAC cell per cycle for the next package meanwhile. MAC cells: atomic-K (nv_small,
//   nv_large), atomic-K/2 where cells have 16-bit multipliers (nv_full: 16 cells, two INT8
//   kernels each), so a deep-channel 1x1 layer with one output pixel takes 8 cycles per atomic
//   operation on nv_small and 16 on nv_full (the unit description's "16 cycles to load weight for
//   next atomic operation").
// - Stripes: 2 x cells output atoms while 4 x cells remain, then cells, then the rest.
// - The last package of a stripe waits for as many CACC credits as the stripe has atoms
//   (2 x cells credits in all); CACC returns one credit per atom it hands to SDP, one atom per
//   (atom elements / SDP throughput + 1) cycles, conv_pipeline_latency after the package issue.
// - SDP writes each stripe's output through the WDMA; the layer ends when the last write is
//   acknowledged.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "sim/core/address_generator.hpp"
#include "sim/core/bounded_channel.hpp"
#include "sim/core/clocked.hpp"
#include "sim/core/dma_client.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/conv_functional.hpp"
#include "sim/dla/engine_model.hpp"
#include "sim/dla/flying_link.hpp"

namespace octasim::dla {

class ConvCore final : public sc_core::sc_module, public EngineModel, private Clocked {
 public:
  tlm_utils::simple_initiator_socket<ConvCore> dma_socket{"dma_socket"};

  ConvCore(const sc_core::sc_module_name& name, const HwConfig& hw,
           const sc_core::sc_time& clock_period);

  void start(const Engine& engine, const OpResult& op, const RegRead& regs,
             std::function<void()> on_done) override;
  [[nodiscard]] bool busy() const override { return busy_; }
  [[nodiscard]] const stats::Group& statistics() const override { return stats_; }
  // SDP's output to a flying PDP: handed to `link` stripe by stripe instead of written.
  void set_flying_link(FlyingLink* link) override { next_link_ = link; }
  // CDMA's weight client fetches the next layer's kernel groups, once the running layer's are
  // fetched, into the CBUF banks the running layer does not use (direct convolution,
  // uncompressed, one batch, no weight reuse); the next layer then skips those groups.
  void prefetch(const RegRead& next_regs) override;
  [[nodiscard]] const std::vector<UnitCounters>& units() const override { return units_; }
  void set_timeline(stats::Timeline* timeline) override;
  // CONV.cacc_credits: the CSC's CACC delivery credits.
  void trace_signals(sc_core::sc_trace_file* file) override;
  // CDMA D_PERF_{DAT,WT}_READ_{STALL,LATENCY} when CDMA D_PERF_ENABLE.DMA_EN is set; SDP's
  // D_PERF_WDMA_WRITE_STALL (0: the WDMA's writes are posted) when SDP PERF_DMA_EN is set.
  [[nodiscard]] std::vector<std::pair<std::uint32_t, std::uint32_t>> perf_registers(
      const Engine& engine, const RegRead& regs) const override;

 private:
  // CDMA's DMA counters (per layer through their D_PERF registers): cycles a ready read request
  // was held back (latency buffer full, or for weights the CBUF weight space) and the summed
  // request-to-data latency; and the units' busy cycles and bytes.
  struct CdmaPerf {
    stats::Counter dat_stall, wt_stall, dat_latency, wt_latency;
    stats::Counter dat_busy, wt_busy, dat_bytes, wt_bytes, cacc_busy, sdp_write_stall,
        sdp_bytes_to_pdp;
  };

  struct Stripe {
    std::uint32_t atoms;     // output atoms CACC delivers for it
    std::uint64_t bytes;     // output bytes SDP writes for it
    sc_core::sc_time ready;  // its last package's results reach the CACC delivery buffer
  };

  // Output bytes of a delivered stripe on their way to SDP's WDMA.
  struct Write {
    std::uint64_t bytes;
    sc_core::sc_time ready;  // after SDP's pipeline
  };

  void data_dma_thread();
  void weight_dma_thread();
  // The next layer's kernel groups that fit the free banks, until the next layer starts.
  void fetch_ahead();
  void csc_thread();
  void delivery_thread();
  void sdp_wdma_thread();
  // SDP_RDMA's operand streams (BRDMA/NRDMA/ERDMA surfaces in memory: bias tables, a residual)
  // read beside the convolution; delivery waits for the operands of what it hands to SDP.
  void sdp_rdma_thread();
  void wait_for_operands(std::uint64_t delivered_bytes);
  // One CDMA read of the next `bytes` of `walk` (or at `addr`) through `client`: holds its atoms
  // in the client's latency buffer until the data arrive, paces the caller at one request per
  // cycle, and accounts the stall, latency, busy cycles and bytes. Returns when the request was
  // issued and when its data arrive.
  struct Read {
    sc_core::sc_time issued, arrival;
  };
  Read cdma_read(DmaClient& client, AddressGenerator* walk, std::uint64_t addr, std::uint32_t bytes,
                 stats::Counter& stall, stats::Counter& latency, stats::Counter& busy,
                 stats::Counter& bytes_read);

  const HwConfig& hw_;
  bool busy_ = false;
  stats::Group stats_;
  EngineCounters counters_;
  CdmaPerf perf_;
  std::vector<UnitCounters> units_;
  // Only when a timeline was asked for: tracks of the CDMA data and weight DMAs, CSC, CACC
  // delivery, and the CACC credit counter.
  stats::Timeline* timeline_ = nullptr;
  std::uint32_t dat_track_ = 0, wt_track_ = 0, csc_track_ = 0, cacc_track_ = 0, credit_series_ = 0;
  [[nodiscard]] bool tiles() const {
    return timeline_ != nullptr && timeline_->wants(stats::Detail::kTile);
  }
  sc_core::sc_signal<unsigned, sc_core::SC_UNCHECKED_WRITERS> credits_signal_{"cacc_credits"};
  bool drive_signals_ = false;
  void credits_changed() {
    if (tiles()) timeline_->sample(credit_series_, now(), credits_);
    if (drive_signals_) credits_signal_.write(credits_);
  }
  std::function<void()> on_done_;
  sc_core::sc_time started_at_;

  // The layer.
  ConvLayer layer_;
  std::uint64_t data_bytes_ = 0;
  std::vector<std::uint64_t> group_bytes_;    // weight bytes per kernel group
  std::vector<std::uint32_t> group_kernels_;  // kernels per group
  std::vector<std::uint32_t> stripes_;        // stripe lengths (output atoms), same per group
  std::uint32_t packages_ = 0;                // packages per stripe
  std::uint32_t atomic_k_ = 8;                // kernels per group at the layer's precision
  std::uint32_t cells_ = 8;                   // MAC cells: the stripe and package floor
  std::uint64_t weight_space_ = 0;            // CBUF weight bytes (WEIGHT_BANK banks)
  std::uint64_t output_bytes_ = 0;
  std::uint32_t atoms_per_output_ = 1;  // memory atoms of output per output atom of a group
  // Winograd (conv_winograd.hpp): stripes count atomic operations (4x4x4 input tiles), each
  // delivering 2x2 output atoms; the credits count atomics. 1 in direct convolution.
  std::uint32_t outputs_per_atomic_ = 1;

  // CDMA -> CSC.
  sc_core::sc_event start_ev_;
  sc_core::sc_time data_ready_;
  bool data_done_ = false;
  sc_core::sc_event data_ev_;
  std::vector<sc_core::sc_time> group_ready_;  // per group, once fetched
  std::size_t groups_fetched_ = 0;
  sc_core::sc_event group_ev_;
  std::uint64_t weight_resident_ = 0;  // bytes requested and not yet released
  sc_core::sc_event release_ev_;
  bool weights_start_ = false;  // start() was called: the weight client fetches the layer
  bool weight_reuse_ = false;   // the layer's WEIGHT_REUSE
  sc_core::sc_time start_at_;   // ... from this time
  // The next layer's weights fetched ahead: its weight address and kernel-group sizes, the CBUF
  // bytes free beside the running layer, and when each fetched group (a prefix) arrived.
  struct Prefetch {
    std::uint64_t weight_base = 0;
    std::vector<std::uint64_t> group_bytes;
    std::uint64_t budget = 0;
    std::vector<sc_core::sc_time> ready;
    bool requested = false;
  } prefetch_;
  sc_core::sc_event prefetch_ev_;
  std::vector<sc_core::sc_time> prefetched_ready_;  // per group of the layer: fetched ahead

  // CSC -> CACC delivery.
  std::uint32_t credits_ = 0;
  sc_core::sc_event credit_ev_;
  BoundedChannel<Stripe> to_deliver_;
  std::size_t stripes_total_ = 0;

  // CACC delivery -> SDP WDMA.
  BoundedChannel<Write> to_wdma_;
  std::size_t stripes_written_ = 0;
  std::size_t stripes_delivered_ = 0;  // by CACC to SDP
  // Indices into the CONV engine's interrupts (engines.hpp): the stages that finish early.
  static constexpr std::size_t kCdmaDatInterrupt = 0, kCdmaWtInterrupt = 1, kCaccInterrupt = 2;

  FlyingLink* next_link_ = nullptr;  // set for the next start()
  FlyingLink* link_ = nullptr;       // the running layer's SDP -> PDP link (null: to memory)

  // SDP_RDMA operand streams: each with its own latency buffer of dma_latency_buffer_atoms
  // (NVDLA's B/N/E RDMAs have separate latency FIFOs), refilled as delivery consumes; per stream
  // the bytes requested and, per request, where it ends and when its data arrive.
  struct OperandStream {
    AddressGenerator walk;
    std::uint64_t total = 0, issued = 0;
    std::vector<std::pair<std::uint64_t, sc_core::sc_time>> arrivals;
  };
  std::vector<OperandStream> operands_;
  std::uint64_t operands_consumed_out_ = 0;  // output bytes delivered (operands released)
  std::uint64_t operands_wanted_out_ = 0;    // output bytes the waiting delivery reaches
  sc_core::sc_event operand_issued_ev_, operand_released_ev_;

  AddressGenerator data_walk_, output_walk_;
  DmaClient data_dma_, weight_dma_, wdma_, sdp_rdma_;
};

}  // namespace octasim::dla
