// Input channel folding (firmware/net/fold.hpp) without a device: the folded layer's registers,
// input layout and weights for a tiny case written out by hand; the cost model's packages and
// input bytes for AlexNet's and ResNet-50's conv1, derived by hand from the configurations; when
// the input is left alone; and folded programs through the quantized reference executor
// (models/) against the same network compiled without folding — a separate program whose first
// convolution reads the image as it is — output code for output code. The device runs are
// fold_device_test.cpp.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/fold.hpp"
#include "firmware/net/memory_layout.hpp"
#include "firmware/net/runtime.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::firmware::net {
namespace {

using models::graph::Graph;
using models::graph::Tensor;
using nettest::GraphBuilder;
using nettest::ints_attr;

// A convolution's geometry: C x H x W input, K kernels of kh x kw, strides, pads.
struct Geometry {
  std::int64_t channels, height, width, kernels, kh, kw, sy, sx;
  std::int64_t top, left, bottom, right;
};

// x -> Conv (bias) [-> Relu [-> MaxPool 2x2/2]] -> y, weights of both signs.
Graph conv_graph(const Geometry& g, bool relu = true, bool pool = false) {
  GraphBuilder b;
  b.input("x", {1, g.channels, g.height, g.width});
  b.constant("W", {g.kernels, g.channels, g.kh, g.kw},
             nettest::ramp(static_cast<std::size_t>(g.kernels * g.channels * g.kh * g.kw)));
  b.constant("B", {g.kernels}, nettest::ramp(static_cast<std::size_t>(g.kernels)));
  auto& conv = b.node("Conv", "conv", {"x", "W", "B"}, {relu ? "c" : "y"});
  conv.attributes["kernel_shape"] = ints_attr({g.kh, g.kw});
  conv.attributes["strides"] = ints_attr({g.sy, g.sx});
  conv.attributes["pads"] = ints_attr({g.top, g.left, g.bottom, g.right});
  if (relu) b.node("Relu", "relu", {"c"}, {pool ? "r" : "y"});
  if (pool) {
    auto& mp = b.node("MaxPool", "pool", {"r"}, {"y"});
    mp.attributes["kernel_shape"] = ints_attr({2, 2});
    mp.attributes["strides"] = ints_attr({2, 2});
  }
  b.output("y");
  return b.graph();
}

CompiledNetwork compile(const Graph& g, const std::string& config, NetPrecision precision,
                        FoldMode fold, const CalibrationTable* table = nullptr) {
  const HwConfig hw = load_hw_config(config);
  CompiledNetwork net = prepare_network(g, hw);
  QuantOptions o;
  o.precision = precision;
  o.fold = fold;
  quantize_network(net, hw, random_images(net.plan, 4, 7), o, table);
  return net;
}

// Output 0's codes of image `i` through the quantized reference executor.
std::vector<std::int32_t> reference_codes(const NetProgram& p, const Tensor& images,
                                          std::size_t i) {
  HostMemory mem;
  load_constants(p, mem);
  write_input(p, images, i, mem);
  (void)run_network_model(p, mem);
  return read_output_codes(p, 0, mem);
}

// The tiny case: 2 channels of 5x5, x(c, y, x) = 25c + 5y + x + 1 (1..50); two 3x3 kernels,
// w(k, c, r, s) = 18k + 9c + 3r + s + 1 but 127 at (c, r, s) = (1, 2, 2), stride 2, pad 1 -> 3x3.
// The calibration table gives x a clip of 127 (step 1) and every |w| peaks at 127 (weight step 1):
// the codes are the values.
const Geometry kTiny{2, 5, 5, 2, 3, 3, 2, 2, 1, 1, 1, 1};

Graph tiny_graph() {
  GraphBuilder b;
  b.input("x", {1, 2, 5, 5});
  std::vector<float> w;
  for (int k = 0; k < 2; ++k)
    for (int c = 0; c < 2; ++c)
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s)
          w.push_back(c == 1 && r == 2 && s == 2
                          ? 127.0F
                          : static_cast<float>(18 * k + 9 * c + 3 * r + s + 1));
  b.constant("W", {2, 2, 3, 3}, w);
  auto& conv = b.node("Conv", "conv", {"x", "W"}, {"y"});
  conv.attributes["kernel_shape"] = ints_attr({3, 3});
  conv.attributes["strides"] = ints_attr({2, 2});
  conv.attributes["pads"] = ints_attr({1, 1, 1, 1});
  b.output("y");
  return b.graph();
}

