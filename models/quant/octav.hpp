// OCTAV (eq. 6 of the OCTAV patent): the Newton-Raphson recursion for the MSE-optimal
// clipping scalar,
//
//   s_{n+1} = sum_{|x| > s_n} |x|  /  ( c * #{0 < |x| <= s_n}  +  #{|x| > s_n} ),
//
// with c = 4^-B/3 for signed data and 4^-B/12 for unsigned (post-ReLU) data, whose magnitudes
// are max(x, 0) (negative values clamp to 0, an error that does not depend on s). Zeros are
// left out of the denominator: integer quantization represents them exactly.
//
// One iteration is one pass of three reductions (octav_reduce) and a scalar update
// (octav_update); a hardware OCTAV unit computes the same three reductions per iteration and
// must reproduce these values bit for bit, so the arithmetic is fixed here:
// - magnitudes are the FP32 values' own bits (|x| clears the sign bit; -0 counts as 0);
// - "|x| > s" compares against the largest FP32 value <= s (octav_threshold_bits), which is
//   the same predicate for a float |x|, and is an unsigned compare of bit patterns;
// - both counts are exact 64-bit integers;
// - the sum is exact (ExactMagnitudeSum) and rounded once to double, so it does not depend on
//   the order the elements are visited in;
// - the update is three IEEE double operations: num = k * S, den = N0 * 2^-2B + k * N1,
//   s = num / den, with k = 3 (signed) or 12 (unsigned); den == 0 (no nonzero element) gives 0.
// Why exact rather than a double accumulator: a double sum depends on the order of the adds,
// so a unit streaming in its own order (or in lanes) could not match bit for bit, and the
// faster software paths (bands, columns) would not match the plain pass either. Hardware gets
// the same value from any exact accumulator: a fixed-point register wide enough for the input
// format (FP16: 40 bits + log2(N); FP32: per-exponent mantissa sums as here, or a 320-bit
// register) followed by one round-to-nearest-even to double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/quant/grouping.hpp"
#include "models/quant/quantizer.hpp"

namespace octasim::models {

struct OctavReductions {
  std::uint64_t count_above = 0;                // #{|x| > s}
  std::uint64_t count_nonzero_at_or_below = 0;  // #{0 < |x| <= s}
  double sum_above = 0.0;                       // sum of |x| over |x| > s, exact, rounded once
};

// Bit pattern of the largest FP32 value <= s (s >= 0); s above FLT_MAX gives FLT_MAX's bits.
[[nodiscard]] std::uint32_t octav_threshold_bits(double s);
// The magnitude OCTAV sees for x, as FP32 bits: |x| (signed) or max(x, 0) (unsigned); -0 -> 0.
[[nodiscard]] inline std::uint32_t octav_magnitude_bits(std::uint32_t x_bits, Signedness sign) {
  if (sign == Signedness::kSigned) return x_bits & 0x7fffffffu;
  const std::uint32_t negative = 0u - (x_bits >> 31);  // all ones for negative values and -0
  return x_bits & ~negative;
}

// The three reductions of one iteration at clipping scalar s. x must be finite.
[[nodiscard]] OctavReductions octav_reduce(const float* x, std::size_t n, double s,
                                           Signedness sign);
// The Newton-Raphson update: the next clipping scalar from the reductions at the current one.
[[nodiscard]] double octav_update(const OctavReductions& r, int bits, Signedness sign);

// Where one Newton-Raphson step leaves a group, from s_{n-1} (`previous`), s_n (`s`) and
// s_{n+1} (`next`): converged on a 2-cycle (next == previous: the recursion alternates around
// one data magnitude; the clip is the smaller of the two), a fixed point (next == s) or a
// relative change within tolerance (|next - s| <= tolerance * next; the clip is next). The one
// convergence rule of octav(), the OCTAV unit's model and its tests.
struct OctavConvergence {
  bool converged = false;
  double clip = 0.0;  // the answer if the iteration stops here (converged or not)
};
[[nodiscard]] inline OctavConvergence octav_convergence(double previous, double s, double next,
                                                        double tolerance) {
  const bool cycle = next == previous;
  return {cycle || next == s || std::fabs(next - s) <= tolerance * next,
          cycle ? std::min(next, s) : next};
}

enum class OctavInit : std::uint8_t {
  kHalfMax,  // s_0 = max magnitude / 2 (default)
  kZero,     // s_0 = 0: the first iterate is the mean nonzero magnitude
  kValue,    // s_0 = OctavOptions::initial_value
  // The patent's own choice, a random s_0: uniform in (0, max magnitude], drawn from
  // OctavOptions::seed and the group's index (so reproducible, and independent per group).
  kRandom,
};

struct OctavOptions {
  int bits = 4;
  Signedness sign = Signedness::kSigned;
  OctavInit init = OctavInit::kHalfMax;
  double initial_value = 0.0;
  std::uint64_t seed = 0;  // kRandom
  // Converged when |s_{n+1} - s_n| <= tolerance * s_{n+1} (relative change of one update).
  double tolerance = 1e-4;
  int max_iterations = 10;
};

// A calibrator's answer for one group. iterations counts reduction passes (OCTAV) or
// candidates evaluated (brute force); converged is false only when OCTAV stopped at
// max_iterations without meeting the tolerance.
struct ClipResult {
  double clip = 0.0;
  int iterations = 0;
  bool converged = true;
};

// OCTAV on one group. Policies:
// - a group without a nonzero element gives s = 0 (0 iterations, converged);
// - a group whose nonzero magnitudes are all equal (one element, say) gives that magnitude
//   (exact, 0 iterations, converged): the recursion would alternate between it and 0;
// - on discrete data the fixed point of eq. 6 can fall on a data magnitude, and the
//   recursion then alternates between two values either side of it (s_{n+1} == s_{n-1}); that
//   counts as converged and the smaller of the two is returned;
// - NaN or Inf elements throw std::invalid_argument (as do bad options).
[[nodiscard]] ClipResult octav(const float* x, std::size_t n, const OctavOptions& opts);
// OCTAV on every group at once: each iteration is one pass over all unconverged groups.
// Results equal octav() on each group alone.
[[nodiscard]] std::vector<ClipResult> octav(const GroupedTensor& t, const OctavOptions& opts);

}  // namespace octasim::models
