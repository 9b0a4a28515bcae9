// Accuracy of the committed Fashion-MNIST CNN on the device, on a subset of the real data (the
// issue's "INT8 within 1 point of FP32; at INT4 OCTAV beats max-scaling (asserted in a test on
// a subset)"). Calibration: the first 200 training images; evaluation: the first 1000 test
// images, run on the functional device (sim/dla/functional_device.hpp: the DLA's arithmetic
// at zero time) through DeviceMmio, image by image, against the FP32 reference executor
// (models/graph/reference.hpp) and the labels. Skipped without the data set.
//
// Measured per configuration: top-1 against the labels, agreement of the top-1 with FP32's,
// and the mean squared error of the dequantized logits against the FP32 logits. Asserted: INT8
// top-1 within 1 point of FP32; at INT4, OCTAV's logit MSE below max-scaling's. INT4 top-1 is
// printed but not asserted (see the test: on 1000 images the difference is noise).
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "fashion_data.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "models/graph/reference.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;

constexpr std::size_t kCalibrationImages = 200;
constexpr std::size_t kTestImages = 1000;
constexpr std::size_t kClasses = 10;

std::size_t argmax(const float* v) {
  return static_cast<std::size_t>(std::max_element(v, v + kClasses) - v);
}

// The data, the prepared network and its FP32 logits, shared by the configurations a test
// compares.
struct Bench {
  HwConfig hw;
  fn::CompiledNetwork net;
  Tensor calibration, images;
  std::vector<int> labels;
  std::vector<float> fp32;  // kTestImages x kClasses
  double fp32_top1 = 0.0;

  explicit Bench(const char* config = "nv_small") : hw(load_hw_config(config)) {
    net = fn::prepare_network(firmware::load_onnx(OCTASIM_FASHION_MODEL), hw);
    calibration =
        fn::as_input_batch(net.plan, nettest::fashion_images("train", kCalibrationImages));
    images = fn::as_input_batch(net.plan, nettest::fashion_images("t10k", kTestImages));
    labels = nettest::fashion_labels("t10k", kTestImages);
    std::size_t ok = 0;
    for (std::size_t first = 0; first < kTestImages; first += 100) {
      const models::graph::TensorMap out = models::graph::run_reference(
          net.graph, {{net.plan.input, fn::slice_batch(images, first, 100)}});
      const Tensor& logits = out.at(net.plan.outputs.at(0));
      fp32.insert(fp32.end(), logits.f.begin(), logits.f.end());
    }
    for (std::size_t i = 0; i < kTestImages; ++i) {
      ok += argmax(&fp32[i * kClasses]) == static_cast<std::size_t>(labels[i]) ? 1 : 0;
    }
    fp32_top1 = 100.0 * static_cast<double>(ok) / kTestImages;
  }
};

struct Result {
  double top1 = 0.0;       // percent
  double agreement = 0.0;  // percent of images whose top-1 equals FP32's
  double mse = 0.0;        // mean over images and logits of (device - FP32)^2
};

Result evaluate(Bench& b, fn::NetPrecision precision, fn::ClipCalibration calibration,
                fn::WeightQuantizer weights) {
  fn::QuantOptions o;
  o.precision = precision;
  o.calibration = calibration;
  o.weights = weights;
  fn::quantize_network(b.net, b.hw, b.calibration, o);
  const fn::NetProgram& prog = b.net.program;
  dla::FunctionalDevice device(b.hw);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and, when placed there, the CV-SRAM
  fn::load_constants(prog, memory);
  fn::GroupState groups;
  std::size_t ok = 0, agree = 0;
  double sq = 0.0;
  for (std::size_t i = 0; i < kTestImages; ++i) {
    fn::write_input(prog, b.images, i, memory);
    fn::program_network(prog, mmio, groups);
    const Tensor out = fn::read_output(prog, 0, memory);
    EXPECT_EQ(out.f.size(), kClasses);
    const float* ref = &b.fp32[i * kClasses];
    const std::size_t top = argmax(out.f.data());
    ok += top == static_cast<std::size_t>(b.labels[i]) ? 1 : 0;
    agree += top == argmax(ref) ? 1 : 0;
    for (std::size_t k = 0; k < kClasses; ++k) {
      const double d = double{out.f[k]} - double{ref[k]};
      sq += d * d;
    }
  }
  Result r;
  r.top1 = 100.0 * static_cast<double>(ok) / kTestImages;
  r.agreement = 100.0 * static_cast<double>(agree) / kTestImages;
  r.mse = sq / static_cast<double>(kTestImages * kClasses);
  const std::string line = fmt::format(
      "{} calibration {} weights {}: top-1 {:.1f}% (FP32 {:.1f}%), agreement with "
      "FP32 {:.1f}%, logit MSE {:.4f}",
      fn::precision_name(precision), fn::calibration_name(calibration),
      fn::weight_quantizer_name(weights), r.top1, b.fp32_top1, r.agreement, r.mse);
  std::cout << line << std::endl;
  ::testing::Test::RecordProperty(
      fmt::format("{}_{}_{}", fn::precision_name(precision), fn::calibration_name(calibration),
                  fn::weight_quantizer_name(weights)),
      line);
  return r;
}

