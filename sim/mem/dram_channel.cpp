#include "sim/mem/dram_channel.hpp"

#include <algorithm>

namespace octasim::mem {

DramChannel::DramChannel(std::string group_name, const HwConfig& hw, std::uint64_t period)
    : period_(period),
      row_bytes_(hw.mem.dram_row_bytes),
      burst_bytes_(std::min(hw.mem.dram_burst_bytes, hw.mem.dram_row_bytes)),
      bytes_per_cycle_(hw.dram_bandwidth()),
      trcd_(period * hw.mem.dram_trcd),
      trp_(period * hw.mem.dram_trp),
      cl_(period * hw.mem.dram_cl),
      tras_(period * hw.mem.dram_tras),
      read_latency_(period * hw.dla.primary_memif_latency),
      write_latency_(period * hw.mem.dram_write_latency),
      banks_(hw.mem.dram_banks),
      stats_(std::move(group_name)) {
  using stats::Unit;
  bytes_read_ = stats_.add("bytes_read", "bytes read from the channel", Unit::kBytes);
  bytes_written_ = stats_.add("bytes_written", "bytes written to the channel", Unit::kBytes);
  busy_cycles_ = stats_.add("busy_cycles", "cycles the data bus transferred data", Unit::kCycles);
  reads_ = stats_.add("read_transactions", "read requests the channel served", Unit::kCount);
  writes_ = stats_.add("write_transactions", "write requests the channel served", Unit::kCount);
  row_hits_ =
      stats_.add("row_hits", "column accesses (bursts) that found their row open", Unit::kCount);
  row_misses_ = stats_.add("row_misses", "column accesses to a bank with no open row (tRCD + CL)",
                           Unit::kCount);
  row_conflicts_ =
      stats_.add("row_conflicts",
                 "column accesses to a bank with another row open (tRP + tRCD + CL)", Unit::kCount);
  activates_ = stats_.add("activates", "row activations", Unit::kCount);
}

void DramChannel::set_timeline(stats::Timeline* timeline, const std::string& track_name) {
  timeline_ = timeline;
  if (timeline_ != nullptr) track_ = timeline_->track("DRAM", track_name);
}

double DramChannel::row_hit_rate() const {
  const std::uint64_t all = row_hits_.value() + row_misses_.value() + row_conflicts_.value();
  return all == 0 ? 0.0 : static_cast<double>(row_hits_.value()) / static_cast<double>(all);
}

std::uint64_t DramChannel::access(std::uint64_t ready, std::uint64_t addr, std::uint64_t len,
                                  bool is_read) {
  // The request's bursts together hold the bus ceil(len / bytes_per_cycle) cycles: burst k takes
  // the beats between the cumulative byte counts before and after it.
  auto beats = [this](std::uint64_t bytes) {
    return (bytes + bytes_per_cycle_ - 1) / bytes_per_cycle_;
  };
  std::uint64_t done = 0;  // bytes of the request already on the bus
  bool segment = false;    // a run of back-to-back bus transfers, for the timeline
  std::uint64_t seg_start = 0, seg_end = 0, seg_bytes = 0;
  auto flush = [&] {
    if (!segment || timeline_ == nullptr) return;
    const std::uint64_t from = seg_start / period_, to = seg_end / period_;
    timeline_->transfer(from, to, seg_bytes);
    timeline_->slice(track_, stats::Detail::kDma, from, to, is_read ? "read" : "write", seg_bytes);
  };
  for (std::uint64_t a = addr; a < addr + len;) {
    const std::uint64_t b = std::min(addr + len, (a / burst_bytes_ + 1) * burst_bytes_);
    Bank& bank = banks_[bank_of(a)];
    const std::uint64_t row = row_of(a);
    const std::uint64_t cmd = std::max(ready, bank.ready);
    std::uint64_t column = cmd;
    if (bank.open && bank.row == row) {
      ++row_hits_;
    } else {
      std::uint64_t activate = cmd;
      if (bank.open) {
        ++row_conflicts_;
        activate = std::max(cmd, bank.activated + tras_) + trp_;  // precharge, then activate
      } else {
        ++row_misses_;
      }
      ++activates_;
      bank.open = true;
      bank.row = row;
      bank.activated = activate;
      column = activate + trcd_;
    }
    const std::uint64_t transfer = beats(done + (b - a)) - beats(done);
    const std::uint64_t start = std::max(column + cl_, bus_free_);
    if (transfer > 0) {
      if (!segment || start != seg_end) {
        flush();
        segment = true;
        seg_start = start;
        seg_bytes = 0;
      }
      bus_free_ = start + transfer * period_;
      seg_end = bus_free_;
      busy_cycles_ += transfer;
    }
    seg_bytes += b - a;
    bank.ready = column + transfer * period_;
    done += b - a;
    a = b;
  }
  flush();
  if (is_read) {
    bytes_read_ += len;
    ++reads_;
    return bus_free_ + read_latency_;
  }
  bytes_written_ += len;
  ++writes_;
  return bus_free_ + write_latency_;
}

}  // namespace octasim::mem
