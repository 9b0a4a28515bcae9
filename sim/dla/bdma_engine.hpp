// The BDMA (bridge DMA) at cycle level: a read DMA and a write DMA joined by the BDMA's data
// buffer. The read DMA requests the source lines (line and surface strides, real addresses)
// one request of the interface width per cycle while the buffer has room; the write DMA writes
// each piece to the destination lines once its data have arrived and frees its buffer space;
// the operation ends when the last write is acknowledged. Both DMAs share the memory system with
// the other engines. v1_ias_unit_description.rst gives the BDMA two interfaces of 512 bits
// with bursts of up to 4; octasim's BDMA issues one request of the configuration's primary
// interface width (primary_memif_width: 512 bits on nv_full) per cycle, in 32-byte atoms
// (CFG_LINE's unit), with a buffer of dma_latency_buffer_atoms atoms.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
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
#include "sim/dla/engine_model.hpp"

namespace octasim::dla {

class BdmaEngine final : public sc_core::sc_module, public EngineModel, private Clocked {
 public:
  static constexpr unsigned kAtomBytes = 32;  // CFG_LINE counts lines in 32-byte units

  tlm_utils::simple_initiator_socket<BdmaEngine> read_socket{"read_socket"};
  tlm_utils::simple_initiator_socket<BdmaEngine> write_socket{"write_socket"};

  BdmaEngine(const sc_core::sc_module_name& name, const HwConfig& hw,
             const sc_core::sc_time& clock_period);
  BdmaEngine(const BdmaEngine&) = delete;
  BdmaEngine& operator=(const BdmaEngine&) = delete;

  // EngineModel: one BDMA operation (one slot of a launched group): the read DMA walks
  // op.dma.input, the write DMA op.dma.output.
  void start(const Engine& engine, const OpResult& op, const RegRead& regs,
             std::function<void()> on_done) override;
  [[nodiscard]] bool busy() const override { return busy_; }
  [[nodiscard]] const stats::Group& statistics() const override { return stats_; }
  [[nodiscard]] const std::vector<UnitCounters>& units() const override { return units_; }
  void set_timeline(stats::Timeline* timeline) override;
  // With CFG_STATUS.STALL_COUNT_EN: the group's STATUS_GRP<n>_READ_STALL / _WRITE_STALL plus
  // this operation's stalls (the register file clears them when the group is launched).
  [[nodiscard]] std::vector<std::pair<std::uint32_t, std::uint32_t>> perf_registers(
      const Engine& engine, const RegRead& regs) const override;

  // Bytes one request carries (the interface width).
  [[nodiscard]] unsigned request_bytes() const { return read_.params().request_bytes; }

 private:
  struct Piece {
    std::uint32_t bytes;
    sc_core::sc_time ready;  // the data have arrived in the buffer
    bool last;
  };

  void read_thread();
  void write_thread();

  const HwConfig& hw_;
  std::vector<std::uint32_t> pieces_;  // bytes per piece, in order
  AddressGenerator read_walk_, write_walk_;
  DmaClient read_, write_;
  std::function<void()> on_done_;
  bool busy_ = false;
  sc_core::sc_time started_at_;
  sc_core::sc_event start_ev_;
  BoundedChannel<Piece> to_write_;

  stats::Group stats_;
  EngineCounters counters_;
  stats::Counter read_busy_;
  std::vector<UnitCounters> units_;
  stats::Timeline* timeline_ = nullptr;
  std::uint32_t read_track_ = 0, write_track_ = 0;
};

}  // namespace octasim::dla
