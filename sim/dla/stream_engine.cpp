#include "sim/dla/stream_engine.hpp"

#include <algorithm>
#include <stdexcept>

#include "octasim/regs/nvdla.hpp"

namespace octasim::dla {

const StreamSpec& sdp_stream() {
  static const StreamSpec spec{plan_sdp,
                               regs::SDP_RDMA::D_PERF_ENABLE::kAddr,
                               regs::SDP_RDMA::D_PERF_ENABLE::PERF_DMA_EN,
                               regs::SDP_RDMA::D_PERF_MRDMA_READ_STALL::kAddr,
                               regs::SDP::D_PERF_ENABLE::kAddr,
                               regs::SDP::D_PERF_ENABLE::PERF_DMA_EN,
                               regs::SDP::D_PERF_WDMA_WRITE_STALL::kAddr};
  return spec;
}

const StreamSpec& pdp_stream() {
  static const StreamSpec spec{plan_pdp,
                               regs::PDP_RDMA::D_PERF_ENABLE::kAddr,
                               regs::PDP_RDMA::D_PERF_ENABLE::DMA_EN,
                               regs::PDP_RDMA::D_PERF_READ_STALL::kAddr,
                               regs::PDP::D_PERF_ENABLE::kAddr,
                               regs::PDP::D_PERF_ENABLE::DMA_EN,
                               regs::PDP::D_PERF_WRITE_STALL::kAddr};
  return spec;
}

const StreamSpec& cdp_stream() {
  static const StreamSpec spec{plan_cdp,
                               regs::CDP_RDMA::D_PERF_ENABLE::kAddr,
                               regs::CDP_RDMA::D_PERF_ENABLE::DMA_EN,
                               regs::CDP_RDMA::D_PERF_READ_STALL::kAddr,
                               regs::CDP::D_PERF_ENABLE::kAddr,
                               regs::CDP::D_PERF_ENABLE::DMA_EN,
                               regs::CDP::D_PERF_WRITE_STALL::kAddr};
  return spec;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> StreamEngine::perf_registers(
    const Engine& /*engine*/, const RegRead& regs) const {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  const StreamSpec& sr = spec_;
  // A flying PDP's RDMA takes no part in the operation: its registers are left alone.
  if (!fly_in_ && sr.rdma_enable_field.get(regs(sr.rdma_enable)) != 0) {
    out.emplace_back(sr.read_stall, saturate32(stats_.since_layer(counters_.read_stall_cycles)));
  }
  if (sr.core_enable_field.get(regs(sr.core_enable)) != 0) {
    out.emplace_back(sr.write_stall, saturate32(stats_.since_layer(counters_.write_stall_cycles)));
  }
  return out;
}

void StreamEngine::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  if (timeline_ == nullptr) return;
  rdma_track_ = timeline_->track(basename(), "RDMA");
  core_track_ = timeline_->track(basename(), "core");
  wdma_track_ = timeline_->track(basename(), "WDMA");
}

StreamEngine::StreamEngine(const sc_core::sc_module_name& name, const HwConfig& hw,
                           const sc_core::sc_time& clock_period, const StreamSpec& spec)
    : sc_core::sc_module(name),
      Clocked(clock_period),
      hw_(hw),
      spec_(spec),
      rdma_(rdma_socket, clock_period,
            {hw.dla.memory_atomic_size, hw.dla.memory_atomic_size * hw.dla.primary_memif_max_burst,
             hw.dla.dma_latency_buffer_atoms}),
      wdma_(wdma_socket, clock_period,
            {hw.dla.memory_atomic_size, hw.dla.memory_atomic_size * hw.dla.primary_memif_max_burst,
             0}),
      stats_(this->name()) {
  using stats::Unit;
  const StreamSpec& sr = spec_;
  const auto reg_name = [](std::uint32_t addr) {
    const regs::RegisterInfo* r = regs::find_register(addr);
    return r ? std::string("NVDLA_") + r->unit + "." + r->name + "_0" : std::string();
  };
  auto& c = counters_;
  c.operations = stats_.add("operations", "operations started", Unit::kCount);
  c.active_cycles = stats_.add("active_cycles",
                               "cycles from an operation's start to its last acknowledged write, "
                               "summed over operations",
                               Unit::kCycles);
  c.busy_cycles = stats_.add("busy_cycles", "cycles the datapath spent computing", Unit::kCycles);
  c.read_stall_cycles =
      stats_.add("read_stall_cycles", "cycles the datapath waited for data from the RDMA",
                 Unit::kCycles, reg_name(sr.read_stall));
  c.write_stall_cycles =
      stats_.add("write_stall_cycles", "cycles the datapath waited for room towards the WDMA",
                 Unit::kCycles, reg_name(sr.write_stall));
  c.bytes_read = stats_.add("bytes_read", "bytes the RDMA read", Unit::kBytes);
  c.bytes_written = stats_.add("bytes_written", "bytes the WDMA wrote", Unit::kBytes);
  c.elements = stats_.add("elements", "input elements the datapath processed", Unit::kOps);
  rdma_busy_ =
      stats_.add("rdma_busy_cycles", "cycles the RDMA spent issuing read requests", Unit::kCycles);
  rdma_stall_ = stats_.add("rdma_stall_cycles",
                           "cycles the RDMA held a request back (latency buffer full or the "
                           "pipeline draining between passes)",
                           Unit::kCycles);
  wdma_busy_ =
      stats_.add("wdma_busy_cycles", "cycles the WDMA spent issuing write requests", Unit::kCycles);
  bytes_on_the_fly_ = stats_.add("bytes_on_the_fly",
                                 "bytes passed from SDP to PDP on the fly (SDP: handed over "
                                 "instead of written; PDP: taken instead of read)",
                                 Unit::kBytes);
  const auto i = [](const stats::Counter& k) { return static_cast<int>(k.index()); };
  units_ = {
      {"RDMA", i(rdma_busy_), {i(rdma_stall_)}, i(c.bytes_read), -1},
      {"core", i(c.busy_cycles), {i(c.read_stall_cycles), i(c.write_stall_cycles)}, -1, -1},
      {"WDMA", i(wdma_busy_), {}, -1, i(c.bytes_written)},
  };
  SC_HAS_PROCESS(StreamEngine);
  SC_THREAD(rdma_thread);
  SC_THREAD(core_thread);
  SC_THREAD(wdma_thread);
}

void StreamEngine::start(const Engine& /*engine*/, const OpResult& op, const RegRead& /*regs*/,
                         std::function<void()> on_done) {
  if (busy_) throw std::logic_error(std::string(name()) + " started while busy");
  plan_ = spec_.plan(op, hw_);
  std::vector<SurfaceRegion> reads = op.dma.input;
  reads.insert(reads.end(), op.dma.operands.begin(), op.dma.operands.end());
  read_walk_ = AddressGenerator(std::move(reads));
  write_walk_ = AddressGenerator(op.dma.output);
  rdma_.reset();
  rdma_.set_buffer_atoms(std::uint64_t{hw_.dla.dma_latency_buffer_atoms} * plan_.read_streams);
  link_ = next_link_;
  next_link_ = nullptr;
  fly_out_ = link_ != nullptr && op.to_pdp != nullptr;
  fly_in_ = link_ != nullptr && op.to_pdp == nullptr;
  on_done_ = std::move(on_done);
  busy_ = true;
  stats_.begin_layer();  // NVDLA clears the D_PERF counters when an operation starts
  steps_written_ = 0;
  fly_consumed_ = 0;
  started_at_ = sc_core::sc_time_stamp();
  ++counters_.operations;
  counters_.elements += plan_.elements;
  start_ev_.notify(cycles(hw_.dla.op_start_latency));
}

void StreamEngine::rdma_thread() {
  for (;;) {
    sc_core::wait(start_ev_);
    std::uint64_t taken = 0;  // flying input: bytes of SDP's output the steps so far need
    for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
      const Step& s = plan_.steps[i];
      if (fly_in_) {
        // The step may start once its first atom has come from SDP; the datapath consumes the
        // rest as it arrives (core_thread).
        const std::uint64_t first =
            std::min<std::uint64_t>(s.read_bytes, hw_.dla.memory_atomic_size);
        link_->wait_for(taken + first);
        taken += s.read_bytes;
        bytes_on_the_fly_ += s.read_bytes;
        to_core_.push({i, sc_core::sc_time_stamp()});
        continue;
      }
      const sc_core::sc_time held = sc_core::sc_time_stamp();
      if (s.new_pass) {
        while (steps_written_ < i) sc_core::wait(written_ev_);
      }
      (void)rdma_.reserve(rdma_.atoms(s.read_bytes));
      rdma_stall_ += to_cycles(sc_core::sc_time_stamp() - held);
      const sc_core::sc_time arrival =
          s.read_bytes == 0 ? sc_core::sc_time_stamp()
                            : rdma_.transfer(tlm::TLM_READ_COMMAND, read_walk_, s.read_bytes);
      counters_.bytes_read += s.read_bytes;
      to_core_.push({i, arrival});
      const std::uint64_t requests = rdma_.pace(s.read_bytes);  // one request per cycle
      rdma_busy_ += requests;
      if (tiles()) {
        timeline_->slice(rdma_track_, stats::Detail::kTile, now() - requests, now(),
                         "read step " + std::to_string(i), s.read_bytes);
      }
    }
  }
}

