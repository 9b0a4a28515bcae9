// PDP pooling on hand-computed windows, layers and register programming.
#include "models/ops/pdp.hpp"

#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/dla/pdp_functional.hpp"
#include "tests/models/vec_memory.hpp"

namespace octasim::models::ops {
namespace {

// A flat memory from address 0.
using test::VecMemory;

TEST(PdpWindow, SpanCountsPaddedPositions) {
  // Kernel 3, stride 2, pad 1 before, 6 inputs: window 0 covers -1..1.
  PdpSpan s = pdp_window_span(0, 3, 2, 1, 6);
  EXPECT_EQ(s.first, 0);
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.pad_before, 1u);
  EXPECT_EQ(s.pad_after, 0u);
  // Window 3 covers 5..7: one real input, two past the end.
  s = pdp_window_span(3, 3, 2, 1, 6);
  EXPECT_EQ(s.first, 5);
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.pad_before, 0u);
  EXPECT_EQ(s.pad_after, 2u);
  // A 1-wide input under a 3-wide kernel with one pad each side.
  s = pdp_window_span(0, 3, 1, 1, 1);
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.pad_before + s.pad_after, 2u);
}

TEST(PdpPadValue, SignBitPerMultiple) {
  EXPECT_EQ(pdp_pad_value(0x55, 1, PdpPrecision::kInt8), 85);
  EXPECT_EQ(pdp_pad_value(0xff, 1, PdpPrecision::kInt8), -1);   // bit 7 is the sign of 1X
  EXPECT_EQ(pdp_pad_value(0xff, 3, PdpPrecision::kInt8), 255);  // bit 9 is the sign of 3X
  EXPECT_EQ(pdp_pad_value(0x7fffb, 1, PdpPrecision::kInt8), -5);
  EXPECT_EQ(pdp_pad_value(0x600, 7, PdpPrecision::kInt8), -512);  // bit 10 set: 0x600 - 0x800
  EXPECT_EQ(pdp_pad_value(0x8000, 1, PdpPrecision::kInt16), -32768);
  EXPECT_EQ(pdp_pad_value(0x8000, 2, PdpPrecision::kInt16), 32768);  // INT16 2X: bit 16 sign
}

TEST(PdpAverage, TwoRoundingsHalfAwayFromZero) {
  PdpConfig c;
  c.method = PdpMethod::kAverage;
  c.recip_kernel_width = 0x8000;   // 1/2
  c.recip_kernel_height = 0x8000;  // 1/2
  // 5 * 1/2 = 2.5 -> 3, 3 * 1/2 = 1.5 -> 2 (one rounding of 5/4 would give 1).
  EXPECT_EQ(pdp_average(c, 5), 2);
  EXPECT_EQ(pdp_average(c, -5), -2);
  // 1/3 as NVDLA programs it (0x5555): 10 -> 3.33 -> 3 -> 0.99998 -> 1.
  c.recip_kernel_width = 0x5555;
  c.recip_kernel_height = 0x5555;
  EXPECT_EQ(pdp_average(c, 10), 1);
  // The INT8 window sum is held in 16 bits: 65536 + 8 behaves as 8.
  c.recip_kernel_width = 0x10000;
  c.recip_kernel_height = 0x10000;
  EXPECT_EQ(pdp_average(c, 65536 + 8), 8);
  // The output keeps its low 8 bits.
  EXPECT_EQ(pdp_average(c, 200), 200 - 256);
}

TEST(PdpPoolWindow, AveragePaddingEntersAsMultiples) {
  PdpConfig c;
  c.method = PdpMethod::kAverage;
  c.kernel_width = 3;
  c.kernel_height = 3;
  c.recip_kernel_width = 0x5555;
  c.recip_kernel_height = 0x5555;
  for (int n = 1; n <= 7; ++n) c.pad_value[n - 1] = 5 * n;  // pad = 5
  // Corner window over a 2x2 block {1 2; 3 4}: 1 padded column per real row (2 rows) and one
  // padded row: 10 + 2*5 + 3*5 = 35; 35/3 = 11.67 -> 12, 12/3 = 3.99 -> 4.
  const std::int32_t block[4] = {1, 2, 3, 4};
  EXPECT_EQ(pdp_pool_window(c, block, 1, 2, 2, 2, 1, 1), 4);
  // A single element with two padded columns and two padded rows: 9 + 10 + 3*10 = 49;
  // 49/3 = 16.33 -> 16, 16/3 = 5.33 -> 5.
  const std::int32_t one[1] = {9};
  EXPECT_EQ(pdp_pool_window(c, one, 1, 1, 1, 1, 2, 2), 5);
}

