// The residual Add fused into a convolution (firmware/net/plan_fuse.cpp): ResNet's identity and
// projection blocks (the Add goes to whichever convolution is planned after the other addend
// exists), MobileNetV2's Add without a ReLU, and where it must not fuse (the convolution already
// has its ReLU, its output has another reader, the other addend comes later). Graphs go through
// the compiler's passes first (BatchNormalization folded into the convolutions), as
// prepare_network runs them.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/net/compiler.hpp"
#include "firmware/net/plan.hpp"
#include "residual_graphs.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::firmware::net {
namespace {

using nettest::GraphBuilder;
using nettest::ResidualBuilder;

CompiledNetwork prepared(const models::graph::Graph& g) {
  return prepare_network(g, load_hw_config("nv_full"));
}

std::vector<std::string> labels(const CompiledNetwork& n) {
  std::vector<std::string> v;
  for (const PlannedLayer& l : n.plan.layers) v.push_back(layer_nodes_label(n.graph, l));
  return v;
}

TEST(PlanResidual, IdentityBlockAddFusedIntoTheSecondConv) {
  const CompiledNetwork n = prepared(nettest::basic_block_graph(false));
  ASSERT_EQ(n.plan.layers.size(), 2U);
  EXPECT_EQ(labels(n), (std::vector<std::string>{"Conv 'b.conv1' + Relu 'b.relu1'",
                                                 "Conv 'b.conv2' + Add 'b.add' + Relu 'b.relu'"}));
  const PlannedLayer& l = n.plan.layers[1];
  EXPECT_EQ(l.kind, LayerKind::kConv);
  EXPECT_EQ(l.conv.residual, "x");  // the block's input, read per element by the flying SDP
  EXPECT_TRUE(l.conv.relu);         // the ReLU after the sum
  EXPECT_EQ(l.output, "b.relu.out");
  EXPECT_EQ(layer_reads(n.graph, l), (std::vector<std::string>{l.input, "x"}));
}

TEST(PlanResidual, ProjectionBlockAddFusedIntoTheShortcutConv) {
  // torch.onnx writes the projection after the main branch: when conv2 is planned the shortcut
  // does not exist yet, so the shortcut's convolution, planned last, takes the Add.
  const CompiledNetwork n = prepared(nettest::basic_block_graph(true));
  ASSERT_EQ(n.plan.layers.size(), 3U);
  EXPECT_EQ(labels(n),
            (std::vector<std::string>{"Conv 'b.conv1' + Relu 'b.relu1'", "Conv 'b.conv2'",
                                      "Conv 'b.convs' + Add 'b.add' + Relu 'b.relu'"}));
  EXPECT_TRUE(n.plan.layers[1].conv.residual.empty());
  EXPECT_FALSE(n.plan.layers[1].conv.relu);
  EXPECT_EQ(n.plan.layers[2].conv.residual, n.plan.layers[1].output);
  EXPECT_EQ(n.plan.layers[2].input, "x");
}

TEST(PlanResidual, ShortcutWrittenFirstGoesToTheMainBranch) {
  ResidualBuilder r;
  r.graph().input("x", {1, 8, 8, 8});
  const std::string s = r.conv("convs", "x", 8, 16, 1);
  const std::string t = r.conv("conv2", r.relu("relu1", r.conv("conv1", "x", 8, 16, 3)), 16, 16, 3);
  r.graph().output(r.relu("relu", r.add("add", t, s)));
  const CompiledNetwork n = prepared(r.graph().graph());
  EXPECT_EQ(labels(n), (std::vector<std::string>{"Conv 'convs'", "Conv 'conv1' + Relu 'relu1'",
                                                 "Conv 'conv2' + Add 'add' + Relu 'relu'"}));
  EXPECT_EQ(n.plan.layers[2].conv.residual, "convs.out");
}

TEST(PlanResidual, MobileNetAddWithoutRelu) {
  const CompiledNetwork n = prepared(nettest::inverted_residual_graph());
  ASSERT_EQ(n.plan.layers.size(), 3U);
  const PlannedLayer& l = n.plan.layers[2];
  EXPECT_EQ(layer_nodes_label(n.graph, l), "Conv 'm.conv3' + Add 'm.add'");
  EXPECT_EQ(l.conv.residual, "x");
  EXPECT_FALSE(l.conv.relu);
  EXPECT_EQ(l.output, "m.add.out");
}

TEST(PlanResidual, NotFusedAfterTheConvolutionsReluNorWithAnotherReader) {
  // conv1's ReLU comes before the sum: the Add is an SDP layer of its own, and so is the
  // BatchNormalization after it (with the ReLU after that).
  const CompiledNetwork n = prepared(nettest::sdp_alone_graph());
  ASSERT_EQ(n.plan.layers.size(), 3U);
  EXPECT_EQ(labels(n), (std::vector<std::string>{"Conv 'conv1' + Relu 'relu1'", "Add 'add'",
                                                 "BatchNormalization 'bn' + Relu 'relu2'"}));
  EXPECT_EQ(n.plan.layers[1].kind, LayerKind::kSdp);
  EXPECT_EQ(n.plan.layers[1].sdp.ew, EwOp::kAdd);
  EXPECT_EQ(layer_reads(n.graph, n.plan.layers[1]), (std::vector<std::string>{"relu1.out", "x"}));

  // The convolution's output also read by a graph output: it must be written as it is.
  ResidualBuilder r;
  r.graph().input("x", {1, 8, 4, 4});
  const std::string c = r.conv("conv", "x", 8, 8, 3);
  r.graph().output(r.add("add", c, "x"));
  r.graph().output(c);
  const CompiledNetwork m = prepared(r.graph().graph());
  EXPECT_EQ(labels(m), (std::vector<std::string>{"Conv 'conv'", "Add 'add'"}));
}

TEST(PlanResidual, NotFusedWhenTheOtherAddendComesLater) {
  // Add(conv(x), maxpool(x)) with the pool written after the Add's first input: the convolution
  // cannot read the pool's output (not yet computed), and the pool is no convolution.
  ResidualBuilder r;
  GraphBuilder& b = r.graph();
  b.input("x", {1, 8, 4, 4});
  const std::string c = r.conv("conv", "x", 8, 8, 3);
  auto& pool = b.node("MaxPool", "pool", {"x"}, {"p"});
  pool.attributes["kernel_shape"] = nettest::ints_attr({3, 3});
  pool.attributes["pads"] = nettest::ints_attr({1, 1, 1, 1});
  b.output(r.add("add", c, "p"));
  const CompiledNetwork n = prepared(b.graph());
  EXPECT_EQ(labels(n), (std::vector<std::string>{"Conv 'conv'", "MaxPool 'pool'", "Add 'add'"}));
  EXPECT_TRUE(n.plan.layers[0].conv.residual.empty());
}

// ResNet-50 and MobileNetV2 as the exporter writes them: every residual Add fused (16 and 10).
TEST(PlanResidual, ResNet50FusesEveryAdd) {
  const CompiledNetwork n = prepared(nettest::resnet50_graph(64));
  // stem conv, max pool, 16 x 3 convolutions, 4 projections, global pool, fully connected.
  ASSERT_EQ(n.plan.layers.size(), 56U);
  std::size_t fused = 0;
  for (const PlannedLayer& l : n.plan.layers) {
    const std::string label = layer_nodes_label(n.graph, l);
    const bool add = label.find("Add '") != std::string::npos;
    if (!add) continue;
    ++fused;
    EXPECT_EQ(l.kind, LayerKind::kConv) << label;
    EXPECT_FALSE(l.conv.residual.empty()) << label;
    EXPECT_NE(label.find("+ Relu '"), std::string::npos) << label;
  }
  EXPECT_EQ(fused, 16U);
}

TEST(PlanResidual, MobileNetV2FusesEveryAdd) {
  const CompiledNetwork n = prepared(nettest::mobilenet_v2_graph(64));
  // stem, 17 blocks (the first without expansion: 2 convolutions, the others 3), last 1x1,
  // global pool, fully connected.
  ASSERT_EQ(n.plan.layers.size(), 1U + 2U + 16U * 3U + 1U + 1U + 1U);
  std::size_t fused = 0;
  for (const PlannedLayer& l : n.plan.layers) {
    if (l.conv.residual.empty()) continue;
    ++fused;
    EXPECT_FALSE(l.conv.relu);
  }
  EXPECT_EQ(fused, 10U);
}

}  // namespace
}  // namespace octasim::firmware::net
