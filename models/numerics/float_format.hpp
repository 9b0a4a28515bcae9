// Binary floating-point formats (FP32, FP16, BF16, FP8) with exact round-to-nearest-even.
//
// One encoder serves every format: a value is converted straight from double to the target
// (never through float, which would round twice). Subnormals, signed zeros, infinities and NaN
// payloads follow IEEE 754; FP8 E4M3 follows the OCP "FN" variant (no infinity, one NaN code).
#pragma once

#include <cstdint>

namespace octasim::models {

struct FloatFormat {
  int exp_bits;
  int man_bits;
  // false for OCP FP8 E4M3 "FN": the all-ones exponent holds normal numbers and only
  // S.1111.111 is NaN; there is no infinity.
  bool has_inf = true;

  [[nodiscard]] constexpr int bias() const { return (1 << (exp_bits - 1)) - 1; }
  [[nodiscard]] constexpr int total_bits() const { return 1 + exp_bits + man_bits; }
};

inline constexpr FloatFormat kFp32{8, 23};
inline constexpr FloatFormat kFp16{5, 10};
inline constexpr FloatFormat kBf16{8, 7};
inline constexpr FloatFormat kFp8E5M2{5, 2};
inline constexpr FloatFormat kFp8E4M3{4, 3, false};

// What happens to a finite value whose rounded magnitude exceeds the largest finite number.
enum class Overflow : std::uint8_t {
  kInfinity,  // IEEE: +-inf (formats without infinity produce NaN)
  kSaturate,  // clamp to +-max finite (the usual choice when quantizing to FP8)
};

// Encodes x into `fmt`'s bit pattern (in the low total_bits() bits), round-to-nearest-even.
// NaN keeps its sign and the top payload bits, and is always quiet.
[[nodiscard]] std::uint32_t encode_float(double x, FloatFormat fmt,
                                         Overflow overflow = Overflow::kInfinity);
// Exact value of a bit pattern of `fmt`.
[[nodiscard]] double decode_float(std::uint32_t bits, FloatFormat fmt);
// Largest finite value of `fmt`.
[[nodiscard]] double max_finite(FloatFormat fmt);

[[nodiscard]] inline std::uint16_t fp16_from_double(double x) {
  return static_cast<std::uint16_t>(encode_float(x, kFp16));
}
[[nodiscard]] inline std::uint16_t fp16_from_float(float x) {
  return fp16_from_double(static_cast<double>(x));
}
[[nodiscard]] inline float fp16_to_float(std::uint16_t h) {
  return static_cast<float>(decode_float(h, kFp16));  // exact: fp16 is a subset of fp32
}
[[nodiscard]] inline std::uint16_t bf16_from_double(double x) {
  return static_cast<std::uint16_t>(encode_float(x, kBf16));
}
[[nodiscard]] inline std::uint16_t bf16_from_float(float x) {
  return bf16_from_double(static_cast<double>(x));
}
[[nodiscard]] inline float bf16_to_float(std::uint16_t h) {
  return static_cast<float>(decode_float(h, kBf16));
}
[[nodiscard]] inline std::uint32_t fp32_bits_from_double(double x) {
  return encode_float(x, kFp32);
}
[[nodiscard]] float fp32_from_bits(std::uint32_t bits);
[[nodiscard]] std::uint32_t fp32_to_bits(float f);

[[nodiscard]] constexpr bool fp16_is_nan(std::uint16_t h) {
  return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0;
}
[[nodiscard]] constexpr bool fp16_is_inf(std::uint16_t h) {
  return (h & 0x7fffu) == 0x7c00u;
}

// NVDLA's exponent extraction (precision.rst, FP16 error threshold): ((a>>10)&0x1f) - 15.
[[nodiscard]] constexpr int fp16_exp(std::uint16_t a) {
  return ((a >> 10) & 0x1f) - 15;
}

// NVDLA's FP16 overflow definition for saturation counters: |x| >= 65504 (NaN is not counted).
[[nodiscard]] constexpr bool fp16_overflows(std::uint16_t h) {
  return !fp16_is_nan(h) && (h & 0x7fffu) >= 0x7bffu;
}

}  // namespace octasim::models