TEST(PdpPoolWindow, MaxAndMinIgnorePadding) {
  PdpConfig c;
  c.pad_value.fill(100);
  const std::int32_t v[2] = {-5, -3};
  c.method = PdpMethod::kMax;
  EXPECT_EQ(pdp_pool_window(c, v, 1, 2, 2, 1, 1, 1), -3);
  c.method = PdpMethod::kMin;
  EXPECT_EQ(pdp_pool_window(c, v, 1, 2, 2, 1, 1, 1), -5);
}

// A 4x4 INT8 cube with one channel in 8-byte atoms: channel 0 = 1..16 row by row, the other
// lanes hold 100 + lane.
constexpr std::uint64_t kSrc = 0x100, kDst = 0x400;
void fill_4x4(VecMemory& m) {
  for (unsigned h = 0; h < 4; ++h) {
    for (unsigned w = 0; w < 4; ++w) {
      const std::uint64_t atom = kSrc + h * 32 + w * 8;
      m.set(atom, static_cast<std::int8_t>(h * 4 + w + 1));
      for (unsigned k = 1; k < 8; ++k) m.set(atom + k, static_cast<std::int8_t>(100 + k));
    }
  }
}

PdpLayerParams layer_4x4() {
  PdpLayerParams l;
  l.in_width = l.in_height = 4;
  l.channels = 1;
  l.out_width = l.out_height = 2;
  l.cfg.kernel_width = l.cfg.kernel_height = 2;
  l.cfg.stride_width = l.cfg.stride_height = 2;
  l.src = kSrc;
  l.src_line_stride = 32;
  l.src_surface_stride = 128;
  l.dst = kDst;
  l.dst_line_stride = 16;
  l.dst_surface_stride = 32;
  return l;
}

TEST(PdpLayerParams, MaxPooling2x2Stride2) {
  VecMemory m(0x1000);
  fill_4x4(m);
  PdpLayerParams l = layer_4x4();
  l.cfg.method = PdpMethod::kMax;
  const PdpLayerResult r = run_pdp_layer(l, m);
  EXPECT_EQ(m.at(kDst + 0), 6);
  EXPECT_EQ(m.at(kDst + 8), 8);
  EXPECT_EQ(m.at(kDst + 16), 14);
  EXPECT_EQ(m.at(kDst + 24), 16);
  EXPECT_EQ(m.at(kDst + 8 + 3), 103);  // lanes beyond the channel count are pooled too
  EXPECT_EQ(r.bytes_read, 4u * 32u);
  EXPECT_EQ(r.bytes_written, 4u * 8u);
}

TEST(PdpLayerParams, AveragePooling2x2Stride2) {
  VecMemory m(0x1000);
  fill_4x4(m);
  PdpLayerParams l = layer_4x4();
  l.cfg.method = PdpMethod::kAverage;
  l.cfg.recip_kernel_width = l.cfg.recip_kernel_height = 0x8000;
  (void)run_pdp_layer(l, m);
  // 14 -> 7 -> 3.5 -> 4; 22 -> 11 -> 5.5 -> 6; 46 -> 23 -> 11.5 -> 12; 54 -> 27 -> 13.5 -> 14
  EXPECT_EQ(m.at(kDst + 0), 4);
  EXPECT_EQ(m.at(kDst + 8), 6);
  EXPECT_EQ(m.at(kDst + 16), 12);
  EXPECT_EQ(m.at(kDst + 24), 14);
}

