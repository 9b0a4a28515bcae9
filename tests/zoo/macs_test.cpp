// models/graph/macs: multiply-accumulates and parameters of graphs small enough to count by
// hand, and the shape inference behind them against the reference executor's.
#include <gtest/gtest.h>

#include "models/graph/macs.hpp"
#include "models/graph/passes.hpp"
#include "models/graph/reference.hpp"

namespace octasim::models::graph {
namespace {

Node node(const std::string& op, std::vector<std::string> in, const std::string& out) {
  Node n;
  n.op_type = op;
  n.name = op + "_" + out;
  n.inputs = std::move(in);
  n.outputs = {out};
  return n;
}

Attribute ints(std::vector<std::int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

Attribute one(std::int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}

Tensor filled(std::vector<std::int64_t> shape, float v = 0.5F) {
  Tensor t;
  t.shape = std::move(shape);
  t.f.assign(t.elements(), v);
  return t;
}

// X [batch x 4 x 8 x 8] -> Conv W [6 x 2 x 3 x 3] (group 2, stride 2, pads 1) -> Flatten ->
// Gemm W [10 x 96] (transB) + B [10] -> Y [batch x 10].
Graph conv_gemm_graph(std::int64_t batch) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"X", DType::kFloat32, {batch, 4, 8, 8}}};
  g.outputs = {{"Y", DType::kFloat32, {batch, 10}}};
  g.initializers["W"] = filled({6, 2, 3, 3});
  g.initializers["FW"] = filled({10, 96});
  g.initializers["FB"] = filled({10});
  Node conv = node("Conv", {"X", "W"}, "C");
  conv.attributes["group"] = one(2);
  conv.attributes["strides"] = ints({2, 2});
  conv.attributes["pads"] = ints({1, 1, 1, 1});
  Node gemm = node("Gemm", {"F", "FW", "FB"}, "Y");
  gemm.attributes["transB"] = one(1);
  g.nodes = {conv, node("Flatten", {"C"}, "F"), gemm};
  return g;
}

// By hand: the Conv's output is (8 + 1 + 1 - 3) / 2 + 1 = 4 square, 6 x 4 x 4 = 96 elements, each
// summing C_in / group = 2 channels x 3 x 3 = 18 products: 1728 MACs (dense over all 4 channels,
// as the DLA expands a grouped convolution, would be 3456: not the network's MACs). The Gemm:
// M = 1, K = 96, N = 10: 960 MACs. Together 2688.
TEST(CountMacs, GroupedConvAndGemmByHand) {
  const Graph g = conv_gemm_graph(-1);
  const std::vector<NodeMacs> per_node = macs_per_node(g);
  ASSERT_EQ(per_node.size(), 3U);
  EXPECT_EQ(per_node[0].op_type, "Conv");
  EXPECT_EQ(per_node[0].macs, 1728U);
  EXPECT_EQ(per_node[1].macs, 0U);  // Flatten
  EXPECT_EQ(per_node[2].macs, 960U);
  EXPECT_EQ(count_macs(g), 2688U);
}

// A fixed batch of 2 counts both images: twice the above.
TEST(CountMacs, FixedBatchCountsEveryImage) {
  EXPECT_EQ(count_macs(conv_gemm_graph(2)), 2U * 2688U);
}

// Floating-point initializers only: 108 + 960 + 10 weights and biases; an int64 shape is not a
// parameter.
TEST(CountMacs, ParametersAreTheFloatInitializers) {
  Graph g = conv_gemm_graph(1);
  EXPECT_EQ(count_parameters(g), 6U * 2 * 3 * 3 + 10 * 96 + 10);
  g.initializers["shape"] = Tensor::ints(DType::kInt64, {2}, {1, 96});
  EXPECT_EQ(count_parameters(g), 1078U);
}

// Gemm with transA: A is K x M = 6 x 3, B 6 x 4: M x N x K = 3 x 4 x 6 = 72. MatMul of a batch
// of matrices: A 2 x 3 x 5 times B 5 x 7 is 2 x 3 x 7 = 42 outputs of 5 products each: 210.
TEST(CountMacs, GemmTransposedAndBatchedMatMul) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"A", DType::kFloat32, {6, 3}}, {"P", DType::kFloat32, {2, 3, 5}}};
  g.initializers["B"] = filled({6, 4});
  g.initializers["Q"] = filled({5, 7});
  Node gemm = node("Gemm", {"A", "B"}, "G");
  gemm.attributes["transA"] = one(1);
  g.nodes = {gemm, node("MatMul", {"P", "Q"}, "M")};
  g.outputs = {{"G", DType::kFloat32, {3, 4}}, {"M", DType::kFloat32, {2, 3, 7}}};
  const std::vector<NodeMacs> per_node = macs_per_node(g);
  EXPECT_EQ(per_node.at(0).macs, 72U);
  EXPECT_EQ(per_node.at(1).macs, 210U);
}

// Attention's MatMuls of two activations, 4-D as a hand-written multi-head attention exports
// them: q 1 x 4 x 5 x 8 times k^T 1 x 4 x 8 x 5 is 4 x 5 x 5 = 100 scores of 8 products (800);
// the softmax 1 x 4 x 5 x 5 times v 1 x 4 x 5 x 8 is 4 x 5 x 8 = 160 outputs of 5 (800).
TEST(CountMacs, MatMulOfTwoActivations) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"Q", DType::kFloat32, {1, 4, 5, 8}},
              {"K", DType::kFloat32, {1, 4, 8, 5}},
              {"V", DType::kFloat32, {1, 4, 5, 8}}};
  g.nodes = {node("MatMul", {"Q", "K"}, "S"), node("Softmax", {"S"}, "P"),
             node("MatMul", {"P", "V"}, "C")};
  g.outputs = {{"C", DType::kFloat32, {1, 4, 5, 8}}};
  const std::vector<NodeMacs> per_node = macs_per_node(g);
  ASSERT_EQ(per_node.size(), 3U);
  EXPECT_EQ(per_node[0].macs, 800U);
  EXPECT_EQ(per_node[1].macs, 0U);
  EXPECT_EQ(per_node[2].macs, 800U);
  EXPECT_EQ(count_macs(g), 1600U);
}

