// Depthwise convolutions in blocks of whole atoms (firmware/net/groups.cpp): a 5x5 depthwise
// convolution of 640 or 1152 channels, whose dense expansion (one layer, zeros between groups)
// does not fit nv_full's CBUF, runs as one CONV layer per atom of channels. Checked:
//   - the layers: ceil(C / C') of them, C' = the memory atom (32 bytes on nv_full and soc_large's
//     DLA) over the element size: 32 INT8 channels, 16 FP16; each multiplies H x W x 5 x 5 x C' x
//     C' (its C' kernels over its C'-channel window), the network's MACs H x W x 5 x 5 x C;
//   - the device's output equals the quantized reference executor's (run_network_model) bit for
//     bit, on the functional device and the cycle-level SoC;
//   - the output is the depthwise convolution, computed here from the graph's weights:
//       FP16: input and weights rounded to FP16 (round to nearest even), the products summed in
//       double with the bias; the device sums FP16 products (exact in FP32) in FP32 and rounds
//       the result to FP16, so each value is within 2^-10 of the sum of the magnitudes of its
//       terms (FP32 sums: 25 roundings of 2^-24; the bias in FP16: 2^-11; the output: 2^-11).
//       INT8: the input codes x_q = round(x / s_x) (s_x = the input's calibrated step, calibrated
//       with kMax on these very images: no code clips), each kernel's codes w_q = round(w / s_w)
//       with s_w = max|w_k| / 127 (max weight quantization), the INT32 sum exact, y = s_x s_w sum
//       + b, ReLU, clipped at the output's clip; the device's output is y rounded to an output
//       step (half a step) through SDP's INT16 multiplier (its rounding moves y by under 0.01
//       step, groups_device_test.cpp): within one step.
// A channel read from the wrong input channel or a block's weights misplaced gives errors of
// the order of the values themselves.
// SystemC elaborates once per process: one device per TEST (gtest_discover_tests).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "group_graph.hpp"
#include "models/numerics/float_format.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"
#include "soc_run.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;
using nettest::GroupCase;

// A C-channel 5x5 depthwise convolution (stride 1, padding 2, a bias, ReLU) on a 4x4 input.
GroupCase depthwise(std::int64_t channels) {
  GroupCase c;
  c.channels = c.kernels = c.groups = channels;
  c.kernel = 5;
  c.height = c.width = 4;
  return c;
}

// The channels of a memory atom on nv_full's (and soc_large's) DLA: 32 bytes.
std::uint32_t atom_channels(fn::NetPrecision precision) {
  return precision == fn::NetPrecision::kFp16 ? 16U : 32U;
}

struct Compiled {
  HwConfig hw;
  fn::CompiledNetwork net;
  Tensor images;
};

// Compiled with kMax calibration on the images it runs (no input code clips).
Compiled compile(const GroupCase& c, const char* config, fn::NetPrecision precision,
                 std::size_t images) {
  Compiled r;
  r.hw = load_hw_config(config);
  fn::QuantOptions o;
  o.precision = precision;
  o.fold = fn::FoldMode::kOff;
  o.calibration = fn::ClipCalibration::kMax;
  r.net = fn::prepare_network(nettest::group_graph(c), r.hw);
  r.images = fn::random_images(r.net.plan, images, 3);
  fn::quantize_network(r.net, r.hw, r.images, o);
  return r;
}

// The layers are the blocks: ceil(C / C') CONV layers, block b of n_b = min(C', C - b C')
// kernels over the same n_b channels (the last block the rest of the channels).
void expect_blocks(const GroupCase& c, const fn::NetProgram& p, fn::NetPrecision precision) {
  const std::uint64_t per_atom = atom_channels(precision);
  const auto channels = static_cast<std::uint64_t>(c.channels);
  const std::uint64_t blocks = (channels + per_atom - 1) / per_atom;
  ASSERT_EQ(p.layers.size(), blocks);
  const auto pixels_taps = static_cast<std::uint64_t>(c.height * c.width * c.kernel * c.kernel);
  std::uint64_t macs = 0;
  for (std::size_t b = 0; b < p.layers.size(); ++b) {
    const fn::NetLayer& l = p.layers[b];
    const std::uint64_t n = std::min(per_atom, channels - b * per_atom);
    EXPECT_EQ(l.engine, "CONV");
    EXPECT_EQ(l.group, b);
    EXPECT_EQ(l.groups, blocks);
    EXPECT_EQ(l.macs, pixels_taps * n * n) << "block " << b;
    EXPECT_EQ(l.network_macs, pixels_taps * n) << "block " << b;
    macs += pixels_taps * n * n;
  }
  EXPECT_EQ(p.macs(), macs);
  EXPECT_EQ(p.network_macs(), nettest::group_network_macs(c));
  EXPECT_EQ(p.network_macs(), pixels_taps * channels);
}

