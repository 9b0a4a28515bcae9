// Split H end to end: a one-convolution graph whose input exceeds the CBUF, compiled by
// firmware/net into bands (split.hpp), run on the functional device and on the cycle-level SoC.
// The golden is independent of the split: the same graph compiled for the same configuration
// with a 16 times deeper CBUF, where the convolution fits and stays one layer (asserted), run
// through the quantized reference executor — models::ops::run_conv_int (FP16: run_conv_fp16) on
// the whole input cube and the SDP model, with the same calibration and weight codes. The split
// device output must equal it bit for bit; and the device must equal the reference executor run
// on the bands, every layer (soc_run.hpp). The band counts are derived by hand in the comments
// from the CBUF sizes (tests/net/split_test.cpp checks the bands' rows); on the SoC the weights
// are fetched once per image when the bands reuse them.
// SystemC elaborates once per process: one run per TEST.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "models/graph/reference.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"
#include "soc_run.hpp"
#include "tests/firmware/e2e_util.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;
using nettest::ints_attr;

struct Case {
  const char* config;
  std::int64_t channels, height, width, kernels, kernel, stride, pad;
  std::size_t bands;             // derived by hand in the TEST's comment
  bool partial_weights = false;  // the bands fetch the weights each (split.hpp's one-group plan)
  fn::NetPrecision precision = fn::NetPrecision::kInt8;
  // A MaxPool 2x2 stride 2 after the ReLU: the compiler runs a pooling that alone reads a
  // convolution's output on the fly (ConvPoolLayer) when the convolution fits; after bands it is
  // a PDP layer of its own.
  bool max_pool = false;
};

// Conv (bias) + Relu [+ MaxPool], weights and bias of both signs.
models::graph::Graph conv_graph(const Case& c) {
  nettest::GraphBuilder b;
  b.input("x", {1, c.channels, c.height, c.width});
  const std::int64_t n = c.kernels * c.channels * c.kernel * c.kernel;
  std::vector<float> w = nettest::ramp(static_cast<std::size_t>(n));
  // Scaled so that the outputs keep a similar range whatever the kernel's size.
  for (float& v : w) v /= std::sqrt(static_cast<float>(c.channels * c.kernel * c.kernel) / 9.0F);
  b.constant("W", {c.kernels, c.channels, c.kernel, c.kernel}, w);
  b.constant("B", {c.kernels}, nettest::ramp(static_cast<std::size_t>(c.kernels)));
  auto& conv = b.node("Conv", "conv", {"x", "W", "B"}, {"c"});
  conv.attributes["kernel_shape"] = ints_attr({c.kernel, c.kernel});
  conv.attributes["strides"] = ints_attr({c.stride, c.stride});
  conv.attributes["pads"] = ints_attr({c.pad, c.pad, c.pad, c.pad});
  b.node("Relu", "relu", {"c"}, {c.max_pool ? "r" : "y"});
  if (c.max_pool) {
    auto& mp = b.node("MaxPool", "pool", {"r"}, {"y"});
    mp.attributes["kernel_shape"] = ints_attr({2, 2});
    mp.attributes["strides"] = ints_attr({2, 2});
  }
  b.output("y");
  return b.graph();
}

fn::CompiledNetwork compile(const models::graph::Graph& g, const HwConfig& hw, const Case& c) {
  fn::CompiledNetwork net = fn::prepare_network(g, hw);
  fn::QuantOptions o;
  o.precision = c.precision;
  // The convolution as the graph has it: folding the few input channels (fold.hpp) would change
  // the cube these cases split (fold_device_test.cpp splits folded inputs).
  o.fold = fn::FoldMode::kOff;
  fn::quantize_network(net, hw, fn::random_images(net.plan, 4, 1), o);
  return net;
}

std::size_t conv_layers(const fn::NetProgram& p) {
  return static_cast<std::size_t>(std::count_if(
      p.layers.begin(), p.layers.end(), [](const fn::NetLayer& l) { return l.engine == "CONV"; }));
}

// The split program, and per image the unsplit golden's output codes.
struct Compiled {
  HwConfig hw;
  fn::CompiledNetwork net;
  Tensor images;
  std::vector<std::vector<std::int32_t>> golden;
};

