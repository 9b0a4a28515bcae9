// Concat in the network compiler without a device: the plan (no layer; each input recorded with
// the Concat holding it), the refusals (other axes, constants, views, a tensor concatenated
// twice, readers that cannot take a padded layout, octav-device), the channel layouts the
// lowering chooses (aligned offsets, nested Concats, the map a graph output is read through),
// the zero weight rows of a padded layout, the shared quantization of a concatenation group,
// and small networks run through the quantized reference executor (models/) against the FP32
// reference: a Concat of the graph's input, a Concat input another layer also reads, a Concat
// that is itself a graph output. The device runs are concat_device_test.cpp.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/rewrite.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/net/weights.hpp"
#include "models/graph/reference.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::firmware::net {
namespace {

using models::graph::GraphError;
using models::graph::Node;
using models::graph::Tensor;
using nettest::contains;
using nettest::conv1x1;
using nettest::error_of;
using nettest::GraphBuilder;
using nettest::int_attr;
using nettest::ints_attr;
using nettest::ramp;

// A 1x1 convolution `name` of `cin` -> `k` channels with a ReLU (when `relu`), in -> out.
Node& concat(GraphBuilder& b, const std::string& name, std::vector<std::string> in,
             const std::string& out, std::int64_t axis = 1) {
  Node& n = b.node("Concat", name, std::move(in), {out});
  n.attributes["axis"] = int_attr(axis);
  return n;
}

CompiledNetwork compile(const models::graph::Graph& g, const char* config,
                        NetPrecision precision = NetPrecision::kInt8,
                        ClipCalibration calibration = ClipCalibration::kMax) {
  const HwConfig hw = load_hw_config(config);
  CompiledNetwork net = prepare_network(g, hw);
  QuantOptions o;
  o.precision = precision;
  o.calibration = calibration;
  quantize_network(net, hw, random_images(net.plan, 4, 3), o);
  return net;
}

TEST(ConcatPlan, NoLayerAndEachInputRecorded) {
  GraphBuilder b;
  b.input("x", {1, 4, 6, 6});
  conv1x1(b, "a", "x", "a_out", 4, 5);
  conv1x1(b, "b", "x", "b_out", 4, 3);
  concat(b, "cat", {"a_out", "b_out"}, "cat");
  conv1x1(b, "head", "cat", "y", 8, 2, false);
  b.output("y");
  const NetPlan p = plan_network(b.graph(), "nv_small");
  ASSERT_EQ(p.layers.size(), 3U);  // a, b, head: the Concat is no layer
  EXPECT_EQ(p.layers[2].input, "cat");
  ASSERT_EQ(p.concats.count("cat"), 1U);
  EXPECT_EQ(p.concats.at("cat").inputs, (std::vector<std::string>{"a_out", "b_out"}));
  EXPECT_EQ(p.concat_parent.at("a_out"), "cat");
  EXPECT_EQ(p.concat_parent.at("b_out"), "cat");
  EXPECT_EQ(p.cubes.at("cat").channels, 8U);
  EXPECT_EQ(p.cubes.at("cat").width, 6U);
}

TEST(ConcatPlan, Refusals) {
  const auto planned = [](const std::function<void(GraphBuilder&)>& build) {
    GraphBuilder b;
    b.input("x", {1, 4, 6, 6});
    conv1x1(b, "a", "x", "a_out", 4, 5);
    conv1x1(b, "b", "x", "b_out", 4, 3);
    build(b);
    return error_of([&] { (void)plan_network(b.graph(), "nv_small"); });
  };
  EXPECT_TRUE(
      contains(planned([](GraphBuilder& b) {
                 concat(b, "cat", {"a_out", "b_out"}, "y", 1);
                 b.node("Concat", "h", {"a_out", "a_out"}, {"z"}).attributes["axis"] = int_attr(2);
                 b.output("y").output("z");
               }),
               "Concat 'h': axis 2 not supported on the DLA"));
  EXPECT_TRUE(contains(planned([](GraphBuilder& b) {
                         concat(b, "cat", {"a_out", "a_out"}, "y", -4);
                         b.output("y");
                       }),
                       "Concat 'cat': axis 0 not supported on the DLA"));
  EXPECT_TRUE(contains(planned([](GraphBuilder& b) {
                         b.constant("k", {1, 2, 6, 6}, ramp(72));
                         concat(b, "cat", {"a_out", "k"}, "y");
                         b.output("y");
                       }),
                       "Concat 'cat': input 'k' is a constant"));
  EXPECT_TRUE(contains(planned([](GraphBuilder& b) {
                         b.node("Flatten", "flat", {"a_out"}, {"f"});
                         b.node("Flatten", "flat2", {"b_out"}, {"g"});
                         concat(b, "cat", {"f", "g"}, "y");
                         b.output("y");
                       }),
                       "Concat 'cat': input 'f' is a view of 'a_out'"));
  EXPECT_TRUE(contains(planned([](GraphBuilder& b) {
                         concat(b, "cat", {"a_out", "b_out", "a_out"}, "y");
                         b.output("y");
                       }),
                       "Concat 'cat': input 'a_out' is concatenated twice by this Concat"));
  EXPECT_TRUE(contains(planned([](GraphBuilder& b) {
                         concat(b, "cat", {"a_out", "b_out"}, "y");
                         concat(b, "cat2", {"b_out", "x"}, "z");
                         b.output("y").output("z");
                       }),
                       "Concat 'cat2': input 'b_out' is concatenated already by Concat 'cat'"));
  // Not a refusal: Concat on the channel axis, by its negative name.
  EXPECT_EQ(planned([](GraphBuilder& b) {
              concat(b, "cat", {"a_out", "b_out"}, "y", -3);
              b.output("y");
            }),
            "");
}

// x [1, 8, 4, 4]: a (n_a channels), b (n_b), c (n_c) 1x1 convolutions; inner = Concat(a, b),
// outer = Concat(inner, c) -> MaxPool 1x1 -> graph output; outer -> 1x1 head -> output.
models::graph::Graph nested(std::int64_t na, std::int64_t nb, std::int64_t nc) {
  GraphBuilder b;
  b.input("x", {1, 8, 4, 4});
  conv1x1(b, "a", "x", "a_out", 8, na);
  conv1x1(b, "b", "x", "b_out", 8, nb);
  conv1x1(b, "c", "x", "c_out", 8, nc);
  concat(b, "inner", {"a_out", "b_out"}, "inner");
  concat(b, "outer", {"inner", "c_out"}, "outer");
  b.node("MaxPool", "pool", {"outer"}, {"m"}).attributes["kernel_shape"] = ints_attr({1, 1});
  conv1x1(b, "head", "outer", "y", na + nb + nc, 3, false);
  b.output("m").output("y");
  return b.graph();
}

TEST(ConcatLayout, NestedConcatsComposeTheirMaps) {
  // nv_small INT8: 8 channels per atom. a: 0..4, b at 8..10, inner = 11 channels on 11 surface
  // channels (0..4, 8..10); c at 16..21.
  const CompiledNetwork net = compile(nested(5, 3, 6), "nv_small");
  const NetTensor& m = net.program.outputs.at(0);
  EXPECT_EQ(m.surface.channels, 22U);
  EXPECT_EQ(m.channel_map,
            (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 8, 9, 10, 16, 17, 18, 19, 20, 21}));
  EXPECT_EQ(m.channels(), 14U);
  EXPECT_EQ(tensor_elements(m), 14U * 16U);
}

