// The two-level LUT and the arbitrary-width integer helpers, on hand-computed cases.
#include "models/precision/lut.hpp"

#include <gtest/gtest.h>

#include "models/precision/int_width.hpp"

namespace octasim::models {
namespace {

TEST(IntWidth, SignExtendAndWrap) {
  EXPECT_EQ(sign_extend(0x80, 8), -128);
  EXPECT_EQ(sign_extend(0x7f, 8), 127);
  EXPECT_EQ(sign_extend(0x180, 8), -128);  // bits above the width are ignored
  EXPECT_EQ(sign_extend(0x1f, 5), -1);
  EXPECT_EQ(sign_extend(0x0f, 5), 15);
  EXPECT_EQ(wrap_to_bits(32768, 16), -32768);
  EXPECT_EQ(wrap_to_bits(-32769, 16), 32767);
  EXPECT_EQ(wrap_to_bits(300, 8), 44);
}

TEST(IntWidth, SaturateAnyWidth) {
  EXPECT_EQ(saturate_bits(255, 9), (Saturated{255, false}));
  EXPECT_EQ(saturate_bits(256, 9), (Saturated{255, true}));
  EXPECT_EQ(saturate_bits(-257, 9), (Saturated{-256, true}));
  EXPECT_EQ(saturate_bits(int128_t{1} << 60, 56), (Saturated{(std::int64_t{1} << 55) - 1, true}));
}

TEST(IntWidth, SignedPowerOfTwoScale) {
  EXPECT_EQ(scale_pow2_saturate(10, 2, 16), 3);    // 2.5 -> 3
  EXPECT_EQ(scale_pow2_saturate(-10, 2, 16), -3);  // -2.5 -> -3
  EXPECT_EQ(scale_pow2_saturate(10, -2, 16), 40);  // negative shift multiplies
  EXPECT_EQ(scale_pow2_saturate(10000, -4, 16), 32767);
}

TEST(IntWidth, HlsSaturationFlagToleratesOneStep) {
  // 255 / 2 = 127.5 rounds to 128, saturates to 127; floor is 127: not counted.
  EXPECT_EQ(shift_right_round_saturate_hls(255, 1, 8), (Saturated{127, false}));
  // 257 / 2 = 128.5: floor 128 is one above the result: still not counted.
  EXPECT_EQ(shift_right_round_saturate_hls(257, 1, 8), (Saturated{127, false}));
  // 258 / 2 = 129: two above: counted.
  EXPECT_EQ(shift_right_round_saturate_hls(258, 1, 8), (Saturated{127, true}));
  // -257 / 2 = -128.5 -> -129 -> -128; floor -129 is one below: not counted.
  EXPECT_EQ(shift_right_round_saturate_hls(-257, 1, 8), (Saturated{-128, false}));
  EXPECT_EQ(shift_right_round_saturate_hls(-260, 1, 8), (Saturated{-128, true}));
  EXPECT_EQ(shift_right_round_saturate_hls(-7, 2, 8), (Saturated{-2, false}));  // -1.75 -> -2
}

TEST(Lut, StartEndRegistersAre38BitSigned) {
  EXPECT_EQ(lut_start_end(0xfffffff2u, 0x3fu), -14);
  EXPECT_EQ(lut_start_end(0x12u, 0x0u), 18);
  EXPECT_EQ(lut_start_end(0x0u, 0x20u), -(std::int64_t{1} << 37));
  EXPECT_EQ(lut_start_end(0x5u, 0x1u), (std::int64_t{1} << 32) + 5);
}

// LO: start 0, step 4 (index select 2), LO[k] = 100 k.
LutConfig lo_step4() {
  LutConfig c;
  c.lo_start = 0;
  c.lo_end = 1024;
  c.lo_index_select = 2;
  return c;
}

LutTables ramp(int le_step, int lo_step) {
  LutTables t;
  for (unsigned i = 0; i < kLutLeEntries; ++i) t.le[i] = static_cast<std::int16_t>(le_step * i);
  for (unsigned i = 0; i < kLutLoEntries; ++i) t.lo[i] = static_cast<std::int16_t>(lo_step * i);
  return t;
}

TEST(Lut, LinearIndexAndInterpolation) {
  const LutConfig c = lo_step4();
  const LutTables t = ramp(0, 100);
  // x = 6: index 1, 2/4 of the way to entry 2: 100 + 50.
  EXPECT_EQ(lut_lo_lookup(c, t, 6), (LutTableResult{150, LutHit::kHit}));
  // x = 5: a quarter: 100 + 25.
  EXPECT_EQ(lut_lo_lookup(c, t, 5), (LutTableResult{125, LutHit::kHit}));
  // x = 1020: index 255, 0 of the way: entry 255.
  EXPECT_EQ(lut_lo_lookup(c, t, 1020), (LutTableResult{25500, LutHit::kHit}));
}

TEST(Lut, InterpolationRoundsHalfAwayFromZero) {
  LutConfig c;
  c.lo_index_select = 1;  // step 2
  LutTables t;
  t.lo[1] = 0;
  t.lo[2] = 1;
  EXPECT_EQ(lut_lo_lookup(c, t, 3).value, 1);  // 0 + 0.5 -> 1
  t.lo[2] = -1;
  EXPECT_EQ(lut_lo_lookup(c, t, 3).value, -1);  // 0 - 0.5 -> -1
  t.lo[2] = 2;
  c.lo_index_select = 2;                       // step 4
  EXPECT_EQ(lut_lo_lookup(c, t, 5).value, 1);  // 0 + 2 * 1/4 = 0.5 -> 1
}

TEST(Lut, NegativeIndexSelectShiftsLeftWithoutFraction) {
  LutConfig c;
  c.lo_index_select = -2;  // four entries per unit of x
  const LutTables t = ramp(0, 10);
  EXPECT_EQ(lut_lo_lookup(c, t, 3), (LutTableResult{120, LutHit::kHit}));  // index 12
  EXPECT_EQ(lut_lo_lookup(c, t, 64).hit, LutHit::kOverflow);               // index 256
}

TEST(Lut, UnderflowAndOverflowExtrapolate) {
  LutConfig c = lo_step4();
  LutTables t = ramp(0, 1);
  t.lo[0] = -5;
  t.lo[256] = 1000;
  c.lo_slope_uflow_scale = 1;
  c.lo_slope_uflow_shift = 2;
  c.lo_slope_oflow_scale = 3;
  c.lo_slope_oflow_shift = 1;
  // x == start is an underflow (no distance to interpolate).
  EXPECT_EQ(lut_lo_lookup(c, t, 0), (LutTableResult{-5, LutHit::kUnderflow}));
  // -5 + round(-10 / 4 = -2.5 -> -3) = -8
  EXPECT_EQ(lut_lo_lookup(c, t, -10), (LutTableResult{-8, LutHit::kUnderflow}));
  // index 256 overflows; extrapolation from END = 1024: 1000 + 0.
  EXPECT_EQ(lut_lo_lookup(c, t, 1024), (LutTableResult{1000, LutHit::kOverflow}));
  // 1000 + 10 * 3 / 2 = 1015
  EXPECT_EQ(lut_lo_lookup(c, t, 1034), (LutTableResult{1015, LutHit::kOverflow}));
  c.lo_slope_oflow_shift = -2;  // negative shift multiplies: 1000 + 10 * 3 * 4
  EXPECT_EQ(lut_lo_lookup(c, t, 1034), (LutTableResult{1120, LutHit::kOverflow}));
  // The INT16 result saturates.
  c.lo_slope_oflow_scale = 1000;
  c.lo_slope_oflow_shift = 0;
  EXPECT_EQ(lut_lo_lookup(c, t, 1100), (LutTableResult{32767, LutHit::kOverflow}));
}

TEST(Lut, ExponentModeIndexAndFraction) {
  LutConfig c;
  c.le_function = LutLeFunction::kExponent;
  c.le_start = 0;
  c.le_index_offset = 2;  // LE[i] samples x = 2^(i + 2)
  const LutTables t = ramp(10, 0);
  // x = 12: log2 = 3 -> index 1; (12 - 8) / 8 = 0.5 of the way: 10 + 5.
  EXPECT_EQ(lut_le_lookup(c, t, 12), (LutTableResult{15, LutHit::kHit}));
  // x = 4: exactly entry 0.
  EXPECT_EQ(lut_le_lookup(c, t, 4), (LutTableResult{0, LutHit::kHit}));
  // Above 2^16 the distance keeps its top 16 bits (truncated): x = 2^20 + 2^19 + 15,
  // offset 0 -> index 20, fraction (2^19 + 15) >> 4 = 2^15: 200 + 5.
  c.le_index_offset = 0;
  EXPECT_EQ(lut_le_lookup(c, t, (1 << 20) + (1 << 19) + 15), (LutTableResult{205, LutHit::kHit}));
}

TEST(Lut, ExponentModeUnderflowExtrapolatesFromFirstSample) {
  LutConfig c;
  c.le_start = 0;
  c.le_index_offset = 2;
  c.le_slope_uflow_scale = 8;
  c.le_slope_uflow_shift = 1;
  LutTables t;
  t.le[0] = 7;
  // x = 3: log2 1 < offset 2 -> underflow; distance from the first sample 2^2: 7 + (-1 * 8 / 2).
  EXPECT_EQ(lut_le_lookup(c, t, 3), (LutTableResult{3, LutHit::kUnderflow}));
  // x <= start: also underflow, same reference point: 7 + (-4 - 4) * 8 / 2 = -25.
  c.le_start = 4;
  EXPECT_EQ(lut_le_lookup(c, t, 0), (LutTableResult{-25, LutHit::kUnderflow}));
  // A negative offset extrapolates from START itself: 7 + (0 - 4) * 8 / 2 = -9.
  c.le_index_offset = -1;
  EXPECT_EQ(lut_le_lookup(c, t, 0), (LutTableResult{-9, LutHit::kUnderflow}));
}

TEST(Lut, ExponentModeOverflow) {
  LutConfig c;
  c.le_start = 0;
  c.le_index_offset = -30;  // index = log2(x) + 30 reaches 64 at x = 2^34
  c.le_end = std::int64_t{1} << 34;
  c.le_slope_oflow_scale = 1;
  c.le_slope_oflow_shift = 10;
  LutTables t;
  t.le[64] = 100;
  t.le[63] = 50;
  EXPECT_EQ(lut_le_lookup(c, t, std::int64_t{1} << 33).hit, LutHit::kHit);  // index 63
  // 100 + 2^20 / 2^10 = 1124
  EXPECT_EQ(lut_le_lookup(c, t, (std::int64_t{1} << 34) + (1 << 20)),
            (LutTableResult{1124, LutHit::kOverflow}));
}

TEST(Lut, PriorityRules) {
  LutConfig c;
  const LutTableResult le_hit{1, LutHit::kHit}, lo_hit{2, LutHit::kHit};
  const LutTableResult le_under{3, LutHit::kUnderflow}, lo_under{4, LutHit::kUnderflow};
  const LutTableResult le_over{5, LutHit::kOverflow}, lo_over{6, LutHit::kOverflow};
  // One table hits: its result, whatever the priorities.
  c.hybrid_priority = LutTableId::kLo;
  EXPECT_EQ(lut_select(c, le_hit, lo_under), (LutResult{1, LutOutcome::kLeHit}));
  EXPECT_EQ(lut_select(c, le_over, lo_hit), (LutResult{2, LutOutcome::kLoHit}));
  // Both hit: hybrid priority.
  EXPECT_EQ(lut_select(c, le_hit, lo_hit), (LutResult{2, LutOutcome::kHybrid}));
  c.hybrid_priority = LutTableId::kLe;
  EXPECT_EQ(lut_select(c, le_hit, lo_hit), (LutResult{1, LutOutcome::kHybrid}));
  // One under, one over: also hybrid.
  EXPECT_EQ(lut_select(c, le_under, lo_over), (LutResult{3, LutOutcome::kHybrid}));
  // Both under / both over: their own priorities.
  c.uflow_priority = LutTableId::kLo;
  EXPECT_EQ(lut_select(c, le_under, lo_under), (LutResult{4, LutOutcome::kUnderflow}));
  c.oflow_priority = LutTableId::kLe;
  EXPECT_EQ(lut_select(c, le_over, lo_over), (LutResult{5, LutOutcome::kOverflow}));
}

TEST(Lut, CountersCountOneOutcomeEach) {
  LutCounters n;
  n.record(LutOutcome::kLeHit);
  n.record(LutOutcome::kLeHit);
  n.record(LutOutcome::kHybrid);
  n.record(LutOutcome::kUnderflow);
  EXPECT_EQ(n.le_hit.value(), 2u);
  EXPECT_EQ(n.hybrid.value(), 1u);
  EXPECT_EQ(n.uflow.value(), 1u);
  EXPECT_EQ(n.oflow.value(), 0u);
  EXPECT_EQ(n.lo_hit.value(), 0u);
}

}  // namespace
}  // namespace octasim::models