TEST(FashionCnnAccuracy, Int8WithinOnePointOfFp32) {
  if (!nettest::have_fashion_mnist()) GTEST_SKIP() << "Fashion-MNIST not installed";
  Bench b;
  // The committed model's README: 92.54% on all 10,000 test images; a 1000-image subset is
  // within a few points of that.
  EXPECT_GT(b.fp32_top1, 85.0);
  const Result int8 =
      evaluate(b, fn::NetPrecision::kInt8, fn::ClipCalibration::kMax, fn::WeightQuantizer::kMax);
  EXPECT_GE(int8.top1, b.fp32_top1 - 1.0);
  EXPECT_GE(int8.agreement, 97.0);
}

TEST(FashionCnnAccuracy, Int4OctavLowersTheLogitErrorOfMaxScaling) {
  if (!nettest::have_fashion_mnist()) GTEST_SKIP() << "Fashion-MNIST not installed";
  Bench b;
  // Weights max-scaled in both: the activation clipping is what differs.
  const Result max =
      evaluate(b, fn::NetPrecision::kInt4, fn::ClipCalibration::kMax, fn::WeightQuantizer::kMax);
  const Result octav =
      evaluate(b, fn::NetPrecision::kInt4, fn::ClipCalibration::kOctav, fn::WeightQuantizer::kMax);
  // What OCTAV minimises, the quantization error, reaches the logits: their MSE against FP32
  // is lower with OCTAV's clips (here 2.44 vs 2.71). Measured when this test was written: lower
  // on each of the ten 1000-image subsets of the test set, and on this subset with three other
  // 200-image calibration sets, by 5 to 24%.
  EXPECT_LT(octav.mse, max.mse);
  // Top-1 is reported, not asserted: over the ten 1000-image subsets OCTAV was ahead of max on
  // 5, behind on 4 (by up to 0.4 points, this subset included: 91.9% vs 92.2%) and level on 1;
  // +0.2 points over all 10,000 images. That is within the noise of 1000 images.
  RecordProperty("int4_top1_max", std::to_string(max.top1));
  RecordProperty("int4_top1_octav", std::to_string(octav.top1));
}

// The "at INT4 OCTAV beats max-scaling", with the QAT-init patent's MMSE weights (the
// weights' own error no longer drowns the activations'): OCTAV's clips give a higher top-1 than
// max-scaling's. Measured when this test was written, 200 calibration images: ahead on each of
// the six 1000-image slices checked (0, 1, 3, 5, 7, 9: by 0.6, 1.4, 0.1, 1.6, 1.2, 1.4 points;
// this test runs slice 0, 91.9% vs 91.3%) and by 0.9 points on all 10,000 images.
TEST(FashionCnnAccuracy, Int4OctavBeatsMaxScalingWithMmseWeights) {
  if (!nettest::have_fashion_mnist()) GTEST_SKIP() << "Fashion-MNIST not installed";
  Bench b;
  const Result max =
      evaluate(b, fn::NetPrecision::kInt4, fn::ClipCalibration::kMax, fn::WeightQuantizer::kMmse);
  const Result octav =
      evaluate(b, fn::NetPrecision::kInt4, fn::ClipCalibration::kOctav, fn::WeightQuantizer::kMmse);
  EXPECT_GT(octav.top1, max.top1);
  EXPECT_LT(octav.mse, max.mse);
}

// FP16 on nv_full (no quantization): every tensor is FP16, so the logits stay within FP16's
// relative precision of FP32's and the top-1 decisions agree except where two logits are within
// that of each other.
TEST(FashionCnnAccuracy, Fp16OnNvFullAgreesWithFp32) {
  if (!nettest::have_fashion_mnist()) GTEST_SKIP() << "Fashion-MNIST not installed";
  Bench b("nv_full");
  const Result fp16 =
      evaluate(b, fn::NetPrecision::kFp16, fn::ClipCalibration::kMax, fn::WeightQuantizer::kMax);
  EXPECT_GE(fp16.top1, b.fp32_top1 - 0.2);
  EXPECT_GE(fp16.agreement, 99.5);
  // INT8's logit MSE on this subset is about 0.06 (Int8WithinOnePointOfFp32 prints it); FP16's
  // rounding is 2^-11 relative, far finer.
  EXPECT_LT(fp16.mse, 1e-3);
}

}  // namespace
}  // namespace octasim
