#include "sim/octav/octav_core.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "octasim/regs/nvdla.hpp"
#include "sim/octav/octav_functional.hpp"

namespace octasim::octav {
namespace {}  // namespace

OctavCore::OctavCore(const sc_core::sc_module_name& name, const HwConfig& hw,
                     const sc_core::sc_time& clock_period)
    : sc_core::sc_module(name),
      Clocked(clock_period),
      hw_(hw),
      dma_(dma_socket, clock_period,
           {hw.dla.memory_atomic_size, hw.dla.memory_atomic_size * hw.dla.primary_memif_max_burst,
            hw.dla.dma_latency_buffer_atoms}),
      stats_(this->name()) {
  using stats::Unit;
  auto& c = counters_;
  c.operations = stats_.add("operations", "operations started", Unit::kCount);
  c.active_cycles = stats_.add("active_cycles",
                               "cycles from an operation's start to its end (results written), "
                               "summed over operations",
                               Unit::kCycles, "NVDLA_OCTAV.D_PERF_CYCLES_0");
  c.busy_cycles = stats_.add("busy_cycles", "cycles the datapath spent on elements", Unit::kCycles);
  c.read_stall_cycles = stats_.add(
      "read_stall_cycles", "cycles the datapath waited for data from the DMA", Unit::kCycles);
  c.write_stall_cycles = stats_.add("write_stall_cycles",
                                    "cycles the unit waited for its result write", Unit::kCycles);
  c.bytes_read = stats_.add("bytes_read", "bytes the DMA read from DRAM", Unit::kBytes,
                            "NVDLA_OCTAV.D_PERF_READ_BYTES_0");
  c.bytes_written = stats_.add("bytes_written", "bytes of per-group results written", Unit::kBytes);
  c.elements = stats_.add("elements", "elements streamed through the datapath (all passes)",
                          Unit::kOps, "NVDLA_OCTAV.D_PERF_ELEMENTS_0");
  passes_count_ = stats_.add("passes", "streaming passes (statistics pass and iterations)",
                             Unit::kCount, "NVDLA_OCTAV.D_PERF_PASSES_0");
  iterations_ =
      stats_.add("iterations", "Newton-Raphson iterations (passes after pass 0)", Unit::kCount);
  stats_pass_cycles_ =
      stats_.add("stats_pass_cycles",
                 "cycles of pass 0 (the statistics pass), summed over operations", Unit::kCycles);
  iteration_cycles_ = stats_.add("iteration_cycles",
                                 "cycles of the iteration passes with their divisions, summed "
                                 "(per iteration: iteration_cycles / iterations)",
                                 Unit::kCycles);
  divide_cycles_ =
      stats_.add("divide_cycles", "cycles the divider took ending iterations", Unit::kCycles);
  dma_busy_ =
      stats_.add("dma_busy_cycles", "cycles the DMA spent issuing read requests", Unit::kCycles);
  dma_stall_ =
      stats_.add("dma_stall_cycles", "cycles the DMA held a request back (latency buffer full)",
                 Unit::kCycles);
  const auto i = [](const stats::Counter& k) { return static_cast<int>(k.index()); };
  units_ = {
      {"DMA", i(dma_busy_), {i(dma_stall_)}, i(c.bytes_read), i(c.bytes_written)},
      {"datapath", i(c.busy_cycles), {i(c.read_stall_cycles)}, -1, -1},
      {"divider", i(divide_cycles_), {}, -1, -1},
  };
  SC_HAS_PROCESS(OctavCore);
  SC_THREAD(run_thread);
}

void OctavCore::start(const dla::Engine& /*engine*/, const dla::OpResult& op,
                      const dla::RegRead& /*regs*/, std::function<void()> on_done) {
  if (busy_) throw std::logic_error(std::string(name()) + " started while busy");
  const auto* decoded = dynamic_cast<const OctavDescriptor*>(op.descriptor.get());
  if (decoded == nullptr) throw std::logic_error("OctavCore: the operation has no OctavDescriptor");
  const unsigned atom = hw_.dla.memory_atomic_size;
  const OctavOp& o = decoded->op;
  const std::uint32_t request_bytes = atom * hw_.dla.primary_memif_max_burst;
  const unsigned eb = element_bytes(o.type);
  requests_.clear();
  if (o.flat) {
    const std::uint64_t bytes = octav_pass_bytes(o, atom);
    std::uint64_t left = o.length;
    for (std::uint64_t off = 0; off < bytes; off += request_bytes) {
      const auto b =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(request_bytes, bytes - off));
      const auto e = static_cast<std::uint32_t>(std::min<std::uint64_t>(left, b / eb));
      left -= e;
      requests_.push_back({o.src + off, b, e});
    }
  } else {
    const unsigned cpa = atom / eb;
    const std::uint32_t surfaces = (o.channels + cpa - 1) / cpa;
    for (std::uint32_t s = 0; s < surfaces; ++s) {
      const std::uint32_t lanes = std::min(cpa, o.channels - s * cpa);
      for (std::uint32_t h = 0; h < o.height; ++h) {
        const std::uint64_t line =
            o.src + std::uint64_t{s} * o.surface_stride + std::uint64_t{h} * o.line_stride;
        const std::uint64_t bytes = std::uint64_t{o.width} * atom;
        for (std::uint64_t off = 0; off < bytes; off += request_bytes) {
          const auto b =
              static_cast<std::uint32_t>(std::min<std::uint64_t>(request_bytes, bytes - off));
          requests_.push_back({line + off, b, b / atom * lanes});
        }
      }
    }
  }
  passes_ = decoded->passes;
  groups_ = decoded->groups;
  const OctavTraffic traffic = octav_traffic(hw_, o, passes_);
  buffered_ = traffic.buffered;
  result_addr_ = o.result_addr;
  result_bytes_ = static_cast<std::uint32_t>(op.bytes_written);
  on_done_ = std::move(on_done);
  busy_ = true;
  stats_.begin_layer();
  ++counters_.operations;
  counters_.elements += traffic.elements;
  started_at_ = sc_core::sc_time_stamp();
  start_ev_.notify(cycles(hw_.dla.op_start_latency));
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> OctavCore::perf_registers(
    const dla::Engine& /*engine*/, const dla::RegRead& /*regs*/) const {
  return {{regs::OCTAV::D_PERF_CYCLES::kAddr,
           dla::saturate32(stats_.since_layer(counters_.active_cycles))}};
}

void OctavCore::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  if (timeline_ == nullptr) return;
  dma_track_ = timeline_->track(basename(), "DMA");
  datapath_track_ = timeline_->track(basename(), "datapath");
  divider_track_ = timeline_->track(basename(), "divider");
}

