#include "models/numerics/float_format.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include <cpuid.h>
#include <gtest/gtest.h>
#include <immintrin.h>

namespace octasim::models {
namespace {

double p2(int e) {
  return std::ldexp(1.0, e);
}

__attribute__((target("f16c"))) std::uint16_t f16c_convert(float f) {
  return static_cast<std::uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

TEST(Fp16, HandComputedRounding) {
  EXPECT_EQ(fp16_from_double(1.0), 0x3c00);
  EXPECT_EQ(fp16_from_double(-2.0), 0xc000);
  EXPECT_EQ(fp16_from_double(65504.0), 0x7bff);
  EXPECT_EQ(fp16_from_double(65519.0), 0x7bff);  // below the 65520 midpoint: rounds down
  EXPECT_EQ(fp16_from_double(65520.0), 0x7c00);  // the midpoint ties to even: overflows to inf
  EXPECT_EQ(fp16_from_double(-65520.0), 0xfc00);
  EXPECT_EQ(fp16_from_double(p2(-24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp16_from_double(p2(-25)), 0x0000);  // half the smallest subnormal: ties to 0
  EXPECT_EQ(fp16_from_double(p2(-25) * 1.0000001), 0x0001);
  EXPECT_EQ(fp16_from_double(3 * p2(-25)), 0x0002);        // 1.5 ulp ties to even (2)
  EXPECT_EQ(fp16_from_double(p2(-14)), 0x0400);            // smallest normal
  EXPECT_EQ(fp16_from_double(p2(-14) - p2(-24)), 0x03ff);  // largest subnormal
  EXPECT_EQ(fp16_from_double(1.0 / 3.0), 0x3555);
  EXPECT_EQ(fp16_from_double(1.0 + p2(-11)), 0x3c00);      // tie to even (down)
  EXPECT_EQ(fp16_from_double(1.0 + 3 * p2(-11)), 0x3c02);  // tie to even (up)
  EXPECT_EQ(fp16_from_double(2047.0 / 2048.0 * 2.0), 0x3fff);
  EXPECT_EQ(fp16_from_double(-0.0), 0x8000);
  EXPECT_EQ(fp16_from_double(0.0), 0x0000);
  EXPECT_EQ(fp16_from_double(1e300), 0x7c00);
  EXPECT_EQ(fp16_from_double(-1e-300), 0x8000);
  EXPECT_EQ(fp16_from_double(std::numeric_limits<double>::infinity()), 0x7c00);
  EXPECT_EQ(fp16_from_double(-std::numeric_limits<double>::infinity()), 0xfc00);
}

TEST(Fp16, NanPropagates) {
  const std::uint16_t qnan = fp16_from_double(std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(fp16_is_nan(qnan));
  EXPECT_TRUE(fp16_is_nan(fp16_from_double(-std::numeric_limits<double>::quiet_NaN())));
  EXPECT_EQ(fp16_from_double(-std::numeric_limits<double>::quiet_NaN()) & 0x8000, 0x8000);
  // Every fp16 NaN survives a round trip through double (payload and sign kept, made quiet).
  for (std::uint32_t man = 1; man < 0x400; ++man) {
    for (std::uint16_t sign : {0x0000, 0x8000}) {
      const auto h = static_cast<std::uint16_t>(sign | 0x7c00 | man);
      EXPECT_EQ(fp16_from_double(decode_float(h, kFp16)), h | 0x0200) << std::hex << h;
    }
  }
}

TEST(Fp16, EveryFiniteValueRoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if (fp16_is_nan(static_cast<std::uint16_t>(h))) continue;
    EXPECT_EQ(fp16_from_double(decode_float(h, kFp16)), h) << std::hex << h;
  }
}

TEST(Fp16, ExponentAndOverflowAsNvdlaDefines) {
  EXPECT_EQ(fp16_exp(0x3c00), 0);    // 1.0
  EXPECT_EQ(fp16_exp(0x4800), 3);    // 8.0
  EXPECT_EQ(fp16_exp(0x0001), -15);  // subnormal: field 0
  EXPECT_EQ(fp16_exp(0xbc00), 0);    // sign ignored
  EXPECT_EQ(fp16_exp(0x7bff), 15);
  EXPECT_TRUE(fp16_overflows(0x7bff));  // 65504 itself counts (|x| >= 65504)
  EXPECT_TRUE(fp16_overflows(0xfbff));
  EXPECT_TRUE(fp16_overflows(0x7c00));   // inf
  EXPECT_FALSE(fp16_overflows(0x7bfe));  // 65472
  EXPECT_FALSE(fp16_overflows(0x7e00));  // NaN is not a saturation
}

// Independent reference: the CPU's own F16C conversion (round to nearest even).
TEST(Fp16, MatchesF16cOnRandomFloats) {
  // CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports does not know "f16c").
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & bit_F16C) == 0) {
    GTEST_SKIP() << "CPU has no F16C";
  }
  std::mt19937 rng(1);
  for (int i = 0; i < 2'000'000; ++i) {
    std::uint32_t bits = rng();
    if (i % 2) bits = (bits & 0x807fffffu) | ((100u + rng() % 56u) << 23);  // near fp16 range
    const float f = fp32_from_bits(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp16_from_float(f), f16c_convert(f)) << std::hexfloat << f;
  }
}

TEST(Bf16, HandComputedRounding) {
  EXPECT_EQ(bf16_from_double(1.0), 0x3f80);
  EXPECT_EQ(bf16_from_double(1.0 + p2(-8)), 0x3f80);      // half ulp: ties to even (down)
  EXPECT_EQ(bf16_from_double(1.0 + 3 * p2(-8)), 0x3f82);  // 1.5 ulp: ties to even (up)
  EXPECT_EQ(bf16_from_double(1.0 + p2(-8) + p2(-20)), 0x3f81);
  EXPECT_EQ(bf16_from_double(-3.0), 0xc040);
  EXPECT_EQ(bf16_from_double(p2(-133)), 0x0001);               // smallest bf16 subnormal
  EXPECT_EQ(bf16_from_double(p2(-134)), 0x0000);               // ties to even: zero
  EXPECT_EQ(bf16_from_double(3.3895313892515355e38), 0x7f7f);  // max finite
  EXPECT_EQ(bf16_from_double(3.4e38), 0x7f80);                 // rounds up past max: inf
  EXPECT_TRUE(std::isnan(bf16_to_float(bf16_from_double(std::nan("")))));
}

// Independent reference: bf16 is the top half of fp32, so RNE on the fp32 bit pattern.
TEST(Bf16, MatchesFp32BitRoundingOnRandomFloats) {
  std::mt19937 rng(2);
  for (int i = 0; i < 2'000'000; ++i) {
    const std::uint32_t bits = rng();
    const float f = fp32_from_bits(bits);
    if (std::isnan(f)) continue;
    const std::uint32_t lsb = (bits >> 16) & 1u;
    const auto want = static_cast<std::uint16_t>((bits + 0x7fffu + lsb) >> 16);
    ASSERT_EQ(bf16_from_float(f), want) << std::hex << bits;
  }
}

// Independent reference: the compiler's double->float conversion (RNE by default).
TEST(Fp32, MatchesNativeConversionOnRandomDoubles) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1'000'000; ++i) {
    std::uint64_t bits = rng();
    if (i % 2) bits = (bits & 0x800fffffffffffffull) | ((880ull + rng() % 290ull) << 52);
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (std::isnan(d)) continue;
    ASSERT_EQ(fp32_bits_from_double(d), fp32_to_bits(static_cast<float>(d))) << std::hexfloat << d;
  }
}

TEST(Fp8, E4M3AndE5M2Limits) {
  EXPECT_EQ(max_finite(kFp8E4M3), 448.0);
  EXPECT_EQ(max_finite(kFp8E5M2), 57344.0);
  EXPECT_EQ(encode_float(448.0, kFp8E4M3), 0x7eu);
  EXPECT_EQ(encode_float(464.0, kFp8E4M3), 0x7eu);  // tie between 448 and the NaN code: even
  EXPECT_EQ(encode_float(480.0, kFp8E4M3), 0x7fu);  // past max, no infinity: NaN
  EXPECT_EQ(encode_float(480.0, kFp8E4M3, Overflow::kSaturate), 0x7eu);
  EXPECT_EQ(encode_float(-1e6, kFp8E5M2, Overflow::kSaturate), 0xfbu);
  EXPECT_EQ(encode_float(1e6, kFp8E5M2), 0x7cu);                  // inf
  EXPECT_EQ(encode_float(std::ldexp(1.0, -9), kFp8E4M3), 0x01u);  // smallest subnormal
  EXPECT_TRUE(std::isnan(decode_float(0x7f, kFp8E4M3)));
  EXPECT_EQ(decode_float(0x78, kFp8E4M3), 256.0);  // the all-ones exponent is finite in FN
}

}  // namespace
}  // namespace octasim::models