Tensor tiny_image() {
  std::vector<float> v(50);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return Tensor::floats({1, 2, 5, 5}, v);
}

CompiledNetwork compile_tiny(FoldMode fold) {
  CalibrationTable t;
  t["x"].clip = 127.0;
  t["y"].clip = 20000.0;
  return compile(tiny_graph(), "nv_full", NetPrecision::kInt8, fold, &t);
}

// The input surface's cube as models/ reads it back from memory.
models::ops::ConvCube written_input(const NetProgram& p, const Tensor& image) {
  HostMemory mem;
  write_input(p, image, 0, mem);
  // Where placement put it: the CV-SRAM (nv_full) or DRAM.
  const PlacedMemory placed(mem, p.placement);
  return models::ops::read_feature_cube(conv_model_surface(p.input.surface, p.hw.atom_bytes),
                                        models::ops::ConvPrecision::kInt8, placed);
}

models::ops::ConvWeights written_weights(const NetProgram& p, const ConvLayer& conv) {
  HostMemory mem;
  load_constants(p, mem);
  const PlacedMemory placed(mem, p.placement);
  return models::ops::read_weights(
      conv.weight_address, conv.kernels, conv.kernel_height, conv.kernel_width, conv.src.channels,
      models::ops::ConvWeightLayout{p.hw.mac_atomic_c, p.hw.mac_atomic_k,
                                    models::ops::ConvPrecision::kInt8},
      placed);
}

// Columns: pixel (j, y) holds x(c, y, 2j + dx - 1) at channel 2 dx + c: a 3 x 5 x 6 input, a 1x3
// kernel, stride (1, 2), padding top and bottom only.
TEST(InputFold, TinyColumnsByHand) {
  const CompiledNetwork net = compile_tiny(FoldMode::kColumns);
  const NetProgram& p = net.program;
  ASSERT_TRUE(p.input.fold.has_value());
  EXPECT_EQ(p.input.fold->describe(), "columns: 5x5x2 -> 3x5x6");
  ASSERT_EQ(p.layers.size(), 1U);
  const auto& conv = std::get<ConvLayer>(p.layers[0].hw);
  EXPECT_EQ(conv.src.width, 3U);
  EXPECT_EQ(conv.src.height, 5U);
  EXPECT_EQ(conv.src.channels, 6U);
  EXPECT_EQ(conv.kernel_width, 1U);
  EXPECT_EQ(conv.kernel_height, 3U);
  EXPECT_EQ(conv.stride_x, 1U);
  EXPECT_EQ(conv.stride_y, 2U);
  EXPECT_EQ(conv.pad_left + conv.pad_right, 0U);
  EXPECT_EQ(conv.pad_top, 1U);
  EXPECT_EQ(conv.pad_bottom, 1U);
  EXPECT_EQ(conv.dst.width, 3U);
  EXPECT_EQ(conv.dst.height, 3U);
  EXPECT_EQ(p.layers[0].macs, 3U * 3 * 2 * 3 * 3 * 2);  // the unfolded layer's

  // [y][j]: channels (dx 0: c0 c1, dx 1: c0 c1, dx 2: c0 c1).
  const int expected[5][3][6] = {
      {{0, 0, 1, 26, 2, 27}, {2, 27, 3, 28, 4, 29}, {4, 29, 5, 30, 0, 0}},
      {{0, 0, 6, 31, 7, 32}, {7, 32, 8, 33, 9, 34}, {9, 34, 10, 35, 0, 0}},
      {{0, 0, 11, 36, 12, 37}, {12, 37, 13, 38, 14, 39}, {14, 39, 15, 40, 0, 0}},
      {{0, 0, 16, 41, 17, 42}, {17, 42, 18, 43, 19, 44}, {19, 44, 20, 45, 0, 0}},
      {{0, 0, 21, 46, 22, 47}, {22, 47, 23, 48, 24, 49}, {24, 49, 25, 50, 0, 0}}};
  const models::ops::ConvCube in = written_input(p, tiny_image());
  for (std::uint32_t y = 0; y < 5; ++y)
    for (std::uint32_t j = 0; j < 3; ++j)
      for (std::uint32_t ch = 0; ch < 6; ++ch)
        EXPECT_EQ(in.at(j, y, ch), expected[y][j][ch]) << "pixel " << j << "," << y << " ch " << ch;

  // [k][r]: channels (s 0: c0 c1, s 1: c0 c1, s 2: c0 c1).
  const int weights[2][3][6] = {
      {{1, 10, 2, 11, 3, 12}, {4, 13, 5, 14, 6, 15}, {7, 16, 8, 17, 9, 127}},
      {{19, 28, 20, 29, 21, 30}, {22, 31, 23, 32, 24, 33}, {25, 34, 26, 35, 27, 127}}};
  const models::ops::ConvWeights w = written_weights(p, conv);
  for (std::uint32_t k = 0; k < 2; ++k)
    for (std::uint32_t r = 0; r < 3; ++r)
      for (std::uint32_t ch = 0; ch < 6; ++ch)
        EXPECT_EQ(w.at(k, r, 0, ch), weights[k][r][ch]) << k << " " << r << " " << ch;
}

