// The graph clean-up passes before lowering (models/graph/passes.hpp): constant folding of shape
// subgraphs, Pad folding into its consumers, reductions over H and W as global pooling, Sub/Div
// by constants as Add/Mul. Each rewritten graph is run through the reference executor against
// the original on random inputs, and each pass leaves alone what it must not rewrite.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "models/graph/op_registry.hpp"
#include "models/graph/passes.hpp"
#include "models/graph/reference.hpp"

// A namespace of its own: the unity build compiles this file with its target's others.
namespace octasim::models::graph::graph_cleanup_test {
namespace {

Tensor random_floats(std::vector<std::int64_t> shape, std::mt19937& rng, float lo = -2,
                     float hi = 2) {
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

Attribute ints(std::vector<std::int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

Attribute integer(std::int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}

Tensor int64s(std::vector<std::int64_t> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor::ints(DType::kInt64, {n}, std::move(v));
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  return ops;
}

// The rewritten graph computes what the original does, output by output, on a random input.
void expect_same_outputs(const Graph& original, const Graph& rewritten, std::uint32_t seed,
                         double tolerance = 1e-6) {
  std::mt19937 rng(seed);
  TensorMap in;
  for (const ValueInfo& vi : original.inputs) {
    std::vector<std::int64_t> shape = vi.shape;
    for (std::int64_t& d : shape) d = d < 0 ? 1 : d;
    in[vi.name] = random_floats(shape, rng);
  }
  const TensorMap want = run_reference(original, in);
  const TensorMap got = run_reference(rewritten, in);
  for (const ValueInfo& out : original.outputs) {
    const Tensor& a = got.at(out.name);
    const Tensor& b = want.at(out.name);
    ASSERT_EQ(a.shape, b.shape) << out.name;
    for (std::size_t e = 0; e < b.f.size(); ++e) {
      EXPECT_NEAR(a.f[e], b.f[e], tolerance * (1 + std::fabs(double{b.f[e]}))) << out.name << e;
    }
  }
}

// X -> Reshape(X, Concat(Unsqueeze(Gather(Shape(X), 0)), [-1])) -> Relu: PyTorch's
// x.view(x.size(0), -1).
Graph flatten_by_shape_graph() {
  Graph g;
  g.opset = 13;
  g.inputs = {{"X", DType::kFloat32, {-1, 2, 3, 4}}};
  g.outputs = {{"Y", DType::kFloat32, {}}};
  g.initializers["zero"] = Tensor::ints(DType::kInt64, {}, {0});
  g.initializers["axes0"] = int64s({0});
  g.initializers["minus1"] = int64s({-1});
  g.nodes.push_back(node("Shape", {"X"}, {"s"}));
  Node gather = node("Gather", {"s", "zero"}, {"n"});
  gather.attributes["axis"] = integer(0);
  g.nodes.push_back(gather);
  g.nodes.push_back(node("Unsqueeze", {"n", "axes0"}, {"n1"}));
  Node concat = node("Concat", {"n1", "minus1"}, {"shape"});
  concat.attributes["axis"] = integer(0);
  g.nodes.push_back(concat);
  g.nodes.push_back(node("Reshape", {"X", "shape"}, {"r"}));
  g.nodes.push_back(node("Relu", {"r"}, {"Y"}));
  return g;
}

TEST(FoldConstants, AShapeSubgraphBecomesAConstant) {
  const Graph original = flatten_by_shape_graph();
  Graph g = original;
  EXPECT_EQ(fold_constants(g, 1), 4u);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"Reshape", "Relu"}));
  ASSERT_TRUE(g.is_constant("shape"));
  EXPECT_EQ(g.initializers.at("shape").i, (std::vector<std::int64_t>{1, -1}));
  // The inputs of the folded arithmetic are gone; the Reshape's shape stays.
  EXPECT_FALSE(g.is_constant("zero"));
  EXPECT_FALSE(g.is_constant("minus1"));
  expect_same_outputs(original, g, 1);
}

// Folding at batch 1 bakes the batch into the Reshape: several images then run one by one
// (run_reference_images), each as the graph at batch 1 computes it, stacked on the first axis.
TEST(FoldConstants, SeveralImagesRunImageByImage) {
  Graph g = flatten_by_shape_graph();
  ASSERT_EQ(fold_constants(g, 1), 4u);
  std::mt19937 rng(11);
  const Tensor images = random_floats({3, 2, 3, 4}, rng);
  // All at once, the Reshape to [1, -1] would merge the three images into one row.
  EXPECT_EQ(run_reference(g, {{"X", images}}).at("Y").shape, (std::vector<std::int64_t>{1, 72}));
  const TensorMap all = run_reference_images(g, "X", images);
  const Tensor& y = all.at("Y");
  EXPECT_EQ(y.shape, (std::vector<std::int64_t>{3, 24}));
  for (std::int64_t i = 0; i < 3; ++i) {
    Tensor one = images;
    one.shape[0] = 1;
    one.f.assign(images.f.begin() + i * 24, images.f.begin() + (i + 1) * 24);
    const Tensor want = run_reference(g, {{"X", one}}).at("Y");
    for (std::size_t e = 0; e < 24; ++e) {
      EXPECT_EQ(y.f[static_cast<std::size_t>(i) * 24 + e], want.f[e]) << i << " " << e;
    }
  }
  EXPECT_EQ(all.at("shape").i, (std::vector<std::int64_t>{1, -1}));  // a constant, once
}

TEST(FoldConstants, AGraphOutputFoldsToAConstantToo) {
  Graph g = flatten_by_shape_graph();
  g.outputs.push_back({"s", DType::kInt64, {}});  // the Shape itself is wanted
  EXPECT_EQ(fold_constants(g, 1), 4u);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"Reshape", "Relu"}));
  ASSERT_TRUE(g.is_constant("s"));  // kept: a graph output reads it
  EXPECT_EQ(g.initializers.at("s").i, (std::vector<std::int64_t>{1, 2, 3, 4}));
}

