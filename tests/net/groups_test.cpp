// Grouped convolutions group by group (firmware/net/groups.cpp) without a device: one group's
// weights (weights.hpp `group`) against the per-channel quantization done here by hand, and the
// compiler's program for small grouped convolutions — how many CONV layers, the input and output
// channel windows each reads and writes (addresses derived here from the surfaces' strides: a
// window starting at channel f is f / C' surfaces into the cube, C' = 32 INT8 or 16 FP16 channels
// on nv_full, 8 INT8 on nv_small), their MACs counted by hand, labels, and the cases that keep
// one dense layer.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/net/compiler.hpp"
#include "firmware/net/schedule.hpp"
#include "firmware/net/weights.hpp"
#include "group_graph.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using firmware::ConvLayer;
using nettest::GroupCase;

fn::NetProgram compile(const GroupCase& c, const char* config, fn::QuantOptions o = {}) {
  const HwConfig hw = load_hw_config(config);
  fn::CompiledNetwork net = fn::prepare_network(nettest::group_graph(c), hw);
  fn::quantize_network(net, hw, fn::random_images(net.plan, 2), o);
  return net.program;
}

fn::QuantOptions direct() {
  fn::QuantOptions o;
  o.winograd = fn::WinogradMode::kOff;  // the MACs below are the direct convolution's
  // The convolution reads the graph input as it is (a folded input keeps the dense layer).
  o.fold = fn::FoldMode::kOff;
  return o;
}

std::vector<const fn::NetLayer*> conv_layers(const fn::NetProgram& p) {
  std::vector<const fn::NetLayer*> v;
  for (const fn::NetLayer& l : p.layers) {
    if (l.engine == "CONV") v.push_back(&l);
  }
  return v;
}

// Group g of 2 over 6 input channels (3 each), 4 kernels (2 each), 1x1: the group's kernels over
// its channels, each quantized to round(w / s), s = max|w| / 127 of that kernel's 3 weights; the
// bias of its kernels.
TEST(GroupWeights, OneGroupIsItsKernelsOverItsChannels) {
  nettest::GraphBuilder b;
  b.input("x", {1, 6, 2, 2});
  const std::vector<float> w = {0.5F,  -0.25F, 0.1F,  1.0F, 0.3F, -0.2F,
                                -2.0F, 0.7F,   0.05F, 0.4F, 0.4F, -0.8F};  // [4, 3, 1, 1]
  b.constant("W", {4, 3, 1, 1}, w);
  const std::vector<float> bias = {0.1F, 0.2F, 0.3F, 0.4F};
  b.constant("B", {4}, bias);
  auto& conv = b.node("Conv", "conv", {"x", "W", "B"}, {"y"});
  conv.attributes["group"] = nettest::int_attr(2);
  b.output("y");
  const HwConfig hw = load_hw_config("nv_full");
  const fn::CompiledNetwork net = fn::prepare_network(b.graph(), hw);
  ASSERT_EQ(net.plan.layers.size(), 1U);
  const fn::PlannedLayer& l = net.plan.layers[0];
  const fn::Cube& in = net.plan.cubes.at(l.input);
  for (unsigned g = 0; g < 2; ++g) {
    const fn::QuantizedWeights q =
        fn::quantize_conv_weights(net.graph, l, in, 8, fn::WeightQuantizer::kMax, g);
    ASSERT_EQ(q.codes.kernels, 2U);
    ASSERT_EQ(q.codes.channels, 3U);
    for (unsigned k = 0; k < 2; ++k) {
      const float* kw = &w[(g * 2 + k) * 3];
      const double m = double{std::max({std::abs(kw[0]), std::abs(kw[1]), std::abs(kw[2])})};
      EXPECT_DOUBLE_EQ(q.scales[k], m / 127.0) << g << " " << k;
      for (unsigned c = 0; c < 3; ++c) {
        const double v = double{kw[c]} / (m / 127.0);
        const auto want =
            static_cast<std::int32_t>(v < 0 ? -std::floor(-v + 0.5) : std::floor(v + 0.5));
        EXPECT_EQ(q.codes.at(k, 0, 0, c), want) << g << " " << k << " " << c;
      }
      EXPECT_DOUBLE_EQ(q.bias[k], double{bias[g * 2 + k]}) << g << " " << k;
    }
  }
  // The dense layer: 6 channels, kernel 2 (group 1's first) zero on channels 0..2.
  const fn::QuantizedWeights dense =
      fn::quantize_conv_weights(net.graph, l, in, 8, fn::WeightQuantizer::kMax);
  ASSERT_EQ(dense.codes.channels, 6U);
  for (unsigned c = 0; c < 3; ++c) EXPECT_EQ(dense.codes.at(2, 0, 0, c), 0);
  EXPECT_EQ(dense.codes.at(2, 0, 0, 3), -127);  // -2.0 is kernel 2's largest
  EXPECT_THROW((void)fn::quantize_conv_weights(net.graph, l, in, 8, fn::WeightQuantizer::kMax, 2),
               models::graph::GraphError);
}