TEST(ConcatLayout, AlignedCountsKeepTheDenseLayout) {
  const CompiledNetwork net = compile(nested(8, 16, 8), "nv_small");
  const NetTensor& m = net.program.outputs.at(0);
  EXPECT_EQ(m.surface.channels, 32U);
  EXPECT_TRUE(m.channel_map.empty());
}

// The quantized reference executor (models/) on the compiled network, against the FP32 reference:
// every output within 5% of its largest magnitude (a few INT8 roundings; a misplaced block or a
// wrong step is far off).
void expect_close_to_fp32(const CompiledNetwork& net, std::size_t images) {
  const Tensor batch = random_images(net.plan, 4, 3);  // the calibration images
  for (std::size_t i = 0; i < images; ++i) {
    HostMemory mem;
    load_constants(net.program, mem);
    write_input(net.program, batch, i, mem);
    (void)run_network_model(net.program, mem);
    const models::graph::TensorMap ref =
        models::graph::run_reference(net.graph, {{net.plan.input, slice_batch(batch, i, 1)}});
    for (std::size_t k = 0; k < net.program.outputs.size(); ++k) {
      const Tensor d = read_output(net.program, k, mem);
      const Tensor& y = ref.at(net.plan.outputs[k]);
      ASSERT_EQ(d.f.size(), y.f.size()) << net.plan.outputs[k];
      double peak = 0.0, worst = 0.0;
      for (std::size_t e = 0; e < y.f.size(); ++e) {
        peak = std::max(peak, std::abs(double{y.f[e]}));
        worst = std::max(worst, std::abs(double{d.f[e]} - double{y.f[e]}));
      }
      EXPECT_GT(peak, 0.0) << net.plan.outputs[k];
      EXPECT_LE(worst, 0.05 * peak) << net.plan.outputs[k] << " image " << i;
    }
  }
}

