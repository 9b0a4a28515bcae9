// The integer datapath stages of NVDLA's SDP, bit-exact with NVDLA's RTL (vmod/nvdla/sdp) and
// C-model (cmod/hls/sdp). Widths are the hardware's:
//   X (BS, BN): ALU operand INT16 << shift, saturated to INT32; max/min/sum with the INT32 data
//               into 33 bits -> multiplier 33 x 16 = 49 bits (or PReLU) -> truncation: rounding
//               right shift, saturated to INT32 -> ReLU.
//   Y (EW):     operand convertor ((INT16 - offset) * scale, truncated to INT32) -> multiplier
//               32 x 32 = 64 bits -> truncation to INT32 -> ALU (max/min/sum/eql, saturated).
//   C:          output convertor ((x - offset) * scale, truncated into 17 bits, then saturated to
//               the output width); its saturation flag feeds D_PERF_OUT_SATURATION.
// Every right shift rounds half away from zero (shift_right_round_half_away, int_range.hpp).
#pragma once

#include <cstdint>

#include "models/numerics/int_range.hpp"
#include "models/precision/convertor.hpp"

namespace octasim::models {

// D_DP_{BS,BN,EW}_CFG.*_ALU_ALGO.
enum class SdpAluAlgo : std::uint8_t { kMax = 0, kMin = 1, kSum = 2, kEql = 3 };

// Saturation to a signed width of `bits` (2..64): SDP's internal buses are 17, 32 and 33 bits.
[[nodiscard]] constexpr Saturated saturate_to_bits(int128_t x, unsigned bits) {
  const int128_t max = (int128_t{1} << (bits - 1)) - 1;
  const int128_t min = -max - 1;
  if (x > max) return {static_cast<std::int64_t>(max), true};
  if (x < min) return {static_cast<std::int64_t>(min), true};
  return {static_cast<std::int64_t>(x), false};
}

// NVDLA's shift-right-saturate unit (RTL NV_NVDLA_HLS_shiftrightsatsu): the value is
// saturate_to_bits(x / 2^shift rounded half away from zero). Its saturation flag is raised when
// the rounded value exceeds the maximum or the *unrounded* quotient lies below the minimum, so a
// quotient in (min - 1/2, min) rounds to min and still counts as saturated.
[[nodiscard]] constexpr Saturated shift_right_saturate(int128_t x, unsigned shift, unsigned bits) {
  const Saturated r = saturate_to_bits(shift_right_round_half_away(x, shift), bits);
  const bool below = shift + bits <= 120 && x < -(int128_t{1} << (bits - 1 + shift));
  return {r.value, r.saturated || below};
}

// The X ALU operand shifter: the INT16 operand shifted left by `shift` (the 6-bit
// *_ALU_SHIFT_VALUE) and saturated to INT32.
[[nodiscard]] inline std::int32_t sdp_x_alu_operand(std::int16_t operand, unsigned shift) {
  return static_cast<std::int32_t>(shift_left_saturate(operand, shift, IntPrecision::kInt32).value);
}

// The X ALU: max, min or sum of the INT32 data and the (shifted) INT32 operand, 33 bits wide.
// The X stage has no compare mode; NVDLA's X ALU sums for algorithm 3 as for kSum.
[[nodiscard]] constexpr std::int64_t sdp_x_alu(std::int32_t data, std::int32_t operand,
                                               SdpAluAlgo algo) {
  switch (algo) {
    case SdpAluAlgo::kMax:
      return data > operand ? data : operand;
    case SdpAluAlgo::kMin:
      return data < operand ? data : operand;
    case SdpAluAlgo::kSum:
    case SdpAluAlgo::kEql:
      break;
  }
  return std::int64_t{data} + operand;
}

// The X truncation alone (multiplier bypassed): the 33-bit ALU result is still shifted right by
// the multiplier's shift value (rounding), saturated to INT32.
[[nodiscard]] inline std::int32_t sdp_x_truncate(std::int64_t alu, unsigned shift) {
  return static_cast<std::int32_t>(truncate(alu, shift, IntPrecision::kInt32).value);
}

// The X multiplier and truncation: 33-bit ALU result times the INT16 operand (49 bits), shifted
// right by `shift` (the low 6 bits of *_MUL_SHIFT_VALUE) with rounding, saturated to INT32.
// With PReLU a non-negative input passes unscaled and untruncated (the hardware keeps its low 32
// bits); a negative one is scaled and truncated.
[[nodiscard]] inline std::int32_t sdp_x_mul_truncate(std::int64_t alu, std::int16_t operand,
                                                     bool prelu, unsigned shift) {
  if (prelu && alu >= 0) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(alu)));
  }
  return sdp_x_truncate(alu * operand, shift);
}

[[nodiscard]] constexpr std::int32_t sdp_relu(std::int32_t x) {
  return x > 0 ? x : 0;
}

// The EW operand convertor (ew_alu_cvt, ew_mul_cvt) on an INT16 operand from ERDMA:
// ((x - offset) * scale) shifted right by `truncate` (6 bits) with rounding, saturated to INT32.
[[nodiscard]] inline std::int32_t sdp_ew_operand_convert(std::int16_t x, std::int32_t offset,
                                                         std::int16_t scale,
                                                         unsigned truncate_lsb) {
  const std::int64_t product = (std::int64_t{x} - offset) * scale;
  return static_cast<std::int32_t>(truncate(product, truncate_lsb, IntPrecision::kInt32).value);
}

// The Y multiplier and truncation: INT32 data times INT32 operand (64 bits), shifted right by
// `truncate` (the 10-bit D_DP_EW_TRUNCATE_VALUE) with rounding, saturated to INT32. With PReLU a
// non-negative input passes unchanged.
[[nodiscard]] inline std::int32_t sdp_y_mul_truncate(std::int32_t data, std::int32_t operand,
                                                     bool prelu, unsigned truncate_lsb) {
  if (prelu && data >= 0) return data;
  const std::int64_t product = std::int64_t{data} * operand;
  return static_cast<std::int32_t>(truncate(product, truncate_lsb, IntPrecision::kInt32).value);
}

// The Y ALU: max, min or sum saturated to INT32; eql gives 0 when equal and 1 otherwise.
[[nodiscard]] constexpr std::int32_t sdp_y_alu(std::int32_t data, std::int32_t operand,
                                               SdpAluAlgo algo) {
  switch (algo) {
    case SdpAluAlgo::kMax:
      return data > operand ? data : operand;
    case SdpAluAlgo::kMin:
      return data < operand ? data : operand;
    case SdpAluAlgo::kEql:
      return data == operand ? 0 : 1;
    case SdpAluAlgo::kSum:
      break;
  }
  return static_cast<std::int32_t>(saturate(int128_t{data} + operand, IntPrecision::kInt32).value);
}

// The SDP output convertor (D_CVT_OFFSET/SCALE/SHIFT): ((x - offset) * scale) shifted right by
// the 6-bit shift with rounding into 17 bits, then saturated to INT8/INT16. The value equals
// convert() (the 17-bit stage never changes the final result); the saturation flag is the 17-bit
// stage's, as NVDLA counts it, so an INT8 result clamped from 200 is not counted.
[[nodiscard]] inline Saturated sdp_output_convert(std::int32_t x, const ConvertorParams& p,
                                                  IntPrecision out) {
  const std::int64_t product = (std::int64_t{x} - p.offset) * p.scale;
  const Saturated t17 = shift_right_saturate(product, p.shift, 17);
  return {saturate(t17.value, out).value, t17.saturated};
}

}  // namespace octasim::models