TEST(PdpLayerParams, SplitWidthPoolsEachSplitWithItsOwnPadding) {
  // One line {3 1 4 1 5 9}, kernel 3x1, stride 2, pad left 1: windows -1..1, 1..3, 3..5.
  VecMemory m(0x1000);
  const std::int8_t line[6] = {3, 1, 4, 1, 5, 9};
  for (unsigned w = 0; w < 6; ++w) m.set(kSrc + w * 8, line[w]);
  PdpLayerParams l;
  l.cfg.method = PdpMethod::kMax;
  l.cfg.kernel_width = 3;
  l.cfg.stride_width = 2;
  l.cfg.pad_left = 1;
  l.in_width = 6;
  l.out_width = 3;
  l.src = kSrc;
  l.src_line_stride = 48;
  l.src_surface_stride = 48;
  l.dst = kDst;
  l.dst_line_stride = 24;
  l.dst_surface_stride = 24;
  l.split_num = 1;  // two splits: columns 0..1 -> 1 output, columns 2..5 -> 2 outputs
  l.partial_in_first = 2;
  l.partial_in_last = 4;
  l.partial_out_first = 1;
  l.partial_out_last = 2;
  const std::vector<PdpSplit> splits = pdp_splits(l);
  ASSERT_EQ(splits.size(), 2u);
  EXPECT_EQ(splits[1].in_col, 1);  // kernel_width - stride = 1 column of overlap
  EXPECT_EQ(splits[1].in_width, 5u);
  EXPECT_EQ(splits[1].pad_left, 0u);
  EXPECT_EQ(splits[1].out_col, 1u);
  (void)run_pdp_layer(l, m);
  EXPECT_EQ(m.at(kDst + 0), 3);
  EXPECT_EQ(m.at(kDst + 8), 4);
  EXPECT_EQ(m.at(kDst + 16), 9);
}

TEST(PdpLayerParams, Int16ElementsAreTwoBytesFourPerAtom) {
  VecMemory m(0x1000);
  // Two pixels, lane 0: 1000 and -300 (little-endian INT16).
  m.set(kSrc + 0, static_cast<std::int8_t>(0xe8));
  m.set(kSrc + 1, 0x03);
  m.set(kSrc + 8, static_cast<std::int8_t>(0xd4));
  m.set(kSrc + 9, static_cast<std::int8_t>(0xfe));
  PdpLayerParams l;
  l.cfg.precision = PdpPrecision::kInt16;
  l.cfg.method = PdpMethod::kMin;
  l.cfg.kernel_width = 2;
  l.in_width = 2;
  l.src = kSrc;
  l.src_line_stride = l.src_surface_stride = 16;
  l.dst = kDst;
  l.dst_line_stride = l.dst_surface_stride = 8;
  (void)run_pdp_layer(l, m);
  EXPECT_EQ(static_cast<std::uint8_t>(m.at(kDst)), 0xd4u);  // -300
  EXPECT_EQ(static_cast<std::uint8_t>(m.at(kDst + 1)), 0xfeu);
}

TEST(PdpLayerParams, WindowPastThePaddingIsAnError) {
  VecMemory m(0x1000);
  PdpLayerParams l = layer_4x4();
  l.out_width = 3;  // window 2 would cover columns 4..5 with no right padding
  try {
    (void)run_pdp_layer(l, m);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("output column 2"), std::string::npos) << e.what();
  }
}

// Register programming of the 4x4 max-pool layer through dla::run_pdp.
namespace P = regs::PDP;
namespace PR = regs::PDP_RDMA;

