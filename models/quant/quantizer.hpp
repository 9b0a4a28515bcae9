// Uniform quantizers of the OCTAV patent (eq. 2 max-scaled, eq. 3 clipped), quantization to
// a narrower float format, the empirical MSE (eq. 1) and the analytical MSE J(s) (eq. 4).
//
// Levels follow eq. 2/3 literally. Signed: step = s * 2^(1-B), codes round(x/step) clamped to
// [-2^(B-1), 2^(B-1)], so the levels are the 2^B + 1 multiples of the step in [-s, s].
// Unsigned (post-ReLU data): step = s * 2^-B, codes clamped to [0, 2^B], levels in [0, s].
// These steps are what the additive-noise model of eq. 4 assumes (noise step^2/12 =
// s^2 * 4^-B/3 signed, s^2 * 4^-B/12 unsigned), so OCTAV optimises the quantizer applied here.
// round() is round-half-to-even; x/step is computed as x * (2^(B-1)/s) (2^B/s unsigned).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/numerics/float_format.hpp"

namespace octasim::models {

enum class Signedness : std::uint8_t {
  kSigned,    // range [-s, s]
  kUnsigned,  // range [0, s]; negative inputs quantize to 0
};

inline constexpr int kMinQuantBits = 2;
inline constexpr int kMaxQuantBits = 16;

// Throws std::invalid_argument unless kMinQuantBits <= bits <= kMaxQuantBits.
void check_quant_bits(int bits);

// The constant of the additive noise model: 4^-B/3 (signed) or 4^-B/12 (unsigned).
[[nodiscard]] double noise_constant(int bits, Signedness sign);

// A B-bit clipped uniform quantizer with clipping scalar s (eq. 3). s == 0 maps all to 0.
class UniformQuantizer {
 public:
  UniformQuantizer(double s, int bits, Signedness sign);

  [[nodiscard]] double clip_scalar() const { return s_; }
  [[nodiscard]] double step() const { return step_; }
  [[nodiscard]] std::int32_t min_code() const { return min_code_; }
  [[nodiscard]] std::int32_t max_code() const { return max_code_; }

  // The integer code of x: round(x/step) clamped to [min_code, max_code].
  [[nodiscard]] std::int32_t code(double x) const;
  // Q(x) = step * code(x).
  [[nodiscard]] double quantize(double x) const;
  // Q(x) - x, squared, summed over x (double accumulation, element order).
  [[nodiscard]] double sum_squared_error(const float* x, std::size_t n) const;

 private:
  double s_;
  double step_;
  double inv_step_;
  std::int32_t min_code_;
  std::int32_t max_code_;
};

// s_max of eq. 2: max |x| (signed) or max(max x, 0) (unsigned). Throws on NaN/Inf.
[[nodiscard]] double max_scale(const float* x, std::size_t n, Signedness sign);

// Max-scaled quantization (eq. 2): the clipped quantizer with s = s_max of the data.
void quantize_max_scaled(const float* x, std::size_t n, int bits, Signedness sign, float* out);
// Clipped quantization (eq. 3) of a whole array.
void quantize_clipped(const float* x, std::size_t n, double s, int bits, Signedness sign,
                      float* out);

// Empirical MSE (eq. 1): mean of (Q(x) - x)^2 with the clipped quantizer. 0 for n == 0.
[[nodiscard]] double empirical_mse(const float* x, std::size_t n, double s, int bits,
                                   Signedness sign);

// Quantization to a narrower float format: scale * F(x / scale), F the RNE encoder of
// models/numerics with saturation to the largest finite value (no overflow to inf/NaN).
// With scale = s / max_finite(fmt) this clips at s. scale must be > 0.
[[nodiscard]] double quantize_to_float(double x, FloatFormat fmt, double scale = 1.0);
[[nodiscard]] double empirical_mse_float(const float* x, std::size_t n, FloatFormat fmt,
                                         double scale = 1.0);

// Histogram of the magnitudes the quantizer sees (|x| signed, max(x,0) unsigned) over
// [0, upper] with equal-width bins; counts includes zeros.
struct MagnitudeHistogram {
  double upper = 0.0;
  std::vector<std::uint64_t> counts;
  std::uint64_t total = 0;
  [[nodiscard]] double bin_width() const {
    return counts.empty() ? 0.0 : upper / static_cast<double>(counts.size());
  }
};
// upper = 0 means the data's own maximum magnitude.
[[nodiscard]] MagnitudeHistogram magnitude_histogram(const float* x, std::size_t n,
                                                     std::size_t bins, Signedness sign,
                                                     double upper = 0.0);

// Analytical MSE of eq. 4, J(s) = c s^2 P(|X| <= s) + E[(|X| - s)^2; |X| > s], with the density
// of |X| taken as uniform inside each histogram bin and integrated exactly (c = noise_constant).
// Unsigned data's negative part adds a constant that does not depend on s and is left out.
[[nodiscard]] double analytical_mse(const MagnitudeHistogram& hist, double s, int bits,
                                    Signedness sign);

}  // namespace octasim::models
