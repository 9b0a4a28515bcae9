// Batched fully-connected layers (firmware/net/batch.hpp, `octasim net --batch N`): a small
// network (Conv + Relu + MaxPool, Flatten, Gemm + Relu, Gemm) compiled with fc_batch N on nv_full.
// Every image's output codes must equal those of the same network compiled for one image (an
// independent program, run image by image through the quantized reference executor), and the
// batched program's own reference executor (multi-batch run_conv_model); on the cycle-level SoC
// the fully-connected weights are fetched once per batch (CDMA's weight byte counter per layer)
// and the fully-connected layers take fewer cycles per frame than at batch 1.
// The batches' sizes are derived by hand from nv_full's CBUF in the comments.
// SystemC elaborates once per process: one SoC per TEST (gtest_discover_tests).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <systemc>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/batch.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;
using nettest::int_attr;
using nettest::ints_attr;

// The network's sizes: input C x H x W, the convolution's kernels, the first Gemm's outputs.
struct Shape {
  std::int64_t channels, height, width, kernels, hidden;
};
// Small: the fully-connected input is 8 x 6 x 6 (288 bytes per image); the first Gemm's 48
// outputs take two 32-byte atoms.
constexpr Shape kSmall{3, 12, 12, 8, 48};
// The first Gemm's input is 64 x 16 x 14 = 14336 bytes per image: on nv_full (16 banks of 512
// entries of 64 bytes; 32-byte atoms, so one entry holds two) a line is 14 positions x 2 C'
// surfaces x 32 bytes = 14 entries, an image 16 lines = 224 entries; one kernel group is 32
// kernels x 14336 bytes = 458752 bytes = 14 banks of 32 KiB, plus 128 bytes: 15 banks. One bank
// is left for data: 512 entries hold 2 images (448 entries), not 3 (672).
constexpr Shape kLarge{3, 32, 28, 64, 40};
constexpr std::uint32_t kLargeMaxBatch = 2;
constexpr std::int64_t kClasses = 10;

std::vector<float> scaled_ramp(std::size_t n, std::int64_t fan_in) {
  std::vector<float> v = nettest::ramp(n);
  for (float& x : v) x /= std::sqrt(static_cast<float>(fan_in) / 9.0F);
  return v;
}

models::graph::Graph fc_graph(const Shape& s) {
  nettest::GraphBuilder b;
  b.input("x", {1, s.channels, s.height, s.width});
  b.constant("W", {s.kernels, s.channels, 3, 3},
             scaled_ramp(static_cast<std::size_t>(s.kernels * s.channels * 9), s.channels * 9));
  b.constant("B", {s.kernels}, nettest::ramp(static_cast<std::size_t>(s.kernels)));
  auto& conv = b.node("Conv", "conv", {"x", "W", "B"}, {"c"});
  conv.attributes["kernel_shape"] = ints_attr({3, 3});
  conv.attributes["pads"] = ints_attr({1, 1, 1, 1});
  b.node("Relu", "relu", {"c"}, {"r"});
  auto& mp = b.node("MaxPool", "pool", {"r"}, {"p"});
  mp.attributes["kernel_shape"] = ints_attr({2, 2});
  mp.attributes["strides"] = ints_attr({2, 2});
  b.node("Flatten", "flat", {"p"}, {"f"});
  const std::int64_t k = s.kernels * (s.height / 2) * (s.width / 2);
  b.constant("W1", {s.hidden, k}, scaled_ramp(static_cast<std::size_t>(s.hidden * k), k));
  b.constant("B1", {s.hidden}, nettest::ramp(static_cast<std::size_t>(s.hidden)));
  b.node("Gemm", "fc1", {"f", "W1", "B1"}, {"g"}).attributes["transB"] = int_attr(1);
  b.node("Relu", "relu1", {"g"}, {"h"});
  b.constant("W2", {kClasses, s.hidden},
             scaled_ramp(static_cast<std::size_t>(kClasses * s.hidden), s.hidden));
  b.constant("B2", {kClasses}, nettest::ramp(kClasses));
  b.node("Gemm", "fc2", {"h", "W2", "B2"}, {"y"}).attributes["transB"] = int_attr(1);
  b.output("y");
  return b.graph();
}

// The network compiled for one image and for `batch`, with the same calibration images.
struct Pair {
  HwConfig hw;
  fn::CompiledNetwork one, batched;
  Tensor images;
};

Pair compile_pair(const Shape& s, unsigned batch, std::size_t images,
                  fn::ClipCalibration calibration = fn::ClipCalibration::kMax) {
  Pair r;
  r.hw = load_hw_config("nv_full");
  const models::graph::Graph g = fc_graph(s);
  fn::QuantOptions o;
  o.calibration = calibration;
  r.one = fn::prepare_network(g, r.hw);
  const Tensor calib = fn::random_images(r.one.plan, 4, 1);
  fn::quantize_network(r.one, r.hw, calib, o);
  o.fc_batch = batch;
  r.batched = fn::prepare_network(g, r.hw);
  fn::quantize_network(r.batched, r.hw, calib, o);
  r.images = fn::random_images(r.one.plan, images, 7);
  return r;
}