std::map<std::uint32_t, std::uint32_t> pdp_registers() {
  std::map<std::uint32_t, std::uint32_t> r;
  r[PR::D_DATA_CUBE_IN_WIDTH::kAddr] = 3;
  r[PR::D_DATA_CUBE_IN_HEIGHT::kAddr] = 3;
  r[PR::D_DATA_CUBE_IN_CHANNEL::kAddr] = 0;
  r[PR::D_FLYING_MODE::kAddr] = PR::D_FLYING_MODE::FLYING_MODE_OFF_FLYING;
  r[PR::D_SRC_BASE_ADDR_LOW::kAddr] = kSrc;
  r[PR::D_SRC_LINE_STRIDE::kAddr] = 32;
  r[PR::D_SRC_SURFACE_STRIDE::kAddr] = 128;
  r[PR::D_SRC_RAM_CFG::kAddr] = PR::D_SRC_RAM_CFG::SRC_RAM_TYPE_MC;
  r[P::D_DATA_CUBE_IN_WIDTH::kAddr] = 3;
  r[P::D_DATA_CUBE_IN_HEIGHT::kAddr] = 3;
  r[P::D_DATA_CUBE_IN_CHANNEL::kAddr] = 0;
  r[P::D_DATA_CUBE_OUT_WIDTH::kAddr] = 1;
  r[P::D_DATA_CUBE_OUT_HEIGHT::kAddr] = 1;
  r[P::D_DATA_CUBE_OUT_CHANNEL::kAddr] = 0;
  r[P::D_OPERATION_MODE_CFG::kAddr] = 0x11;      // MAX, OFF_FLYING, no split
  r[P::D_POOLING_KERNEL_CFG::kAddr] = 0x110101;  // 2x2, stride 2x2
  r[P::D_DST_BASE_ADDR_LOW::kAddr] = kDst;
  r[P::D_DST_LINE_STRIDE::kAddr] = 16;
  r[P::D_DST_SURFACE_STRIDE::kAddr] = 32;
  r[P::D_DST_RAM_CFG::kAddr] = P::D_DST_RAM_CFG::DST_RAM_TYPE_MC;
  return r;
}

dla::OpResult run(const std::map<std::uint32_t, std::uint32_t>& r, VecMemory& m) {
  const dla::RegRead read = [&r](std::uint32_t a) {
    const auto it = r.find(a);
    return it == r.end() ? 0u : it->second;
  };
  return dla::run_pdp(HwConfig{}, read, m);
}

std::string error_of(const std::map<std::uint32_t, std::uint32_t>& r) {
  VecMemory m(0x1000);
  try {
    (void)run(r, m);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(PdpRegisters, DecodeAndRun) {
  VecMemory m(0x1000);
  fill_4x4(m);
  const dla::OpResult r = run(pdp_registers(), m);
  EXPECT_EQ(m.at(kDst + 0), 6);
  EXPECT_EQ(m.at(kDst + 24), 16);
  EXPECT_EQ(r.in.width, 4u);
  EXPECT_EQ(r.out.height, 2u);
  EXPECT_EQ(r.kernel_width, 2u);
  EXPECT_EQ(r.stride_height, 2u);
  EXPECT_EQ(r.bytes_written, 32u);
  bool nan_reported = false;
  for (const auto& s : r.status) nan_reported |= s.first == P::D_NAN_INPUT_NUM::kAddr;
  EXPECT_TRUE(nan_reported);
}

// The decode the functional op ran with is the operation's descriptor (the timing plan reads it).
TEST(PdpRegisters, DescriptorHoldsTheDecodedLayer) {
  VecMemory m(0x1000);
  fill_4x4(m);
  const dla::OpResult r = run(pdp_registers(), m);
  const auto* d = dynamic_cast<const dla::PdpDescriptor*>(r.descriptor.get());
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->flying);
  EXPECT_EQ(d->splits(), 1u);
  EXPECT_EQ(d->input_bytes_per_element(), 1u);
  EXPECT_EQ(d->layer.in_width, 4u);
  EXPECT_EQ(d->layer.out_width, 2u);
  EXPECT_EQ(d->layer.cfg.method, PdpMethod::kMax);
  EXPECT_EQ(d->layer.cfg.kernel_height, 2u);
  EXPECT_EQ(d->layer.src, kSrc);
  EXPECT_EQ(d->layer.dst, kDst);
}

// The 4x4 max pool in two width splits of 2 input / 1 output columns: the same output, and the
// descriptor carries SPLIT_NUM.
TEST(PdpRegisters, SplitWidthIsInTheDescriptor) {
  VecMemory m(0x1000);
  fill_4x4(m);
  auto regs_map = pdp_registers();
  regs_map[P::D_OPERATION_MODE_CFG::kAddr] = 0x11 | 1u << 8;  // MAX, OFF_FLYING, SPLIT_NUM 1
  regs_map[PR::D_OPERATION_MODE_CFG::kAddr] = 1;              // SPLIT_NUM 1
  regs_map[P::D_PARTIAL_WIDTH_IN::kAddr] = 1 | 1u << 10;      // first 2, last 2
  regs_map[PR::D_PARTIAL_WIDTH_IN::kAddr] = 1 | 1u << 10;
  regs_map[P::D_PARTIAL_WIDTH_OUT::kAddr] = 0;       // first 1, last 1
  regs_map[PR::D_POOLING_KERNEL_CFG::kAddr] = 0x11;  // kernel width 2, stride 2
  const dla::OpResult r = run(regs_map, m);
  EXPECT_EQ(m.at(kDst + 0), 6);
  EXPECT_EQ(m.at(kDst + 8), 8);
  EXPECT_EQ(m.at(kDst + 24), 16);
  const auto* d = dynamic_cast<const dla::PdpDescriptor*>(r.descriptor.get());
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->splits(), 2u);
  EXPECT_EQ(d->layer.partial_in_first, 2u);
  EXPECT_EQ(d->layer.partial_out_last, 1u);
  EXPECT_EQ(r.dma.input.size(), 2u);  // one region per split
}

