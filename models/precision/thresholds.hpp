// The FP16 golden-comparison rules of NVDLA's precision spec (precision.rst,
// "FP16 error threshold"). Each check returns pass/fail with the bound it used, so a mismatch
// report can print got, want and bound.
//
// Naming follows the spec: `a` is the value under test (the device's output), `b` the golden.
// Policy where the spec is silent: two NaNs compare equal; a NaN against a number fails;
// equal infinities pass; an infinity against anything else fails.
#pragma once

#include <cstddef>
#include <cstdint>

namespace octasim::models {

struct ThresholdResult {
  bool pass;
  double diff;   // |a - b| (0 when both are the same NaN/infinity)
  double bound;  // largest |a - b| the rule allows (0 for bit-exact rules)
};

// max_exp of one output element: max over the kernel window of
// (exp(data) & ~3) + (exp(wt) & ~3), with exp() NVDLA's FP16 exponent extraction.
[[nodiscard]] int cc_max_exp(const std::uint16_t* data, const std::uint16_t* wt, std::size_t n);

// CC direct convolution: |a-b| <= 2^(max_exp-20) * R*S*C * 2 * scale + 2^(exp(a)-10).
[[nodiscard]] ThresholdResult check_cc_direct(std::uint16_t a, std::uint16_t b, int max_exp, int r,
                                              int s, int c, double scale);
// CC Winograd: as direct with 18*C in place of R*S*C.
[[nodiscard]] ThresholdResult check_cc_winograd(std::uint16_t a, std::uint16_t b, int max_exp,
                                                int c, double scale);
// SDP: bit-by-bit identical.
[[nodiscard]] ThresholdResult check_sdp(std::uint16_t a, std::uint16_t b);
// CDP: |a-b| <= 1e-4 && |a-b| / max_value <= 1e-3, max_value the largest value in one
// square-sum window (its magnitude is used).
[[nodiscard]] ThresholdResult check_cdp(std::uint16_t a, std::uint16_t b, double max_value);
// PDP: the CDP rule with max_value the largest value in one pooling window.
[[nodiscard]] ThresholdResult check_pdp(std::uint16_t a, std::uint16_t b, double max_value);

}  // namespace octasim::models
