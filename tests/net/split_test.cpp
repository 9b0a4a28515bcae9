// Split H (firmware/net/split.hpp) without a device: the bands of convolutions whose input
// exceeds the CBUF — their count, rows, padding, overlap, addresses and CBUF plan — against values
// derived by hand below from the configurations' CBUF (nv_small: 32 banks of 512 entries of 8
// bytes, 8-byte atoms, atomic K 8; nv_full: 16 banks of 512 entries of 64 bytes, 32-byte atoms,
// atomic K 32), the CDMA/CSC registers of the weight reuse, the layer that cannot be split, and
// the compiler's program (one ONNX node, its MACs).
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/conv.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/split.hpp"
#include "net_test_graph.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "tests/firmware/recording_mmio.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using firmware::ConvHardware;
using firmware::ConvLayer;
using firmware::FeatureSurface;
using firmware::Precision;

ConvHardware hardware(const char* config) {
  return firmware::conv_hardware(load_hw_config(config));
}

// An INT8 convolution of a packed W x H x C input at 0x1000_0000 into a packed output at
// 0x2000_0000 (SDP: identity).
ConvLayer conv(const ConvHardware& hw, std::uint32_t w, std::uint32_t h, std::uint32_t c,
               std::uint32_t k, std::uint32_t r, std::uint32_t stride, std::uint32_t pad) {
  ConvLayer l;
  l.precision = Precision::kInt8;
  l.src = firmware::packed_surface(0x10000000, w, h, c, hw.atom_bytes);
  l.kernels = k;
  l.kernel_width = l.kernel_height = r;
  l.stride_x = l.stride_y = stride;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = pad;
  l.weight_address = 0x30000000;
  const firmware::ConvCubeSize out = firmware::conv_output_cube(l);
  l.dst = firmware::packed_surface(0x20000000, out.width, out.height, k, hw.atom_bytes);
  return l;
}

struct Expected {
  std::uint32_t out_row, out_rows, in_row, in_rows, pad_top, pad_bottom;
};

void expect_bands(const std::vector<fn::ConvBand>& bands, const ConvLayer& l,
                  const std::vector<Expected>& want) {
  ASSERT_EQ(bands.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    const fn::ConvBand& b = bands[k];
    const Expected& e = want[k];
    SCOPED_TRACE("band " + std::to_string(k));
    EXPECT_EQ(b.out_row, e.out_row);
    EXPECT_EQ(b.out_rows, e.out_rows);
    EXPECT_EQ(b.in_row, e.in_row);
    EXPECT_EQ(b.in_rows, e.in_rows);
    EXPECT_EQ(b.layer.pad_top, e.pad_top);
    EXPECT_EQ(b.layer.pad_bottom, e.pad_bottom);
    EXPECT_EQ(b.layer.src.address, l.src.address + std::uint64_t{e.in_row} * l.src.line_stride);
    EXPECT_EQ(b.layer.src.height, e.in_rows);
    EXPECT_EQ(b.layer.dst.address, l.dst.address + std::uint64_t{e.out_row} * l.dst.line_stride);
    EXPECT_EQ(b.layer.dst.height, e.out_rows);
    // The rest of the layer is the unsplit one's.
    EXPECT_EQ(b.layer.src.line_stride, l.src.line_stride);
    EXPECT_EQ(b.layer.src.surface_stride, l.src.surface_stride);
    EXPECT_EQ(b.layer.dst.surface_stride, l.dst.surface_stride);
    EXPECT_EQ(b.layer.pad_left, l.pad_left);
    EXPECT_EQ(b.layer.kernels, l.kernels);
    EXPECT_EQ(b.layer.weight_address, l.weight_address);
  }
}

