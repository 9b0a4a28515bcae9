// Nearest upsampling (Resize, Upsample on BDMA) and ShuffleNet's channel shuffle (a 1x1 Conv
// with 0/1 weights after the rewrite) through the network compiler, on the functional device and
// the cycle-level SoC:
//   resize   a = relu(conv3x3(x)) of 40 channels (two C' surfaces at INT8, three at FP16);
//            u = Resize(a, scales 1,1,2,2; asymmetric, floor) (yolo's neck), y = conv3x3(u);
//            v = Resize(a, sizes H x 3, W x 2; opset 13's half_pixel, round_prefer_floor);
//            c = Concat(Resize(b, x 2), Resize(a, x 2)) with b = relu(conv1x1(a)), z = conv1x1(c):
//            BDMA writes into a Concat's surface. Outputs y, u, v, z.
//   shuffle  a = relu(conv3x3(x)) of 48 channels; Reshape (1, 4, 12, H, W), Transpose
//            (0, 2, 1, 3, 4), Reshape (1, 48, H, W) -> s; y = conv1x1(s). Outputs y, s.
// Checks, per image: every layer's output surface equals the quantized reference executor's
// (run_layer_model: models/), byte for byte; every output's codes too; every output within a
// fraction of its peak of the FP32 reference (models::graph::run_reference): 1/256 at FP16, 1/32
// at INT8; the overlapped schedule gives the serial one's outputs; the device records one
// operation per BDMA copy. SystemC elaborates once per process: one network and device per TEST.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <systemc>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/net/schedule.hpp"
#include "models/graph/reference.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"
#include "tests/firmware/e2e_util.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;
using nettest::GraphBuilder;
using nettest::int_attr;
using nettest::ints_attr;

constexpr std::int64_t kSize = 6;

// Deterministic weights of a K x C x R x R convolution scaled by the fan-in, mostly positive.
std::vector<float> weights(std::int64_t k, std::int64_t c, std::int64_t r, unsigned seed) {
  const auto n = static_cast<std::size_t>(k * c * r * r);
  std::vector<float> v(n);
  const float scale = 2.0F / std::sqrt(static_cast<float>(c * r * r));
  for (std::size_t i = 0; i < n; ++i) {
    const auto h = static_cast<int>(
        (i * 37 + seed * 101 + (i / static_cast<std::size_t>(c * r * r)) * 13) % 97);
    v[i] = scale * (static_cast<float>(h) / 96.0F - 0.25F);
  }
  return v;
}

void add_conv(GraphBuilder& b, const std::string& name, const std::string& in,
              const std::string& out, std::int64_t cin, std::int64_t k, std::int64_t r, bool relu,
              unsigned seed) {
  b.constant(name + "_W", {k, cin, r, r}, weights(k, cin, r, seed));
  std::vector<float> bias(static_cast<std::size_t>(k));
  for (std::size_t i = 0; i < bias.size(); ++i) {
    bias[i] = 0.05F * static_cast<float>(static_cast<int>(i % 7) - 2);
  }
  b.constant(name + "_B", {k}, bias);
  auto& n = b.node("Conv", name, {in, name + "_W", name + "_B"}, {relu ? name + "_pre" : out});
  n.attributes["kernel_shape"] = ints_attr({r, r});
  n.attributes["pads"] = ints_attr({r / 2, r / 2, r / 2, r / 2});
  if (relu) b.node("Relu", name + "_relu", {name + "_pre"}, {out});
}

