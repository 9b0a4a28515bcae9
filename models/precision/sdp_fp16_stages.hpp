// The floating-point datapath of NVDLA's SDP in the FP16 pipeline (PROC_PRECISION=FP16), as
// NVDLA's C-model defines it (cmod/hls/sdp sdp_x.cpp, sdp_y.cpp, sdp_y_core.cpp, sdp_y_cvt.cpp,
// sdp_c.cpp; cmod/sdp NV_NVDLA_sdp.cpp; include/nvdla_float.h):
//   In:         flying, CACC's FP32; from memory (SDP_RDMA IN_PRECISION=FP16), each 2-byte FP16
//               element widened to FP32 (Fp16ToFp32, exact). NaN/Inf MRDMA elements are counted
//               (SDP_RDMA D_STATUS_NAN/INF_INPUT_NUM). With D_FEATURE_MODE_CFG.NAN_TO_ZERO a NaN
//               data input (either sign) is replaced by +0 before BS.
//   X (BS, BN): ALU operand FP16 -> FP32, max/min/sum in FP32 (no operand shift); multiplier
//               FP32 x (FP16 -> FP32) (PReLU: an input with the sign bit clear passes); no
//               truncation (*_MUL_SHIFT_VALUE unused); ReLU.
//   Y (EW):     multiplier first, then ALU (as in the INT pipelines), both in FP32:
//                 v = PReLU && sign(v) == 0 ? v : v x m;   v = alu(v, a)  (max/min/sum)
//               ERDMA operands (per channel or per element) are FP16 -> FP32 (NAN_TO_ZERO
//               flushes a NaN operand to +0 first); the EW convertors (D_DP_EW_*_CVT_OFFSET/
//               SCALE/TRUNCATE and their bypass bits) and D_DP_EW_TRUNCATE_VALUE are unused.
//               Register operands (D_DP_EW_ALU/MUL_SRC_VALUE, 32 bits) are FP32 bit patterns
//               taken as they are (no NaN flush). Each operation rounds once to FP32 (RNE).
//   C:          the output convertor is not used: FP32 -> FP16 directly; D_PERF_OUT_SATURATION
//               counts outputs of magnitude 65504 (0x7bff / 0xfbff).
// NVDLA's float units have no infinity: every rounding is to nearest even, a result beyond the
// largest finite value becomes that value ("SetToInf" writes the maximum), an FP16 infinity
// operand widens to FP32's maximum, and an FP32 result below the smallest normal FP32 is
// flushed to zero (keeping its sign). NaN propagates (the first operand's when both are NaN);
// with D_FEATURE_MODE_CFG.NAN_TO_ZERO a NaN operand is flushed to +0 first. FP16 results keep
// denormals (RNE). Sign of an exact zero sum: the data operand's (NVDLA's adder keeps the sign
// of the larger-or-equal operand).
//
// Precision conversion between the pipelines (format.rst, "Precision conversion for SDP layer
// (offline mode)": int16 -> fp16 runs in the INT32 pipeline, fp16 -> int16 in the FP32 one;
// int8 -> fp16 and fp16 -> int8 are invalid), as cmod/hls/sdp sdp_c.cpp and
// include/nvdla_float.h define it:
//   PROC = INT16, OUT = FP16: the output convertor (D_CVT_OFFSET INT32, D_CVT_SCALE INT16,
//               D_CVT_SHIFT) into 17 bits as for integer outputs, t = sat17(round_half_away(
//               ((x - offset) * scale) >> shift)), then t to FP16 (Int17ToFp16: nearest even;
//               65520..65536 in magnitude become 65504, there is no infinity).
//               D_PERF_OUT_SATURATION counts outputs of magnitude 65504.
//   PROC = FP16, OUT = INT16: no convertor (D_CVT_* unused): the FP32 result rounded to FP16
//               (as for FP16 output), then FP16 to INT16 (Fp16ToInt16): nearest integer with
//               halves away from zero, saturated to [-32768, 32767], NaN -> -32768.
//               D_PERF_OUT_SATURATION counts nothing (NVDLA's C stage flags no saturation here).
#pragma once

#include <cmath>
#include <cstdint>

#include "models/numerics/float_format.hpp"
#include "models/precision/convertor.hpp"
#include "models/precision/sdp_stages.hpp"

