// NVDLA's surface CRC (trace command check_crc): CRC-32 with the reflected polynomial
// 0xEDB88320, initial value 0xFFFFFFFF and final inversion, over the surface read as
// little-endian 32-bit words — which, for a reflected CRC, is the bytes in memory order.
#pragma once

#include <cstddef>
#include <cstdint>

namespace octasim::models {

class Crc32 {
 public:
  void update(const std::uint8_t* data, std::size_t size);
  void update_words(const std::uint32_t* words, std::size_t count);
  [[nodiscard]] std::uint32_t value() const { return ~state_; }

 private:
  std::uint32_t state_ = 0xffffffffu;
};

[[nodiscard]] std::uint32_t crc32(const std::uint8_t* data, std::size_t size);
[[nodiscard]] std::uint32_t crc32_words(const std::uint32_t* words, std::size_t count);

}  // namespace octasim::models
