// Squeeze-excitation Mul and channel slices (Split, Slice on the channel axis) through the network
// compiler, on the functional device and the cycle-level SoC:
//   SE      a = relu(conv3x3(x)); s = relu(conv1x1(relu(conv1x1(GlobalAveragePool(a))))), an
//           N x C x 1 x 1 tensor the device computes; y = Mul(a, s) (or Mul(s, a)); z = conv1x1(y).
//           The Mul is one SDP layer whose multiplier operand is s's own 1x1xC surface, read per
//           channel (DATA_MODE PER_KERNEL).
//   slices  a = relu(conv3x3(x)) of 2 C' + 16 channels (C' = 32 INT8 / 16 FP16 on nv_full, 8
//           on nv_small); Split(a, [C' - 4, C' + 20]) -> a1, a2 (ShuffleNet's chunk where the
//           halves do not start on atoms: a2 is a padded window of a's surface); b =
//           relu(conv1x1(a2)); y = conv1x1(Concat(a1, b)) (a1 copied into the Concat by an SDP
//           layer); t = Slice(a, [C', C' + 8)) -> z = conv1x1(t) (a slice whose last atom holds a's
//           next channels); u = Slice(a, [0, 12)) a graph output; v = Slice(a, [C' - 6, C' + 10))
//           across an atom boundary -> w = conv1x1(v) and vr = Relu(v) (SDP keeps v's padded
//           layout; the host reads the graph output through its channel map). No layer for
//           Split or Slice.
// Checks, per image: every layer's output surface equals the quantized reference executor's
// (run_layer_model: models/), byte for byte; every output's codes too; and every output is
// within a fraction of its peak of the FP32 reference (models::graph::run_reference): 1/256 at
// FP16, 1/32 at INT8 (about four 8-bit steps over 3 to 5 requantized layers; the runs stay under
// a third of that; a channel multiplied by another channel's scale or read from the wrong atom
// is off by about the peak). The structure:
// the SE Mul is one SDP layer reading s's surface as its per-channel operand; each slice is a
// surface at its source's address + (first channel / C') surface strides.
// SystemC elaborates once per process: one network and device per TEST.
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

// The squeeze-excitation block on C channels; `swapped`: Mul(s, a).
models::graph::Graph se_network(std::int64_t c, bool swapped) {
  GraphBuilder b;
  b.input("x", {1, 8, kSize, kSize});
  add_conv(b, "c0", "x", "a", 8, c, 3, true, 1);
  b.node("GlobalAveragePool", "gap", {"a"}, {"p"});
  add_conv(b, "fc1", "p", "r", c, c / 2, 1, true, 2);
  add_conv(b, "fc2", "r", "s", c / 2, c, 1, true, 3);
  b.node("Mul", "se",
         swapped ? std::vector<std::string>{"s", "a"} : std::vector<std::string>{"a", "s"}, {"y"});
  add_conv(b, "proj", "y", "z", c, 16, 1, false, 4);
  b.output("z").output("y");
  return b.graph();
}

// The block with Linear layers, as PyTorch's SE modules with nn.Linear export it:
// s = relu(Gemm(Flatten(GlobalAveragePool(a)))) reshaped to N x C x 1 x 1 (a view of the Gemm's
// 1x1xC output).
models::graph::Graph se_linear_network(std::int64_t c) {
  GraphBuilder b;
  b.input("x", {1, 8, kSize, kSize});
  add_conv(b, "c0", "x", "a", 8, c, 3, true, 1);
  b.node("GlobalAveragePool", "gap", {"a"}, {"p"});
  b.node("Flatten", "flat", {"p"}, {"f"});
  b.constant("fc_W", {c, c}, weights(c, c, 1, 2));
  b.constant("fc_B", {c}, std::vector<float>(static_cast<std::size_t>(c), 0.1F));
  b.node("Gemm", "fc", {"f", "fc_W", "fc_B"}, {"g"}).attributes["transB"] = int_attr(1);
  b.node("Relu", "fc_relu", {"g"}, {"gr"});
  b.graph().initializers["shape"] = Tensor::ints(models::graph::DType::kInt64, {4}, {-1, c, 1, 1});
  b.node("Reshape", "view", {"gr", "shape"}, {"s"});
  b.node("Mul", "se", {"a", "s"}, {"y"});
  add_conv(b, "proj", "y", "z", c, 16, 1, false, 4);
  b.output("z").output("y");
  return b.graph();
}

