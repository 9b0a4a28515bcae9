// The SDP FP16 pipeline fed from memory (MRDMA, IN_PRECISION = FP16) and its EW (Y) stage:
// every expected value is worked by hand (FP16 bit patterns, FP32 sums and products, RNE ties)
// in the comments next to it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "models/numerics/float_format.hpp"
#include "models/ops/sdp.hpp"
#include "tests/models/vec_memory.hpp"

namespace octasim::models::ops {
namespace {

constexpr std::uint64_t kSrc = 0x100, kEw = 0x400, kBs = 0x800, kDst = 0x1000;

// A W x 1 x 16 FP16 cube read by MRDMA (one 32-byte atom per column), FP16 out.
SdpConfig mem_config(std::uint32_t width) {
  SdpConfig c;
  c.width = width;
  c.height = 1;
  c.channels = 16;
  c.in_precision = c.proc_precision = c.out_precision = SdpPrecision::kFp16;
  c.atom_bytes = 32;
  c.src_base = kSrc;
  c.src_line_stride = c.src_surface_stride = width * 32;
  c.dst_base = kDst;
  c.dst_line_stride = c.dst_surface_stride = width * 32;
  return c;
}

void erdma(SdpConfig& c, SdpDataUse use, SdpDataMode mode) {
  c.erdma.enabled = true;
  c.erdma.use = use;
  c.erdma.bytes_per_component = 2;
  c.erdma.mode = mode;
  c.erdma.base = kEw;
  c.erdma.line_stride = c.erdma.surface_stride = c.width * 32 * c.erdma.components();
}

void ew_sum_from_memory(SdpConfig& c) {
  c.ew.bypass = false;
  c.ew.alu_bypass = false;
  c.ew.alu_algo = SdpAluAlgo::kSum;
  c.ew.alu_src = SdpOperandSource::kMemory;
}

// Address of element (w, c) of a W x 1 x 16 FP16 surface at `base`.
std::uint64_t at(std::uint64_t base, std::uint32_t w, std::uint32_t ch) {
  return base + w * 32 + ch * 2;
}

TEST(SdpFp16Memory, EwPerElementSumRoundsSaturatesAndCounts) {
  SdpConfig c = mem_config(2);
  erdma(c, SdpDataUse::kAlu, SdpDataMode::kPerElement);
  ew_sum_from_memory(c);
  test::VecMemory m(0x10000);
  const auto pair = [&](std::uint32_t w, std::uint32_t ch, std::uint16_t x, std::uint16_t e) {
    m.put16(at(kSrc, w, ch), x);
    m.put16(at(kEw, w, ch), e);
  };
  pair(0, 0, 0x3e00, 0x4080);  // 1.5 + 2.25 = 3.75 = 1.875 * 2^1 -> 0x4380
  pair(0, 1, 0x7b53, 0x7b53);  // 60000 + 60000 = 120000 > 65504 -> 0x7bff, saturated
  pair(0, 2, 0xfbff, 0xfbff);  // -65504 - 65504 -> 0xfbff, saturated
  pair(0, 3, 0x7c00, 0x3c00);  // +inf -> FP32 max; max + 1 = max -> 0x7bff, saturated
  pair(0, 4, 0x7e00, 0x3c00);  // NaN + 1 = NaN
  pair(0, 5, 0x3c00, 0x1000);  // 1 + 2^-11: half an FP16 ulp, tie -> even 0x3c00
  pair(0, 6, 0x3c01, 0x1000);  // (1 + 2^-10) + 2^-11: tie between 0x3c01 and 0x3c02 -> 0x3c02
  pair(0, 7, 0xc000, 0x4000);  // -2 + 2 = 0 with the data operand's sign -> 0x8000
  pair(0, 8, 0x0400, 0x8200);  // 2^-14 - 2^-15 = 2^-15: an FP16 denormal, kept -> 0x0200
  pair(0, 9, 0xfc00, 0x0000);  // -inf -> -FP32 max -> 0xfbff, saturated
  // 0x2e66 = 1638 * 2^-14, 0x3266 = 1638 * 2^-13: sum 4914 * 2^-14 = 1228.5 * 2^-12 (the FP16
  // ulp in [0.25, 0.5)), a tie -> 1228 * 2^-12 = 0x3400 + 204 = 0x34cc.
  pair(1, 0, 0x2e66, 0x3266);
  const SdpLayerResult r = run_sdp_layer(c, m);
  EXPECT_EQ(m.u16(at(kDst, 0, 0)), 0x4380);
  EXPECT_EQ(m.u16(at(kDst, 0, 1)), 0x7bff);
  EXPECT_EQ(m.u16(at(kDst, 0, 2)), 0xfbff);
  EXPECT_EQ(m.u16(at(kDst, 0, 3)), 0x7bff);
  EXPECT_TRUE(fp16_is_nan(m.u16(at(kDst, 0, 4))));
  EXPECT_EQ(m.u16(at(kDst, 0, 5)), 0x3c00);
  EXPECT_EQ(m.u16(at(kDst, 0, 6)), 0x3c02);
  EXPECT_EQ(m.u16(at(kDst, 0, 7)), 0x8000);
  EXPECT_EQ(m.u16(at(kDst, 0, 8)), 0x0200);
  EXPECT_EQ(m.u16(at(kDst, 0, 9)), 0xfbff);
  EXPECT_EQ(m.u16(at(kDst, 0, 10)), 0x0000);  // 0 + 0
  EXPECT_EQ(m.u16(at(kDst, 1, 0)), 0x34cc);
  EXPECT_EQ(r.stats.out_saturation.value(), 4u);
  EXPECT_EQ(r.stats.out_nan.value(), 1u);
  EXPECT_EQ(r.stats.in_inf.value(), 2u);
  EXPECT_EQ(r.stats.in_nan.value(), 1u);
  EXPECT_EQ(r.bytes_read, 2u * 32 + 2u * 32);  // MRDMA + ERDMA, 2 bytes per element
  EXPECT_EQ(r.bytes_written, 2u * 32);
}

TEST(SdpFp16Memory, EwMultipliesBeforeAddingWithFp32RegisterOperands) {
  // D_DP_EW_MUL_SRC_VALUE = 100000.0f (0x47c35000), D_DP_EW_ALU_SRC_VALUE = -99999.5f
  // (0xc7c34fc0): FP32 patterns, both exact. x * 1e5 - 99999.5 in FP32:
  SdpConfig c = mem_config(1);
  c.ew.bypass = false;
  c.ew.mul_bypass = false;
  c.ew.mul_operand = static_cast<std::int32_t>(0x47c35000u);
  c.ew.alu_bypass = false;
  c.ew.alu_algo = SdpAluAlgo::kSum;
  c.ew.alu_operand = static_cast<std::int32_t>(0xc7c34fc0u);
  c.ew.truncate = 17;           // unused in FP16
  c.ew.mul_cvt.bypass = false;  // the EW convertors are unused in FP16 (register operands anyway)
  c.ew.mul_cvt.scale = 3;
  test::VecMemory m(0x10000);
  m.put16(at(kSrc, 0, 0), 0x3c00);  // 1: 100000 - 99999.5 = 0.5 -> 0x3800 (the intermediate
                                    // 100000 is beyond FP16: the Y stage computes in FP32)
  m.put16(at(kSrc, 0, 1), 0x4000);  // 2: 200000 - 99999.5 = 100000.5 -> 0x7bff, saturated
  m.put16(at(kSrc, 0, 2), 0xbc00);  // -1: -199999.5 -> 0xfbff, saturated
  // Channels 3..15 hold 0: 0 - 99999.5 -> 0xfbff, saturated.
  const SdpLayerResult r = run_sdp_layer(c, m);
  // Had the ALU run first ((1 - 99999.5) * 1e5) channel 0 would saturate negative; had the
  // registers been read as FP16 (low halves 0x5000 = 32, 0x4fc0 = 31) it would be 63.
  EXPECT_EQ(m.u16(at(kDst, 0, 0)), 0x3800);
  EXPECT_EQ(m.u16(at(kDst, 0, 1)), 0x7bff);
  EXPECT_EQ(m.u16(at(kDst, 0, 2)), 0xfbff);
  EXPECT_EQ(m.u16(at(kDst, 0, 15)), 0xfbff);
  EXPECT_EQ(r.stats.out_saturation.value(), 15u);
}

TEST(SdpFp16Memory, EwPreluSlopePerChannelFromErdma) {
  SdpConfig c = mem_config(1);
  erdma(c, SdpDataUse::kMul, SdpDataMode::kPerChannel);
  c.ew.bypass = false;
  c.ew.mul_bypass = false;
  c.ew.mul_prelu = true;
  c.ew.mul_src = SdpOperandSource::kMemory;
  test::VecMemory m(0x10000);
  const auto pair = [&](std::uint32_t ch, std::uint16_t x, std::uint16_t slope) {
    m.put16(at(kSrc, 0, ch), x);
    m.put16(kEw + 2 * ch, slope);
  };
  pair(0, 0xc800, 0x3400);  // -8 * 0.25 = -2 -> 0xc000
  pair(1, 0x4500, 0x3400);  // 5: sign clear, passes -> 0x4500
  pair(2, 0xc200, 0x4200);  // -3 * 3 = -9 = -1.125 * 2^3 -> 0xc880
  pair(3, 0x8000, 0x3400);  // -0: sign set, multiplied: -0 * 0.25 = -0 -> 0x8000
  (void)run_sdp_layer(c, m);
  EXPECT_EQ(m.u16(at(kDst, 0, 0)), 0xc000);
  EXPECT_EQ(m.u16(at(kDst, 0, 1)), 0x4500);
  EXPECT_EQ(m.u16(at(kDst, 0, 2)), 0xc880);
  EXPECT_EQ(m.u16(at(kDst, 0, 3)), 0x8000);
  EXPECT_EQ(m.u16(at(kDst, 0, 4)), 0x0000);
}

TEST(SdpFp16Memory, EwMaxMinPerElementAndNanOperandFlush) {
  SdpConfig c = mem_config(1);
  erdma(c, SdpDataUse::kAlu, SdpDataMode::kPerElement);
  ew_sum_from_memory(c);
  test::VecMemory m(0x10000);
  m.put16(at(kSrc, 0, 0), 0x3c00);  // max(1, -2) = 1, min = -2
  m.put16(at(kEw, 0, 0), 0xc000);
  m.put16(at(kSrc, 0, 1), 0x8000);  // max(-0, +0) = +0, min = -0
  m.put16(at(kEw, 0, 1), 0x0000);
  m.put16(at(kSrc, 0, 2), 0xbc00);  // -1 against a NaN operand
  m.put16(at(kEw, 0, 2), 0x7e00);
  c.ew.alu_algo = SdpAluAlgo::kMax;
  (void)run_sdp_layer(c, m);
  EXPECT_EQ(m.u16(at(kDst, 0, 0)), 0x3c00);
  EXPECT_EQ(m.u16(at(kDst, 0, 1)), 0x0000);
  EXPECT_TRUE(fp16_is_nan(m.u16(at(kDst, 0, 2))));
  c.ew.alu_algo = SdpAluAlgo::kMin;
  c.nan_to_zero = true;  // the NaN operand becomes +0: min(-1, 0) = -1
  const SdpLayerResult r = run_sdp_layer(c, m);
  EXPECT_EQ(m.u16(at(kDst, 0, 0)), 0xc000);
  EXPECT_EQ(m.u16(at(kDst, 0, 1)), 0x8000);
  EXPECT_EQ(m.u16(at(kDst, 0, 2)), 0xbc00);
  EXPECT_EQ(r.stats.out_nan.value(), 0u);
  EXPECT_EQ(r.stats.in_nan.value(), 0u);  // operand NaNs are not MRDMA input
}

TEST(SdpFp16Memory, BsPerChannelMultiplyAddThenEwPerElementAdd) {
  SdpConfig c = mem_config(1);
  // BS: (x + b[c]) * s[c], BRDMA DATA_USE = BOTH (b, s per element of the operand surface).
  c.brdma.enabled = true;
  c.brdma.use = SdpDataUse::kBoth;
  c.brdma.bytes_per_component = 2;
  c.brdma.base = kBs;
  c.bs.bypass = false;
  c.bs.alu_bypass = false;
  c.bs.alu_algo = SdpAluAlgo::kSum;
  c.bs.alu_src = SdpOperandSource::kMemory;
  c.bs.mul_bypass = false;
  c.bs.mul_src = SdpOperandSource::kMemory;
  erdma(c, SdpDataUse::kAlu, SdpDataMode::kPerElement);
  ew_sum_from_memory(c);
  test::VecMemory m(0x10000);
  m.put16(at(kSrc, 0, 0), 0x3c00);  // (1 + 0.5) * 2 + 0.25 = 3.25 = 1.625 * 2 -> 0x4280
  m.put16(kBs + 0, 0x3800);
  m.put16(kBs + 2, 0x4000);
  m.put16(at(kEw, 0, 0), 0x3400);
  m.put16(at(kSrc, 0, 1), 0x4200);  // (3 - 1) * -0.5 + 10 = 9 -> 0x4880
  m.put16(kBs + 4, 0xbc00);
  m.put16(kBs + 6, 0xb800);
  m.put16(at(kEw, 0, 1), 0x4900);
  // Channel 2: 0 + 0 = 0, * 0 = 0, + 0 = 0.
  (void)run_sdp_layer(c, m);
  EXPECT_EQ(m.u16(at(kDst, 0, 0)), 0x4280);
  EXPECT_EQ(m.u16(at(kDst, 0, 1)), 0x4880);
  EXPECT_EQ(m.u16(at(kDst, 0, 2)), 0x0000);
}

TEST(SdpFp16Memory, NanToZeroFlushesTheDataInputAfterCountingIt) {
  SdpConfig c = mem_config(1);
  c.ew.bypass = false;
  c.ew.alu_bypass = false;
  c.ew.alu_algo = SdpAluAlgo::kSum;
  c.ew.alu_operand = static_cast<std::int32_t>(0x3fc00000u);  // 1.5f
  test::VecMemory m(0x10000);
  m.put16(at(kSrc, 0, 0), 0xfe01);  // NaN
  SdpLayerResult r = run_sdp_layer(c, m);
  EXPECT_TRUE(fp16_is_nan(m.u16(at(kDst, 0, 0))));
  EXPECT_EQ(r.stats.in_nan.value(), 1u);
  c.nan_to_zero = true;  // NaN -> +0; 0 + 1.5 -> 0x3e00
  r = run_sdp_layer(c, m);
  EXPECT_EQ(m.u16(at(kDst, 0, 0)), 0x3e00);
  EXPECT_EQ(r.stats.in_nan.value(), 1u);
  EXPECT_EQ(r.stats.out_nan.value(), 0u);
  // The same flush applies to CACC's FP32 data in flying mode.
  SdpConfig f = c;
  f.flying = true;
  ConvCube in(1, 1, 16);
  in.at(0, 0, 0) = static_cast<std::int32_t>(0xffc00000u);  // FP32 NaN
  r = run_sdp_layer(f, m, &in);
  EXPECT_EQ(m.u16(at(kDst, 0, 0)), 0x3e00);
  EXPECT_EQ(r.stats.in_nan.value(), 0u);  // MRDMA read nothing
}

}  // namespace
}  // namespace octasim::models::ops