// Full: pixel (j, i) holds x(c, 2i + dy - 1, 2j + dx - 1) at channel 2 (3 dy + dx) + c: a 3 x 3 x
// 18 input and a 1x1 kernel, stride 1, no padding.
TEST(InputFold, TinyFullByHand) {
  const CompiledNetwork net = compile_tiny(FoldMode::kFull);
  const NetProgram& p = net.program;
  ASSERT_TRUE(p.input.fold.has_value());
  EXPECT_EQ(p.input.fold->describe(), "full: 5x5x2 -> 3x3x18");
  const auto& conv = std::get<ConvLayer>(p.layers.at(0).hw);
  EXPECT_EQ(conv.src.width, 3U);
  EXPECT_EQ(conv.src.height, 3U);
  EXPECT_EQ(conv.src.channels, 18U);
  EXPECT_EQ(conv.kernel_width, 1U);
  EXPECT_EQ(conv.kernel_height, 1U);
  EXPECT_EQ(conv.stride_x + conv.stride_y, 2U);
  EXPECT_EQ(conv.pad_left + conv.pad_right + conv.pad_top + conv.pad_bottom, 0U);
  const models::ops::ConvCube in = written_input(p, tiny_image());
  const std::vector<int> corner = {0, 0, 0, 0, 0, 0, 0, 0, 1, 26, 2, 27, 0, 0, 6, 31, 7, 32};
  const std::vector<int> centre = {7,  32, 8,  33, 9,  34, 12, 37, 13,
                                   38, 14, 39, 17, 42, 18, 43, 19, 44};
  const std::vector<int> last = {19, 44, 20, 45, 0, 0, 24, 49, 25, 50, 0, 0, 0, 0, 0, 0, 0, 0};
  for (std::uint32_t ch = 0; ch < 18; ++ch) {
    EXPECT_EQ(in.at(0, 0, ch), corner[ch]) << ch;
    EXPECT_EQ(in.at(1, 1, ch), centre[ch]) << ch;
    EXPECT_EQ(in.at(2, 2, ch), last[ch]) << ch;
  }
  const std::vector<int> kernel0 = {1, 10, 2, 11, 3, 12, 4, 13, 5, 14, 6, 15, 7, 16, 8, 17, 9, 127};
  const models::ops::ConvWeights w = written_weights(p, conv);
  for (std::uint32_t ch = 0; ch < 18; ++ch) EXPECT_EQ(w.at(0, 0, 0, ch), kernel0[ch]) << ch;
  EXPECT_EQ(w.at(1, 0, 0, 17), 127);
  EXPECT_EQ(w.at(1, 0, 0, 0), 19);
}