// The one-image program's output codes for image `i`, through the quantized reference executor.
std::vector<std::int32_t> one_image_codes(const fn::NetProgram& one, const Tensor& images,
                                          std::size_t i) {
  firmware::HostMemory mem;
  fn::load_constants(one, mem);
  fn::write_input(one, images, i, mem);
  (void)fn::run_network_model(one, mem);
  return fn::read_output_codes(one, 0, mem);
}

// The batches of the fully-connected layers computing `nodes_prefix` ("Gemm 'fc1'"), in order.
std::vector<std::uint32_t> batches_of(const fn::NetProgram& p, const std::string& nodes_prefix) {
  std::vector<std::uint32_t> out;
  for (const fn::NetLayer& l : p.layers) {
    if (l.nodes.rfind(nodes_prefix, 0) != 0) continue;
    const auto* conv = std::get_if<firmware::ConvLayer>(&l.hw);
    if (conv != nullptr) out.push_back(conv->batches);
  }
  return out;
}

std::size_t count_nodes(const fn::NetProgram& p, const std::string& nodes_prefix) {
  return static_cast<std::size_t>(
      std::count_if(p.layers.begin(), p.layers.end(),
                    [&](const fn::NetLayer& l) { return l.nodes.rfind(nodes_prefix, 0) == 0; }));
}

TEST(FcBatch, SmallNetworkRunsTheFullyConnectedLayersOnceForTheBatch) {
  for (const unsigned batch : {4U, 3U}) {
    const Pair r = compile_pair(kSmall, batch, batch);
    const fn::NetProgram& p = r.batched.program;
    EXPECT_EQ(p.images, batch);
    // One image: conv (+ pool on the fly), fc1, fc2.
    ASSERT_EQ(r.one.program.layers.size(), 3U);
    EXPECT_EQ(count_nodes(p, "Conv 'conv'"), batch) << "the convolution once per image";
    EXPECT_EQ(batches_of(p, "Gemm 'fc1'"), std::vector<std::uint32_t>{batch});
    EXPECT_EQ(batches_of(p, "Gemm 'fc2'"), std::vector<std::uint32_t>{batch});
    EXPECT_EQ(p.layers.size(), batch + 2);
    EXPECT_EQ(p.macs(), r.one.program.macs() * batch);
    EXPECT_GT(p.input.batch_stride, 0U);
    EXPECT_GT(p.outputs[0].batch_stride, 0U);
  }
}

TEST(FcBatch, TheCbufSplitsTheBatchIntoTheLargestThatFit) {
  const Pair r = compile_pair(kLarge, 4, 4);
  const fn::NetProgram& one = r.one.program;
  const auto fc1_layer = std::find_if(one.layers.begin(), one.layers.end(), [](const auto& l) {
    return l.nodes.rfind("Gemm 'fc1'", 0) == 0;
  });
  ASSERT_NE(fc1_layer, one.layers.end());
  const auto& fc1 = std::get<firmware::ConvLayer>(fc1_layer->hw);
  ASSERT_TRUE(fn::fully_connected(fc1));
  EXPECT_EQ(fn::max_fc_batch(fc1, r.one.program.hw), kLargeMaxBatch);
  EXPECT_EQ(fn::fc_batches(fc1, 4, r.one.program.hw), (std::vector<std::uint32_t>{2, 2}));
  EXPECT_EQ(fn::fc_batches(fc1, 3, r.one.program.hw), (std::vector<std::uint32_t>{2, 1}));
  EXPECT_EQ(fn::fc_batches(fc1, 5, r.one.program.hw), (std::vector<std::uint32_t>{2, 2, 1}));
  EXPECT_EQ(batches_of(r.batched.program, "Gemm 'fc1'"), (std::vector<std::uint32_t>{2, 2}));
  // fc2's input is 40 channels (two 32-byte atoms): the 4 fit.
  EXPECT_EQ(batches_of(r.batched.program, "Gemm 'fc2'"), std::vector<std::uint32_t>{4});
  // The convolution is no fully-connected layer; a 64-channel input of 1x1 would be.
  const auto* conv = std::get_if<firmware::ConvLayer>(&one.layers[0].hw);
  const auto* conv_pool = std::get_if<firmware::ConvPoolLayer>(&one.layers[0].hw);
  ASSERT_TRUE(conv != nullptr || conv_pool != nullptr) << one.layers[0].engine;
  EXPECT_FALSE(fn::fully_connected(conv != nullptr ? *conv : conv_pool->conv));
}

