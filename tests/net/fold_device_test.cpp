// Input channel folding (firmware/net/fold.hpp) on the devices: a network whose first
// convolution reads a 3-channel image — 7x7 stride 2 pad 3 (ResNet-50's and GoogLeNet's conv1),
// 11x11 stride 4 (AlexNet's), 5x5 stride 1 pad 2 — compiled with folding, and the same graph
// compiled without it (an independent program: the unfolded convolution reads the image as it
// is), both run on the functional device: the folded device output must equal the unfolded
// device output code for code, and each must equal the quantized reference executor run on its
// own program (runtime.hpp run_image). On nv_full and nv_small at INT8 and on nv_full at FP16; the
// folded input still split in height (AlexNet's on nv_full and nv_small) and a fused MaxPool. On
// the cycle-level SoC the folded convolution takes fewer cycles than the unfolded one. The trace
// `octasim compile` writes lays the input out folded and passes every check when played.
// SystemC elaborates once per process: one SoC per TEST.
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
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/firmware/e2e_util.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;
using nettest::ints_attr;

struct Case {
  const char* config;
  fn::NetPrecision precision;
  std::int64_t channels, height, width, kernels, kernel, stride, pad;
  fn::FoldMode mode = fn::FoldMode::kAuto;
  bool max_pool = false;  // a MaxPool 2x2/2 after the ReLU (on the fly when the convolution fits)
  std::size_t bands = 0;  // of the folded convolution, derived by hand in the TEST (0: unchecked)
};