// The integer operators count alike: ConvInteger of a 2 x 5 x 5 uint8 image by 3 kernels of
// 2 x 2 x 2 gives 3 x 4 x 4 = 48 outputs of 8 products (384); MatMulInteger 4 x 3 by 3 x 2 is
// 8 outputs of 3 products (24).
TEST(CountMacs, IntegerOperators) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"X", DType::kUInt8, {1, 2, 5, 5}}, {"A", DType::kUInt8, {4, 3}}};
  g.initializers["W"] = Tensor::ints(DType::kInt8, {3, 2, 2, 2}, std::vector<std::int64_t>(24, 1));
  g.initializers["B"] = Tensor::ints(DType::kInt8, {3, 2}, std::vector<std::int64_t>(6, 1));
  g.nodes = {node("ConvInteger", {"X", "W"}, "C"), node("MatMulInteger", {"A", "B"}, "M")};
  g.outputs = {{"C", DType::kInt32, {1, 3, 4, 4}}, {"M", DType::kInt32, {4, 2}}};
  const ShapeMap shapes = infer_shapes(g);
  EXPECT_EQ(shapes.at("C"), (std::vector<std::int64_t>{1, 3, 4, 4}));
  EXPECT_EQ(node_macs(g.nodes[0], shapes), 384U);
  EXPECT_EQ(node_macs(g.nodes[1], shapes), 24U);
}

// The shapes without arithmetic are the reference executor's shapes on zero inputs, tensor by
// tensor.
TEST(InferShapes, EqualsTheReferenceExecutorsShapes) {
  for (const std::int64_t batch : {1, 3}) {
    const Graph g = conv_gemm_graph(-1);
    TensorMap inputs;
    for (const ValueInfo& vi : g.inputs) {
      Tensor t;
      t.shape = vi.shape;
      for (std::int64_t& d : t.shape) d = d < 0 ? batch : d;
      t.f.assign(t.elements(), 0.0F);
      inputs[vi.name] = std::move(t);
    }
    ShapeMap executed;
    for (const auto& [name, t] : run_reference(g, inputs)) executed[name] = t.shape;
    EXPECT_EQ(infer_shapes(g, batch), executed) << "batch " << batch;
  }
}

// Concat, which the reference executor does not run, joins shapes on its axis and copies
// values, so a shape built from concatenated constants reshapes correctly: X 1 x 6 x 2 x 2 is
// reshaped by Concat([1, 6], [4]) to 1 x 6 x 4, and the join of 2 + 3 channels feeds a 1 x 1
// Conv of 4 kernels: 4 x 3 x 3 outputs x 5 channels = 180 MACs.
TEST(InferShapesFast, ConcatJoinsShapesAndValues) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"X", DType::kFloat32, {1, 6, 2, 2}},
              {"P", DType::kFloat32, {1, 2, 3, 3}},
              {"Q", DType::kFloat32, {1, 3, 3, 3}}};
  g.initializers["head"] = Tensor::ints(DType::kInt64, {2}, {1, 6});
  g.initializers["tail"] = Tensor::ints(DType::kInt64, {1}, {4});
  g.initializers["W"] = filled({4, 5, 1, 1});
  Node spec = node("Concat", {"head", "tail"}, "spec");
  spec.attributes["axis"] = one(0);
  Node join = node("Concat", {"P", "Q"}, "PQ");
  join.attributes["axis"] = one(-3);
  g.nodes = {spec, node("Reshape", {"X", "spec"}, "R"), join, node("Conv", {"PQ", "W"}, "C")};
  g.outputs = {{"R", DType::kFloat32, {1, 6, 4}}, {"C", DType::kFloat32, {1, 4, 3, 3}}};
  const ShapeMap shapes = infer_shapes(g);
  EXPECT_EQ(shapes.at("spec"), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(shapes.at("R"), (std::vector<std::int64_t>{1, 6, 4}));
  EXPECT_EQ(shapes.at("PQ"), (std::vector<std::int64_t>{1, 5, 3, 3}));
  EXPECT_EQ(count_macs(g), 180U);
}

TEST(InferShapesFast, ConcatOfMismatchedShapesIsAGraphError) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"P", DType::kFloat32, {1, 2, 3, 3}}, {"Q", DType::kFloat32, {1, 3, 4, 3}}};
  Node join = node("Concat", {"P", "Q"}, "PQ");
  join.attributes["axis"] = one(1);
  g.nodes = {join};
  g.outputs = {{"PQ", DType::kFloat32, {}}};
  try {
    (void)count_macs(g);
    FAIL() << "expected a GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "Concat 'Concat_PQ': input 1 of shape 1x3x4x3 does not concatenate"),
              std::string::npos)
        << e.what();
  }
}

// A Conv whose weights do not fit its input is reported like the reference executor does.
TEST(InferShapesFast, MisfitConvIsAGraphError) {
  Graph g = conv_gemm_graph(1);
  g.initializers["W"] = filled({6, 3, 3, 3});
  EXPECT_THROW((void)count_macs(g), GraphError);
}

}  // namespace
}  // namespace octasim::models::graph
