#include "models/quant/gradients.hpp"

#include <vector>

#include <gtest/gtest.h>

namespace octasim::models {
namespace {

TEST(Gradients, HandValuesAtClipOne) {
  for (const double x : {-3.0, -1.0, 0.0, 0.5, 1.0, 2.0}) EXPECT_EQ(ste_derivative(x, 1.0), 1.0);
  EXPECT_EQ(pwl_derivative(0.5, 1.0), 1.0);
  EXPECT_EQ(pwl_derivative(1.0, 1.0), 1.0);
  EXPECT_EQ(pwl_derivative(-1.0, 1.0), 1.0);
  EXPECT_EQ(pwl_derivative(2.0, 1.0), 0.0);
  EXPECT_EQ(pwl_derivative(-2.0, 1.0), 0.0);
  EXPECT_EQ(mad_derivative(0.5, 1.0), 1.0);
  EXPECT_EQ(mad_derivative(2.0, 1.0), 0.5);  // s/|x|
  EXPECT_EQ(mad_derivative(-4.0, 1.0), 0.25);
  EXPECT_EQ(mad_derivative(1.0, 1.0), 1.0);
}

TEST(Gradients, UnsignedRangeClampsNegativesToZeroGradient) {
  EXPECT_EQ(pwl_derivative(-0.5, 1.0, Signedness::kUnsigned), 0.0);
  EXPECT_EQ(mad_derivative(-0.5, 1.0, Signedness::kUnsigned), 0.0);
  EXPECT_EQ(mad_derivative(3.0, 1.5, Signedness::kUnsigned), 0.5);
  EXPECT_EQ(pwl_derivative(0.0, 1.0, Signedness::kUnsigned), 1.0);
}

TEST(Gradients, HybridUsesMadForWeightsAndPwlForActivations) {
  EXPECT_EQ(mph_estimator(TensorRole::kWeight), GradientEstimator::kMad);
  EXPECT_EQ(mph_estimator(TensorRole::kActivation), GradientEstimator::kPwl);
  const std::vector<float> x = {0.5f, 2.0f, -4.0f};
  const std::vector<float> g = {2.0f, 2.0f, 2.0f};
  std::vector<float> w(3);
  std::vector<float> a(3);
  quantizer_backward(mph_estimator(TensorRole::kWeight), x.data(), g.data(), 3, 1.0,
                     Signedness::kSigned, w.data());
  quantizer_backward(mph_estimator(TensorRole::kActivation), x.data(), g.data(), 3, 1.0,
                     Signedness::kSigned, a.data());
  EXPECT_EQ(w, (std::vector<float>{2.0f, 1.0f, 0.5f}));
  EXPECT_EQ(a, (std::vector<float>{2.0f, 0.0f, 0.0f}));
  std::vector<float> s = g;
  quantizer_backward(GradientEstimator::kSte, x.data(), s.data(), 3, 1.0, Signedness::kSigned,
                     s.data());
  EXPECT_EQ(s, g);
}

}  // namespace
}  // namespace octasim::models