Compiled compile_both(const Case& c, std::size_t images) {
  Compiled r;
  r.hw = load_hw_config(c.config);
  const models::graph::Graph g = conv_graph(c);
  r.net = compile(g, r.hw, c);
  const fn::NetProgram& p = r.net.program;
  EXPECT_EQ(conv_layers(p), c.bands);
  EXPECT_EQ(p.layers.size(), c.bands + (c.max_pool ? 1 : 0));
  for (std::size_t k = 0; k < c.bands && k < p.layers.size(); ++k) {
    EXPECT_TRUE(std::holds_alternative<firmware::ConvLayer>(p.layers[k].hw)) << k;
    EXPECT_EQ(p.layers[k].band, k);
    EXPECT_EQ(p.layers[k].bands, c.bands);
  }
  if (c.max_pool) {
    EXPECT_EQ(p.layers.back().engine, "PDP");
  }

  HwConfig deep = r.hw;
  deep.dla.cbuf_bank_depth *= 16;
  const fn::CompiledNetwork whole = compile(g, deep, c);
  EXPECT_EQ(conv_layers(whole.program), 1U) << "the golden's convolution must not be split";
  for (const fn::NetLayer& l : whole.program.layers) {
    EXPECT_EQ(l.bands, 1U);
  }
  const std::uint64_t out = (c.height + 2 * c.pad - c.kernel) / c.stride + 1;
  const std::uint64_t out_w = (c.width + 2 * c.pad - c.kernel) / c.stride + 1;
  const auto macs =
      static_cast<std::uint64_t>(out * out_w * c.kernels * c.kernel * c.kernel * c.channels);
  EXPECT_EQ(whole.program.macs(), macs);
  EXPECT_EQ(p.macs(), macs);

  r.images = fn::random_images(r.net.plan, images, 2);
  for (std::size_t i = 0; i < images; ++i) {
    firmware::HostMemory mem;
    fn::load_constants(whole.program, mem);
    fn::write_input(whole.program, r.images, i, mem);
    (void)fn::run_network_model(whole.program, mem);
    r.golden.push_back(fn::read_output_codes(whole.program, 0, mem));
    const auto nonzero = std::count_if(r.golden.back().begin(), r.golden.back().end(),
                                       [](std::int32_t v) { return v != 0; });
    // The ReLU keeps about half: not a comparison of zeros.
    EXPECT_GT(static_cast<std::size_t>(nonzero), r.golden.back().size() / 8) << "image " << i;
  }
  return r;
}

// The dequantized device output against the FP32 graph, whose values beyond the output's
// calibrated clip (from other images) saturate to it: within 5% of the largest output (INT8
// rounding is 1/254 of a clip per tensor; a misplaced band row is not).
void expect_near_fp32(const Compiled& c, const Tensor& device, std::size_t image) {
  const models::graph::TensorMap ref = models::graph::run_reference(
      c.net.graph, {{c.net.plan.input, fn::slice_batch(c.images, image, 1)}});
  const Tensor& y = ref.at(c.net.plan.outputs.at(0));
  const double clip = c.net.program.outputs.at(0).quant.clip;
  ASSERT_EQ(device.f.size(), y.f.size());
  double peak = 0.0, worst = 0.0;
  std::size_t worst_at = 0;
  for (std::size_t k = 0; k < y.f.size(); ++k) {
    const double want = std::min(double{y.f[k]}, clip);
    peak = std::max(peak, std::abs(want));
    const double e = std::abs(double{device.f[k]} - want);
    if (e > worst) worst = e, worst_at = k;
  }
  EXPECT_GT(peak, 0.0);
  EXPECT_LE(worst, 0.05 * peak) << "image " << image << ": output " << worst_at << " is "
                                << device.f[worst_at] << " on the device, " << y.f[worst_at]
                                << " in FP32 (clip " << clip << ")";
}