models::graph::Graph resize_network() {
  GraphBuilder b;
  b.input("x", {1, 8, kSize, kSize});
  add_conv(b, "c0", "x", "a", 8, 40, 3, true, 1);
  b.constant("up_scales", {4}, {1.0F, 1.0F, 2.0F, 2.0F});
  auto& up = b.node("Resize", "up", {"a", "", "up_scales"}, {"u"});
  up.attributes["mode"] = nettest::string_attr("nearest");
  up.attributes["coordinate_transformation_mode"] = nettest::string_attr("asymmetric");
  up.attributes["nearest_mode"] = nettest::string_attr("floor");
  add_conv(b, "c1", "u", "y", 40, 16, 3, false, 2);
  b.graph().initializers["v_sizes"] =
      Tensor::ints(models::graph::DType::kInt64, {4}, {1, 40, 3 * kSize, 2 * kSize});
  b.node("Resize", "up32", {"a", "", "", "v_sizes"}, {"v"}).attributes["mode"] =
      nettest::string_attr("nearest");
  add_conv(b, "c2", "a", "bb", 40, 24, 1, true, 3);
  b.constant("x2", {4}, {1.0F, 1.0F, 2.0F, 2.0F});
  b.node("Resize", "up_b", {"bb", "", "x2"}, {"ub"}).attributes["mode"] =
      nettest::string_attr("nearest");
  b.node("Resize", "up_a", {"a", "", "x2"}, {"ua"}).attributes["mode"] =
      nettest::string_attr("nearest");
  b.node("Concat", "cat", {"ub", "ua"}, {"c"}).attributes["axis"] = int_attr(1);
  add_conv(b, "head", "c", "z", 64, 16, 1, false, 4);
  b.output("y").output("u").output("v").output("z");
  return b.graph();
}

models::graph::Graph shuffle_network() {
  GraphBuilder b;
  b.input("x", {1, 8, kSize, kSize});
  add_conv(b, "c0", "x", "a", 8, 48, 3, true, 1);
  b.graph().initializers["split_shape"] =
      Tensor::ints(models::graph::DType::kInt64, {5}, {1, 4, 12, kSize, kSize});
  b.graph().initializers["merge_shape"] =
      Tensor::ints(models::graph::DType::kInt64, {4}, {1, 48, kSize, kSize});
  b.node("Reshape", "split", {"a", "split_shape"}, {"g"});
  b.node("Transpose", "swap", {"g"}, {"t"}).attributes["perm"] = ints_attr({0, 2, 1, 3, 4});
  b.node("Reshape", "merge", {"t", "merge_shape"}, {"s"});
  add_conv(b, "c1", "s", "y", 48, 16, 1, false, 2);
  b.output("y").output("s");
  return b.graph();
}

enum class Device : std::uint8_t { kFunctional, kSoc };
constexpr std::size_t kImages = 2;

const fn::NetTensor& output_named(const fn::NetProgram& p, const std::string& name) {
  for (const fn::NetTensor& t : p.outputs) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no output " + name);
}