// DenseNet's pattern: every feature concatenated into every later block's input. The compiler
// copies a tensor that already lives in a Concat (Mul by 1: an SDP layer) into the next one.
models::graph::Graph dense_block() {
  GraphBuilder b;
  b.input("x", {1, 4, 5, 5});
  conv1x1(b, "f1", "x", "f1_out", 4, 3);
  concat(b, "cat1", {"x", "f1_out"}, "cat1");
  conv1x1(b, "f2", "cat1", "f2_out", 7, 3);
  concat(b, "cat2", {"x", "f1_out", "f2_out"}, "cat2");
  conv1x1(b, "head", "cat2", "y", 10, 2, false);
  b.output("y");
  return b.graph();
}

TEST(ConcatCopies, ATensorAlreadyConcatenatedIsCopiedIntoTheNextConcat) {
  models::graph::Graph g = dense_block();
  EXPECT_NE(error_of([&] { (void)plan_network(g, "nv_small"); }), "");  // refused as it is
  EXPECT_EQ(insert_concat_copies(g), 2U);                               // x and f1_out into cat2
  const Node* cat2 = nullptr;
  for (const Node& n : g.nodes) cat2 = n.name == "cat2" ? &n : cat2;
  ASSERT_NE(cat2, nullptr);
  for (std::size_t k = 0; k < 2; ++k) {
    const Node* copy = g.producer(cat2->inputs[k]);
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(copy->op_type, "Mul");
    EXPECT_EQ(g.initializers.at(copy->inputs[1]).f, std::vector<float>{1.0F});
  }
  EXPECT_EQ(cat2->inputs[2], "f2_out");
  const NetPlan p = plan_network(g, "nv_small");
  EXPECT_EQ(p.layers.size(), 5U);  // f1, f2, two copies, head
  // A Concat naming one tensor twice gets one copy; a graph with nothing shared gets none.
  GraphBuilder twice;
  twice.input("x", {1, 4, 5, 5});
  conv1x1(twice, "a", "x", "a_out", 4, 3);
  concat(twice, "cat", {"a_out", "a_out"}, "y");
  twice.output("y");
  models::graph::Graph t = twice.graph();
  EXPECT_EQ(insert_concat_copies(t), 1U);
  models::graph::Graph n = nested(5, 3, 6);
  EXPECT_EQ(insert_concat_copies(n), 0U);
}

