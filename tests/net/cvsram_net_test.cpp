// Networks with their data placed in the CV-SRAM (firmware/net/placement.hpp) run on the devices
// bit for bit like the quantized reference executor (models/, on a host image holding both
// memories as the device does): the committed Fashion-MNIST CNN on NVIDIA's performance-sheet
// operating point (nv_full's DLA, DRAM 10 bytes a cycle, CV-SRAM 25 + 25) on the cycle-level SoC
// (every layer's output compared, soc_run.hpp) and on the functional device; a CV-SRAM too small
// for everything (both memories in use); octav-device calibration (the OCTAV unit's input kept in
// DRAM); an FP16 element-wise constant operand read by ERDMA from the CV-SRAM. SystemC elaborates
// once per process: one network per TEST. And `octasim net` with and without --no-cvsram: the
// what-if the option exists for.
#include <cstdint>
#include <fstream>
#include <regex>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/onnx/onnx_import.hpp"
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
using firmware::Ram;
using models::graph::Tensor;

constexpr std::size_t kCvsramImages = 3;

// The sheet's operating point: nv_full's DLA at 1 GHz, DRAM 10 GB/s (reads and writes), the
// CV-SRAM 25 GB/s of reads and 25 of writes; `cvsram_bytes` of it.
HwConfig sheet(unsigned cvsram_bytes = 4U << 20) {
  return parse_hw_config(
      R"({"base": "nv_full", "dram_bytes_per_cycle": 10, "cvsram_read_bytes_per_cycle": 25,
          "cvsram_write_bytes_per_cycle": 25, "cvsram_bytes": )" +
          std::to_string(cvsram_bytes) + "}",
      "sheet.json");
}

fn::CompiledNetwork fashion(const HwConfig& hw, Tensor& images,
                            fn::ClipCalibration calibration = fn::ClipCalibration::kMax) {
  fn::CompiledNetwork net = fn::prepare_network(firmware::load_onnx(OCTASIM_FASHION_MODEL), hw);
  images = fn::random_images(net.plan, kCvsramImages);
  for (float& v : images.f) v *= 255.0F;  // pixel values 0..255
  fn::QuantOptions q;
  q.calibration = calibration;
  fn::quantize_network(net, hw, images, q);
  return net;
}

std::uint64_t activation_footprint(const fn::NetProgram& p) {
  return p.placement.activation_cvsram_bytes + p.placement.activation_dram_bytes;
}

TEST(CvSramNetwork, EverythingInTheCvSramOnTheCycleLevelDevice) {
  const HwConfig hw = sheet();
  Tensor images;
  const fn::CompiledNetwork net = fashion(hw, images);
  const fn::NetProgram& p = net.program;
  // 4 MiB holds the CNN's activations and weights: nothing is left in DRAM.
  EXPECT_GT(p.placement.activation_cvsram_bytes, 0U);
  EXPECT_EQ(p.placement.activation_dram_bytes, 0U);
  EXPECT_GT(p.placement.constant_cvsram_bytes, 100000U);  // fc1's 1568 x 64 weights among them
  EXPECT_EQ(p.placement.constant_dram_bytes, 0U);
  const nettest::SocRun run = nettest::run_on_soc(p, hw, images, kCvsramImages);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_EQ(run.layers_run, nettest::device_record_count(p) * kCvsramImages);
  // Every byte the DLA moved went through the secondary interface: at least each image's input
  // read and every weight read once per image.
  EXPECT_EQ(run.dram_bytes, 0U);
  EXPECT_GE(run.cvsram_bytes, kCvsramImages * p.placement.constant_cvsram_bytes);
}

