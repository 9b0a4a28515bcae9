// CDP local response normalization on hand-computed elements, pixels, layers and registers.
#include "models/ops/cdp.hpp"

#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/dla/cdp_functional.hpp"
#include "tests/models/vec_memory.hpp"

namespace octasim::models::ops {
namespace {

using test::VecMemory;

TEST(CdpInCvt, Int8UsesLowByteOfOffsetAndSaturatesTo9Bits) {
  CdpConfig c;
  c.datin_offset = -100;
  c.datin_scale = -2;
  c.datin_shifter = 3;
  // (27 + 100) * -2 / 8 = -31.75 -> -32
  EXPECT_EQ(cdp_in_cvt(c, 27), -32);
  // 0x180: the INT8 pipe keeps 0x80 = -128, so 0 converts to 128.
  c.datin_offset = 0x180;
  c.datin_scale = 1;
  c.datin_shifter = 0;
  EXPECT_EQ(cdp_in_cvt(c, 0), 128);
  // (127 + 128) * 2 = 510 saturates to 255.
  c.datin_scale = 2;
  EXPECT_EQ(cdp_in_cvt(c, 127), 255);
  EXPECT_EQ(cdp_in_cvt(c, -128), 0);
}

TEST(CdpInCvt, Int16SaturatesTo17Bits) {
  CdpConfig c;
  c.precision = CdpPrecision::kInt16;
  c.datin_offset = -32768;
  c.datin_scale = 4;
  EXPECT_EQ(cdp_in_cvt(c, 32767), 65535);  // (65535 * 4) saturates to 2^16 - 1
  c.datin_scale = 1;
  c.datin_shifter = 1;
  EXPECT_EQ(cdp_in_cvt(c, -32767), 1);  // 1 / 2 = 0.5 -> 1
}

TEST(CdpSquareSum, WindowClipsAtTheChannelEnds) {
  CdpConfig c;
  const std::int32_t cvt[4] = {1, 2, 3, 4};
  EXPECT_EQ(cdp_lut_input(c, cvt, 4, 0), 1 + 4);
  EXPECT_EQ(cdp_lut_input(c, cvt, 4, 1), 1 + 4 + 9);
  EXPECT_EQ(cdp_lut_input(c, cvt, 4, 3), 9 + 16);
  c.local_size = 5;
  EXPECT_EQ(cdp_lut_input(c, cvt, 4, 0), 1 + 4 + 9);
  EXPECT_EQ(cdp_lut_input(c, cvt, 4, 2), 1 + 4 + 9 + 16);
  c.local_size = 9;
  EXPECT_EQ(cdp_lut_input(c, cvt, 4, 3), 30);
  c.sqsum_bypass = true;
  EXPECT_EQ(cdp_lut_input(c, cvt, 4, 2), 3);
}

TEST(CdpOutCvt, Int8OffsetIs25BitsAndFlagFollowsTheHlsRule) {
  CdpConfig c;
  c.datout_offset = 0x02000005;  // the INT8 pipe keeps the low 25 bits: 5
  c.datout_scale = 3;
  c.datout_shifter = 2;
  EXPECT_EQ(cdp_out_cvt(c, 25), (Saturated{15, false}));  // (25 - 5) * 3 / 4
  c.datout_offset = 0;
  c.datout_scale = 1;
  c.datout_shifter = 0;
  EXPECT_EQ(cdp_out_cvt(c, 1000), (Saturated{127, true}));
  EXPECT_EQ(cdp_out_cvt(c, 128), (Saturated{127, false}));  // one step over: not counted
  EXPECT_EQ(cdp_out_cvt(c, -130), (Saturated{-128, true}));
}

TEST(CdpOutCvt, Int16UsesTheFullOffset) {
  CdpConfig c;
  c.precision = CdpPrecision::kInt16;
  c.datout_offset = 0x02000005;  // all 32 bits count in the INT16 pipe
  EXPECT_EQ(cdp_out_cvt(c, 0x02000005 + 7), (Saturated{7, false}));
  c.datout_offset = 0;
  EXPECT_EQ(cdp_out_cvt(c, 40000), (Saturated{32767, true}));
}

// LO: identity over 0..256 (start 0, step 1, LO[k] = k); LE: linear, starting far above, so it
// underflows for every input here. Both underflow (input <= 0) selects LE (LE[0] = 0).
CdpConfig identity_lut_config() {
  CdpConfig c;
  c.lut.le_function = LutLeFunction::kLinear;
  c.lut.le_start = 1000;
  c.lut.le_end = 1064;
  c.lut.lo_start = 0;
  c.lut.lo_end = 256;
  c.datout_shifter = 2;
  return c;
}
LutTables identity_lo() {
  LutTables t;
  for (unsigned i = 0; i < kLutLoEntries; ++i) t.lo[i] = static_cast<std::int16_t>(i);
  return t;
}

TEST(CdpPixel, Lrn3OnThreeChannels) {
  const CdpConfig c = identity_lut_config();
  const LutTables t = identity_lo();
  const std::int32_t raw[8] = {1, 2, 3, 77, 77, 77, 77, 77};  // lanes 3..7 beyond the cube
  std::int32_t out[8], scratch[8];
  CdpStats st;
  cdp_pixel(c, t, raw, 3, 8, out, scratch, st);
  // square sums 5, 14, 13, 9, 0...; times the input: 5, 28, 39, 0; / 4: 1.25, 7, 9.75, 0
  const std::int32_t want[8] = {1, 7, 10, 0, 0, 0, 0, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], want[i]) << "lane " << i;
  // Lanes 0..3 hit LO only; lanes 4..7 (square sum 0 = LO start) underflow in both tables.
  EXPECT_EQ(st.lut.lo_hit.value(), 4u);
  EXPECT_EQ(st.lut.uflow.value(), 4u);
  EXPECT_EQ(st.lut.le_hit.value(), 0u);
  EXPECT_EQ(st.out_saturation.value(), 0u);
}

TEST(CdpPixel, MultiplierBypassOutputsTheLutValue) {
  CdpConfig c = identity_lut_config();
  c.mul_bypass = true;
  c.datout_shifter = 0;
  const LutTables t = identity_lo();
  const std::int32_t raw[8] = {1, 2, 3, 0, 0, 0, 0, 0};
  std::int32_t out[8], scratch[8];
  CdpStats st;
  cdp_pixel(c, t, raw, 3, 8, out, scratch, st);
  EXPECT_EQ(out[0], 5);
  EXPECT_EQ(out[1], 14);
  EXPECT_EQ(out[3], 9);
}

TEST(CdpLayerParams, WalksSurfacesAndWritesWholeAtoms) {
  // 2x1 pixels, 3 channels, 8-byte atoms: one surface.
  VecMemory m(0x1000);
  const std::int8_t px0[3] = {1, 2, 3}, px1[3] = {-4, 0, 4};
  for (int k = 0; k < 3; ++k) {
    m.set(0x100 + k, px0[k]);
    m.set(0x108 + k, px1[k]);
  }
  CdpLayerParams l;
  l.cfg = identity_lut_config();
  l.width = 2;
  l.channels = 3;
  l.src = 0x100;
  l.src_line_stride = 16;
  l.src_surface_stride = 16;
  l.dst = 0x200;
  l.dst_line_stride = 16;
  l.dst_surface_stride = 16;
  const CdpLayerResult r = run_cdp_layer(l, identity_lo(), m);
  EXPECT_EQ(m.at(0x200), 1);
  EXPECT_EQ(m.at(0x201), 7);
  EXPECT_EQ(m.at(0x202), 10);
  // pixel 1: square sums 16, 32, 16; products -64, 0, 64; / 4
  EXPECT_EQ(m.at(0x208), -16);
  EXPECT_EQ(m.at(0x209), 0);
  EXPECT_EQ(m.at(0x20a), 16);
  EXPECT_EQ(r.bytes_read, 16u);
  EXPECT_EQ(r.bytes_written, 16u);
}

namespace C = regs::CDP;
namespace CR = regs::CDP_RDMA;

std::map<std::uint32_t, std::uint32_t> cdp_registers() {
  std::map<std::uint32_t, std::uint32_t> r;
  r[CR::D_DATA_CUBE_WIDTH::kAddr] = 1;
  r[CR::D_DATA_CUBE_HEIGHT::kAddr] = 0;
  r[CR::D_DATA_CUBE_CHANNEL::kAddr] = 2;
  r[CR::D_SRC_BASE_ADDR_LOW::kAddr] = 0x100;
  r[CR::D_SRC_LINE_STRIDE::kAddr] = 16;
  r[CR::D_SRC_SURFACE_STRIDE::kAddr] = 16;
  r[CR::D_SRC_DMA_CFG::kAddr] = CR::D_SRC_DMA_CFG::SRC_RAM_TYPE_MC;
  r[C::D_DST_BASE_ADDR_LOW::kAddr] = 0x200;
  r[C::D_DST_LINE_STRIDE::kAddr] = 16;
  r[C::D_DST_SURFACE_STRIDE::kAddr] = 16;
  r[C::D_DST_DMA_CFG::kAddr] = C::D_DST_DMA_CFG::DST_RAM_TYPE_MC;
  r[C::D_LRN_CFG::kAddr] = C::D_LRN_CFG::NORMALZ_LEN_LEN3;
  r[C::D_DATIN_SCALE::kAddr] = 1;
  r[C::D_DATOUT_SCALE::kAddr] = 1;
  r[C::D_DATOUT_SHIFTER::kAddr] = 2;
  r[C::S_LUT_CFG::kAddr] = C::S_LUT_CFG::LUT_LE_FUNCTION_LINEAR;
  r[C::S_LUT_LE_START_LOW::kAddr] = 1000;
  r[C::S_LUT_LE_END_LOW::kAddr] = 1064;
  r[C::S_LUT_LO_END_LOW::kAddr] = 256;
  r[C::D_PERF_ENABLE::kAddr] = 0x2;  // LUT_EN
  return r;
}

TEST(CdpRegisters, DecodeRunAndStatistics) {
  VecMemory m(0x1000);
  const std::int8_t px0[3] = {1, 2, 3};
  for (int k = 0; k < 3; ++k) m.set(0x100 + k, px0[k]);
  auto regs_map = cdp_registers();
  dla::LutTables lut;
  for (unsigned i = 0; i < lut.lo.size(); ++i) lut.lo[i] = static_cast<std::uint16_t>(i);
  const dla::RegRead read = [&regs_map](std::uint32_t a) {
    const auto it = regs_map.find(a);
    return it == regs_map.end() ? 0u : it->second;
  };
  const dla::OpResult r = dla::run_cdp(HwConfig{}, read, lut, m);
  EXPECT_EQ(m.at(0x200), 1);
  EXPECT_EQ(m.at(0x201), 7);
  EXPECT_EQ(m.at(0x202), 10);
  EXPECT_EQ(r.lrn_size, 3u);
  EXPECT_EQ(r.in.channels, 3u);
  std::map<std::uint32_t, std::uint32_t> status(r.status.begin(), r.status.end());
  // Pixel 0: lanes 0..3 hit LO, 4..7 underflow; pixel 1 (all zero): 8 underflows.
  EXPECT_EQ(status.at(C::D_PERF_LUT_LO_HIT::kAddr), 4u);
  EXPECT_EQ(status.at(C::D_PERF_LUT_UFLOW::kAddr), 12u);
  EXPECT_EQ(status.at(C::D_OUT_SATURATION::kAddr), 0u);

  // The decode the functional op ran with is the operation's descriptor (the timing plan's).
  const auto* d = dynamic_cast<const dla::CdpDescriptor*>(r.descriptor.get());
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->input_bytes_per_element(), 1u);
  EXPECT_EQ(d->layer.width, 2u);
  EXPECT_EQ(d->layer.channels, 3u);
  EXPECT_EQ(d->layer.cfg.local_size, 3u);
  EXPECT_EQ(d->layer.cfg.datout_shifter, 2u);
  EXPECT_EQ(d->layer.src, 0x100u);
  EXPECT_EQ(d->layer.dst, 0x200u);

