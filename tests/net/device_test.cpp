// The committed Fashion-MNIST CNN compiled by firmware/net and run on the cycle-level SoC
// (soc_run.hpp), image after image, against the quantized reference executor
// (run_network_model: models/ ops, layer by layer): every layer's output surface and every
// output code must be equal, bit for bit — the issue's "the device's outputs equal the
// quantized reference executor bit for bit".
//
// Images: the first 8 of the Fashion-MNIST test set (calibration: the first 100 training
// images), or, without the data set, deterministic random images. SystemC elaborates once per
// process: each TEST is its own ctest entry (gtest_discover_tests).
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "fashion_data.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "sim/core/hw_config.hpp"
#include "soc_run.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;

constexpr std::size_t kImages = 8;

struct Case {
  const char* config;
  fn::NetPrecision precision;
  fn::ClipCalibration calibration;
  fn::WeightQuantizer weights;
};

void run_fashion_cnn(const Case& c) {
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
  // models/networks/fashion_mnist/README.md: 5 DLA layers (each MaxPool on the fly after its
  // convolution); octav-device keeps the 7 (the OCTAV unit reads the convolution's output from
  // memory) and adds OCTAV and the SDP it programs after each of the 4 convolutions.
  const bool device_clips = c.calibration == fn::ClipCalibration::kOctavDevice;
  ASSERT_EQ(prog.layers.size(), device_clips ? 15U : 5U);
  if (device_clips) {
    // The snapped tensors lie on the grid of the device's clip: at INT4 an unsigned (ReLU)
    // tensor takes at most 16 values (codes 0..15) per image, in its own 8-bit units.
    firmware::HostMemory mem;
    fn::load_constants(prog, mem);
    fn::write_input(prog, images, 0, mem);
    std::size_t snapped = 0;
    for (std::size_t l = 0; l < prog.layers.size(); ++l) {
      const fn::LayerGolden g = fn::run_layer_model(prog, l, mem);
      const auto* fq = std::get_if<firmware::FakeQuantSdpLayer>(&prog.layers[l].hw);
      if (fq == nullptr) continue;
      EXPECT_GT(g.clip, 0.0F);
      const std::vector<std::int32_t> v =
          models::ops::read_feature_cube(firmware::conv_model_surface(fq->dst, prog.hw.atom_bytes),
                                         models::ops::ConvPrecision::kInt8, mem)
              .data;
      const std::set<std::int32_t> levels(v.begin(), v.end());
      if (fq->is_unsigned && c.precision == fn::NetPrecision::kInt4) {
        EXPECT_EQ(fq->bits, 4);
        EXPECT_LE(levels.size(), 16U) << prog.layers[l].nodes;
        EXPECT_GE(levels.size(), 4U) << prog.layers[l].nodes;  // not collapsed to a few values
        ++snapped;
      }
    }
    if (c.precision == fn::NetPrecision::kInt4) {
      EXPECT_EQ(snapped, 3U);  // conv1, conv2, fc1
    }
  }
  ASSERT_EQ(prog.outputs.size(), 1U);

  const nettest::SocRun run = nettest::run_on_soc(prog, hw, images, kImages);
  EXPECT_EQ(run.differing_images, 0U);
  // The device ran every layer of every image: a convolution with its pooling on the fly leaves
  // two layer records (CONV, and PDP fed by SDP).
  EXPECT_EQ(run.layers_run, nettest::device_record_count(prog) * kImages);
  // Not a comparison of zeros: the logits carry information, and differ between images.
  std::size_t nonzero = 0;
  std::set<std::size_t> classes;
  for (const auto& codes : run.codes) {
    ASSERT_EQ(codes.size(), 10U);
    nonzero += static_cast<std::size_t>(
        std::count_if(codes.begin(), codes.end(), [](std::int32_t v) { return v != 0; }));
    classes.insert(
        static_cast<std::size_t>(std::max_element(codes.begin(), codes.end()) - codes.begin()));
  }
  EXPECT_GT(nonzero, kImages * 5);
  EXPECT_GE(classes.size(), real ? 3U : 1U);
}

TEST(FashionCnnOnSoc, NvSmallInt8) {
  run_fashion_cnn(
      {"nv_small", fn::NetPrecision::kInt8, fn::ClipCalibration::kMax, fn::WeightQuantizer::kMax});
}

TEST(FashionCnnOnSoc, NvSmallInt4) {
  run_fashion_cnn(
      {"nv_small", fn::NetPrecision::kInt4, fn::ClipCalibration::kMax, fn::WeightQuantizer::kMax});
}

TEST(FashionCnnOnSoc, NvSmallInt4OctavMmse) {
  run_fashion_cnn({"nv_small", fn::NetPrecision::kInt4, fn::ClipCalibration::kOctav,
                   fn::WeightQuantizer::kMmse});
}

TEST(FashionCnnOnSoc, NvSmallInt4OctavDevice) {
  run_fashion_cnn({"nv_small", fn::NetPrecision::kInt4, fn::ClipCalibration::kOctavDevice,
                   fn::WeightQuantizer::kMmse});
}

TEST(FashionCnnOnSoc, SocSmallInt8OctavDevice) {
  run_fashion_cnn({"soc_small", fn::NetPrecision::kInt8, fn::ClipCalibration::kOctavDevice,
                   fn::WeightQuantizer::kMax});
}

TEST(FashionCnnOnSoc, SocSmallInt8) {
  run_fashion_cnn({"soc_small", fn::NetPrecision::kInt8, fn::ClipCalibration::kPercentile,
                   fn::WeightQuantizer::kMax});
}

TEST(FashionCnnOnSoc, SocSmallInt4) {
  run_fashion_cnn({"soc_small", fn::NetPrecision::kInt4, fn::ClipCalibration::kMseHistogram,
                   fn::WeightQuantizer::kMax});
}

}  // namespace
}  // namespace octasim
