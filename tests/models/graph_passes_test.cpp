// models/graph rewrites: BatchNormalization folded into Conv and Identity/Dropout removed keep the
// graph's outputs (compared with the reference executor on the original graph), refuse what they
// must not fold, and shape inference follows the batch.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "models/graph/passes.hpp"
#include "models/graph/reference.hpp"

namespace octasim::models::graph {
namespace {

Tensor random_floats(std::vector<std::int64_t> shape, std::mt19937& rng, float lo, float hi) {
  Tensor t;
  t.shape = std::move(shape);
  std::uniform_real_distribution<float> u(lo, hi);
  t.f.resize(t.elements());
  for (float& v : t.f) v = u(rng);
  return t;
}

Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
  Node n;
  n.op_type = op;
  n.name = op + "_" + out.at(0);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// X -> Conv(W, B, pad 1) -> BatchNormalization -> Identity -> Relu -> Y
Graph conv_bn_graph(std::mt19937& rng) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"X", DType::kFloat32, {-1, 3, 6, 6}}};
  g.outputs = {{"Y", DType::kFloat32, {-1, 4, 6, 6}}};
  g.initializers["W"] = random_floats({4, 3, 3, 3}, rng, -1, 1);
  g.initializers["B"] = random_floats({4}, rng, -1, 1);
  g.initializers["gamma"] = random_floats({4}, rng, 0.5F, 2);
  g.initializers["beta"] = random_floats({4}, rng, -1, 1);
  g.initializers["mean"] = random_floats({4}, rng, -1, 1);
  g.initializers["var"] = random_floats({4}, rng, 0.1F, 3);
  Node conv = node("Conv", {"X", "W", "B"}, {"c"});
  Attribute pads;
  pads.kind = Attribute::Kind::kInts;
  pads.ints = {1, 1, 1, 1};
  conv.attributes["pads"] = pads;
  g.nodes.push_back(conv);
  g.nodes.push_back(node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"b"}));
  g.nodes.push_back(node("Identity", {"b"}, {"i"}));
  g.nodes.push_back(node("Relu", {"i"}, {"Y"}));
  return g;
}

TEST(GraphPasses, FoldingKeepsTheOutput) {
  std::mt19937 rng(3);
  const Graph original = conv_bn_graph(rng);
  Graph g = original;
  EXPECT_EQ(fold_batch_norm(g), 1u);
  EXPECT_EQ(remove_identities(g), 1u);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op_type, "Conv");
  EXPECT_EQ(g.nodes[1].op_type, "Relu");
  const TensorMap in = {{"X", random_floats({2, 3, 6, 6}, rng, -2, 2)}};
  const Tensor want = run_reference(original, in).at("Y");
  const Tensor got = run_reference(g, in).at("Y");
  ASSERT_EQ(got.shape, want.shape);
  int nonzero = 0;
  for (std::size_t e = 0; e < want.f.size(); ++e) {
    EXPECT_NEAR(got.f[e], want.f[e], 1e-5 * (1 + std::fabs(double{want.f[e]}))) << e;
    nonzero += want.f[e] != 0.0F ? 1 : 0;
  }
  EXPECT_GT(nonzero, 50);  // the ReLU leaves enough to compare
}

TEST(GraphPasses, AConvOutputReadTwiceIsNotFolded) {
  std::mt19937 rng(4);
  Graph g = conv_bn_graph(rng);
  g.outputs.push_back({"c", DType::kFloat32, {}});  // the Conv's own output is also wanted
  EXPECT_EQ(fold_batch_norm(g), 0u);
  EXPECT_EQ(g.nodes.size(), 4u);
}

TEST(GraphPasses, AnIdentityFeedingAGraphOutputKeepsTheOutputName) {
  std::mt19937 rng(5);
  Graph g = conv_bn_graph(rng);
  g.nodes.pop_back();  // drop the Relu: the Identity now writes Y
  g.nodes.back().outputs[0] = "Y";
  EXPECT_EQ(remove_identities(g), 1u);
  EXPECT_EQ(g.nodes.back().outputs[0], "Y");
  EXPECT_EQ(g.outputs[0].name, "Y");
}

TEST(GraphPasses, ShapesFollowTheBatch) {
  std::mt19937 rng(6);
  const Graph g = conv_bn_graph(rng);
  const auto shapes = infer_shapes(g, 3);
  EXPECT_EQ(shapes.at("c"), (std::vector<std::int64_t>{3, 4, 6, 6}));
  EXPECT_EQ(shapes.at("Y"), (std::vector<std::int64_t>{3, 4, 6, 6}));
}

}  // namespace
}  // namespace octasim::models::graph
