#include "models/quant/qat_init.hpp"

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace octasim::models {
namespace {

double sse(const std::vector<float>& w, double a, const std::vector<std::int32_t>& q) {
  double s = 0.0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double d = static_cast<double>(w[i]) - a * q[i];
    s += d * d;
  }
  return s;
}

TEST(MmseWeights, ExactlyRepresentableWeightsAreRecovered) {
  std::vector<float> w;
  for (int q = -8; q <= 7; ++q) w.push_back(static_cast<float>(0.25 * q));
  const MmseWeights m = mmse_weight_quantization(w.data(), w.size(), 4);
  EXPECT_DOUBLE_EQ(m.scale, 0.25);
  EXPECT_EQ(m.mse, 0.0);
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_EQ(m.codes[i], static_cast<int>(i) - 8);
}

TEST(MmseWeights, BeatsMaxScalingAndIsLeastSquaresInTheScale) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> d(0.0f, 0.1f);
  std::vector<float> w(5000);
  for (auto& x : w) x = d(rng);
  for (const int bits : {2, 4, 8}) {
    const MmseWeights m = mmse_weight_quantization(w.data(), w.size(), bits);
    const int lo = -(1 << (bits - 1));
    const int hi = (1 << (bits - 1)) - 1;
    for (const auto q : m.codes) {
      EXPECT_GE(q, lo);
      EXPECT_LE(q, hi);
    }
    EXPECT_NEAR(m.mse, sse(w, m.scale, m.codes) / static_cast<double>(w.size()), 1e-15);
    // Max scaling: a = max|w| / (2^(k-1) - 1) (for k = 2 that is max|w|).
    double wmax = 0.0;
    for (const float x : w) wmax = std::max(wmax, std::fabs(static_cast<double>(x)));
    const double a_max = wmax / hi;
    std::vector<std::int32_t> q_max(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      q_max[i] = static_cast<std::int32_t>(std::min<double>(
          hi, std::max<double>(lo, std::nearbyint(static_cast<double>(w[i]) / a_max))));
    }
    EXPECT_LT(m.mse, sse(w, a_max, q_max) / static_cast<double>(w.size())) << bits;
    // Given its codes, the scale is the least-squares one: <w,q>/<q,q>.
    double wq = 0.0;
    double qq = 0.0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      wq += static_cast<double>(w[i]) * m.codes[i];
      qq += static_cast<double>(m.codes[i]) * m.codes[i];
    }
    EXPECT_NEAR(m.scale, wq / qq, 1e-9 * m.scale) << bits;
    // The WRPN form keeps the product.
    const std::vector<float> adj = m.adjusted_weights(bits);
    for (std::size_t i = 0; i < 10; ++i) {
      EXPECT_NEAR(m.adjusted_scale(bits) * static_cast<double>(adj[i]), m.scale * m.codes[i],
                  1e-12);
    }
  }
}

TEST(ActivationQuantizer, PatentSteps) {
  // m = 0, beta = 1, k = 2: L = 3; 0.3 -> round(0.9)/3 = 1/3.
  EXPECT_DOUBLE_EQ(quantize_activation(0.3, 0.0, 1.0, 2), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(quantize_activation(5.0, 0.0, 1.0, 2), 1.0);     // saturates at beta
  EXPECT_DOUBLE_EQ(quantize_activation(-2.0, -1.0, 1.0, 2), -1.0);  // clips at the offset
  EXPECT_DOUBLE_EQ(quantize_activation(0.0, -1.0, 3.0, 2), 0.0);    // -1 + round(1)*1
}

TEST(ActivationCalibration, OffsetIsTheMeanOfBatchMinimaAndSaturationMinimisesMse) {
  std::mt19937_64 rng(5);
  std::exponential_distribution<float> e(1.0f);
  std::vector<std::vector<float>> batches(4, std::vector<float>(3000));
  for (auto& b : batches) {
    for (auto& x : b) x = e(rng) - 0.5f;
  }
  batches[0][0] = -1.0f;
  batches[1][0] = -0.75f;
  batches[2][0] = -0.5f;
  batches[3][0] = -0.75f;
  const ActivationCalibration c = calibrate_activation(batches, 4, 500);
  EXPECT_DOUBLE_EQ(c.offset, -0.75);
  EXPECT_NEAR(c.total_mse, activation_total_mse(batches, c.offset, c.saturation, 4), 1e-15);
  for (const double beta :
       {1.0, 2.0, 3.0, 4.0, 6.0, 10.0, c.saturation * 0.9, c.saturation * 1.1}) {
    EXPECT_LE(c.total_mse, activation_total_mse(batches, c.offset, beta, 4)) << beta;
  }
  // Exponential data at 4 bits want clipping well below the largest value.
  double top = 0.0;
  for (const auto& b : batches) {
    for (const float x : b) top = std::max(top, static_cast<double>(x));
  }
  EXPECT_LT(c.saturation, 0.8 * (top - c.offset));
}

TEST(ActivationCalibration, RejectsBadInput) {
  EXPECT_THROW((void)calibrate_activation({}, 4), std::invalid_argument);
  EXPECT_THROW((void)calibrate_activation({{1.0f}, {}}, 4), std::invalid_argument);
  EXPECT_THROW((void)calibrate_activation({{1.0f, NAN}}, 4), std::invalid_argument);
}

}  // namespace
}  // namespace octasim::models
