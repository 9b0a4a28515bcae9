// The ONNX backend-test helpers of `octasim onnx-test` (firmware/net/backend_test.hpp): binding
// a test's inputs, the FP16 bound worked out by hand for small graphs, and the comparison.
#include "firmware/net/backend_test.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "models/numerics/float_format.hpp"
#include "tests/net/net_test_graph.hpp"

namespace octasim::firmware::net {
namespace {

using models::graph::Tensor;
using nettest::GraphBuilder;

constexpr double kEps = 1.0 / 2048.0;  // 2^-11

// y = x * w (Mul of two graph inputs, as ONNX's node tests give them).
GraphBuilder mul_graph() {
  GraphBuilder b;
  b.input("x", {1, 2, 1, 2}).input("w", {1, 2, 1, 2});
  b.node("Mul", "m", {"x", "w"}, {"y"});
  b.output("y");
  return b;
}

BackendDataSet mul_data() {
  BackendDataSet d;
  d.inputs = {Tensor::floats({1, 2, 1, 2}, {1.0F, -2.0F, 3.0F, 0.0F}),
              Tensor::floats({1, 2, 1, 2}, {-4.0F, -5.0F, 0.5F, 7.0F})};
  d.outputs = {Tensor::floats({1, 2, 1, 2}, {-4.0F, 10.0F, 1.5F, 0.0F})};
  return d;
}

TEST(BackendTest, BindsEveryInputAfterTheFirstAsAConstant) {
  const BoundTest b = bind_test(mul_graph().graph(), mul_data());
  ASSERT_EQ(b.graph.inputs.size(), 1U);
  EXPECT_EQ(b.graph.inputs[0].name, "x");
  ASSERT_TRUE(b.graph.is_constant("w"));
  EXPECT_EQ(b.graph.initializers.at("w").f, mul_data().inputs[1].f);
  // N = 1: one image holding the whole input.
  EXPECT_EQ(b.image_count, 1U);
  EXPECT_EQ(b.images.shape, (std::vector<std::int64_t>{1, 4}));
}

TEST(BackendTest, MakesTheFirstAxisOfAnNchwBatchTheImages) {
  GraphBuilder g;
  g.input("x", {3, 1, 2, 2});
  g.node("Relu", "r", {"x"}, {"y"});
  g.output("y");
  BackendDataSet d;
  d.inputs = {Tensor::floats({3, 1, 2, 2}, std::vector<float>(12, 1.0F))};
  d.outputs = {d.inputs[0]};
  const BoundTest b = bind_test(g.graph(), d);
  EXPECT_EQ(b.image_count, 3U);
  EXPECT_EQ(b.graph.inputs[0].shape, (std::vector<std::int64_t>{-1, 1, 2, 2}));
}

TEST(BackendTest, TheBoundOfAProductCountsTwoRoundedOperands) {
  // y = x w: S = |x||w|, r = 2: bound = (2 eps + 2^-20) |x||w| + eps |y| + 2^-24.
  const std::vector<double> b = fp16_bounds(mul_graph().graph(), mul_data(), 0);
  const double rel = 2 * kEps + std::ldexp(1.0, -20);
  const double tiny = std::ldexp(1.0, -24);
  ASSERT_EQ(b.size(), 4U);
  EXPECT_DOUBLE_EQ(b[0], rel * 4.0 + kEps * 4.0 + tiny);
  EXPECT_DOUBLE_EQ(b[1], rel * 10.0 + kEps * 10.0 + tiny);
  EXPECT_DOUBLE_EQ(b[2], rel * 1.5 + kEps * 1.5 + tiny);
  EXPECT_DOUBLE_EQ(b[3], tiny);
}

TEST(BackendTest, BatchNormalizationMeanAddsItsMagnitude) {
  // y = s (x - mean) / sqrt(var + eps) + bias with x = 1, mean = 1: y = bias = 0.25 but the
  // terms are |x| s' = 1 and |mean| s' = 1 (s' = 1 here) and |bias| = 0.25: S = 2.25.
  GraphBuilder g;
  g.input("x", {1, 1, 1, 1});
  g.constant("s", {1}, {1.0F}).constant("b", {1}, {0.25F});
  g.constant("m", {1}, {1.0F}).constant("v", {1}, {1.0F});
  g.node("BatchNormalization", "bn", {"x", "s", "b", "m", "v"}, {"y"}).attributes["epsilon"] =
      nettest::float_attr(0.0F);
  g.output("y");
  BackendDataSet d;
  d.inputs = {Tensor::floats({1, 1, 1, 1}, {1.0F})};
  d.outputs = {Tensor::floats({1, 1, 1, 1}, {0.25F})};
  const std::vector<double> b = fp16_bounds(g.graph(), d, 0);
  const double rel = 2 * kEps + std::ldexp(1.0, -20);
  EXPECT_DOUBLE_EQ(b.at(0), rel * 2.25 + kEps * 0.25 + std::ldexp(1.0, -24));
}

TEST(BackendTest, RoundedOperandsPerOperator) {
  EXPECT_EQ(rounded_operands("Conv"), 2);
  EXPECT_EQ(rounded_operands("Gemm"), 2);
  EXPECT_EQ(rounded_operands("AveragePool"), 3);
  EXPECT_EQ(rounded_operands("GlobalAveragePool"), 2);
  EXPECT_EQ(rounded_operands("MaxPool"), 1);
  EXPECT_EQ(rounded_operands("Add"), 1);
  EXPECT_EQ(rounded_operands("Flatten"), 1);
}

TEST(BackendTest, ComparisonNamesTheWorstElement) {
  const Tensor want = Tensor::floats({3}, {1.0F, 2.0F, 3.0F});
  const std::vector<double> bound{0.01, 0.01, 0.01};
  EXPECT_EQ(compare_output({1.005F, 2.0F, 2.995F}, want, bound).failures, 0U);
  const Comparison c = compare_output({1.0F, 2.05F, 3.02F}, want, bound);
  EXPECT_EQ(c.failures, 2U);
  EXPECT_EQ(c.worst, 1U);
  EXPECT_NE(c.message.find("2 of 3 elements"), std::string::npos) << c.message;
  // A NaN or an infinity where a number is expected fails; the count must match.
  EXPECT_EQ(compare_output({NAN, 2.0F, 3.0F}, want, bound).failures, 1U);
  EXPECT_EQ(compare_output({1.0F, INFINITY, 3.0F}, want, bound).failures, 1U);
  EXPECT_EQ(compare_output({1.0F, 2.0F}, want, bound).failures, 1U);
}

TEST(BackendTest, IntegerComparisonIsExact) {
  Tensor want = Tensor::ints(models::graph::DType::kInt32, {2}, {7, -3});
  const std::vector<double> exact{0.0, 0.0};
  EXPECT_EQ(compare_output({7.0F, -3.0F}, want, exact).failures, 0U);
  EXPECT_EQ(compare_output({7.0F, -2.0F}, want, exact).failures, 1U);
}

}  // namespace
}  // namespace octasim::firmware::net

