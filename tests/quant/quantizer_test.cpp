#include "models/quant/quantizer.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "models/numerics/float_format.hpp"
#include "tests/quant/reference.hpp"

namespace octasim::models {
namespace {

TEST(UniformQuantizer, SignedLevelsOfEquationThree) {
  // B = 2, s = 1: step 2^(1-B) s = 0.5, levels -1, -0.5, 0, 0.5, 1.
  const UniformQuantizer q(1.0, 2, Signedness::kSigned);
  EXPECT_EQ(q.step(), 0.5);
  EXPECT_EQ(q.min_code(), -2);
  EXPECT_EQ(q.max_code(), 2);
  EXPECT_EQ(q.quantize(0.3), 0.5);
  EXPECT_EQ(q.quantize(0.2), 0.0);
  EXPECT_EQ(q.quantize(0.25), 0.0);  // tie (code 0.5) to even: 0
  EXPECT_EQ(q.quantize(0.75), 1.0);  // tie (code 1.5) to even: 2
  EXPECT_EQ(q.quantize(-0.75), -1.0);
  EXPECT_EQ(q.quantize(7.0), 1.0);    // clipped to s
  EXPECT_EQ(q.quantize(-7.0), -1.0);  // clipped to -s
  EXPECT_EQ(q.code(-0.3), -1);
}

TEST(UniformQuantizer, UnsignedRange) {
  // B = 2, s = 1, unsigned: step 2^-B s = 0.25, levels 0 .. 1.
  const UniformQuantizer q(1.0, 2, Signedness::kUnsigned);
  EXPECT_EQ(q.step(), 0.25);
  EXPECT_EQ(q.quantize(-0.3), 0.0);
  EXPECT_EQ(q.quantize(0.3), 0.25);
  EXPECT_EQ(q.quantize(0.9), 1.0);
  EXPECT_EQ(q.quantize(2.0), 1.0);
  EXPECT_EQ(q.max_code(), 4);
}

TEST(UniformQuantizer, SixteenBitsAndZeroScale) {
  const UniformQuantizer q(1.0, 16, Signedness::kSigned);
  EXPECT_EQ(q.step(), std::ldexp(1.0, -15));
  EXPECT_EQ(q.quantize(0.123456789), std::nearbyint(0.123456789 * 32768.0) / 32768.0);
  const UniformQuantizer zero(0.0, 4, Signedness::kSigned);
  EXPECT_EQ(zero.quantize(3.0), 0.0);
  EXPECT_THROW(UniformQuantizer(1.0, 1, Signedness::kSigned), std::invalid_argument);
  EXPECT_THROW(UniformQuantizer(1.0, 17, Signedness::kSigned), std::invalid_argument);
  EXPECT_THROW(UniformQuantizer(-1.0, 4, Signedness::kSigned), std::invalid_argument);
}

TEST(MaxScaled, EquationTwo) {
  // s_max = 4, B = 3: step 1; Q(x) = round(x).
  const std::vector<float> x = {-4.0f, 2.6f, 0.4f, 1.5f, 2.5f, -1.2f};
  std::vector<float> out(x.size());
  quantize_max_scaled(x.data(), x.size(), 3, Signedness::kSigned, out.data());
  EXPECT_EQ(out, (std::vector<float>{-4.0f, 3.0f, 0.0f, 2.0f, 2.0f, -1.0f}));
  EXPECT_EQ(max_scale(x.data(), x.size(), Signedness::kSigned), 4.0);
  EXPECT_EQ(max_scale(x.data(), x.size(), Signedness::kUnsigned), 2.6f);
}

TEST(EmpiricalMse, HandComputed) {
  // s = 1, B = 2 (step 0.5): 0.3 -> 0.5 (err .2), 2 -> 1 (err 1), -0.1 -> 0 (err .1), 0 -> 0.
  const std::vector<float> x = {0.3f, 2.0f, -0.1f, 0.0f};
  double want = 0.0;
  for (const double e : {0.5 - static_cast<double>(0.3f), 1.0, static_cast<double>(0.1f), 0.0}) {
    want += e * e;
  }
  EXPECT_NEAR(empirical_mse(x.data(), x.size(), 1.0, 2, Signedness::kSigned), want / 4.0, 1e-15);
  EXPECT_EQ(empirical_mse(x.data(), 0, 1.0, 2, Signedness::kSigned), 0.0);
  // Odd lengths use the tail path: 5 copies of 2.0 at s = 1 -> error 1 each.
  const std::vector<float> twos(5, 2.0f);
  EXPECT_EQ(empirical_mse(twos.data(), twos.size(), 1.0, 4, Signedness::kSigned), 1.0);
}

TEST(EmpiricalMse, MaxScalingMatchesTheAdditiveNoiseModel) {
  // Uniform data on [-1, 1] at B = 8: J = s_max^2 4^-B / 3 (the patent's formula).
  const std::size_t n = 200000;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(-1.0 + 2.0 * (i + 0.5) / n);
  const double mse = empirical_mse(x.data(), n, 1.0, 8, Signedness::kSigned);
  EXPECT_NEAR(mse, std::pow(4.0, -8) / 3.0, 0.01 * std::pow(4.0, -8) / 3.0);
}

TEST(FloatQuantization, SaturatesToTheFormatsLargestFinite) {
  EXPECT_EQ(quantize_to_float(500.0, kFp8E4M3), 448.0);
  EXPECT_EQ(quantize_to_float(-1e6, kFp8E4M3), -448.0);
  EXPECT_EQ(quantize_to_float(1e6, kFp8E5M2), 57344.0);
  EXPECT_EQ(quantize_to_float(1e6, kFp16), 65504.0);
  EXPECT_EQ(quantize_to_float(1.0 + 0x1p-9, kBf16), 1.0);  // below half an ulp (2^-8)
  EXPECT_EQ(quantize_to_float(0.3, kFp16), static_cast<double>(fp16_to_float(0x34cd)));
  // E4M3 values around 1: step 1/8; 1.0625 ties to even (1.0), 1.1875 ties to 1.25.
  EXPECT_EQ(quantize_to_float(1.0625, kFp8E4M3), 1.0);
  EXPECT_EQ(quantize_to_float(1.1875, kFp8E4M3), 1.25);
  // Clipping at s = 2 through the scale s / 448.
  const double scale = 2.0 / 448.0;
  EXPECT_DOUBLE_EQ(quantize_to_float(5.0, kFp8E4M3, scale), 2.0);
  EXPECT_THROW((void)quantize_to_float(1.0, kFp16, 0.0), std::invalid_argument);
  const std::vector<float> x = {1.0f, 500.0f};
  EXPECT_DOUBLE_EQ(empirical_mse_float(x.data(), 2, kFp8E4M3), 52.0 * 52.0 / 2.0);
}

TEST(AnalyticalMse, UniformDensityClosedForm) {
  // |X| uniform on [0, 1]: J(s) = c s^2 * s + (1 - s)^3 / 3 (eq. 4 integrated by hand).
  const std::size_t n = 100000;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>((i + 0.5) / n);
  const MagnitudeHistogram h = magnitude_histogram(x.data(), n, 1000, Signedness::kSigned, 1.0);
  for (const int bits : {2, 4}) {
    const double c = testref::c_of(bits, true);
    for (const double s : {0.1, 0.5, 0.8333, 1.0, 1.5}) {
      const double within = std::min(s, 1.0);
      const double want = c * s * s * within + (s < 1.0 ? std::pow(1.0 - s, 3) / 3.0 : 0.0);
      EXPECT_NEAR(analytical_mse(h, s, bits, Signedness::kSigned), want, 1e-9) << s;
    }
  }
}

TEST(AnalyticalMse, CloseToEmpiricalOnGaussianData) {
  const std::vector<float> x = testref::normal_quantile_data(100000);
  const MagnitudeHistogram h = magnitude_histogram(x.data(), x.size(), 4096, Signedness::kSigned);
  for (const int bits : {4, 6, 8}) {
    for (const double s : {1.5, 2.5, 3.5}) {
      const double emp = empirical_mse(x.data(), x.size(), s, bits, Signedness::kSigned);
      const double ana = analytical_mse(h, s, bits, Signedness::kSigned);
      EXPECT_NEAR(ana, emp, 0.05 * emp) << "B=" << bits << " s=" << s;
    }
  }
}

}  // namespace
}  // namespace octasim::models
