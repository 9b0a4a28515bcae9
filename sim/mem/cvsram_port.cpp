#include "sim/mem/cvsram_port.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace octasim::mem {

CvSramPort::CvSramPort(const HwConfig& hw, MemoryImage& image, std::uint64_t period,
                       std::string stats_path)
    : image_(image),
      period_(period),
      bytes_per_cycle_(hw.mem.cvsram_bytes_per_cycle != 0 ? hw.mem.cvsram_bytes_per_cycle
                                                          : hw.dla.secondary_memif_width / 8),
      burst_bytes_(std::uint64_t{hw.dla.memory_atomic_size} * hw.dla.secondary_memif_max_burst),
      latency_(period * hw.dla.secondary_memif_latency),
      stats_(std::move(stats_path)) {
  if (bytes_per_cycle_ == 0 || burst_bytes_ == 0) {
    throw std::invalid_argument("CvSramPort: the secondary interface needs a width and a burst");
  }
  using stats::Unit;
  requests_ = stats_.add("requests", "bursts through the secondary memory interface", Unit::kCount);
  bytes_read_ = stats_.add("bytes_read", "bytes read from the CV-SRAM", Unit::kBytes);
  bytes_written_ = stats_.add("bytes_written", "bytes written to the CV-SRAM", Unit::kBytes);
  busy_cycles_ = stats_.add("busy_cycles", "cycles the secondary interface's data path moved data",
                            Unit::kCycles);
  wait_cycles_ =
      stats_.add("wait_cycles", "cycles bursts waited for the busy data path", Unit::kCycles);
}

std::uint64_t CvSramPort::access(std::uint64_t ready, std::uint64_t addr, std::uint64_t len,
                                 bool is_read, std::uint8_t* data) {
  std::uint64_t last = ready;
  for (std::uint64_t a = addr; a < addr + len;) {
    const std::uint64_t b = std::min(addr + len, (a / burst_bytes_ + 1) * burst_bytes_);
    const std::uint64_t cycles = (b - a + bytes_per_cycle_ - 1) / bytes_per_cycle_;
    const std::uint64_t start = std::max(ready, free_);
    wait_cycles_ += (start - ready) / period_;
    free_ = start + cycles * period_;
    busy_cycles_ += cycles;
    ++requests_;
    last = free_;
    a = b;
  }
  if (is_read) {
    image_.read(addr, data, len);
    bytes_read_ += len;
    return last + latency_;
  }
  bytes_written_ += len;
  return last;
}

}  // namespace octasim::mem