TEST(CvSramNetwork, EverythingInTheCvSramOnTheFunctionalDevice) {
  const HwConfig hw = sheet();
  Tensor images;
  const fn::CompiledNetwork net = fashion(hw, images);
  const fn::NetProgram& p = net.program;
  dla::FunctionalDevice device(hw);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);
  firmware::HostMemory golden;
  fn::load_constants(p, memory);
  fn::load_constants(p, golden);
  // The constants are in the CV-SRAM's image, not DRAM's.
  const fn::ConstantBlob& weights = p.constants.front();
  ASSERT_EQ(weights.ram, Ram::kCv);
  std::vector<std::uint8_t> got(weights.bytes.size());
  device.memory_of(MemorySpace::kCvSram).read(weights.address, got.data(), got.size());
  EXPECT_EQ(got, weights.bytes);
  device.memory_of(MemorySpace::kDram).read(weights.address, got.data(), got.size());
  EXPECT_NE(got, weights.bytes);
  fn::GroupState groups;
  for (std::size_t i = 0; i < kCvsramImages; ++i) {
    const fn::ImageRun run = fn::run_image(p, images, i, memory, mmio, groups, golden);
    EXPECT_EQ(run.differing_output, p.outputs.size()) << "image " << i;
  }
}

// 64 KiB: the activations (with the pool's reuse) and the first layers' weights fit, fc1's
// 100352-byte weights do not: both memories carry traffic, and the result is the same.
TEST(CvSramNetwork, PartlyInTheCvSramOnTheCycleLevelDevice) {
  const HwConfig hw = sheet(64U << 10);
  Tensor images;
  const fn::CompiledNetwork net = fashion(hw, images);
  const fn::NetProgram& p = net.program;
  EXPECT_EQ(p.placement.activation_dram_bytes, 0U);
  EXPECT_GT(p.placement.constant_cvsram_bytes, 0U);
  EXPECT_GE(p.placement.constant_dram_bytes, 100352U);
  EXPECT_LE(p.placement.cvsram_end - p.placement.cvsram_begin, 64U << 10);
  EXPECT_LE(activation_footprint(p), 64U << 10);
  const nettest::SocRun run = nettest::run_on_soc(p, hw, images, kCvsramImages);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_GT(run.dram_bytes, 0U);
  EXPECT_GT(run.cvsram_bytes, 0U);
}

// octav-device: the OCTAV unit reads each convolution's output from DRAM (it has no secondary
// interface), everything else may be in the CV-SRAM.
TEST(CvSramNetwork, OctavDeviceCalibrationKeepsTheOctavInputInDram) {
  const HwConfig hw = sheet();
  Tensor images;
  const fn::CompiledNetwork net = fashion(hw, images, fn::ClipCalibration::kOctavDevice);
  const fn::NetProgram& p = net.program;
  std::size_t octavs = 0;
  for (const fn::NetLayer& l : p.layers) {
    if (const auto* o = std::get_if<firmware::OctavLayer>(&l.hw)) {
      EXPECT_EQ(o->src.ram, Ram::kMc) << l.nodes;
      ++octavs;
    }
  }
  EXPECT_EQ(octavs, 4U);
  EXPECT_GT(p.placement.activation_cvsram_bytes, 0U);
  EXPECT_GT(p.placement.activation_dram_bytes, 0U);
  const nettest::SocRun run = nettest::run_on_soc(p, hw, images, kCvsramImages);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_GT(run.cvsram_bytes, 0U);
}

// FP16: x + K, K a constant of x's shape, is an SDP layer whose element-wise operand is a
// constant surface; placed in the CV-SRAM, ERDMA reads it there (ERDMA_RAM_TYPE = CV).
TEST(CvSramNetwork, Fp16ElementwiseConstantReadFromTheCvSram) {
  nettest::GraphBuilder b;
  b.input("x", {1, 4, 4, 4});
  b.constant("K", {1, 4, 4, 4}, nettest::ramp(64));
  b.node("Add", "add", {"x", "K"}, {"y"});
  b.output("y");
  const HwConfig hw = sheet();
  fn::CompiledNetwork net = fn::prepare_network(b.graph(), hw);
  const Tensor images = fn::random_images(net.plan, kCvsramImages);
  fn::QuantOptions q;
  q.precision = fn::NetPrecision::kFp16;
  fn::quantize_network(net, hw, images, q);
  const fn::NetProgram& p = net.program;
  ASSERT_EQ(p.layers.size(), 1U);
  const auto& sdp = std::get<firmware::SdpLayer>(p.layers[0].hw);
  ASSERT_TRUE(sdp.ew.has_value());
  EXPECT_EQ(sdp.ew->surface.ram, Ram::kCv);
  EXPECT_EQ(sdp.src.ram, Ram::kCv);
  EXPECT_EQ(sdp.dst.ram, Ram::kCv);
  const nettest::SocRun run = nettest::run_on_soc(p, hw, images, kCvsramImages);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_EQ(run.dram_bytes, 0U);
  // Not all zero: x + K carries K's ramp.
  std::size_t nonzero = 0;
  for (const auto& codes : run.codes) {
    for (std::int32_t v : codes) nonzero += v != 0 ? 1 : 0;
  }
  EXPECT_GT(nonzero, kCvsramImages * 32);
}

