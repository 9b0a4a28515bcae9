#include "sim/core/dram.hpp"

#include <algorithm>

namespace octasim {

Dram::Dram(const sc_core::sc_module_name& name, const HwConfig& hw, MemoryImage& image,
           const sc_core::sc_time& clock_period)
    : sc_core::sc_module(name),
      image_(image),
      period_(clock_period),
      bytes_per_cycle_(hw.dram_bandwidth()),
      read_latency_(hw.primary_memif_latency),
      write_latency_(hw.dram_write_latency),
      stats_(this->name()) {
  using stats::Unit;
  bytes_read_ = stats_.add("bytes_read", "bytes read by every DMA client", Unit::kBytes);
  bytes_written_ = stats_.add("bytes_written", "bytes written by every DMA client", Unit::kBytes);
  busy_cycles_ = stats_.add("busy_cycles", "cycles the data bus transferred data", Unit::kCycles);
  reads_ = stats_.add("read_transactions", "read transactions served", Unit::kCount);
  writes_ = stats_.add("write_transactions", "write transactions served", Unit::kCount);
  socket.register_b_transport(this, &Dram::b_transport);
}

void Dram::trace_signals(sc_core::sc_trace_file* file) {
  drive_signals_ = true;
  sc_core::sc_trace(file, bytes_signal_, "dram.bytes");
  sc_core::sc_trace(file, busy_signal_, "dram.bus_busy_cycles");
}

void Dram::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  if (timeline_ != nullptr) bus_track_ = timeline_->track("DRAM", "data bus");
}

void Dram::b_transport(int /*initiator*/, tlm::tlm_generic_payload& trans,
                       sc_core::sc_time& delay) {
  const std::uint64_t addr = trans.get_address();
  const unsigned len = trans.get_data_length();
  if (!image_.contains(addr, len)) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  const sc_core::sc_time requested = sc_core::sc_time_stamp() + delay;
  const sc_core::sc_time start = std::max(requested, bus_free_);
  const std::uint64_t transfer = (len + bytes_per_cycle_ - 1) / bytes_per_cycle_;
  bus_free_ = start + period_ * static_cast<double>(transfer);
  busy_cycles_ += transfer;
  if (drive_signals_) {
    bytes_signal_.write(bytes_read_.value() + bytes_written_.value() + len);
    busy_signal_.write(busy_cycles_.value());
  }
  if (timeline_ != nullptr) {
    const auto from = static_cast<std::uint64_t>(start / period_ + 0.5);
    timeline_->transfer(from, from + transfer, len);
    timeline_->slice(bus_track_, stats::Detail::kDma, from, from + transfer,
                     trans.is_read() ? "read" : "write", len);
  }
  if (trans.is_read()) {
    image_.read(addr, trans.get_data_ptr(), len);
    bytes_read_ += len;
    ++reads_;
    delay = bus_free_ + period_ * static_cast<double>(read_latency_) - sc_core::sc_time_stamp();
  } else {
    bytes_written_ += len;
    ++writes_;
    delay = bus_free_ + period_ * static_cast<double>(write_latency_) - sc_core::sc_time_stamp();
  }
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace octasim
