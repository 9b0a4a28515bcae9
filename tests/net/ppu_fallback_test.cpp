// --fallback ppu (plan.hpp, program.hpp PpuNodeLayer): nodes the DLA refuses run on the PPU's
// kNode kernel. The planner's decisions on small graphs (which nodes fall back, why, what stays
// refused), and networks mixing DLA and PPU layers on the cycle-level SoC at FP16:
//   - the device equals the reference executor bit for bit after every layer (soc_run.hpp),
//   - the outputs agree with the FP32 reference executor within FP16's rounding.
// SystemC elaborates once per process: one network on the SoC per TEST.
#include <cmath>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/plan.hpp"
#include "firmware/net/runtime.hpp"
#include "models/graph/reference.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"
#include "soc_run.hpp"

namespace octasim::ppu_fallback_test {
namespace {

namespace fn = firmware::net;
using models::graph::Graph;
using models::graph::GraphError;
using models::graph::Tensor;
using nettest::contains;
using nettest::error_of;
using nettest::GraphBuilder;
using nettest::ints_attr;
using nettest::ramp;

// x (1x8x6x6) -> Conv 1x1 (8 -> 16) -> Abs -> Sqrt -> Conv 1x1 (16 -> 8) -> y. The DLA has no Abs
// and no Sqrt.
Graph conv_abs_sqrt_conv() {
  GraphBuilder b;
  b.input("x", {1, 8, 6, 6});
  b.constant("w1", {16, 8, 1, 1}, ramp(16 * 8));
  b.constant("w2", {8, 16, 1, 1}, ramp(8 * 16));
  b.node("Conv", "c1", {"x", "w1"}, {"a"});
  b.node("Abs", "abs", {"a"}, {"b"});
  b.node("Sqrt", "sqrt", {"b"}, {"c"});
  b.node("Conv", "c2", {"c", "w2"}, {"y"});
  b.output("y");
  return b.graph();
}

TEST(PpuFallbackPlan, NodesTheDlaRefusesGoToThePpuWithTheirReason) {
  const fn::NetPlan p =
      fn::plan_network(conv_abs_sqrt_conv(), "soc_large", true, fn::Fallback::kPpu);
  ASSERT_EQ(p.layers.size(), 4U);
  EXPECT_EQ(p.layers[0].kind, fn::LayerKind::kConv);
  EXPECT_EQ(p.layers[1].kind, fn::LayerKind::kPpu);
  EXPECT_EQ(p.layers[2].kind, fn::LayerKind::kPpu);
  EXPECT_EQ(p.layers[3].kind, fn::LayerKind::kConv);
  EXPECT_EQ(p.layers[1].ppu.reason, "Abs is not supported on the DLA of soc_large");
  EXPECT_EQ(p.layers[2].ppu.reason, "Sqrt is not supported on the DLA of soc_large");
  EXPECT_EQ(p.layers[1].ppu.reads, std::vector<std::string>{"a"});
  EXPECT_EQ(std::string(fn::layer_engine(p.layers[1].kind)), "PPU");
}

TEST(PpuFallbackPlan, WithoutFallbackOrWithoutAPpuTheNodeIsRefused) {
  const Graph g = conv_abs_sqrt_conv();
  const std::string none =
      error_of([&] { (void)fn::plan_network(g, "soc_large", true, fn::Fallback::kNone); });
  EXPECT_EQ(none, "Abs 'abs': Abs is not supported on the DLA of soc_large");
  const std::string no_ppu =
      error_of([&] { (void)fn::plan_network(g, "nv_full", false, fn::Fallback::kPpu); });
  EXPECT_EQ(no_ppu, "Abs 'abs': Abs is not supported on the DLA of nv_full");
}

TEST(PpuFallbackPlan, RefusesANodeOfTwoOutputsNamingBothReasons) {
  // A Split along W: the DLA splits channels only; a PPU node writes one output.
  GraphBuilder b;
  b.input("x", {1, 8, 6, 6});
  b.constant("w", {8, 8, 1, 1}, ramp(64));
  b.node("Conv", "c", {"x", "w"}, {"a"});
  b.node("Split", "split", {"a"}, {"l", "r"}).attributes["axis"] = nettest::int_attr(3);
  b.output("l");
  b.output("r");
  const std::string msg =
      error_of([&] { (void)fn::plan_network(b.graph(), "soc_large", true, fn::Fallback::kPpu); });
  EXPECT_TRUE(contains(msg, "Split 'split'")) << msg;
  EXPECT_TRUE(contains(msg, "the PPU cannot take it: 2 outputs; a PPU node writes one")) << msg;
}

TEST(PpuFallbackPlan, AFiveDimensionalTensorStaysOnThePpuAndItsReadersFollow) {
  // Reshape to 1x2x4x6x6, Transpose(0, 2, 1, 3, 4): a 5-D tensor only the PPU holds; the Relu
  // reading it falls back too (a DLA layer refuses the PPU-only cube).
  GraphBuilder b;
  b.input("x", {1, 8, 6, 6});
  b.constant("w", {8, 8, 1, 1}, ramp(64));
  b.graph().initializers["shape"] = nettest::int64_tensor({1, 2, 4, 6, 6});
  b.node("Conv", "c", {"x", "w"}, {"a"});
  b.node("Reshape", "r", {"a", "shape"}, {"a5"});
  b.node("Transpose", "t", {"a5"}, {"t5"}).attributes["perm"] = ints_attr({0, 2, 1, 3, 4});
  b.node("Relu", "relu", {"t5"}, {"y"});
  b.output("y");
  const fn::NetPlan p = fn::plan_network(b.graph(), "soc_large", true, fn::Fallback::kPpu);
  ASSERT_EQ(p.layers.size(), 3U);
  EXPECT_EQ(p.layers[1].kind, fn::LayerKind::kPpu);
  EXPECT_EQ(p.layers[1].ppu.reads, std::vector<std::string>{"a"});  // the Reshape is a view of a
  EXPECT_EQ(p.layers[2].kind, fn::LayerKind::kPpu);
  EXPECT_TRUE(contains(p.layers[2].ppu.reason, "of shape 1x4x2x6x6 is held for the PPU only"))
      << p.layers[2].ppu.reason;
  // W the last axis, H the one before, C the product of the others.
  EXPECT_EQ(p.cubes.at("t5").width, 6U);
  EXPECT_EQ(p.cubes.at("t5").height, 6U);
  EXPECT_EQ(p.cubes.at("t5").channels, 8U);
}

// Compiles `g` for soc_large (values networks: FP16, or INT16 integers when its input is
// integer) and runs image 0 of `images` through the models/ executor: output `k`.
Tensor compiled_output(const Graph& g, const Tensor& images, std::size_t k,
                       fn::CompiledNetwork* out = nullptr) {
  const HwConfig hw = load_hw_config("soc_large");
  fn::CompiledNetwork net = fn::prepare_network(g, hw, fn::Fallback::kPpu);
  fn::QuantOptions q;
  q.precision = fn::integer_network(net.graph) ? fn::NetPrecision::kInt16 : fn::NetPrecision::kFp16;
  fn::quantize_network(net, hw, images, q);
  firmware::HostMemory mem;
  fn::load_constants(net.program, mem);
  fn::write_input(net.program, images, 0, mem);
  (void)fn::run_network_model(net.program, mem);
  Tensor t = fn::read_output(net.program, k, mem);
  if (out != nullptr) *out = std::move(net);
  return t;
}

// An integer network (uint8 input): the DLA plans the Add as SDP, whose lowering refuses integer
// Add (SDP saturates where uint8 wraps); the node is planned again on the PPU, which reads and
// writes INT16 surfaces of uint8 values and wraps modulo 256 as ONNX does.
TEST(PpuFallbackInteger, AUint8AddRefusedByTheLoweringRunsOnThePpuAndWraps) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"x", models::graph::DType::kUInt8, {6}}};
  g.outputs = {{"y", models::graph::DType::kUInt8, {}}};
  g.initializers["c"] = Tensor::ints(models::graph::DType::kUInt8, {6}, {0, 255, 100, 100, 1, 128});
  models::graph::Node add;
  add.op_type = "Add";
  add.name = "add";
  add.inputs = {"x", "c"};
  add.outputs = {"y"};
  g.nodes.push_back(add);
  const std::vector<float> xs = {0, 1, 100, 200, 255, 128};
  const Tensor images = Tensor::floats({1, 6}, xs);
  fn::CompiledNetwork net;
  const Tensor y = compiled_output(g, images, 0, &net);
  const std::vector<float> want = {0, 0, 200, 44, 0, 0};  // (x + c) mod 256, by hand
  EXPECT_EQ(y.f, want);
  ASSERT_EQ(net.program.layers.size(), 1U);
  const auto* node = std::get_if<fn::PpuNodeLayer>(&net.program.layers[0].hw);
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(contains(net.program.layers[0].fallback, "integer Add/Mul are not lowered"))
      << net.program.layers[0].fallback;
  EXPECT_EQ(node->image.inputs[0].storage, models::ops::Storage::kSurfaceInt16);
  EXPECT_EQ(node->image.inputs[0].dtype, models::graph::DType::kUInt8);
  EXPECT_EQ(node->image.inputs[1].storage, models::ops::Storage::kDenseTyped);
  EXPECT_EQ(node->image.outputs[0].storage, models::ops::Storage::kSurfaceInt16);
}

