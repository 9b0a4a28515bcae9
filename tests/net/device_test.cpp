// The committed Fashion-MNIST CNN compiled by firmware/net and run on the cycle-level SoC
// (sim/soc: Soc + HostAdapter, programmed through DeviceMmio as `octasim net` does), image after
// image, against the quantized reference executor (run_network_model: models/ ops, layer by
// layer): every layer's output surface and every output code must be equal, bit for bit — the
// issue's "the device's outputs equal the quantized reference executor bit for bit".
//
// Images: the first 8 of the Fashion-MNIST test set (calibration: the first 100 training
// images), or, without the data set, deterministic random images. SystemC elaborates once per
// process: each TEST is its own ctest entry (gtest_discover_tests).
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <systemc>

#include "fashion_data.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;

constexpr std::size_t kImages = 8;

std::vector<std::uint8_t> bytes_of(const models::ops::Memory& m, std::uint64_t addr,
                                   std::size_t n) {
  std::vector<std::uint8_t> v(n);
  m.read(addr, v.data(), n);
  return v;
}

struct Case {
  const char* config;
  fn::NetPrecision precision;
  fn::ClipCalibration calibration;
  fn::WeightQuantizer weights;
};

void run_on_soc(const Case& c) {
  const HwConfig hw = load_hw_config(c.config);
  fn::CompiledNetwork net = fn::prepare_network(firmware::load_onnx(OCTASIM_FASHION_MODEL), hw);
  Tensor images, calibration;
  const bool real = nettest::have_fashion_mnist();
  if (real) {
    images = fn::as_input_batch(net.plan, nettest::fashion_images("t10k", kImages));
    calibration = fn::as_input_batch(net.plan, nettest::fashion_images("train", 100));
  } else {
    // Pixel values are 0..255: scale the [0, 1) random images to that range.
    images = fn::random_images(net.plan, kImages);
    for (float& v : images.f) v *= 255.0F;
    calibration = images;
  }
  fn::QuantOptions options;
  options.precision = c.precision;
  options.calibration = c.calibration;
  options.weights = c.weights;
  fn::quantize_network(net, hw, calibration, options);
  const fn::NetProgram& prog = net.program;
  ASSERT_EQ(prog.layers.size(), 7U);  // models/networks/fashion_mnist/README.md: 7 DLA layers
  ASSERT_EQ(prog.outputs.size(), 1U);

  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  trace::DeviceMmio mmio(device, 50'000'000);
  fn::load_constants(prog, device.memory());
  firmware::HostMemory golden;
  fn::load_constants(prog, golden);
  fn::GroupState groups;

  std::set<std::size_t> classes;
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < kImages; ++i) {
    SCOPED_TRACE("image " + std::to_string(i));
    fn::write_input(prog, images, i, device.memory());
    fn::program_network(prog, mmio, groups);
    fn::write_input(prog, images, i, golden);
    (void)fn::run_network_model(prog, golden);
    for (std::size_t l = 0; l < prog.layers.size(); ++l) {
      const fn::NetLayer& layer = prog.layers[l];
      const firmware::FeatureSurface& dst = std::visit(
          [](const auto& h) -> const firmware::FeatureSurface& { return h.dst; }, layer.hw);
      const auto n = static_cast<std::size_t>(fn::tensor_bytes(prog, dst));
      ASSERT_EQ(bytes_of(device.memory(), dst.address, n), bytes_of(golden, dst.address, n))
          << "layer " << l << " (" << layer.engine << " " << layer.nodes << ") differs";
    }
    const std::vector<std::int32_t> dev = fn::read_output_codes(prog, 0, device.memory());
    const std::vector<std::int32_t> ref = fn::read_output_codes(prog, 0, golden);
    ASSERT_EQ(dev.size(), 10U);
    EXPECT_EQ(dev, ref);
    nonzero += static_cast<std::size_t>(
        std::count_if(dev.begin(), dev.end(), [](std::int32_t v) { return v != 0; }));
    classes.insert(
        static_cast<std::size_t>(std::max_element(dev.begin(), dev.end()) - dev.begin()));
  }
  // The device ran every layer of every image.
  EXPECT_EQ(soc.dla().layers().size(), prog.layers.size() * kImages);
  // Not a comparison of zeros: the logits carry information, and differ between images.
  EXPECT_GT(nonzero, kImages * 5);
  EXPECT_GE(classes.size(), real ? 3U : 1U);
}

TEST(FashionCnnOnSoc, NvSmallInt8) {
  run_on_soc(
      {"nv_small", fn::NetPrecision::kInt8, fn::ClipCalibration::kMax, fn::WeightQuantizer::kMax});
}

TEST(FashionCnnOnSoc, NvSmallInt4) {
  run_on_soc(
      {"nv_small", fn::NetPrecision::kInt4, fn::ClipCalibration::kMax, fn::WeightQuantizer::kMax});
}

TEST(FashionCnnOnSoc, NvSmallInt4OctavMmse) {
  run_on_soc({"nv_small", fn::NetPrecision::kInt4, fn::ClipCalibration::kOctav,
              fn::WeightQuantizer::kMmse});
}

TEST(FashionCnnOnSoc, SocSmallInt8) {
  run_on_soc({"soc_small", fn::NetPrecision::kInt8, fn::ClipCalibration::kPercentile,
              fn::WeightQuantizer::kMax});
}

TEST(FashionCnnOnSoc, SocSmallInt4) {
  run_on_soc({"soc_small", fn::NetPrecision::kInt4, fn::ClipCalibration::kMseHistogram,
              fn::WeightQuantizer::kMax});
}

}  // namespace
}  // namespace octasim