struct CliRun {
  std::string out;
  std::uint64_t cycles = 0;  // "cycles: N per inference"
  nlohmann::json report;
};

CliRun octasim_net(const test::TempDir& dir, const std::string& options) {
  CliRun r;
  const std::string report = (dir.path() / "report.json").string();
  const int rc =
      test::run_octasim(std::string("net ") + OCTASIM_FASHION_MODEL + " --config " +
                            (dir.path() / "sheet.json").string() +
                            " --limit 1 --no-progress --report " + report + " " + options,
                        &r.out);
  EXPECT_EQ(rc, 0) << r.out;
  EXPECT_NE(r.out.find("device vs quantized reference: 1 of 1 images bit-exact"), std::string::npos)
      << r.out;
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex("\ncycles: ([0-9]+) per inference"))) {
    r.cycles = std::stoull(m[1]);
  }
  std::ifstream in(report);
  r.report = nlohmann::json::parse(in, nullptr, false);
  return r;
}

// The sheet's operating point with DRAM slow (10 bytes a cycle): the same network is faster with
// its data in the CV-SRAM (25 + 25) than with --no-cvsram. A comparison of two runs, not a timing.
TEST(CvSramNetworkCli, TheCvSramMakesTheNetworkFasterWhenDramIsSlow) {
  const test::TempDir dir("cvsram_cli");
  std::ofstream((dir.path() / "sheet.json").string())
      << R"({"base": "nv_full", "name": "sheet", "dram_bytes_per_cycle": 10,
             "cvsram_read_bytes_per_cycle": 25, "cvsram_write_bytes_per_cycle": 25})";
  const CliRun with = octasim_net(dir, "");
  const CliRun without = octasim_net(dir, "--no-cvsram");
  EXPECT_TRUE(std::regex_search(
      with.out, std::regex("\nmemory: activations [1-9][0-9]* B CV-SRAM, 0 B DRAM; constants "
                           "\\(weights, tables\\) [1-9][0-9]* B CV-SRAM, 0 B DRAM\n")))
      << with.out;
  EXPECT_TRUE(std::regex_search(
      without.out, std::regex("\nmemory: activations 0 B CV-SRAM, [1-9][0-9]* B DRAM; constants "
                              "\\(weights, tables\\) 0 B CV-SRAM, [1-9][0-9]* B DRAM\n")))
      << without.out;
  ASSERT_GT(with.cycles, 0U) << with.out;
  ASSERT_GT(without.cycles, 0U) << without.out;
  EXPECT_LT(with.cycles, without.cycles);
  // Without the CV-SRAM every byte crosses DRAM, at 10 a cycle for reads and writes together.
  ASSERT_TRUE(without.report.is_object()) << without.out;
  const std::uint64_t dram = without.report["dram"]["bytes_read"].get<std::uint64_t>() +
                             without.report["dram"]["bytes_written"].get<std::uint64_t>();
  EXPECT_GT(dram, 0U);
  EXPECT_GE(without.cycles * 10, dram);
  ASSERT_TRUE(with.report.is_object()) << with.out;
  EXPECT_EQ(with.report["dram"]["bytes_read"].get<std::uint64_t>(), 0U);
  EXPECT_GT(with.report["cvsram"]["bytes_read"].get<std::uint64_t>(), 0U);
}

}  // namespace
}  // namespace octasim