// nv_full INT8, 64 -> 64 channels in 2 groups of 32 (one atom each), 3x3 on 8x8: two CONV layers;
// group g reads input surface g and writes output surface g (32 channels, the cube's strides),
// 8*8*32*9*32 MACs each, the network's and the device's alike; the second does not wait for the
// first under the overlapped schedule (disjoint outputs).
TEST(ConvGroups, TwoGroupsOfOneAtomEachAreTwoLayers) {
  const GroupCase c;
  const fn::NetProgram p = compile(c, "nv_full", direct());
  const std::vector<const fn::NetLayer*> convs = conv_layers(p);
  ASSERT_EQ(convs.size(), 2U);
  ASSERT_EQ(p.layers.size(), 2U);
  const firmware::FeatureSurface& in = p.input.surface;
  const firmware::FeatureSurface& out = p.outputs.at(0).surface;
  const std::uint64_t macs = std::uint64_t{8} * 8 * 32 * 9 * 32;
  for (unsigned g = 0; g < 2; ++g) {
    const fn::NetLayer& l = *convs[g];
    EXPECT_EQ(l.nodes, "Conv 'conv' group " + std::to_string(g + 1) + "/2 + Relu 'relu'");
    EXPECT_EQ(l.group, g);
    EXPECT_EQ(l.groups, 2U);
    const auto& conv = std::get<ConvLayer>(l.hw);
    EXPECT_EQ(conv.src.address, in.address + std::uint64_t{g} * in.surface_stride);
    EXPECT_EQ(conv.src.channels, 32U);
    EXPECT_EQ(conv.src.line_stride, in.line_stride);
    EXPECT_EQ(conv.src.surface_stride, in.surface_stride);
    EXPECT_EQ(conv.dst.address, out.address + std::uint64_t{g} * out.surface_stride);
    EXPECT_EQ(conv.dst.channels, 32U);
    EXPECT_EQ(conv.dst.surface_stride, out.surface_stride);
    EXPECT_EQ(conv.kernels, 32U);
    EXPECT_FALSE(conv.winograd);
    EXPECT_EQ(l.macs, macs);
    EXPECT_EQ(l.network_macs, macs);
  }
  EXPECT_NE(std::get<ConvLayer>(convs[0]->hw).weight_address,
            std::get<ConvLayer>(convs[1]->hw).weight_address);
  EXPECT_EQ(p.network_macs(), nettest::group_network_macs(c));
  EXPECT_EQ(p.macs(), p.network_macs());
  EXPECT_TRUE(fn::layer_dependencies(p)[1].empty());
}

// The dense layer when asked (QuantOptions::conv_groups false): one CONV of 64 kernels over all 64
// channels, twice the network's MACs.
TEST(ConvGroups, DenseWhenDisabled) {
  const GroupCase c;
  fn::QuantOptions o = direct();
  o.conv_groups = false;
  const fn::NetProgram p = compile(c, "nv_full", o);
  ASSERT_EQ(p.layers.size(), 1U);
  const auto& conv = std::get<ConvLayer>(p.layers[0].hw);
  EXPECT_EQ(conv.src.channels, 64U);
  EXPECT_EQ(conv.kernels, 64U);
  EXPECT_EQ(p.layers[0].nodes, "Conv 'conv' + Relu 'relu'");
  EXPECT_EQ(p.layers[0].groups, 1U);
  EXPECT_EQ(p.network_macs(), nettest::group_network_macs(c));
  EXPECT_EQ(p.macs(), 2 * nettest::group_network_macs(c));
}

// AlexNet's conv2 shape: 96 channels in groups of 48 at INT8 (C' 32): group 0 reads channels
// [0, 64), group 1 [32, 96) (surface 1 on), 64 channels each, its weights zero on the other 16;
// 64 kernels in groups of 32. Device MACs 8*8*32*9*64 per group, the network's 8*8*32*9*48.
TEST(ConvGroups, UnalignedGroupsReadAnAtomAlignedWindow) {
  GroupCase c;
  c.channels = 96;
  const fn::NetProgram p = compile(c, "nv_full", direct());
  const std::vector<const fn::NetLayer*> convs = conv_layers(p);
  ASSERT_EQ(convs.size(), 2U);
  const firmware::FeatureSurface& in = p.input.surface;
  for (unsigned g = 0; g < 2; ++g) {
    const auto& conv = std::get<ConvLayer>(convs[g]->hw);
    EXPECT_EQ(conv.src.address, in.address + std::uint64_t{g} * in.surface_stride);
    EXPECT_EQ(conv.src.channels, 64U);
    EXPECT_EQ(conv.kernels, 32U);
    EXPECT_EQ(convs[g]->macs, std::uint64_t{8} * 8 * 32 * 9 * 64);
    EXPECT_EQ(convs[g]->network_macs, std::uint64_t{8} * 8 * 32 * 9 * 48);
  }
  EXPECT_EQ(p.network_macs(), nettest::group_network_macs(c));
}