// Compiles `graph`, runs kImages images on `device` and checks what the file's comment lists.
fn::NetProgram run(const models::graph::Graph& graph, const char* config,
                   fn::NetPrecision precision, Device device) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  const HwConfig hw = load_hw_config(config);
  fn::CompiledNetwork net = fn::prepare_network(graph, hw);
  const Tensor images = fn::random_images(net.plan, 6, 11);  // calibration: these 6
  fn::QuantOptions options;
  options.precision = precision;
  fn::quantize_network(net, hw, images, options);
  const fn::NetProgram& prog = net.program;
  const bool fp16 = precision == fn::NetPrecision::kFp16;

  std::unique_ptr<soc::Soc> soc;
  std::unique_ptr<soc::HostAdapter> adapter;
  std::unique_ptr<dla::FunctionalDevice> functional;
  trace::Device* dev = nullptr;
  if (device == Device::kSoc) {
    soc = std::make_unique<soc::Soc>("dla", hw);
    adapter = std::make_unique<soc::HostAdapter>(*soc);
    dev = adapter.get();
  } else {
    functional = std::make_unique<dla::FunctionalDevice>(hw);
    dev = functional.get();
  }
  trace::DeviceMmio mmio(*dev, 50'000'000);
  DeviceMemory memory = trace::dma_memory(*dev);
  fn::load_constants(prog, memory);
  firmware::HostMemory golden;
  fn::load_constants(prog, golden);
  fn::GroupState groups;
  const auto bytes = [](const models::ops::Memory& m, std::uint64_t at, std::size_t n) {
    std::vector<std::uint8_t> v(n);
    m.read(at, v.data(), n);
    return v;
  };
  for (std::size_t i = 0; i < kImages; ++i) {
    fn::write_input(prog, images, i, memory);
    fn::write_input(prog, images, i, golden);
    for (std::size_t l = 0; l < prog.layers.size(); ++l) {
      fn::await_layer(mmio, fn::program_layer(prog, l, mmio, groups));
      (void)fn::run_layer_model(prog, l, golden);
      const firmware::FeatureSurface& dst = *fn::layer_output(prog.layers[l]);
      const auto n = static_cast<std::size_t>(fn::tensor_bytes(prog, dst));
      const std::uint64_t at = fn::dma_address_of(dst);
      EXPECT_TRUE(bytes(memory, at, n) == bytes(golden, at, n))
          << "image " << i << ": layer " << l << " (" << prog.layers[l].engine << " "
          << prog.layers[l].nodes << ") differs from the quantized reference executor";
    }
    const models::graph::TensorMap ref =
        models::graph::run_reference(net.graph, {{net.plan.input, fn::slice_batch(images, i, 1)}});
    for (std::size_t k = 0; k < prog.outputs.size(); ++k) {
      const std::string& name = prog.outputs[k].name;
      EXPECT_EQ(fn::read_output_codes(prog, k, memory), fn::read_output_codes(prog, k, golden))
          << name << ", image " << i;
      const Tensor d = fn::read_output(prog, k, memory);
      const Tensor& want = ref.at(name);
      EXPECT_EQ(d.f.size(), want.f.size()) << name;
      if (d.f.size() != want.f.size()) continue;
      double peak = 0.0, worst = 0.0;
      for (std::size_t e = 0; e < d.f.size(); ++e) {
        peak = std::max(peak, std::abs(double{want.f[e]}));
        worst = std::max(worst, std::abs(double{d.f[e]} - double{want.f[e]}));
      }
      EXPECT_GT(peak, 0.0) << name;
      EXPECT_LE(worst, (fp16 ? 1.0 / 256 : 1.0 / 32) * peak)
          << name << ", image " << i << ": largest error " << worst << ", peak " << peak;
      ::testing::Test::RecordProperty(
          name + "_" + std::to_string(i),
          "peak " + std::to_string(peak) + ", largest error " + std::to_string(worst));
    }
  }
  // Once more under the overlapped schedule (octasim net's default): a layer waits only for the
  // layers writing what it reads (the per-channel operand, a slice's source); same outputs.
  fn::write_input(prog, images, 0, memory);
  fn::program_network(prog, mmio, groups, fn::Schedule::kOverlap);
  firmware::HostMemory serial;
  fn::load_constants(prog, serial);
  fn::write_input(prog, images, 0, serial);
  (void)fn::run_network_model(prog, serial);
  for (std::size_t k = 0; k < prog.outputs.size(); ++k) {
    EXPECT_EQ(fn::read_output_codes(prog, k, memory), fn::read_output_codes(prog, k, serial))
        << prog.outputs[k].name << " under the overlapped schedule";
  }
  const std::size_t recorded = soc ? soc->dla().layers().size() : functional->layers().size();
  std::size_t per_image = 0;
  for (const fn::NetLayer& l : prog.layers) per_image += fn::device_records(l).size();
  EXPECT_EQ(recorded, per_image * (kImages + 1));
  return prog;
}

