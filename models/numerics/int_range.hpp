// Integer widths, saturation and rounding shifts as NVDLA's datapaths use them.
#pragma once

#include <cstdint>
#include <limits>

namespace octasim::models {

__extension__ typedef __int128 int128_t;
__extension__ typedef unsigned __int128 uint128_t;

// Output widths of NVDLA's convertors, truncations and shifters.
enum class IntPrecision : std::uint8_t { kInt8 = 8, kInt16 = 16, kInt32 = 32 };

[[nodiscard]] constexpr int bits(IntPrecision p) {
  return static_cast<int>(p);
}
[[nodiscard]] constexpr std::int64_t int_min(IntPrecision p) {
  return -(std::int64_t{1} << (bits(p) - 1));
}
[[nodiscard]] constexpr std::int64_t int_max(IntPrecision p) {
  return (std::int64_t{1} << (bits(p) - 1)) - 1;
}

// NVDLA's overflow definition (precision.rst, "Convertor statistics"): x outside [min, max].
[[nodiscard]] constexpr bool overflows(int128_t x, IntPrecision p) {
  return x < int_min(p) || x > int_max(p);
}

// A value clamped to an output width, and whether the clamp changed it (a saturation event).
struct Saturated {
  std::int64_t value;
  bool saturated;
  friend constexpr bool operator==(const Saturated& a, const Saturated& b) {
    return a.value == b.value && a.saturated == b.saturated;
  }
};

[[nodiscard]] constexpr Saturated saturate(int128_t x, IntPrecision p) {
  if (x < int_min(p)) return {int_min(p), true};
  if (x > int_max(p)) return {int_max(p), true};
  return {static_cast<std::int64_t>(x), false};
}

// x / 2^shift rounded half away from zero: NVDLA's rounding after every right shift
// (convertor, truncation). Exact for every int128 input and any shift.
[[nodiscard]] constexpr int128_t shift_right_round_half_away(int128_t x, unsigned shift) {
  if (shift == 0) return x;
  const bool negative = x < 0;
  const uint128_t mag =
      negative ? uint128_t{0} - static_cast<uint128_t>(x) : static_cast<uint128_t>(x);
  // Beyond 127 bits |x| <= 2^127 is below one half. Otherwise mag + half cannot wrap:
  // mag <= 2^127 and half <= 2^126.
  const uint128_t rounded =
      shift >= 128 ? uint128_t{0} : (mag + (uint128_t{1} << (shift - 1))) >> shift;
  return negative ? -static_cast<int128_t>(rounded) : static_cast<int128_t>(rounded);
}

}  // namespace octasim::models