void StreamEngine::core_thread() {
  for (;;) {
    const sc_core::sc_time idle_from = sc_core::sc_time_stamp();
    const InFlight in = to_core_.front();
    to_core_.pop();
    if (fly_in_) {
      // A flying PDP waits for SDP's stream, not for its own reads: that wait is its read stall
      // (from the operation's first possible input on).
      const sc_core::sc_time from =
          std::max(idle_from, started_at_ + cycles(hw_.dla.op_start_latency));
      if (sc_core::sc_time_stamp() > from) {
        counters_.read_stall_cycles += to_cycles(sc_core::sc_time_stamp() - from);
      }
    }
    const Step& s = plan_.steps[in.step];
    if (in.ready > sc_core::sc_time_stamp()) {
      counters_.read_stall_cycles += to_cycles(in.ready - sc_core::sc_time_stamp());
      wait_until(in.ready);
    }
    if (fly_in_ && s.read_bytes > 0) {
      consume_flying_step(s);
    } else if (s.compute_cycles > 0) {
      sc_core::wait(cycles(s.compute_cycles));
    }
    if (tiles()) {
      timeline_->slice(core_track_, stats::Detail::kTile, now() - s.compute_cycles, now(),
                       "step " + std::to_string(in.step));
    }
    counters_.busy_cycles += s.compute_cycles;
    if (!fly_in_) rdma_.release(rdma_.atoms(s.read_bytes));
    const sc_core::sc_time blocked_at = sc_core::sc_time_stamp();
    to_wdma_.wait_for_room();
    counters_.write_stall_cycles += to_cycles(sc_core::sc_time_stamp() - blocked_at);
    to_wdma_.push({in.step, sc_core::sc_time_stamp() + cycles(plan_.pipeline_latency)});
  }
}