TEST(FcBatch, RefusesConfigurationsWithoutBatchAndNetworksWithoutFullyConnectedLayers) {
  const HwConfig small = load_hw_config("nv_small");
  fn::CompiledNetwork net = fn::prepare_network(fc_graph(kSmall), small);
  fn::QuantOptions o;
  o.fc_batch = 4;
  try {
    fn::quantize_network(net, small, fn::random_images(net.plan, 2, 1), o);
    FAIL() << "nv_small has no multi-batch convolution";
  } catch (const models::graph::GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("nv_small has no multi-batch convolution"),
              std::string::npos)
        << e.what();
  }
  nettest::GraphBuilder b;  // Conv only
  b.input("x", {1, 3, 8, 8});
  b.constant("W", {4, 3, 3, 3}, nettest::ramp(108));
  b.node("Conv", "conv", {"x", "W"}, {"y"}).attributes["kernel_shape"] = ints_attr({3, 3});
  b.output("y");
  const HwConfig full = load_hw_config("nv_full");
  fn::CompiledNetwork conv = fn::prepare_network(b.graph(), full);
  try {
    fn::quantize_network(conv, full, fn::random_images(conv.plan, 2, 1), o);
    FAIL() << "no fully-connected layer";
  } catch (const models::graph::GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("no fully-connected layer"), std::string::npos)
        << e.what();
  }
}

// The batched program on the functional device, two batches: each image's codes against the
// one-image program and against the batched program's reference executor.
void expect_functional(const Shape& s, unsigned batch, fn::ClipCalibration calibration) {
  const Pair r = compile_pair(s, batch, 2 * batch, calibration);
  const fn::NetProgram& p = r.batched.program;
  dla::FunctionalDevice device(r.hw);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and, with placement, the CV-SRAM
  fn::load_constants(p, memory);
  firmware::HostMemory reference;
  fn::load_constants(p, reference);
  fn::GroupState groups;
  std::vector<std::vector<std::int32_t>> seen;
  for (std::size_t first = 0; first < 2 * batch; first += batch) {
    const fn::ImageRun run = fn::run_image(p, r.images, first, memory, mmio, groups, reference);
    EXPECT_EQ(run.exact_images, batch) << "device vs the batched reference executor";
    EXPECT_EQ(run.differing_output, p.outputs.size());
    for (std::size_t b = 0; b < batch; ++b) {
      const std::vector<std::int32_t> codes = fn::read_output_codes(p, 0, memory, b);
      EXPECT_EQ(codes, fn::read_output_codes(p, 0, reference, b)) << "image " << first + b;
      EXPECT_EQ(codes, one_image_codes(r.one.program, r.images, first + b))
          << "image " << first + b << ": batch " << batch << " vs one image per program";
      seen.push_back(codes);
    }
  }
  // Different images give different outputs: not a comparison of one slot with itself.
  EXPECT_NE(seen[0], seen[1]);
  std::size_t records = 0;
  for (const fn::NetLayer& l : p.layers) records += fn::device_records(l).size();
  EXPECT_EQ(device.layers().size(), 2 * records);
}

TEST(FcBatch, FunctionalBatch4EqualsOneImagePrograms) {
  expect_functional(kSmall, 4, fn::ClipCalibration::kMax);
}
TEST(FcBatch, FunctionalBatch3EqualsOneImagePrograms) {
  expect_functional(kSmall, 3, fn::ClipCalibration::kMax);
}
TEST(FcBatch, FunctionalSplitBatch4EqualsOneImagePrograms) {
  expect_functional(kLarge, 4, fn::ClipCalibration::kMax);
}
TEST(FcBatch, FunctionalSplitBatch3EqualsOneImagePrograms) {
  expect_functional(kLarge, 3, fn::ClipCalibration::kMax);
}
// octav-device: OCTAV and the SDP it programs after each Gemm run per image, on its slot.
TEST(FcBatch, FunctionalOctavDeviceBatch4EqualsOneImagePrograms) {
  expect_functional(kSmall, 4, fn::ClipCalibration::kOctavDevice);
}

// What one program run left on the SoC, per program layer (serial issue: a layer's records
// follow the previous layer's).
struct LayerCost {
  std::uint64_t cycles = 0, weight_bytes = 0;
};

