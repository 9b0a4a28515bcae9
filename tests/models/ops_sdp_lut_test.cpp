// The SDP LUT (models/ops/sdp_lut.hpp) on hand-computed cases.
#include "models/ops/sdp_lut.hpp"

#include <cstdint>

#include <gtest/gtest.h>

namespace octasim::models::ops {
namespace {

constexpr std::uint64_t kOne = std::uint64_t{1} << kSdpLutFractionBits;

TEST(SdpLutExponentIndex, Log2OfTheDistanceFromStart) {
  // x - start = 12 = 0b1100: exponent 3, fraction (12 - 8) / 8 = 0.5.
  SdpLutIndex r = sdp_lut_exponent_index(112, 100, 0);
  EXPECT_TRUE(r.hit());
  EXPECT_EQ(r.index, 3u);
  EXPECT_EQ(r.fraction, kOne / 2);
  // The index offset moves the table: exponent 3 - (-2) = 5.
  r = sdp_lut_exponent_index(112, 100, -2);
  EXPECT_EQ(r.index, 5u);
  // x - start = 1: exponent 0, no fraction.
  r = sdp_lut_exponent_index(101, 100, 0);
  EXPECT_EQ(r.index, 0u);
  EXPECT_EQ(r.fraction, 0u);
}

TEST(SdpLutExponentIndex, UnderAndOverflow) {
  EXPECT_TRUE(sdp_lut_exponent_index(100, 100, 0).uflow);  // x <= start
  EXPECT_TRUE(sdp_lut_exponent_index(-5, 100, 0).uflow);
  EXPECT_TRUE(sdp_lut_exponent_index(112, 100, 4).uflow);  // exponent 3 < offset 4
  // 2^30 away with offset -40: index 70 >= 64 overflows to the last entry.
  const SdpLutIndex r = sdp_lut_exponent_index((1 << 30) + 100, 100, -40);
  EXPECT_TRUE(r.oflow);
  EXPECT_EQ(r.index, 64u);
  // The largest distance (2^32 - 1) from INT32_MIN to INT32_MAX: exponent 31.
  EXPECT_EQ(sdp_lut_exponent_index(2147483647, -2147483647 - 1, 0).index, 31u);
}

TEST(SdpLutLinearIndex, ShiftAndFraction) {
  // (111 - 100) >> 2 = 2, remainder 3 of 4 -> fraction 0.75.
  SdpLutIndex r = sdp_lut_linear_index(111, 100, 2, kSdpLutLoEntries);
  EXPECT_TRUE(r.hit());
  EXPECT_EQ(r.index, 2u);
  EXPECT_EQ(r.fraction, kOne / 4 * 3);
  // A negative select shifts left: 3 << 1 = 6, no fraction.
  r = sdp_lut_linear_index(103, 100, -1, kSdpLutLoEntries);
  EXPECT_EQ(r.index, 6u);
  EXPECT_EQ(r.fraction, 0u);
  // Select 40 > 35: the whole distance is the fraction, shifted down by 5.
  r = sdp_lut_linear_index(100 + 64, 100, 40, kSdpLutLoEntries);
  EXPECT_EQ(r.index, 0u);
  EXPECT_EQ(r.fraction, 2u);
}

TEST(SdpLutLinearIndex, UnderAndOverflow) {
  EXPECT_TRUE(sdp_lut_linear_index(100, 100, 0, kSdpLutLeEntries).uflow);
  // (100 + 4 * 64 - 100) >> 2 = 64 = entries - 1: overflow (the last entry has no successor).
  SdpLutIndex r = sdp_lut_linear_index(356, 100, 2, kSdpLutLeEntries);
  EXPECT_TRUE(r.oflow);
  EXPECT_EQ(r.index, 64u);
  r = sdp_lut_linear_index(355, 100, 2, kSdpLutLeEntries);
  EXPECT_TRUE(r.hit());
  EXPECT_EQ(r.index, 63u);
}

SdpLutConfig linear_tables() {
  SdpLutConfig c;
  c.le_linear = true;
  for (unsigned i = 0; i < kSdpLutLeEntries; ++i) c.le[i] = static_cast<std::int16_t>(10 * i);
  for (unsigned i = 0; i < kSdpLutLoEntries; ++i) c.lo[i] = static_cast<std::int16_t>(-i);
  c.le_start = 0;
  c.le_end = 64;
  c.lo_start = 1000;
  c.lo_end = 1000 + 256;
  return c;
}

TEST(SdpLutLookup, InterpolatesInsideATable) {
  SdpLutConfig c = linear_tables();
  SdpLutResult r = sdp_lut_lookup(c, 5);  // LE hit at entry 5 exactly, LO underflows
  EXPECT_EQ(r.value, 50);
  EXPECT_TRUE(r.le_hit);
  EXPECT_FALSE(r.lo_hit);
  EXPECT_TRUE(r.hybrid());
  c.le_index_select = 1;  // x = 5 -> entry 2, halfway to 3: (20 + 30) / 2
  EXPECT_EQ(sdp_lut_lookup(c, 5).value, 25);
  c.le_index_select = 2;  // x = 5 -> entry 1, a quarter to 2: 10 * 0.75 + 20 * 0.25 = 12.5 -> 13
  EXPECT_EQ(sdp_lut_lookup(c, 5).value, 13);
}

TEST(SdpLutLookup, PriorityPicksTheTable) {
  SdpLutConfig c = linear_tables();
  c.lo_start = 0;                             // both tables hit for x = 5
  EXPECT_EQ(sdp_lut_lookup(c, 5).value, 50);  // hybrid priority LE
  c.hybrid_priority_lo = true;
  EXPECT_EQ(sdp_lut_lookup(c, 5).value, -5);
  const SdpLutResult r = sdp_lut_lookup(c, 5);
  EXPECT_TRUE(r.le_hit && r.lo_hit && r.hybrid());
}

TEST(SdpLutLookup, ExtrapolatesBelowTheStart) {
  SdpLutConfig c = linear_tables();
  c.le[0] = 7;
  c.le_start = 100;
  c.le_uflow_scale = 3;
  c.le_uflow_shift = 1;
  // Both tables underflow; underflow priority LE: 7 + ((90 - 100) * 3) >> 1 = 7 - 15.
  SdpLutResult r = sdp_lut_lookup(c, 90);
  EXPECT_TRUE(r.uflow);
  EXPECT_FALSE(r.hybrid());
  EXPECT_EQ(r.value, -8);
  // A negative shift multiplies: 7 + (-30 << 2).
  c.le_uflow_shift = -2;
  EXPECT_EQ(sdp_lut_lookup(c, 90).value, 7 - 120);
  // Underflow priority LO: lo[0] + ((90 - 1000) * 2) >> 3 = 0 - 227.5 -> -228.
  c.uflow_priority_lo = true;
  c.lo_uflow_scale = 2;
  c.lo_uflow_shift = 3;
  EXPECT_EQ(sdp_lut_lookup(c, 90).value, -228);
}

TEST(SdpLutLookup, ExtrapolatesAboveTheEnd) {
  SdpLutConfig c = linear_tables();
  c.lo_start = 0;
  c.lo_end = 256;
  c.le_oflow_scale = 1;
  c.le_oflow_shift = 0;
  // x = 2000 overflows both; overflow priority LE: le[64] + (2000 - 64) * 1.
  const SdpLutResult r = sdp_lut_lookup(c, 2000);
  EXPECT_TRUE(r.oflow);
  EXPECT_FALSE(r.le_hit || r.lo_hit);
  EXPECT_EQ(r.value, 640 + 1936);
}

TEST(SdpLutLookup, ExponentUnderflowStartsAtStartPlusTwoToTheOffset) {
  SdpLutConfig c;
  c.le_linear = false;
  c.le_index_offset = 2;
  c.le_start = 0;
  c.le[0] = 100;
  c.le_uflow_scale = 1;
  c.lo_start = 1000;
  // x = 1: exponent 0 < 2 underflows; the extrapolation point is 0 + 2^2.
  EXPECT_EQ(sdp_lut_lookup(c, 1).value, 100 + (1 - 4));
}

TEST(SdpLutLookup, ExtrapolationSaturatesToInt32) {
  SdpLutConfig c = linear_tables();
  c.le[0] = 32767;
  c.le_start = 0;
  c.le_uflow_scale = 32767;
  c.le_uflow_shift = -15;
  c.lo_start = 0;
  // The slope term saturates to INT32_MIN first, then the entry is added: 32767 + INT32_MIN.
  EXPECT_EQ(sdp_lut_lookup(c, -2147483647 - 1).value, -2147450881);
  c.le_oflow_scale = 32767;
  c.le_oflow_shift = -15;
  // Overflow: 640 + (saturated INT32_MAX) saturates again.
  EXPECT_EQ(sdp_lut_lookup(c, 2147483647).value, 2147483647);
}

}  // namespace
}  // namespace octasim::models::ops
