// One L2 slice of the memory system: set-associative, LRU, write-back, write-allocate, with a
// byte-valid mask per line (a write miss allocates without fetching). See
// sim/mem/memory_system.hpp for the model. Times are SystemC ticks (sc_time::value()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/hw_config.hpp"
#include "sim/core/stats.hpp"
#include "sim/mem/dram_channel.hpp"

namespace octasim::mem {

class L2Slice {
 public:
  L2Slice(std::string group_name, const HwConfig& hw, std::uint64_t period);

  // One access within a line, ready at `ready`. `slice_line`: the line's index among the lines
  // this slice holds (selects the set); `tag`: the line's global address; `dram_addr`: the line's
  // channel-local address in `dram` (its partition's channel). Returns the tick the read data
  // left the slice's data port or the write was taken.
  std::uint64_t access(std::uint64_t ready, std::uint64_t slice_line, std::uint64_t tag,
                       std::uint64_t dram_addr, unsigned offset, unsigned len, bool is_read,
                       DramChannel& dram);

  [[nodiscard]] unsigned sets() const { return sets_; }
  [[nodiscard]] const stats::Group& statistics() const { return stats_; }
  [[nodiscard]] std::uint64_t hits() const { return hits_.value(); }
  [[nodiscard]] std::uint64_t misses() const { return misses_.value(); }
  [[nodiscard]] std::uint64_t evictions() const { return evictions_.value(); }
  [[nodiscard]] std::uint64_t writebacks() const { return writebacks_.value(); }

 private:
  struct Line {
    bool present = false;
    bool dirty = false;
    std::uint64_t tag = 0;
    std::uint64_t dram_addr = 0;
    std::uint64_t last_use = 0;  // LRU stamp
    std::uint64_t ready = 0;     // tick its fill arrives
  };
  [[nodiscard]] bool all_valid(std::size_t line, unsigned offset, unsigned len) const;
  void set_valid(std::size_t line, unsigned offset, unsigned len);
  void clear_valid(std::size_t line);

  std::uint64_t period_;
  unsigned ways_;
  unsigned sets_;
  unsigned line_bytes_;
  unsigned bytes_per_cycle_;
  std::uint64_t hit_latency_;  // ticks
  std::size_t mask_words_;     // 64-bit words of the byte-valid mask per line
  std::vector<Line> lines_;    // set-major: set * ways + way
  std::vector<std::uint64_t> valid_;
  std::uint64_t clock_ = 0;
  std::uint64_t port_free_ = 0;
  stats::Group stats_;
  stats::Counter hits_, misses_, evictions_, writebacks_, bytes_read_, bytes_written_, fills_;
};

}  // namespace octasim::mem