std::vector<LayerCost> run_serial(soc::Soc& soc, trace::DeviceMmio& mmio, fn::GroupState& groups,
                                  const fn::NetProgram& p) {
  const std::size_t before = soc.dla().layers().size();
  fn::program_network(p, mmio, groups, fn::Schedule::kSerial);
  const auto& records = soc.dla().layers();
  std::vector<LayerCost> out;
  std::size_t r = before;
  for (const fn::NetLayer& l : p.layers) {
    LayerCost c;
    for (std::size_t n = fn::device_records(l).size(); n > 0 && r < records.size(); --n, ++r) {
      const soc::LayerTiming& t = records[r];
      c.cycles += t.end_cycle - t.start_cycle;
      const stats::Group& g = soc.dla().engine(t.engine_index).statistics();
      for (std::size_t k = 0; k < g.size() && k < t.counters.size(); ++k) {
        if (g.info(k).name == "cdma_wt_bytes") c.weight_bytes += t.counters[k];
      }
    }
    out.push_back(c);
  }
  EXPECT_EQ(r, records.size()) << "every record belongs to a layer";
  return out;
}

// Sums the costs of the layers computing `nodes_prefix`.
LayerCost cost_of(const fn::NetProgram& p, const std::vector<LayerCost>& costs,
                  const std::string& nodes_prefix) {
  LayerCost sum;
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    if (p.layers[i].nodes.rfind(nodes_prefix, 0) != 0) continue;
    sum.cycles += costs[i].cycles;
    sum.weight_bytes += costs[i].weight_bytes;
  }
  return sum;
}

// One SoC runs the one-image program on 4 images, then the batched program on the same 4.
// `fc1_bytes` and `fc2_bytes`: each Gemm's weights (INT8: inputs x outputs, 128-byte aligned).
void expect_soc(const Shape& s, std::uint64_t fc1_bytes, std::uint64_t fc2_bytes,
                std::size_t fc1_fetches) {
  constexpr unsigned kBatch = 4;
  const Pair r = compile_pair(s, kBatch, kBatch);
  const fn::NetProgram& one = r.one.program;
  const fn::NetProgram& p = r.batched.program;
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", r.hw);
  soc::HostAdapter device(soc);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);
  fn::GroupState groups;

  fn::load_constants(one, memory);
  LayerCost fc1_one, fc2_one;
  std::vector<std::vector<std::int32_t>> one_codes;
  for (std::size_t i = 0; i < kBatch; ++i) {
    fn::write_input(one, r.images, i, memory);
    const std::vector<LayerCost> costs = run_serial(soc, mmio, groups, one);
    const LayerCost a = cost_of(one, costs, "Gemm 'fc1'"), b = cost_of(one, costs, "Gemm 'fc2'");
    EXPECT_EQ(a.weight_bytes, fc1_bytes) << "image " << i;
    EXPECT_EQ(b.weight_bytes, fc2_bytes) << "image " << i;
    fc1_one.cycles += a.cycles;
    fc2_one.cycles += b.cycles;
    one_codes.push_back(fn::read_output_codes(one, 0, memory));
    EXPECT_EQ(one_codes.back(), one_image_codes(one, r.images, i)) << "image " << i;
  }

  fn::load_constants(p, memory);
  fn::write_batch_input(p, r.images, 0, memory);
  const std::vector<LayerCost> costs = run_serial(soc, mmio, groups, p);
  firmware::HostMemory reference;
  fn::load_constants(p, reference);
  fn::write_batch_input(p, r.images, 0, reference);
  (void)fn::run_network_model(p, reference);
  for (std::size_t b = 0; b < kBatch; ++b) {
    const std::vector<std::int32_t> codes = fn::read_output_codes(p, 0, memory, b);
    EXPECT_EQ(codes, one_codes[b]) << "image " << b << ": batched SoC vs one image per program";
    EXPECT_EQ(codes, fn::read_output_codes(p, 0, reference, b)) << "image " << b;
  }
  const LayerCost fc1 = cost_of(p, costs, "Gemm 'fc1'"), fc2 = cost_of(p, costs, "Gemm 'fc2'");
  // The weights once per batch (per batch the CBUF holds, for fc1 of the large network).
  EXPECT_EQ(fc1.weight_bytes, fc1_fetches * fc1_bytes);
  EXPECT_EQ(fc2.weight_bytes, fc2_bytes);
  // Cycles per frame: the batch's over its images, against one image's.
  EXPECT_LT(fc1.cycles, fc1_one.cycles) << "fc1 per frame " << fc1.cycles / kBatch
                                        << " at batch 4, " << fc1_one.cycles / kBatch << " at 1";
  EXPECT_LT(fc1.cycles + fc2.cycles, fc1_one.cycles + fc2_one.cycles);
}

// fc1: 288 x 48 = 13824 bytes; fc2: 48 x 10 = 480, 512 aligned to 128.
TEST(FcBatch, SocFetchesTheWeightsOncePerBatch) {
  expect_soc(kSmall, 13824, 512, 1);
}
// fc1: 14336 x 40 = 573440 bytes, fetched by each of its 2 batches of 2; fc2: 400, 512 aligned.
TEST(FcBatch, SocSplitBatchFetchesTheWeightsOncePerCbufBatch) {
  expect_soc(kLarge, 573440, 512, 2);
}

}  // namespace
}  // namespace octasim
