// Standalone Clip, LeakyRelu, average pooling that excludes padding and DepthToSpace in the
// compiler without a device: the layers and register operands they become, and the one-line
// refusals (node, op, why) of what the DLA cannot do. dla_ops_device_test.cpp runs them.
#include <cmath>
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "firmware/net/compiler.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::GraphError;
using models::graph::Tensor;
using nettest::float_attr;
using nettest::GraphBuilder;
using nettest::int_attr;

fn::CompiledNetwork compile(const models::graph::Graph& g, const char* config,
                            fn::NetPrecision precision) {
  const HwConfig hw = load_hw_config(config);
  fn::CompiledNetwork net = fn::prepare_network(g, hw);
  Tensor images = fn::random_images(net.plan, 2, 3);
  for (float& v : images.f) v = 4 * v - 2;  // [-2, 2): x's clip is about 2, step about 2/127
  fn::QuantOptions options;
  options.precision = precision;
  fn::quantize_network(net, hw, images, options);
  return net;
}

// The GraphError message of compiling `g`, or "" when it compiles.
std::string compile_error(const models::graph::Graph& g, const char* config,
                          fn::NetPrecision precision) {
  try {
    (void)compile(g, config, precision);
  } catch (const GraphError& e) {
    return e.what();
  }
  return "";
}

models::graph::Graph leaky(float alpha) {
  GraphBuilder b;
  b.input("x", {1, 8, 4, 4});
  b.node("LeakyRelu", "leaky", {"x"}, {"y"}).attributes["alpha"] = float_attr(alpha);
  b.output("y");
  return b.graph();
}

models::graph::Graph depth_to_space(std::int64_t channels, const char* mode) {
  GraphBuilder b;
  b.input("x", {1, channels, 3, 3});
  auto& d = b.node("DepthToSpace", "d2s", {"x"}, {"y"});
  d.attributes["blocksize"] = int_attr(2);
  d.attributes["mode"].kind = models::graph::Attribute::Kind::kString;
  d.attributes["mode"].s = mode;
  b.output("y");
  return b.graph();
}

// INT8 Clip: the bounds as codes of x's step, BS ALU MAX and BN ALU MIN; the output keeps x's
// step. Derived: round(-0.5 / s) and round(0.75 / s) with s = x's step.
TEST(DlaOps, ClipBoundsAreCodesOfTheInputStep) {
  GraphBuilder b;
  b.input("x", {1, 8, 4, 4});
  b.constant("lo", {}, {-0.5F});
  b.constant("hi", {}, {0.75F});
  b.node("Clip", "clip", {"x", "lo", "hi"}, {"y"});
  b.output("y");
  const fn::CompiledNetwork net = compile(b.graph(), "nv_full", fn::NetPrecision::kInt8);
  ASSERT_EQ(net.program.layers.size(), 1U);
  const auto& s = std::get<firmware::SdpLayer>(net.program.layers[0].hw);
  const double step = net.program.table.at("x").step();
  EXPECT_EQ(net.program.table.at("y").step(), step);
  ASSERT_TRUE(s.clamp_min && s.clamp_max);
  EXPECT_EQ(*s.clamp_min, static_cast<std::int16_t>(std::round(-0.5 / step)));
  EXPECT_EQ(*s.clamp_max, static_cast<std::int16_t>(std::round(0.75 / step)));
  EXPECT_FALSE(s.relu);
}

// INT8 LeakyRelu: alpha 0.1 as 26214 / 2^18 (the largest shift with the value within INT16).
TEST(DlaOps, LeakyReluSlopeIsAFixedPointRegister) {
  const fn::CompiledNetwork net = compile(leaky(0.1F), "nv_full", fn::NetPrecision::kInt8);
  const auto& s = std::get<firmware::SdpLayer>(net.program.layers.at(0).hw);
  ASSERT_TRUE(s.prelu);
  EXPECT_EQ(s.prelu->value, 26214);
  EXPECT_EQ(s.prelu->shift, 18U);
  EXPECT_FALSE(s.ew);
}

TEST(DlaOps, RefusesLeakyReluBeyondOneAtInt8) {
  const std::string e = compile_error(leaky(2.0F), "nv_full", fn::NetPrecision::kInt8);
  EXPECT_NE(e.find("LeakyRelu 'leaky'"), std::string::npos) << e;
  EXPECT_NE(e.find("|alpha| must be at most 1"), std::string::npos) << e;
  EXPECT_EQ(compile_error(leaky(2.0F), "nv_full", fn::NetPrecision::kFp16), "");
}

TEST(DlaOps, RefusesDepthToSpaceInCrdMode) {
  const std::string e =
      compile_error(depth_to_space(128, "CRD"), "nv_full", fn::NetPrecision::kInt8);
  EXPECT_NE(e.find("DepthToSpace 'd2s': DepthToSpace mode CRD is not supported"), std::string::npos)
      << e;
  EXPECT_EQ(compile_error(depth_to_space(128, "DCR"), "nv_full", fn::NetPrecision::kInt8), "");
}

TEST(DlaOps, RefusesDepthToSpaceWithoutRubikOrWholeAtoms) {
  const std::string none =
      compile_error(depth_to_space(128, "DCR"), "nv_small", fn::NetPrecision::kInt8);
  EXPECT_NE(none.find("DepthToSpace 'd2s': DepthToSpace runs on Rubik"), std::string::npos) << none;
  // 64 / 4 = 16 output channels: half a 32-byte INT8 atom.
  const std::string part =
      compile_error(depth_to_space(64, "DCR"), "nv_full", fn::NetPrecision::kInt8);
  EXPECT_NE(part.find("must be a multiple of 32"), std::string::npos) << part;
}

}  // namespace
}  // namespace octasim