// 96 wide, 95 high, 16 channels, 3x3 stride 2 pad 1 -> 16: 48 output rows (the last uses the
// bottom padding: 47 * 2 + 3 = 97 = 1 + 95 + 1).
// nv_small: 2 C' surfaces of 96 atoms, one atom per entry: 192 entries per line; the input
// needs ceil(95 * 192 / 512) = 36 banks > 32. Weights 3*3*16 = 144 bytes per kernel, 2304 in
// all: 1 bank of 4096 bytes, as one kernel group (144 * 8 + 128). Both plans leave 31 banks:
// 31 * 512 / 192 = 82 lines, (82 - 3) / 2 + 1 = 40 output rows per band, ceil(48 / 40) = 2
// bands of 24 rows; all weights fetch them once, so all weights (and reuse) it is.
// Band 0: outputs 0..23 read padded rows -1..47: input 0..47, top padding 1.
// Band 1: outputs 24..47 read rows 47..95: input 47..94, bottom padding 1; rows 47 overlap
// (R - stride = 1 line). Data banks: ceil(48 * 192 / 512) = 18 for both.
TEST(SplitH, NvSmallStride2Pad1TwoBandsWithWeightReuse) {
  const ConvHardware hw = hardware("nv_small");
  const ConvLayer l = conv(hw, 96, 95, 16, 16, 3, 2, 1);
  EXPECT_FALSE(fn::conv_input_fits(l, hw));
  EXPECT_THROW((void)firmware::plan_conv(l, hw), firmware::FirmwareError);
  const std::vector<fn::ConvBand> bands = fn::split_conv(l, hw);
  expect_bands(bands, l, {{0, 24, 0, 48, 1, 0}, {24, 24, 47, 48, 0, 1}});
  ASSERT_EQ(bands.size(), 2U);
  EXPECT_TRUE(bands[0].layer.skip_weight_release);
  EXPECT_FALSE(bands[0].layer.weight_reuse);
  EXPECT_FALSE(bands[1].layer.skip_weight_release);
  EXPECT_TRUE(bands[1].layer.weight_reuse);
  for (const fn::ConvBand& b : bands) {
    const firmware::ConvPlan p = firmware::plan_conv(b.layer, hw);
    EXPECT_EQ(p.data_banks, 18U);
    EXPECT_EQ(p.weight_banks, 1U);
    EXPECT_TRUE(p.full_weights);
  }
}

// AlexNet's conv1 on nv_small: 227x227x3, 11x11 stride 4, no padding -> 96: 55 output rows.
// One C' surface of 227 atoms: 227 entries per line. Weights 11*11*3 = 363 bytes per kernel,
// 96 * 363 = 34848 -> 34944 bytes: 9 banks; one kernel group 363 * 8 + 128 = 3032: 1 bank.
//   all weights: 23 banks, 23 * 512 / 227 = 51 lines, (51 - 11) / 4 + 1 = 11 rows per band,
//                ceil(55 / 11) = 5 bands of 11 rows, each reading 10 * 4 + 11 = 51 lines:
//                255 lines of 1816 bytes + 34944 bytes of weights once = 498024 bytes;
//   one group:   31 banks, 69 lines, (69 - 11) / 4 + 1 = 15 rows per band, 4 bands of
//                14, 14, 14, 13 rows reading 63, 63, 63, 59 lines: 248 * 1816 + 4 * 34944 =
//                590144 bytes.
// All weights: 5 bands; band k reads lines 44k..44k+50, 7 (= 11 - 4) shared with the next.
TEST(SplitH, NvSmallAlexNetConv1FiveBandsOverlappingBySeven) {
  const ConvHardware hw = hardware("nv_small");
  const ConvLayer l = conv(hw, 227, 227, 3, 96, 11, 4, 0);
  const std::vector<fn::ConvBand> bands = fn::split_conv(l, hw);
  expect_bands(bands, l,
               {{0, 11, 0, 51, 0, 0},
                {11, 11, 44, 51, 0, 0},
                {22, 11, 88, 51, 0, 0},
                {33, 11, 132, 51, 0, 0},
                {44, 11, 176, 51, 0, 0}});
  for (std::size_t k = 0; k < bands.size(); ++k) {
    EXPECT_EQ(bands[k].layer.weight_reuse, k > 0);
    EXPECT_EQ(bands[k].layer.skip_weight_release, k + 1 < bands.size());
    EXPECT_EQ(firmware::plan_conv(bands[k].layer, hw).weight_banks, 9U);
  }
}

// ResNet-50's conv1 on nv_full: 224x224x3, 7x7 stride 2 pad 3 -> 64: 112 output rows.
// One C' surface (32 channels per atom), two atoms per 64-byte entry: a line of 224 atoms
// takes 112 entries; the input needs ceil(224 * 112 / 512) = 49 of 16 banks. Weights 147 bytes
// per kernel, 9408 -> 9472 bytes: 1 bank of 32 KB (one group: 147 * 32 + 128, also 1). 15 banks:
// 15 * 512 / 112 = 68 lines, (68 - 7) / 2 + 1 = 31 rows per band, ceil(112 / 31) = 4 bands of 28.
// Band 0: outputs 0..27 read padded rows -3..57 (top padding 3); band 1: 56 - 3 = 53..113;
// band 2: 109..169; band 3: 165..225, clamped to 223 (bottom padding 2; the unsplit layer's
// bottom padding is 3, of which 111 * 2 + 7 - 3 - 224 = 2 lines are read). Overlap: 5 = 7 - 2.
TEST(SplitH, NvFullResNetConv1FourBands) {
  const ConvHardware hw = hardware("nv_full");
  const ConvLayer l = conv(hw, 224, 224, 3, 64, 7, 2, 3);
  const std::vector<fn::ConvBand> bands = fn::split_conv(l, hw);
  expect_bands(bands, l,
               {{0, 28, 0, 58, 3, 0},
                {28, 28, 53, 61, 0, 0},
                {56, 28, 109, 61, 0, 0},
                {84, 28, 165, 59, 0, 2}});
}