// The three programs of the tiny case compute the same output codes (the reference executor).
TEST(InputFold, TinyFoldsComputeTheUnfoldedSums) {
  const Tensor image = tiny_image();
  const CompiledNetwork off = compile_tiny(FoldMode::kOff);
  EXPECT_FALSE(off.program.input.fold.has_value());
  const std::vector<std::int32_t> want = reference_codes(off.program, image, 0);
  EXPECT_NE(want, std::vector<std::int32_t>(want.size(), 0));
  for (FoldMode m : {FoldMode::kColumns, FoldMode::kFull}) {
    EXPECT_EQ(reference_codes(compile_tiny(m).program, image, 0), want) << static_cast<int>(m);
  }
}

// The cost model on nv_full (atomic-C 64, atomic-K 32, 32-byte atoms: 32 INT8 channels).
// AlexNet conv1 (227x227x3, 96 kernels 11x11/4 -> 55x55): packages per output pixel and kernel
// group 11*11*1 = 121 unfolded, 11*ceil(33/64) = 11 columns, ceil(363/64) = 6 full. Input bytes:
// 227*227 atoms (3 channels in one 32-channel surface) = 1648928; columns 55 wide, 227 high, 33
// channels in 2 surfaces: 55*227*2*32 = 799040; full 55*55 pixels of 363 channels in 12 surfaces:
// 55*55*12*32 = 1161600. CSC: 3 kernel groups x 3025 pixels x packages.
TEST(InputFold, CostModelAlexNetConv1NvFull) {
  const HwConfig hw = load_hw_config("nv_full");
  ConvAttrs a;
  a.kernel_w = a.kernel_h = 11;
  a.stride_x = a.stride_y = 4;
  const FoldChoice c =
      choose_input_fold({227, 227, 3}, a, {55, 55, 96}, 96, Precision::kInt8, FoldMode::kAuto,
                        conv_hardware(hw), cdma_read_bytes_per_cycle(hw));
  EXPECT_EQ(c.cost[0].packages, 121U);
  EXPECT_EQ(c.cost[1].packages, 11U);
  EXPECT_EQ(c.cost[2].packages, 6U);
  EXPECT_EQ(c.cost[0].input_bytes, 1648928U);
  EXPECT_EQ(c.cost[1].input_bytes, 799040U);
  EXPECT_EQ(c.cost[2].input_bytes, 1161600U);
  EXPECT_EQ(c.cost[0].csc_cycles, 3U * 3025 * 121);
  EXPECT_EQ(c.cost[1].csc_cycles, 3U * 3025 * 11);
  EXPECT_EQ(c.cost[2].csc_cycles, 3U * 3025 * 6);
  for (const ConvCost& k : c.cost) {
    EXPECT_TRUE(k.feasible);
    EXPECT_GE(k.read_bytes, k.input_bytes);  // weights, and the bands' overlap
  }
  // nv_full's CDMA issues one 32-byte atom per cycle (max burst 1) and keeps 1200 in flight over
  // a 1200-cycle latency: 32 bytes per cycle. Columns: 99825 + ~27000 cycles; full: 54450 +
  // ~37000: the fewer packages win.
  EXPECT_EQ(cdma_read_bytes_per_cycle(hw), 32.0);
  EXPECT_EQ(c.chosen, FoldKind::kFull);
  // With the latency buffer nv_full had before (128 atoms: 3.41 bytes per cycle) the bytes weigh
  // more: columns 99825 + ~252000, full 54450 + ~351000.
  const FoldChoice slow = choose_input_fold({227, 227, 3}, a, {55, 55, 96}, 96, Precision::kInt8,
                                            FoldMode::kAuto, conv_hardware(hw), 128.0 * 32 / 1200);
  EXPECT_EQ(slow.chosen, FoldKind::kColumns);
}

