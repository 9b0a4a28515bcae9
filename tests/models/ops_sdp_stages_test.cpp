// The SDP datapath primitives (models/precision/sdp_stages.hpp) on hand-computed cases.
#include "models/precision/sdp_stages.hpp"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace octasim::models {
namespace {

constexpr std::int32_t kI32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kI32Min = std::numeric_limits<std::int32_t>::min();

TEST(SdpSaturateToBits, SeventeenBits) {
  EXPECT_EQ(saturate_to_bits(65535, 17), (Saturated{65535, false}));
  EXPECT_EQ(saturate_to_bits(65536, 17), (Saturated{65535, true}));
  EXPECT_EQ(saturate_to_bits(-65536, 17), (Saturated{-65536, false}));
  EXPECT_EQ(saturate_to_bits(-65537, 17), (Saturated{-65536, true}));
}

TEST(SdpShiftRightSaturate, RoundsHalfAwayFromZero) {
  EXPECT_EQ(shift_right_saturate(5, 1, 17), (Saturated{3, false}));    // 2.5 -> 3
  EXPECT_EQ(shift_right_saturate(-5, 1, 17), (Saturated{-3, false}));  // -2.5 -> -3
  EXPECT_EQ(shift_right_saturate(-9, 2, 17), (Saturated{-2, false}));  // -2.25 -> -2
}

TEST(SdpShiftRightSaturate, PositiveOverflowCountsAfterRounding) {
  // 131069 / 2 = 65534.5 -> 65535 fits; 131071 / 2 = 65535.5 -> 65536 overflows.
  EXPECT_EQ(shift_right_saturate(131069, 1, 17), (Saturated{65535, false}));
  EXPECT_EQ(shift_right_saturate(131071, 1, 17), (Saturated{65535, true}));
}

TEST(SdpShiftRightSaturate, NegativeFlagUsesTheUnroundedQuotient) {
  // -262144 / 4 = -65536 exactly: no saturation.
  EXPECT_EQ(shift_right_saturate(-262144, 2, 17), (Saturated{-65536, false}));
  // -262145 / 4 = -65536.25 rounds to -65536 (in range) but its floor -65537 is below the
  // minimum: NVDLA's shift-right-saturate raises the flag.
  EXPECT_EQ(shift_right_saturate(-262145, 2, 17), (Saturated{-65536, true}));
  // -262146 / 4 = -65536.5 rounds away to -65537: saturated either way.
  EXPECT_EQ(shift_right_saturate(-262146, 2, 17), (Saturated{-65536, true}));
}

TEST(SdpXAlu, OperandShifterSaturatesToInt32) {
  EXPECT_EQ(sdp_x_alu_operand(0x1234, 4), 0x12340);
  EXPECT_EQ(sdp_x_alu_operand(-3, 2), -12);
  EXPECT_EQ(sdp_x_alu_operand(0x4000, 16), 0x40000000);
  EXPECT_EQ(sdp_x_alu_operand(0x4000, 17), kI32Max);  // 2^31 does not fit
  EXPECT_EQ(sdp_x_alu_operand(-1, 40), kI32Min);
  EXPECT_EQ(sdp_x_alu_operand(0, 63), 0);
}

TEST(SdpXAlu, MaxMinSumInto33Bits) {
  EXPECT_EQ(sdp_x_alu(5, -7, SdpAluAlgo::kMax), 5);
  EXPECT_EQ(sdp_x_alu(5, -7, SdpAluAlgo::kMin), -7);
  EXPECT_EQ(sdp_x_alu(5, -7, SdpAluAlgo::kSum), -2);
  // The sum keeps its 33rd bit; the truncation saturates later.
  EXPECT_EQ(sdp_x_alu(kI32Max, 1, SdpAluAlgo::kSum), std::int64_t{1} << 31);
  EXPECT_EQ(sdp_x_alu(kI32Min, -1, SdpAluAlgo::kSum), -(std::int64_t{1} << 31) - 1);
}

TEST(SdpXMul, TruncationRoundsAndSaturates) {
  EXPECT_EQ(sdp_x_mul_truncate(100, 3, false, 2), 75);  // 300 / 4
  EXPECT_EQ(sdp_x_mul_truncate(-7, 3, false, 1), -11);  // -21 / 2 = -10.5 -> -11
  EXPECT_EQ(sdp_x_mul_truncate(7, 3, false, 1), 11);    // 10.5 -> 11
  EXPECT_EQ(sdp_x_mul_truncate(-9, 1, false, 2), -2);   // -2.25 -> -2
  EXPECT_EQ(sdp_x_mul_truncate(kI32Max, 2, false, 0), kI32Max);
  EXPECT_EQ(sdp_x_mul_truncate(kI32Min, 2, false, 0), kI32Min);
  EXPECT_EQ(sdp_x_mul_truncate(kI32Min, -1, false, 0), kI32Max);  // 2^31 saturates
}

TEST(SdpXMul, PreluScalesOnlyNegativeValues) {
  EXPECT_EQ(sdp_x_mul_truncate(7, 3, true, 1), 7);  // positive: no scale, no shift
  EXPECT_EQ(sdp_x_mul_truncate(0, 3, true, 1), 0);
  EXPECT_EQ(sdp_x_mul_truncate(-7, 3, true, 1), -11);  // negative: -21 >> 1 rounded
  // A non-negative 33-bit ALU result keeps only its low 32 bits (no saturation on this path).
  EXPECT_EQ(sdp_x_mul_truncate(std::int64_t{1} << 31, 3, true, 0), kI32Min);
}

TEST(SdpXMul, BypassStillTruncates) {
  EXPECT_EQ(sdp_x_truncate(5, 1), 3);
  EXPECT_EQ(sdp_x_truncate(-5, 1), -3);
  EXPECT_EQ(sdp_x_truncate(std::int64_t{1} << 31, 0), kI32Max);
  EXPECT_EQ(sdp_x_truncate(std::int64_t{1} << 31, 1), 1 << 30);
}

TEST(SdpRelu, ClampsNegativesToZero) {
  EXPECT_EQ(sdp_relu(-1), 0);
  EXPECT_EQ(sdp_relu(0), 0);
  EXPECT_EQ(sdp_relu(42), 42);
  EXPECT_EQ(sdp_relu(kI32Min), 0);
}

TEST(SdpEwConvertor, OffsetScaleTruncate) {
  EXPECT_EQ(sdp_ew_operand_convert(10, 4, 3, 1), 9);   // (6 * 3) / 2
  EXPECT_EQ(sdp_ew_operand_convert(-3, 0, 5, 2), -4);  // -15 / 4 = -3.75
  EXPECT_EQ(sdp_ew_operand_convert(1, 0, 3, 1), 2);    // 1.5 -> 2
  // (32767 - INT32_MIN) * 32767 is far outside INT32 when not shifted.
  EXPECT_EQ(sdp_ew_operand_convert(32767, kI32Min, 32767, 0), kI32Max);
  EXPECT_EQ(sdp_ew_operand_convert(-32768, kI32Max, 32767, 0), kI32Min);
}

TEST(SdpYMul, Int32ProductTruncatedWithTenBitShift) {
  EXPECT_EQ(sdp_y_mul_truncate(1000, -3, false, 3), -375);  // -3000 / 8
  EXPECT_EQ(sdp_y_mul_truncate(1 << 30, 1 << 30, false, 0), kI32Max);
  EXPECT_EQ(sdp_y_mul_truncate(1 << 30, 1 << 30, false, 31), 1 << 29);
  EXPECT_EQ(sdp_y_mul_truncate(123456, 7, false, 1000), 0);
  EXPECT_EQ(sdp_y_mul_truncate(5, 9, true, 3), 5);    // PReLU: non-negative passes
  EXPECT_EQ(sdp_y_mul_truncate(-5, 9, true, 3), -6);  // -45 / 8 = -5.625 -> -6
}

TEST(SdpYAlu, SaturatesAndCompares) {
  EXPECT_EQ(sdp_y_alu(kI32Max, 1, SdpAluAlgo::kSum), kI32Max);
  EXPECT_EQ(sdp_y_alu(kI32Min, -1, SdpAluAlgo::kSum), kI32Min);
  EXPECT_EQ(sdp_y_alu(3, 4, SdpAluAlgo::kSum), 7);
  EXPECT_EQ(sdp_y_alu(3, 4, SdpAluAlgo::kMax), 4);
  EXPECT_EQ(sdp_y_alu(3, 4, SdpAluAlgo::kMin), 3);
  EXPECT_EQ(sdp_y_alu(5, 5, SdpAluAlgo::kEql), 0);
  EXPECT_EQ(sdp_y_alu(5, 6, SdpAluAlgo::kEql), 1);
}

TEST(SdpOutputConvertor, HandComputed) {
  EXPECT_EQ(sdp_output_convert(100, {4, 3, 2}, IntPrecision::kInt8), (Saturated{72, false}));
  EXPECT_EQ(sdp_output_convert(-10, {0, 1, 2}, IntPrecision::kInt8), (Saturated{-3, false}));
  EXPECT_EQ(sdp_output_convert(1000, {0, 1, 0}, IntPrecision::kInt16), (Saturated{1000, false}));
}

TEST(SdpOutputConvertor, CountsOnlySeventeenBitSaturation) {
  // 200 clamps to 127 in INT8 but fits the 17-bit truncation: NVDLA does not count it.
  EXPECT_EQ(sdp_output_convert(200, {0, 1, 0}, IntPrecision::kInt8), (Saturated{127, false}));
  EXPECT_EQ(sdp_output_convert(-200, {0, 1, 0}, IntPrecision::kInt8), (Saturated{-128, false}));
  EXPECT_EQ(sdp_output_convert(70000, {0, 1, 0}, IntPrecision::kInt8), (Saturated{127, true}));
  EXPECT_EQ(sdp_output_convert(-70000, {0, 1, 0}, IntPrecision::kInt16), (Saturated{-32768, true}));
  EXPECT_EQ(sdp_output_convert(65535, {0, 1, 0}, IntPrecision::kInt16), (Saturated{32767, false}));
}

TEST(SdpOutputConvertor, ValueAgreesWithTheGenericConvertor) {
  // The 17-bit intermediate never changes the final INT8/INT16 value.
  const std::int32_t xs[] = {0, 1, -1, 127, -129, 70000, -70000, kI32Max, kI32Min, 123456789};
  const ConvertorParams ps[] = {
      {0, 1, 0},    {-5, 3, 2}, {1000, -7, 5}, {kI32Min, 32767, 63}, {kI32Max, -32768, 0},
      {17, 181, 15}};
  for (const std::int32_t x : xs) {
    for (const ConvertorParams& p : ps) {
      for (const IntPrecision out : {IntPrecision::kInt8, IntPrecision::kInt16}) {
        EXPECT_EQ(sdp_output_convert(x, p, out).value, convert(x, p, out).value)
            << "x=" << x << " offset=" << p.offset << " scale=" << p.scale
            << " shift=" << int{p.shift};
      }
    }
  }
}

}  // namespace
}  // namespace octasim::models