namespace octasim::firmware::net {
namespace {

// The bound tells a wrong average from a right one: on ONNX's own padded AveragePool test
// (count_include_pad=0), the average that counts the padding — what PDP alone computes — is
// outside it at the borders, while ONNX's expected output rounded to FP16 is inside everywhere.
TEST(BackendTest, TheBoundRejectsAnAverageThatCountsThePadding) {
  const std::string dir = std::string(OCTASIM_ONNX_NODE_DIR) + "/test_averagepool_2d_pads";
  BackendTest t;
  try {
    t = read_backend_test(dir);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "libonnx-testdata not installed: " << e.what();
  }
  const BackendDataSet& d = t.data_sets.at(0);
  const std::vector<double> bound = fp16_bounds(t.graph, d, 0);
  std::vector<float> rounded(d.outputs[0].f.size());
  for (std::size_t i = 0; i < rounded.size(); ++i) {
    rounded[i] = models::fp16_to_float(models::fp16_from_float(d.outputs[0].f[i]));
  }
  EXPECT_EQ(compare_output(rounded, d.outputs[0], bound).failures, 0U);
  models::graph::Graph wrong = t.graph;
  wrong.nodes.at(0).attributes["count_include_pad"] = nettest::int_attr(1);
  const auto out = models::graph::run_reference(wrong, {{t.graph.inputs[0].name, d.inputs[0]}});
  const Comparison c = compare_output(out.at(t.graph.outputs[0].name).f, d.outputs[0], bound);
  EXPECT_GT(c.failures, 100U) << c.message;
}

}  // namespace
}  // namespace octasim::firmware::net
