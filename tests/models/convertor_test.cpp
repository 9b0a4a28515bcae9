#include "models/precision/convertor.hpp"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace octasim::models {
namespace {

constexpr auto kI8 = IntPrecision::kInt8;
constexpr auto kI16 = IntPrecision::kInt16;
constexpr auto kI32 = IntPrecision::kInt32;

TEST(RoundingShift, HalfAwayFromZero) {
  EXPECT_EQ(shift_right_round_half_away(5, 1), 3);    // 2.5 -> 3
  EXPECT_EQ(shift_right_round_half_away(-5, 1), -3);  // -2.5 -> -3
  EXPECT_EQ(shift_right_round_half_away(3, 1), 2);    // 1.5 -> 2
  EXPECT_EQ(shift_right_round_half_away(-3, 1), -2);
  EXPECT_EQ(shift_right_round_half_away(9, 2), 2);     // 2.25 -> 2
  EXPECT_EQ(shift_right_round_half_away(-9, 2), -2);   // -2.25 -> -2
  EXPECT_EQ(shift_right_round_half_away(11, 2), 3);    // 2.75 -> 3
  EXPECT_EQ(shift_right_round_half_away(-11, 2), -3);  // -2.75 -> -3
  EXPECT_EQ(shift_right_round_half_away(1, 1), 1);     // 0.5 -> 1
  EXPECT_EQ(shift_right_round_half_away(-1, 1), -1);   // -0.5 -> -1
  EXPECT_EQ(shift_right_round_half_away(-1, 2), 0);    // -0.25 -> 0
  EXPECT_EQ(shift_right_round_half_away(7, 0), 7);
  EXPECT_EQ(shift_right_round_half_away(std::int64_t{1} << 62, 63), 1);  // exactly 0.5
  EXPECT_EQ(shift_right_round_half_away((std::int64_t{1} << 62) - 1, 63), 0);
  EXPECT_EQ(shift_right_round_half_away(std::numeric_limits<std::int64_t>::min(), 64), -1);
}

TEST(Convertor, FormulaOnHandComputedCases) {
  // ((100 - 4) * 3) >> 2 = 288 / 4 = 72
  EXPECT_EQ(convert(100, {4, 3, 2}, kI8), (Saturated{72, false}));
  // ((10 - 0) * 1) >> 2 = 2.5 -> 3 ; negative tie -> -3
  EXPECT_EQ(convert(10, {0, 1, 2}, kI8), (Saturated{3, false}));
  EXPECT_EQ(convert(-10, {0, 1, 2}, kI8), (Saturated{-3, false}));
  // negative scale flips the sign before rounding: (7 * -1) >> 1 = -3.5 -> -4
  EXPECT_EQ(convert(7, {0, -1, 1}, kI8), (Saturated{-4, false}));
  // offset subtracts: (0 - 5) * 2 = -10
  EXPECT_EQ(convert(0, {5, 2, 0}, kI8), (Saturated{-10, false}));
}

TEST(Convertor, SaturatesAtEachOutputWidth) {
  EXPECT_EQ(convert(127, {}, kI8), (Saturated{127, false}));
  EXPECT_EQ(convert(128, {}, kI8), (Saturated{127, true}));
  EXPECT_EQ(convert(-128, {}, kI8), (Saturated{-128, false}));
  EXPECT_EQ(convert(-129, {}, kI8), (Saturated{-128, true}));
  EXPECT_EQ(convert(32767, {}, kI16), (Saturated{32767, false}));
  EXPECT_EQ(convert(32768, {}, kI16), (Saturated{32767, true}));
  EXPECT_EQ(convert(-32769, {}, kI16), (Saturated{-32768, true}));
  // Rounding happens before saturation: 255 >> 1 = 127.5 -> 128 -> saturates.
  EXPECT_EQ(convert(255, {0, 1, 1}, kI8), (Saturated{127, true}));
  EXPECT_EQ(convert(-257, {0, 1, 1}, kI8), (Saturated{-128, true}));   // -128.5 -> -129
  EXPECT_EQ(convert(-255, {0, 1, 1}, kI8), (Saturated{-128, false}));  // -127.5 -> -128
}

TEST(Convertor, Int32ExtremesAreExact) {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  // (INT32_MAX - INT32_MIN) * 32767 needs 48 bits: no intermediate wrap.
  EXPECT_EQ(convert(kMax, {kMin, 32767, 0}, kI32), (Saturated{kMax, true}));
  EXPECT_EQ(convert(kMin, {kMax, 32767, 0}, kI32), (Saturated{kMin, true}));
  // (2^32 - 1) * 32767 >> 47 = 0.99997 -> 1
  EXPECT_EQ(convert(kMax, {kMin, 32767, 47}, kI32), (Saturated{1, false}));
  // (-(2^32 - 1)) * -32768 >> 48 = 0.49999... -> 0
  EXPECT_EQ(convert(kMin, {kMax, -32768, 48}, kI32), (Saturated{0, false}));
  EXPECT_EQ(convert(kMin, {0, -32768, 46}, kI32), (Saturated{1, false}));  // 2^46 >> 46
  EXPECT_EQ(convert(kMin, {0, 1, 0}, kI32), (Saturated{kMin, false}));
}

TEST(Truncation, RoundsHalfAwayThenSaturates) {
  EXPECT_EQ(truncate(0x1234, 8, kI8), (Saturated{0x12, false}));  // 0x12.34 -> 0x12
  EXPECT_EQ(truncate(0x1280, 8, kI8), (Saturated{0x13, false}));  // exact half -> away
  EXPECT_EQ(truncate(-0x1280, 8, kI8), (Saturated{-0x13, false}));
  EXPECT_EQ(truncate(0x8000, 8, kI8), (Saturated{127, true}));
  EXPECT_EQ(truncate(-0x8080, 8, kI8), (Saturated{-128, true}));  // -128.5 -> -129
  EXPECT_EQ(truncate(70000, 1, kI16), (Saturated{32767, true}));
  EXPECT_EQ(truncate(65535, 1, kI16), (Saturated{32767, true}));   // 32767.5 -> 32768
  EXPECT_EQ(truncate(65533, 1, kI16), (Saturated{32767, false}));  // 32766.5 -> 32767
}

TEST(BiasShifter, ShiftsLeftAndSaturates) {
  EXPECT_EQ(shift_left_saturate(3, 4, kI16), (Saturated{48, false}));
  EXPECT_EQ(shift_left_saturate(-3, 4, kI16), (Saturated{-48, false}));
  EXPECT_EQ(shift_left_saturate(1, 15, kI16), (Saturated{32767, true}));
  EXPECT_EQ(shift_left_saturate(-1, 15, kI16), (Saturated{-32768, false}));
  EXPECT_EQ(shift_left_saturate(1, 31, kI32), (Saturated{2147483647, true}));
  EXPECT_EQ(shift_left_saturate(-1, 31, kI32), (Saturated{-2147483647 - 1, false}));
  EXPECT_EQ(shift_left_saturate(1, 70, kI32), (Saturated{2147483647, true}));
  EXPECT_EQ(shift_left_saturate(0, 70, kI32), (Saturated{0, false}));
}

TEST(SaturationCounter, CountsInt8AndInt16Overflows) {
  SaturationCounter c8, c16;
  for (std::int64_t x : {-200, -129, -128, 0, 127, 128, 40000, -40000}) {
    c8.record(convert(x, {}, kI8).saturated);
    c16.record(convert(x, {}, kI16).saturated);
  }
  EXPECT_EQ(c8.value(), 5u);   // -200, -129, 128, 40000, -40000
  EXPECT_EQ(c16.value(), 2u);  // 40000, -40000
  c8.reset();
  EXPECT_EQ(c8.value(), 0u);
}

TEST(Fp16Passthrough, CountsNvdlaOverflow) {
  EXPECT_TRUE(fp16_passthrough_saturates(0x7bff));   // 65504
  EXPECT_FALSE(fp16_passthrough_saturates(0x7bfe));  // 65472
  EXPECT_TRUE(fp16_passthrough_saturates(0xfc00));   // -inf
}

}  // namespace
}  // namespace octasim::models
