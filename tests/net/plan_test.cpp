// firmware/net/plan.hpp: hand-built graphs cut into DLA layers — what is fused into a
// convolution (Relu, Clip(0, c), a MatMul's bias Add), what is only a view (Flatten, Reshape to
// 1 x F) — and the refusals, each naming the node.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/net/plan.hpp"
#include "net_test_graph.hpp"

namespace octasim::firmware::net {
namespace {

using models::graph::GraphError;
using nettest::contains;
using nettest::GraphBuilder;
using nettest::int_attr;
using nettest::ints_attr;
using nettest::ramp;

// The GraphError message of planning `g`, or "" when it plans.
std::string plan_error(const models::graph::Graph& g) {
  try {
    (void)plan_network(g, "nv_small");
  } catch (const GraphError& e) {
    return e.what();
  }
  return "";
}

// x [1, 3, 8, 8] -> Conv 'conv1' (4 kernels 3x3, pads 1) -> c1.
GraphBuilder conv_graph() {
  GraphBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.constant("W", {4, 3, 3, 3}, ramp(4 * 3 * 3 * 3));
  b.constant("B", {4}, {0.1F, -0.2F, 0.3F, -0.4F});
  auto& conv = b.node("Conv", "conv1", {"x", "W", "B"}, {"c1"});
  conv.attributes["kernel_shape"] = ints_attr({3, 3});
  conv.attributes["pads"] = ints_attr({1, 1, 1, 1});
  return b;
}

TEST(PlanNetwork, ConvReluFused) {
  GraphBuilder b = conv_graph();
  b.node("Relu", "relu1", {"c1"}, {"y"});
  b.output("y");
  const NetPlan p = plan_network(b.graph(), "nv_small");
  EXPECT_EQ(p.input, "x");
  EXPECT_EQ(p.input_shape, (std::vector<std::int64_t>{1, 3, 8, 8}));
  ASSERT_EQ(p.layers.size(), 1U);
  const PlannedLayer& l = p.layers[0];
  EXPECT_EQ(l.kind, LayerKind::kConv);
  EXPECT_EQ(l.nodes, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(l.input, "x");
  EXPECT_EQ(l.output, "y");
  EXPECT_TRUE(l.conv.relu);
  EXPECT_EQ(l.conv.clip_max, 0.0);
  EXPECT_FALSE(l.conv.fully_connected);
  EXPECT_EQ(l.conv.weight, "W");
  EXPECT_EQ(l.conv.bias, "B");
  EXPECT_EQ(l.conv.kernel_w, 3U);
  EXPECT_EQ(l.conv.kernel_h, 3U);
  EXPECT_EQ(l.conv.stride_x, 1U);
  EXPECT_EQ(l.conv.pad_left, 1U);
  EXPECT_EQ(l.conv.pad_right, 1U);
  EXPECT_EQ(l.conv.pad_top, 1U);
  EXPECT_EQ(l.conv.pad_bottom, 1U);
  // The device's cube is W x H x C of ONNX's NCHW.
  ASSERT_EQ(p.cubes.count("y"), 1U);
  EXPECT_EQ(p.cubes.at("y").width, 8U);
  EXPECT_EQ(p.cubes.at("y").height, 8U);
  EXPECT_EQ(p.cubes.at("y").channels, 4U);
  EXPECT_EQ(p.cubes.at("x").channels, 3U);
  EXPECT_EQ(layer_nodes_label(b.graph(), l), "Conv 'conv1' + Relu 'relu1'");
  EXPECT_STREQ(layer_engine(l.kind), "CONV");
  EXPECT_EQ(p.outputs, (std::vector<std::string>{"y"}));
}

TEST(PlanNetwork, ReluNotFusedWhenTheConvOutputIsAlsoReadElsewhere) {
  // c1 is a graph output as well: the ReLU cannot replace it, so it is its own SDP layer.
  GraphBuilder b = conv_graph();
  b.node("Relu", "relu1", {"c1"}, {"y"});
  b.output("c1");
  b.output("y");
  const NetPlan p = plan_network(b.graph(), "nv_small");
  ASSERT_EQ(p.layers.size(), 2U);
  EXPECT_EQ(p.layers[0].kind, LayerKind::kConv);
  EXPECT_FALSE(p.layers[0].conv.relu);
  EXPECT_EQ(p.layers[0].output, "c1");
  EXPECT_EQ(p.layers[1].kind, LayerKind::kSdp);
  EXPECT_EQ(p.layers[1].input, "c1");
  EXPECT_STREQ(layer_engine(p.layers[1].kind), "SDP");
}

TEST(PlanNetwork, ConvClip0To6Fused) {
  GraphBuilder b = conv_graph();
  b.constant("lo", {}, {0.0F});
  b.constant("hi", {}, {6.0F});
  b.node("Clip", "relu6", {"c1", "lo", "hi"}, {"y"});
  b.output("y");
  const NetPlan p = plan_network(b.graph(), "nv_small");
  ASSERT_EQ(p.layers.size(), 1U);
  EXPECT_EQ(p.layers[0].nodes, (std::vector<std::size_t>{0, 1}));
  EXPECT_TRUE(p.layers[0].conv.relu);
  EXPECT_DOUBLE_EQ(p.layers[0].conv.clip_max, 6.0);
  EXPECT_EQ(p.layers[0].output, "y");
}

TEST(PlanNetwork, MatMulAddFused) {
  GraphBuilder b;
  b.input("x", {1, 16});
  b.constant("Bm", {16, 4}, ramp(64));
  b.constant("bias", {4}, {1.0F, 2.0F, 3.0F, 4.0F});
  b.node("MatMul", "mm", {"x", "Bm"}, {"t"});
  b.node("Add", "add", {"bias", "t"}, {"y"});  // the bias on either side
  b.output("y");
  const NetPlan p = plan_network(b.graph(), "nv_small");
  ASSERT_EQ(p.layers.size(), 1U);
  const PlannedLayer& l = p.layers[0];
  EXPECT_EQ(l.kind, LayerKind::kConv);
  EXPECT_TRUE(l.conv.fully_connected);
  EXPECT_FALSE(l.conv.transpose_b);  // MatMul's B is K x N
  EXPECT_EQ(l.conv.weight, "Bm");
  EXPECT_EQ(l.conv.bias, "bias");
  EXPECT_EQ(l.nodes, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(l.output, "y");
  EXPECT_FALSE(l.conv.relu);
  // A 1 x 16 input is a 1x1x16 cube; the kernel covers it.
  EXPECT_EQ(l.conv.kernel_w, 1U);
  EXPECT_EQ(l.conv.kernel_h, 1U);
  EXPECT_EQ(p.cubes.at("x").channels, 16U);
  EXPECT_EQ(p.cubes.at("y").channels, 4U);
  EXPECT_EQ(p.cubes.count("t"), 0U);  // fused away: never on the device
}

// x [1, 2, 4, 4] -> MaxPool 2x2/2 'pool' -> p [1, 2, 2, 2].
GraphBuilder pool_graph() {
  GraphBuilder b;
  b.input("x", {1, 2, 4, 4});
  auto& pool = b.node("MaxPool", "pool", {"x"}, {"p"});
  pool.attributes["kernel_shape"] = ints_attr({2, 2});
  pool.attributes["strides"] = ints_attr({2, 2});
  return b;
}

void expect_fc_over_pool(const NetPlan& p, const std::string& view) {
  ASSERT_EQ(p.layers.size(), 2U);
  EXPECT_EQ(p.layers[0].kind, LayerKind::kPool);
  EXPECT_EQ(p.layers[0].pool.kind, PoolKind::kMax);
  EXPECT_EQ(p.layers[0].pool.kernel_w, 2U);
  EXPECT_EQ(p.layers[0].pool.stride_y, 2U);
  const PlannedLayer& fc = p.layers[1];
  EXPECT_TRUE(fc.conv.fully_connected);
  EXPECT_TRUE(fc.conv.transpose_b);
  // The Gemm reads the pool's surface through the view: its kernel covers the 2x2x2 cube.
  EXPECT_EQ(fc.input, "p");
  EXPECT_EQ(fc.conv.kernel_w, 2U);
  EXPECT_EQ(fc.conv.kernel_h, 2U);
  ASSERT_EQ(p.views.count(view), 1U);
  EXPECT_EQ(p.views.at(view), "p");
  EXPECT_EQ(p.resolve(view), "p");
  EXPECT_EQ(p.cubes.count(view), 0U);  // a view has no surface of its own
  EXPECT_EQ(p.shapes.at(view), (std::vector<std::int64_t>{1, 8}));
}

TEST(PlanNetwork, FlattenIsAViewFeedingGemm) {
  GraphBuilder b = pool_graph();
  b.node("Flatten", "flat", {"p"}, {"f"});
  b.constant("Bg", {3, 8}, ramp(24));
  b.constant("Cg", {3}, {0.5F, 0.0F, -0.5F});
  b.node("Gemm", "fc", {"f", "Bg", "Cg"}, {"y"}).attributes["transB"] = int_attr(1);
  b.output("y");
  const NetPlan p = plan_network(b.graph(), "nv_small");
  expect_fc_over_pool(p, "f");
}

TEST(PlanNetwork, ReshapeTo1xMinus1IsAView) {
  GraphBuilder b = pool_graph();
  b.graph().initializers["shape"] =
      models::graph::Tensor::ints(models::graph::DType::kInt64, {2}, {1, -1});
  b.node("Reshape", "rs", {"p", "shape"}, {"f"});
  b.constant("Bg", {3, 8}, ramp(24));
  b.node("Gemm", "fc", {"f", "Bg"}, {"y"}).attributes["transB"] = int_attr(1);
  b.output("y");
  const NetPlan p = plan_network(b.graph(), "nv_small");
  expect_fc_over_pool(p, "f");
  EXPECT_TRUE(p.layers[1].conv.bias.empty());
}

TEST(PlanNetwork, RefusesSoftmaxNamingTheNode) {
  GraphBuilder b;
  b.input("x", {1, 8});
  b.constant("Bg", {4, 8}, ramp(32));
  b.node("Gemm", "fc", {"x", "Bg"}, {"logits"}).attributes["transB"] = int_attr(1);
  b.node("Softmax", "prob", {"logits"}, {"y"});
  b.output("y");
  const std::string msg = plan_error(b.graph());
  EXPECT_TRUE(contains(msg, "Softmax 'prob'")) << msg;
  EXPECT_TRUE(contains(msg, "nv_small")) << msg;
  EXPECT_TRUE(contains(msg, "not supported")) << msg;
}

TEST(PlanNetwork, PlansGroupedConvolutionAndRefusesAGroupThatDoesNotDivide) {
  GraphBuilder b;
  b.input("x", {1, 4, 6, 6});
  b.constant("W", {4, 2, 3, 3}, ramp(72));
  auto& conv = b.node("Conv", "gconv", {"x", "W"}, {"y"});
  conv.attributes["group"] = int_attr(2);
  b.output("y");
  const NetPlan p = plan_network(b.graph(), "nv_small");
  ASSERT_EQ(p.layers.size(), 1U);
  EXPECT_EQ(p.layers[0].conv.groups, 2U);
  // 4 channels in 3 groups: refused naming the node and the group.
  GraphBuilder bad;
  bad.input("x", {1, 4, 6, 6});
  bad.constant("W", {3, 1, 3, 3}, ramp(27));
  bad.node("Conv", "gconv", {"x", "W"}, {"y"}).attributes["group"] = int_attr(3);
  bad.output("y");
  const std::string msg = plan_error(bad.graph());
  EXPECT_TRUE(contains(msg, "Conv 'gconv'")) << msg;
  EXPECT_TRUE(contains(msg, "3 groups")) << msg;  // shape inference finds it first
}

GraphBuilder padded_average_pool(std::int64_t count_include_pad) {
  GraphBuilder b;
  b.input("x", {1, 2, 6, 6});
  auto& pool = b.node("AveragePool", "ap", {"x"}, {"y"});
  pool.attributes["kernel_shape"] = ints_attr({3, 3});
  pool.attributes["pads"] = ints_attr({1, 1, 1, 1});
  pool.attributes["count_include_pad"] = int_attr(count_include_pad);
  b.output("y");
  return b;
}

TEST(PlanNetwork, MarksPaddedAveragePoolExcludingThePad) {
  // count_include_pad=0 with padding: PDP sums and SDP divides by each window's real elements
  // (program.cpp, FP16), so the plan marks the layer.
  const NetPlan ex = plan_network(padded_average_pool(0).graph(), "nv_full");
  ASSERT_EQ(ex.layers.size(), 1U);
  EXPECT_TRUE(ex.layers[0].pool.exclude_pad);
  // PDP divides by the whole kernel: counting the pad is what it does, so that one needs no SDP.
  const NetPlan p = plan_network(padded_average_pool(1).graph(), "nv_small");
  ASSERT_EQ(p.layers.size(), 1U);
  EXPECT_EQ(p.layers[0].pool.kind, PoolKind::kAverage);
  EXPECT_FALSE(p.layers[0].pool.exclude_pad);
  EXPECT_EQ(p.layers[0].pool.pad_left, 1U);
  EXPECT_STREQ(layer_engine(p.layers[0].kind), "PDP");
}

TEST(PlanNetwork, RefusesAFlattenedViewReadByALayerOtherThanGemm) {
  GraphBuilder b = pool_graph();
  b.node("Flatten", "flat", {"p"}, {"f"});
  b.node("Relu", "r", {"f"}, {"y"});
  b.output("y");
  const std::string msg = plan_error(b.graph());
  EXPECT_TRUE(contains(msg, "Relu 'r'")) << msg;
  EXPECT_TRUE(contains(msg, "flattened view")) << msg;
}

TEST(PlanNetwork, RefusesAFlattenOutputReadByAConv) {
  // A 1 x 4 tensor is no image: whichever stage sees it (shape inference or the planner),
  // the refusal names the Conv.
  GraphBuilder b;
  b.input("x", {1, 4, 1, 1});
  b.node("Flatten", "flat", {"x"}, {"f"});
  b.constant("W", {2, 4, 1, 1}, ramp(8));
  b.node("Conv", "conv", {"f", "W"}, {"y"});
  b.output("y");
  const std::string msg = plan_error(b.graph());
  EXPECT_TRUE(contains(msg, "Conv 'conv'")) << msg;
}

TEST(PlanNetwork, RefusesTwoDataInputs) {
  GraphBuilder b;
  b.input("x", {1, 4, 2, 2});
  b.input("z", {1, 4, 2, 2});
  b.node("Add", "add", {"x", "z"}, {"y"});
  b.output("y");
  const std::string msg = plan_error(b.graph());
  EXPECT_TRUE(contains(msg, "2 data inputs")) << msg;
}

TEST(PlanNetwork, RefusesConvWeightsThatAreNotConstant) {
  // The weights arrive as a second graph input (as in ONNX's test_conv_with_strides_padding):
  // the refusal should say what is wrong with which node, not only count the inputs.
  GraphBuilder b;
  b.input("x", {1, 1, 5, 5});
  b.input("W", {1, 1, 3, 3});
  b.node("Conv", "conv", {"x", "W"}, {"y"}).attributes["kernel_shape"] = ints_attr({3, 3});
  b.output("y");
  const std::string msg = plan_error(b.graph());
  EXPECT_TRUE(contains(msg, "Conv 'conv'")) << msg;
  EXPECT_TRUE(contains(msg, "must be a constant")) << msg;
}

}  // namespace
}  // namespace octasim::firmware::net