// Output groups of 16 kernels: at INT8 (C' 32) group 1's output would start mid-atom, one dense
// layer; at FP16 (C' 16) each group is a layer, 16 channels in and out.
TEST(ConvGroups, OutputGroupsMustStartOnAnAtom) {
  GroupCase c;
  c.channels = 32;
  c.kernels = 32;
  EXPECT_EQ(conv_layers(compile(c, "nv_full", direct())).size(), 1U);
  fn::QuantOptions fp16 = direct();
  fp16.precision = fn::NetPrecision::kFp16;
  const fn::NetProgram p = compile(c, "nv_full", fp16);
  const std::vector<const fn::NetLayer*> convs = conv_layers(p);
  ASSERT_EQ(convs.size(), 2U);
  for (unsigned g = 0; g < 2; ++g) {
    const auto& conv = std::get<ConvLayer>(convs[g]->hw);
    EXPECT_EQ(conv.src.address, p.input.surface.address + g * p.input.surface.surface_stride);
    EXPECT_EQ(conv.src.channels, 16U);
    EXPECT_EQ(conv.dst.channels, 16U);
    EXPECT_EQ(conv.precision, firmware::Precision::kFp16);
  }
  EXPECT_EQ(p.macs(), nettest::group_network_macs(c));
}

// nv_small (8-byte atoms: C' 8 INT8 channels): 16 -> 16 in 2 groups of 8 are two layers.
TEST(ConvGroups, NvSmallGroupsOfEightChannels) {
  GroupCase c;
  c.channels = 16;
  c.kernels = 16;
  const fn::NetProgram p = compile(c, "nv_small", direct());
  const std::vector<const fn::NetLayer*> convs = conv_layers(p);
  ASSERT_EQ(convs.size(), 2U);
  const auto& second = std::get<ConvLayer>(convs[1]->hw);
  EXPECT_EQ(second.src.address, p.input.surface.address + p.input.surface.surface_stride);
  EXPECT_EQ(second.dst.address,
            p.outputs.at(0).surface.address + p.outputs.at(0).surface.surface_stride);
  EXPECT_EQ(p.macs(), nettest::group_network_macs(c));
}

// A depthwise convolution (groups of one channel) keeps the dense layer.
TEST(ConvGroups, DepthwiseStaysDense) {
  GroupCase c;
  c.channels = c.kernels = c.groups = 32;
  const fn::NetProgram p = compile(c, "nv_full", direct());
  ASSERT_EQ(conv_layers(p).size(), 1U);
  EXPECT_EQ(p.layers[0].groups, 1U);
  EXPECT_EQ(p.macs(), 32 * nettest::group_network_macs(c));
}

// A MaxPool after the groups is a PDP layer of its own reading their output (not on the fly),
// waiting for both; the dense layer pools on the fly.
TEST(ConvGroups, PoolingAfterTheGroupsReadsMemory) {
  GroupCase c;
  c.max_pool = true;
  const fn::NetProgram p = compile(c, "nv_full", direct());
  ASSERT_EQ(p.layers.size(), 3U);
  EXPECT_EQ(p.layers[2].engine, "PDP");
  const auto& pool = std::get<firmware::PdpLayer>(p.layers[2].hw);
  EXPECT_EQ(pool.src.address, std::get<ConvLayer>(p.layers[0].hw).dst.address);
  EXPECT_EQ(pool.src.channels, 64U);
  const std::vector<std::size_t> want{0, 1};
  EXPECT_EQ(fn::layer_dependencies(p)[2], want);
  fn::QuantOptions o = direct();
  o.conv_groups = false;
  const fn::NetProgram dense = compile(c, "nv_full", o);
  ASSERT_EQ(dense.layers.size(), 1U);
  EXPECT_TRUE(std::holds_alternative<firmware::ConvPoolLayer>(dense.layers[0].hw));
}

// A group's layer in Winograd mode where winograd.cpp takes it (3x3 stride 1, a 32x32 output):
// 4 of the direct convolution's 9 products per output on the device, the network's MACs direct.
TEST(ConvGroups, GroupLayersMayUseWinograd) {
  GroupCase c;
  c.height = c.width = 32;
  fn::QuantOptions o;
  o.fold = fn::FoldMode::kOff;
  o.winograd = fn::WinogradMode::kOn;  // wherever faster (auto measures the accuracy first)
  const fn::NetProgram p = compile(c, "nv_full", o);
  const std::vector<const fn::NetLayer*> convs = conv_layers(p);
  ASSERT_EQ(convs.size(), 2U);
  for (const fn::NetLayer* l : convs) {
    EXPECT_TRUE(std::get<ConvLayer>(l->hw).winograd);
    EXPECT_EQ(l->macs, std::uint64_t{32} * 32 * 32 * 4 * 32);
  }
  EXPECT_EQ(p.network_macs(), nettest::group_network_macs(c));
}

