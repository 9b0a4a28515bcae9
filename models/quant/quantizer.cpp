#include "models/quant/quantizer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace octasim::models {
namespace {

// Round half to even for |v| < 2^51: adding and subtracting 1.5 * 2^52 leaves an integer
// rounded in the current (default, to-nearest-even) mode, and it vectorises.
inline double round_half_even_small(double v) {
  constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
  return (v + kMagic) - kMagic;
}

void check_finite(const float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      throw std::invalid_argument("element " + std::to_string(i) + " is " +
                                  (std::isnan(x[i]) ? "NaN" : "infinite") +
                                  "; quantizers need finite values");
    }
  }
}

}  // namespace

void check_quant_bits(int bits) {
  if (bits < kMinQuantBits || bits > kMaxQuantBits) {
    throw std::invalid_argument("bits must be in [" + std::to_string(kMinQuantBits) + ", " +
                                std::to_string(kMaxQuantBits) + "], got " + std::to_string(bits));
  }
}

double noise_constant(int bits, Signedness sign) {
  check_quant_bits(bits);
  return std::ldexp(1.0, -2 * bits) / (sign == Signedness::kSigned ? 3.0 : 12.0);
}

UniformQuantizer::UniformQuantizer(double s, int bits, Signedness sign) : s_(s) {
  check_quant_bits(bits);
  if (!(s >= 0.0) || !std::isfinite(s)) {
    throw std::invalid_argument("clipping scalar must be finite and >= 0, got " +
                                std::to_string(s));
  }
  const int frac_bits = sign == Signedness::kSigned ? bits - 1 : bits;
  step_ = std::ldexp(s, -frac_bits);
  inv_step_ = s > 0.0 ? std::ldexp(1.0 / s, frac_bits) : 0.0;
  max_code_ = std::int32_t{1} << frac_bits;
  min_code_ = sign == Signedness::kSigned ? -max_code_ : 0;
}

std::int32_t UniformQuantizer::code(double x) const {
  const double v =
      std::clamp(x * inv_step_, static_cast<double>(min_code_), static_cast<double>(max_code_));
  return static_cast<std::int32_t>(round_half_even_small(v));
}

double UniformQuantizer::quantize(double x) const {
  return step_ * code(x);
}

double UniformQuantizer::sum_squared_error(const float* x, std::size_t n) const {
  const double lo = min_code_;
  const double hi = max_code_;
  // Four partial sums (element i goes to sum i % 4), added pairwise at the end: a fixed order
  // that lets the loop vectorise.
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) {
      const double xv = x[i + j];
      const double v = std::min(std::max(xv * inv_step_, lo), hi);
      const double err = step_ * round_half_even_small(v) - xv;
      acc[j] += err * err;
    }
  }
  for (int j = 0; i < n; ++i, ++j) {
    const double xv = x[i];
    const double v = std::min(std::max(xv * inv_step_, lo), hi);
    const double err = step_ * round_half_even_small(v) - xv;
    acc[j] += err * err;
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

double max_scale(const float* x, std::size_t n, Signedness sign) {
  check_finite(x, n);
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    m = std::max(m, sign == Signedness::kSigned ? std::fabs(x[i]) : x[i]);
  }
  return m;
}

void quantize_clipped(const float* x, std::size_t n, double s, int bits, Signedness sign,
                      float* out) {
  const UniformQuantizer q(s, bits, sign);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(q.quantize(x[i]));
}

void quantize_max_scaled(const float* x, std::size_t n, int bits, Signedness sign, float* out) {
  quantize_clipped(x, n, max_scale(x, n, sign), bits, sign, out);
}

double empirical_mse(const float* x, std::size_t n, double s, int bits, Signedness sign) {
  if (n == 0) return 0.0;
  return UniformQuantizer(s, bits, sign).sum_squared_error(x, n) / static_cast<double>(n);
}

double quantize_to_float(double x, FloatFormat fmt, double scale) {
  if (!(scale > 0.0) || !std::isfinite(scale)) {
    throw std::invalid_argument("float quantization scale must be finite and > 0");
  }
  return scale * decode_float(encode_float(x / scale, fmt, Overflow::kSaturate), fmt);
}

double empirical_mse_float(const float* x, std::size_t n, FloatFormat fmt, double scale) {
  if (n == 0) return 0.0;
  double acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double xv = x[i];
    const double err = quantize_to_float(xv, fmt, scale) - xv;
    acc += err * err;
  }
  return acc / static_cast<double>(n);
}

MagnitudeHistogram magnitude_histogram(const float* x, std::size_t n, std::size_t bins,
                                       Signedness sign, double upper) {
  if (bins == 0) throw std::invalid_argument("histogram needs at least one bin");
  MagnitudeHistogram h;
  h.upper = upper > 0.0 ? upper : max_scale(x, n, sign);
  h.counts.assign(bins, 0);
  h.total = n;
  if (upper > 0.0) check_finite(x, n);
  const double scale = h.upper > 0.0 ? static_cast<double>(bins) / h.upper : 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double m =
        static_cast<double>(sign == Signedness::kSigned ? std::fabs(x[i]) : std::max(0.0f, x[i]));
    const auto b = static_cast<std::size_t>(std::min(m * scale, static_cast<double>(bins - 1)));
    ++h.counts[b];
  }
  return h;
}

double analytical_mse(const MagnitudeHistogram& hist, double s, int bits, Signedness sign) {
  const double c = noise_constant(bits, sign);
  if (hist.total == 0 || hist.counts.empty()) return 0.0;
  const double w = hist.bin_width();
  double j = 0.0;
  for (std::size_t b = 0; b < hist.counts.size(); ++b) {
    if (hist.counts[b] == 0) continue;
    const double p = static_cast<double>(hist.counts[b]) / static_cast<double>(hist.total);
    const double a = w * static_cast<double>(b);
    const double e = a + w;
    if (w == 0.0) {  // all mass at 0: never clipped, noise c s^2
      j += c * s * s * p;
      continue;
    }
    const double density = p / w;
    // Inside [a, min(e, s)]: discretization noise c s^2 per unit of probability.
    if (s > a) j += c * s * s * density * (std::min(e, s) - a);
    // Inside [max(a, s), e]: clipping error (x - s)^2, integrated exactly.
    if (e > s) {
      const double from = std::max(a, s) - s;
      const double to = e - s;
      j += density * (to * to * to - from * from * from) / 3.0;
    }
  }
  return j;
}

}  // namespace octasim::models