void run_functional(const Case& c) {
  constexpr std::size_t kImages = 2;
  const Compiled r = compile_both(c, kImages);
  const fn::NetProgram& p = r.net.program;
  dla::FunctionalDevice device(r.hw);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and, where placed, the CV-SRAM
  fn::load_constants(p, memory);
  firmware::HostMemory reference;
  fn::load_constants(p, reference);
  fn::GroupState groups;
  for (std::size_t i = 0; i < kImages; ++i) {
    const fn::ImageRun run = fn::run_image(p, r.images, i, memory, mmio, groups, reference);
    EXPECT_EQ(run.differing_output, p.outputs.size()) << "image " << i << ": device vs bands";
    EXPECT_EQ(fn::read_output_codes(p, 0, memory), r.golden[i])
        << "image " << i << ": split device vs the unsplit convolution";
    if (c.precision == fn::NetPrecision::kInt8) {
      expect_near_fp32(r, fn::read_output(p, 0, memory), i);
    }
  }
  EXPECT_EQ(device.layers().size(), p.layers.size() * kImages);
}

void run_soc(const Case& c) {
  const Compiled r = compile_both(c, 1);
  const fn::NetProgram& p = r.net.program;
  const nettest::SocRun run = nettest::run_on_soc(p, r.hw, r.images, 1);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_EQ(run.layers_run, p.layers.size());
  ASSERT_EQ(run.codes.size(), 1U);
  EXPECT_EQ(run.codes[0], r.golden[0]) << "split SoC vs the unsplit convolution";
  // All weights in CBUF (split.hpp): fetched by the first band only; otherwise by every band.
  const auto& first = std::get<firmware::ConvLayer>(p.layers[0].hw);
  const std::uint64_t weights = firmware::plan_conv(first, p.hw).weight_bytes;
  EXPECT_EQ(first.skip_weight_release, !c.partial_weights);
  EXPECT_EQ(run.conv_weight_bytes, c.partial_weights ? weights * c.bands : weights);
}

// The bands issued as `octasim net` does by default (Schedule::kOverlap: a layer is programmed
// once the layers it depends on are done), one image on the SoC: the output equals the unsplit
// convolution's and the reference executor's, and the weights are still fetched once.
// `independent`: every band depends on no other (their output ranges are disjoint), so each is
// programmed while the one before runs.
void run_soc_overlapped(const Case& c, bool independent) {
  const Compiled r = compile_both(c, 1);
  const fn::NetProgram& p = r.net.program;
  const std::vector<std::vector<std::size_t>> deps = fn::layer_dependencies(p);
  for (std::size_t k = 1; k < deps.size(); ++k) EXPECT_EQ(deps[k].empty(), independent) << k;
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", r.hw);
  soc::HostAdapter device(soc);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and, where placed, the CV-SRAM
  fn::load_constants(p, memory);
  firmware::HostMemory reference;
  fn::load_constants(p, reference);
  fn::GroupState groups;
  const fn::ImageRun run =
      fn::run_image(p, r.images, 0, memory, mmio, groups, reference, fn::Schedule::kOverlap);
  EXPECT_EQ(run.differing_output, p.outputs.size()) << "device vs bands";
  EXPECT_EQ(fn::read_output_codes(p, 0, memory), r.golden[0]);
  EXPECT_EQ(soc.dla().layers().size(), p.layers.size());
  const auto& first = std::get<firmware::ConvLayer>(p.layers[0].hw);
  std::uint64_t fetched = 0;
  for (const stats::Group* g : soc.dla().statistics()) {
    for (std::size_t k = 0; k < g->size(); ++k) {
      if (g->full_name(k) == "dla.CONV.cdma_wt_bytes") fetched = g->value(k);
    }
  }
  EXPECT_EQ(fetched, firmware::plan_conv(first, p.hw).weight_bytes);
  // Programmed ahead, a band starts the cycle the one before it ends; otherwise after the host
  // has seen the interrupt and programmed it.
  const auto& t = soc.dla().layers();
  for (std::size_t k = 1; k < t.size(); ++k) {
    if (independent) {
      EXPECT_EQ(t[k].start_cycle, t[k - 1].end_cycle) << k;
    } else {
      EXPECT_GT(t[k].start_cycle, t[k - 1].end_cycle) << k;
    }
  }
}

// nv_small, 96 wide, 95 high, 16 channels, 3x3 stride 2 pad 1 -> 16: 192 CBUF entries per line,
// 36 of 32 banks for the input; beside the weights' 1 bank, 31 banks hold 82 lines, 40 output
// rows; ceil(48 / 40) = 2 bands (split_test.cpp, the same layer).
const Case kSmallStride2{"nv_small", 16, 95, 96, 16, 3, 2, 1, 2};