// An integer network's PPU layer writes integers: a float result is refused at planning.
TEST(PpuFallbackInteger, AFloatResultInAnIntegerNetworkIsRefused) {
  Graph g;
  g.opset = 13;
  g.inputs = {{"x", models::graph::DType::kInt32, {4}}};
  g.outputs = {{"y", models::graph::DType::kFloat32, {}}};
  models::graph::Node cast;
  cast.op_type = "Cast";
  cast.name = "cast";
  cast.inputs = {"x"};
  cast.outputs = {"y"};
  cast.attributes["to"] = nettest::int_attr(1);
  g.nodes.push_back(cast);
  const std::string msg = error_of([&] {
    (void)compiled_output(g, Tensor::floats({1, 4}, {1, 2, 3, 4}), 0);
  });
  EXPECT_TRUE(contains(msg, "an integer network's PPU layers write INT16 integers")) << msg;
}

// Rubik's contract moves whole atoms: DepthToSpace to 2 channels passes the planner and is refused
// by the lowering; planned again, it runs on the PPU.
TEST(PpuFallbackLowering, DepthToSpaceTheLoweringRefusesRunsOnThePpu) {
  GraphBuilder b;
  b.input("x", {1, 8, 2, 3});
  b.node("DepthToSpace", "d2s", {"x"}, {"y"}).attributes["blocksize"] = nettest::int_attr(2);
  b.output("y");
  std::vector<float> xs(48);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i);
  fn::CompiledNetwork net;
  const Tensor y = compiled_output(b.graph(), Tensor::floats({1, 1, 8, 2, 3}, xs), 0, &net);
  ASSERT_EQ(net.program.layers.size(), 1U);
  EXPECT_TRUE(std::holds_alternative<fn::PpuNodeLayer>(net.program.layers[0].hw));
  EXPECT_TRUE(contains(net.program.layers[0].fallback, "Rubik")) << net.program.layers[0].fallback;
  // DCR: y[c][2h + i][2w + j] = x[(2i + j) * 2 + c][h][w], by hand.
  ASSERT_EQ(y.f.size(), 48U);
  for (int c = 0; c < 2; ++c) {
    for (int h = 0; h < 4; ++h) {
      for (int w = 0; w < 6; ++w) {
        const int src = (((h % 2) * 2 + w % 2) * 2 + c) * 6 + h / 2 * 3 + w / 2;
        EXPECT_EQ(y.f[static_cast<std::size_t>((c * 4 + h) * 6 + w)], static_cast<float>(src));
      }
    }
  }
}

