#include "sim/mem/cvsram_port.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace octasim::mem {

CvSramPort::CvSramPort(const HwConfig& hw, MemoryImage& image, std::uint64_t period,
                       std::string stats_path)
    : image_(image),
      period_(period),
      split_(hw.mem.cvsram_split_paths()),
      burst_bytes_(std::uint64_t{hw.dla.memory_atomic_size} * hw.dla.secondary_memif_max_burst),
      latency_(period * hw.dla.secondary_memif_latency),
      stats_(std::move(stats_path)) {
  read_.bytes_per_cycle = hw.cvsram_read_bandwidth();
  write_.bytes_per_cycle = hw.cvsram_write_bandwidth();
  if (read_.bytes_per_cycle == 0 || write_.bytes_per_cycle == 0 || burst_bytes_ == 0) {
    throw std::invalid_argument("CvSramPort: the secondary interface needs a width and a burst");
  }
  using stats::Unit;
  requests_ = stats_.add("requests", "bursts through the secondary memory interface", Unit::kCount);
  bytes_read_ = stats_.add("bytes_read", "bytes read from the CV-SRAM", Unit::kBytes);
  bytes_written_ = stats_.add("bytes_written", "bytes written to the CV-SRAM", Unit::kBytes);
  busy_cycles_ = stats_.add("busy_cycles",
                            "cycles the secondary interface's data path(s) moved data, summed "
                            "over the read and write paths when they are separate",
                            Unit::kCycles);
  wait_cycles_ =
      stats_.add("wait_cycles", "cycles bursts waited for their busy data path", Unit::kCycles);
}

std::uint64_t CvSramPort::access(std::uint64_t ready, std::uint64_t addr, std::uint64_t len,
                                 bool is_read, std::uint8_t* data) {
  const std::uint64_t last = !split_   ? access_shared(ready, addr, len)
                             : is_read ? access_split(read_, ready, addr, len)
                                       : access_split(write_, ready, addr, len);
  if (is_read) {
    image_.read(addr, data, len);
    bytes_read_ += len;
    return last + latency_;
  }
  bytes_written_ += len;
  return last;
}

std::uint64_t CvSramPort::access_shared(std::uint64_t ready, std::uint64_t addr,
                                        std::uint64_t len) {
  Path& path = read_;
  const std::uint64_t bpc = path.bytes_per_cycle;
  std::uint64_t last = ready;
  for (std::uint64_t a = addr; a < addr + len;) {
    const std::uint64_t b = std::min(addr + len, (a / burst_bytes_ + 1) * burst_bytes_);
    const std::uint64_t cycles = (b - a + bpc - 1) / bpc;
    const std::uint64_t start = std::max(ready, path.free);
    wait_cycles_ += (start - ready) / period_;
    path.free = start + cycles * period_;
    busy_cycles_ += cycles;
    ++requests_;
    last = path.free;
    a = b;
  }
  return last;
}

std::uint64_t CvSramPort::access_split(Path& path, std::uint64_t ready, std::uint64_t addr,
                                       std::uint64_t len) {
  // Slots: 1 / bpc of a tick, so a byte takes `period_` slots and a cycle period_ x bpc.
  const std::uint64_t bpc = path.bytes_per_cycle;
  const std::uint64_t cycle_slots = period_ * bpc;
  const std::uint64_t busy_before = path.busy_slots / cycle_slots;
  const std::uint64_t ready_slot = ready * bpc;
  for (std::uint64_t a = addr; a < addr + len;) {
    const std::uint64_t b = std::min(addr + len, (a / burst_bytes_ + 1) * burst_bytes_);
    const std::uint64_t start = std::max(ready_slot, path.free);
    wait_cycles_ += (start - ready_slot) / cycle_slots;
    path.free = start + (b - a) * period_;
    path.busy_slots += (b - a) * period_;
    ++requests_;
    a = b;
  }
  busy_cycles_ += path.busy_slots / cycle_slots - busy_before;
  // The cycle boundary at or after the last byte (ready is on one: DMA clients issue on cycles).
  const std::uint64_t end = std::max(ready_slot, path.free);
  return (end + cycle_slots - 1) / cycle_slots * period_;
}

}  // namespace octasim::mem