// Dropout at inference: its mask is all true (a constant of the input's shape), and the node is
// then an identity; training with a non-zero ratio is refused (its kernel's random drops).
TEST(FoldConstants, AnInferenceDropoutsMaskIsAConstant) {
  for (const bool training : {false, true}) {
    Graph g;
    g.opset = 13;
    g.inputs = {{"X", DType::kFloat32, {1, 2, 3}}};
    g.outputs = {{"Y", DType::kFloat32, {}}, {"M", DType::kBool, {}}};
    g.initializers["ratio"] = Tensor::floats({}, {0.25F});
    g.initializers["train"] = Tensor::ints(DType::kBool, {}, {training ? 1 : 0});
    g.nodes.push_back(node("Relu", {"X"}, {"r"}));
    g.nodes.push_back(node("Dropout", {"r", "ratio", "train"}, {"Y", "M"}));
    if (training) {
      EXPECT_THROW((void)simplify_graph(g), GraphError);  // random drops: refused
      continue;
    }
    const std::size_t folded = simplify_graph(g);
    EXPECT_GE(folded, 2u);
    ASSERT_TRUE(g.is_constant("M"));
    const Tensor& m = g.initializers.at("M");
    EXPECT_EQ(m.dtype, DType::kBool);
    EXPECT_EQ(m.shape, (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ(m.i, std::vector<std::int64_t>(6, 1));
    EXPECT_EQ(ops_of(g), (std::vector<std::string>{"Relu"}));  // the Dropout removed
    EXPECT_EQ(g.nodes[0].outputs, std::vector<std::string>{"Y"});
  }
}

TEST(FoldConstants, EvaluatesConstantOfShapeEqualWhereExpand) {
  // Where(Equal(shape, -1), ones, shape) as PyTorch's expand exports it, then Expand(B, that).
  Graph g;
  g.opset = 13;
  g.inputs = {{"X", DType::kFloat32, {1, 3, 2, 2}}};
  g.outputs = {{"Y", DType::kFloat32, {}}};
  g.initializers["B"] = Tensor::floats({1, 3, 1, 1}, {1, 2, 3});
  g.initializers["target"] = int64s({1, -1, 2, 2});
  g.initializers["len"] = int64s({4});
  g.initializers["minus1"] = Tensor::ints(DType::kInt64, {}, {-1});
  Node cos = node("ConstantOfShape", {"len"}, {"ones"});
  Attribute one;
  one.kind = Attribute::Kind::kTensor;
  one.t = Tensor::ints(DType::kInt64, {1}, {1});
  cos.attributes["value"] = one;
  g.nodes.push_back(cos);
  g.nodes.push_back(node("Equal", {"target", "minus1"}, {"is_free"}));
  g.nodes.push_back(node("Where", {"is_free", "ones", "target"}, {"shape"}));
  g.nodes.push_back(node("Expand", {"B", "shape"}, {"b"}));
  g.nodes.push_back(node("Mul", {"X", "b"}, {"Y"}));
  const Graph original = g;
  EXPECT_EQ(fold_constants(g, 1), 4u);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"Mul"}));
  ASSERT_TRUE(g.is_constant("b"));
  EXPECT_EQ(g.initializers.at("b").shape, (std::vector<std::int64_t>{1, 3, 2, 2}));
  EXPECT_EQ(g.initializers.at("b").f[4], 2.0F);
  expect_same_outputs(original, g, 2);
}

