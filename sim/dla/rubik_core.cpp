#include "sim/dla/rubik_core.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "octasim/regs/nvdla.hpp"

namespace octasim::dla {

RubikCore::RubikCore(const sc_core::sc_module_name& name, const HwConfig& hw,
                     const sc_core::sc_time& clock_period)
    : sc_core::sc_module(name),
      Clocked(clock_period),
      hw_(hw),
      rdma_(rdma_socket, clock_period,
            {hw.dla.memory_atomic_size, hw.dla.primary_memif_width / 8,
             hw.dla.dma_latency_buffer_atoms}),
      wdma_(wdma_socket, clock_period,
            {hw.dla.memory_atomic_size, hw.dla.primary_memif_width / 8, 0}),
      stats_(this->name()) {
  using stats::Unit;
  auto& c = counters_;
  c.operations = stats_.add("operations", "operations started", Unit::kCount);
  c.active_cycles = stats_.add(
      "active_cycles", "cycles from an operation's start to its last write acknowledged, summed",
      Unit::kCycles);
  c.busy_cycles =
      stats_.add("busy_cycles", "cycles the WDMA spent issuing the reshaped lines", Unit::kCycles);
  c.read_stall_cycles = stats_.add("read_stall_cycles",
                                   "cycles the WDMA waited for a slice's read data", Unit::kCycles);
  c.write_stall_cycles =
      stats_.add("write_stall_cycles", "cycles the WDMA waited for its last write acknowledge",
                 Unit::kCycles, "NVDLA_RBK.D_PERF_WRITE_STALL_0");
  c.bytes_read = stats_.add("bytes_read", "bytes the RDMA read", Unit::kBytes);
  c.bytes_written = stats_.add("bytes_written", "bytes the WDMA wrote", Unit::kBytes);
  c.elements = stats_.add("elements", "input elements moved", Unit::kOps);
  rdma_busy_ =
      stats_.add("rdma_busy_cycles", "cycles the RDMA spent issuing read requests", Unit::kCycles);
  rdma_stall_ =
      stats_.add("rdma_stall_cycles", "cycles the RDMA held a slice back (slice buffer full)",
                 Unit::kCycles, "NVDLA_RBK.D_PERF_READ_STALL_0");
  wdma_busy_ = c.busy_cycles;
  const auto i = [](const stats::Counter& k) { return static_cast<int>(k.index()); };
  units_ = {
      {"RDMA", i(rdma_busy_), {i(rdma_stall_)}, i(c.bytes_read), -1},
      {"WDMA", i(c.busy_cycles), {i(c.read_stall_cycles)}, -1, i(c.bytes_written)},
  };
  SC_HAS_PROCESS(RubikCore);
  SC_THREAD(read_thread);
  SC_THREAD(write_thread);
}

void RubikCore::start(const Engine& /*engine*/, const OpResult& op, const RegRead& /*regs*/,
                      std::function<void()> on_done) {
  if (busy_) throw std::logic_error(std::string(name()) + " started while busy");
  const auto* decoded = dynamic_cast<const RubikDescriptor*>(op.descriptor.get());
  if (decoded == nullptr) throw std::logic_error("RubikCore: the operation has no RubikDescriptor");
  params_ = decoded->op.params;
  on_done_ = std::move(on_done);
  busy_ = true;
  stats_.begin_layer();
  ++counters_.operations;
  counters_.elements += std::uint64_t{params_.width} * params_.height * params_.in_channels;
  started_at_ = sc_core::sc_time_stamp();
  slices_.clear();
  start_ev_.notify(cycles(hw_.dla.op_start_latency));
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> RubikCore::perf_registers(
    const Engine& /*engine*/, const RegRead& regs) const {
  namespace R = regs::RBK;
  if (R::D_PERF_ENABLE::PERF_EN.get(regs(R::D_PERF_ENABLE::kAddr)) == 0) return {};
  return {
      {R::D_PERF_READ_STALL::kAddr, saturate32(stats_.since_layer(rdma_stall_))},
      {R::D_PERF_WRITE_STALL::kAddr, saturate32(stats_.since_layer(counters_.write_stall_cycles))}};
}

void RubikCore::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  if (timeline_ == nullptr) return;
  rdma_track_ = timeline_->track(basename(), "RDMA");
  wdma_track_ = timeline_->track(basename(), "WDMA");
}

sc_core::sc_time RubikCore::move(DmaClient& dma, tlm::tlm_command cmd,
                                 const std::vector<RubikLine>& lines) {
  const bool read = cmd == tlm::TLM_READ_COMMAND;
  std::vector<SurfaceRegion> regions;
  regions.reserve(lines.size());
  for (const RubikLine& l : lines) regions.push_back(SurfaceRegion::linear(l.addr, l.bytes));
  AddressGenerator walk(std::move(regions));
  std::vector<DmaPiece> pieces;
  sc_core::sc_time last = sc_core::sc_time_stamp();
  for (const RubikLine& l : lines) {
    for (std::uint32_t off = 0; off < l.bytes; off += kRequestBytes) {
      const std::uint32_t bytes = std::min(kRequestBytes, l.bytes - off);
      walk.next(bytes, pieces);
      const sc_core::sc_time done = dma.transfer(cmd, pieces);
      last = std::max(last, done);
      const std::uint64_t t0 = now();
      const std::uint64_t issue = dma.pace(bytes);
      (read ? rdma_busy_ : wdma_busy_) += issue;
      (read ? counters_.bytes_read : counters_.bytes_written) += bytes;
      if (timeline_ != nullptr) {
        timeline_->slice(read ? rdma_track_ : wdma_track_, stats::Detail::kDma, t0, t0 + issue,
                         read ? "read" : "write", bytes);
      }
    }
  }
  return last;
}

void RubikCore::read_thread() {
  for (;;) {
    sc_core::wait(start_ev_);
    rdma_.reset();
    for (std::uint32_t h = 0; h < params_.height; ++h) {
      const RubikSlice slice = rubik_slice(params_, h);
      std::uint64_t atoms = 0;
      for (const RubikLine& l : slice.reads) atoms += rdma_.atoms(l.bytes);
      rdma_stall_ += rdma_.reserve(atoms);
      slices_.push({move(rdma_, tlm::TLM_READ_COMMAND, slice.reads), atoms});
    }
  }
}

void RubikCore::write_thread() {
  for (;;) {
    sc_core::wait(start_ev_);
    sc_core::sc_time last_ack = sc_core::sc_time_stamp();
    for (std::uint32_t h = 0; h < params_.height; ++h) {
      const SliceReady ready = slices_.front();
      const sc_core::sc_time arrival = ready.arrival;
      if (arrival > sc_core::sc_time_stamp()) {
        counters_.read_stall_cycles += to_cycles(arrival - sc_core::sc_time_stamp());
        wait_until(arrival);
      }
      last_ack =
          std::max(last_ack, move(wdma_, tlm::TLM_WRITE_COMMAND, rubik_slice(params_, h).writes));
      rdma_.release(ready.atoms);
      slices_.pop();
    }
    if (last_ack > sc_core::sc_time_stamp()) {
      counters_.write_stall_cycles += to_cycles(last_ack - sc_core::sc_time_stamp());
      wait_until(last_ack);
    }
    counters_.active_cycles += to_cycles(sc_core::sc_time_stamp() - started_at_);
    busy_ = false;
    auto done = std::move(on_done_);
    if (done) done();
  }
}

}  // namespace octasim::dla