// A squeeze-excitation's global pooling over 16 x 12 (PDP's kernel is at most 8): AveragePool
// 8x6 stride 8x6, then GlobalAveragePool over 2 x 2; the same means as one global pool.
TEST(GlobalPoolSplit, LargeExtentsBecomeAChainOfPools) {
  GraphBuilder b;
  b.input("x", {1, 4, 16, 12});
  conv1x1(b, "a", "x", "a_out", 4, 8);
  b.node("GlobalAveragePool", "gap", {"a_out"}, {"m"});
  b.output("m");
  models::graph::Graph g = b.graph();
  const models::graph::Graph original = g;
  EXPECT_EQ(split_global_pools(g), 1U);
  ASSERT_EQ(g.nodes.size(), original.nodes.size() + 1);
  const Node& stage = g.nodes[g.nodes.size() - 2];
  EXPECT_EQ(stage.op_type, "AveragePool");
  EXPECT_EQ(stage.get_ints("kernel_shape", {}), (std::vector<std::int64_t>{8, 6}));
  EXPECT_EQ(stage.get_ints("strides", {}), (std::vector<std::int64_t>{8, 6}));
  EXPECT_EQ(g.nodes.back().op_type, "GlobalAveragePool");
  const Tensor x = random_images(plan_network(g, "nv_full"), 1, 5);
  const Tensor want = models::graph::run_reference(original, {{"x", x}}).at("m");
  const Tensor got = models::graph::run_reference(g, {{"x", x}}).at("m");
  ASSERT_EQ(got.shape, want.shape);
  for (std::size_t e = 0; e < want.f.size(); ++e) EXPECT_NEAR(got.f[e], want.f[e], 1e-5) << e;
  expect_close_to_fp32(compile(g, "nv_full"), 1);
  // 7 x 7 fits PDP; 11 x 11 has no factor of at most 8: both left alone.
  for (const std::int64_t side : {7, 11}) {
    GraphBuilder c;
    c.input("x", {1, 4, side, side});
    c.node("GlobalAveragePool", "gap", {"x"}, {"m"});
    c.output("m");
    models::graph::Graph h = c.graph();
    EXPECT_EQ(split_global_pools(h), 0U) << side;
  }
}

TEST(ConcatCopies, DenseBlockRunsOnTheReferenceExecutor) {
  expect_close_to_fp32(compile(dense_block(), "nv_small"), 2);
}

TEST(ConcatLayout, NestedPaddedConcatRunsOnTheReferenceExecutor) {
  expect_close_to_fp32(compile(nested(5, 3, 6), "nv_small"), 2);
}

TEST(ConcatLayout, GraphInputConcatInputAlsoReadElsewhereAndConcatAsGraphOutput) {
  // cat = Concat(x, a(x)) is a graph output; x (the graph's input, written by the host into
  // cat's surface) is also read by a; a's output is also read by a second convolution.
  GraphBuilder b;
  b.input("x", {1, 3, 5, 5});
  conv1x1(b, "a", "x", "a_out", 3, 6);
  concat(b, "cat", {"x", "a_out"}, "cat");
  conv1x1(b, "d", "a_out", "d_out", 6, 2, false);
  b.output("cat").output("d_out");
  const CompiledNetwork net = compile(b.graph(), "nv_small");
  const NetProgram& p = net.program;
  const NetTensor& cat = p.outputs.at(0);
  EXPECT_EQ(cat.channel_map, (std::vector<std::uint32_t>{0, 1, 2, 8, 9, 10, 11, 12, 13}));
  EXPECT_EQ(p.input.surface.address, cat.surface.address);  // x lives inside cat
  EXPECT_EQ(p.input.quant.clip, cat.quant.clip);
  expect_close_to_fp32(net, 2);
}

TEST(ConcatLayout, ConvolutionWithItsPoolingOnTheFlyWritesIntoTheConcat) {
  // p = MaxPool(a) is the pooling of a's only reader: CONV and PDP run as one layer whose PDP
  // writes p's block of cat (an inception-v3 reduction block's shape).
  GraphBuilder b;
  b.input("x", {1, 4, 8, 8});
  conv1x1(b, "a", "x", "a_out", 4, 5);
  auto& mp = b.node("MaxPool", "mp", {"a_out"}, {"p"});
  mp.attributes["kernel_shape"] = ints_attr({2, 2});
  mp.attributes["strides"] = ints_attr({2, 2});
  auto& ap = b.node("AveragePool", "ap", {"x"}, {"q"});
  ap.attributes["kernel_shape"] = ints_attr({2, 2});
  ap.attributes["strides"] = ints_attr({2, 2});
  conv1x1(b, "c", "q", "c_out", 4, 3);
  concat(b, "cat", {"p", "c_out"}, "cat");
  conv1x1(b, "head", "cat", "y", 8, 2, false);
  b.output("y").output("cat");
  const CompiledNetwork net = compile(b.graph(), "nv_small");
  const bool fused =
      std::any_of(net.program.layers.begin(), net.program.layers.end(), [](const NetLayer& l) {
        return contains(l.nodes, "MaxPool 'mp'") && contains(l.nodes, "Conv 'a'");
      });
  EXPECT_TRUE(fused);
  EXPECT_EQ(net.program.outputs.at(1).channel_map,
            (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 8, 9, 10}));
  expect_close_to_fp32(net, 2);
}