Graph pad_graph(const std::string& consumer, std::vector<std::int64_t> pads, float value) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"X", DType::kFloat32, {1, 2, 5, 6}}};
  g.outputs = {{"Y", DType::kFloat32, {}}};
  g.initializers["pads"] = int64s(std::move(pads));
  g.initializers["value"] = Tensor::floats({}, {value});
  std::mt19937 rng(7);
  g.initializers["W"] = random_floats({3, 2, 3, 3}, rng);
  g.nodes.push_back(node("Pad", {"X", "pads", "value"}, {"p"}));
  Node c =
      node(consumer,
           consumer == "Conv" ? std::vector<std::string>{"p", "W"} : std::vector<std::string>{"p"},
           {"Y"});
  if (consumer != "Conv") c.attributes["kernel_shape"] = ints({3, 3});
  g.nodes.push_back(c);
  return g;
}

TEST(FoldPads, AZeroPadBecomesTheConvolutionsPadding) {
  const Graph original = pad_graph("Conv", {0, 0, 1, 2, 0, 0, 2, 1}, 0.0F);
  Graph g = original;
  EXPECT_EQ(fold_pads(g), 1u);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"Conv"}));
  EXPECT_EQ(g.nodes[0].inputs[0], "X");
  EXPECT_EQ(g.nodes[0].get_ints("pads", {}), (std::vector<std::int64_t>{1, 2, 2, 1}));
  expect_same_outputs(original, g, 3);
}

TEST(FoldPads, AnAveragePoolCountsThePadsZeros) {
  // PyTorch's AvgPool2d(count_include_pad=True) exports Pad + AveragePool without pads.
  const Graph original = pad_graph("AveragePool", {0, 0, 1, 1, 0, 0, 1, 1}, 0.0F);
  Graph g = original;
  EXPECT_EQ(fold_pads(g), 1u);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"AveragePool"}));
  EXPECT_EQ(g.nodes[0].get_int("count_include_pad", 0), 1);
  expect_same_outputs(original, g, 4);
  // An AveragePool excluding its own padding cannot take zeros that must count.
  Graph own = original;
  own.nodes[1].attributes["pads"] = ints({1, 1, 1, 1});
  EXPECT_EQ(fold_pads(own), 0u);
}

TEST(FoldPads, LeavesPadsTheConsumerCannotTake) {
  Graph one = pad_graph("Conv", {0, 0, 1, 1, 0, 0, 1, 1}, 1.0F);  // padding with ones
  EXPECT_EQ(fold_pads(one), 0u);
  Graph max = pad_graph("MaxPool", {0, 0, 1, 1, 0, 0, 1, 1}, 0.0F);  // zeros are not -inf
  EXPECT_EQ(fold_pads(max), 0u);
  Graph channels = pad_graph("Conv", {0, 1, 0, 0, 0, 1, 0, 0}, 0.0F);  // pads C
  EXPECT_EQ(fold_pads(channels), 0u);
  Graph reflect = pad_graph("Conv", {0, 0, 1, 1, 0, 0, 1, 1}, 0.0F);
  Attribute mode;
  mode.kind = Attribute::Kind::kString;
  mode.s = "reflect";
  reflect.nodes[0].attributes["mode"] = mode;
  EXPECT_EQ(fold_pads(reflect), 0u);
}

TEST(FoldPads, APadOfNothingGoesWhateverReadsIt) {
  const Graph original = pad_graph("MaxPool", {0, 0, 0, 0, 0, 0, 0, 0}, 0.0F);
  Graph g = original;
  EXPECT_EQ(fold_pads(g), 1u);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"MaxPool"}));
  expect_same_outputs(original, g, 5);
}

Graph reduce_graph(const std::string& op, std::vector<std::int64_t> axes, std::int64_t keep,
                   std::int64_t opset) {
  Graph g;
  g.opset = opset;
  g.inputs = {{"X", DType::kFloat32, {1, 3, 4, 5}}};
  g.outputs = {{"Y", DType::kFloat32, {}}};
  Node n = node(op, {"X"}, {"Y"});
  if (op == "ReduceSum" && opset >= 13) {
    g.initializers["axes"] = int64s(std::move(axes));
    n.inputs.push_back("axes");
  } else {
    n.attributes["axes"] = ints(std::move(axes));
  }
  n.attributes["keepdims"] = integer(keep);
  g.nodes.push_back(n);
  return g;
}

