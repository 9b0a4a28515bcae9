// Small hand-built networks through the whole compiler (compile_network) onto the cycle-level
// SoC, covering what the Fashion-MNIST CNN does not: Clip(0, 6) fused into a convolution,
// padded average pooling (count_include_pad=1), MatMul + Add, a lone ReLU on SDP after a pool
// of a signed tensor, GlobalAveragePool, Gemm with alpha, beta and transB=0, depthwise and
// grouped convolution. Two checks per
// network on 4 images:
//   - the device equals the quantized reference executor bit for bit, every layer (soc_run.hpp);
//   - a PDP or SDP (lone ReLU) layer's output has its input's step, as program.hpp says those
//     layers keep the codes;
//   - the device's dequantized outputs are close to the FP32 reference executor's
//     (models/graph/reference.hpp): the largest error within 5% of the largest output magnitude.
//     At INT8 each tensor's rounding error is at most half a step, 1/254 of its clip, so a few
//     layers stay well inside that; a wrong scale (a step off by any factor) or a wrong layout
//     does not.
// SystemC elaborates once per process: one network per TEST.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/net/compiler.hpp"
#include "models/graph/reference.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"
#include "soc_run.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;
using nettest::GraphBuilder;
using nettest::int_attr;
using nettest::ints_attr;
using nettest::ramp;

constexpr std::size_t kOpsImages = 4;

Tensor scaled(Tensor t, float factor) {
  for (float& v : t.f) v *= factor;
  return t;
}

// Compiles `g` for nv_small at INT8 (max calibration on 16 random images in [0, input_scale)),
// runs 4 other random images on the SoC and checks both properties.
void check_network(const models::graph::Graph& g, std::size_t expected_layers, float input_scale) {
  const HwConfig hw = load_hw_config("nv_small");
  fn::CompiledNetwork net = fn::prepare_network(g, hw);
  const Tensor calibration = scaled(fn::random_images(net.plan, 16, 1), input_scale);
  const Tensor images = scaled(fn::random_images(net.plan, kOpsImages, 2), input_scale);
  fn::quantize_network(net, hw, calibration, fn::QuantOptions{});
  const fn::NetProgram& prog = net.program;
  ASSERT_EQ(prog.layers.size(), expected_layers);
  // program.hpp: PDP pools codes and a lone ReLU on SDP is max(code, 0), so their outputs must
  // be quantized with their input's step (the codes are not rescaled).
  for (const fn::NetLayer& l : prog.layers) {
    if (l.engine != "PDP" && l.engine != "SDP") continue;
    EXPECT_DOUBLE_EQ(prog.table.at(l.output).step(), prog.table.at(l.input).step())
        << l.engine << " " << l.nodes << ": output step differs from the input's";
  }

  const nettest::SocRun run = nettest::run_on_soc(prog, hw, images, kOpsImages);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_EQ(run.layers_run, nettest::device_record_count(prog) * kOpsImages);

  nettest::expect_near_fp32_reference(net, images, run, kOpsImages, 0.05);
}