TEST(ConcatLayout, SpreadInputChannelsGivesZeroRows) {
  models::ops::ConvWeights w(2, 1, 2, 3);  // 2 kernels, 1x2, 3 channels
  for (std::size_t i = 0; i < w.data.size(); ++i) w.data[i] = static_cast<std::int32_t>(i + 1);
  const models::ops::ConvWeights s = spread_input_channels(w, {0, 4, 5}, 8);
  ASSERT_EQ(s.channels, 8U);
  ASSERT_EQ(s.data.size(), 2U * 2U * 8U);
  for (std::uint32_t k = 0; k < 2; ++k)
    for (std::uint32_t x = 0; x < 2; ++x) {
      EXPECT_EQ(s.at(k, 0, x, 0), w.at(k, 0, x, 0));
      EXPECT_EQ(s.at(k, 0, x, 4), w.at(k, 0, x, 1));
      EXPECT_EQ(s.at(k, 0, x, 5), w.at(k, 0, x, 2));
      for (std::uint32_t c : {1U, 2U, 3U, 6U, 7U}) EXPECT_EQ(s.at(k, 0, x, c), 0);
    }
  EXPECT_THROW((void)spread_input_channels(w, {0, 1}, 8), GraphError);
}

TEST(ConcatQuant, GroupSharesOneClipThroughPools) {
  // cat = Concat(a, MaxPool(b)): the pool keeps its input's codes, so b shares cat's clip too;
  // the head's output keeps its own.
  GraphBuilder b;
  b.input("x", {1, 4, 6, 6});
  conv1x1(b, "a", "x", "a_out", 4, 5);
  conv1x1(b, "b", "x", "b_out", 4, 3);
  auto& mp = b.node("MaxPool", "mp", {"b_out"}, {"p"});
  mp.attributes["kernel_shape"] = ints_attr({3, 3});
  mp.attributes["pads"] = ints_attr({1, 1, 1, 1});
  concat(b, "cat", {"a_out", "p"}, "cat");
  conv1x1(b, "head", "cat", "y", 8, 2, false);
  b.output("y");
  const CompiledNetwork net = compile(b.graph(), "nv_small");
  const models::graph::TensorMap v =
      models::graph::run_reference(net.graph, {{"x", random_images(net.plan, 4, 3)}});
  double peak = 0.0;
  for (const char* t : {"a_out", "b_out", "p", "cat"}) {
    for (float f : v.at(t).f) peak = std::max(peak, std::abs(double{f}));
  }
  for (const char* t : {"a_out", "b_out", "p", "cat"}) {
    const TensorQuant& q = net.program.table.at(t);
    EXPECT_DOUBLE_EQ(q.clip, peak) << t;
    EXPECT_TRUE(q.is_unsigned) << t;  // every member is a ReLU output
    EXPECT_TRUE(contains(q.method, "Concat 'cat'")) << q.method;
  }
  EXPECT_FALSE(contains(net.program.table.at("y").method, "Concat"));
}

TEST(ConcatQuant, SignedMemberMakesTheGroupSigned) {
  GraphBuilder b;
  b.input("x", {1, 4, 6, 6});
  conv1x1(b, "a", "x", "a_out", 4, 5);
  conv1x1(b, "b", "x", "b_out", 4, 3, false);  // no ReLU: signed
  concat(b, "cat", {"a_out", "b_out"}, "cat");
  conv1x1(b, "head", "cat", "y", 8, 2, false);
  b.output("y");
  const CompiledNetwork net = compile(b.graph(), "nv_small", NetPrecision::kInt4);
  for (const char* t : {"a_out", "b_out", "cat"}) {
    EXPECT_FALSE(net.program.table.at(t).is_unsigned) << t;
    EXPECT_EQ(net.program.table.at(t).bits, 8) << t;  // the signed member's 8-bit codes
  }
}

