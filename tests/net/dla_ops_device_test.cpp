// Standalone Clip (ReLU6, one bound only, after an SDP layer), LeakyRelu, average pooling that
// excludes padding (count_include_pad=0) and DepthToSpace (Rubik) through the whole compiler onto
// the cycle-level SoC:
//   - every layer's output equals the quantized reference executor's (models/ ops) byte for byte
//     (soc_run.hpp);
//   - every output element is within a bound derived here, from std:: arithmetic on the input,
//     of the exact function:
//       INT8 (the outputs keep the input's codes, step s): Clip s/2 (the clamp is exact on
//       codes, only the input's rounding remains); LeakyRelu s/2 (1 + alpha) plus the fixed-point
//       slope's 127 2^-15 s; average pooling 1.5 s plus 2^-9 s (the input's s/2, and NVDLA's two
//       rounded products by the truncated reciprocals 2^16/n of the window's real columns and
//       rows);
//       FP16: Clip exactly fp16(clip(x16)), FP16 rounding being monotone; LeakyRelu
//       |x16| |alpha - fp16(alpha)| plus half an FP16 step of the result; average pooling
//       2^-9 max(|y|, 2^-4) (the FP16 1/n, PDP's FP17 sums, one rounding).
//     A divisor that counts the padding, a bound on the wrong side or a slope on positive values
//     is off by far more.
// SystemC elaborates once per process: one configuration and precision per TEST.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/net/compiler.hpp"
#include "models/numerics/float_format.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"
#include "soc_run.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;
using nettest::float_attr;
using nettest::GraphBuilder;
using nettest::int_attr;
using nettest::ints_attr;

constexpr std::size_t kImages = 2;
constexpr std::int64_t kChannels = 8, kSize = 7;
constexpr float kAlpha = 0.1F;

double fp16(double v) {
  return double{models::fp16_to_float(models::fp16_from_float(static_cast<float>(v)))};
}

// x is 1 x 8 x 7 x 7, uniform in [-2, 2).
models::graph::Graph ops_graph() {
  GraphBuilder b;
  b.input("x", {1, kChannels, kSize, kSize});
  b.constant("lo", {}, {-0.5F});
  b.constant("hi", {}, {0.75F});
  b.constant("zero", {}, {0.0F});
  b.constant("six", {}, {1.5F});  // ReLU6's form with a cap inside the input's range
  b.node("Clip", "clip", {"x", "lo", "hi"}, {"y_clip"});
  b.node("Clip", "relu6", {"x", "zero", "six"}, {"y_relu6"});
  b.node("Clip", "clip_min", {"x", "lo"}, {"y_min"});
  b.node("Clip", "clip_max", {"x", "", "hi"}, {"y_max"});
  b.node("LeakyRelu", "leaky", {"x"}, {"y_leaky"}).attributes["alpha"] = float_attr(kAlpha);
  // A Clip after an SDP layer (a per-channel Mul): a layer of its own.
  std::vector<float> m(kChannels);
  for (std::size_t c = 0; c < m.size(); ++c) m[c] = 0.5F + 0.25F * static_cast<float>(c % 3);
  b.constant("m", {kChannels, 1, 1}, m);
  b.node("Mul", "scale", {"x", "m"}, {"xm"});
  b.node("Clip", "clip_after_sdp", {"xm", "zero", "hi"}, {"y_mclip"});
  auto& p3 = b.node("AveragePool", "avg3", {"x"}, {"y_avg3"});
  p3.attributes["kernel_shape"] = ints_attr({3, 3});
  p3.attributes["pads"] = ints_attr({1, 1, 1, 1});
  p3.attributes["count_include_pad"] = int_attr(0);
  auto& p2 = b.node("AveragePool", "avg2", {"x"}, {"y_avg2"});
  p2.attributes["kernel_shape"] = ints_attr({2, 3});
  p2.attributes["strides"] = ints_attr({2, 2});
  p2.attributes["pads"] = ints_attr({1, 0, 0, 1});
  p2.attributes["ceil_mode"] = int_attr(1);
  for (const char* y :
       {"y_clip", "y_relu6", "y_min", "y_max", "y_leaky", "y_mclip", "y_avg3", "y_avg2"}) {
    b.output(y);
  }
  return b.graph();
}

// The exact outputs of one image, in ONNX's C order (computed here, not by models/).
struct Pool {
  int kh, kw, sy, sx, top, left, oh, ow;
};
std::vector<double> average(const float* x, const Pool& p, bool fp16_input) {
  std::vector<double> y;
  for (int c = 0; c < kChannels; ++c) {
    for (int oy = 0; oy < p.oh; ++oy) {
      for (int ox = 0; ox < p.ow; ++ox) {
        double sum = 0.0;
        int n = 0;
        for (int i = 0; i < p.kh; ++i) {
          for (int j = 0; j < p.kw; ++j) {
            const int yy = oy * p.sy - p.top + i, xx = ox * p.sx - p.left + j;
            if (yy < 0 || yy >= kSize || xx < 0 || xx >= kSize) continue;
            const double v = x[(c * kSize + yy) * kSize + xx];
            sum += fp16_input ? fp16(v) : v;
            ++n;
          }
        }
        y.push_back(sum / n);
      }
    }
  }
  return y;
}