TEST(HandBuiltNetworkOnSoc, ConvClip6AveragePoolMatMulAdd) {
  GraphBuilder b;
  b.input("x", {1, 3, 12, 12});
  b.constant("W", {8, 3, 3, 3}, ramp(8 * 3 * 3 * 3));
  b.constant("B", {8}, {0.5F, -0.5F, 1.0F, 0.0F, 0.25F, -1.0F, 2.0F, 0.1F});
  auto& conv = b.node("Conv", "conv", {"x", "W", "B"}, {"c"});
  conv.attributes["kernel_shape"] = ints_attr({3, 3});
  conv.attributes["pads"] = ints_attr({1, 1, 1, 1});
  conv.attributes["strides"] = ints_attr({2, 2});
  b.constant("lo", {}, {0.0F});
  b.constant("hi", {}, {6.0F});
  b.node("Clip", "relu6", {"c", "lo", "hi"}, {"r"});
  auto& ap = b.node("AveragePool", "ap", {"r"}, {"p"});
  ap.attributes["kernel_shape"] = ints_attr({3, 3});
  ap.attributes["pads"] = ints_attr({1, 1, 1, 1});
  ap.attributes["count_include_pad"] = int_attr(1);
  b.node("Flatten", "flat", {"p"}, {"f"});
  b.constant("Bm", {8 * 6 * 6, 10}, ramp(8 * 6 * 6 * 10));
  b.constant("bias", {10}, {1, -1, 2, -2, 0, 0.5F, -0.5F, 3, -3, 0});
  b.node("MatMul", "mm", {"f", "Bm"}, {"t"});
  b.node("Add", "add", {"t", "bias"}, {"y"});
  b.output("y");
  // CONV (+ Clip) with the AveragePool on the fly (SDP streams into PDP), CONV (MatMul + Add).
  check_network(b.graph(), 2, 4.0F);
}

TEST(HandBuiltNetworkOnSoc, ConvMaxPoolReluGlobalAveragePoolGemm) {
  GraphBuilder b;
  b.input("x", {1, 4, 8, 8});
  b.constant("W", {8, 4, 3, 3}, ramp(8 * 4 * 3 * 3));
  // A negative bias: the convolution's output is mostly negative, so its signed clip is set by
  // the negative side and the ReLU's output has a smaller range than its input.
  b.constant("B", {8}, std::vector<float>(8, -1.5F));
  b.node("Conv", "conv", {"x", "W", "B"}, {"c"}).attributes["kernel_shape"] = ints_attr({3, 3});
  auto& mp = b.node("MaxPool", "mp", {"c"}, {"m"});
  mp.attributes["kernel_shape"] = ints_attr({2, 2});
  mp.attributes["strides"] = ints_attr({2, 2});
  b.node("Relu", "relu", {"m"}, {"r"});
  b.node("GlobalAveragePool", "gap", {"r"}, {"g"});
  b.node("Flatten", "flat", {"g"}, {"f"});
  b.constant("Bg", {8, 5}, ramp(40));
  b.constant("Cg", {5}, {0.25F, -0.25F, 0.5F, 0.0F, -0.5F});
  auto& fc = b.node("Gemm", "fc", {"f", "Bg", "Cg"}, {"y"});
  fc.attributes["alpha"] = nettest::float_attr(0.5F);
  fc.attributes["beta"] = nettest::float_attr(2.0F);
  b.output("y");
  // CONV with the MaxPool on the fly, SDP (ReLU), PDP (global average), CONV (Gemm).
  check_network(b.graph(), 4, 2.0F);
}

// A depthwise 3x3 convolution (group = channels, MobileNet's) and a grouped 1x1 one: the DLA runs
// each as a dense convolution with zero weights between groups (weights.hpp).
TEST(HandBuiltNetworkOnSoc, DepthwiseAndGroupedConvolution) {
  GraphBuilder b;
  b.input("x", {1, 8, 10, 10});
  b.constant("Wd", {8, 1, 3, 3}, ramp(8 * 9));
  b.constant("Bd", {8}, std::vector<float>(8, 0.25F));
  auto& dw = b.node("Conv", "dw", {"x", "Wd", "Bd"}, {"d"});
  dw.attributes["group"] = int_attr(8);
  dw.attributes["pads"] = ints_attr({1, 1, 1, 1});
  b.node("Relu", "relu", {"d"}, {"r"});
  b.constant("Wg", {16, 4, 1, 1}, ramp(16 * 4));
  b.node("Conv", "gc", {"r", "Wg"}, {"y"}).attributes["group"] = int_attr(2);
  b.output("y");
  // CONV (+ Relu), CONV.
  check_network(b.graph(), 2, 2.0F);
}

}  // namespace
}  // namespace octasim