void run_resize(const char* config, fn::NetPrecision precision, Device device) {
  const fn::NetProgram prog = run(resize_network(), config, precision, device);
  // c0, c1, up, up32, c2, up_b, up_a, head: the Resizes are BDMA layers of 4 and 6 copies.
  EXPECT_EQ(prog.layers.size(), 8U);
  std::size_t bdma = 0;
  for (const fn::NetLayer& l : prog.layers) {
    const auto* b = std::get_if<fn::BdmaLayer>(&l.hw);
    if (b == nullptr) continue;
    ++bdma;
    EXPECT_EQ(fn::bdma_copies(*b).size(), std::size_t{b->scale_h} * b->scale_w) << l.nodes;
  }
  EXPECT_EQ(bdma, 4U);
  EXPECT_EQ(output_named(prog, "v").surface.width, 2U * kSize);
  EXPECT_EQ(output_named(prog, "v").surface.height, 3U * kSize);
}

void run_shuffle(const char* config, fn::NetPrecision precision, Device device) {
  const fn::NetProgram prog = run(shuffle_network(), config, precision, device);
  // c0, the shuffle's 1x1 CONV, c1.
  ASSERT_EQ(prog.layers.size(), 3U);
  EXPECT_EQ(prog.layers[1].engine, "CONV");
  EXPECT_EQ(prog.layers[1].output, "s");
}

// `octasim compile`'s trace (write_network_trace) of a network: `octasim run` passes every check
// (each layer's output by CRC against the quantized reference executor, then the outputs' files),
// on the functional device and the cycle-level SoC.
void run_trace(const models::graph::Graph& graph, const char* config, fn::NetPrecision precision,
               const char* name, std::size_t outputs) {
  const HwConfig hw = load_hw_config(config);
  fn::CompiledNetwork net = fn::prepare_network(graph, hw);
  const Tensor images = fn::random_images(net.plan, 3, 5);
  fn::QuantOptions options;
  options.precision = precision;
  fn::quantize_network(net, hw, images, options);
  const test::TempDir dir(name);
  const fn::NetTraceFiles files = fn::write_network_trace(net, images, 1, dir.str());
  const std::string checks =
      "checks: " + std::to_string(net.program.layers.size() + outputs) + " passed, 0 failed";
  for (const char* mode : {" --functional", ""}) {
    std::string out;
    EXPECT_EQ(test::run_octasim(
                  "run " + files.trace + " --config " + config + " --no-progress" + mode, &out),
              0)
        << out;
    EXPECT_NE(out.find(checks), std::string::npos) << mode << ": want '" << checks << "'\n" << out;
  }
}

TEST(ResizeTrace, NvFullInt8) {
  run_trace(resize_network(), "nv_full", fn::NetPrecision::kInt8, "resize_trace", 4);
}

TEST(ResizeFunctional, NvFullInt8) {
  run_resize("nv_full", fn::NetPrecision::kInt8, Device::kFunctional);
}
TEST(ResizeFunctional, NvFullFp16) {
  run_resize("nv_full", fn::NetPrecision::kFp16, Device::kFunctional);
}
TEST(ResizeFunctional, SocLargeInt8) {
  run_resize("soc_large", fn::NetPrecision::kInt8, Device::kFunctional);
}
TEST(ResizeOnSoc, NvFullInt8) {
  run_resize("nv_full", fn::NetPrecision::kInt8, Device::kSoc);
}
TEST(ResizeOnSoc, SocLargeFp16) {
  run_resize("soc_large", fn::NetPrecision::kFp16, Device::kSoc);
}

TEST(ChannelShuffleFunctional, NvFullInt8) {
  run_shuffle("nv_full", fn::NetPrecision::kInt8, Device::kFunctional);
}
TEST(ChannelShuffleFunctional, NvFullFp16) {
  run_shuffle("nv_full", fn::NetPrecision::kFp16, Device::kFunctional);
}
TEST(ChannelShuffleOnSoc, SocLargeInt8) {
  run_shuffle("soc_large", fn::NetPrecision::kInt8, Device::kSoc);
}

}  // namespace
}  // namespace octasim