// Conv (bias) + Relu [+ MaxPool], weights of both signs scaled to the kernel's size.
models::graph::Graph conv_graph(const Case& c) {
  nettest::GraphBuilder b;
  b.input("x", {1, c.channels, c.height, c.width});
  std::vector<float> w =
      nettest::ramp(static_cast<std::size_t>(c.kernels * c.channels * c.kernel * c.kernel));
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

fn::CompiledNetwork compile(const models::graph::Graph& g, const HwConfig& hw, const Case& c,
                            fn::FoldMode mode) {
  fn::CompiledNetwork net = fn::prepare_network(g, hw);
  fn::QuantOptions o;
  o.precision = c.precision;
  o.fold = mode;
  fn::quantize_network(net, hw, fn::random_images(net.plan, 4, 1), o);
  return net;
}

std::size_t conv_layers(const fn::NetProgram& p) {
  return static_cast<std::size_t>(std::count_if(
      p.layers.begin(), p.layers.end(), [](const fn::NetLayer& l) { return l.engine == "CONV"; }));
}

struct Programs {
  HwConfig hw;
  fn::CompiledNetwork folded, unfolded;
  Tensor images;
};

Programs compile_both(const Case& c, std::size_t images) {
  Programs r;
  r.hw = load_hw_config(c.config);
  const models::graph::Graph g = conv_graph(c);
  r.folded = compile(g, r.hw, c, c.mode);
  r.unfolded = compile(g, r.hw, c, fn::FoldMode::kOff);
  const fn::NetProgram& p = r.folded.program;
  EXPECT_TRUE(p.input.fold.has_value());
  EXPECT_FALSE(r.unfolded.program.input.fold.has_value());
  if (p.input.fold) {
    const firmware::FeatureSurface& s = p.input.surface;
    // The output's width; the image's height (columns) or the output's (full).
    const std::int64_t out = (c.width + 2 * c.pad - c.kernel) / c.stride + 1;
    const bool full = p.input.fold->kind == fn::FoldKind::kFull;
    EXPECT_EQ(s.width, out) << p.input.fold->describe();
    EXPECT_EQ(s.height, full ? out : c.height) << p.input.fold->describe();
    EXPECT_EQ(s.channels, c.channels * c.kernel * (full ? c.kernel : 1));
    if (c.mode == fn::FoldMode::kFull) {
      EXPECT_EQ(p.input.fold->kind, fn::FoldKind::kFull);
    }
  }
  EXPECT_EQ(p.macs(), r.unfolded.program.macs());
  if (c.bands != 0) {
    EXPECT_EQ(conv_layers(p), c.bands);
    EXPECT_EQ(p.layers.at(0).bands, c.bands);
  }
  r.images = fn::random_images(r.folded.plan, images, 2);
  return r;
}

// Runs `p` on a functional device, image after image; returns each image's output codes and
// checks them against the quantized reference executor on `p`.
std::vector<std::vector<std::int32_t>> run_functional(const fn::NetProgram& p, const HwConfig& hw,
                                                      const Tensor& images, std::size_t count) {
  dla::FunctionalDevice device(hw);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and, where placed, the CV-SRAM
  fn::load_constants(p, memory);
  firmware::HostMemory reference;
  fn::load_constants(p, reference);
  fn::GroupState groups;
  std::vector<std::vector<std::int32_t>> codes;
  for (std::size_t i = 0; i < count; ++i) {
    const fn::ImageRun run = fn::run_image(p, images, i, memory, mmio, groups, reference);
    EXPECT_EQ(run.differing_output, p.outputs.size()) << "image " << i << ": device vs reference";
    codes.push_back(fn::read_output_codes(p, 0, memory));
  }
  std::size_t records = 0;  // a convolution with its pooling on the fly leaves CONV's and PDP's
  for (const fn::NetLayer& l : p.layers) records += fn::device_records(l).size();
  EXPECT_EQ(device.layers().size(), records * count);
  return codes;
}

void run_both_functional(const Case& c) {
  constexpr std::size_t kImages = 2;
  const Programs r = compile_both(c, kImages);
  const auto folded = run_functional(r.folded.program, r.hw, r.images, kImages);
  const auto unfolded = run_functional(r.unfolded.program, r.hw, r.images, kImages);
  ASSERT_EQ(folded.size(), kImages);
  ASSERT_EQ(unfolded.size(), kImages);
  for (std::size_t i = 0; i < kImages; ++i) {
    EXPECT_EQ(folded[i], unfolded[i])
        << "image " << i << ": folded (" << r.folded.program.input.fold->describe()
        << ") vs unfolded device output";
    const auto nonzero = std::count_if(unfolded[i].begin(), unfolded[i].end(),
                                       [](std::int32_t v) { return v != 0; });
    EXPECT_GT(static_cast<std::size_t>(nonzero), unfolded[i].size() / 8) << "image " << i;
  }
}

const Case kK7S2P3{"nv_full", fn::NetPrecision::kInt8, 3, 112, 112, 32, 7, 2, 3};
const Case kK5S1P2{"nv_full", fn::NetPrecision::kInt8, 3, 64, 64, 32, 5, 1, 2};

// AlexNet's conv1 on nv_full, folded into columns: 55 wide, 227 high, 33 channels in 2 surfaces
// of 32: 110 atoms of 32 bytes, 55 CBUF entries of 64 bytes per line; 227 lines need 25 of 16
// banks. Weights 96 * 11 * 33 = 34848 -> 34944 bytes: 2 banks; 14 banks hold 14 * 512 / 55 = 130
// lines, (130 - 11) / 4 + 1 = 30 output rows: ceil(55 / 30) = 2 bands. (One kernel group, 32 *
// 363 + 128 bytes, takes 1 bank: 139 lines, 33 rows, also 2 bands but fetching the weights twice.)
const Case kAlexNetNvFull{"nv_full", fn::NetPrecision::kInt8, 3,     227, 227, 96, 11, 4,
                          0,         fn::FoldMode::kColumns,  false, 2};

TEST(FoldFunctional, NvFullInt8K7S2P3) {
  run_both_functional(kK7S2P3);
}
TEST(FoldFunctional, NvFullInt8K11S4SplitInTwoBands) {
  run_both_functional(kAlexNetNvFull);
}
TEST(FoldFunctional, NvFullInt8K5S1P2) {
  run_both_functional(kK5S1P2);
}
TEST(FoldFunctional, NvFullInt8K7S2P3Full) {
  Case c = kK7S2P3;
  c.mode = fn::FoldMode::kFull;
  run_both_functional(c);
}

TEST(FoldFunctional, NvSmallInt8K7S2P3) {
  Case c = kK7S2P3;
  c.config = "nv_small";
  c.kernels = 16;
  run_both_functional(c);
}
// AlexNet's conv1 geometry on nv_small, 16 kernels, folded into columns: 33 channels in 5
// surfaces of 8, 275 atoms of 8 bytes = 275 entries per line. Weights 16 * 363 = 5808 -> 5888
// bytes: 2 banks of 4096; 30 banks hold 30 * 512 / 275 = 55 lines, (55 - 11) / 4 + 1 = 12 rows:
// ceil(55 / 12) = 5 bands. (One group of 8 kernels, 3032 bytes, 1 bank: 57 lines, 12 rows, 5
// bands fetching the weights 5 times.)
TEST(FoldFunctional, NvSmallInt8K11S4SplitInFiveBands) {
  Case c = kAlexNetNvFull;
  c.config = "nv_small";
  c.kernels = 16;
  c.bands = 5;
  run_both_functional(c);
}
TEST(FoldFunctional, NvSmallInt8K5S1P2) {
  Case c = kK5S1P2;
  c.config = "nv_small";
  c.kernels = 16;
  run_both_functional(c);
}
TEST(FoldFunctional, NvSmallInt8K5S1P2Full) {
  Case c = kK5S1P2;
  c.config = "nv_small";
  c.kernels = 16;
  c.mode = fn::FoldMode::kFull;
  run_both_functional(c);
}

TEST(FoldFunctional, NvFullFp16K7S2P3) {
  Case c = kK7S2P3;
  c.precision = fn::NetPrecision::kFp16;
  run_both_functional(c);
}
TEST(FoldFunctional, NvFullFp16K11S4) {
  Case c = kAlexNetNvFull;
  c.precision = fn::NetPrecision::kFp16;
  c.mode = fn::FoldMode::kAuto;
  c.bands = 0;
  run_both_functional(c);
}
TEST(FoldFunctional, NvFullFp16K5S1P2) {
  Case c = kK5S1P2;
  c.precision = fn::NetPrecision::kFp16;
  run_both_functional(c);
}

// The pooling runs on the fly after the folded convolution (one ConvPoolLayer), as after the
// unfolded one.
TEST(FoldFunctional, NvSmallInt8K7S2P3ThenMaxPoolOnTheFly) {
  Case c = kK7S2P3;
  c.config = "nv_small";
  c.height = c.width = 56;
  c.kernels = 16;
  c.max_pool = true;
  const Programs r = compile_both(c, 1);
  for (const fn::CompiledNetwork* n : {&r.folded, &r.unfolded}) {
    ASSERT_EQ(n->program.layers.size(), 1U);
    EXPECT_TRUE(std::holds_alternative<firmware::ConvPoolLayer>(n->program.layers[0].hw));
  }
  const auto& cp = std::get<firmware::ConvPoolLayer>(r.folded.program.layers[0].hw);
  EXPECT_EQ(cp.conv.kernel_width, 1U);
  run_both_functional(c);
}

// The cycle-level SoC: one device runs the folded program, then the unfolded one (each checked
// layer by layer against the reference executor by run_image); the folded convolution's CONV
// records take fewer cycles in all. AlexNet's conv1 on nv_full: 121 packages per output pixel and
// kernel group unfolded, 11 folded (fold_test.cpp).
TEST(FoldOnSoc, NvFullAlexNetConv1TakesFewerCycles) {
  const Programs r = compile_both(kAlexNetNvFull, 1);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", r.hw);
  soc::HostAdapter device(soc);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and, where placed, the CV-SRAM
  fn::GroupState groups;
  std::vector<std::vector<std::int32_t>> codes;
  std::vector<std::uint64_t> cycles;
  for (const fn::NetProgram* p : {&r.folded.program, &r.unfolded.program}) {
    const std::size_t first = soc.dla().layers().size();
    fn::load_constants(*p, memory);
    firmware::HostMemory reference;
    fn::load_constants(*p, reference);
    const fn::ImageRun run = fn::run_image(*p, r.images, 0, memory, mmio, groups, reference);
    EXPECT_EQ(run.differing_output, p->outputs.size());
    codes.push_back(fn::read_output_codes(*p, 0, memory));
    const auto& t = soc.dla().layers();
    EXPECT_EQ(t.size() - first, p->layers.size());
    std::uint64_t n = 0;
    for (std::size_t k = first; k < t.size(); ++k) {
      EXPECT_EQ(t[k].engine, "CONV");
      n += t[k].end_cycle - t[k].start_cycle;
    }
    cycles.push_back(n);
  }
  EXPECT_EQ(codes[0], codes[1]) << "folded vs unfolded on the SoC";
  EXPECT_LT(cycles[0], cycles[1]) << "folded " << cycles[0] << " cycles, unfolded " << cycles[1];
}

// `octasim compile`'s trace: input.dat holds the folded layout (write_network_trace takes
// input_image), the layer map names the fold, and `octasim run` passes every check, functional
// and cycle-level (the convolution's 2 bands and the output file).
TEST(FoldTrace, FoldedInputTracePassesEveryCheck) {
  Case c = kK7S2P3;
  c.config = "nv_small";
  c.height = c.width = 40;
  c.kernels = 8;
  const HwConfig hw = load_hw_config(c.config);
  fn::CompiledNetwork net = compile(conv_graph(c), hw, c, fn::FoldMode::kAuto);
  ASSERT_TRUE(net.program.input.fold.has_value());
  const Tensor images = fn::random_images(net.plan, 2, 3);
  const test::TempDir dir("fold_trace");
  const fn::NetTraceFiles files = fn::write_network_trace(net, images, 1, dir.str());
  std::ifstream map_file(files.layer_map);
  const nlohmann::json map = nlohmann::json::parse(map_file);
  EXPECT_EQ(map.at("input_fold"), net.program.input.fold->describe());
  // input.dat: the folded surface of image 1, from its start.
  std::vector<std::uint8_t> bytes;
  for (const trace::DatPacket& d : trace::read_dat_file((dir.path() / "input.dat").string())) {
    if (bytes.size() < d.offset + d.payload.size()) bytes.resize(d.offset + d.payload.size());
    std::copy(d.payload.begin(), d.payload.end(),
              bytes.begin() + static_cast<std::ptrdiff_t>(d.offset));
  }
  EXPECT_EQ(bytes, fn::input_image(net.program, images, 1));
  EXPECT_NE(bytes, fn::input_image(net.program, images, 0));
  const std::size_t checks = net.program.layers.size() + 1;
  for (const char* mode : {" --functional", ""}) {
    std::string out;
    EXPECT_EQ(test::run_octasim("run " + files.trace + " --no-progress" + mode, &out), 0) << out;
    EXPECT_NE(out.find("checks: " + std::to_string(checks) + " passed, 0 failed"),
              std::string::npos)
        << mode << "\n"
        << out;
  }
}

}  // namespace
}  // namespace octasim
