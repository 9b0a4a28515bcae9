// The byte-addressed memory (a DRAM image) that golden reference ops read and write.
// sim/core/memory_image.hpp implements it; tests may use any implementation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace octasim::models::ops {

class Memory {
 public:
  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  virtual ~Memory() = default;

  virtual void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const = 0;
  virtual void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) = 0;
};

}  // namespace octasim::models::ops