// The graph's weights [C, 1, 5, 5] and bias (group_graph's "W" and "B").
struct Weights {
  std::vector<float> w, b;
};
Weights graph_weights(const fn::CompiledNetwork& net) {
  return {net.graph.initializers.at("W").f, net.graph.initializers.at("B").f};
}

// Image `i`'s output against the depthwise convolution computed here (see the header).
void expect_depthwise(const GroupCase& c, const Compiled& r, std::size_t i, const Tensor& out,
                      fn::NetPrecision precision) {
  const Weights wb = graph_weights(r.net);
  const fn::NetProgram& p = r.net.program;
  const auto C = static_cast<std::size_t>(c.channels), H = static_cast<std::size_t>(c.height),
             W = static_cast<std::size_t>(c.width), R = static_cast<std::size_t>(c.kernel);
  const auto pad = static_cast<std::ptrdiff_t>(R / 2);
  const float* x = &r.images.f[i * C * H * W];
  const bool fp16 = precision == fn::NetPrecision::kFp16;
  const double s_x = fp16 ? 1.0 : p.input.quant.step();
  const double s_y = fp16 ? 0.0 : p.outputs.at(0).quant.step();
  const double clip = fp16 ? 0.0 : p.outputs.at(0).quant.clip;
  const auto round_away = [](double v) {
    return v < 0 ? -std::floor(-v + 0.5) : std::floor(v + 0.5);
  };
  const auto fp16_round = [](float v) {
    return double{models::fp16_to_float(models::fp16_from_float(v))};
  };
  ASSERT_EQ(out.f.size(), C * H * W);
  double peak = 0.0, err2 = 0.0, ref2 = 0.0;
  for (std::size_t k = 0; k < C; ++k) {
    const float* wk = &wb.w[k * R * R];
    double s_w = 0.0;
    for (std::size_t t = 0; t < R * R; ++t) s_w = std::max(s_w, std::abs(double{wk[t]}) / 127.0);
    for (std::size_t y = 0; y < H; ++y)
      for (std::size_t xx = 0; xx < W; ++xx) {
        double sum = 0.0, magnitude = 0.0;
        for (std::size_t u = 0; u < R; ++u)
          for (std::size_t v = 0; v < R; ++v) {
            const std::ptrdiff_t iy = static_cast<std::ptrdiff_t>(y + u) - pad,
                                 ix = static_cast<std::ptrdiff_t>(xx + v) - pad;
            if (iy < 0 || ix < 0 || iy >= static_cast<std::ptrdiff_t>(H) ||
                ix >= static_cast<std::ptrdiff_t>(W))
              continue;
            const float xv =
                x[(k * H + static_cast<std::size_t>(iy)) * W + static_cast<std::size_t>(ix)];
            const double term = fp16 ? fp16_round(xv) * fp16_round(wk[u * R + v])
                                     : round_away(double{xv} / s_x) * s_x *
                                           round_away(double{wk[u * R + v]} / s_w) * s_w;
            sum += term;
            magnitude += std::abs(term);
          }
        double ref = std::max(sum + double{wb.b[k]}, 0.0);  // ReLU
        if (!fp16) ref = std::min(ref, clip);
        const double dev = double{out.f[(k * H + y) * W + xx]};
        const double tol =
            fp16 ? std::ldexp(magnitude + std::abs(double{wb.b[k]}), -10) + 1e-6 : s_y;
        EXPECT_LE(std::abs(dev - ref), tol) << "image " << i << " channel " << k << " (" << y
                                            << ", " << xx << "): " << dev << " vs " << ref;
        peak = std::max(peak, std::abs(ref));
        err2 += (dev - ref) * (dev - ref);
        ref2 += ref * ref;
      }
  }
  EXPECT_GT(peak, 0.0);
  EXPECT_LE(std::sqrt(err2 / ref2), fp16 ? 1e-3 : 0.02) << "image " << i;
}

void run_functional(std::int64_t channels, const char* config, fn::NetPrecision precision) {
  constexpr std::size_t kImages = 2;
  const GroupCase c = depthwise(channels);
  const Compiled r = compile(c, config, precision, kImages);
  const fn::NetProgram& p = r.net.program;
  expect_blocks(c, p, precision);
  dla::FunctionalDevice device(r.hw);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);
  fn::load_constants(p, memory);
  firmware::HostMemory reference;
  fn::load_constants(p, reference);
  fn::GroupState groups;
  for (std::size_t i = 0; i < kImages; ++i) {
    const fn::ImageRun run = fn::run_image(p, r.images, i, memory, mmio, groups, reference);
    EXPECT_EQ(run.exact_images, 1U) << "image " << i << ": device vs reference executor";
    expect_depthwise(c, r, i, fn::read_output(p, 0, memory), precision);
  }
  EXPECT_EQ(device.layers().size(), p.layers.size() * kImages);
}