TEST(ConcatQuant, Int4ReluMembersKeepFourBits) {
  GraphBuilder b;
  b.input("x", {1, 4, 6, 6});
  conv1x1(b, "a", "x", "a_out", 4, 5);
  conv1x1(b, "b", "x", "b_out", 4, 3);
  concat(b, "cat", {"a_out", "b_out"}, "cat");
  conv1x1(b, "head", "cat", "y", 8, 2, false);
  b.output("y");
  const CompiledNetwork net = compile(b.graph(), "nv_small", NetPrecision::kInt4);
  for (const char* t : {"a_out", "b_out", "cat"}) {
    EXPECT_TRUE(net.program.table.at(t).is_unsigned) << t;
    EXPECT_EQ(net.program.table.at(t).bits, 4) << t;
  }
}

TEST(ConcatRefusals, ReadersThatCannotTakeAPaddedLayout) {
  // a (5 channels) and b (3) on nv_small: b at channel 8, 3 unused channels between.
  const auto compiled = [](const std::function<void(GraphBuilder&)>& reader, NetPrecision precision,
                           const char* config) {
    GraphBuilder b;
    b.input("x", {1, 4, 6, 6});
    conv1x1(b, "a", "x", "a_out", 4, 5);
    conv1x1(b, "b", "x", "b_out", 4, 3);
    concat(b, "cat", {"a_out", "b_out"}, "cat");
    reader(b);
    return error_of([&] { (void)compile(b.graph(), config, precision); });
  };
  const std::string lrn = compiled(
      [](GraphBuilder& b) {
        b.node("LRN", "norm", {"cat"}, {"y"}).attributes["size"] = int_attr(3);
        b.output("y");
      },
      NetPrecision::kInt8, "nv_small");
  EXPECT_TRUE(contains(lrn, "LRN 'norm': its input 'cat' has unused channels")) << lrn;
  EXPECT_TRUE(contains(lrn, "CDP")) << lrn;
  // FP16 on nv_full (16 channels per atom): an Add of the padded tensor and a dense one.
  const std::string add = compiled(
      [](GraphBuilder& b) {
        conv1x1(b, "d", "x", "d_out", 4, 8);
        b.node("Add", "sum", {"cat", "d_out"}, {"y"});
        b.output("y");
      },
      NetPrecision::kFp16, "nv_full");
  EXPECT_TRUE(contains(add,
                       "Add 'sum': its operands 'cat' and 'd_out' lay their channels out "
                       "differently"))
      << add;
  const std::string octav = error_of([] {
    GraphBuilder b;
    b.input("x", {1, 4, 6, 6});
    conv1x1(b, "a", "x", "a_out", 4, 8);
    conv1x1(b, "b", "x", "b_out", 4, 8);
    concat(b, "cat", {"a_out", "b_out"}, "y");
    b.output("y");
    (void)compile(b.graph(), "nv_small", NetPrecision::kInt8, ClipCalibration::kOctavDevice);
  });
  EXPECT_TRUE(contains(octav, "octav-device is not supported for an input of a Concat")) << octav;
}

TEST(ConcatRefusals, CappedInputAboveItsBound) {
  // a = Clip(0, 0.05)(conv): its cap is below the clip the group shares with b.
  GraphBuilder b;
  b.input("x", {1, 4, 6, 6});
  b.constant("Wa", {4, 4, 1, 1}, ramp(16));
  b.node("Conv", "a", {"x", "Wa"}, {"a_pre"});
  b.constant("lo", {}, {0.0F});
  b.constant("hi", {}, {0.05F});
  b.node("Clip", "cap", {"a_pre", "lo", "hi"}, {"a_out"});
  conv1x1(b, "b", "x", "b_out", 4, 4);
  concat(b, "cat", {"a_out", "b_out"}, "y");
  b.output("y");
  const std::string e = error_of([&] { (void)compile(b.graph(), "nv_small"); });
  EXPECT_TRUE(contains(e, "Conv 'a' + Clip 'cap': its Clip bound 0.05 is below the clip")) << e;
  // FP16 has no shared clip: it compiles.
  EXPECT_EQ(error_of([&] { (void)compile(b.graph(), "nv_full", NetPrecision::kFp16); }), "");
}

}  // namespace
}  // namespace octasim::firmware::net
