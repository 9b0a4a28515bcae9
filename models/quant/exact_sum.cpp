#include "models/quant/exact_sum.hpp"

#include <cmath>

#include "models/numerics/bit_cast.hpp"
#include "models/numerics/int_range.hpp"

namespace octasim::models {

void ExactMagnitudeSum::add(float magnitude) {
  add_bits(bit_cast<std::uint32_t>(magnitude) & 0x7fffffffu);
}

void ExactMagnitudeSum::merge(const ExactMagnitudeSum& other) {
  for (std::size_t e = 0; e < per_exponent_.size(); ++e) per_exponent_[e] += other.per_exponent_[e];
}

double ExactMagnitudeSum::value() const {
  return round_to_double(per_exponent_.data());
}

double ExactMagnitudeSum::round_to_double(const std::uint64_t* per_exponent, int lo, int hi) {
  // The sum as an integer count of 2^-149 units: entry e sits at bit max(e,1)-1 (0..253) and
  // is below 2^64, so 5 limbs of 64 bits (320 bits) hold any total.
  constexpr int kLimbs = 5;
  std::uint64_t limb[kLimbs] = {};
  for (int e = lo; e <= hi; ++e) {
    const std::uint64_t v = per_exponent[e];
    if (v == 0) continue;
    const int pos = (e == 0 ? 1 : e) - 1;
    const int li = pos / 64;
    const int sh = pos % 64;
    const std::uint64_t low_part = v << sh;
    const std::uint64_t high_part = sh == 0 ? 0 : v >> (64 - sh);
    std::uint64_t carry = 0;
    for (int i = li; i < kLimbs; ++i) {
      const std::uint64_t add = (i == li ? low_part : i == li + 1 ? high_part : 0) + carry;
      // carry is 0 or 1 and high_part < 2^63, so `add` itself cannot wrap except when add == 2^64,
      // which needs high_part == 2^64-1; impossible since sh >= 1 there.
      const std::uint64_t sum = limb[i] + add;
      carry = sum < limb[i] ? 1 : 0;
      limb[i] = sum;
      if (carry == 0 && i > li) break;
    }
  }
  int top = kLimbs - 1;
  while (top >= 0 && limb[top] == 0) --top;
  if (top < 0) return 0.0;
  const int h = top * 64 + (63 - __builtin_clzll(limb[top]));  // index of the highest set bit
  if (h < 53) return std::ldexp(static_cast<double>(limb[0]), -149);  // exact
  // Keep the 53 bits [h-52, h]; round on bit h-53 with the bits below it as sticky.
  const int first = (h - 52) / 64;
  const uint128_t window =
      (static_cast<uint128_t>(first + 1 < kLimbs ? limb[first + 1] : 0) << 64) | limb[first];
  std::uint64_t mant =
      static_cast<std::uint64_t>(window >> ((h - 52) % 64)) & ((std::uint64_t{1} << 53) - 1);
  const int r = h - 53;
  const bool round_bit = ((limb[r / 64] >> (r % 64)) & 1u) != 0;
  bool sticky = false;
  for (int i = 0; i < r / 64 && !sticky; ++i) sticky = limb[i] != 0;
  if (!sticky && r % 64 != 0) sticky = (limb[r / 64] & ((std::uint64_t{1} << (r % 64)) - 1)) != 0;
  if (round_bit && (sticky || (mant & 1u) != 0)) ++mant;  // 2^53 after a carry stays exact
  return std::ldexp(static_cast<double>(mant), h - 52 - 149);
}

}  // namespace octasim::models