void check_ops(const char* config, fn::NetPrecision precision) {
  const HwConfig hw = load_hw_config(config);
  fn::CompiledNetwork net = fn::prepare_network(ops_graph(), hw);
  Tensor images = fn::random_images(net.plan, kImages, 5);
  for (float& v : images.f) v = 4 * v - 2;
  fn::QuantOptions options;
  options.precision = precision;
  fn::quantize_network(net, hw, images, options);
  const fn::NetProgram& prog = net.program;
  const bool fp16_run = precision == fn::NetPrecision::kFp16;
  // Five Clip/LeakyRelu layers and the Mul and its Clip: one SDP layer each. avg3 (3x3, pads 1)
  // at INT8: 3 row bands (top, interior, bottom) x 3 column bands; avg2 (2x3, stride 2,
  // top pad 1, right pad 1 + ceil_mode's extra column): 2 row bands (top, interior) x 2 column
  // bands (interior, right). FP16: PDP's sum and SDP's 1/n, two layers each.
  std::size_t sdp = 0, pdp = 0;
  for (const fn::NetLayer& l : prog.layers) {
    sdp += l.engine == "SDP" ? 1 : 0;
    pdp += l.engine == "PDP" ? 1 : 0;
  }
  EXPECT_EQ(sdp, fp16_run ? 9U : 7U);
  EXPECT_EQ(pdp, fp16_run ? 2U : 9U + 4U);

  const nettest::SocRun run = nettest::run_on_soc(prog, hw, images, kImages);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_EQ(run.layers_run, nettest::device_record_count(prog) * kImages);

  const double s = fp16_run ? 0.0 : prog.table.at("x").step();
  for (const char* y : {"y_clip", "y_relu6", "y_min", "y_max", "y_leaky", "y_avg3", "y_avg2"}) {
    if (!fp16_run) {
      EXPECT_EQ(prog.table.at(y).step(), s) << y << " keeps x's codes";
    }
  }
  const auto clip = [](double v, double lo, double hi) { return std::min(std::max(v, lo), hi); };
  const double lo16 = fp16(-0.5), hi16 = fp16(0.75), alpha16 = fp16(double{kAlpha});
  const double alpha = kAlpha;
  const Pool avg3{3, 3, 1, 1, 1, 1, 7, 7}, avg2{2, 3, 2, 2, 1, 0, 4, 4};
  const std::size_t n = kChannels * kSize * kSize;
  std::size_t k = 0;
  for (const fn::NetTensor& out : prog.outputs) {
    double worst_ratio = 0.0;
    for (std::size_t i = 0; i < kImages; ++i) {
      const Tensor& d = run.every_output.at(i).at(k);
      const float* x = &images.f[i * n];
      std::vector<double> want, bound;
      const auto add = [&](double w, double b) {
        want.push_back(w);
        bound.push_back(b);
      };
      for (std::size_t e = 0; e < n && out.name.rfind("y_avg", 0) != 0; ++e) {
        const double v = fp16_run ? fp16(x[e]) : double{x[e]};
        const std::size_t c = e / (kSize * kSize);
        const double mv = fp16_run ? fp16(v * (0.5 + 0.25 * (c % 3))) : v * (0.5 + 0.25 * (c % 3));
        if (out.name == "y_clip") add(clip(v, -0.5, 0.75), s / 2);
        if (out.name == "y_relu6") add(clip(v, 0.0, 1.5), s / 2);
        if (out.name == "y_min") add(std::max(v, -0.5), s / 2);
        if (out.name == "y_max") add(std::min(v, 0.75), s / 2);
        // xm: x's rounding times m <= 1, then xm's own (and the affine map's fixed point).
        if (out.name == "y_mclip") {
          add(clip(mv, 0.0, 0.75), fp16_run ? 0.0 : s / 2 + 0.55 * prog.table.at("xm").step());
        }
        if (out.name == "y_leaky") {
          add(v < 0 ? alpha * v : v, fp16_run ? std::abs(v) * std::abs(alpha - alpha16) +
                                                    std::abs(v) * alpha * 0x1p-11 + 0x1p-24
                                              : s / 2 * (1 + alpha) + 127 * 0x1p-15 * s);
        }
      }
      if (out.name == "y_avg3" || out.name == "y_avg2") {
        for (const double w : average(x, out.name == "y_avg3" ? avg3 : avg2, fp16_run)) {
          add(w, fp16_run ? 0x1p-9 * std::max(std::abs(w), 0x1p-4) : 1.5 * s + 0x1p-9 * s);
        }
      }
      ASSERT_EQ(d.f.size(), want.size()) << out.name;
      for (std::size_t e = 0; e < want.size(); ++e) {
        // FP16 Clip: exactly the FP16 of the clipped FP16 input.
        const bool exact = fp16_run && out.name != "y_leaky" && out.name.rfind("y_avg", 0) != 0;
        if (exact && out.name != "y_mclip") {
          const double w = out.name == "y_clip"    ? clip(fp16(x[e]), lo16, hi16)
                           : out.name == "y_relu6" ? clip(fp16(x[e]), 0.0, 1.5)
                           : out.name == "y_min"   ? std::max(fp16(x[e]), lo16)
                                                   : std::min(fp16(x[e]), hi16);
          EXPECT_EQ(double{d.f[e]}, w) << out.name << " image " << i << " element " << e;
          continue;
        }
        const double err = std::abs(double{d.f[e]} - want[e]);
        const double b = exact ? 0x1p-11 * std::abs(want[e]) + 0x1p-24 : bound[e] + 1e-12;
        worst_ratio = std::max(worst_ratio, err / b);
        EXPECT_LE(err, b) << out.name << " image " << i << " element " << e << ": device " << d.f[e]
                          << ", exact " << want[e];
      }
    }
    // Quantized, the bounds are not vacuous: the errors reach a good part of them somewhere.
    if (!fp16_run) {
      EXPECT_GT(worst_ratio, 0.3) << out.name;
    }
    ++k;
  }
}

