// Rules the convolution models' files share (conv.cpp, conv_winograd.cpp; internal to
// models/ops): INT8/INT16 elements in memory and CACC's accumulator range.
#pragma once

#include <cstdint>

namespace octasim::models::ops::conv_detail {

// CACC's 48-bit assembly buffer.
inline constexpr std::int64_t kAccMax = (std::int64_t{1} << 47) - 1;
inline constexpr std::int64_t kAccMin = -(std::int64_t{1} << 47);

// A little-endian signed element of 1 or 2 bytes.
[[nodiscard]] inline std::int32_t load_signed(const std::uint8_t* p, unsigned bytes) {
  if (bytes == 1) return static_cast<std::int8_t>(p[0]);
  return static_cast<std::int16_t>(static_cast<std::uint16_t>(p[0] | (p[1] << 8)));
}

// The low 1 or 2 bytes of `v`, little-endian.
inline void store(std::uint8_t* p, std::int32_t v, unsigned bytes) {
  const auto bits = static_cast<std::uint32_t>(v);
  p[0] = static_cast<std::uint8_t>(bits);
  if (bytes == 2) p[1] = static_cast<std::uint8_t>(bits >> 8);
}

}  // namespace octasim::models::ops::conv_detail