namespace octasim::models {

[[nodiscard]] inline bool fp32_is_nan(std::uint32_t f) {
  return (f & 0x7f800000u) == 0x7f800000u && (f & 0x007fffffu) != 0;
}

// An exact (or innocuously double-rounded) value rounded as NVDLA's FP32 units round it.
[[nodiscard]] inline std::uint32_t sdp_fp32_round(double x) {
  if (std::isnan(x)) return encode_float(x, kFp32);
  const std::uint32_t sign = std::signbit(x) ? 0x80000000u : 0u;
  if (std::fabs(x) < 0x1p-126) return sign;
  if (std::isinf(x)) return sign | 0x7f7fffffu;
  return encode_float(x, kFp32, Overflow::kSaturate);
}

// FP32 bits as a value, with NVDLA's view of an FP32 infinity (the largest finite value).
[[nodiscard]] inline double sdp_fp32_value(std::uint32_t f) {
  if ((f & 0x7fffffffu) == 0x7f800000u) return (f >> 31) != 0 ? -0x1.fffffep127 : 0x1.fffffep127;
  return decode_float(f, kFp32);
}

// Fp16ToFp32: exact; an infinity becomes FP32's largest finite value; NaN keeps its payload.
[[nodiscard]] inline std::uint32_t sdp_fp16_to_fp32(std::uint16_t h, bool nan_to_zero = false) {
  if (fp16_is_nan(h)) {
    if (nan_to_zero) return 0;
    return (std::uint32_t{h} & 0x8000u) << 16 | 0x7f800000u | (std::uint32_t{h} & 0x3ffu) << 13;
  }
  if (fp16_is_inf(h)) return (std::uint32_t{h} & 0x8000u) << 16 | 0x7f7fffffu;
  return encode_float(decode_float(h, kFp16), kFp32);
}

// Fp32ToFp16: nearest even with FP16 denormals; beyond 65504 (or infinite) saturates to 65504.
[[nodiscard]] inline std::uint16_t sdp_fp32_to_fp16(std::uint32_t f) {
  if (fp32_is_nan(f))
    return static_cast<std::uint16_t>(encode_float(decode_float(f, kFp32), kFp16));
  return static_cast<std::uint16_t>(encode_float(sdp_fp32_value(f), kFp16, Overflow::kSaturate));
}

// The X ALU in FP32: max/min (sign, then magnitude; +0 above -0) or sum (kEql sums as kSum).
[[nodiscard]] inline std::uint32_t sdp_fp32_alu(std::uint32_t data, std::uint32_t op,
                                                SdpAluAlgo algo) {
  if (fp32_is_nan(data)) return data;
  if (fp32_is_nan(op)) return op;
  const double a = sdp_fp32_value(data), b = sdp_fp32_value(op);
  if (algo == SdpAluAlgo::kMax || algo == SdpAluAlgo::kMin) {
    bool a_greater = a > b;
    if (a == b) a_greater = !std::signbit(a) && std::signbit(b);  // +0 above -0
    return (a_greater == (algo == SdpAluAlgo::kMax)) ? data : op;
  }
  const double sum = a + b;  // FP32 + FP32 in double, then FP32: double rounding is innocuous
  if (sum == 0.0) return (data & 0x80000000u) | 0u;
  return sdp_fp32_round(sum);
}

// The X multiplier in FP32 (the product of two FP32 values is exact in double).
[[nodiscard]] inline std::uint32_t sdp_fp32_mul(std::uint32_t a, std::uint32_t b) {
  if (fp32_is_nan(a)) return a;
  if (fp32_is_nan(b)) return b;
  return sdp_fp32_round(sdp_fp32_value(a) * sdp_fp32_value(b));
}

// ReLU: a NaN or a value with the sign bit clear passes, everything else is +0.
[[nodiscard]] inline std::uint32_t sdp_fp32_relu(std::uint32_t x) {
  return fp32_is_nan(x) || (x >> 31) == 0 ? x : 0u;
}

// Fp16ToInt16: the FP16 value rounded to the nearest integer, halves away from zero, saturated to
// INT16; NaN becomes -32768 and an infinity saturates.
[[nodiscard]] inline std::int16_t sdp_fp16_to_int16(std::uint16_t h) {
  if (fp16_is_nan(h)) return -32768;
  const double r = std::round(decode_float(h, kFp16));  // std::round: halves away from zero
  if (r >= 32767.0) return 32767;
  if (r <= -32768.0) return -32768;
  return static_cast<std::int16_t>(r);
}

// Int17ToFp16: a 17-bit integer to FP16, nearest even; beyond 65504 it stays 65504.
[[nodiscard]] inline std::uint16_t sdp_int17_to_fp16(std::int32_t t) {
  return static_cast<std::uint16_t>(
      encode_float(static_cast<double>(t), kFp16, Overflow::kSaturate));
}

// The output convertor of the INT pipeline with FP16 output: sat17(round(((x - offset) * scale)
// >> shift)) to FP16.
[[nodiscard]] inline std::uint16_t sdp_output_convert_fp16(std::int32_t x,
                                                           const ConvertorParams& p) {
  const std::int64_t product = (std::int64_t{x} - p.offset) * p.scale;
  return sdp_int17_to_fp16(
      static_cast<std::int32_t>(shift_right_saturate(product, p.shift, 17).value));
}

}  // namespace octasim::models