// ResNet-50's conv1 (224x224x3, 64 kernels 7x7/2 pad 3 -> 112x112). nv_full: 49 / 7 / 3 packages;
// columns 112 wide, 224 high, 21 channels in one surface: 112*224*32 = 802816 bytes; full 147
// channels in 5 surfaces: 112*112*5*32 = 2007040; at 32 bytes per cycle full (2 groups x 12544 x 3
// + ~63000 cycles) beats columns (x 7 + ~26000). nv_small (atomic-C 8, 8-byte atoms of 8
// channels): 49 / 7*ceil(21/8) = 21 / ceil(147/8) = 19 packages; 224*224*8 = 401408, columns
// 112*224*3*8 = 602112, full 112*112*19*8 = 1906688 bytes at 4 bytes per cycle: columns
// (8 groups x 12544 x 21 + ~150000) beat full (x 19 + ~477000).
TEST(InputFold, CostModelResNetConv1) {
  ConvAttrs a;
  a.kernel_w = a.kernel_h = 7;
  a.stride_x = a.stride_y = 2;
  a.pad_left = a.pad_right = a.pad_top = a.pad_bottom = 3;
  const Cube in{224, 224, 3}, out{112, 112, 64};
  const HwConfig full = load_hw_config("nv_full");
  const FoldChoice f = choose_input_fold(in, a, out, 64, Precision::kInt8, FoldMode::kAuto,
                                         conv_hardware(full), cdma_read_bytes_per_cycle(full));
  EXPECT_EQ(f.cost[0].packages, 49U);
  EXPECT_EQ(f.cost[1].packages, 7U);
  EXPECT_EQ(f.cost[2].packages, 3U);
  EXPECT_EQ(f.cost[1].input_bytes, 802816U);
  EXPECT_EQ(f.cost[2].input_bytes, 2007040U);
  EXPECT_EQ(f.cost[2].csc_cycles, 2U * 12544 * 3);
  EXPECT_EQ(f.chosen, FoldKind::kFull);
  const HwConfig small = load_hw_config("nv_small");
  const FoldChoice s = choose_input_fold(in, a, out, 64, Precision::kInt8, FoldMode::kAuto,
                                         conv_hardware(small), cdma_read_bytes_per_cycle(small));
  EXPECT_EQ(s.cost[0].packages, 49U);
  EXPECT_EQ(s.cost[1].packages, 21U);
  EXPECT_EQ(s.cost[2].packages, 19U);
  EXPECT_EQ(s.cost[0].input_bytes, 401408U);
  EXPECT_EQ(s.cost[1].input_bytes, 602112U);
  EXPECT_EQ(s.cost[2].input_bytes, 1906688U);
  EXPECT_EQ(cdma_read_bytes_per_cycle(small), 4.0);
  EXPECT_EQ(s.cost[1].csc_cycles, 8U * 12544 * 21);
  EXPECT_EQ(s.chosen, FoldKind::kColumns);
  // Forced layouts are taken whatever they cost; off is off.
  for (const auto& [mode, kind] : {std::pair{FoldMode::kFull, FoldKind::kFull},
                                   std::pair{FoldMode::kColumns, FoldKind::kColumns},
                                   std::pair{FoldMode::kOff, FoldKind::kNone}}) {
    EXPECT_EQ(choose_input_fold(in, a, out, 64, Precision::kInt8, mode, conv_hardware(small),
                                cdma_read_bytes_per_cycle(small))
                  .chosen,
              kind);
  }
}

// 64 input channels fill atomic-C: a 3x3 kernel issues 9 packages, folded columns (192 channels)
// 3 * 3 = 9 as well: not folded.
TEST(InputFold, DeepInputIsNotFolded) {
  const CompiledNetwork net = compile(conv_graph({64, 16, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1}),
                                      "nv_full", NetPrecision::kInt8, FoldMode::kAuto);
  EXPECT_FALSE(net.program.input.fold.has_value());
  EXPECT_EQ(std::get<ConvLayer>(net.program.layers.at(0).hw).kernel_width, 3U);
}

