// Post-training calibration that initialises quantization-aware training (the
// quantized-NN-initialization patent): MMSE weight quantization, and the activation offset and
// saturation factor of a WRPN-style unsigned activation quantizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace octasim::models {

// k-bit MMSE weight quantization: integer codes q in [-2^(k-1), 2^(k-1) - 1] and a scale a > 0
// minimising mean (w - a q)^2. Search: a grid of `candidates` scales a_j = j/J * max|w| /
// 2^(k-1), then alternating minimisation from the best (q = clamp(round(w/a)), then
// a = <w,q>/<q,q>) until the codes stop changing; each step cannot raise the MSE.
struct MmseWeights {
  double scale = 0.0;
  std::vector<std::int32_t> codes;
  double mse = 0.0;
  // WRPN form (patent): weights q / 2^(k-1) with scale a * 2^(k-1), same product.
  [[nodiscard]] double adjusted_scale(int bits) const;
  [[nodiscard]] std::vector<float> adjusted_weights(int bits) const;
};
[[nodiscard]] MmseWeights mmse_weight_quantization(const float* w, std::size_t n, int bits,
                                                   std::size_t candidates = 1000);

// The unsigned activation quantizer of the patent (steps 901-907):
// Q(x) = m + round(clip(x - m, 0, beta) * L / beta) * beta / L with L = 2^k - 1.
[[nodiscard]] double quantize_activation(double x, double offset, double saturation, int bits);

struct ActivationCalibration {
  double offset = 0.0;      // m: mean over calibration batches of each batch's minimum
  double saturation = 0.0;  // beta: minimises the total MSE over the batches at that offset
  double total_mse = 0.0;   // sum over batches of each batch's mean squared error
};
// beta search: `candidates` values beta_j = j/J * max over batches of (max x - m), then a
// second grid of `candidates` values across the two neighbouring cells of the best.
// Throws on no batches, an empty batch, or NaN/Inf.
[[nodiscard]] ActivationCalibration calibrate_activation(
    const std::vector<std::vector<float>>& batches, int bits, std::size_t candidates = 1000);

// Total MSE of the activation quantizer over the batches (the objective above).
[[nodiscard]] double activation_total_mse(const std::vector<std::vector<float>>& batches,
                                          double offset, double saturation, int bits);

}  // namespace octasim::models
