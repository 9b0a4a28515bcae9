// The squeeze-excitation Mul and channel slices in the network compiler, without a device: the
// plans (one SDP layer with a per-channel operand, operands in either order or through a Reshape
// of an N x C Gemm output; Split and Slice outputs as channel windows, a slice of a slice), the
// refusals (an operand of another shape, an Add by a per-channel tensor, a slice on H or W or of
// step 2), where a slice's surface starts (an atom boundary, or the atom holding its first
// channel: a padded layout), the SDP programming the lowering chooses (PER_KERNEL
// operand of s's surface, one byte at INT8 and two at FP16, the rescale in the output convertor)
// and the fixed point of the INT8 rescale. The device runs are se_slice_device_test.cpp.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/net/compiler.hpp"
#include "firmware/net/ew_fixed_point.hpp"
#include "firmware/net/plan.hpp"
#include "firmware/net/rewrite.hpp"
#include "models/graph/graph.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::firmware::net {
namespace {

using models::graph::DType;
using models::graph::Tensor;
using nettest::contains;
using nettest::conv1x1;
using nettest::error_of;
using nettest::GraphBuilder;
using nettest::int64_tensor;
using nettest::int_attr;
using nettest::ramp;

// x (1 x 8 x 4 x 4) -> a (C channels) -> GAP -> s (C channels, 1x1) -> Mul.
GraphBuilder se_graph(std::int64_t c, std::vector<std::string> mul_inputs) {
  GraphBuilder b;
  b.input("x", {1, 8, 4, 4});
  conv1x1(b, "c0", "x", "a", 8, c);
  b.node("GlobalAveragePool", "gap", {"a"}, {"p"});
  conv1x1(b, "fc", "p", "s", c, c);
  b.node("Mul", "se", std::move(mul_inputs), {"y"});
  b.output("y");
  return b;
}

TEST(SeMulPlan, OneSdpLayerWithThePerChannelOperand) {
  for (const auto& order :
       {std::vector<std::string>{"a", "s"}, std::vector<std::string>{"s", "a"}}) {
    const NetPlan p = plan_network(se_graph(16, order).graph(), "nv_full");
    ASSERT_EQ(p.layers.size(), 4U);  // c0, gap, fc, the Mul
    const PlannedLayer& l = p.layers[3];
    EXPECT_EQ(l.kind, LayerKind::kSdp);
    EXPECT_EQ(l.input, "a") << order[0];
    EXPECT_EQ(l.output, "y");
    EXPECT_EQ(l.sdp.ew, EwOp::kMul);
    EXPECT_EQ(l.sdp.operand, "s");
    EXPECT_TRUE(l.sdp.operand_per_channel);
    EXPECT_EQ(p.cubes.at("s").width, 1U);
    EXPECT_EQ(p.cubes.at("s").channels, 16U);
  }
}

TEST(SeMulPlan, OperandThroughAReshapeOfAGemmOutput) {
  // PyTorch's SE with Linear layers: s = Linear(Flatten(GAP(a))).view(N, C, 1, 1).
  GraphBuilder b;
  b.input("x", {1, 8, 4, 4});
  conv1x1(b, "c0", "x", "a", 8, 16);
  b.node("GlobalAveragePool", "gap", {"a"}, {"p"});
  b.node("Flatten", "flat", {"p"}, {"f"});
  b.constant("fc_W", {16, 16}, ramp(256));
  b.node("Gemm", "fc", {"f", "fc_W"}, {"g"}).attributes["transB"] = int_attr(1);
  b.graph().initializers["shape"] = int64_tensor({-1, 16, 1, 1});
  b.node("Reshape", "view", {"g", "shape"}, {"s"});
  b.node("Mul", "se", {"a", "s"}, {"y"});
  b.output("y");
  const NetPlan p = plan_network(b.graph(), "nv_full");
  ASSERT_EQ(p.layers.size(), 4U);           // c0, gap, fc, the Mul
  EXPECT_EQ(p.layers[3].sdp.operand, "g");  // the tensor the view stands for
  EXPECT_TRUE(p.layers[3].sdp.operand_per_channel);
  // ... and it lowers: the Gemm's 1 x 16 output is a 1x1x16 surface.
  const HwConfig hw = load_hw_config("nv_full");
  CompiledNetwork net = prepare_network(b.graph(), hw);
  QuantOptions o;
  quantize_network(net, hw, random_images(net.plan, 2, 3), o);
  const auto& mul = std::get<SdpLayer>(net.program.layers.back().hw);
  ASSERT_TRUE(mul.ew.has_value());
  EXPECT_TRUE(mul.ew->per_channel);
  EXPECT_EQ(mul.ew->surface.channels, 16U);
}

TEST(SeMulPlan, Refusals) {
  // An operand of neither the output's shape nor N x C x 1 x 1: a 1-kernel convolution's output.
  GraphBuilder b;
  b.input("x", {1, 8, 4, 4});
  conv1x1(b, "c0", "x", "a", 8, 16);
  conv1x1(b, "c1", "x", "q", 8, 1);
  b.node("Mul", "se", {"a", "q"}, {"y"});
  b.output("y");
  const std::string e = error_of([&] { (void)plan_network(b.graph(), "nv_full"); });
  EXPECT_TRUE(contains(e,
                       "Mul 'se': operand 'q' of shape 1x1x4x4 must be a device tensor of "
                       "shape 1x16x4x4 or, for Mul, 1x16x1x1 (one value per channel)"))
      << e;
  // An Add of a per-channel tensor is no Mul.
  GraphBuilder a = se_graph(16, {"a", "s"});
  a.graph().nodes.back().op_type = "Add";
  const std::string e2 = error_of([&] { (void)plan_network(a.graph(), "nv_full"); });
  EXPECT_TRUE(contains(e2,
                       "Add 'se': operand 's' of shape 1x16x1x1 must be a device tensor of "
                       "shape 1x16x4x4"))
      << e2;
  EXPECT_FALSE(contains(e2, "for Mul")) << e2;
}

// The Mul's SDP layer as the lowering programs it, and as models/ runs it.
TEST(SeMulLowering, PerKernelOperandOfTheScalesSurface) {
  for (const NetPrecision precision : {NetPrecision::kInt8, NetPrecision::kFp16}) {
    const HwConfig hw = load_hw_config("nv_full");
    CompiledNetwork net = prepare_network(se_graph(40, {"a", "s"}).graph(), hw);
    QuantOptions o;
    o.precision = precision;
    quantize_network(net, hw, random_images(net.plan, 3, 5), o, nullptr, PlacementOptions{false});
    const NetProgram& prog = net.program;
    ASSERT_EQ(prog.layers.size(), 4U);
    const auto& mul = std::get<SdpLayer>(prog.layers[3].hw);
    const FeatureSurface& s = std::get<ConvLayer>(prog.layers[2].hw).dst;
    ASSERT_TRUE(mul.ew.has_value());
    EXPECT_EQ(mul.ew->unit, SdpEwUnit::kBn);
    EXPECT_EQ(mul.ew->surface.address, s.address);
    const models::ops::SdpConfig c = sdp_model_config(mul, prog.hw.atom_bytes);
    EXPECT_TRUE(c.nrdma.enabled);
    EXPECT_EQ(c.nrdma.mode, models::ops::SdpDataMode::kPerChannel);
    EXPECT_EQ(c.nrdma.use, models::ops::SdpDataUse::kMul);
    EXPECT_EQ(c.nrdma.base, s.address);
    EXPECT_FALSE(c.bn.mul_bypass);
    EXPECT_EQ(c.bn.mul_src, models::ops::SdpOperandSource::kMemory);
    EXPECT_EQ(c.bn.mul_shift, 0);
    if (precision == NetPrecision::kFp16) {
      EXPECT_EQ(c.nrdma.bytes_per_component, 2U);
      EXPECT_EQ(c.cvt.scale, 1);
      continue;
    }
    EXPECT_EQ(c.nrdma.bytes_per_component, 1U);
    // The output convertor brings q_x q_s (step s_a s_s) to the output's step, with 15 bits.
    const double f =
        prog.table.at("a").step() * prog.table.at("s").step() / prog.table.at("y").step();
    const double got = c.cvt.scale / std::ldexp(1.0, c.cvt.shift);
    EXPECT_GE(c.cvt.scale, 1 << 14);
    EXPECT_LE(std::abs(got - f), f * std::ldexp(1.0, -15)) << got << " vs " << f;
    EXPECT_EQ(c.cvt.offset, 0);
  }
}

TEST(SeMulLowering, Int4KeepsEightBitProductCodes) {
  // At int4 the product still gets 8-bit codes: after BN's multiplier and the output convertor
  // no unit is left to clamp it to 4-bit ones (calibrate.cpp's sdp_code_format).
  const HwConfig hw = load_hw_config("nv_full");
  CompiledNetwork net = prepare_network(se_graph(16, {"a", "s"}).graph(), hw);
  QuantOptions o;
  o.precision = NetPrecision::kInt4;
  quantize_network(net, hw, random_images(net.plan, 2, 3), o);
  EXPECT_EQ(net.program.table.at("a").bits, 4);  // a ReLU convolution's output: 4-bit codes
  EXPECT_EQ(net.program.table.at("y").bits, 8);
  EXPECT_FALSE(net.program.table.at("y").is_unsigned);  // no ReLU after the Mul: signed codes
}

// The fixed point against exact arithmetic over every pair of INT8 codes: the device's code
// round_away(q_x q_s m / 2^t) is within 1/2 + 2^-7 of the exact z = q_x q_s f.
TEST(SeMulFixedPoint, EveryCodePairWithinTheBound) {
  for (const double f : {1.0 / 127, 0.0123, 0.5, 0.99, 1.0, 3.7, 250.0}) {
    const ChannelMulFixedPoint p = channel_mul_fixed_point(f, 1.0, 1.0, "t");
    ASSERT_GE(p.out_mul, 1 << 14) << f;
    EXPECT_LE(std::abs(p.out_mul / std::ldexp(1.0, static_cast<int>(p.out_shift)) - f),
              f * std::ldexp(1.0, -15));
    double worst = 0.0;
    for (int x = -128; x <= 127; ++x) {
      for (int s = -128; s <= 127; ++s) {
        const double z = double{1.0 * x * s} * f;
        if (std::abs(z) > 256) continue;  // saturates either way
        const std::int64_t prod = std::int64_t{x} * s * p.out_mul;
        const double q = static_cast<double>(prod) / std::ldexp(1.0, static_cast<int>(p.out_shift));
        const double code = q < 0 ? -std::floor(-q + 0.5) : std::floor(q + 0.5);
        worst = std::max(worst, std::abs(code - z));
        EXPECT_LE(std::abs(q - z), p.bound(z) + 1e-12);
      }
    }
    EXPECT_LE(worst, 0.5 + std::ldexp(1.0, -7)) << f;
  }
  const std::string e = error_of([] { (void)channel_mul_fixed_point(1.0, 1.0, 1e-5, "Mul 'm'"); });
  EXPECT_TRUE(contains(e, "Mul 'm'")) << e;
}

// x -> a (64 channels) -> Split [32, 32] -> a1, a2; Slice(a, ...) -> t.
GraphBuilder slice_graph(std::vector<std::int64_t> starts, std::vector<std::int64_t> ends,
                         std::vector<std::int64_t> axes, std::vector<std::int64_t> steps = {}) {
  GraphBuilder b;
  b.input("x", {1, 8, 4, 4});
  conv1x1(b, "c0", "x", "a", 8, 64);
  b.graph().initializers["halves"] = int64_tensor({32, 32});
  b.node("Split", "split", {"a", "halves"}, {"a1", "a2"}).attributes["axis"] = int_attr(1);
  b.graph().initializers["starts"] = int64_tensor(std::move(starts));
  b.graph().initializers["ends"] = int64_tensor(std::move(ends));
  b.graph().initializers["axes"] = int64_tensor(std::move(axes));
  std::vector<std::string> in{"a", "starts", "ends", "axes"};
  if (!steps.empty()) {
    b.graph().initializers["steps"] = int64_tensor(std::move(steps));
    in.push_back("steps");
  }
  b.node("Slice", "take", in, {"t"});
  conv1x1(b, "c1", "a2", "y", 32, 8);
  conv1x1(b, "c2", "t", "z", 8, 8);
  b.output("y").output("z");
  return b;
}

TEST(ChannelSlicePlan, WindowsOfTheInputAndNoLayer) {
  GraphBuilder b = slice_graph({40}, {48}, {1});
  const NetPlan p = plan_network(b.graph(), "nv_full");
  ASSERT_EQ(p.layers.size(), 3U);  // c0, c1, c2
  EXPECT_EQ(p.slices.at("a1").source, "a");
  EXPECT_EQ(p.slices.at("a1").first, 0U);
  EXPECT_EQ(p.slices.at("a2").first, 32U);
  EXPECT_EQ(p.slices.at("t").first, 40U);
  EXPECT_EQ(p.cubes.at("a2").channels, 32U);
  EXPECT_EQ(p.cubes.at("t").channels, 8U);
  EXPECT_EQ(p.layers[1].input, "a2");
  // Negative starts count from the end; a slice of a slice is a window of the first's source.
  GraphBuilder n = slice_graph({-24}, {-16}, {-3});
  EXPECT_EQ(plan_network(n.graph(), "nv_full").slices.at("t").first, 40U);
  GraphBuilder s;
  s.input("x", {1, 8, 4, 4});
  conv1x1(s, "c0", "x", "a", 8, 64);
  s.graph().initializers["h"] = int64_tensor({32, 32});
  s.node("Split", "split", {"a", "h"}, {"a1", "a2"}).attributes["axis"] = int_attr(1);
  s.graph().initializers["q"] = int64_tensor({16, 16});
  s.node("Split", "split2", {"a2", "q"}, {"b1", "b2"}).attributes["axis"] = int_attr(1);
  conv1x1(s, "c1", "b2", "y", 16, 8);
  s.output("y");
  const NetPlan ps = plan_network(s.graph(), "nv_full");
  EXPECT_EQ(ps.slices.at("b2").source, "a");
  EXPECT_EQ(ps.slices.at("b2").first, 48U);
}

TEST(ChannelSlicePlan, Refusals) {
  const auto planned = [](GraphBuilder b) {
    return error_of([&] { (void)plan_network(b.graph(), "nv_full"); });
  };
  // On H: the DLA's surfaces cannot be cut in height by a view (a CONV would read it wrongly).
  GraphBuilder h = slice_graph({0}, {2}, {2});
  h.graph().nodes.pop_back();  // c2 reads t with 8 channels: drop it, keep t a graph output
  h.graph().nodes.pop_back();
  h.graph().outputs.back().name = "t";
  std::string e = planned(h);
  EXPECT_TRUE(contains(e,
                       "Slice 'take': Slice along axis 2 of 1x64x4x4: the DLA takes channel "
                       "slices only (axis 1)"))
      << e;
  GraphBuilder w = slice_graph({1}, {3}, {3});
  w.graph().nodes.pop_back();
  w.graph().nodes.pop_back();
  w.graph().outputs.back().name = "t";
  e = planned(w);
  EXPECT_TRUE(contains(e, "Slice 'take': Slice along axis 3")) << e;
  e = planned(slice_graph({32}, {48}, {1}, {2}));
  EXPECT_TRUE(contains(e, "Slice 'take': Slice with step 2")) << e;
}

TEST(ChannelSliceLowering, AWindowFromTheAtomHoldingTheFirstChannel) {
  // Channels [40, 48) of a's 64: channel 40 starts an atom of 8 INT8 channels (nv_small) — a
  // dense surface 5 atoms on — but not one of 32 (nv_full INT8) or 16 (FP16): there the window
  // starts at the atom holding channel 40 (1, resp. 2) and the slice's channels sit 8 lanes in.
  struct Case {
    const char* config;
    NetPrecision precision;
    std::uint32_t atom_channels, first_atom, offset;
  };
  for (const Case& k : {Case{"nv_small", NetPrecision::kInt8, 8, 5, 0},
                        Case{"nv_full", NetPrecision::kInt8, 32, 1, 8},
                        Case{"nv_full", NetPrecision::kFp16, 16, 2, 8}}) {
    const HwConfig hw = load_hw_config(k.config);
    CompiledNetwork net = prepare_network(slice_graph({40}, {48}, {1}).graph(), hw);
    QuantOptions o;
    o.precision = k.precision;
    quantize_network(net, hw, random_images(net.plan, 2, 3), o, nullptr, PlacementOptions{false});
    const NetProgram& prog = net.program;
    ASSERT_EQ(prog.layers.size(), 3U) << k.config;  // c0, c1, c2
    const auto& c0 = std::get<ConvLayer>(prog.layers[0].hw);
    const auto& c1 = std::get<ConvLayer>(prog.layers[1].hw);
    const auto& c2 = std::get<ConvLayer>(prog.layers[2].hw);
    EXPECT_EQ(c0.dst.channels, 64U);
    // a2 = [32, 64): an atom boundary everywhere.
    EXPECT_EQ(c1.src.address, c0.dst.address + 32 / k.atom_channels * c0.dst.surface_stride);
    EXPECT_EQ(c1.src.channels, 32U);
    EXPECT_EQ(c2.src.address, c0.dst.address + k.first_atom * c0.dst.surface_stride) << k.config;
    EXPECT_EQ(c2.src.channels, k.offset + 8) << k.config;  // the lanes before the slice's, too
    EXPECT_EQ(c2.src.line_stride, c0.dst.line_stride);
    EXPECT_EQ(c2.src.surface_stride, c0.dst.surface_stride);
    // The convolution reading it multiplies the lanes before the slice's by zero weights.
    EXPECT_EQ(c2.kernels, 8U);
  }
}

TEST(ChannelSliceLowering, ASplitOutputConcatenatedIsCopied) {
  GraphBuilder b;
  b.input("x", {1, 8, 4, 4});
  conv1x1(b, "c0", "x", "a", 8, 64);
  b.graph().initializers["halves"] = int64_tensor({32, 32});
  b.node("Split", "split", {"a", "halves"}, {"a1", "a2"}).attributes["axis"] = int_attr(1);
  conv1x1(b, "c1", "a2", "b", 32, 32);
  b.node("Concat", "cat", {"a1", "b"}, {"cat"}).attributes["axis"] = int_attr(1);
  b.output("cat");
  models::graph::Graph g = b.graph();
  EXPECT_EQ(insert_concat_copies(g), 1U);
  const NetPlan p = plan_network(g, "nv_full");
  ASSERT_EQ(p.layers.size(), 3U);  // c0, c1, the copy
  EXPECT_EQ(p.layers[2].input, "a1");
  EXPECT_EQ(p.layers[2].kind, LayerKind::kSdp);
  // Without the copy the planner refuses naming the Concat.
  const std::string e = error_of([&] { (void)plan_network(b.graph(), "nv_full"); });
  EXPECT_TRUE(contains(e, "Concat 'cat': input 'a1' is a channel slice of 'a'")) << e;
}

}  // namespace
}  // namespace octasim::firmware::net
