// models::clip_to_convertor: the least-error INT16 scale and shift for a clipping scalar, checked
// by exhaustive search over every (scale, shift) pair, and the quantizer it realises checked
// against models::UniformQuantizer and models::convert.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "models/numerics/int_range.hpp"
#include "models/quant/clip_convertor.hpp"

namespace octasim::models {
namespace {

// Least |scale * 2^-shift - r| over all scale in [0, 32767] and shift in [0, 63], by brute
// force in long double (the candidate set is small per shift: the two neighbours of r*2^shift).
long double best_error(long double r) {
  long double best = r;
  for (int shift = 0; shift <= 63; ++shift) {
    const long double ideal = std::ldexp(r, shift);
    for (long double scale : {std::floor(ideal), std::ceil(ideal), 32767.0L}) {
      if (scale < 0 || scale > 32767) continue;
      best = std::min(best, std::fabs(std::ldexp(scale, -shift) - r));
    }
  }
  return best;
}

TEST(ClipConvertor, LeastErrorAgainstExhaustiveSearch) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> log_s(-3.0, 9.0);
  for (int i = 0; i < 2000; ++i) {
    const double s = std::pow(10.0, log_s(rng));
    for (int bits : {2, 4, 8, 16}) {
      for (Signedness sign : {Signedness::kSigned, Signedness::kUnsigned}) {
        const ConvertorParams p = clip_to_convertor(s, bits, sign);
        const long double r = std::ldexp(1.0L, sign == Signedness::kSigned ? bits - 1 : bits) / s;
        const long double err = std::fabs(
            std::ldexp(static_cast<long double>(p.scale), -static_cast<int>(p.shift)) - r);
        ASSERT_LE(err, best_error(r) * (1 + 1e-12L)) << "s " << s << " bits " << bits;
        ASSERT_EQ(p.offset, 0);
        ASSERT_GE(p.scale, 0);
        ASSERT_LE(p.shift, 63);
      }
    }
  }
}

TEST(ClipConvertor, ExactPowersOfTwo) {
  // s = 32, B = 8 signed: r = 4 exactly; the smallest shift realising it is 0.
  ConvertorParams p = clip_to_convertor(32.0, 8, Signedness::kSigned);
  EXPECT_EQ(p.scale, 4);
  EXPECT_EQ(p.shift, 0);
  // s = 1024, B = 8: r = 1/8 = 1 >> 3.
  p = clip_to_convertor(1024.0, 8, Signedness::kSigned);
  EXPECT_EQ(p.scale, 1);
  EXPECT_EQ(p.shift, 3);
  // s = 0: nothing to represent, all outputs 0.
  p = clip_to_convertor(0.0, 8, Signedness::kSigned);
  EXPECT_EQ(p.scale, 0);
  // s = 100, B = 8: r = 1.28; 20972 >> 14 is as close as any INT16 gets, and 10486 >> 13 and
  // 5243 >> 12 are the same value: the tie goes to the smallest shift.
  p = clip_to_convertor(100.0, 8, Signedness::kSigned);
  EXPECT_EQ(p.scale, 5243);
  EXPECT_EQ(p.shift, 12);
}

TEST(ClipConvertor, ClampBoundsAreTheIntegersInsideTheClip) {
  EXPECT_EQ(clip_to_clamp(100.7, Signedness::kSigned).hi, 100);
  EXPECT_EQ(clip_to_clamp(100.7, Signedness::kSigned).lo, -100);
  EXPECT_EQ(clip_to_clamp(100.0, Signedness::kUnsigned).hi, 100);
  EXPECT_EQ(clip_to_clamp(100.0, Signedness::kUnsigned).lo, 0);
  EXPECT_EQ(clip_to_clamp(1e9, Signedness::kSigned).hi, 32767);
  EXPECT_EQ(clip_to_clamp(0.4, Signedness::kSigned).hi, 0);
  // With the clamp and the convertor, the top code is 2^(B-1) (models::UniformQuantizer's).
  for (double s : {300.2, 1000.0, 4097.5, 20000.9}) {
    const ConvertorParams p = clip_to_convertor(s, 4, Signedness::kSigned);
    const ClampBounds b = clip_to_clamp(s, Signedness::kSigned);
    EXPECT_EQ(convert(b.hi, p, IntPrecision::kInt16).value, 8) << s;
    EXPECT_EQ(convert(b.lo, p, IntPrecision::kInt16).value, -8) << s;
  }
  EXPECT_THROW((void)clip_to_clamp(-1.0, Signedness::kSigned), std::invalid_argument);
}

TEST(ClipConvertor, RefusesBadInput) {
  EXPECT_THROW((void)clip_to_convertor(-1.0, 8, Signedness::kSigned), std::invalid_argument);
  EXPECT_THROW((void)clip_to_convertor(std::nan(""), 8, Signedness::kSigned),
               std::invalid_argument);
  EXPECT_THROW((void)clip_to_convertor(1.0, 1, Signedness::kSigned), std::invalid_argument);
}

TEST(ClipConvertor, ConvertorCodesMatchTheClippedQuantizer) {
  // The convertor's codes (models::convert, INT8 out) equal the B = 8 clipped quantizer's codes
  // (models::UniformQuantizer) for integer inputs, except where x * r lies within the
  // multiplier's error of a rounding tie (half away vs half even) and at the top code 128, which
  // INT8 saturates to 127.
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> log_s(1.0, 4.0);
  int compared = 0;
  for (int i = 0; i < 50; ++i) {
    const double s = std::pow(10.0, log_s(rng));
    const ConvertorParams p = clip_to_convertor(s, 8, Signedness::kSigned);
    const UniformQuantizer q(s, 8, Signedness::kSigned);
    const double r = 128.0 / s;
    const double err = std::fabs(convertor_multiplier(p) - r);
    for (std::int64_t x = -20000; x <= 20000; x += 7) {
      const double exact = static_cast<double>(x) * r;
      const double frac = std::fabs(exact - std::trunc(exact));
      if (std::fabs(frac - 0.5) <= std::fabs(static_cast<double>(x)) * err + 1e-9) continue;
      const std::int32_t want = std::min(q.code(static_cast<double>(x)), 127);
      ASSERT_EQ(convert(x, p, IntPrecision::kInt8).value, want) << "s " << s << " x " << x;
      ++compared;
    }
  }
  EXPECT_GT(compared, 200000);
}

}  // namespace
}  // namespace octasim::models