void run_soc(std::int64_t channels, const char* config, fn::NetPrecision precision) {
  const GroupCase c = depthwise(channels);
  const Compiled r = compile(c, config, precision, 1);
  const fn::NetProgram& p = r.net.program;
  expect_blocks(c, p, precision);
  const nettest::SocRun run = nettest::run_on_soc(p, r.hw, r.images, 1);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_EQ(run.layers_run, p.layers.size());
  ASSERT_EQ(run.outputs.size(), 1U);
  expect_depthwise(c, r, 0, run.outputs[0], precision);
}

// The rule between blocks and the dense layer where both fit the CBUF: blocks when they take
// fewer of the MAC array's atomic operations per output pixel and kernel position. nv_full's
// array takes 64 channels of 32 INT8 kernels or 16 FP16 kernels at once: the dense layer of C
// channels and C kernels ceil(C / 64) ceil(C / 32 or 16) operations, the blocks ceil(C / C') of
// one each. 64 channels: 1 x 2 = 2 (INT8) and 1 x 4 = 4 (FP16), the same as their blocks' 2 and
// 4: one dense layer, all of its 64 x 64 MACs per pixel and position. 96 channels: 2 x 3 = 6 and
// 2 x 6 = 12 against 3 and 6 blocks: blocks.
void expect_layers(std::int64_t channels, fn::NetPrecision precision, std::size_t layers) {
  GroupCase c = depthwise(channels);
  c.kernel = 3;
  c.height = c.width = 8;
  const Compiled r = compile(c, "nv_full", precision, 1);
  const fn::NetProgram& p = r.net.program;
  ASSERT_EQ(p.layers.size(), layers) << channels << " channels";
  const auto pixels_taps = static_cast<std::uint64_t>(c.height * c.width * c.kernel * c.kernel);
  const auto C = static_cast<std::uint64_t>(channels);
  if (layers == 1) {
    EXPECT_EQ(p.layers[0].groups, 1U);
    EXPECT_EQ(p.macs(), pixels_taps * C * C);
  } else {
    expect_blocks(c, p, precision);
  }
}
TEST(DepthwiseRule, TiesKeepTheDenseLayer) {
  expect_layers(64, fn::NetPrecision::kInt8, 1);
  expect_layers(64, fn::NetPrecision::kFp16, 1);
  expect_layers(96, fn::NetPrecision::kInt8, 3);
  expect_layers(96, fn::NetPrecision::kFp16, 6);
}

TEST(DepthwiseBlocks, NvFullFp16C640) {
  run_functional(640, "nv_full", fn::NetPrecision::kFp16);
}
TEST(DepthwiseBlocks, NvFullInt8C640) {
  run_functional(640, "nv_full", fn::NetPrecision::kInt8);
}
TEST(DepthwiseBlocks, NvFullFp16C1152) {
  run_functional(1152, "nv_full", fn::NetPrecision::kFp16);
}
TEST(DepthwiseBlocks, NvFullInt8C1152) {
  run_functional(1152, "nv_full", fn::NetPrecision::kInt8);
}
TEST(DepthwiseBlocks, SocLargeFp16C1152) {
  run_functional(1152, "soc_large", fn::NetPrecision::kFp16);
}
TEST(DepthwiseBlocks, SocLargeInt8C640) {
  run_functional(640, "soc_large", fn::NetPrecision::kInt8);
}

// A last block of fewer channels: 112 = 3 x 32 + 16 INT8 channels, 100 = 6 x 16 + 4 FP16.
TEST(DepthwiseBlocks, NvFullInt8C112PartialLastBlock) {
  run_functional(112, "nv_full", fn::NetPrecision::kInt8);
}
TEST(DepthwiseBlocks, NvFullFp16C100PartialLastBlock) {
  run_functional(100, "nv_full", fn::NetPrecision::kFp16);
}

// The cycle-level SoC, each layer's output against the reference executor's (soc_run.hpp).
TEST(DepthwiseBlocksSoc, NvFullFp16C640) {
  run_soc(640, "nv_full", fn::NetPrecision::kFp16);
}
TEST(DepthwiseBlocksSoc, SocLargeInt8C1152) {
  run_soc(1152, "soc_large", fn::NetPrecision::kInt8);
}
TEST(DepthwiseBlocksSoc, SocLargeFp16C640) {
  run_soc(640, "soc_large", fn::NetPrecision::kFp16);
}

}  // namespace
}  // namespace octasim
