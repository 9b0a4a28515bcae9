// firmware/net/weights.hpp: per-output-channel weight quantization of a Conv (ONNX [K, C, R, S]
// into models' (k, r, s, c) order) and of a Gemm's B laid over the input cube in ONNX's
// flattening order (channel, row, column). Scales and codes worked by hand: s_w = max|w_k| / M
// (M = 127 at 8 bits, 7 at 4), codes round-half-away(w / s_w); the MMSE path is checked against
// models::mmse_weight_quantization, the patent's quantizer it promises to use.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/net/weights.hpp"
#include "models/ops/conv_winograd.hpp"
#include "models/quant/qat_init.hpp"
#include "net_test_graph.hpp"

namespace octasim::firmware::net {
namespace {

using nettest::GraphBuilder;

PlannedLayer conv_layer(const std::string& weight, const std::string& bias) {
  PlannedLayer l;
  l.kind = LayerKind::kConv;
  l.conv.weight = weight;
  l.conv.bias = bias;
  return l;
}

// K = 3 kernels of C = 2 channels, 2x2, in ONNX's [K, C, R, S] order.
GraphBuilder conv_weights() {
  GraphBuilder b;
  // Each kernel's values for c = 0 then c = 1, each as (r, s) = (0,0) (0,1) (1,0) (1,1).
  // k = 0: max |w| = 127 -> scale 1.
  std::vector<float> w = {2.5F, -2.5F, 0.4F, 126.6F, -127.0F, 1.0F, 0.0F, -0.6F};
  // k = 1: max |w| = 63.5 -> scale 0.5.
  const std::vector<float> k1 = {0.25F, -0.75F, 63.5F, -63.5F, 10.0F, -10.25F, 0.1F, 5.0F};
  w.insert(w.end(), k1.begin(), k1.end());
  // k = 2: all zero.
  w.insert(w.end(), 8, 0.0F);
  b.constant("W", {3, 2, 2, 2}, w);
  b.constant("B", {3}, {1.5F, -2.0F, 0.0F});
  return b;
}

TEST(QuantizeConvWeights, PerChannelMaxScaleAt8Bits) {
  const GraphBuilder b = conv_weights();
  const QuantizedWeights q = quantize_conv_weights(b.graph(), conv_layer("W", "B"), Cube{3, 3, 2},
                                                   8, WeightQuantizer::kMax);
  const auto& c = q.codes;
  ASSERT_EQ(c.kernels, 3U);
  ASSERT_EQ(c.kernel_height, 2U);
  ASSERT_EQ(c.kernel_width, 2U);
  ASSERT_EQ(c.channels, 2U);
  ASSERT_EQ(q.scales.size(), 3U);
  EXPECT_DOUBLE_EQ(q.scales[0], 1.0);
  EXPECT_DOUBLE_EQ(q.scales[1], 0.5);
  EXPECT_DOUBLE_EQ(q.scales[2], 1.0);  // a channel of zeros: scale 1, zero codes
  // k = 0, at (k, r, s, c).
  EXPECT_EQ(c.at(0, 0, 0, 0), 3);     // 2.5: half away from zero
  EXPECT_EQ(c.at(0, 0, 1, 0), -3);    // -2.5
  EXPECT_EQ(c.at(0, 1, 0, 0), 0);     // 0.4
  EXPECT_EQ(c.at(0, 1, 1, 0), 127);   // 126.6
  EXPECT_EQ(c.at(0, 0, 0, 1), -127);  // -127
  EXPECT_EQ(c.at(0, 0, 1, 1), 1);
  EXPECT_EQ(c.at(0, 1, 0, 1), 0);
  EXPECT_EQ(c.at(0, 1, 1, 1), -1);  // -0.6
  // k = 1: w / 0.5.
  EXPECT_EQ(c.at(1, 0, 0, 0), 1);     // 0.5 -> 1
  EXPECT_EQ(c.at(1, 0, 1, 0), -2);    // -1.5 -> -2
  EXPECT_EQ(c.at(1, 1, 0, 0), 127);   // 63.5
  EXPECT_EQ(c.at(1, 1, 1, 0), -127);  // -63.5
  EXPECT_EQ(c.at(1, 0, 0, 1), 20);
  EXPECT_EQ(c.at(1, 0, 1, 1), -21);  // -20.5 -> -21
  EXPECT_EQ(c.at(1, 1, 0, 1), 0);    // 0.2
  EXPECT_EQ(c.at(1, 1, 1, 1), 10);
  for (std::uint32_t r = 0; r < 2; ++r)
    for (std::uint32_t s = 0; s < 2; ++s)
      for (std::uint32_t ch = 0; ch < 2; ++ch) EXPECT_EQ(c.at(2, r, s, ch), 0);
  ASSERT_EQ(q.bias.size(), 3U);
  EXPECT_DOUBLE_EQ(q.bias[0], 1.5);
  EXPECT_DOUBLE_EQ(q.bias[1], -2.0);
  EXPECT_DOUBLE_EQ(q.bias[2], 0.0);
}

TEST(QuantizeConvWeights, PerChannelMaxScaleAt4Bits) {
  const GraphBuilder b = conv_weights();
  const QuantizedWeights q = quantize_conv_weights(b.graph(), conv_layer("W", ""), Cube{3, 3, 2}, 4,
                                                   WeightQuantizer::kMax);
  EXPECT_DOUBLE_EQ(q.scales[0], 127.0 / 7);
  EXPECT_DOUBLE_EQ(q.scales[1], 63.5 / 7);
  const auto& c = q.codes;
  // k = 0: 126.6 / 18.14 = 6.98 -> 7; 2.5 / 18.14 = 0.14 -> 0; -127 -> -7.
  EXPECT_EQ(c.at(0, 1, 1, 0), 7);
  EXPECT_EQ(c.at(0, 0, 0, 0), 0);
  EXPECT_EQ(c.at(0, 0, 0, 1), -7);
  // k = 1: 63.5 -> 7, -63.5 -> -7, 10 / 9.07 = 1.10 -> 1, -10.25 / 9.07 = -1.13 -> -1,
  // 5 / 9.07 = 0.55 -> 1, -0.75 / 9.07 = -0.08 -> 0.
  EXPECT_EQ(c.at(1, 1, 0, 0), 7);
  EXPECT_EQ(c.at(1, 1, 1, 0), -7);
  EXPECT_EQ(c.at(1, 0, 0, 1), 1);
  EXPECT_EQ(c.at(1, 0, 1, 1), -1);
  EXPECT_EQ(c.at(1, 1, 1, 1), 1);
  EXPECT_EQ(c.at(1, 0, 1, 0), 0);
  // No bias: zeros.
  for (double v : q.bias) EXPECT_EQ(v, 0.0);
}

TEST(QuantizeConvWeights, InputChannelMismatchIsAGraphError) {
  const GraphBuilder b = conv_weights();
  EXPECT_THROW((void)quantize_conv_weights(b.graph(), conv_layer("W", "B"), Cube{3, 3, 3}, 8,
                                           WeightQuantizer::kMax),
               models::graph::GraphError);
}

// The value of B for output n and flattened feature f (F = 12 features, N = 2 outputs): each
// output's largest magnitude is 127, so the max scale is 1 and the codes are the values.
float fc_value(std::size_t n, std::size_t f) {
  if (f == 11) return n == 0 ? 127.0F : -127.0F;
  return n == 0 ? static_cast<float>(f) : -static_cast<float>(f + 20);
}

PlannedLayer fc_layer(bool transpose_b, double alpha, double beta) {
  PlannedLayer l = conv_layer("Bmat", "C");
  l.conv.fully_connected = true;
  l.conv.transpose_b = transpose_b;
  l.conv.alpha = alpha;
  l.conv.beta = beta;
  return l;
}

// The flattened input is a 3 (W) x 2 (H) x 2 (C) cube: ONNX's flatten of [1, C, H, W] puts
// feature f = (c * H + y) * W + x.
void expect_fc_codes(const QuantizedWeights& q) {
  const auto& c = q.codes;
  ASSERT_EQ(c.kernels, 2U);
  ASSERT_EQ(c.kernel_height, 2U);
  ASSERT_EQ(c.kernel_width, 3U);
  ASSERT_EQ(c.channels, 2U);
  // Worked examples: (n, y, x, c) -> f.
  EXPECT_EQ(c.at(0, 1, 2, 0), 5);     // f = (0*2 + 1)*3 + 2 = 5
  EXPECT_EQ(c.at(1, 0, 1, 1), -27);   // f = (1*2 + 0)*3 + 1 = 7: -(7 + 20)
  EXPECT_EQ(c.at(0, 1, 2, 1), 127);   // f = 11
  EXPECT_EQ(c.at(1, 1, 2, 1), -127);  // f = 11
  EXPECT_EQ(c.at(1, 0, 0, 0), -20);   // f = 0
  EXPECT_EQ(c.at(0, 0, 2, 1), 8);     // f = (1*2 + 0)*3 + 2 = 8
  EXPECT_EQ(c.at(0, 1, 0, 0), 3);     // f = (0*2 + 1)*3 + 0 = 3
  for (std::uint32_t n = 0; n < 2; ++n)
    for (std::uint32_t y = 0; y < 2; ++y)
      for (std::uint32_t x = 0; x < 3; ++x)
        for (std::uint32_t ch = 0; ch < 2; ++ch) {
          EXPECT_EQ(c.at(n, y, x, ch), static_cast<std::int32_t>(fc_value(n, (ch * 2 + y) * 3 + x)))
              << "n " << n << " y " << y << " x " << x << " c " << ch;
        }
}

TEST(QuantizeFcWeights, GemmTransB1OverTheInputCube) {
  GraphBuilder b;
  std::vector<float> v(2 * 12);  // [N, F]
  for (std::size_t n = 0; n < 2; ++n)
    for (std::size_t f = 0; f < 12; ++f) v[n * 12 + f] = fc_value(n, f);
  b.constant("Bmat", {2, 12}, v);
  b.constant("C", {2}, {4.0F, -6.0F});
  const QuantizedWeights q = quantize_conv_weights(b.graph(), fc_layer(true, 1.0, 0.5),
                                                   Cube{3, 2, 2}, 8, WeightQuantizer::kMax);
  expect_fc_codes(q);
  EXPECT_DOUBLE_EQ(q.scales[0], 1.0);
  EXPECT_DOUBLE_EQ(q.scales[1], 1.0);
  // beta scales the bias.
  EXPECT_DOUBLE_EQ(q.bias[0], 2.0);
  EXPECT_DOUBLE_EQ(q.bias[1], -3.0);
}

TEST(QuantizeFcWeights, GemmTransB0OverTheInputCube) {
  GraphBuilder b;
  std::vector<float> v(12 * 2);  // [F, N]
  for (std::size_t n = 0; n < 2; ++n)
    for (std::size_t f = 0; f < 12; ++f) v[f * 2 + n] = fc_value(n, f);
  b.constant("Bmat", {12, 2}, v);
  b.constant("C", {2}, {4.0F, -6.0F});
  // alpha 0.5 halves every weight: the codes stay, the scales halve.
  const QuantizedWeights q = quantize_conv_weights(b.graph(), fc_layer(false, 0.5, 1.0),
                                                   Cube{3, 2, 2}, 8, WeightQuantizer::kMax);
  expect_fc_codes(q);
  EXPECT_DOUBLE_EQ(q.scales[0], 0.5);
  EXPECT_DOUBLE_EQ(q.scales[1], 0.5);
  EXPECT_DOUBLE_EQ(q.bias[0], 4.0);
  EXPECT_DOUBLE_EQ(q.bias[1], -6.0);
}

TEST(QuantizeFcWeights, FeatureCountMismatchIsAGraphError) {
  GraphBuilder b;
  b.constant("Bmat", {2, 12}, std::vector<float>(24, 1.0F));
  b.constant("C", {2}, {0.0F, 0.0F});
  EXPECT_THROW((void)quantize_conv_weights(b.graph(), fc_layer(true, 1.0, 1.0), Cube{3, 3, 2}, 8,
                                           WeightQuantizer::kMax),
               models::graph::GraphError);
}

// Laplace-distributed weights (heavy tails, as trained weights have) for K = 4 kernels of
// 16 x 3 x 3, in ONNX's order.
std::vector<float> laplace_weights(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<float> e(20.0F);
  std::bernoulli_distribution sign(0.5);
  std::vector<float> w(n);
  for (float& x : w) x = sign(rng) ? e(rng) : -e(rng);
  return w;
}

TEST(QuantizeConvWeights, MmseAt4BitsIsThePatentsQuantizerPerChannel) {
  constexpr std::uint32_t K = 4, C = 16, R = 3, S = 3;
  GraphBuilder b;
  const std::vector<float> w = laplace_weights(std::size_t{K} * C * R * S, 15);
  b.constant("W", {K, C, R, S}, w);
  const QuantizedWeights mm = quantize_conv_weights(b.graph(), conv_layer("W", ""), Cube{5, 5, C},
                                                    4, WeightQuantizer::kMmse);
  const QuantizedWeights mx = quantize_conv_weights(b.graph(), conv_layer("W", ""), Cube{5, 5, C},
                                                    4, WeightQuantizer::kMax);
  double mse_mmse = 0.0, mse_max = 0.0;
  for (std::uint32_t k = 0; k < K; ++k) {
    // Channel k's weights in (r, s, c) order: what models/ is given.
    std::vector<float> wk;
    for (std::uint32_t r = 0; r < R; ++r)
      for (std::uint32_t s = 0; s < S; ++s)
        for (std::uint32_t c = 0; c < C; ++c) wk.push_back(w[((k * C + c) * R + r) * S + s]);
    const models::MmseWeights ref = models::mmse_weight_quantization(wk.data(), wk.size(), 4);
    EXPECT_DOUBLE_EQ(mm.scales[k], ref.scale) << "kernel " << k;
    std::size_t i = 0;
    for (std::uint32_t r = 0; r < R; ++r)
      for (std::uint32_t s = 0; s < S; ++s)
        for (std::uint32_t c = 0; c < C; ++c, ++i) {
          const std::int32_t code = mm.codes.at(k, r, s, c);
          ASSERT_EQ(code, ref.codes[i]) << "kernel " << k << " (r, s, c) " << r << s << c;
          ASSERT_GE(code, -8);
          ASSERT_LE(code, 7);
          const double e_mm = code * mm.scales[k] - double{wk[i]};
          const double e_mx = mx.codes.at(k, r, s, c) * mx.scales[k] - double{wk[i]};
          mse_mmse += e_mm * e_mm;
          mse_max += e_mx * e_mx;
          ASSERT_GE(mx.codes.at(k, r, s, c), -7);
          ASSERT_LE(mx.codes.at(k, r, s, c), 7);
        }
  }
  // Minimising the error is the point of MMSE: on heavy-tailed weights it must beat max.
  EXPECT_LT(mse_mmse, mse_max);
  RecordProperty("mse_mmse", std::to_string(mse_mmse));
  RecordProperty("mse_max", std::to_string(mse_max));
}

// Winograd weights: each 3x3 slice transformed in float, 4U = (2G) g (2G)^T, then quantized per
// output channel over its 4 x 4 x C values. The reference transform is models/'s exact integer
// one (winograd_transform_weights) on integer weights, scaled by 127 / max|4U_k| and rounded.
TEST(QuantizeConvWeights, WinogradTransformsThenQuantizesPerChannel) {
  GraphBuilder b;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(-60, 60);
  constexpr std::uint32_t kK = 3, kC = 5;
  std::vector<float> w(kK * kC * 9);  // ONNX [K, C, 3, 3]
  for (float& v : w) v = static_cast<float>(value(rng));
  for (std::size_t i = 0; i < kC * 9; ++i) w[2 * kC * 9 + i] = 0.0F;  // kernel 2: zeros
  b.constant("W", {kK, kC, 3, 3}, w);
  PlannedLayer l = conv_layer("W", "");
  l.conv.kernel_w = l.conv.kernel_h = 3;
  const QuantizedWeights q =
      winograd_conv_weights(b.graph(), l, Cube{8, 8, kC}, 8, WeightQuantizer::kMax);
  ASSERT_EQ(q.codes.kernels, kK);
  ASSERT_EQ(q.codes.kernel_height, 4U);
  ASSERT_EQ(q.codes.kernel_width, 4U);
  ASSERT_EQ(q.codes.channels, kC);
  models::ops::ConvWeights g(kK, 3, 3, kC);
  for (std::uint32_t k = 0; k < kK; ++k)
    for (std::uint32_t c = 0; c < kC; ++c)
      for (std::uint32_t r = 0; r < 3; ++r)
        for (std::uint32_t s = 0; s < 3; ++s)
          g.at(k, r, s, c) = static_cast<std::int32_t>(w[((k * kC + c) * 3 + r) * 3 + s]);
  const models::ops::ConvWeights u =
      models::ops::winograd_transform_weights(g, models::ops::ConvPrecision::kInt16);
  for (std::uint32_t k = 0; k < kK; ++k) {
    double m = 0.0;
    for (std::uint32_t y = 0; y < 4; ++y)
      for (std::uint32_t x = 0; x < 4; ++x)
        for (std::uint32_t c = 0; c < kC; ++c) m = std::max(m, std::abs(double(u.at(k, y, x, c))));
    if (m == 0.0) {  // kernel 2: zeros, scale 1
      EXPECT_DOUBLE_EQ(q.scales[k], 1.0);
      for (std::uint32_t i = 0; i < 16 * kC; ++i) EXPECT_EQ(q.codes.data[k * 16 * kC + i], 0);
      continue;
    }
    ASSERT_GT(m, 127.0) << "the integer transform overflows INT8: why the float path exists";
    EXPECT_DOUBLE_EQ(q.scales[k], m / 127.0);
    for (std::uint32_t y = 0; y < 4; ++y)
      for (std::uint32_t x = 0; x < 4; ++x)
        for (std::uint32_t c = 0; c < kC; ++c) {
          const double want = std::round(u.at(k, y, x, c) * 127.0 / m);
          EXPECT_EQ(q.codes.at(k, y, x, c), static_cast<std::int32_t>(want))
              << "k " << k << " y " << y << " x " << x << " c " << c;
        }
  }
}

}  // namespace
}  // namespace octasim::firmware::net
