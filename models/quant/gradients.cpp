#include "models/quant/gradients.hpp"

#include <cmath>

namespace octasim::models {

double ste_derivative(double /*x*/, double /*s*/) {
  return 1.0;
}

double pwl_derivative(double x, double s, Signedness sign) {
  if (sign == Signedness::kUnsigned && x < 0.0) return 0.0;
  return std::fabs(x) <= s ? 1.0 : 0.0;
}

double mad_derivative(double x, double s, Signedness sign) {
  if (sign == Signedness::kUnsigned && x < 0.0) return 0.0;
  const double a = std::fabs(x);
  return a <= s ? 1.0 : s / a;
}

double derivative(GradientEstimator e, double x, double s, Signedness sign) {
  switch (e) {
    case GradientEstimator::kSte:
      return ste_derivative(x, s);
    case GradientEstimator::kPwl:
      return pwl_derivative(x, s, sign);
    case GradientEstimator::kMad:
      return mad_derivative(x, s, sign);
  }
  return 0.0;
}

void quantizer_backward(GradientEstimator e, const float* x, const float* grad_out, std::size_t n,
                        double s, Signedness sign, float* grad_in) {
  for (std::size_t i = 0; i < n; ++i) {
    grad_in[i] =
        static_cast<float>(static_cast<double>(grad_out[i]) * derivative(e, x[i], s, sign));
  }
}

}  // namespace octasim::models
