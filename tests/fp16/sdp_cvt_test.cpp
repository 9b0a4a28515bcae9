// SDP precision conversion between the integer and FP16 pipelines (models/precision/
// sdp_fp16_stages.hpp, models/ops/sdp): FP16 -> INT16 (PROC = FP16, OUT = INT16) and INT16 ->
// FP16 (PROC = INT16, OUT = FP16, the output convertor into 17 bits then FP16). Every expected
// value is worked by hand in the comment next to it: halves away from zero after the FP16
// rounding, nearest-even FP16 rounding of 17-bit integers, saturation and its counter, negative
// zero points, and the QuantizeLinear / DequantizeLinear arrangements the firmware programs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "models/numerics/float_format.hpp"
#include "models/ops/sdp.hpp"
#include "models/precision/sdp_fp16_stages.hpp"
#include "tests/models/vec_memory.hpp"

// A namespace of its own: the unity build compiles this file with its target's others.
namespace octasim::models::ops::sdp_cvt_test {
namespace {

constexpr std::uint64_t kSrc = 0x100, kDst = 0x1000;

std::uint16_t h(double v) {
  return fp16_from_double(v);
}
std::uint32_t f32(float v) {
  std::uint32_t u = 0;
  std::memcpy(&u, &v, 4);
  return u;
}

// A 1 x 1 x 16 cube (one 32-byte atom), memory to memory, at the given precisions.
SdpConfig config(SdpPrecision proc, SdpPrecision out) {
  SdpConfig c;
  c.width = c.height = 1;
  c.channels = 16;
  c.in_precision = c.proc_precision = proc;
  c.out_precision = out;
  c.atom_bytes = 32;
  c.src_base = kSrc;
  c.src_line_stride = c.src_surface_stride = 32;
  c.dst_base = kDst;
  c.dst_line_stride = c.dst_surface_stride = 32;
  return c;
}

std::string error_of(const SdpConfig& c) {
  test::VecMemory m(0x10000);
  try {
    (void)run_sdp_layer(c, m);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(SdpCvtPrimitives, Fp16ToInt16RoundsHalvesAwayFromZeroAndSaturates) {
  EXPECT_EQ(sdp_fp16_to_int16(h(2.5)), 3);
  EXPECT_EQ(sdp_fp16_to_int16(h(-2.5)), -3);
  EXPECT_EQ(sdp_fp16_to_int16(h(0.5)), 1);
  EXPECT_EQ(sdp_fp16_to_int16(h(-0.5)), -1);
  EXPECT_EQ(sdp_fp16_to_int16(h(1.5)), 2);
  EXPECT_EQ(sdp_fp16_to_int16(0x37ff), 0);  // 0.49951171875
  EXPECT_EQ(sdp_fp16_to_int16(h(2.498046875)), 2);
  EXPECT_EQ(sdp_fp16_to_int16(h(130.5)), 131);
  EXPECT_EQ(sdp_fp16_to_int16(0x0001), 0);  // the smallest denormal
  EXPECT_EQ(sdp_fp16_to_int16(0x8000), 0);  // -0
  EXPECT_EQ(sdp_fp16_to_int16(h(32768.0)), 32767);
  EXPECT_EQ(sdp_fp16_to_int16(h(-32768.0)), -32768);
  EXPECT_EQ(sdp_fp16_to_int16(0x7bff), 32767);   // 65504
  EXPECT_EQ(sdp_fp16_to_int16(0xfbff), -32768);  // -65504
  EXPECT_EQ(sdp_fp16_to_int16(0x7c00), 32767);   // +inf
  EXPECT_EQ(sdp_fp16_to_int16(0xfc00), -32768);  // -inf
  EXPECT_EQ(sdp_fp16_to_int16(0x7e00), -32768);  // NaN
  EXPECT_EQ(sdp_fp16_to_int16(0xfe01), -32768);  // NaN, sign set
}

TEST(SdpCvtPrimitives, Int17ToFp16RoundsToNearestEvenWithoutInfinity) {
  EXPECT_EQ(sdp_int17_to_fp16(0), 0x0000);
  EXPECT_EQ(sdp_int17_to_fp16(2047), 0x67ff);   // exact
  EXPECT_EQ(sdp_int17_to_fp16(2049), 0x6800);   // tie between 2048 and 2050 -> even 2048
  EXPECT_EQ(sdp_int17_to_fp16(2051), 0x6802);   // tie between 2050 and 2052 -> even 2052
  EXPECT_EQ(sdp_int17_to_fp16(-2049), 0xe800);  // -2048
  EXPECT_EQ(sdp_int17_to_fp16(65504), 0x7bff);
  EXPECT_EQ(sdp_int17_to_fp16(65519), 0x7bff);  // below the midpoint 65520
  EXPECT_EQ(sdp_int17_to_fp16(65520), 0x7bff);  // IEEE: infinity; NVDLA: 65504
  EXPECT_EQ(sdp_int17_to_fp16(65535), 0x7bff);
  EXPECT_EQ(sdp_int17_to_fp16(-65536), 0xfbff);
}

TEST(SdpCvtPrimitives, OutputConvertorTo17BitsThenFp16) {
  // (5 - 2) * 3 = 9, >> 1 = 4.5 -> 5 (half away from zero).
  EXPECT_EQ(sdp_output_convert_fp16(5, {2, 3, 1}), h(5.0));
  // (-5 - 2) * 3 = -21, >> 1 = -10.5 -> -11.
  EXPECT_EQ(sdp_output_convert_fp16(-5, {2, 3, 1}), h(-11.0));
  // 100000 saturates to 65535 in 17 bits, which FP16 holds as 65504.
  EXPECT_EQ(sdp_output_convert_fp16(100000, {0, 1, 0}), 0x7bff);
  EXPECT_EQ(sdp_output_convert_fp16(-100000, {0, 1, 0}), 0xfbff);
  // (4099 - 0) * 1 = 4099 -> FP16 spacing 4 at [4096, 8192): 4099 is nearer 4100.
  EXPECT_EQ(sdp_output_convert_fp16(4099, {0, 1, 0}), h(4100.0));
}

// QuantizeLinear-like (ONNX's test_quantizelinear: scale 2, zero point 128, uint8):
// BS: min(x, (255 - 128) * 2 = 254) then * 0.5 (FP16 register operands); BN: + 128 (FP16
// register); EW: max(., 0.0) (FP32 register); then FP16 and FP16 -> INT16.
SdpConfig quantize_config(double inv_scale, double hi_x, double zero_point, float lo) {
  SdpConfig c = config(SdpPrecision::kFp16, SdpPrecision::kInt16);
  c.bs.bypass = false;
  c.bs.alu_bypass = false;
  c.bs.alu_algo = SdpAluAlgo::kMin;
  c.bs.alu_operand = static_cast<std::int16_t>(h(hi_x));
  c.bs.mul_bypass = false;
  c.bs.mul_operand = static_cast<std::int16_t>(h(inv_scale));
  c.bn.bypass = false;
  c.bn.alu_bypass = false;
  c.bn.alu_algo = SdpAluAlgo::kSum;
  c.bn.alu_operand = static_cast<std::int16_t>(h(zero_point));
  c.ew.bypass = false;
  c.ew.alu_bypass = false;
  c.ew.alu_algo = SdpAluAlgo::kMax;
  c.ew.alu_operand = static_cast<std::int32_t>(f32(lo));
  return c;
}

std::vector<std::int16_t> run16(const SdpConfig& c, const std::vector<double>& x,
                                SdpLayerResult* result = nullptr) {
  test::VecMemory m(0x10000);
  for (std::size_t i = 0; i < x.size(); ++i) m.put16(kSrc + 2 * i, h(x[i]));
  const SdpLayerResult r = run_sdp_layer(c, m);
  if (result != nullptr) *result = r;
  std::vector<std::int16_t> out(16);
  for (unsigned i = 0; i < 16; ++i) out[i] = static_cast<std::int16_t>(m.u16(kDst + 2 * i));
  return out;
}

TEST(SdpCvtLayer, QuantizeUint8ZeroPoint128) {
  const SdpConfig c = quantize_config(0.5, 254.0, 128.0, 0.0f);
  SdpLayerResult r;
  const std::vector<std::int16_t> q =
      run16(c, {0, 2, 3, 1000, -254, -1000, 1, 5, -1, -3, 255, 253}, &r);
  EXPECT_EQ(q[0], 128);   // 0 * 0.5 + 128
  EXPECT_EQ(q[1], 129);   // 1 + 128
  EXPECT_EQ(q[2], 130);   // 1.5 + 128 = 129.5 -> 130 (ONNX: round(1.5) = 2, 130 too)
  EXPECT_EQ(q[3], 255);   // min(1000, 254) = 254 -> 127 + 128
  EXPECT_EQ(q[4], 1);     // -127 + 128
  EXPECT_EQ(q[5], 0);     // -500 + 128 = -372 -> max(-372, 0)
  EXPECT_EQ(q[6], 129);   // 0.5 + 128 = 128.5 -> 129 (ONNX rounds 0.5 to even 0: 128)
  EXPECT_EQ(q[7], 131);   // 2.5 + 128 = 130.5 -> 131 (ONNX: round(2.5) = 2 -> 130)
  EXPECT_EQ(q[8], 128);   // -0.5 + 128 = 127.5 -> 128 (ONNX: round(-0.5) = -0 -> 128)
  EXPECT_EQ(q[9], 127);   // -1.5 + 128 = 126.5 -> 127 (ONNX: -2 + 128 = 126)
  EXPECT_EQ(q[10], 255);  // min(255, 254) -> 255
  EXPECT_EQ(q[11], 255);  // 126.5 + 128 = 254.5 -> 255 (ONNX: round(126.5) = 126 -> 254)
  for (unsigned i = 12; i < 16; ++i) EXPECT_EQ(q[i], 128) << i;  // padding lanes hold 0
  EXPECT_EQ(r.stats.out_saturation.value(), 0u);
}

TEST(SdpCvtLayer, QuantizeInt8NegativeZeroPoint) {
  // scale 0.25 (1/s = 4), zero point -3, int8: hi_x = (127 - -3) * 0.25 = 32.5, lo = -128.
  const SdpConfig c = quantize_config(4.0, 32.5, -3.0, -128.0f);
  const std::vector<std::int16_t> q = run16(c, {10.375, -31.25, -40, 40, 0.125, -0.125, 0});
  EXPECT_EQ(q[0], 39);    // 41.5 - 3 = 38.5 -> 39
  EXPECT_EQ(q[1], -128);  // -125 - 3
  EXPECT_EQ(q[2], -128);  // -160 - 3 = -163 -> max(-163, -128)
  EXPECT_EQ(q[3], 127);   // min(40, 32.5) * 4 = 130 - 3
  EXPECT_EQ(q[4], -3);    // 0.5 - 3 = -2.5 -> -3 (ONNX: round(0.5) = 0 -> -3)
  EXPECT_EQ(q[5], -4);    // -0.5 - 3 = -3.5 -> -4 (ONNX: round(-0.5) = 0 -> -3)
  EXPECT_EQ(q[6], -3);
}

TEST(SdpCvtLayer, Fp16ToInt16RoundsToFp16FirstThenSaturatesUncounted) {
  SdpConfig c = config(SdpPrecision::kFp16, SdpPrecision::kInt16);
  // EW adds the FP32 register 2^-10: 2.498046875 + 0.0009765625 = 2.4990234375 (exact in FP32),
  // a tie in FP16 between 2.498046875 (odd mantissa 0x0ff) and 2.5 (even 0x100) -> 2.5 -> 3,
  // although 2.499 itself rounds to 2.
  c.ew.bypass = false;
  c.ew.alu_bypass = false;
  c.ew.alu_algo = SdpAluAlgo::kSum;
  c.ew.alu_operand = static_cast<std::int32_t>(f32(0x1p-10f));
  // D_CVT_* are unused in this mode.
  c.cvt = {1000, -7, 9};
  SdpLayerResult r;
  test::VecMemory m(0x10000);
  m.put16(kSrc + 0, h(2.498046875));
  m.put16(kSrc + 2, h(40000.0));  // 40000 -> 32767
  m.put16(kSrc + 4, 0xfbff);      // -65504 -> -32768
  m.put16(kSrc + 6, 0x7e00);      // NaN -> -32768
  m.put16(kSrc + 8, 0x7c00);      // +inf: FP32 max -> FP16 65504 -> 32767
  m.put16(kSrc + 10, h(-7.75));   // -7.7490234375 -> FP16 -7.75 -> -8
  r = run_sdp_layer(c, m);
  EXPECT_EQ(static_cast<std::int16_t>(m.u16(kDst + 0)), 3);
  EXPECT_EQ(static_cast<std::int16_t>(m.u16(kDst + 2)), 32767);
  EXPECT_EQ(static_cast<std::int16_t>(m.u16(kDst + 4)), -32768);
  EXPECT_EQ(static_cast<std::int16_t>(m.u16(kDst + 6)), -32768);
  EXPECT_EQ(static_cast<std::int16_t>(m.u16(kDst + 8)), 32767);
  EXPECT_EQ(static_cast<std::int16_t>(m.u16(kDst + 10)), -8);
  EXPECT_EQ(static_cast<std::int16_t>(m.u16(kDst + 12)), 0);  // 0 + 2^-10 -> FP16 2^-10 -> 0
  EXPECT_EQ(r.stats.out_saturation.value(), 0u);              // NVDLA's C stage flags nothing here
  EXPECT_EQ(r.stats.out_nan.value(), 0u);                     // INT16 output: no NaN output count
  EXPECT_EQ(r.stats.in_nan.value(), 1u);                      // MRDMA's FP16 input still counts
  EXPECT_EQ(r.stats.in_inf.value(), 1u);
}

// DequantizeLinear-like (ONNX's test_dequantizelinear: uint8 held in INT16, scale 2, zero point
// 128): BS adds -128 (INT16 register), the output convertor multiplies by 2, FP16 out.
TEST(SdpCvtLayer, DequantizeIntegerScaleThroughTheOutputConvertor) {
  SdpConfig c = config(SdpPrecision::kInt16, SdpPrecision::kFp16);
  c.bs.bypass = false;
  c.bs.alu_bypass = false;
  c.bs.alu_algo = SdpAluAlgo::kSum;
  c.bs.alu_operand = -128;
  c.cvt = {0, 2, 0};
  test::VecMemory m(0x10000);
  const std::int16_t q[] = {0, 3, 128, 255};
  for (unsigned i = 0; i < 4; ++i) m.put16(kSrc + 2 * i, static_cast<std::uint16_t>(q[i]));
  const SdpLayerResult r = run_sdp_layer(c, m);
  EXPECT_EQ(m.u16(kDst + 0), h(-256.0));
  EXPECT_EQ(m.u16(kDst + 2), h(-250.0));
  EXPECT_EQ(m.u16(kDst + 4), h(0.0));
  EXPECT_EQ(m.u16(kDst + 6), h(254.0));
  for (unsigned i = 4; i < 16; ++i) EXPECT_EQ(m.u16(kDst + 2 * i), h(-256.0)) << i;
  EXPECT_EQ(r.stats.out_saturation.value(), 0u);
}

std::vector<std::uint16_t> run_int16(const SdpConfig& c, const std::vector<std::int16_t>& x,
                                     SdpLayerResult& r) {
  test::VecMemory m(0x10000);
  for (std::size_t i = 0; i < x.size(); ++i)
    m.put16(kSrc + 2 * i, static_cast<std::uint16_t>(x[i]));
  r = run_sdp_layer(c, m);
  std::vector<std::uint16_t> out(16);
  for (unsigned i = 0; i < 16; ++i) out[i] = m.u16(kDst + 2 * i);
  return out;
}

TEST(SdpCvtLayer, Int16ToFp16RoundsTwice) {
  SdpConfig c = config(SdpPrecision::kInt16, SdpPrecision::kFp16);
  // A per-tensor zero point of -5 in the convertor's offset, scale 3, shift 1:
  // t = round_half_away((x + 5) * 3 / 2) into 17 bits, then FP16 (nearest even).
  c.cvt = {-5, 3, 1};
  SdpLayerResult r;
  const std::vector<std::uint16_t> y = run_int16(c, {-2, -8, 0, 1361, 21840, 32767, -32768}, r);
  EXPECT_EQ(y[0], 0x4500);  // 3 * 3 / 2 = 4.5 -> 5
  EXPECT_EQ(y[1], 0xc500);  // -3 * 3 / 2 = -4.5 -> -5
  EXPECT_EQ(y[2], 0x4800);  // 5 * 3 / 2 = 7.5 -> 8
  EXPECT_EQ(y[3], 0x6800);  // 1366 * 3 / 2 = 2049: FP16 tie between 2048 and 2050 -> 2048
  EXPECT_EQ(y[4], 0x7800);  // 21845 * 3 / 2 = 32767.5 -> 32768, exact in FP16
  EXPECT_EQ(y[5], 0x7a00);  // 32772 * 3 / 2 = 49158: FP16 spacing 32 -> 49152
  EXPECT_EQ(y[6], 0xfa00);  // -32763 * 3 / 2 = -49144.5 -> -49145 -> -49152
  for (unsigned i = 7; i < 16; ++i) EXPECT_EQ(y[i], 0x4800) << i;  // padding lanes: x = 0
  EXPECT_EQ(r.stats.out_saturation.value(), 0u);
}

TEST(SdpCvtLayer, Int16ToFp16CountsOutputsOf65504) {
  SdpConfig c = config(SdpPrecision::kInt16, SdpPrecision::kFp16);
  c.cvt = {0, 3, 0};  // t = 3x into 17 bits
  SdpLayerResult r;
  const std::vector<std::uint16_t> y = run_int16(c, {32767, -32768, 21835, 21834, 21000}, r);
  EXPECT_EQ(y[0], 0x7bff);  // 98301 saturates to 65535 in 17 bits -> 65504
  EXPECT_EQ(y[1], 0xfbff);  // -98304 saturates to -65536 -> -65504
  EXPECT_EQ(y[2], 0x7bff);  // 65505 -> 65504
  EXPECT_EQ(y[3], 0x7bff);  // 65502 -> 65504 (rounded up to it: counted too)
  EXPECT_EQ(y[4], 0x7bb1);  // 63000 -> 63008 (1969 * 32)
  EXPECT_EQ(r.stats.out_saturation.value(), 4u);
}

TEST(SdpCvtLayer, WhatStaysRefused) {
  SdpConfig c = config(SdpPrecision::kFp16, SdpPrecision::kInt8);
  EXPECT_NE(error_of(c).find("SDP precision conversion FP16 -> INT8 is not supported"),
            std::string::npos)
      << error_of(c);
  c = config(SdpPrecision::kInt8, SdpPrecision::kFp16);
  EXPECT_NE(error_of(c).find("SDP precision conversion INT8 -> FP16 is not supported"),
            std::string::npos)
      << error_of(c);
  // INT input into the FP16 pipeline.
  c = config(SdpPrecision::kFp16, SdpPrecision::kInt16);
  c.in_precision = SdpPrecision::kInt16;
  EXPECT_NE(error_of(c).find("SDP precision conversion INT16 -> FP16 is not supported (SDP_RDMA "
                             "IN_PRECISION -> PROC_PRECISION"),
            std::string::npos)
      << error_of(c);
  // A conversion in flying mode (a convolution's output keeps its precision).
  c = config(SdpPrecision::kInt16, SdpPrecision::kFp16);
  c.flying = true;
  test::VecMemory m(0x10000);
  ConvCube cube(1, 1, 16);
  std::string e;
  try {
    (void)run_sdp_layer(c, m, &cube);
  } catch (const std::runtime_error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("INT16 -> FP16 is not supported (PROC_PRECISION -> OUT_PRECISION) with flying "
                   "input"),
            std::string::npos)
      << e;
  // EQL mode.
  c = config(SdpPrecision::kInt16, SdpPrecision::kFp16);
  c.ew.bypass = false;
  c.ew.alu_bypass = false;
  c.ew.alu_algo = SdpAluAlgo::kEql;
  c.ew.alu_operand = 0;
  EXPECT_EQ(error_of(c), "SDP precision conversion INT16 -> FP16 is not allowed in EQL mode");
  // The FP16 pipeline's own limits hold for FP16 -> INT16.
  c = config(SdpPrecision::kFp16, SdpPrecision::kInt16);
  c.ew.bypass = false;
  c.ew.lut_bypass = false;
  EXPECT_EQ(error_of(c), "SDP EW LUT (EW_LUT_BYPASS=NO) in the FP16 pipeline is not supported");
}

}  // namespace
}  // namespace octasim::models::ops::sdp_cvt_test