// 3x3 stride 1 pad 1, 64x64x64 -> 256 on nv_small: 256 kernels of 576 bytes (147456) exceed the
// CBUF, so only the one-group plan exists: one kernel group 576 * 8 + 128 = 4736 bytes, 2 banks;
// 8 C' surfaces of 64 atoms: 512 entries (one bank) per line; 30 lines, 28 rows per band,
// ceil(64 / 28) = 3 bands of 22, 21, 21 reading 23, 23, 22 lines: DATA_BANK 23 for all, the
// other 9 banks for the weights. Every band fetches the weights: no reuse flags.
TEST(SplitH, NvSmallPartialWeightsWhenAllDoNotFit) {
  const ConvHardware hw = hardware("nv_small");
  const ConvLayer l = conv(hw, 64, 64, 64, 256, 3, 1, 1);
  const std::vector<fn::ConvBand> bands = fn::split_conv(l, hw);
  expect_bands(bands, l, {{0, 22, 0, 23, 1, 0}, {22, 21, 21, 23, 0, 0}, {43, 21, 42, 22, 0, 1}});
  for (const fn::ConvBand& b : bands) {
    EXPECT_FALSE(b.layer.weight_reuse);
    EXPECT_FALSE(b.layer.skip_weight_release);
    const firmware::ConvPlan p = firmware::plan_conv(b.layer, hw);
    EXPECT_FALSE(p.full_weights);
    EXPECT_EQ(p.data_banks, 23U);
    EXPECT_EQ(p.weight_banks, 9U);
  }
}

// A layer that fits stays one layer, unchanged.
TEST(SplitH, ALayerThatFitsIsNotSplit) {
  const ConvHardware hw = hardware("nv_small");
  const ConvLayer l = conv(hw, 28, 28, 1, 16, 3, 1, 1);
  EXPECT_TRUE(fn::conv_input_fits(l, hw));
  const std::vector<fn::ConvBand> bands = fn::split_conv(l, hw);
  ASSERT_EQ(bands.size(), 1U);
  EXPECT_EQ(bands[0].layer.src.address, l.src.address);
  EXPECT_EQ(bands[0].layer.src.height, 28U);
  EXPECT_FALSE(bands[0].layer.weight_reuse);
  EXPECT_EQ(bands[0].layer.data_banks, 0U);
}

