// The DLA's secondary memory interface (NVDLA's SRAMIF/CVIF) and the CV-SRAM behind it, as the
// memory system's second target: requests whose DMA address is in the CV-SRAM
// (sim/core/device_memory.hpp) come here instead of going through the crossbar, L2 and DRAM.
//
// A simple model, by resource reservation like the rest of sim/mem: one data path of
// cvsram_bytes_per_cycle (0: secondary_memif_width / 8) bytes per cycle, shared by every
// client, with no banks. A request splits into bursts of memory_atomic_size x
// secondary_memif_max_burst bytes (at burst-aligned boundaries); each burst holds the data path
// for ceil(bytes / bytes_per_cycle) cycles from max(its ready time, when the path is free).
// A read's data arrive secondary_memif_latency cycles after its last burst crossed the path; a
// write is acknowledged when its last burst has crossed it.
#pragma once

#include <cstdint>
#include <string>

#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/core/stats.hpp"

namespace octasim::mem {

class CvSramPort {
 public:
  // `period` in ticks per cycle; statistics group `stats_path` (the memory system's
  // "<name>.cvsram").
  CvSramPort(const HwConfig& hw, MemoryImage& image, std::uint64_t period, std::string stats_path);

  // `len` bytes at CV-SRAM address `addr` ready at tick `ready`: returns the tick the read data
  // arrive or the write is acknowledged. Reads copy the image's bytes into `data`.
  std::uint64_t access(std::uint64_t ready, std::uint64_t addr, std::uint64_t len, bool is_read,
                       std::uint8_t* data);
  [[nodiscard]] bool contains(std::uint64_t addr, std::uint64_t len) const {
    return image_.contains(addr, len);
  }

  [[nodiscard]] unsigned bytes_per_cycle() const { return bytes_per_cycle_; }
  [[nodiscard]] std::uint64_t bytes_read() const { return bytes_read_.value(); }
  [[nodiscard]] std::uint64_t bytes_written() const { return bytes_written_.value(); }
  [[nodiscard]] std::uint64_t requests() const { return requests_.value(); }
  [[nodiscard]] std::uint64_t busy_cycles() const { return busy_cycles_.value(); }
  [[nodiscard]] const stats::Group& statistics() const { return stats_; }

 private:
  MemoryImage& image_;
  std::uint64_t period_;
  unsigned bytes_per_cycle_;
  std::uint64_t burst_bytes_;
  std::uint64_t latency_;   // ticks
  std::uint64_t free_ = 0;  // tick the data path is next free
  stats::Group stats_;
  stats::Counter requests_, bytes_read_, bytes_written_, busy_cycles_, wait_cycles_;
};

}  // namespace octasim::mem