TEST(ReductionsToPooling, AMeanOverHeightAndWidthIsGlobalAveragePooling) {
  for (const std::int64_t keep : {1, 0}) {
    const Graph original = reduce_graph("ReduceMean", {-1, 2}, keep, 13);
    Graph g = original;
    EXPECT_EQ(reductions_to_pooling(g), 1u);
    const std::vector<std::string> want =
        keep != 0 ? std::vector<std::string>{"GlobalAveragePool"}
                  : std::vector<std::string>{"GlobalAveragePool", "Reshape"};
    EXPECT_EQ(ops_of(g), want);
    expect_same_outputs(original, g, 6);
  }
}

TEST(ReductionsToPooling, ASumIsTheMeanTimesTheArea) {
  const Graph original = reduce_graph("ReduceSum", {2, 3}, 1, 13);
  Graph g = original;
  EXPECT_EQ(reductions_to_pooling(g), 1u);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"GlobalAveragePool", "Mul"}));
  expect_same_outputs(original, g, 7, 1e-5);
}

TEST(ReductionsToPooling, OtherAxesStay) {
  Graph channels = reduce_graph("ReduceMean", {1}, 1, 13);
  EXPECT_EQ(reductions_to_pooling(channels), 0u);
  Graph height = reduce_graph("ReduceMean", {2}, 1, 13);
  EXPECT_EQ(reductions_to_pooling(height), 0u);
}

TEST(ConstantArithmetic, SubAndDivByConstantsBecomeAddAndMul) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"X", DType::kFloat32, {1, 3, 2, 2}}};
  g.outputs = {{"Y", DType::kFloat32, {}}};
  g.initializers["mean"] = Tensor::floats({1, 3, 1, 1}, {0.5F, -1.0F, 2.0F});
  g.initializers["std"] = Tensor::floats({1, 3, 1, 1}, {0.25F, 3.0F, 0.7F});
  g.nodes.push_back(node("Sub", {"X", "mean"}, {"c"}));
  g.nodes.push_back(node("Div", {"c", "std"}, {"Y"}));
  const Graph original = g;
  EXPECT_EQ(constant_arithmetic(g), 2u);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"Add", "Mul"}));
  expect_same_outputs(original, g, 8, 1e-6);
  // A constant minus data is not a Sub of a constant.
  Graph swapped = original;
  std::swap(swapped.nodes[0].inputs[0], swapped.nodes[0].inputs[1]);
  EXPECT_EQ(constant_arithmetic(swapped), 1u);  // only the Div
  EXPECT_EQ(swapped.nodes[0].op_type, "Sub");
}

TEST(SimplifyGraph, RunsEveryPass) {
  Graph g = flatten_by_shape_graph();
  g.nodes.insert(g.nodes.begin(), node("Identity", {"X0"}, {"X"}));
  g.inputs[0].name = "X0";
  const Graph original = g;
  EXPECT_GE(simplify_graph(g), 5u);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"Reshape", "Relu"}));
  expect_same_outputs(original, g, 9);
}

TEST(OpRegistry, EveryEntryHasAReferenceKernelAndIsFoundByName) {
  const std::vector<OpSchema>& ops = all_ops();
  EXPECT_GE(ops.size(), 50u);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    EXPECT_NE(ops[k].reference, nullptr) << ops[k].op_type;
    EXPECT_EQ(find_op(ops[k].op_type), &ops[k]);
    if (k > 0) {
      EXPECT_LT(std::string(ops[k - 1].op_type), std::string(ops[k].op_type));
    }
  }
  EXPECT_EQ(find_op("NoSuchOp"), nullptr);
  EXPECT_TRUE(lowers_to("Conv", Lowering::kConv));
  EXPECT_FALSE(lowers_to("Conv", Lowering::kPool));
  EXPECT_TRUE(lowers_to("Pad", Lowering::kFolded));
  EXPECT_FALSE(lowers_to("NoSuchOp", Lowering::kSdp));
}

TEST(OpRegistry, AnUnknownOperatorIsOneError) {
  Node n = node("Frobnicate", {"x"}, {"y"});
  const Tensor x = Tensor::floats({1}, {1.0F});
  try {
    (void)run_op(n, {&x}, 13);
    ADD_FAILURE() << "ran an unknown operator";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("Frobnicate"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace octasim::models::graph::graph_cleanup_test
