// Nearest upsampling (Resize, Upsample) and ShuffleNet's channel shuffle in the network compiler,
// without a device: the plan (one BDMA layer with the factors; refusals of non-integer factors,
// of coordinate modes that do not repeat each pixel, of a configuration without BDMA), the BDMA
// copies (one per phase over every C' surface where the surfaces are packed), the INT8
// calibration (the output keeps the input's clip), and the shuffle rewrite (a 1x1 Conv whose
// 0/1 weights permute the channels as the Reshape/Transpose/Reshape did). The device runs are
// resize_device_test.cpp.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/net/compiler.hpp"
#include "firmware/net/plan.hpp"
#include "firmware/net/rewrite.hpp"
#include "firmware/net/runtime.hpp"
#include "models/graph/graph.hpp"
#include "models/graph/passes.hpp"
#include "models/graph/reference.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::firmware::net {
namespace {

using models::graph::DType;
using models::graph::Tensor;
using nettest::error_of;
using nettest::GraphBuilder;
using nettest::int64_tensor;
using nettest::ints_attr;
using nettest::ramp;
using nettest::string_attr;

// x (1 x 8 x 4 x 4) -> relu(conv1x1) a (c channels) -> Resize by `scales` (or to `sizes`) -> y.
GraphBuilder resize_graph(std::int64_t c, std::vector<float> scales,
                          std::vector<std::int64_t> sizes = {}, const std::string& coord = "",
                          const std::string& nearest = "") {
  GraphBuilder b;
  b.input("x", {1, 8, 4, 4});
  b.constant("w", {c, 8, 1, 1}, ramp(static_cast<std::size_t>(c * 8)));
  b.node("Conv", "c0", {"x", "w"}, {"a0"});
  b.node("Relu", "r0", {"a0"}, {"a"});
  std::vector<std::string> in{"a", ""};
  if (sizes.empty()) {
    b.constant("scales", {4}, std::move(scales));
    in.push_back("scales");
  } else {
    b.graph().initializers["sizes"] = int64_tensor(std::move(sizes));
    in.push_back("");
    in.push_back("sizes");
  }
  auto& n = b.node("Resize", "up", in, {"y"});
  n.attributes["mode"] = string_attr("nearest");
  if (!coord.empty()) n.attributes["coordinate_transformation_mode"] = string_attr(coord);
  if (!nearest.empty()) n.attributes["nearest_mode"] = string_attr(nearest);
  b.output("y");
  return b;
}

TEST(ResizePlan, NearestByTwoIsOneBdmaLayer) {
  const NetPlan p =
      plan_network(resize_graph(16, {1, 1, 2, 2}, {}, "asymmetric", "floor").graph(), "nv_full");
  ASSERT_EQ(p.layers.size(), 2U);  // c0 + Relu, the Resize
  const PlannedLayer& l = p.layers[1];
  EXPECT_EQ(l.kind, LayerKind::kBdma);
  EXPECT_EQ(l.input, "a");
  EXPECT_EQ(l.output, "y");
  EXPECT_EQ(l.resize.scale_h, 2U);
  EXPECT_EQ(l.resize.scale_w, 2U);
  EXPECT_EQ(p.cubes.at("y").width, 8U);
  EXPECT_EQ(p.cubes.at("y").height, 8U);
}

TEST(ResizePlan, FactorsPerAxisAndDefaultModes) {
  // opset 13's defaults (half_pixel, round_prefer_floor) repeat each pixel for integer factors
  // too; sizes instead of scales; H x 3, W x 4.
  const NetPlan p = plan_network(resize_graph(16, {}, {1, 16, 12, 16}).graph(), "nv_full");
  ASSERT_EQ(p.layers.size(), 2U);
  EXPECT_EQ(p.layers[1].resize.scale_h, 3U);
  EXPECT_EQ(p.layers[1].resize.scale_w, 4U);
  // round_prefer_floor with asymmetric coordinates repeats by 2 but not by 3 (o = 3k + 2 rounds
  // up to k + 1).
  EXPECT_NO_THROW((void)plan_network(
      resize_graph(16, {1, 1, 2, 2}, {}, "asymmetric", "round_prefer_floor").graph(), "nv_full"));
  EXPECT_NE(error_of([] {
              (void)plan_network(
                  resize_graph(16, {1, 1, 3, 3}, {}, "asymmetric", "round_prefer_floor").graph(),
                  "nv_full");
            }).find("does not repeat each pixel 3 x 3 times"),
            std::string::npos);
}

TEST(ResizePlan, Refusals) {
  const auto refusal = [](GraphBuilder b) {
    return error_of([&] { (void)plan_network(b.graph(), "nv_full"); });
  };
  EXPECT_NE(refusal(resize_graph(16, {1, 1, 1.5F, 1.5F})).find("integer factors 1..4"),
            std::string::npos);
  EXPECT_NE(refusal(resize_graph(16, {1, 1, 8, 8})).find("integer factors 1..4"),
            std::string::npos);
  EXPECT_NE(
      refusal(resize_graph(16, {1, 1, 2, 2}, {}, "asymmetric", "ceil")).find("does not repeat"),
      std::string::npos);
  EXPECT_NE(refusal(resize_graph(16, {1, 2, 2, 2})).find("H and W of a 1 x C x H x W"),
            std::string::npos);
  // nv_small has no BDMA: the lowering names it.
  const std::string e = error_of([] {
    const HwConfig hw = load_hw_config("nv_small");
    CompiledNetwork net = prepare_network(resize_graph(16, {1, 1, 2, 2}).graph(), hw);
    QuantOptions o;
    quantize_network(net, hw, random_images(net.plan, 2, 3), o);
  });
  EXPECT_NE(e.find("runs on BDMA, which nv_small does not have"), std::string::npos) << e;
}

TEST(ResizeProgram, OneCopyPerPhaseAndTheInputsClip) {
  const HwConfig hw = load_hw_config("nv_full");
  CompiledNetwork net = prepare_network(resize_graph(48, {1, 1, 2, 2}).graph(), hw);
  QuantOptions o;
  quantize_network(net, hw, random_images(net.plan, 2, 3), o);
  const NetProgram& p = net.program;
  ASSERT_EQ(p.layers.size(), 2U);
  EXPECT_EQ(p.layers[1].engine, "BDMA");
  const auto& b = std::get<BdmaLayer>(p.layers[1].hw);
  EXPECT_EQ(b.scale_h, 2U);
  const std::vector<BdmaTransfer> copies = bdma_copies(b);
  ASSERT_EQ(copies.size(), 4U);  // 48 INT8 channels: 2 packed C' surfaces, one copy per phase
  EXPECT_EQ(device_records(p.layers[1]).size(), 4U);
  // Phase (dy, dx) = (1, 1): from the output's line 1, atom 1.
  EXPECT_EQ(copies[3].src, b.src.address);
  EXPECT_EQ(copies[3].dst, b.dst.address + b.dst.line_stride + 32);
  EXPECT_EQ(copies[3].line_bytes, 32U);
  EXPECT_EQ(copies[3].lines, 4U);
  EXPECT_EQ(copies[3].dst_line_stride, 64U);
  EXPECT_EQ(copies[3].surfaces, 8U);  // 4 lines x 2 C' surfaces
  EXPECT_EQ(copies[3].src_surface_stride, b.src.line_stride);
  EXPECT_EQ(copies[3].dst_surface_stride, 2 * b.dst.line_stride);
  // INT8: nearest upsampling moves codes, so the output has the input's quantization.
  EXPECT_EQ(p.table.at("y").clip, p.table.at("a").clip);
  EXPECT_EQ(p.table.at("y").is_unsigned, p.table.at("a").is_unsigned);
  // Surfaces not packed: one copy per C' surface and phase, up to the 20 slots.
  BdmaLayer loose = b;
  loose.src.surface_stride += 256;
  EXPECT_EQ(bdma_copies(loose).size(), 8U);
  loose.scale_h = loose.scale_w = 4;
  loose.dst.width *= 2;
  loose.dst.height *= 2;
  EXPECT_NE(error_of([&] { (void)bdma_copies(loose); }).find("one launch holds 20"),
            std::string::npos);
}

// x (1 x c x 3 x 3) -> Reshape (1, g, c/g, 3, 3) -> Transpose (0, 2, 1, 3, 4) -> Reshape back.
GraphBuilder shuffle_graph(std::int64_t c, std::int64_t g) {
  GraphBuilder b;
  b.input("x", {1, c, 3, 3});
  b.graph().initializers["split_shape"] = int64_tensor({1, g, c / g, 3, 3});
  b.graph().initializers["merge_shape"] = int64_tensor({1, -1, 3, 3});
  b.node("Reshape", "split", {"x", "split_shape"}, {"s"});
  b.node("Transpose", "swap", {"s"}, {"t"}).attributes["perm"] = ints_attr({0, 2, 1, 3, 4});
  b.node("Reshape", "merge", {"t", "merge_shape"}, {"y"});
  b.output("y");
  return b;
}

TEST(ChannelShuffle, BecomesAPermutationConv) {
  GraphBuilder b = shuffle_graph(12, 3);
  models::graph::Graph g = b.graph();
  std::vector<float> v(12 * 9);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  const Tensor x = Tensor::floats({1, 12, 3, 3}, v);
  const Tensor before = models::graph::run_reference(g, {{"x", x}}).at("y");
  EXPECT_EQ(rewrite_channel_shuffles(g), 1U);
  ASSERT_EQ(g.nodes.size(), 1U);
  EXPECT_EQ(g.nodes[0].op_type, "Conv");
  EXPECT_EQ(g.nodes[0].outputs[0], "y");
  EXPECT_EQ(before.f, models::graph::run_reference(g, {{"x", x}}).at("y").f);
  // Output channel j g + i is input channel i c/g + j: channel 1 (j 0, i 1) is channel 4.
  EXPECT_EQ(before.f[9], x.f[4 * 9]);
  const NetPlan p = plan_network(g, "nv_full");
  ASSERT_EQ(p.layers.size(), 1U);
  EXPECT_EQ(p.layers[0].kind, LayerKind::kConv);
}

TEST(ChannelShuffle, LeavesOtherPermutationsAlone) {
  GraphBuilder b = shuffle_graph(12, 3);
  models::graph::Graph g = b.graph();
  g.nodes[1].attributes["perm"] = ints_attr({0, 1, 2, 4, 3});
  EXPECT_EQ(rewrite_channel_shuffles(g), 0U);
  // The intermediate read elsewhere too: not rewritten.
  GraphBuilder b2 = shuffle_graph(12, 3);
  b2.output("t");
  models::graph::Graph g2 = b2.graph();
  EXPECT_EQ(rewrite_channel_shuffles(g2), 0U);
}

}  // namespace
}  // namespace octasim::firmware::net