// The input is folded only for its one reader: a MaxPool reading it too, or the input being a
// graph output, keeps it as it is; so does --no-fold.
TEST(InputFold, OtherReadersKeepTheInputAsItIs) {
  const Geometry g{3, 32, 32, 16, 7, 7, 2, 2, 3, 3, 3, 3};
  EXPECT_TRUE(compile(conv_graph(g), "nv_full", NetPrecision::kInt8, FoldMode::kAuto)
                  .program.input.fold.has_value());
  EXPECT_FALSE(compile(conv_graph(g), "nv_full", NetPrecision::kInt8, FoldMode::kOff)
                   .program.input.fold.has_value());
  Graph two = conv_graph(g);
  models::graph::Node mp;
  mp.op_type = "MaxPool";
  mp.name = "side";
  mp.inputs = {"x"};
  mp.outputs = {"side_out"};
  mp.attributes["kernel_shape"] = ints_attr({2, 2});
  mp.attributes["strides"] = ints_attr({2, 2});
  two.nodes.push_back(mp);
  two.outputs.push_back({"side_out", models::graph::DType::kFloat32, {}});
  const CompiledNetwork net = compile(two, "nv_full", NetPrecision::kInt8, FoldMode::kColumns);
  EXPECT_FALSE(net.program.input.fold.has_value());
  Graph echo = conv_graph(g);
  echo.outputs.push_back({"x", models::graph::DType::kFloat32, {}});
  EXPECT_FALSE(compile(echo, "nv_full", NetPrecision::kInt8, FoldMode::kColumns)
                   .program.input.fold.has_value());
}

struct ExactCase {
  const char* name;
  const char* config;
  NetPrecision precision;
  Geometry geometry;
  bool pool = false;
};

void PrintTo(const ExactCase& c, std::ostream* os) {
  *os << c.name;
}

class FoldReference : public ::testing::TestWithParam<ExactCase> {};

// Every layout (the cost model's, columns, full) against the unfolded program, 3 images.
TEST_P(FoldReference, OutputCodesEqualTheUnfoldedProgram) {
  const ExactCase& c = GetParam();
  const Graph g = conv_graph(c.geometry, true, c.pool);
  const CompiledNetwork off = compile(g, c.config, c.precision, FoldMode::kOff);
  ASSERT_FALSE(off.program.input.fold.has_value());
  const Tensor images = random_images(off.plan, 3, 11);
  std::vector<std::vector<std::int32_t>> want;
  for (std::size_t i = 0; i < 3; ++i) {
    want.push_back(reference_codes(off.program, images, i));
    EXPECT_NE(want.back(), std::vector<std::int32_t>(want.back().size(), 0)) << i;
  }
  for (FoldMode m : {FoldMode::kAuto, FoldMode::kColumns, FoldMode::kFull}) {
    const CompiledNetwork on = compile(g, c.config, c.precision, m);
    ASSERT_TRUE(on.program.input.fold.has_value()) << static_cast<int>(m);
    EXPECT_EQ(on.program.macs(), off.program.macs());
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(reference_codes(on.program, images, i), want[i])
          << on.program.input.fold->describe() << ", image " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, FoldReference,
    ::testing::Values(
        ExactCase{"K7S2P3NvFull",
                  "nv_full",
                  NetPrecision::kInt8,
                  {3, 40, 40, 16, 7, 7, 2, 2, 3, 3, 3, 3}},
        ExactCase{"K11S4NvSmall",
                  "nv_small",
                  NetPrecision::kInt8,
                  {3, 47, 47, 8, 11, 11, 4, 4, 0, 0, 0, 0}},
        ExactCase{
            "K5S1P2Fp16", "nv_full", NetPrecision::kFp16, {3, 20, 20, 8, 5, 5, 1, 1, 2, 2, 2, 2}},
        // A 3x5 kernel, strides (2, 1), pads top 1, left 2, bottom 0, right 1.
        ExactCase{
            "Asymmetric", "nv_small", NetPrecision::kInt8, {3, 17, 19, 8, 3, 5, 2, 1, 1, 2, 0, 1}},
        ExactCase{"Int4ThenPool",
                  "nv_small",
                  NetPrecision::kInt4,
                  {1, 28, 28, 16, 3, 3, 1, 1, 1, 1, 1, 1},
                  true},
        ExactCase{"Fp16ThenPool",
                  "nv_full",
                  NetPrecision::kFp16,
                  {3, 24, 24, 16, 7, 7, 2, 2, 3, 3, 3, 3},
                  true}),
    [](const ::testing::TestParamInfo<ExactCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace octasim::firmware::net
