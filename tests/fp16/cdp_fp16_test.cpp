// FP16 CDP (models/ops/cdp, models/precision/lut FP16 mode) against hand-derived values: LUT
// lookups whose index, fraction and result are worked out below from the rules in lut.hpp,
// NVDLA's square-sum order made visible by FP32 rounding, the one FP16 rounding of y = x * f,
// NaN/infinity handling and the statistics.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "models/numerics/float_format.hpp"
#include "models/ops/cdp.hpp"
#include "models/precision/lut.hpp"
#include "tests/models/vec_memory.hpp"

namespace octasim::models {
namespace {

using ops::CdpConfig;
using ops::CdpPrecision;
using ops::CdpStats;

std::int64_t fp32_reg(float v) {
  return static_cast<std::int64_t>(fp32_to_bits(v));
}
std::int16_t fp16(double v) {
  return static_cast<std::int16_t>(fp16_from_double(v));
}

// LE exponent table LE[i] = i (index offset -2, start 0), LO linear LO[i] = i / 2 (step 4).
struct Tables {
  LutConfig cfg;
  LutTables t;
};

Tables ramp_tables() {
  Tables r;
  r.cfg.le_function = LutLeFunction::kExponent;
  r.cfg.le_index_offset = -2;
  r.cfg.le_start = fp32_reg(0.0f);
  r.cfg.le_end = fp32_reg(std::ldexp(1.0f, 62));
  r.cfg.lo_index_select = 2;
  r.cfg.lo_start = fp32_reg(0.0f);
  r.cfg.lo_end = fp32_reg(1024.0f);
  for (unsigned i = 0; i < kLutLeEntries; ++i) r.t.le[i] = fp16(i);
  for (unsigned i = 0; i < kLutLoEntries; ++i) r.t.lo[i] = fp16(i * 0.5);
  return r;
}

TEST(CdpFp16Lut, LinearHitInterpolatesWithTheSixteenBitFraction) {
  const Tables r = ramp_tables();
  // x = 10: t = 10 / 4 = 2.5, index 2, fraction 0x8000: 1.0 + (1.5 - 1.0) * 0.5.
  EXPECT_EQ(lut_lo_lookup_fp16(r.cfg, r.t, 10.0f).value, 1.25f);
  // x = 10.5: t = 2.625, fraction 40960: 1.0 + 0.5 * 0.625.
  EXPECT_EQ(lut_lo_lookup_fp16(r.cfg, r.t, 10.5f).value, 1.3125f);
  // x = 4 * 3 + 4 * 2^-20: fraction (2^-20) * 2^16 = 1/16 truncates to 0: exactly LO[3].
  EXPECT_EQ(lut_lo_lookup_fp16(r.cfg, r.t, 12.0f + std::ldexp(1.0f, -18)).value, 1.5f);
  EXPECT_EQ(lut_lo_lookup_fp16(r.cfg, r.t, 10.0f).hit, LutHit::kHit);
}

TEST(CdpFp16Lut, LinearOverflowAndUnderflowExtrapolate) {
  Tables r = ramp_tables();
  r.cfg.lo_slope_oflow_scale = fp16(0.25);
  r.cfg.lo_slope_uflow_scale = fp16(-2.0);
  r.cfg.lo_start = fp32_reg(8.0f);
  // x = 1032: t = (1032 - 8) / 4 = 256 overflows: LO[256] + (1032 - 1024) * 0.25 = 128 + 2.
  const LutFp16TableResult o = lut_lo_lookup_fp16(r.cfg, r.t, 1032.0f);
  EXPECT_EQ(o.hit, LutHit::kOverflow);
  EXPECT_EQ(o.value, 130.0f);
  // x = 5: d = -3 underflows: LO[0] + (5 - 8) * -2 = 6.
  const LutFp16TableResult u = lut_lo_lookup_fp16(r.cfg, r.t, 5.0f);
  EXPECT_EQ(u.hit, LutHit::kUnderflow);
  EXPECT_EQ(u.value, 6.0f);
  // x = START exactly underflows too (d <= 0).
  EXPECT_EQ(lut_lo_lookup_fp16(r.cfg, r.t, 8.0f).hit, LutHit::kUnderflow);
}

TEST(CdpFp16Lut, ExponentHitUsesTheFp32ExponentAndTopMantissaBits) {
  const Tables r = ramp_tables();
  // 3.0 = 1.5 * 2^1: index 1 - (-2) = 3, fraction 0.5: 3 + (4 - 3) * 0.5.
  const LutFp16TableResult a = lut_le_lookup_fp16(r.cfg, r.t, 3.0f);
  EXPECT_EQ(a.hit, LutHit::kHit);
  EXPECT_EQ(a.value, 3.5f);
  // 0.3f = 1.2 * 2^-2: index 0, fraction = the top 16 mantissa bits of 0.3f.
  const std::uint32_t mant = fp32_to_bits(0.3f) & 0x7fffffu;
  const float want = std::ldexp(static_cast<float>(mant >> 7), -16);  // LE[0] = 0, LE[1] = 1
  EXPECT_EQ(lut_le_lookup_fp16(r.cfg, r.t, 0.3f).value, want);
  EXPECT_NEAR(want, 0.2f, 1.0f / 65536.0f);
}

TEST(CdpFp16Lut, ExponentUnderflowExtrapolatesFromStartPlusTwoToTheOffset) {
  Tables r = ramp_tables();
  r.cfg.le_slope_uflow_scale = fp16(2.0);
  // 0.1f has exponent -4: index -2 underflows; LE[0] + (0.1f - 0.25) * 2.
  const LutFp16TableResult u = lut_le_lookup_fp16(r.cfg, r.t, 0.1f);
  EXPECT_EQ(u.hit, LutHit::kUnderflow);
  const float gap = 0.1f - 0.25f;  // one FP32 rounding
  EXPECT_EQ(u.value, gap * 2.0f);
  // 0 and negative x underflow.
  EXPECT_EQ(lut_le_lookup_fp16(r.cfg, r.t, 0.0f).hit, LutHit::kUnderflow);
  EXPECT_EQ(lut_le_lookup_fp16(r.cfg, r.t, -5.0f).hit, LutHit::kUnderflow);
}

TEST(CdpFp16Lut, ExponentOverflowAndZeroSlopes) {
  Tables r = ramp_tables();
  r.cfg.le_index_offset = -40;  // index >= 64 from 2^24 on
  r.cfg.le_end = fp32_reg(std::ldexp(1.0f, 24));
  r.cfg.le_slope_oflow_scale = fp16(0.5);
  // 2^25: index 65 overflows: LE[64] + (2^25 - 2^24) * 0.5 = 64 + 2^23.
  const LutFp16TableResult o = lut_le_lookup_fp16(r.cfg, r.t, std::ldexp(1.0f, 25));
  EXPECT_EQ(o.hit, LutHit::kOverflow);
  EXPECT_EQ(o.value, 8388672.0f);
  // 2^24 - 2: exponent 23, index 63, the last hit: LE[63] + fraction (2^23 - 2) / 2^23.
  const LutFp16TableResult h = lut_le_lookup_fp16(r.cfg, r.t, 16777214.0f);
  EXPECT_EQ(h.hit, LutHit::kHit);
  EXPECT_EQ(h.value, 63.0f + 65535.0f / 65536.0f);
  // Infinity overflows; with a zero slope it takes LE[64], with a nonzero one infinity.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(lut_le_lookup_fp16(r.cfg, r.t, inf).value, inf);
  r.cfg.le_slope_oflow_scale = 0;
  EXPECT_EQ(lut_le_lookup_fp16(r.cfg, r.t, inf).value, 64.0f);
  // NaN underflows; a zero slope gives LE[0] itself.
  const LutFp16TableResult n = lut_le_lookup_fp16(r.cfg, r.t, std::nanf(""));
  EXPECT_EQ(n.hit, LutHit::kUnderflow);
  EXPECT_EQ(n.value, 0.0f);
}

TEST(CdpFp16Lut, PriorityRulesAndOutcomes) {
  Tables r = ramp_tables();
  r.cfg.uflow_priority = LutTableId::kLo;
  r.cfg.hybrid_priority = LutTableId::kLe;
  r.cfg.oflow_priority = LutTableId::kLo;
  r.t.lo[0] = fp16(7.0);
  // 0: both underflow -> LO[0] = 7.
  EXPECT_EQ(lut_lookup_fp16(r.cfg, r.t, 0.0f).value, 7.0f);
  EXPECT_EQ(lut_lookup_fp16(r.cfg, r.t, 0.0f).outcome, LutOutcome::kUnderflow);
  // 3: both hit -> hybrid, LE's 3.5.
  EXPECT_EQ(lut_lookup_fp16(r.cfg, r.t, 3.0f).value, 3.5f);
  EXPECT_EQ(lut_lookup_fp16(r.cfg, r.t, 3.0f).outcome, LutOutcome::kHybrid);
  // 0.1: LE underflows, LO hits -> LO: t = 0.025, fraction floor(0.025 * 65536) = 1638.
  const LutFp16Result lo = lut_lookup_fp16(r.cfg, r.t, 0.1f);
  EXPECT_EQ(lo.outcome, LutOutcome::kLoHit);
  EXPECT_EQ(lo.value, 7.0f + (0.5f - 7.0f) * (1638.0f / 65536.0f));
  // 2048: LO overflows (t = 512), LE hits (index 13) -> LE.
  EXPECT_EQ(lut_lookup_fp16(r.cfg, r.t, 2048.0f).outcome, LutOutcome::kLeHit);
  EXPECT_EQ(lut_lookup_fp16(r.cfg, r.t, 2048.0f).value, 13.0f);
}

TEST(CdpFp16Lut, StartAndEndAreTheLowThirtyTwoBitsAsFp32) {
  // A 38-bit register value whose low 32 bits are the FP32 pattern of -1.5 (0xbfc00000).
  EXPECT_EQ(lut_fp32_register(0xbfc00000), -1.5f);
  EXPECT_EQ(lut_fp32_register(lut_start_end(0xbfc00000, 0x3f)), -1.5f);
}

CdpConfig fp16_config(unsigned local_size) {
  CdpConfig c;
  c.precision = CdpPrecision::kFp16;
  c.local_size = local_size;
  return c;
}

TEST(CdpFp16SquareSum, NvdlaOrderIsVisibleThroughFp32Rounding) {
  // Size 3 around 4096 (square 2^24) between two 1s: (1 + 1) + 2^24 = 2^24 + 2 exactly; a left
  // to right sum would lose both 1s ((1 + 2^24) ties to 2^24).
  const float x3[] = {1.0f, 4096.0f, 1.0f};
  EXPECT_EQ(ops::cdp_lut_input_fp16(fp16_config(3), x3, 3, 1), 16777218.0f);
  // Size 5: ((x1^2 + x3^2) + x2^2) + (x0^2 + x4^2) = (0 + 2^24) + 2 = 2^24 + 2.
  const float x5[] = {1.0f, 0.0f, 4096.0f, 0.0f, 1.0f};
  EXPECT_EQ(ops::cdp_lut_input_fp16(fp16_config(5), x5, 5, 2), 16777218.0f);
  // Size 7 adds (x[c-3]^2 + x[c+3]^2) last: 2^24 + (1 + 1) again, not 2^24 + 1 + 1.
  const float x7[] = {1.0f, 0.0f, 0.0f, 4096.0f, 0.0f, 0.0f, 1.0f};
  EXPECT_EQ(ops::cdp_lut_input_fp16(fp16_config(7), x7, 7, 3), 16777218.0f);
  // Channels outside the cube are 0: channel 0 of {3, 4} sums 9 + 16.
  const float edge[] = {3.0f, 4.0f};
  EXPECT_EQ(ops::cdp_lut_input_fp16(fp16_config(9), edge, 2, 0), 25.0f);
  // SQSUM_BYPASS feeds x itself.
  CdpConfig bypass = fp16_config(3);
  bypass.sqsum_bypass = true;
  EXPECT_EQ(ops::cdp_lut_input_fp16(bypass, edge, 2, 1), 4.0f);
}

// A LUT answering `value` for every square sum below 1024 (LO) and 0.25 above (LE).
LutTables constant_lut(CdpConfig& cfg, double value) {
  cfg.lut.le_function = LutLeFunction::kExponent;
  cfg.lut.le_index_offset = 10;
  cfg.lut.le_start = fp32_reg(0.0f);
  cfg.lut.le_end = fp32_reg(std::ldexp(1.0f, 74));
  cfg.lut.lo_index_select = 2;
  cfg.lut.lo_start = fp32_reg(0.0f);
  cfg.lut.lo_end = fp32_reg(1024.0f);
  cfg.lut.uflow_priority = LutTableId::kLo;
  cfg.lut.hybrid_priority = LutTableId::kLo;
  LutTables t;
  t.le.fill(fp16(0.25));
  t.lo.fill(fp16(value));
  return t;
}

TEST(CdpFp16Output, ProductIsRoundedOnceToNearestEven) {
  CdpConfig cfg = fp16_config(3);
  const LutTables t = constant_lut(cfg, 1.5);
  CdpStats st;
  // (1 + 2^-10) * 1.5 = 1.5 + 1.5 * 2^-10: halfway between 0x3e01 and 0x3e02; even wins.
  EXPECT_EQ(ops::cdp_output_fp16(cfg, t, 1.0f, 0x3c01, st), 0x3e02);
  // (1 + 3 * 2^-10) * 1.5 = 1.5 + 4.5 * 2^-10: halfway between 0x3e04 and 0x3e05; 0x3e04.
  EXPECT_EQ(ops::cdp_output_fp16(cfg, t, 1.0f, 0x3c03, st), 0x3e04);
  // -2 * 1.5 = -3.
  EXPECT_EQ(ops::cdp_output_fp16(cfg, t, 1.0f, 0xc000, st), 0xc200);
  EXPECT_EQ(st.lut.lo_hit.value(), 3u);
  // 60000 * 1.5 overflows FP16: infinity, counted as saturation.
  EXPECT_EQ(ops::cdp_output_fp16(cfg, t, 1.0f, fp16_from_double(60000.0), st), 0x7c00);
  EXPECT_EQ(st.out_saturation.value(), 1u);
  // MUL_BYPASS writes the LUT value.
  cfg.mul_bypass = true;
  EXPECT_EQ(ops::cdp_output_fp16(cfg, t, 1.0f, 0x4000, st), 0x3e00);
}

std::vector<std::uint16_t> run_pixel(const CdpConfig& cfg, const LutTables& t,
                                     const std::vector<std::uint16_t>& raw, unsigned channels,
                                     CdpStats& st) {
  std::vector<std::uint16_t> out(raw.size());
  std::vector<float> scratch(raw.size());
  ops::cdp_pixel_fp16(cfg, t, raw.data(), channels, static_cast<unsigned>(raw.size()), out.data(),
                      scratch.data(), st);
  return out;
}

TEST(CdpFp16Pixel, NanInfinityPaddingAndStatistics) {
  CdpConfig cfg = fp16_config(3);
  const LutTables t = constant_lut(cfg, 0.5);
  // Channels: 2, NaN, 4, inf, 1, (lanes 5..7 beyond the cube hold garbage: a NaN and 8s).
  const std::vector<std::uint16_t> raw = {0x4000, 0x7e01, 0x4400, 0x7c00,
                                          0x3c00, 0x7e00, 0x4800, 0x4800};
  CdpStats st;
  const std::vector<std::uint16_t> y = run_pixel(cfg, t, raw, 5, st);
  // Channel 0: window {2, NaN} has a NaN square sum: LO underflows to LO[0] (zero slope), 2*0.5.
  EXPECT_EQ(y[0], 0x3c00);
  EXPECT_EQ(y[1], 0x7e00);  // NaN x
  // Channel 2: window {NaN, 4, inf}: NaN sum -> 0.5, 4 * 0.5 = 2.
  EXPECT_EQ(y[2], 0x4000);
  EXPECT_EQ(y[3], 0x7c00);  // inf * 0.25 (an infinite sum overflows to LE's 0.25)
  // Channel 4: window {inf, 1, 0}: infinite sum overflows both tables, LE (priority) 0.25.
  EXPECT_EQ(y[4], 0x3400);
  // Lanes beyond the cube are +0 whatever memory holds.
  EXPECT_EQ(y[5], 0x0000);
  EXPECT_EQ(y[7], 0x0000);
  EXPECT_EQ(st.nan_input.value(), 2u);  // every lane read counts, the padding lane's NaN too
  EXPECT_EQ(st.inf_input.value(), 1u);
  EXPECT_EQ(st.nan_output.value(), 1u);
  EXPECT_EQ(st.out_saturation.value(), 0u);  // an infinite x is not an overflow
  // Channels 0, 1, 2 have a NaN in their window (NaN sums), lanes 6 and 7 all-zero windows: both
  // tables underflow. Channels 3 and 4 have the infinity: both overflow. Lane 5 (sum 1) hits LO.
  EXPECT_EQ(st.lut.uflow.value(), 5u);
  EXPECT_EQ(st.lut.oflow.value(), 2u);
  EXPECT_EQ(st.lut.lo_hit.value(), 1u);

  // D_NAN_FLUSH_TO_ZERO: the NaN becomes +0 before anything else.
  cfg.nan_to_zero = true;
  CdpStats st2;
  const std::vector<std::uint16_t> z = run_pixel(cfg, t, raw, 5, st2);
  EXPECT_EQ(z[0], 0x3c00);
  EXPECT_EQ(z[1], 0x0000);
  EXPECT_EQ(st2.nan_input.value(), 2u);  // counted before the flush
  EXPECT_EQ(st2.nan_output.value(), 0u);
}

TEST(CdpFp16Layer, RunsFromMemoryInFeatureFormat) {
  // 1x1x3 cube, 16-byte atoms (8 lanes): x = {1, 2, 3}, f = 0.5 everywhere below 1024.
  ops::CdpLayerParams l;
  l.cfg = fp16_config(3);
  const LutTables t = constant_lut(l.cfg, 0.5);
  l.channels = 3;
  l.atom_bytes = 16;
  l.src = 0x100;
  l.dst = 0x200;
  l.src_line_stride = l.dst_line_stride = 16;
  l.src_surface_stride = l.dst_surface_stride = 16;
  ops::test::VecMemory mem(0x1000);
  const std::uint8_t in[16] = {0x00, 0x3c, 0x00, 0x40, 0x00, 0x42};
  mem.write(0x100, in, sizeof in);
  const ops::CdpLayerResult r = ops::run_cdp_layer(l, t, mem);
  std::uint8_t out[16];
  mem.read(0x200, out, sizeof out);
  const std::uint8_t want[16] = {0x00, 0x38, 0x00, 0x3c, 0x00, 0x3e};  // 0.5, 1, 1.5, then +0
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[i], want[i]) << i;
  EXPECT_EQ(r.bytes_read, 16u);
  EXPECT_EQ(r.bytes_written, 16u);
}

}  // namespace
}  // namespace octasim::models
