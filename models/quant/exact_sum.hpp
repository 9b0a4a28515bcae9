// Exact summation of non-negative float32 magnitudes, rounded once to double.
//
// OCTAV's sum reduction must give the same bits whatever order the elements arrive in (a
// hardware unit streams them in its own order, groups are split and merged). Accumulating in
// double would make the result depend on that order; here every magnitude is added exactly:
// a float32 is m * 2^(e-150) with an integer mantissa m < 2^24, so the mantissas of one biased
// exponent e sum exactly in a 64-bit integer (up to 2^40 elements). value() combines the 256
// per-exponent sums into one wide integer and rounds it once, to nearest, ties to even.
#pragma once

#include <array>
#include <cstdint>

namespace octasim::models {

class ExactMagnitudeSum {
 public:
  // Elements one accumulator may take before a per-exponent sum could overflow 64 bits.
  static constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 40;

  // Adds the magnitude whose float32 bit pattern is `bits` (sign bit clear, finite).
  void add_bits(std::uint32_t bits) {
    const std::uint32_t e = bits >> 23;
    per_exponent_[e] += mantissa(bits);
  }
  void add(float magnitude);
  void merge(const ExactMagnitudeSum& other);
  void clear() { per_exponent_.fill(0); }

  // The exact sum, rounded once to the nearest double (ties to even).
  [[nodiscard]] double value() const;

  // The integer significand of a float32 magnitude: its value is mantissa * 2^(max(e,1)-150).
  [[nodiscard]] static constexpr std::uint32_t mantissa(std::uint32_t bits) {
    return (bits & 0x7fffffu) | ((bits >> 23) != 0 ? 0x800000u : 0u);
  }
  // Rounds sum over e of per_exponent[e] * 2^(max(e,1)-150) once to double.
  [[nodiscard]] static double round_to_double(const std::uint64_t* per_exponent) {
    return round_to_double(per_exponent, 0, 255);
  }
  // The same over entries [lo, hi] only (the others are taken as zero).
  [[nodiscard]] static double round_to_double(const std::uint64_t* per_exponent, int lo, int hi);

 private:
  std::array<std::uint64_t, 256> per_exponent_{};
};

}  // namespace octasim::models