// nv_small, 128 wide, 247 high, 8 channels, 11x11 stride 4, no padding -> 16 (60 x 30 outputs):
// one C' surface, 128 entries per line, ceil(247 * 128 / 512) = 62 banks. Weights 11*11*8 = 968
// bytes per kernel, 15488 in all: 4 banks; 28 banks hold 28 * 512 / 128 = 112 lines,
// (112 - 11) / 4 + 1 = 26 output rows, ceil(60 / 26) = 3 bands of 20 rows, 19 * 4 + 11 = 87
// lines each, overlapping by 7. (One kernel group, 968 * 8 + 128 bytes, takes 2 banks: 120 lines,
// 28 rows, also 3 bands of the same lines, but fetching the weights 3 times: all weights it is.)
const Case kSmallStride4{"nv_small", 8, 247, 128, 16, 11, 4, 0, 3};

// nv_small, 8 wide, 40 high, 512 channels, 3x3 pad 1 -> 32: 64 C' surfaces of 8 atoms, 512
// entries (a bank) per line, 40 banks. 32 kernels of 4608 bytes (147456) cannot all stay in the
// CBUF; one group of 8 takes ceil((8 * 4608 + 128) / 4096) = 10 banks, leaving 22 lines, 20 rows
// per band: 2 bands of 20 rows reading 21 lines each, and each fetches the weights.
const Case kSmallPartial{"nv_small", 512, 40, 8, 32, 3, 1, 1, 2, true};

// ResNet-50's conv1 on nv_full: 224x224x3, 7x7 stride 2 pad 3 -> 64: 112 entries per line, 49 of
// 16 banks; beside the weights' 1 bank, 15 banks hold 68 lines, 31 rows; ceil(112 / 31) = 4.
const Case kResNetConv1{"nv_full", 3, 224, 224, 64, 7, 2, 3, 4};

// AlexNet's conv1 on nv_full: 227x227x3, 11x11 stride 4 -> 96: 114 entries per line
// (ceil(227 / 2)). Weights 363 bytes per kernel, 34848 -> 34944 bytes: 2 banks; 14 banks hold
// 14 * 512 / 114 = 62 lines, (62 - 11) / 4 + 1 = 13 rows, ceil(55 / 13) = 5 bands of 11 rows
// (51 lines each: 5 * 51 * 7264 + 34944 bytes). One kernel group (363 * 32 + 128) takes 1 bank:
// 67 lines, 15 rows, 4 bands of 14, 14, 14, 13 rows (63, 63, 63, 59 lines) but 4 weight
// fetches: 248 * 7264 + 4 * 34944 bytes, more.
const Case kAlexNetConv1{"nv_full", 3, 227, 227, 96, 11, 4, 0, 5};

TEST(SplitHFunctional, NvSmallStride2Pad1) {
  run_functional(kSmallStride2);
}
TEST(SplitHFunctional, NvSmallStride4Kernel11) {
  run_functional(kSmallStride4);
}
TEST(SplitHFunctional, NvSmallStride2Pad1ThenMaxPool) {
  Case c = kSmallStride2;
  c.max_pool = true;
  run_functional(c);
}
TEST(SplitHFunctional, NvSmallPartialWeights) {
  run_functional(kSmallPartial);
}
TEST(SplitHFunctional, NvFullResNet50Conv1) {
  run_functional(kResNetConv1);
}
TEST(SplitHFunctional, NvFullAlexNetConv1) {
  run_functional(kAlexNetConv1);
}

// FP16 (nv_full): 2-byte elements, 16 channels per atom, one C' surface of 224 atoms, still 112
// entries per line; weights 7*7*3*2 = 294 bytes per kernel, 18816 in all: 1 bank. Same 4 bands.
TEST(SplitHFunctional, NvFullResNet50Conv1Fp16) {
  Case c = kResNetConv1;
  c.precision = fn::NetPrecision::kFp16;
  run_functional(c);
}

