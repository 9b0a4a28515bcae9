// Grouped convolutions group by group (firmware/net/groups.cpp) end to end: small grouped
// convolutions (tests/net/group_graph.hpp) compiled into one CONV layer per group, run on the
// functional device and on the cycle-level SoC. Two goldens:
//   - the quantized reference executor (models/ ops) on the same program, bit for bit (the device
//     computes what the compiler meant);
//   - the same graph compiled with one dense layer (QuantOptions::conv_groups false, the
//     calibration table of the grouped one), run through the reference executor: the grouped
//     output must match it within one output step. Why one step: with max weight quantization
//     each kernel's codes and scale are the dense layer's (the zeros of other groups change no
//     maximum), so the INT32 accumulators are the same; only SDP's requantization differs, each
//     layer choosing its own multiplier shift t (the largest keeping every m[k] in INT16) and bias
//     shift. The test weights give every kernel the same largest weight, so m[k] >= 2^14 and the
//     multiplier's rounding moves an output by at most |y| / 2^15 < 0.01 step; the bias' rounding
//     by less. Two values that close round to codes at most 1 apart. At FP16 the products and
//     their sums are the same numbers (the dense layer's extra terms are exact zeros): within
//     FP16 rounding of the output.
// SystemC elaborates once per process: one device per TEST (gtest_discover_tests).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "group_graph.hpp"
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
using nettest::GroupCase;

struct Compiled {
  HwConfig hw;
  fn::CompiledNetwork grouped, dense;
  Tensor images;
};

Compiled compile_both(const GroupCase& c, const char* config, fn::NetPrecision precision,
                      std::size_t images) {
  Compiled r;
  r.hw = load_hw_config(config);
  fn::QuantOptions o;
  o.precision = precision;
  o.fold = fn::FoldMode::kOff;
  r.grouped = fn::prepare_network(nettest::group_graph(c), r.hw);
  r.images = fn::random_images(r.grouped.plan, images, 3);
  const Tensor calibration = fn::random_images(r.grouped.plan, 4);
  fn::quantize_network(r.grouped, r.hw, calibration, o);
  o.conv_groups = false;
  r.dense = fn::prepare_network(nettest::group_graph(c), r.hw);
  fn::quantize_network(r.dense, r.hw, calibration, o, &r.grouped.program.table);
  std::size_t group_layers = 0;
  for (const fn::NetLayer& l : r.grouped.program.layers) group_layers += l.groups > 1 ? 1 : 0;
  EXPECT_EQ(group_layers, static_cast<std::size_t>(c.groups)) << "one CONV layer per group";
  for (const fn::NetLayer& l : r.dense.program.layers) EXPECT_EQ(l.groups, 1U);
  return r;
}

// Output 0 of image `i` through the reference executor on the dense program.
struct Output {
  std::vector<std::int32_t> codes;
  Tensor values;
};
Output dense_output(const Compiled& r, std::size_t i) {
  const fn::NetProgram& p = r.dense.program;
  firmware::HostMemory mem;
  fn::load_constants(p, mem);
  fn::write_input(p, r.images, i, mem);
  (void)fn::run_network_model(p, mem);
  return {fn::read_output_codes(p, 0, mem), fn::read_output(p, 0, mem)};
}

// INT8: codes at most 1 apart, most of them equal, not a comparison of zeros.
void expect_within_one_step(const std::vector<std::int32_t>& grouped,
                            const std::vector<std::int32_t>& dense, std::size_t image) {
  ASSERT_EQ(grouped.size(), dense.size());
  std::size_t differ = 0, nonzero = 0;
  for (std::size_t k = 0; k < dense.size(); ++k) {
    EXPECT_LE(std::abs(grouped[k] - dense[k]), 1)
        << "image " << image << " output " << k << ": " << grouped[k] << " vs " << dense[k];
    differ += grouped[k] != dense[k] ? 1 : 0;
    nonzero += dense[k] != 0 ? 1 : 0;
  }
  EXPECT_LE(differ, dense.size() / 100) << "image " << image;
  EXPECT_GT(nonzero, dense.size() / 8) << "image " << image;
}

// FP16: each value within FP16's rounding of the dense one (half an ulp, 2^-11 relative, twice
// for the two roundings of the output).
void expect_fp16_close(const Tensor& grouped, const Tensor& dense, std::size_t image) {
  ASSERT_EQ(grouped.f.size(), dense.f.size());
  double peak = 0.0;
  for (float v : dense.f) peak = std::max(peak, std::abs(double{v}));
  EXPECT_GT(peak, 0.0);
  for (std::size_t k = 0; k < dense.f.size(); ++k) {
    const double d = double{dense.f[k]}, g = double{grouped.f[k]};
    EXPECT_LE(std::abs(g - d), std::ldexp(std::abs(d), -10) + 1e-6)
        << "image " << image << " output " << k << ": " << g << " vs " << d;
  }
}

