#include "models/precision/thresholds.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>

#include "models/numerics/float_format.hpp"

namespace octasim::models {
namespace {

// Outcome of the special-value policy, or nullopt when both values are finite.
std::optional<ThresholdResult> compare_specials(std::uint16_t a, std::uint16_t b) {
  const bool a_nan = fp16_is_nan(a), b_nan = fp16_is_nan(b);
  const bool a_inf = fp16_is_inf(a), b_inf = fp16_is_inf(b);
  if (a_nan || b_nan) return ThresholdResult{a_nan && b_nan, a_nan && b_nan ? 0.0 : HUGE_VAL, 0.0};
  if (a_inf || b_inf) return ThresholdResult{a == b, a == b ? 0.0 : HUGE_VAL, 0.0};
  return std::nullopt;
}

double abs_diff(std::uint16_t a, std::uint16_t b) {
  return std::fabs(decode_float(a, kFp16) - decode_float(b, kFp16));
}

ThresholdResult check_cc(std::uint16_t a, std::uint16_t b, int max_exp, double terms,
                         double scale) {
  const double bound =
      std::ldexp(terms * 2.0 * scale, max_exp - 20) + std::ldexp(1.0, fp16_exp(a) - 10);
  if (auto special = compare_specials(a, b)) return {special->pass, special->diff, bound};
  const double diff = abs_diff(a, b);
  return {diff <= bound, diff, bound};
}

ThresholdResult check_window(std::uint16_t a, std::uint16_t b, double max_value) {
  const double bound = std::min(1e-4, 1e-3 * std::fabs(max_value));
  if (auto special = compare_specials(a, b)) return {special->pass, special->diff, bound};
  const double diff = abs_diff(a, b);
  if (diff == 0.0) return {true, 0.0, bound};
  return {diff <= 1e-4 && diff / std::fabs(max_value) <= 1e-3, diff, bound};
}

}  // namespace

int cc_max_exp(const std::uint16_t* data, const std::uint16_t* wt, std::size_t n) {
  int best = INT_MIN;
  for (std::size_t i = 0; i < n; ++i) {
    best = std::max(best, (fp16_exp(data[i]) & ~0x3) + (fp16_exp(wt[i]) & ~0x3));
  }
  return best;
}

ThresholdResult check_cc_direct(std::uint16_t a, std::uint16_t b, int max_exp, int r, int s, int c,
                                double scale) {
  return check_cc(a, b, max_exp, static_cast<double>(r) * s * c, scale);
}

ThresholdResult check_cc_winograd(std::uint16_t a, std::uint16_t b, int max_exp, int c,
                                  double scale) {
  return check_cc(a, b, max_exp, 18.0 * c, scale);
}

ThresholdResult check_sdp(std::uint16_t a, std::uint16_t b) {
  return {a == b, a == b ? 0.0 : abs_diff(a, b), 0.0};
}

ThresholdResult check_cdp(std::uint16_t a, std::uint16_t b, double max_value) {
  return check_window(a, b, max_value);
}

ThresholdResult check_pdp(std::uint16_t a, std::uint16_t b, double max_value) {
  return check_window(a, b, max_value);
}

}  // namespace octasim::models
