#include "sim/dla/bdma_engine.hpp"

#include <algorithm>
#include <stdexcept>

#include "octasim/regs/nvdla.hpp"

namespace octasim::dla {

namespace B = regs::BDMA;

BdmaEngine::BdmaEngine(const sc_core::sc_module_name& name, const HwConfig& hw,
                       const sc_core::sc_time& clock_period)
    : sc_core::sc_module(name),
      Clocked(clock_period),
      hw_(hw),
      read_(read_socket, clock_period,
            {kAtomBytes, std::max(kAtomBytes, hw.dla.primary_memif_width / 8),
             hw.dla.dma_latency_buffer_atoms}),
      write_(write_socket, clock_period,
             {kAtomBytes, std::max(kAtomBytes, hw.dla.primary_memif_width / 8), 0}),
      stats_(this->name()) {
  using stats::Unit;
  auto& c = counters_;
  c.operations = stats_.add("operations", "copy operations (slots) executed", Unit::kCount);
  c.active_cycles = stats_.add("active_cycles",
                               "cycles from an operation's start to its last acknowledged write, "
                               "summed over operations",
                               Unit::kCycles);
  c.busy_cycles =
      stats_.add("busy_cycles", "cycles the write DMA spent issuing requests", Unit::kCycles);
  c.read_stall_cycles =
      stats_.add("read_stall_cycles", "cycles the write DMA waited for read data to arrive",
                 Unit::kCycles, "NVDLA_BDMA.STATUS_GRP<n>_READ_STALL_0");
  c.write_stall_cycles =
      stats_.add("write_stall_cycles", "cycles the read DMA waited for room in the data buffer",
                 Unit::kCycles, "NVDLA_BDMA.STATUS_GRP<n>_WRITE_STALL_0");
  c.bytes_read = stats_.add("bytes_read", "bytes the read DMA read", Unit::kBytes);
  c.bytes_written = stats_.add("bytes_written", "bytes the write DMA wrote", Unit::kBytes);
  c.elements = stats_.add("elements", "bytes copied", Unit::kBytes);
  read_busy_ =
      stats_.add("read_busy_cycles", "cycles the read DMA spent issuing requests", Unit::kCycles);
  const auto i = [](const stats::Counter& k) { return static_cast<int>(k.index()); };
  units_ = {
      {"read DMA", i(read_busy_), {i(c.write_stall_cycles)}, i(c.bytes_read), -1},
      {"write DMA", i(c.busy_cycles), {i(c.read_stall_cycles)}, -1, i(c.bytes_written)},
  };
  SC_HAS_PROCESS(BdmaEngine);
  SC_THREAD(read_thread);
  SC_THREAD(write_thread);
}

void BdmaEngine::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  if (timeline_ == nullptr) return;
  read_track_ = timeline_->track(basename(), "read DMA");
  write_track_ = timeline_->track(basename(), "write DMA");
}

void BdmaEngine::start(const Engine& /*engine*/, const OpResult& op, const RegRead& /*regs*/,
                       std::function<void()> on_done) {
  if (busy_) throw std::logic_error(std::string(name()) + " started while busy");
  read_walk_ = AddressGenerator(op.dma.input);
  write_walk_ = AddressGenerator(op.dma.output);
  // Pieces: each line, cut to at most half the data buffer so reads and writes overlap.
  pieces_.clear();
  const std::uint64_t max_piece =
      std::max<std::uint64_t>(kAtomBytes, read_.params().buffer_atoms / 2 * kAtomBytes);
  for (const SurfaceRegion& r : op.dma.input) {
    for (std::uint64_t line = 0; line < std::uint64_t{r.lines} * r.surfaces; ++line) {
      for (std::uint64_t x = 0; x < r.line_bytes; x += max_piece) {
        pieces_.push_back(static_cast<std::uint32_t>(std::min(max_piece, r.line_bytes - x)));
      }
    }
  }
  read_.reset();
  on_done_ = std::move(on_done);
  busy_ = true;
  stats_.begin_layer();
  started_at_ = sc_core::sc_time_stamp();
  ++counters_.operations;
  counters_.elements += op.bytes_read;
  start_ev_.notify(cycles(hw_.dla.op_start_latency));
}

void BdmaEngine::read_thread() {
  for (;;) {
    sc_core::wait(start_ev_);
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      const std::uint32_t bytes = pieces_[i];
      counters_.write_stall_cycles += read_.reserve(read_.atoms(bytes));
      const sc_core::sc_time arrival = read_.transfer(tlm::TLM_READ_COMMAND, read_walk_, bytes);
      counters_.bytes_read += bytes;
      to_write_.push({bytes, arrival, i + 1 == pieces_.size()});
      const std::uint64_t requests = read_.pace(bytes);
      read_busy_ += requests;
      if (timeline_ != nullptr && timeline_->wants(stats::Detail::kTile)) {
        timeline_->slice(read_track_, stats::Detail::kTile, now() - requests, now(),
                         "read piece " + std::to_string(i), bytes);
      }
    }
  }
}

void BdmaEngine::write_thread() {
  sc_core::sc_time last_ack = sc_core::SC_ZERO_TIME;
  for (;;) {
    const Piece p = to_write_.front();
    to_write_.pop();
    if (p.ready > sc_core::sc_time_stamp()) {
      counters_.read_stall_cycles += to_cycles(p.ready - sc_core::sc_time_stamp());
      wait_until(p.ready);
    }
    last_ack = std::max(last_ack, write_.transfer(tlm::TLM_WRITE_COMMAND, write_walk_, p.bytes));
    const std::uint64_t requests = write_.pace(p.bytes);
    counters_.busy_cycles += requests;
    counters_.bytes_written += p.bytes;
    read_.release(read_.atoms(p.bytes));  // the piece has left the buffer
    if (timeline_ != nullptr && timeline_->wants(stats::Detail::kTile)) {
      timeline_->slice(write_track_, stats::Detail::kTile, now() - requests, now(), "write piece",
                       p.bytes);
    }
    if (!p.last) continue;
    wait_until(last_ack);
    last_ack = sc_core::SC_ZERO_TIME;
    counters_.active_cycles += to_cycles(sc_core::sc_time_stamp() - started_at_);
    busy_ = false;
    auto done = std::move(on_done_);
    if (done) done();
  }
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> BdmaEngine::perf_registers(
    const Engine& /*engine*/, const RegRead& regs) const {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  if (B::CFG_STATUS::STALL_COUNT_EN.get(regs(B::CFG_STATUS::kAddr)) == 0) return out;
  // The hardware's view of CFG_LAUNCH1 says whether the operation belongs to group 1.
  const bool group1 = (regs(B::CFG_LAUNCH1::kAddr) & 1u) != 0;
  const std::uint32_t read_stall =
      group1 ? B::STATUS_GRP1_READ_STALL::kAddr : B::STATUS_GRP0_READ_STALL::kAddr;
  const std::uint32_t write_stall =
      group1 ? B::STATUS_GRP1_WRITE_STALL::kAddr : B::STATUS_GRP0_WRITE_STALL::kAddr;
  out.emplace_back(read_stall, saturate32(std::uint64_t{regs(read_stall)} +
                                          stats_.since_layer(counters_.read_stall_cycles)));
  out.emplace_back(write_stall, saturate32(std::uint64_t{regs(write_stall)} +
                                           stats_.since_layer(counters_.write_stall_cycles)));
  return out;
}

}  // namespace octasim::dla