// A flying PDP pools SDP's cube (here: the bytes run_pdp reads, packed as SDP hands them over)
// to the same output; its descriptor says it is on the fly and it reads nothing from memory.
TEST(PdpRegisters, OnTheFlyPoolsTheFlyingCube) {
  VecMemory m(0x1000);
  fill_4x4(m);
  dla::FlyingCube cube;
  cube.width = cube.height = 4;
  cube.channels = 1;
  cube.element_bytes = 1;
  cube.atom_bytes = 8;
  cube.data.resize(4 * 4 * 8);
  m.read(kSrc, cube.data.data(), cube.data.size());
  auto regs_map = pdp_registers();
  regs_map[P::D_OPERATION_MODE_CFG::kAddr] = 0x01;  // MAX, ON_FLYING
  const dla::RegRead read = [&regs_map](std::uint32_t a) {
    const auto it = regs_map.find(a);
    return it == regs_map.end() ? 0u : it->second;
  };
  const dla::OpResult r = dla::run_pdp_on_the_fly(HwConfig{}, read, cube, m);
  EXPECT_EQ(m.at(kDst + 0), 6);
  EXPECT_EQ(m.at(kDst + 24), 16);
  EXPECT_EQ(r.bytes_read, 0u);
  EXPECT_EQ(r.bytes_on_the_fly, 128u);
  const auto* d = dynamic_cast<const dla::PdpDescriptor*>(r.descriptor.get());
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->flying);
  EXPECT_EQ(d->splits(), 1u);
}

TEST(PdpRegisters, RejectsWhatItCannotRun) {
  auto r = pdp_registers();
  r[P::D_OPERATION_MODE_CFG::kAddr] = 0x01;  // ON_FLYING
  EXPECT_NE(error_of(r).find("ON_FLYING"), std::string::npos);

  r = pdp_registers();
  r[P::D_DATA_FORMAT::kAddr] = P::D_DATA_FORMAT::INPUT_DATA_FP16;
  r[PR::D_DATA_FORMAT::kAddr] = PR::D_DATA_FORMAT::INPUT_DATA_FP16;
  EXPECT_EQ(error_of(r), "PDP FP16 is not present in this configuration (nv_small)");

  r = pdp_registers();
  r[PR::D_DATA_CUBE_IN_WIDTH::kAddr] = 4;
  EXPECT_NE(error_of(r).find("input cube width differs"), std::string::npos);

  r = pdp_registers();
  r[P::D_OPERATION_MODE_CFG::kAddr] = 0x13;  // method 3
  EXPECT_NE(error_of(r).find("POOLING_METHOD 3"), std::string::npos);
}

}  // namespace
}  // namespace octasim::models::ops
