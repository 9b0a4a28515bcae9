#include "models/quant/qat_init.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/quant/quantizer.hpp"

namespace octasim::models {
namespace {

void check_finite(const float* x, std::size_t n, const char* what) {
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      throw std::invalid_argument(std::string(what) + " element " + std::to_string(i) +
                                  " is not finite");
    }
  }
}

// The code range [-2^(k-1), 2^(k-1) - 1], held as doubles for clamping.
struct Codes {
  double lo;
  double hi;
};

Codes weight_codes(int bits) {
  check_quant_bits(bits);
  const double half = std::ldexp(1.0, bits - 1);
  return {-half, half - 1.0};
}

std::int32_t weight_code(double w, double a, Codes c) {
  return static_cast<std::int32_t>(std::clamp(std::nearbyint(w / a), c.lo, c.hi));
}

double weight_sse(const float* w, std::size_t n, double a, Codes c) {
  double sse = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double wi = w[i];
    const double d = wi - a * weight_code(wi, a, c);
    sse += d * d;
  }
  return sse;
}

}  // namespace

double MmseWeights::adjusted_scale(int bits) const {
  return std::ldexp(scale, bits - 1);
}

std::vector<float> MmseWeights::adjusted_weights(int bits) const {
  std::vector<float> out(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    out[i] = static_cast<float>(std::ldexp(static_cast<double>(codes[i]), 1 - bits));
  }
  return out;
}

MmseWeights mmse_weight_quantization(const float* w, std::size_t n, int bits,
                                     std::size_t candidates) {
  const Codes c = weight_codes(bits);
  if (candidates == 0) throw std::invalid_argument("MMSE needs at least one candidate");
  check_finite(w, n, "weight");
  MmseWeights out;
  out.codes.assign(n, 0);
  double wmax = 0.0;
  for (std::size_t i = 0; i < n; ++i) wmax = std::max(wmax, std::fabs(static_cast<double>(w[i])));
  if (n == 0 || wmax == 0.0) return out;  // all zero: codes 0, scale 0, MSE 0

  const double a_max = wmax / -c.lo;
  double a = a_max;
  double best = INFINITY;
  for (std::size_t j = 1; j <= candidates; ++j) {
    const double cand = a_max * static_cast<double>(j) / static_cast<double>(candidates);
    const double sse = weight_sse(w, n, cand, c);
    if (sse < best) {
      best = sse;
      a = cand;
    }
  }
  // Alternating minimisation: optimal codes for a, then the least-squares scale for the codes.
  std::vector<std::int32_t> q(n);
  for (int round = 0; round < 100; ++round) {
    bool changed = false;
    double wq = 0.0;
    double qq = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double wi = w[i];
      const std::int32_t code = weight_code(wi, a, c);
      changed = changed || round == 0 || code != q[i];
      q[i] = code;
      wq += wi * code;
      qq += static_cast<double>(code) * code;
    }
    if (!changed || qq == 0.0) break;
    const double next = wq / qq;
    if (!(next > 0.0) || weight_sse(w, n, next, c) > best) break;
    best = weight_sse(w, n, next, c);
    a = next;
  }
  out.scale = a;
  for (std::size_t i = 0; i < n; ++i) {
    out.codes[i] = weight_code(w[i], a, c);
  }
  out.mse = weight_sse(w, n, a, c) / static_cast<double>(n);
  return out;
}

double quantize_activation(double x, double offset, double saturation, int bits) {
  check_quant_bits(bits);
  if (!(saturation > 0.0)) return offset;
  const double limit = std::ldexp(1.0, bits) - 1.0;
  const double expand = limit / saturation;
  const double clipped = std::clamp(x - offset, 0.0, saturation);
  return offset + std::nearbyint(clipped * expand) / expand;
}

double activation_total_mse(const std::vector<std::vector<float>>& batches, double offset,
                            double saturation, int bits) {
  double total = 0.0;
  for (const auto& b : batches) {
    double sse = 0.0;
    for (const float x : b) {
      const double xd = x;
      const double d = quantize_activation(xd, offset, saturation, bits) - xd;
      sse += d * d;
    }
    total += b.empty() ? 0.0 : sse / static_cast<double>(b.size());
  }
  return total;
}

ActivationCalibration calibrate_activation(const std::vector<std::vector<float>>& batches, int bits,
                                           std::size_t candidates) {
  check_quant_bits(bits);
  if (batches.empty()) throw std::invalid_argument("activation calibration needs batches");
  if (candidates == 0) throw std::invalid_argument("calibration needs at least one candidate");
  ActivationCalibration out;
  double min_sum = 0.0;
  double top = -INFINITY;
  for (std::size_t j = 0; j < batches.size(); ++j) {
    const auto& b = batches[j];
    if (b.empty()) {
      throw std::invalid_argument("calibration batch " + std::to_string(j) + " is empty");
    }
    check_finite(b.data(), b.size(), "activation");
    const auto [mn, mx] = std::minmax_element(b.begin(), b.end());
    min_sum += static_cast<double>(*mn);
    top = std::max(top, static_cast<double>(*mx));
  }
  out.offset = min_sum / static_cast<double>(batches.size());
  const double range = top - out.offset;
  if (!(range > 0.0)) {
    out.total_mse = activation_total_mse(batches, out.offset, 0.0, bits);
    return out;
  }
  auto search = [&](double from, double to) {
    for (std::size_t j = 1; j <= candidates; ++j) {
      const double beta =
          from + (to - from) * static_cast<double>(j) / static_cast<double>(candidates);
      const double e = activation_total_mse(batches, out.offset, beta, bits);
      if (e < out.total_mse) {
        out.total_mse = e;
        out.saturation = beta;
      }
    }
  };
  out.total_mse = INFINITY;
  search(0.0, range);
  const double cell = range / static_cast<double>(candidates);
  search(std::max(0.0, out.saturation - cell), out.saturation + cell);
  return out;
}

}  // namespace octasim::models
