// One DRAM channel of the memory system (one per memory partition): banks with an open row each,
// and one data bus. Timing by reservation: see sim/mem/memory_system.hpp for the model. Times are
// SystemC ticks (sc_time::value()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/hw_config.hpp"
#include "sim/core/stats.hpp"

namespace octasim::mem {

class DramChannel {
 public:
  // `period`: ticks per cycle.
  DramChannel(std::string group_name, const HwConfig& hw, std::uint64_t period);

  // Moves [addr, addr + len) (a channel-local address) as early as `ready`; returns the tick the
  // read data is back at the memory interface (bus end + primary_memif_latency) or the write is
  // acknowledged (bus end + dram_write_latency).
  std::uint64_t access(std::uint64_t ready, std::uint64_t addr, std::uint64_t len, bool is_read);

  // Where a channel-local address lives.
  [[nodiscard]] unsigned bank_of(std::uint64_t addr) const {
    return static_cast<unsigned>((addr / row_bytes_) % banks_.size());
  }
  [[nodiscard]] std::uint64_t row_of(std::uint64_t addr) const {
    return addr / row_bytes_ / banks_.size();
  }

  [[nodiscard]] const stats::Group& statistics() const { return stats_; }
  [[nodiscard]] std::uint64_t bytes_read() const { return bytes_read_.value(); }
  [[nodiscard]] std::uint64_t bytes_written() const { return bytes_written_.value(); }
  [[nodiscard]] std::uint64_t busy_cycles() const { return busy_cycles_.value(); }
  // Column accesses that found their row open, over all column accesses (0 before any).
  [[nodiscard]] double row_hit_rate() const;
  void set_timeline(stats::Timeline* timeline, const std::string& track_name);

 private:
  struct Bank {
    bool open = false;
    std::uint64_t row = 0;
    std::uint64_t activated = 0;  // tick of the open row's activation
    std::uint64_t ready = 0;      // earliest tick of the next column command
  };

  std::uint64_t period_;
  std::uint64_t row_bytes_;
  std::uint64_t burst_bytes_;
  std::uint64_t bytes_per_cycle_;
  std::uint64_t trcd_, trp_, cl_, tras_;        // ticks
  std::uint64_t read_latency_, write_latency_;  // ticks
  std::vector<Bank> banks_;
  std::uint64_t bus_free_ = 0;
  stats::Group stats_;
  stats::Counter bytes_read_, bytes_written_, busy_cycles_, reads_, writes_, row_hits_, row_misses_,
      row_conflicts_, activates_;
  stats::Timeline* timeline_ = nullptr;
  std::uint32_t track_ = 0;
};

}  // namespace octasim::mem