void run_functional(const GroupCase& c, const char* config, fn::NetPrecision precision) {
  constexpr std::size_t kImages = 2;
  const Compiled r = compile_both(c, config, precision, kImages);
  const fn::NetProgram& p = r.grouped.program;
  dla::FunctionalDevice device(r.hw);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);
  fn::load_constants(p, memory);
  firmware::HostMemory reference;
  fn::load_constants(p, reference);
  fn::GroupState groups;
  for (std::size_t i = 0; i < kImages; ++i) {
    const fn::ImageRun run = fn::run_image(p, r.images, i, memory, mmio, groups, reference);
    EXPECT_EQ(run.differing_output, p.outputs.size()) << "image " << i << ": device vs reference";
    const Output dense = dense_output(r, i);
    if (precision == fn::NetPrecision::kFp16) {
      expect_fp16_close(fn::read_output(p, 0, memory), dense.values, i);
    } else {
      expect_within_one_step(fn::read_output_codes(p, 0, memory), dense.codes, i);
    }
  }
  EXPECT_EQ(device.layers().size(), p.layers.size() * kImages);
}

// Groups of one atom each (32 INT8 channels on nv_full), a MaxPool after them from memory.
TEST(GroupsFunctional, NvFullInt8AlignedGroupsAndPool) {
  GroupCase c;
  c.height = c.width = 16;
  c.max_pool = true;
  run_functional(c, "nv_full", fn::NetPrecision::kInt8);
}

// AlexNet conv2's shape: groups of 48 channels read 64-channel windows.
TEST(GroupsFunctional, NvFullInt8Windows) {
  GroupCase c;
  c.channels = 96;
  c.kernels = 64;
  c.kernel = 5;
  c.height = c.width = 13;
  run_functional(c, "nv_full", fn::NetPrecision::kInt8);
}

// FP16: 16 channels per atom, 4 groups of 16.
TEST(GroupsFunctional, NvFullFp16FourGroups) {
  GroupCase c;
  c.groups = 4;
  run_functional(c, "nv_full", fn::NetPrecision::kFp16);
}

// nv_small: 8 INT8 channels per atom.
TEST(GroupsFunctional, NvSmallInt8) {
  GroupCase c;
  c.channels = c.kernels = 16;
  c.height = c.width = 12;
  run_functional(c, "nv_small", fn::NetPrecision::kInt8);
}

// The cycle-level SoC, each layer awaited before the next: every layer's output equals the
// reference executor's (soc_run.hpp), the output the dense layer's within one step.
TEST(GroupsSoc, NvFullInt8WindowsAndPool) {
  GroupCase c;
  c.channels = 96;
  c.height = c.width = 16;
  c.max_pool = true;
  const Compiled r = compile_both(c, "nv_full", fn::NetPrecision::kInt8, 1);
  const fn::NetProgram& p = r.grouped.program;
  const nettest::SocRun run = nettest::run_on_soc(p, r.hw, r.images, 1);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_EQ(run.layers_run, nettest::device_record_count(p));
  ASSERT_EQ(run.codes.size(), 1U);
  expect_within_one_step(run.codes[0], dense_output(r, 0).codes, 0);
}

// As `octasim net` issues layers (Schedule::kOverlap): the groups write disjoint channel ranges
// and read what no layer writes, so no group waits for another; each is programmed while the one
// before runs, in CONV's other register group, and starts the cycle it ends. The pooling waits for
// both. The output equals the reference executor's and the dense layer's within one step.
TEST(GroupsSoc, GroupsRunBackToBackOverlapped) {
  GroupCase c;
  c.groups = 4;
  c.kernels = 128;
  c.height = c.width = 16;
  c.max_pool = true;
  const Compiled r = compile_both(c, "nv_full", fn::NetPrecision::kInt8, 1);
  const fn::NetProgram& p = r.grouped.program;
  ASSERT_EQ(p.layers.size(), 5U);
  const std::vector<std::vector<std::size_t>> deps = fn::layer_dependencies(p);
  for (std::size_t k = 1; k < 4; ++k) {
    // Only the layer two back on CONV (its register group): a free group, no memory dependency.
    const std::vector<std::size_t> want =
        k >= 2 ? std::vector<std::size_t>{k - 2} : std::vector<std::size_t>{};
    EXPECT_EQ(deps[k], want) << k;
  }
  const std::vector<std::size_t> all{0, 1, 2, 3};
  EXPECT_EQ(deps[4], all);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", r.hw);
  soc::HostAdapter device(soc);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);
  fn::load_constants(p, memory);
  firmware::HostMemory reference;
  fn::load_constants(p, reference);
  fn::GroupState groups;
  const fn::ImageRun run =
      fn::run_image(p, r.images, 0, memory, mmio, groups, reference, fn::Schedule::kOverlap);
  EXPECT_EQ(run.differing_output, p.outputs.size()) << "device vs reference";
  expect_within_one_step(fn::read_output_codes(p, 0, memory), dense_output(r, 0).codes, 0);
  const auto& t = soc.dla().layers();
  ASSERT_EQ(t.size(), 5U);
  for (std::size_t k = 1; k < 4; ++k) {
    EXPECT_EQ(t[k].engine, "CONV");
    EXPECT_EQ(t[k].start_cycle, t[k - 1].end_cycle) << "group " << k;
  }
  EXPECT_GE(t[4].start_cycle, t[3].end_cycle);
}