// `octasim compile`'s trace (write_network_trace) of MaxPool 3x3/1 -> Relu -> the kSmallStride2
// convolution, whose output reuses the pool output's dead buffer (asserted): the trace zeroes
// the whole output before the first band, and each band's CRC covers its rows of every C'
// surface, so the golden must hold the same zeros there, not the pool's stale codes. Played by
// `octasim run`, functional and cycle-level: 4 layer CRCs and the output file pass.
TEST(SplitHTrace, BandsIntoAReusedBufferPassEveryCheck) {
  nettest::GraphBuilder b;
  b.input("x", {1, 16, 95, 96});
  auto& mp = b.node("MaxPool", "mp", {"x"}, {"m"});
  mp.attributes["kernel_shape"] = ints_attr({3, 3});
  mp.attributes["pads"] = ints_attr({1, 1, 1, 1});
  b.node("Relu", "relu0", {"m"}, {"r"});
  b.constant("W", {16, 16, 3, 3}, nettest::ramp(16 * 16 * 9));
  b.constant("B", {16}, nettest::ramp(16));
  auto& conv = b.node("Conv", "conv", {"r", "W", "B"}, {"y"});
  conv.attributes["kernel_shape"] = ints_attr({3, 3});
  conv.attributes["strides"] = ints_attr({2, 2});
  conv.attributes["pads"] = ints_attr({1, 1, 1, 1});
  b.output("y");
  const HwConfig hw = load_hw_config("nv_small");
  fn::CompiledNetwork net = fn::prepare_network(b.graph(), hw);
  const Tensor images = fn::random_images(net.plan, 2, 3);
  fn::quantize_network(net, hw, images, fn::QuantOptions{});
  const fn::NetProgram& p = net.program;
  ASSERT_EQ(p.layers.size(), 4U);  // PDP, SDP, 2 CONV bands
  EXPECT_EQ(p.layers[3].bands, 2U);
  EXPECT_EQ(p.layers[3].whole_output.address,
            std::get<firmware::PdpLayer>(p.layers[0].hw).dst.address);
  const test::TempDir dir("split_trace");
  const fn::NetTraceFiles files = fn::write_network_trace(net, images, 1, dir.str());
  std::ifstream map_file(files.layer_map);
  const nlohmann::json map = nlohmann::json::parse(map_file);
  ASSERT_EQ(map.at("layers").size(), 4U);
  EXPECT_FALSE(map["layers"][1].contains("band"));
  EXPECT_EQ(map["layers"][3]["band"], 1);
  EXPECT_EQ(map["layers"][3]["bands"], 2);
  EXPECT_EQ(map["layers"][2]["onnx_nodes"], "Conv 'conv'");
  EXPECT_EQ(map["layers"][3]["onnx_nodes"], "Conv 'conv'");
  for (const char* mode : {" --functional", ""}) {
    std::string out;
    EXPECT_EQ(test::run_octasim("run " + files.trace + " --no-progress" + mode, &out), 0) << out;
    EXPECT_NE(out.find("checks: 5 passed, 0 failed"), std::string::npos) << mode << "\n" << out;
  }
}

TEST(SplitHOnSoc, NvSmallStride2Pad1) {
  run_soc(kSmallStride2);
}
// 8 kernels: one C' surface, so the bands' output ranges are disjoint and the second is
// programmed into the other register group while the first runs (schedule.hpp). 2 bands as
// above (the weights, 1152 bytes, still take 1 bank).
TEST(SplitHOnSoc, NvSmallStride2Pad1Overlapped) {
  Case c = kSmallStride2;
  c.kernels = 8;
  run_soc_overlapped(c, true);
}
TEST(SplitHOnSoc, NvFullResNet50Conv1Overlapped) {
  run_soc_overlapped(kResNetConv1, false);
}
TEST(SplitHOnSoc, NvSmallStride2Pad1ThenMaxPool) {
  Case c = kSmallStride2;
  c.max_pool = true;
  run_soc(c);
}
TEST(SplitHOnSoc, NvSmallStride4Kernel11) {
  run_soc(kSmallStride4);
}
TEST(SplitHOnSoc, NvSmallPartialWeights) {
  run_soc(kSmallPartial);
}
TEST(SplitHOnSoc, NvFullResNet50Conv1) {
  run_soc(kResNetConv1);
}
TEST(SplitHOnSoc, NvFullAlexNetConv1) {
  run_soc(kAlexNetConv1);
}

}  // namespace
}  // namespace octasim