std::uint64_t OctavCore::compute_cycles(std::uint32_t elements) const {
  return (elements + hw_.octav.elements_per_cycle - 1) / hw_.octav.elements_per_cycle;
}

// A request holds a whole request's atoms in the latency buffer until the datapath has consumed
// its data (so at most dma_latency_buffer_atoms / request atoms requests are outstanding).
void OctavCore::dram_pass() {
  const std::uint64_t request_atoms =
      std::max<std::uint64_t>(1, dma_.atoms(requests_.empty() ? 1 : requests_[0].bytes));
  dma_.reset();
  sc_core::sc_time datapath_free = sc_core::sc_time_stamp();
  for (const Request& r : requests_) {
    dma_stall_ += dma_.reserve(request_atoms);
    const sc_core::sc_time arrival = dma_.transfer(tlm::TLM_READ_COMMAND, r.addr, r.bytes);
    counters_.bytes_read += r.bytes;
    ++dma_busy_;
    if (timeline_ != nullptr) {
      timeline_->slice(dma_track_, stats::Detail::kDma, now(), now() + 1,
                       "pass " + std::to_string(pass_) + " read", r.bytes);
    }
    const sc_core::sc_time start = std::max(datapath_free, arrival);
    counters_.read_stall_cycles += to_cycles(start - datapath_free);
    const std::uint64_t c = compute_cycles(r.elements);
    counters_.busy_cycles += c;
    datapath_free = start + cycles(c);
    if (timeline_ != nullptr) {
      timeline_->slice(datapath_track_, stats::Detail::kDma, to_cycles(start),
                       to_cycles(datapath_free), "pass " + std::to_string(pass_));
    }
    dma_.release_at(request_atoms, datapath_free);
    (void)dma_.pace(r.bytes);  // one request per cycle
  }
  wait_until(datapath_free);
}

void OctavCore::buffer_pass() {
  std::uint64_t total = 0;
  for (const Request& r : requests_) total += compute_cycles(r.elements);
  counters_.busy_cycles += total;
  if (timeline_ != nullptr) {
    timeline_->slice(datapath_track_, stats::Detail::kTile, now(), now() + total,
                     "pass " + std::to_string(pass_) + " (buffer)");
  }
  if (total > 0) sc_core::wait(cycles(total));
}

void OctavCore::run_thread() {
  for (;;) {
    sc_core::wait(start_ev_);
    pass_cycles_.clear();
    for (unsigned p = 0; p < passes_; ++p) {
      const sc_core::sc_time t0 = sc_core::sc_time_stamp();
      pass_ = p;
      if (p == 0 || !buffered_) {
        dram_pass();
      } else {
        buffer_pass();
      }
      ++passes_count_;
      if (p > 0) {
        const std::uint64_t d = hw_.octav.divide_latency + groups_ - 1;
        divide_cycles_ += d;
        ++iterations_;
        if (timeline_ != nullptr) {
          timeline_->slice(divider_track_, stats::Detail::kTile, now(), now() + d,
                           "iteration " + std::to_string(p));
        }
        if (d > 0) sc_core::wait(cycles(d));
      }
      pass_cycles_.push_back(to_cycles(sc_core::sc_time_stamp() - t0));
      (p == 0 ? stats_pass_cycles_ : iteration_cycles_) += pass_cycles_.back();
    }
    if (result_bytes_ > 0) {
      const sc_core::sc_time ack =
          dma_.transfer(tlm::TLM_WRITE_COMMAND, result_addr_, result_bytes_);
      counters_.bytes_written += result_bytes_;
      if (ack > sc_core::sc_time_stamp()) {
        counters_.write_stall_cycles += to_cycles(ack - sc_core::sc_time_stamp());
        sc_core::wait(ack - sc_core::sc_time_stamp());
      }
    }
    counters_.active_cycles += to_cycles(sc_core::sc_time_stamp() - started_at_);
    busy_ = false;
    auto done = std::move(on_done_);
    if (done) done();
  }
}

}  // namespace octasim::octav
