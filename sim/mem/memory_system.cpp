#include "sim/mem/memory_system.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/mem/dram_channel.hpp"
#include "sim/mem/l2_slice.hpp"

namespace octasim {

MemorySystem::MemorySystem(const sc_core::sc_module_name& name, const HwConfig& hw,
                           MemoryImage& image, const sc_core::sc_time& clock_period)
    : sc_core::sc_module(name),
      image_(image),
      period_(clock_period.value()),
      partitions_(hw.mem.partitions),
      interleave_(hw.mem.interleave_bytes),
      slices_per_partition_(hw.mem.l2_slices_per_partition),
      line_bytes_(hw.mem.l2_line_bytes),
      bytes_per_cycle_(hw.mem.partitions * hw.dram_bandwidth()),
      xbar_latency_(clock_period.value() * hw.mem.xbar_latency),
      port_bytes_per_cycle_(hw.mem.xbar_port_bytes_per_cycle),
      xbar_stats_(std::string(basename()) + ".xbar") {
  if (partitions_ == 0 || interleave_ == 0 || hw.mem.dram_banks == 0 ||
      hw.mem.dram_row_bytes == 0 || hw.mem.dram_burst_bytes == 0 || hw.dram_bandwidth() == 0) {
    throw std::invalid_argument(
        "MemorySystem: partitions, interleave, banks, row, burst and "
        "bandwidth must be at least 1");
  }
  if (slices_per_partition_ != 0 &&
      (line_bytes_ == 0 || interleave_ % line_bytes_ != 0 || hw.mem.l2_ways == 0 ||
       hw.mem.l2_bytes_per_cycle == 0 || hw.mem.l2_slice_bytes < hw.mem.l2_ways * line_bytes_)) {
    throw std::invalid_argument(
        "MemorySystem: the L2 needs lines that divide the interleave, "
        "ways, bandwidth and a set");
  }
  const std::string base(basename());
  for (unsigned p = 0; p < partitions_; ++p) {
    channels_.push_back(
        std::make_unique<mem::DramChannel>(base + ".dram.ch" + std::to_string(p), hw, period_));
  }
  for (unsigned s = 0; s < partitions_ * slices_per_partition_; ++s) {
    slices_.push_back(
        std::make_unique<mem::L2Slice>(base + ".l2.slice" + std::to_string(s), hw, period_));
  }
  using stats::Unit;
  reads_ = xbar_stats_.add("read_transactions", "read requests from every client", Unit::kCount);
  writes_ = xbar_stats_.add("write_transactions", "write requests from every client", Unit::kCount);
  client_bytes_read_ = xbar_stats_.add("bytes_read", "bytes every client read", Unit::kBytes);
  client_bytes_written_ =
      xbar_stats_.add("bytes_written", "bytes every client wrote", Unit::kBytes);
  port_wait_cycles_ = xbar_stats_.add(
      "port_wait_cycles", "cycles requests waited for their crossbar port", Unit::kCycles);
  socket.register_b_transport(this, &MemorySystem::b_transport);
}

MemorySystem::~MemorySystem() = default;

std::uint64_t MemorySystem::bytes_read() const {
  std::uint64_t n = 0;
  for (const auto& c : channels_) n += c->bytes_read();
  return n;
}

std::uint64_t MemorySystem::bytes_written() const {
  std::uint64_t n = 0;
  for (const auto& c : channels_) n += c->bytes_written();
  return n;
}

std::uint64_t MemorySystem::busy_cycles() const {
  std::uint64_t n = 0;
  for (const auto& c : channels_) n += c->busy_cycles();
  return n;
}

std::vector<const stats::Group*> MemorySystem::statistics() const {
  std::vector<const stats::Group*> groups{&xbar_stats_};
  for (const auto& s : slices_) groups.push_back(&s->statistics());
  for (const auto& c : channels_) groups.push_back(&c->statistics());
  return groups;
}

const stats::Group& MemorySystem::l2_statistics(unsigned slice) const {
  return slices_.at(slice)->statistics();
}

const stats::Group& MemorySystem::dram_statistics(unsigned channel) const {
  return channels_.at(channel)->statistics();
}

void MemorySystem::set_timeline(stats::Timeline* timeline) {
  for (unsigned p = 0; p < partitions_; ++p) {
    channels_[p]->set_timeline(timeline, partitions_ == 1 ? std::string("data bus")
                                                          : "ch" + std::to_string(p) + " data bus");
  }
}

void MemorySystem::trace_signals(sc_core::sc_trace_file* file) {
  drive_signals_ = true;
  sc_core::sc_trace(file, bytes_signal_, "dram.bytes");
  sc_core::sc_trace(file, busy_signal_, "dram.bus_busy_cycles");
}

void MemorySystem::update_signals() {
  if (!drive_signals_) return;
  bytes_signal_.write(bytes_read() + bytes_written());
  busy_signal_.write(busy_cycles());
}

MemorySystem::Route MemorySystem::route(std::uint64_t addr) const {
  const std::uint64_t granule = addr / interleave_;
  if (slices_per_partition_ == 0) {
    const auto p = static_cast<unsigned>(granule % partitions_);
    return {p, p};
  }
  const auto slice = static_cast<unsigned>(granule % slices_.size());
  return {slice / slices_per_partition_, slice};
}

void MemorySystem::b_transport(int initiator, tlm::tlm_generic_payload& trans,
                               sc_core::sc_time& delay) {
  const std::uint64_t addr = trans.get_address();
  const unsigned len = trans.get_data_length();
  if (!image_.contains(addr, len)) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  const bool is_read = trans.is_read();
  const std::uint64_t now = sc_core::sc_time_stamp().value();
  const std::uint64_t requested = now + delay.value();
  const auto port_index = static_cast<std::size_t>(initiator);
  if (port_index >= ports_.size()) ports_.resize(port_index + 1);
  Port& port = ports_[port_index];
  const std::uint64_t port_transfer =
      port_bytes_per_cycle_ == 0
          ? 0
          : (len + port_bytes_per_cycle_ - 1) / port_bytes_per_cycle_ * period_;

  // Request path: write data crosses the port (store and forward), then the crossbar.
  std::uint64_t arrive = requested;
  if (!is_read && port_transfer > 0) {
    const std::uint64_t start = std::max(requested, port.request_free);
    port_wait_cycles_ += (start - requested) / period_;
    port.request_free = start + port_transfer;
    arrive = port.request_free;
  }
  arrive += xbar_latency_;

  // The pieces: L2 lines, or with no L2 interleave granules (contiguous pieces in one channel
  // are one DRAM request, so a single partition sees the request whole).
  const std::uint64_t piece_bytes = slices_.empty() ? interleave_ : line_bytes_;
  const auto total_slices =
      static_cast<std::uint64_t>(slices_.empty() ? partitions_ : slices_.size());
  std::uint64_t done = arrive;
  std::uint64_t run_channel = 0, run_addr = 0, run_len = 0;
  auto flush_run = [&] {
    if (run_len == 0) return;
    done = std::max(done, channels_[run_channel]->access(arrive, run_addr, run_len, is_read));
    run_len = 0;
  };
  for (std::uint64_t a = addr; a < addr + len;) {
    const std::uint64_t b =
        std::min<std::uint64_t>(addr + len, (a / piece_bytes + 1) * piece_bytes);
    const std::uint64_t granule = a / interleave_;
    const std::uint64_t within = a % interleave_;
    const std::uint64_t slice = granule % total_slices;
    const std::uint64_t depth = granule / total_slices;  // granule index within its slice
    if (slices_.empty()) {
      const std::uint64_t local = depth * interleave_ + within;
      if (run_len != 0 && (run_channel != slice || run_addr + run_len != local)) flush_run();
      if (run_len == 0) {
        run_channel = slice;
        run_addr = local;
      }
      run_len += b - a;
    } else {
      const std::uint64_t partition = slice / slices_per_partition_;
      const std::uint64_t line = a / line_bytes_ * line_bytes_;
      const std::uint64_t slice_line = (depth * interleave_ + line % interleave_) / line_bytes_;
      const std::uint64_t channel_line =
          (depth * slices_per_partition_ + slice % slices_per_partition_) * interleave_ +
          line % interleave_;
      done = std::max(done, slices_[slice]->access(arrive, slice_line, line, channel_line,
                                                   static_cast<unsigned>(a - line),
                                                   static_cast<unsigned>(b - a), is_read,
                                                   *channels_[partition]));
    }
    a = b;
  }
  flush_run();

  // Response path: the crossbar, then read data crosses the port.
  std::uint64_t complete = done + xbar_latency_;
  if (is_read && port_transfer > 0) {
    const std::uint64_t start = std::max(complete, port.response_free);
    port_wait_cycles_ += (start - complete) / period_;
    port.response_free = start + port_transfer;
    complete = port.response_free;
  }

  if (is_read) {
    image_.read(addr, trans.get_data_ptr(), len);
    client_bytes_read_ += len;
    ++reads_;
  } else {
    client_bytes_written_ += len;
    ++writes_;
  }
  update_signals();
  delay = sc_core::sc_time::from_value(complete - now);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace octasim
