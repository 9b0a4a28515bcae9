// The SDP FP16 pipeline fed by the convolution core (flying): BS/BN in FP32 with FP16 operands,
// FP32 -> FP16 output with NVDLA's rounding; expected values worked by hand.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/numerics/float_format.hpp"
#include "models/ops/sdp.hpp"
#include "models/precision/sdp_fp16_stages.hpp"
#include "tests/models/vec_memory.hpp"

namespace octasim::models::ops {
namespace {

std::int32_t fp32(float v) {
  return static_cast<std::int32_t>(fp32_to_bits(v));
}

// A 2x1x16 flying cube (one FP16 atom of 32 bytes per column) into the FP16 pipeline.
SdpConfig fp16_config() {
  SdpConfig c;
  c.width = 2;
  c.height = 1;
  c.channels = 16;
  c.in_precision = c.proc_precision = c.out_precision = SdpPrecision::kFp16;
  c.atom_bytes = 32;
  c.flying = true;
  c.dst_base = 0x1000;
  c.dst_line_stride = 64;
  c.dst_surface_stride = 64;
  return c;
}

TEST(SdpFp16, BiasScaleReluFromRegisters) {
  SdpConfig c = fp16_config();
  c.bs.bypass = false;
  c.bs.alu_bypass = false;
  c.bs.alu_algo = SdpAluAlgo::kSum;
  c.bs.alu_operand = static_cast<std::int16_t>(fp16_from_double(-1.5));
  c.bs.alu_shift = 7;  // ignored in FP16
  c.bs.mul_bypass = false;
  c.bs.mul_operand = static_cast<std::int16_t>(fp16_from_double(0.25));
  c.bs.mul_shift = 9;  // ignored in FP16
  c.bs.relu_bypass = false;
  ConvCube in(2, 1, 16);
  in.at(0, 0, 0) = fp32(10.0f);           // (10 - 1.5) * 0.25 = 2.125
  in.at(0, 0, 1) = fp32(1.0f);            // (1 - 1.5) * 0.25 < 0 -> ReLU 0
  in.at(0, 0, 2) = fp32(1.0009765f);      // rounding: (1.0009765 - 1.5)/4 < 0 -> 0
  in.at(0, 0, 3) = fp32(4.00048828125f);  // (2.50048828125)/4 = 0.6251220703125: RNE in FP16
  in.at(1, 0, 0) = fp32(1e6f);            // (1e6 - 1.5)/4 = 249999.625 > 65504 -> 65504
  test::VecMemory mem(0x10000);
  SdpLayerResult r = run_sdp_layer(c, mem, &in);
  EXPECT_EQ(mem.u16(0x1000), 0x4040);  // 2.125
  EXPECT_EQ(mem.u16(0x1002), 0x0000);
  EXPECT_EQ(mem.u16(0x1004), 0x0000);
  // 0.6251220703125 = 0x3900 (0.625) + 0.0001220703125 = a quarter ulp (ulp 2^-11 at 0.625)
  // -> rounds down to 0.625.
  EXPECT_EQ(mem.u16(0x1006), 0x3900);
  // Channels 4..15 hold 0: (0 - 1.5) * 0.25 < 0 -> 0.
  EXPECT_EQ(mem.u16(0x1008), 0x0000);
  EXPECT_EQ(mem.u16(0x1020), 0x7bff);  // saturated to 65504, not infinity
  EXPECT_EQ(r.stats.out_saturation.value(), 1u);
  EXPECT_EQ(r.bytes_written, 64u);
}

TEST(SdpFp16, PerChannelOperandsFromMemoryBnMaxAndPrelu) {
  SdpConfig c = fp16_config();
  c.width = 1;
  // BN: max(x, op[c]) from NRDMA, then PReLU with multiplier 0.5 from NRDMA (DATA_USE both).
  c.nrdma.enabled = true;
  c.nrdma.use = SdpDataUse::kBoth;
  c.nrdma.bytes_per_component = 2;
  c.nrdma.base = 0x100;
  c.bn.bypass = false;
  c.bn.alu_bypass = false;
  c.bn.alu_algo = SdpAluAlgo::kMax;
  c.bn.alu_src = SdpOperandSource::kMemory;
  c.bn.mul_bypass = false;
  c.bn.mul_prelu = true;
  c.bn.mul_src = SdpOperandSource::kMemory;
  test::VecMemory mem(0x10000);
  const auto put = [&](std::uint64_t a, double v) { mem.put16(a, fp16_from_double(v)); };
  for (unsigned ch = 0; ch < 16; ++ch) {
    put(0x100 + 4 * ch, -8.0);  // max operand
    put(0x102 + 4 * ch, 0.5);   // PReLU slope
  }
  put(0x100 + 4 * 2, 3.0);  // channel 2: max(1, 3) = 3
  ConvCube in(1, 1, 16);
  in.at(0, 0, 0) = fp32(-3.0f);   // max(-3, -8) = -3 -> PReLU -1.5
  in.at(0, 0, 1) = fp32(-20.0f);  // max(-20, -8) = -8 -> -4
  in.at(0, 0, 2) = fp32(1.0f);    // max(1, 3) = 3 -> positive passes: 3
  in.at(0, 0, 3) = fp32(7.0f);    // 7 passes
  (void)run_sdp_layer(c, mem, &in);
  EXPECT_EQ(mem.u16(0x1000), fp16_from_double(-1.5));
  EXPECT_EQ(mem.u16(0x1002), fp16_from_double(-4.0));
  EXPECT_EQ(mem.u16(0x1004), fp16_from_double(3.0));
  EXPECT_EQ(mem.u16(0x1006), fp16_from_double(7.0));
  EXPECT_EQ(mem.u16(0x1008), 0x0000);  // channel 4: max(+0, -8) = +0 passes PReLU
}

TEST(SdpFp16, NanPropagatesOrIsFlushedAndIsCounted) {
  SdpConfig c = fp16_config();
  c.width = 1;
  c.bs.bypass = false;
  c.bs.alu_bypass = false;
  c.bs.alu_algo = SdpAluAlgo::kSum;
  c.bs.alu_operand = static_cast<std::int16_t>(0x7e00);  // NaN operand
  ConvCube in(1, 1, 16);
  in.at(0, 0, 0) = fp32(2.0f);
  test::VecMemory mem(0x10000);
  const SdpLayerResult kept = run_sdp_layer(c, mem, &in);
  EXPECT_TRUE(fp16_is_nan(mem.u16(0x1000)));
  EXPECT_EQ(kept.stats.out_nan.value(), 16u);
  c.nan_to_zero = true;  // the NaN operand becomes +0: x + 0
  const SdpLayerResult flushed = run_sdp_layer(c, mem, &in);
  EXPECT_EQ(mem.u16(0x1000), fp16_from_double(2.0));
  EXPECT_EQ(flushed.stats.out_nan.value(), 0u);
}

TEST(SdpFp16Stages, NvdlaFloatRules) {
  // FP16 infinity widens to FP32's largest finite value; FP32 -> FP16 saturates at 65504.
  EXPECT_EQ(sdp_fp16_to_fp32(0x7c00), 0x7f7fffffu);
  EXPECT_EQ(sdp_fp32_to_fp16(0x7f800000u), 0x7bffu);
  EXPECT_EQ(sdp_fp32_to_fp16(fp32_to_bits(65519.0f)), 0x7bffu);  // RNE: below the 65520 tie
  EXPECT_EQ(sdp_fp32_to_fp16(fp32_to_bits(-1e9f)), 0xfbffu);
  // FP16 denormals are kept, with RNE: 3 * 2^-26 = 0.75 * 2^-24 -> 2^-24.
  EXPECT_EQ(sdp_fp32_to_fp16(fp32_to_bits(3.0f * 0x1p-26f)), 0x0001u);
  EXPECT_EQ(sdp_fp32_to_fp16(fp32_to_bits(0x1p-25f)), 0x0000u);  // tie to even: 0
  // FP32 results below the smallest normal flush to zero.
  EXPECT_EQ(sdp_fp32_mul(fp32_to_bits(0x1p-100f), fp32_to_bits(-0x1p-30f)), 0x80000000u);
  // Max/min order +0 above -0; x + (-x) keeps the data operand's sign.
  EXPECT_EQ(sdp_fp32_alu(0x80000000u, 0u, SdpAluAlgo::kMax), 0u);
  EXPECT_EQ(sdp_fp32_alu(0x80000000u, 0u, SdpAluAlgo::kMin), 0x80000000u);
  EXPECT_EQ(sdp_fp32_alu(fp32_to_bits(-2.0f), fp32_to_bits(2.0f), SdpAluAlgo::kSum), 0x80000000u);
  // FP32 overflow saturates.
  EXPECT_EQ(sdp_fp32_mul(fp32_to_bits(3e38f), fp32_to_bits(2.0f)), 0x7f7fffffu);
  EXPECT_EQ(sdp_fp32_relu(fp32_to_bits(-0.0f)), 0u);
}

std::string error_of(const SdpConfig& c) {
  test::VecMemory mem(0x10000);
  ConvCube in(c.width, c.height, 16);
  try {
    (void)run_sdp_layer(c, mem, &in);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// The EW stage and memory input are supported since (sdp_fp16_mem_test.cpp); what stays refused:
TEST(SdpFp16, WhatIsNotSupportedIsRefusedInOneLine) {
  SdpConfig c = fp16_config();
  c.ew.bypass = false;
  c.ew.lut_bypass = false;
  EXPECT_EQ(error_of(c), "SDP EW LUT (EW_LUT_BYPASS=NO) in the FP16 pipeline is not supported");
  c = fp16_config();
  c.ew.bypass = false;
  c.ew.alu_bypass = false;
  c.ew.alu_algo = SdpAluAlgo::kEql;
  EXPECT_EQ(error_of(c), "SDP EW EQL mode (EW_ALU_ALGO=EQL) in the FP16 pipeline is not supported");
  c = fp16_config();
  c.out_precision = SdpPrecision::kInt16;
  EXPECT_NE(error_of(c).find("FP16 -> INT16 is not supported"), std::string::npos);
  c = fp16_config();
  c.flying = false;
  c.in_precision = SdpPrecision::kInt16;
  EXPECT_NE(error_of(c).find("SDP precision conversion INT16 -> FP16 is not supported (SDP_RDMA "
                             "IN_PRECISION -> PROC_PRECISION"),
            std::string::npos);
  c = fp16_config();
  c.erdma.enabled = true;
  c.erdma.bytes_per_component = 1;
  EXPECT_NE(error_of(c).find("operands from memory must be 16-bit"), std::string::npos);
  c = fp16_config();
  c.brdma.enabled = true;
  c.brdma.bytes_per_component = 1;
  EXPECT_NE(error_of(c).find("operands from memory must be 16-bit"), std::string::npos);
}

}  // namespace
}  // namespace octasim::models::ops
