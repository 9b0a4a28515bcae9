// Integers of arbitrary hardware widths (9-bit, 25-bit, 38-bit, 56-bit, ...) as NVDLA's
// datapaths carry them: sign extension of register fields, two's-complement wrap, saturation,
// and the HLS-generated "round, saturate, flag" right shift of the CDP convertors.
// IntPrecision (int_range.hpp) covers the 8/16/32-bit outputs; these cover every other width.
#pragma once

#include <cstdint>

#include "models/numerics/int_range.hpp"

namespace octasim::models {

// The low `bits` bits of `raw` read as a two's-complement number (1 <= bits <= 64).
[[nodiscard]] constexpr std::int64_t sign_extend(std::uint64_t raw, unsigned bits) {
  if (bits >= 64) return static_cast<std::int64_t>(raw);
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
  const std::uint64_t v = raw & mask;
  // (v ^ sign) - sign maps [0, 2^bits) onto [-2^(bits-1), 2^(bits-1)) without signed overflow.
  return static_cast<std::int64_t>(v ^ sign) - static_cast<std::int64_t>(sign);
}

// x reduced modulo 2^bits into [-2^(bits-1), 2^(bits-1)): what a `bits`-wide register keeps.
[[nodiscard]] constexpr std::int64_t wrap_to_bits(int128_t x, unsigned bits) {
  return sign_extend(static_cast<std::uint64_t>(static_cast<uint128_t>(x)), bits);
}

[[nodiscard]] constexpr std::int64_t int_min_bits(unsigned bits) {
  return -(std::int64_t{1} << (bits - 1));
}
[[nodiscard]] constexpr std::int64_t int_max_bits(unsigned bits) {
  return (std::int64_t{1} << (bits - 1)) - 1;
}

// x clamped to a signed `bits`-wide range (2 <= bits <= 63), and whether the clamp changed it.
[[nodiscard]] constexpr Saturated saturate_bits(int128_t x, unsigned bits) {
  if (x < int_min_bits(bits)) return {int_min_bits(bits), true};
  if (x > int_max_bits(bits)) return {int_max_bits(bits), true};
  return {static_cast<std::int64_t>(x), false};
}

// x * 2^-shift for a signed shift (NVDLA's LUT slope shifters: shift > 0 divides with rounding
// half away from zero, shift < 0 multiplies exactly), saturated to `bits`.
[[nodiscard]] constexpr std::int64_t scale_pow2_saturate(int128_t x, int shift, unsigned bits) {
  if (shift >= 0)
    return saturate_bits(shift_right_round_half_away(x, static_cast<unsigned>(shift)), bits).value;
  // |x| < 2^100 here for every caller; a left shift beyond the output width saturates anyway.
  const unsigned left = static_cast<unsigned>(-shift);
  const int128_t limit = int128_t{1} << 64;
  if (x > limit || x < -limit) return x < 0 ? int_min_bits(bits) : int_max_bits(bits);
  return saturate_bits(x * (int128_t{1} << left), bits).value;
}

// The right shift of NVDLA's HLS-generated convertors (cmod/hls IntShiftRightSat): the result
// is x / 2^shift rounded half away from zero and saturated to `bits`; the saturation flag is
// raised only when floor(x / 2^shift) differs from that result by more than one, so a value
// that only rounds across the range limit (127.5 -> 127 for INT8) is not counted.
[[nodiscard]] constexpr Saturated shift_right_round_saturate_hls(int128_t x, unsigned shift,
                                                                 unsigned bits) {
  const std::int64_t out = saturate_bits(shift_right_round_half_away(x, shift), bits).value;
  // Arithmetic (floor) shift without shifting a negative value: floor(x / 2^s).
  int128_t floor_q = 0;
  if (shift >= 127) {
    floor_q = x < 0 ? -1 : 0;
  } else {
    const int128_t d = int128_t{1} << shift;
    floor_q = x / d;
    if (x % d != 0 && x < 0) floor_q -= 1;
  }
  const bool near = floor_q == out || floor_q == int128_t{out} + 1 || floor_q == int128_t{out} - 1;
  return {out, !near};
}

}  // namespace octasim::models