// --batch (fc_batch 2, batch.hpp): the group layers run once per image before the batched Gemm,
// which reads the tensor they write in parts. Each image equals the batched program's reference
// executor and the one-image program's output (an independent program run image by image).
TEST(GroupsFunctional, NvFullFcBatchOfTwo) {
  GroupCase c;
  c.max_pool = true;
  c.gemm_outputs = 16;
  const HwConfig hw = load_hw_config("nv_full");
  fn::QuantOptions o;
  o.fold = fn::FoldMode::kOff;
  fn::CompiledNetwork one = fn::prepare_network(nettest::group_graph(c), hw);
  const Tensor calibration = fn::random_images(one.plan, 4);
  const Tensor images = fn::random_images(one.plan, 2, 5);
  fn::quantize_network(one, hw, calibration, o);
  o.fc_batch = 2;
  fn::CompiledNetwork two = fn::prepare_network(nettest::group_graph(c), hw);
  fn::quantize_network(two, hw, calibration, o, &one.program.table);
  const fn::NetProgram& p = two.program;
  ASSERT_EQ(p.images, 2U);
  std::size_t group_layers = 0;
  for (const fn::NetLayer& l : p.layers) group_layers += l.groups > 1 ? 1 : 0;
  EXPECT_EQ(group_layers, 4U);  // 2 groups, once per image
  dla::FunctionalDevice device(hw);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);
  fn::load_constants(p, memory);
  firmware::HostMemory reference;
  fn::load_constants(p, reference);
  fn::GroupState groups;
  const fn::ImageRun run = fn::run_image(p, images, 0, memory, mmio, groups, reference);
  EXPECT_EQ(run.exact_images, 2U) << "device vs the batched reference executor";
  for (std::size_t i = 0; i < 2; ++i) {
    firmware::HostMemory mem;
    fn::load_constants(one.program, mem);
    fn::write_input(one.program, images, i, mem);
    (void)fn::run_network_model(one.program, mem);
    EXPECT_EQ(fn::read_output_codes(p, 0, memory, i), fn::read_output_codes(one.program, 0, mem))
        << "image " << i;
  }
}

// `octasim compile`'s trace of a grouped convolution: the layer map names each layer's group, and
// `octasim run` passes every check (each group's output window by CRC, then the output file),
// functional and cycle-level.
TEST(GroupsTrace, TracePassesEveryCheck) {
  GroupCase c;
  c.channels = 96;
  c.height = c.width = 12;
  const Compiled r = compile_both(c, "nv_full", fn::NetPrecision::kInt8, 2);
  const test::TempDir dir("groups_trace");
  const fn::NetTraceFiles files = fn::write_network_trace(r.grouped, r.images, 1, dir.str());
  std::ifstream map_file(files.layer_map);
  const nlohmann::json map = nlohmann::json::parse(map_file);
  ASSERT_EQ(map.at("layers").size(), 2U);
  for (unsigned g = 0; g < 2; ++g) {
    EXPECT_EQ(map.at("layers").at(g).at("group"), g);
    EXPECT_EQ(map.at("layers").at(g).at("groups"), 2);
  }
  for (const char* mode : {" --functional", ""}) {
    std::string out;
    EXPECT_EQ(
        test::run_octasim("run " + files.trace + " --config nv_full --no-progress" + mode, &out), 0)
        << out;
    EXPECT_NE(out.find("checks: 3 passed, 0 failed"), std::string::npos) << mode << "\n" << out;
  }
}

}  // namespace
}  // namespace octasim