// A flying PDP's datapath takes SDP's output element by element as SDP's pipeline hands it
// over (NVDLA's on-the-fly path has no line-sized staging: PDP pools each atom as it comes and
// its interrupt follows SDP's by about its own pipeline depth; RTL: 27 cycles on the fused
// CONV->SDP->PDP network layers). The step's compute cycles are spent in proportion to the bytes
// delivered so far, so the step ends at the later of its own compute time and the arrival of its
// last bytes plus the cycles to pool them; waits for data are read stall.
void StreamEngine::consume_flying_step(const Step& s) {
  const std::uint64_t begin = fly_consumed_;
  const std::uint64_t end = begin + s.read_bytes;
  std::uint64_t spent = 0;
  for (;;) {
    const std::uint64_t avail = std::min(link_->delivered(), end);
    const std::uint64_t target = std::uint64_t{s.compute_cycles} * (avail - begin) / s.read_bytes;
    if (target > spent) {
      sc_core::wait(cycles(target - spent));
      spent = target;
    }
    if (avail == end) break;
    if (link_->delivered() <= avail) {
      const sc_core::sc_time from = sc_core::sc_time_stamp();
      link_->wait_for(avail + 1);
      counters_.read_stall_cycles += to_cycles(sc_core::sc_time_stamp() - from);
    }
  }
  fly_consumed_ = end;
}

void StreamEngine::wdma_thread() {
  sc_core::sc_time last_ack = sc_core::SC_ZERO_TIME;
  for (;;) {
    const InFlight out = to_wdma_.front();
    const Step& s = plan_.steps[out.step];
    wait_until(out.ready);
    if (fly_out_) {
      link_->deliver(s.write_bytes);
      bytes_on_the_fly_ += s.write_bytes;
    } else if (s.write_bytes > 0) {
      last_ack =
          std::max(last_ack, wdma_.transfer(tlm::TLM_WRITE_COMMAND, write_walk_, s.write_bytes));
    }
    if (!fly_out_) counters_.bytes_written += s.write_bytes;
    const std::uint64_t requests = fly_out_ ? 0 : wdma_.pace(s.write_bytes);
    wdma_busy_ += requests;
    if (tiles()) {
      timeline_->slice(wdma_track_, stats::Detail::kTile, now() - requests, now(),
                       "write step " + std::to_string(out.step), s.write_bytes);
    }
    to_wdma_.pop();
    if (out.step + 1 == plan_.steps.size()) wait_until(last_ack);
    steps_written_ = out.step + 1;
    written_ev_.notify(sc_core::SC_ZERO_TIME);
    if (steps_written_ == plan_.steps.size()) {
      counters_.active_cycles += to_cycles(sc_core::sc_time_stamp() - started_at_);
      busy_ = false;
      last_ack = sc_core::SC_ZERO_TIME;
      auto done = std::move(on_done_);
      if (done) done();
    }
  }
}

}  // namespace octasim::dla
