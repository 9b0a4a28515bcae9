// NVDLA's precision-control primitives (precision.rst, "Precision Preservation"):
// the convertor, truncation, the bias shifter, and saturation counting.
#pragma once

#include <cstdint>
#include <limits>

#include "models/numerics/float_format.hpp"
#include "models/numerics/int_range.hpp"

namespace octasim::models {

// Programming of one INT->INT convertor: offset INT32, scaling INT16, shifter UINT5/UINT6
// (SDP's output convertor has a 6-bit shifter; the value is the register field as written).
struct ConvertorParams {
  std::int32_t offset = 0;
  std::int16_t scale = 1;
  std::uint8_t shift = 0;
};

// y = saturate(round_half_away_from_zero(((x - offset) * scale) >> shift)), computed exactly
// (no intermediate width limits), saturated to `out`.
[[nodiscard]] inline Saturated convert(std::int64_t x, const ConvertorParams& p, IntPrecision out) {
  const int128_t scaled = (int128_t{x} - p.offset) * p.scale;
  return saturate(shift_right_round_half_away(scaled, p.shift), out);
}

// Truncation y = saturate_round(x[msb:lsb]), msb = lsb + output bits: a rounding right shift
// by lsb (half away from zero) saturated to `out`.
[[nodiscard]] inline Saturated truncate(std::int64_t x, unsigned lsb, IntPrecision out) {
  return saturate(shift_right_round_half_away(x, lsb), out);
}

// Bias shifter y = saturate(x << shift).
[[nodiscard]] inline Saturated shift_left_saturate(std::int64_t x, unsigned shift,
                                                   IntPrecision out) {
  if (x == 0) return {0, false};
  // |x| << 64 exceeds every output width; below that int128 holds the product exactly.
  if (shift >= 64) return {x < 0 ? int_min(out) : int_max(out), true};
  return saturate(int128_t{x} * (int128_t{1} << shift), out);
}

// FP16 data passes unchanged where NVDLA implements no convertor (FP16->FP16); it still
// counts as saturated when |x| >= 65504 (NVDLA's FP16 overflow definition).
[[nodiscard]] inline bool fp16_passthrough_saturates(std::uint16_t h) {
  return fp16_overflows(h);
}

// A 32-bit statistics counter that sticks at its maximum instead of wrapping.
class SaturationCounter {
 public:
  void record(bool event) {
    if (event && count_ != std::numeric_limits<std::uint32_t>::max()) ++count_;
  }
  void reset() { count_ = 0; }
  [[nodiscard]] std::uint32_t value() const { return count_; }

 private:
  std::uint32_t count_ = 0;
};

}  // namespace octasim::models