// DepthToSpace (DCR, blocksize 2) of a 1 x 4C' x 5 x 6 input, C' the atom's channels: one Rubik
// contract layer; the output is the input moved, ONNX's DCR index map computed here: INT8 the
// input's codes (within s/2 of x), FP16 exactly fp16(x).
void check_depth_to_space(const char* config, fn::NetPrecision precision) {
  const HwConfig hw = load_hw_config(config);
  const bool fp16_run = precision == fn::NetPrecision::kFp16;
  const std::int64_t c = hw.dla.memory_atomic_size / (fp16_run ? 2 : 1), h = 5, w = 6, b = 2;
  GraphBuilder g;
  g.input("x", {1, b * b * c, h, w});
  g.node("DepthToSpace", "d2s", {"x"}, {"y"}).attributes["blocksize"] = int_attr(b);
  g.output("y");
  fn::CompiledNetwork net = fn::prepare_network(g.graph(), hw);
  Tensor images = fn::random_images(net.plan, kImages, 9);
  for (float& v : images.f) v = 4 * v - 2;
  fn::QuantOptions options;
  options.precision = precision;
  fn::quantize_network(net, hw, images, options);
  const fn::NetProgram& prog = net.program;
  ASSERT_EQ(prog.layers.size(), 1U);
  const auto* r = std::get_if<firmware::RubikContract>(&prog.layers[0].hw);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->x_stride, 2U);
  EXPECT_EQ(r->y_stride, 2U);
  const nettest::SocRun run = nettest::run_on_soc(prog, hw, images, kImages);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_EQ(run.layers_run, kImages);
  const double s = fp16_run ? 0.0 : prog.table.at("x").step();
  const std::size_t n = static_cast<std::size_t>(b * b * c * h * w);
  double worst = 0.0;
  for (std::size_t i = 0; i < kImages; ++i) {
    const Tensor& d = run.every_output.at(i).at(0);
    ASSERT_EQ(d.f.size(), n);
    std::size_t k = 0;
    for (std::int64_t oc = 0; oc < c; ++oc) {
      for (std::int64_t oy = 0; oy < h * b; ++oy) {
        for (std::int64_t ox = 0; ox < w * b; ++ox, ++k) {
          const std::int64_t ic = ((oy % b) * b + ox % b) * c + oc;
          const double x =
              images.f[i * n + static_cast<std::size_t>((ic * h + oy / b) * w + ox / b)];
          const double err = std::abs(double{d.f[k]} - (fp16_run ? fp16(x) : x));
          worst = std::max(worst, err);
          EXPECT_LE(err, s / 2 + 1e-12)
              << "image " << i << " output (" << oc << ", " << oy << ", " << ox << ")";
        }
      }
    }
  }
  if (!fp16_run) {
    EXPECT_GT(worst, 0.3 * s / 2);
  }
}

TEST(DlaOpsOnSoc, DepthToSpaceInt8NvFull) {
  check_depth_to_space("nv_full", fn::NetPrecision::kInt8);
}
TEST(DlaOpsOnSoc, DepthToSpaceInt8SocLarge) {
  check_depth_to_space("soc_large", fn::NetPrecision::kInt8);
}
TEST(DlaOpsOnSoc, DepthToSpaceFp16NvFull) {
  check_depth_to_space("nv_full", fn::NetPrecision::kFp16);
}
TEST(DlaOpsOnSoc, DepthToSpaceFp16SocLarge) {
  check_depth_to_space("soc_large", fn::NetPrecision::kFp16);
}

TEST(DlaOpsOnSoc, Int8NvFull) {
  check_ops("nv_full", fn::NetPrecision::kInt8);
}
TEST(DlaOpsOnSoc, Int8SocLarge) {
  check_ops("soc_large", fn::NetPrecision::kInt8);
}
TEST(DlaOpsOnSoc, Fp16NvFull) {
  check_ops("nv_full", fn::NetPrecision::kFp16);
}
TEST(DlaOpsOnSoc, Fp16SocLarge) {
  check_ops("soc_large", fn::NetPrecision::kFp16);
}

}  // namespace
}  // namespace octasim
