// The DLA's secondary memory interface (NVDLA's SRAMIF/CVIF) and the CV-SRAM behind it, as the
// memory system's second target: requests whose DMA address is in the CV-SRAM
// (sim/core/device_memory.hpp) come here instead of going through the crossbar, L2 and DRAM.
//
// A simple model, by resource reservation like the rest of sim/mem, with no banks, in one of two
// forms (HwConfig: cvsram_bytes_per_cycle, or cvsram_read_/write_bytes_per_cycle; a rate of 0
// stands for secondary_memif_width / 8):
//   - one data path shared by reads and writes, the interface: a request splits into bursts of
//     memory_atomic_size x secondary_memif_max_burst bytes (at burst-aligned boundaries); each
//     burst holds the path for ceil(bytes / cvsram_bytes_per_cycle) whole cycles from max(its
//     ready time, when the path is free);
//   - a read path and a write path of their own rates that run in parallel (a memory with
//     separate read and write ports, as NVIDIA's performance sheet gives it: 25 GB/s of reads
//     and 25 GB/s of writes). Each is a sustained rate: bursts stream back to back, a burst of b
//     bytes holding its path for exactly b / rate cycles (fractions of a cycle carry to the next
//     burst), so N bytes read in one request or in many take N / cvsram_read_bytes_per_cycle
//     cycles; a request completes at the cycle boundary at or after its last byte.
// Every client shares the path(s). A read's data arrive secondary_memif_latency cycles after its
// last burst crossed the path; a write is acknowledged when its last burst has crossed it.
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

  // Peak bytes per cycle: the shared path's, or the read and the write path's together.
  [[nodiscard]] unsigned bytes_per_cycle() const {
    return split_ ? read_.bytes_per_cycle + write_.bytes_per_cycle : read_.bytes_per_cycle;
  }
  [[nodiscard]] unsigned read_bytes_per_cycle() const { return read_.bytes_per_cycle; }
  [[nodiscard]] unsigned write_bytes_per_cycle() const { return write_.bytes_per_cycle; }
  [[nodiscard]] bool split_paths() const { return split_; }
  [[nodiscard]] std::uint64_t bytes_read() const { return bytes_read_.value(); }
  [[nodiscard]] std::uint64_t bytes_written() const { return bytes_written_.value(); }
  [[nodiscard]] std::uint64_t requests() const { return requests_.value(); }
  // Cycles a path moved data, summed over the paths.
  [[nodiscard]] std::uint64_t busy_cycles() const { return busy_cycles_.value(); }
  [[nodiscard]] const stats::Group& statistics() const { return stats_; }

 private:
  struct Path {
    unsigned bytes_per_cycle = 0;
    // Shared path: the tick it is next free. Separate paths: the time it is next free and the
    // time it has moved data, in slots of 1 / bytes_per_cycle ticks (tick x bytes_per_cycle).
    std::uint64_t free = 0;
    std::uint64_t busy_slots = 0;
  };

  std::uint64_t access_shared(std::uint64_t ready, std::uint64_t addr, std::uint64_t len);
  std::uint64_t access_split(Path& path, std::uint64_t ready, std::uint64_t addr,
                             std::uint64_t len);

  MemoryImage& image_;
  std::uint64_t period_;
  bool split_;
  Path read_, write_;  // shared: read_ is the one path
  std::uint64_t burst_bytes_;
  std::uint64_t latency_;  // ticks
  stats::Group stats_;
  stats::Counter requests_, bytes_read_, bytes_written_, busy_cycles_, wait_cycles_;
};

}  // namespace octasim::mem
