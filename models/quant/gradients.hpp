// Gradient estimators for the clipped quantizer (OCTAV patent, eq. 7-10), as a training loop
// calls them: the derivative dQ/dx each estimator assigns at x for clipping scalar s, and a
// backward pass that multiplies an upstream gradient by it.
//
// - STE: 1 everywhere (clipping ignored; the patent shows its gradient variance explodes).
// - PWL: 1 inside the range, 0 where x is clipped.
// - MAD (magnitude-aware derivative, eq. 10): 1 inside, s/|x| where x is clipped, from writing
//   clip(x) = alpha * x (eq. 9) and treating alpha as a constant.
// - MPH hybrid: MAD for weights, PWL for activations.
// Signed range is [-s, s]; unsigned is [0, s], where negative x clamps to 0 = 0 * x, so PWL and
// MAD give 0 there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "models/quant/quantizer.hpp"

namespace octasim::models {

enum class GradientEstimator : std::uint8_t { kSte, kPwl, kMad };
enum class TensorRole : std::uint8_t { kWeight, kActivation };

[[nodiscard]] double ste_derivative(double x, double s);
[[nodiscard]] double pwl_derivative(double x, double s, Signedness sign = Signedness::kSigned);
[[nodiscard]] double mad_derivative(double x, double s, Signedness sign = Signedness::kSigned);
[[nodiscard]] double derivative(GradientEstimator e, double x, double s,
                                Signedness sign = Signedness::kSigned);

// The MAD-weights / PWL-activations hybrid's choice for a tensor.
[[nodiscard]] constexpr GradientEstimator mph_estimator(TensorRole role) {
  return role == TensorRole::kWeight ? GradientEstimator::kMad : GradientEstimator::kPwl;
}

// grad_in[i] = grad_out[i] * dQ/dx(x[i]) under estimator e. grad_in may alias grad_out.
void quantizer_backward(GradientEstimator e, const float* x, const float* grad_out, std::size_t n,
                        double s, Signedness sign, float* grad_in);

}  // namespace octasim::models
