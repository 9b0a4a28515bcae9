// Sigmoid, Tanh, HardSigmoid, HardSwish, SiLU (Mul(x, Sigmoid(x))), Erf and GELU (PyTorch's
// opset-13 pattern) through the whole
// compiler onto the cycle-level SoC (firmware/net/activation.hpp says how each runs):
//   - every layer's output equals the quantized reference executor's (models/ ops, the same
//     LUT) byte for byte (soc_run.hpp);
//   - against the exact functions computed here from std:: math, every element is within the
//     stated bound: at INT8 half an output step plus the input's half step times f's Lipschitz
//     constant (the LUT holds the exact f of each input code, rounded once); at FP16
//     fp16_activation_bound at the FP16 input, which must itself be small.
// SystemC elaborates once per process: one configuration and precision per TEST.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/net/activation.hpp"
#include "firmware/net/compiler.hpp"
#include "models/numerics/float_format.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"
#include "soc_run.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using firmware::Unary;
using firmware::UnaryFunction;
using models::graph::Tensor;
using nettest::float_attr;
using nettest::GraphBuilder;

constexpr std::size_t kImages = 2;

// One output per function, in this order.
struct Activation {
  const char* output;
  Unary unary;
  std::function<double(double)> exact;
  double lipschitz;  // sup |f'|
};