  regs_map[C::D_PERF_ENABLE::kAddr] = 0;  // LUT statistics off
  const dla::OpResult off = dla::run_cdp(HwConfig{}, read, lut, m);
  std::map<std::uint32_t, std::uint32_t> status_off(off.status.begin(), off.status.end());
  EXPECT_EQ(status_off.at(C::D_PERF_LUT_LO_HIT::kAddr), 0u);
}

TEST(CdpRegisters, RejectsWhatItCannotRun) {
  VecMemory m(0x1000);
  dla::LutTables lut;
  auto regs_map = cdp_registers();
  const dla::RegRead read = [&regs_map](std::uint32_t a) {
    const auto it = regs_map.find(a);
    return it == regs_map.end() ? 0u : it->second;
  };
  const auto error = [&]() -> std::string {
    try {
      (void)dla::run_cdp(HwConfig{}, read, lut, m);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  };
  regs_map[C::D_DATA_FORMAT::kAddr] = C::D_DATA_FORMAT::INPUT_DATA_TYPE_INT16;
  regs_map[CR::D_DATA_FORMAT::kAddr] = CR::D_DATA_FORMAT::INPUT_DATA_INT16;
  EXPECT_EQ(error(), "CDP INT16 is not present in this configuration (nv_small)");
  regs_map[CR::D_DATA_FORMAT::kAddr] = CR::D_DATA_FORMAT::INPUT_DATA_INT8;
  EXPECT_NE(error().find("differs between CDP"), std::string::npos);
  HwConfig no_cdp;
  no_cdp.dla.cdp = false;
  regs_map = cdp_registers();
  EXPECT_THROW((void)dla::run_cdp(no_cdp, read, lut, m), std::runtime_error);
}

}  // namespace
}  // namespace octasim::models::ops