// 2048 wide, 32 channels on nv_small: 4 C' surfaces of 2048 atoms, 8192 entries (16 banks) per
// line: the 3 lines of one output row need 48 banks of 32.
TEST(SplitH, OneOutputRowBeyondTheCbufIsRefused) {
  const ConvHardware hw = hardware("nv_small");
  const ConvLayer l = conv(hw, 2048, 16, 32, 8, 3, 1, 1);
  try {
    (void)fn::split_conv(l, hw);
    FAIL() << "split";
  } catch (const firmware::FirmwareError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("one output row reads 3 input lines of 8192 CBUF entries (48 banks)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("cannot be split in height"), std::string::npos) << m;
  }
}

TEST(SplitH, ModesThatAreNotSplitAreRefused) {
  const ConvHardware hw = hardware("nv_small");
  ConvLayer l = conv(hw, 96, 95, 16, 16, 3, 2, 1);
  l.sdp.output_to_pdp = true;
  EXPECT_THROW((void)fn::split_conv(l, hw), firmware::FirmwareError);
}

// The reuse flags as CDMA and CSC receive them (D_MISC_CFG bits 20 and 28), and plan_conv's
// refusal of reuse where the weights do not all stay in CBUF.
TEST(SplitH, WeightReuseRegisters) {
  namespace CD = regs::CDMA;
  namespace CS = regs::CSC;
  const ConvHardware hw = hardware("nv_small");
  const std::vector<fn::ConvBand> bands = fn::split_conv(conv(hw, 96, 95, 16, 16, 3, 2, 1), hw);
  ASSERT_EQ(bands.size(), 2U);
  std::vector<std::uint32_t> bank;
  for (std::size_t k = 0; k < 2; ++k) {
    test::RecordingMmio mmio;
    (void)firmware::program_conv(mmio, bands[k].layer, static_cast<unsigned>(k), hw);
    for (const std::uint32_t addr : {CD::D_MISC_CFG::kAddr, CS::D_MISC_CFG::kAddr}) {
      const std::uint32_t misc = mmio.at(addr);
      EXPECT_EQ(misc >> 20 & 1U, k == 1 ? 1U : 0U) << "WEIGHT_REUSE";
      EXPECT_EQ(misc >> 28 & 1U, k == 0 ? 1U : 0U) << "SKIP_WEIGHT_RLS";
      EXPECT_EQ(misc >> 16 & 1U, 0U) << "DATA_REUSE";
    }
    bank.push_back(mmio.at(CD::D_BANK::kAddr));
    EXPECT_EQ(mmio.at(CS::D_BANK::kAddr), bank.back());
  }
  EXPECT_EQ(bank[0], bank[1]);
  EXPECT_EQ(bank[0], 17U);  // DATA_BANK 18 - 1 (bits 0-4), WEIGHT_BANK 1 - 1 (bits 16-20)

  // 256 kernels of 576 bytes cannot all stay: reuse is refused.
  ConvLayer partial = fn::split_conv(conv(hw, 64, 64, 64, 256, 3, 1, 1), hw)[1].layer;
  partial.weight_reuse = true;
  EXPECT_THROW((void)firmware::plan_conv(partial, hw), firmware::FirmwareError);
}

// The compiler: one Conv + Relu node becomes 2 CONV layers (the first test's bands), both
// labelled with the node, whose MACs add up to the convolution's 48*48*16*3*3*16.
TEST(SplitH, CompilerEmitsTheBandsOfOneNode) {
  nettest::GraphBuilder b;
  b.input("x", {1, 16, 95, 96});
  b.constant("W", {16, 16, 3, 3}, nettest::ramp(16 * 16 * 9));
  b.constant("B", {16}, nettest::ramp(16));
  auto& c = b.node("Conv", "conv", {"x", "W", "B"}, {"c"});
  c.attributes["kernel_shape"] = nettest::ints_attr({3, 3});
  c.attributes["strides"] = nettest::ints_attr({2, 2});
  c.attributes["pads"] = nettest::ints_attr({1, 1, 1, 1});
  b.node("Relu", "relu", {"c"}, {"y"});
  b.output("y");
  const HwConfig hw = load_hw_config("nv_small");
  fn::CompiledNetwork net = fn::prepare_network(b.graph(), hw);
  fn::quantize_network(net, hw, fn::random_images(net.plan, 4), fn::QuantOptions{});
  const fn::NetProgram& p = net.program;
  ASSERT_EQ(p.layers.size(), 2U);
  EXPECT_EQ(p.macs(), std::uint64_t{48} * 48 * 16 * 3 * 3 * 16);
  EXPECT_EQ(p.layers[0].macs, std::uint64_t{24} * 48 * 16 * 3 * 3 * 16);
  EXPECT_EQ(p.network_macs(), p.macs());  // no groups: the network's MACs are the device's
  for (std::size_t k = 0; k < 2; ++k) {
    const fn::NetLayer& l = p.layers[k];
    EXPECT_EQ(l.engine, "CONV");
    EXPECT_EQ(l.nodes, "Conv 'conv' + Relu 'relu'");
    EXPECT_EQ(l.band, k);
    EXPECT_EQ(l.bands, 2U);
    EXPECT_EQ(l.whole_output.address, p.outputs[0].surface.address);
    EXPECT_EQ(l.whole_output.height, 48U);
  }
}

// Through the compiler the refusal names the ONNX node (models::graph::GraphError).
TEST(SplitH, CompilerRefusesAnUnsplittableConvolutionNamingTheNode) {
  nettest::GraphBuilder b;
  b.input("x", {1, 32, 8, 2048});
  b.constant("W", {8, 32, 3, 3}, nettest::ramp(8 * 32 * 9));
  auto& c = b.node("Conv", "wide", {"x", "W"}, {"y"});
  c.attributes["kernel_shape"] = nettest::ints_attr({3, 3});
  c.attributes["pads"] = nettest::ints_attr({1, 1, 1, 1});
  b.output("y");
  const HwConfig hw = load_hw_config("nv_small");
  fn::CompiledNetwork net = fn::prepare_network(b.graph(), hw);
  try {
    fn::quantize_network(net, hw, fn::random_images(net.plan, 2), fn::QuantOptions{});
    FAIL() << "compiled";
  } catch (const models::graph::GraphError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("Conv 'wide': convolution: one output row reads 3 input lines", 0), 0U) << m;
    EXPECT_NE(m.find("cannot be split in height"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace octasim