// --winograd auto (firmware/net/winograd.hpp): each 3x3 layer measured both ways on the
// calibration images; Winograd kept exactly where its error is within the budget of direct's.
TEST(WinogradAuto, TheBudgetDecides) {
  GroupCase c;
  c.height = c.width = 32;
  c.groups = 1;
  const HwConfig hw = load_hw_config("nv_full");
  fn::CompiledNetwork net = fn::prepare_network(nettest::group_graph(c), hw);
  const models::graph::Tensor images = fn::random_images(net.plan, 2);
  const auto winograd_of = [&](double budget, fn::WinogradMeasure* m) {
    fn::QuantOptions o;
    o.fold = fn::FoldMode::kOff;
    o.winograd_budget = budget;
    fn::quantize_network(net, hw, images, o);
    const std::vector<const fn::NetLayer*> convs = conv_layers(net.program);
    EXPECT_EQ(convs.size(), 1U);
    EXPECT_TRUE(convs[0]->winograd_measure.has_value());
    if (convs[0]->winograd_measure) *m = *convs[0]->winograd_measure;
    return std::get<ConvLayer>(convs[0]->hw).winograd;
  };
  fn::WinogradMeasure loose, strict;
  EXPECT_TRUE(winograd_of(100.0, &loose));  // any error accepted
  EXPECT_TRUE(loose.accepted);
  EXPECT_GT(loose.direct_error, 0.0);
  EXPECT_LT(loose.direct_error, 0.05);                  // INT8 codes: a few percent at most
  EXPECT_GT(loose.winograd_error, loose.direct_error);  // PRA's 2 bits and wider weights
  // A budget just below the measured excess: direct.
  const double excess = loose.winograd_error / loose.direct_error - 1.0;
  EXPECT_FALSE(winograd_of(0.99 * excess, &strict));
  EXPECT_FALSE(strict.accepted);
  EXPECT_EQ(strict.winograd_error, loose.winograd_error);  // the same measurement
  EXPECT_TRUE(winograd_of(1.01 * excess, &strict));
}

// A dense-expanded grouped convolution (depthwise: 1 channel per group) never runs in Winograd.
TEST(WinogradAuto, DenseExpandedGroupsStayDirect) {
  GroupCase c;
  c.height = c.width = 32;
  c.channels = c.kernels = c.groups = 64;
  fn::QuantOptions o;
  o.fold = fn::FoldMode::kOff;
  o.winograd = fn::WinogradMode::kOn;
  o.conv_groups = false;
  const fn::NetProgram p = compile(c, "nv_full", o);
  for (const fn::NetLayer* l : conv_layers(p)) EXPECT_FALSE(std::get<ConvLayer>(l->hw).winograd);
}

// A group whose input exceeds the CBUF runs in bands (split.cpp): nv_small (128 KiB CBUF), 16
// channels of 256 x 255 in 2 groups of 8 (one atom: 255 * 256 * 8 = 510 KiB each). Every band is
// of its group (whole output: the group's 8 output channels), the bands of a group add up to its
// MACs.
TEST(ConvGroups, AGroupSplitsIntoBands) {
  GroupCase c;
  c.channels = c.kernels = 16;
  c.height = 255;
  c.width = 256;
  const fn::NetProgram p = compile(c, "nv_small", direct());
  const std::vector<const fn::NetLayer*> convs = conv_layers(p);
  ASSERT_GT(convs.size(), 2U);
  const firmware::FeatureSurface& out = p.outputs.at(0).surface;
  std::uint64_t group_macs[2] = {0, 0};
  for (const fn::NetLayer* l : convs) {
    ASSERT_EQ(l->groups, 2U);
    EXPECT_GT(l->bands, 1U);
    EXPECT_EQ(l->whole_output.address, out.address + std::uint64_t{l->group} * out.surface_stride);
    EXPECT_EQ(l->whole_output.channels, 8U);
    EXPECT_EQ(l->whole_output.height, 255U);
    group_macs[l->group] += l->macs;
  }
  EXPECT_EQ(convs.front()->group, 0U);
  EXPECT_EQ(convs.back()->group, 1U);
  EXPECT_EQ(group_macs[0], nettest::group_network_macs(c) / 2);
  EXPECT_EQ(group_macs[1], nettest::group_network_macs(c) / 2);
}

}  // namespace
}  // namespace octasim