std::vector<Activation> activations() {
  const auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  return {
      {"y_sig", Unary{UnaryFunction::kSigmoid}, sigmoid, 0.25},
      {"y_tanh", Unary{UnaryFunction::kTanh}, [](double x) { return std::tanh(x); }, 1.0},
      {"y_hsig", Unary{UnaryFunction::kHardSigmoid, 0.3, 0.4},
       [](double x) { return std::clamp(0.3 * x + 0.4, 0.0, 1.0); }, 0.3},
      {"y_hswish", Unary{UnaryFunction::kHardSwish, 1.0 / 6, 0.5},
       [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, 1.5},
      {"y_silu", Unary{UnaryFunction::kSilu}, [=](double x) { return x * sigmoid(x); }, 1.1},
      {"y_erf", Unary{UnaryFunction::kErf}, [](double x) { return std::erf(x); }, 1.1284},
      {"y_gelu", Unary{UnaryFunction::kGelu},
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, 1.129},
  };
}

models::graph::Graph activation_graph(bool only_hard_sigmoid) {
  GraphBuilder b;
  b.input("x", {1, 8, 6, 6});
  if (!only_hard_sigmoid) {
    b.node("Sigmoid", "sig", {"x"}, {"y_sig"});
    b.node("Tanh", "tanh", {"x"}, {"y_tanh"});
  }
  auto& hs = b.node("HardSigmoid", "hsig", {"x"}, {"y_hsig"});
  hs.attributes["alpha"] = float_attr(0.3F);
  hs.attributes["beta"] = float_attr(0.4F);
  if (!only_hard_sigmoid) {
    b.node("HardSwish", "hswish", {"x"}, {"y_hswish"});
    b.node("Sigmoid", "s", {"x"}, {"s"});
    b.node("Mul", "silu", {"x", "s"}, {"y_silu"});
    b.node("Erf", "erf", {"x"}, {"y_erf"});
    // PyTorch's nn.GELU at opset 13: x * (erf(x / sqrt 2) + 1) * 0.5.
    b.constant("sqrt2", {}, {1.4142135F});
    b.constant("one", {}, {1.0F});
    b.constant("half", {}, {0.5F});
    b.node("Div", "gelu_div", {"x", "sqrt2"}, {"g_d"});
    b.node("Erf", "gelu_erf", {"g_d"}, {"g_e"});
    b.node("Add", "gelu_add", {"g_e", "one"}, {"g_a"});
    b.node("Mul", "gelu_mul", {"x", "g_a"}, {"g_m"});
    b.node("Mul", "gelu_half", {"g_m", "half"}, {"y_gelu"});
    for (const char* y : {"y_sig", "y_tanh", "y_hsig", "y_hswish", "y_silu", "y_erf", "y_gelu"}) {
      b.output(y);
    }
  } else {
    b.output("y_hsig");
  }
  return b.graph();
}

// Uniform in [-range, range).
Tensor centred(Tensor t, float range) {
  for (float& v : t.f) v = (2 * v - 1) * range;
  return t;
}

float fp16(float v) {
  return models::fp16_to_float(models::fp16_from_float(v));
}

void check_activations(const char* config, fn::NetPrecision precision, bool only_hard_sigmoid,
                       std::size_t expected_layers) {
  const HwConfig hw = load_hw_config(config);
  fn::CompiledNetwork net = fn::prepare_network(activation_graph(only_hard_sigmoid), hw);
  const bool fp16_run = precision == fn::NetPrecision::kFp16;
  // FP16: beyond Tanh's +-8 and up to Sigmoid's +-16 input grid.
  const Tensor images = centred(fn::random_images(net.plan, kImages, 7), fp16_run ? 12.0F : 5.0F);
  fn::QuantOptions options;
  options.precision = precision;
  fn::quantize_network(net, hw, images, options);  // calibrated on the images themselves
  const fn::NetProgram& prog = net.program;
  ASSERT_EQ(prog.layers.size(), expected_layers);

  const nettest::SocRun run = nettest::run_on_soc(prog, hw, images, kImages);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_EQ(run.layers_run, nettest::device_record_count(prog) * kImages);

  std::vector<Activation> acts = activations();
  if (only_hard_sigmoid) acts = {acts[2]};
  const double x_step = fp16_run ? 0.0 : prog.table.at("x").step();
  for (std::size_t k = 0; k < acts.size(); ++k) {
    const Activation& a = acts[k];
    ASSERT_EQ(prog.outputs.at(k).name, a.output);
    const double y_step = fp16_run ? 0.0 : prog.table.at(a.output).step();
    double worst_ratio = 0.0, largest_bound = 0.0;
    for (std::size_t i = 0; i < kImages; ++i) {
      const Tensor& d = run.every_output.at(i).at(k);
      const std::size_t n = d.f.size();
      ASSERT_EQ(n, 8U * 6 * 6);
      for (std::size_t e = 0; e < n; ++e) {
        const float x = images.f[i * n + e];
        double err = 0.0, bound = 0.0;
        if (fp16_run) {
          const double x16 = fp16(x);
          err = std::abs(double{d.f[e]} - a.exact(x16));
          bound = fn::fp16_activation_bound(a.unary, x16);
          // Useful: about an FP16 step at 1 (2^-11) for the bounded functions; for the products
          // x g(x) about three half steps of |x| (g's error, its rounding, the output's).
          EXPECT_LE(bound, 1.5e-3 * std::max(1.0, std::abs(x16))) << a.output << " at x = " << x16;
        } else {
          err = std::abs(double{d.f[e]} - a.exact(x));
          // The affine map without a LUT (nv_small's HardSigmoid) adds its fixed point's
          // eps, far below 0.05 of a step here (ew_fixed_point.hpp).
          bound = a.lipschitz * x_step / 2 + y_step * (only_hard_sigmoid ? 0.55 : 0.5) + 1e-9;
        }
        largest_bound = std::max(largest_bound, bound);
        worst_ratio = std::max(worst_ratio, err / bound);
        EXPECT_LE(err, bound) << a.output << " image " << i << " element " << e << ": x = " << x
                              << ", device " << d.f[e] << ", exact " << a.exact(x);
      }
    }
    // The bound is not vacuous: the errors reach a good part of it somewhere.
    EXPECT_GT(worst_ratio, 0.05) << a.output << ": largest bound " << largest_bound;
  }
}

TEST(ActivationsOnSoc, Int8NvFull) {
  check_activations("nv_full", fn::NetPrecision::kInt8, false, 7);
}

TEST(ActivationsOnSoc, Int8SocLarge) {
  check_activations("soc_large", fn::NetPrecision::kInt8, false, 7);
}

// Sigmoid, Tanh, SiLU, Erf, GELU: three layers each (FP16 -> INT16, the LUT, x 2^-15);
// HardSigmoid and HardSwish one.
TEST(ActivationsOnSoc, Fp16NvFull) {
  check_activations("nv_full", fn::NetPrecision::kFp16, false, 17);
}

TEST(ActivationsOnSoc, Fp16SocLarge) {
  check_activations("soc_large", fn::NetPrecision::kFp16, false, 17);
}

// The overlapped schedule (`octasim net`'s default) with seven SDP layers reading x, six of them
// with different LUTs in the one LUT storage, is bit-exact with models/. The simulator reads the
// LUT when a layer starts, and a layer waiting in the other register group starts the moment the
// one before it ends, before the host can write anything: so it cannot show a LUT rewritten
// under a running layer, which the hardware forbids. ScheduleActivation (activation_test.cpp)
// checks the ordering that prevents it: a layer with a different LUT waits for the one before.
TEST(ActivationsOnSoc, OverlappedScheduleKeepsEachLayersLut) {
  const HwConfig hw = load_hw_config("nv_full");
  fn::CompiledNetwork net = fn::prepare_network(activation_graph(false), hw);
  const Tensor images = centred(fn::random_images(net.plan, kImages, 7), 5.0F);
  fn::quantize_network(net, hw, images, fn::QuantOptions{});
  const fn::NetProgram& prog = net.program;
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);
  fn::load_constants(prog, memory);
  firmware::HostMemory golden;
  fn::load_constants(prog, golden);
  fn::GroupState groups;
  for (std::size_t i = 0; i < kImages; ++i) {
    const fn::ImageRun r =
        fn::run_image(prog, images, i, memory, mmio, groups, golden, fn::Schedule::kOverlap);
    EXPECT_EQ(r.exact_images, 1U) << "image " << i << ": output " << r.differing_output;
  }
  EXPECT_EQ(soc.dla().layers().size(), prog.layers.size() * kImages);
}

// nv_small has no LUT: HardSigmoid as the affine map with ReLU (BS/BN).
TEST(ActivationsOnSoc, Int8NvSmallHardSigmoid) {
  check_activations("nv_small", fn::NetPrecision::kInt8, true, 1);
}

}  // namespace
}  // namespace octasim
