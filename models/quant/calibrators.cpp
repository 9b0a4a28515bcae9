#include "models/quant/calibrators.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace octasim::models {

ClipResult brute_force_clip(const float* x, std::size_t n, int bits, Signedness sign,
                            std::size_t candidates) {
  check_quant_bits(bits);
  if (candidates == 0) throw std::invalid_argument("brute force needs at least one candidate");
  const double s_max = max_scale(x, n, sign);
  ClipResult best{0.0, static_cast<int>(candidates), true};
  if (s_max == 0.0) return best;
  double best_sse = INFINITY;
  for (std::size_t k = 1; k <= candidates; ++k) {
    const double s = s_max * static_cast<double>(k) / static_cast<double>(candidates);
    const double sse = UniformQuantizer(s, bits, sign).sum_squared_error(x, n);
    if (sse < best_sse) {
      best_sse = sse;
      best.clip = s;
    }
  }
  return best;
}

ClipResult max_clip(const float* x, std::size_t n, Signedness sign) {
  return {max_scale(x, n, sign), 0, true};
}

ClipResult percentile_clip(const float* x, std::size_t n, Signedness sign, double percentile) {
  if (!(percentile > 0.0 && percentile <= 100.0)) {
    throw std::invalid_argument("percentile must be in (0, 100]");
  }
  (void)max_scale(x, n, sign);  // rejects NaN/Inf
  if (n == 0) return {};
  std::vector<float> m(x, x + n);
  for (float& v : m) v = sign == Signedness::kSigned ? std::fabs(v) : std::max(v, 0.0f);
  const auto rank =
      static_cast<std::size_t>(std::ceil(percentile / 100.0 * static_cast<double>(n)));  // 1-based
  const std::size_t k = std::min(std::max<std::size_t>(rank, 1), n) - 1;
  std::nth_element(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(k), m.end());
  return {m[k], 0, true};
}

ClipResult mse_histogram_clip(const float* x, std::size_t n, int bits, Signedness sign,
                              std::size_t bins, std::size_t start_bin) {
  check_quant_bits(bits);
  const MagnitudeHistogram h = magnitude_histogram(x, n, bins, sign);
  if (h.upper == 0.0) return {};
  const double w = h.bin_width();
  std::vector<std::size_t> used;  // only occupied bins contribute
  for (std::size_t b = 0; b < bins; ++b) {
    if (h.counts[b] != 0) used.push_back(b);
  }
  ClipResult best{0.0, 0, true};
  double best_err = INFINITY;
  for (std::size_t i = std::min(start_bin, bins - 1); i < bins; ++i) {
    const double amax = (static_cast<double>(i) + 0.5) * w;
    const UniformQuantizer q(amax, bits, sign);
    double err = 0.0;
    for (const std::size_t b : used) {
      const double c = (static_cast<double>(b) + 0.5) * w;
      const double d = q.quantize(c) - c;
      err += d * d * static_cast<double>(h.counts[b]);
    }
    ++best.iterations;
    if (err < best_err) {
      best_err = err;
      best.clip = amax;
    }
  }
  return best;
}

const char* clip_method_name(ClipMethod m) {
  switch (m) {
    case ClipMethod::kOctav:
      return "octav";
    case ClipMethod::kBruteForce:
      return "bruteforce";
    case ClipMethod::kMax:
      return "max";
    case ClipMethod::kPercentile:
      return "percentile";
    case ClipMethod::kMseHistogram:
      return "mse-hist";
  }
  return "?";
}

bool parse_clip_method(const std::string& name, ClipMethod& out) {
  for (const ClipMethod m : {ClipMethod::kOctav, ClipMethod::kBruteForce, ClipMethod::kMax,
                             ClipMethod::kPercentile, ClipMethod::kMseHistogram}) {
    if (name == clip_method_name(m)) {
      out = m;
      return true;
    }
  }
  return false;
}

std::vector<ClipResult> calibrate(const GroupedTensor& t, ClipMethod method,
                                  const CalibrationOptions& opts) {
  if (method == ClipMethod::kOctav) return octav(t, opts.octav);
  const int bits = opts.octav.bits;
  const Signedness sign = opts.octav.sign;
  std::vector<ClipResult> out(t.group_count());
  for (std::size_t g = 0; g < t.group_count(); ++g) {
    const float* x = t.group_data(g);
    const std::size_t n = t.group_size(g);
    switch (method) {
      case ClipMethod::kOctav:
        break;
      case ClipMethod::kBruteForce:
        out[g] = brute_force_clip(x, n, bits, sign, opts.candidates);
        break;
      case ClipMethod::kMax:
        out[g] = max_clip(x, n, sign);
        break;
      case ClipMethod::kPercentile:
        out[g] = percentile_clip(x, n, sign, opts.percentile);
        break;
      case ClipMethod::kMseHistogram:
        out[g] =
            mse_histogram_clip(x, n, bits, sign, opts.histogram_bins, opts.histogram_start_bin);
        break;
    }
  }
  return out;
}

}  // namespace octasim::models
