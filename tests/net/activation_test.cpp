// The unary activations in the compiler (firmware/net/activation.hpp): planning (one SDP layer;
// Mul(x, Sigmoid(x)) fused as SiLU only when it is that pattern), the refusal where the LUT is
// missing, the SDP LUT's ordering in the overlapped schedule, and onnx-test's FP16 bound worked
// out by hand for one element.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/net/activation.hpp"
#include "firmware/net/backend_test.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/plan.hpp"
#include "firmware/net/schedule.hpp"
#include "models/numerics/float_format.hpp"
#include "sim/core/hw_config.hpp"
#include "tests/net/net_test_graph.hpp"

namespace octasim::firmware::net {
namespace {

using models::graph::GraphError;
using models::graph::Tensor;
using nettest::float_attr;
using nettest::GraphBuilder;

GraphBuilder unary_graph(const char* op) {
  GraphBuilder b;
  b.input("x", {1, 4, 3, 3});
  b.node(op, "act", {"x"}, {"y"});
  b.output("y");
  return b;
}

TEST(PlanActivation, OneSdpLayerPerActivation) {
  for (const char* op : {"Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Erf"}) {
    const NetPlan p = plan_network(unary_graph(op).graph(), "nv_full");
    ASSERT_EQ(p.layers.size(), 1U) << op;
    const PlannedLayer& l = p.layers[0];
    EXPECT_EQ(l.kind, LayerKind::kSdp) << op;
    ASSERT_TRUE(l.sdp.unary.has_value()) << op;
    EXPECT_EQ(l.input, "x");
    EXPECT_EQ(l.output, "y");
    EXPECT_STREQ(l.sdp.unary->name(), op);
  }
}

TEST(PlanActivation, HardSigmoidTakesItsAttributes) {
  GraphBuilder b = unary_graph("HardSigmoid");
  auto& n = b.graph().nodes[0];
  n.attributes["alpha"] = float_attr(0.25F);
  n.attributes["beta"] = float_attr(0.75F);
  const NetPlan p = plan_network(b.graph(), "nv_full");
  EXPECT_EQ(p.layers[0].sdp.unary->alpha, 0.25);
  EXPECT_EQ(p.layers[0].sdp.unary->beta, 0.75);
  // HardSwish is HardSigmoid's 1/6 and 1/2 times x.
  const NetPlan q = plan_network(unary_graph("HardSwish").graph(), "nv_full");
  EXPECT_DOUBLE_EQ(q.layers[0].sdp.unary->alpha, 1.0 / 6.0);
  EXPECT_EQ(q.layers[0].sdp.unary->beta, 0.5);
}

TEST(PlanActivation, MulOfXAndSigmoidOfXIsOneSiluLayer) {
  for (const bool sigmoid_first : {true, false}) {
    GraphBuilder b;
    b.input("x", {1, 4, 3, 3});
    b.node("Sigmoid", "sig", {"x"}, {"s"});
    b.node("Mul", "mul",
           sigmoid_first ? std::vector<std::string>{"s", "x"} : std::vector<std::string>{"x", "s"},
           {"y"});
    b.output("y");
    const NetPlan p = plan_network(b.graph(), "nv_full");
    ASSERT_EQ(p.layers.size(), 1U);
    EXPECT_EQ(p.layers[0].sdp.unary->function, UnaryFunction::kSilu);
    EXPECT_EQ(p.layers[0].nodes, (std::vector<std::size_t>{0, 1}));
    EXPECT_EQ(p.layers[0].output, "y");
    EXPECT_EQ(layer_nodes_label(b.graph(), p.layers[0]), "Sigmoid 'sig' + Mul 'mul'");
  }
}

// x [1, 4, 3, 3] -> Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5 (PyTorch's nn.GELU at
// opset 13), with the constants as initializers.
GraphBuilder gelu_graph(float sqrt2) {
  GraphBuilder b;
  b.input("x", {1, 4, 3, 3});
  b.constant("c", {}, {sqrt2});
  b.constant("one", {}, {1.0F});
  b.constant("half", {}, {0.5F});
  b.node("Div", "div", {"x", "c"}, {"d"});
  b.node("Erf", "erf", {"d"}, {"e"});
  b.node("Add", "add", {"e", "one"}, {"a"});
  b.node("Mul", "mul", {"x", "a"}, {"m"});
  b.node("Mul", "half", {"m", "half"}, {"y"});
  b.output("y");
  return b;
}

TEST(PlanActivation, PytorchGeluIsOneLayer) {
  const GraphBuilder b = gelu_graph(1.4142135F);
  const NetPlan p = plan_network(b.graph(), "nv_full");
  ASSERT_EQ(p.layers.size(), 1U);
  EXPECT_EQ(p.layers[0].sdp.unary->function, UnaryFunction::kGelu);
  EXPECT_EQ(p.layers[0].nodes, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(p.layers[0].input, "x");
  EXPECT_EQ(p.layers[0].output, "y");
  // ONNX's own Gelu (opset 20).
  const NetPlan q = plan_network(unary_graph("Gelu").graph(), "nv_full");
  EXPECT_EQ(q.layers.at(0).sdp.unary->function, UnaryFunction::kGelu);
  GraphBuilder t = unary_graph("Gelu");
  models::graph::Attribute tanh;
  tanh.kind = models::graph::Attribute::Kind::kString;
  tanh.s = "tanh";
  t.graph().nodes[0].attributes["approximate"] = tanh;
  try {
    (void)plan_network(t.graph(), "nv_full");
    ADD_FAILURE() << "tanh GELU planned";
  } catch (const GraphError& e) {
    EXPECT_STREQ(e.what(), "Gelu 'act': approximate='tanh' is not lowered (the exact GELU is)");
  }
}

TEST(PlanActivation, ADivThatIsNotGeluIsRefused) {
  // x / 2 is not x / sqrt(2): the Div is not the start of GELU.
  try {
    (void)plan_network(gelu_graph(2.0F).graph(), "nv_full");
    ADD_FAILURE() << "Div planned";
  } catch (const GraphError& e) {
    EXPECT_STREQ(e.what(),
                 "Div 'div': Div is not supported on the DLA of nv_full (it is lowered only as the "
                 "start of GELU: Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5))");
  }
}

TEST(PlanActivation, OtherProductsOfASigmoidStayTwoLayers) {
  // Mul(r, Sigmoid(x)) with r another tensor: a Sigmoid, then an element-wise Mul.
  GraphBuilder b;
  b.input("x", {1, 4, 3, 3});
  b.node("Relu", "relu", {"x"}, {"r"});
  b.node("Sigmoid", "sig", {"x"}, {"s"});
  b.node("Mul", "mul", {"r", "s"}, {"y"});
  b.output("y");
  const NetPlan p = plan_network(b.graph(), "nv_full");
  ASSERT_EQ(p.layers.size(), 3U);
  EXPECT_EQ(p.layers[1].sdp.unary->function, UnaryFunction::kSigmoid);
  EXPECT_FALSE(p.layers[2].sdp.unary.has_value());
  // A Sigmoid that is also a graph output is not fused into the Mul.
  GraphBuilder c;
  c.input("x", {1, 4, 3, 3});
  c.node("Sigmoid", "sig", {"x"}, {"s"});
  c.node("Mul", "mul", {"x", "s"}, {"y"});
  c.output("y").output("s");
  const NetPlan q = plan_network(c.graph(), "nv_full");
  ASSERT_EQ(q.layers.size(), 2U);
  EXPECT_EQ(q.layers[0].sdp.unary->function, UnaryFunction::kSigmoid);
}

std::string compile_error(const models::graph::Graph& g, const char* config, NetPrecision p) {
  const HwConfig hw = load_hw_config(config);
  try {
    CompiledNetwork net = prepare_network(g, hw);
    QuantOptions o;
    o.precision = p;
    quantize_network(net, hw, random_images(net.plan, 2), o);
  } catch (const GraphError& e) {
    return e.what();
  }
  return "";
}

TEST(LowerActivation, WithoutTheLutOnlyHardSigmoidRuns) {
  EXPECT_EQ(compile_error(unary_graph("Sigmoid").graph(), "nv_small", NetPrecision::kInt8),
            "Sigmoid 'act': Sigmoid runs on the SDP LUT, which nv_small does not have (nv_full "
            "and the configurations with SDP_LUT have it; HardSigmoid runs without it)");
  EXPECT_EQ(compile_error(unary_graph("HardSigmoid").graph(), "nv_small", NetPrecision::kInt8), "");
}

TEST(LowerActivation, Fp16HardSigmoidOperandsMustFitFp16) {
  GraphBuilder b = unary_graph("HardSigmoid");
  b.graph().nodes[0].attributes["alpha"] = float_attr(1e-6F);
  EXPECT_EQ(compile_error(b.graph(), "nv_full", NetPrecision::kFp16),
            "HardSigmoid 'act': alpha 1e-06 and beta 0.5: alpha or beta/alpha does not fit FP16 "
            "(BS computes (x + beta/alpha) * alpha with FP16 operands)");
}

TEST(LowerActivation, Int8IsOneLutLayerWithUnsignedSigmoidCodes) {
  const HwConfig hw = load_hw_config("nv_full");
  CompiledNetwork net = prepare_network(unary_graph("Sigmoid").graph(), hw);
  Tensor images = random_images(net.plan, 4);
  for (float& v : images.f) v = 40 * v - 20;  // sigmoid's clip stays at most 1
  quantize_network(net, hw, images, QuantOptions{});
  ASSERT_EQ(net.program.layers.size(), 1U);
  const auto& s = std::get<SdpLayer>(net.program.layers[0].hw);
  ASSERT_TRUE(s.lut.has_value());
  const TensorQuant& y = net.program.table.at("y");
  EXPECT_TRUE(y.is_unsigned);
  EXPECT_LE(y.clip, 1.0);
  EXPECT_GT(y.clip, 0.99);
}

TEST(ScheduleActivation, ADifferentLutWaitsForTheLayerUsingTheLut) {
  // Sigmoid and Tanh both read x and write their own tensors: no memory dependency, but the
  // Tanh layer rewrites the shared LUT storage.
  GraphBuilder b;
  b.input("x", {1, 4, 3, 3});
  b.node("Sigmoid", "sig", {"x"}, {"a"});
  b.node("Tanh", "tanh", {"x"}, {"t"});
  b.node("Relu", "relu", {"x"}, {"r"});
  b.output("a").output("t").output("r");
  const HwConfig hw = load_hw_config("nv_full");
  CompiledNetwork net = prepare_network(b.graph(), hw);
  Tensor images = random_images(net.plan, 2);
  for (float& v : images.f) v = 4 * v - 2;
  quantize_network(net, hw, images, QuantOptions{});
  const std::vector<std::vector<std::size_t>> deps = layer_dependencies(net.program);
  ASSERT_EQ(deps.size(), 3U);
  EXPECT_EQ(deps[1], (std::vector<std::size_t>{0}));
  // The ReLU has no LUT: it waits only for its register group's holder two layers back, not
  // for the Tanh.
  EXPECT_EQ(deps[2], (std::vector<std::size_t>{0}));
}

TEST(BackendActivationBound, SigmoidElementByHand) {
  GraphBuilder b = unary_graph("Sigmoid");
  BackendDataSet d;
  std::vector<float> x(36, 0.0F);
  x[0] = 0.1F;  // FP16 rounds it by 2^-11 |x| at most
  d.inputs = {Tensor::floats({1, 4, 3, 3}, x)};
  std::vector<float> y(36, 0.5F);
  y[0] = static_cast<float>(1.0 / (1.0 + std::exp(-0.1)));
  d.outputs = {Tensor::floats({1, 4, 3, 3}, y)};
  const std::vector<double> bound = fp16_bounds(b.graph(), d, 0);
  const double x16 = models::fp16_to_float(models::fp16_from_float(0.1F));
  // 1/4 the input's rounding + the recipe's bound at the FP16 input (between x16 - e and
  // x16 + e, where it barely moves) + 2^-20 |b| + 2^-24 for ONNX's float32 value.
  const double e_in = std::ldexp(double{0.1F}, -11) + std::ldexp(1.0, -25);
  const double own = fp16_activation_bound(Unary{UnaryFunction::kSigmoid}, x16);
  EXPECT_NEAR(bound[0], 0.25 * e_in + own + std::ldexp(double{y[0]}, -20) + std::ldexp(1.0, -24),
              1e-8);
  // The recipe: 2^-12 / 4 input grid + the table (a few 2^-15) + the FP16 step of 0.52 (2^-11).
  EXPECT_GT(own, std::ldexp(1.0, -14));
  EXPECT_LT(own, std::ldexp(1.0, -10));
  // A Conv next to a LUT activation has no bound here: refused, naming the node.
  GraphBuilder c;
  c.input("x", {1, 4, 3, 3});
  c.node("Sigmoid", "sig", {"x"}, {"s"});
  c.node("Add", "add", {"s", "x"}, {"y"});
  c.output("y");
  try {
    (void)fp16_bounds(c.graph(), d, 0);
    ADD_FAILURE() << "no refusal";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("Add 'add': no FP16 error bound"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace octasim::firmware::net