// A folded output: Shape of the input is a constant the compiler writes into the memory image;
// the program reads it back as the output (exact at FP16). An INT8 network refuses it.
TEST(FoldedOutput, AShapeOutputIsReadBackFromTheMemoryImage) {
  GraphBuilder b;
  b.input("x", {1, 3, 4, 5});
  b.node("Shape", "shape", {"x"}, {"s"});
  b.node("Relu", "relu", {"x"}, {"y"});
  b.output("s");
  b.output("y");
  const Tensor images =
      fn::random_images(fn::prepare_network(b.graph(), load_hw_config("soc_large")).plan, 1, 3);
  fn::CompiledNetwork net;
  const Tensor s = compiled_output(b.graph(), images, 0, &net);
  EXPECT_EQ(s.f, (std::vector<float>{1, 3, 4, 5}));
  EXPECT_EQ(s.shape, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(net.program.layers.size(), 1U);  // the Relu; no layer computes the shape
  const HwConfig hw = load_hw_config("soc_large");
  fn::CompiledNetwork int8 = fn::prepare_network(b.graph(), hw);
  fn::QuantOptions q;
  q.precision = fn::NetPrecision::kInt8;
  const std::string msg = error_of([&] { fn::quantize_network(int8, hw, images, q); });
  EXPECT_TRUE(contains(msg, "output 's' is a constant folded at compile time")) << msg;
}

// Compiles `g` for soc_large at FP16, runs `count` random images in [-1, 1) on the SoC: bit-exact
// with the reference executor after every layer, and within `bound` (relative to the largest
// |output|) of the FP32 reference executor.
void check_on_soc(const Graph& g, std::size_t ppu_layers, double bound) {
  const HwConfig hw = load_hw_config("soc_large");
  fn::CompiledNetwork net = fn::prepare_network(g, hw, fn::Fallback::kPpu);
  constexpr std::size_t kImages = 2;
  Tensor images = fn::random_images(net.plan, kImages, 7);
  for (float& v : images.f) v = 2.0F * v - 1.0F;
  fn::QuantOptions q;
  q.precision = fn::NetPrecision::kFp16;
  fn::quantize_network(net, hw, images, q);
  const fn::NetProgram& prog = net.program;
  EXPECT_EQ(fn::fallback_summary(prog).ppu_layers, ppu_layers);
  const nettest::SocRun run = nettest::run_on_soc(prog, hw, images, kImages);
  EXPECT_EQ(run.differing_images, 0U);
  nettest::expect_near_fp32_reference(net, images, run, kImages, bound);
}

// Bounds: FP16 rounds every stored value by up to 2^-11 relative; a Conv of 16 terms, Abs
// (exact), Sqrt (halves the relative error, adds its own rounding), a Conv of 16 terms: a few
// 2^-11 of the output's scale. 1% is far above it and far below a wrong layer's error.
TEST(PpuFallbackOnSoc, ConvAbsSqrtConvIsBitExact) {
  check_on_soc(conv_abs_sqrt_conv(), 2, 0.01);
}

// Attention's core: s = Softmax(t t^T / 4), y = s t with t = Conv(in) as 8 tokens of 16 (a view,
// transposed): both MatMuls take two activations (the PPU's), as do the Transposes; the scaling
// is an SDP layer and the Softmax the PPU's softmax kernel.
Graph attention_core() {
  GraphBuilder b;
  b.input("x", {1, 16, 1, 8});
  b.constant("w", {16, 16, 1, 1}, ramp(256));
  b.constant("quarter", {}, {0.25F});
  b.graph().initializers["shape"] = nettest::int64_tensor({1, 16, 8});
  b.node("Conv", "proj", {"x", "w"}, {"p4"});
  b.node("Reshape", "view", {"p4", "shape"}, {"p"});
  b.node("Transpose", "tokens", {"p"}, {"t"}).attributes["perm"] = ints_attr({0, 2, 1});
  b.node("Transpose", "keys", {"t"}, {"k"}).attributes["perm"] = ints_attr({0, 2, 1});
  b.node("MatMul", "scores", {"t", "k"}, {"s"});
  b.node("Mul", "scale", {"s", "quarter"}, {"ss"});
  b.node("Softmax", "attn", {"ss"}, {"a"}).attributes["axis"] = nettest::int_attr(-1);
  b.node("MatMul", "mix", {"a", "t"}, {"y"});
  b.output("y");
  return b.graph();
}

TEST(PpuFallbackOnSoc, AttentionMatMulsOfTwoActivationsAreBitExact) {
  check_on_soc(attention_core(), 5, 0.01);
}

// --sync device (Schedule::kDeviceSync): the attention core above, the same image run on one SoC
// with host sync and then with device sync (PPU layers pushed behind SYNCPT_WAITs, DLA layers
// after a PPU layer programmed ahead): bit-exact with the reference executor both times, the same
// output codes, every PPU channel idle without an error, no channel interrupt left standing; and
// device sync refuses to run without the device's memory.
TEST(PpuFallbackOnSoc, DeviceSyncComputesWhatHostSyncDoes) {
  const HwConfig hw = load_hw_config("soc_large");
  fn::CompiledNetwork net = fn::prepare_network(attention_core(), hw, fn::Fallback::kPpu);
  Tensor images = fn::random_images(net.plan, 1, 7);
  for (float& v : images.f) v = 2.0F * v - 1.0F;
  fn::QuantOptions q;
  q.precision = fn::NetPrecision::kFp16;
  fn::quantize_network(net, hw, images, q);
  const fn::NetProgram& prog = net.program;
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  trace::DeviceMmio mmio(device, 50'000'000);
  auto memory = trace::dma_memory(device);
  fn::load_constants(prog, memory);
  firmware::HostMemory golden;
  fn::load_constants(prog, golden);
  fn::GroupState groups;
  std::vector<std::vector<std::int32_t>> codes;
  for (const fn::Schedule schedule : {fn::Schedule::kOverlap, fn::Schedule::kDeviceSync}) {
    const fn::ImageRun r = fn::run_image(prog, images, 0, memory, mmio, groups, golden, schedule);
    EXPECT_EQ(r.exact_images, 1U) << (schedule == fn::Schedule::kOverlap ? "host" : "device");
    codes.push_back(fn::read_output_codes(prog, 0, memory));
  }
  EXPECT_EQ(codes[0], codes[1]);
  namespace F = ppu_format;
  for (unsigned c = 0; c < F::kChannels && c < hw.ppu.channels; ++c) {
    const std::uint32_t base = F::kCsbBase + c * F::kChannelStride;
    EXPECT_EQ(mmio.read32(base + F::kError), 0U) << "channel " << c;
    EXPECT_EQ(mmio.read32(base + F::kGet), mmio.read32(base + F::kPut)) << "channel " << c;
  }
  EXPECT_EQ(soc.interrupts().status() >> F::kInterruptBit0 & 0xfU, 0U);
  // The syncpoints counted what the host's tally says.
  for (unsigned bit = 0; bit < F::kSyncpoints; ++bit) {
    if (groups.syncpoints[bit] == 0) continue;
    EXPECT_EQ(mmio.read32(F::kSyncptBase + 4 * bit), groups.syncpoints[bit]) << "bit " << bit;
  }
  const std::string msg = error_of(
      [&] { fn::program_network(prog, mmio, groups, fn::Schedule::kDeviceSync, nullptr); });
  EXPECT_TRUE(contains(msg, "needs the device's memory")) << msg;
}

}  // namespace
}  // namespace octasim::ppu_fallback_test