// The slices network on 2 atoms of `atom` channels.
models::graph::Graph slice_network(std::int64_t atom) {
  GraphBuilder b;
  b.input("x", {1, 8, kSize, kSize});
  add_conv(b, "c0", "x", "a", 8, 2 * atom + 16, 3, true, 1);
  // ShuffleNet's chunk: halves that do not start on an atom (a2 from channel atom - 4 on).
  b.graph().initializers["halves"] =
      Tensor::ints(models::graph::DType::kInt64, {2}, {atom - 4, atom + 20});
  b.node("Split", "split", {"a", "halves"}, {"a1", "a2"}).attributes["axis"] = int_attr(1);
  add_conv(b, "c1", "a2", "b", atom + 20, atom, 1, true, 2);
  b.node("Concat", "cat", {"a1", "b"}, {"cat"}).attributes["axis"] = int_attr(1);
  add_conv(b, "head", "cat", "y", 2 * atom - 4, 16, 1, false, 3);
  b.graph().initializers["t_starts"] = Tensor::ints(models::graph::DType::kInt64, {1}, {atom});
  b.graph().initializers["t_ends"] = Tensor::ints(models::graph::DType::kInt64, {1}, {atom + 8});
  b.graph().initializers["axis1"] = Tensor::ints(models::graph::DType::kInt64, {1}, {1});
  b.node("Slice", "take_t", {"a", "t_starts", "t_ends", "axis1"}, {"t"});
  add_conv(b, "c2", "t", "z", 8, 8, 1, false, 4);
  b.graph().initializers["u_starts"] = Tensor::ints(models::graph::DType::kInt64, {1}, {0});
  b.graph().initializers["u_ends"] = Tensor::ints(models::graph::DType::kInt64, {1}, {12});
  b.node("Slice", "take_u", {"a", "u_starts", "u_ends", "axis1"}, {"u"});
  // Across an atom boundary, from 6 channels before it: read by a CONV and by an SDP ReLU whose
  // output (a graph output) keeps the padded layout.
  b.graph().initializers["v_starts"] = Tensor::ints(models::graph::DType::kInt64, {1}, {atom - 6});
  b.graph().initializers["v_ends"] = Tensor::ints(models::graph::DType::kInt64, {1}, {atom + 10});
  b.node("Slice", "take_v", {"a", "v_starts", "v_ends", "axis1"}, {"v"});
  add_conv(b, "c3", "v", "w", 16, 8, 1, false, 5);
  b.node("Relu", "relu_v", {"v"}, {"vr"});
  b.output("y").output("z").output("u").output("w").output("vr");
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

// The SE Mul is one SDP layer whose per-channel operand is s's surface; its input a's.
void check_se_structure(const fn::NetProgram& prog, const std::string& scale = "s") {
  const firmware::SdpLayer* mul = nullptr;
  std::size_t sdp_layers = 0;
  for (const fn::NetLayer& l : prog.layers) {
    if (l.nodes.find("Mul 'se'") == std::string::npos) continue;
    ++sdp_layers;
    mul = std::get_if<firmware::SdpLayer>(&l.hw);
  }
  ASSERT_EQ(sdp_layers, 1U);
  ASSERT_NE(mul, nullptr);
  ASSERT_TRUE(mul->ew.has_value());
  EXPECT_TRUE(mul->ew->per_channel);
  EXPECT_EQ(mul->ew->op, firmware::SdpEwOp::kMul);
  EXPECT_EQ(mul->ew->surface.width, 1U);
  EXPECT_EQ(mul->ew->surface.height, 1U);
  // s's surface: the output of the layer computing it (fc2's CONV, or the Gemm's).
  const firmware::FeatureSurface* s = nullptr;
  for (const fn::NetLayer& l : prog.layers) {
    if (l.output == scale) s = fn::layer_output(l);
  }
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(mul->ew->surface.address, s->address);
  EXPECT_EQ(mul->ew->surface.channels, s->channels);
}

void run_se(const char* config, fn::NetPrecision precision, Device device, bool swapped = false) {
  const fn::NetProgram prog = run(se_network(48, swapped), config, precision, device);
  check_se_structure(prog);
  // c0, gap, fc1, fc2, the Mul, proj.
  EXPECT_EQ(prog.layers.size(), 6U);
}

void run_se_linear(const char* config, fn::NetPrecision precision, Device device) {
  const fn::NetProgram prog = run(se_linear_network(48), config, precision, device);
  check_se_structure(prog, "gr");
  EXPECT_EQ(prog.layers.size(), 5U);  // c0, gap, fc, the Mul, proj
}

void run_slices(const char* config, fn::NetPrecision precision, Device device) {
  const HwConfig hw = load_hw_config(config);
  const unsigned atom_channels =
      hw.dla.memory_atomic_size / (precision == fn::NetPrecision::kFp16 ? 2U : 1U);
  const fn::NetProgram prog = run(slice_network(atom_channels), config, precision, device);
  // c0, c1, the copy of a1 into the Concat, head, c2, c3, the ReLU: no layer for the Split and
  // the Slices.
  EXPECT_EQ(prog.layers.size(), 7U);
  const firmware::FeatureSurface* a = nullptr;
  const firmware::FeatureSurface* t = nullptr;
  const firmware::FeatureSurface* a2 = nullptr;
  for (const fn::NetLayer& l : prog.layers) {
    if (l.output == "a") a = fn::layer_output(l);
    if (l.nodes.find("Conv 'c2'") != std::string::npos) {
      t = &std::get<firmware::ConvLayer>(l.hw).src;
    }
    if (l.nodes.find("Conv 'c1'") != std::string::npos) {
      a2 = &std::get<firmware::ConvLayer>(l.hw).src;
    }
  }
  ASSERT_NE(a, nullptr);
  ASSERT_NE(t, nullptr);
  ASSERT_NE(a2, nullptr);
  EXPECT_EQ(t->address, a->address + a->surface_stride);  // channel C' on: one surface on
  EXPECT_EQ(t->channels, 8U);
  // a2 = [C' - 4, 2 C' + 16): the window from atom 0, its channels from lane C' - 4 on.
  EXPECT_EQ(a2->address, a->address);
  EXPECT_EQ(a2->channels, 2 * atom_channels + 16);
  const fn::NetTensor& u = output_named(prog, "u");
  EXPECT_EQ(u.surface.address, a->address);
  EXPECT_EQ(u.surface.channels, 12U);
  EXPECT_TRUE(u.channel_map.empty());
  // v = [C' - 6, C' + 10) through the ReLU: the padded layout of the slice.
  const fn::NetTensor& vr = output_named(prog, "vr");
  std::vector<std::uint32_t> map(16);
  for (std::uint32_t j = 0; j < 16; ++j) map[j] = atom_channels - 6 + j;
  EXPECT_EQ(vr.channel_map, map);
  EXPECT_EQ(vr.surface.channels, atom_channels + 10);
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

TEST(SeMulTrace, NvFullInt8) {
  run_trace(se_network(48, false), "nv_full", fn::NetPrecision::kInt8, "se_trace", 2);
}
TEST(ChannelSliceTrace, NvFullFp16) {
  run_trace(slice_network(16), "nv_full", fn::NetPrecision::kFp16, "slice_trace", 5);
}

TEST(SeMulFunctional, NvFullInt8) {
  run_se("nv_full", fn::NetPrecision::kInt8, Device::kFunctional);
}
TEST(SeMulFunctional, NvFullInt8Swapped) {
  run_se("nv_full", fn::NetPrecision::kInt8, Device::kFunctional, true);
}
TEST(SeMulFunctional, NvFullFp16) {
  run_se("nv_full", fn::NetPrecision::kFp16, Device::kFunctional);
}
TEST(SeMulFunctional, NvSmallInt8) {
  run_se("nv_small", fn::NetPrecision::kInt8, Device::kFunctional);
}
TEST(SeMulOnSoc, SocLargeInt8) {
  run_se("soc_large", fn::NetPrecision::kInt8, Device::kSoc);
}
TEST(SeMulOnSoc, SocLargeFp16) {
  run_se("soc_large", fn::NetPrecision::kFp16, Device::kSoc, true);
}
TEST(SeMulOnSoc, NvSmallInt8) {
  run_se("nv_small", fn::NetPrecision::kInt8, Device::kSoc);
}

TEST(SeMulFunctional, NvFullInt8Linear) {
  run_se_linear("nv_full", fn::NetPrecision::kInt8, Device::kFunctional);
}
TEST(SeMulFunctional, NvFullFp16Linear) {
  run_se_linear("nv_full", fn::NetPrecision::kFp16, Device::kFunctional);
}

TEST(ChannelSliceFunctional, NvFullInt8) {
  run_slices("nv_full", fn::NetPrecision::kInt8, Device::kFunctional);
}
TEST(ChannelSliceFunctional, NvFullFp16) {
  run_slices("nv_full", fn::NetPrecision::kFp16, Device::kFunctional);
}
TEST(ChannelSliceFunctional, NvSmallInt8) {
  run_slices("nv_small", fn::NetPrecision::kInt8, Device::kFunctional);
}
TEST(ChannelSliceOnSoc, SocLargeInt8) {
  run_slices("soc_large", fn::NetPrecision::kInt8, Device::kSoc);
}
TEST(ChannelSliceOnSoc, SocLargeFp16) {
  run_slices("soc_large", fn::NetPrecision::kFp16, Device::kSoc);
}
TEST(ChannelSliceOnSoc, NvSmallInt8) {
  run_slices("nv_small", fn::NetPrecision::kInt8, Device::kSoc);
}

}  // namespace
}  // namespace octasim
