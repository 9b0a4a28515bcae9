#include "models/numerics/float_format.hpp"

#include <algorithm>
#include <cmath>

#include "models/numerics/bit_cast.hpp"

namespace octasim::models {
namespace {

constexpr std::uint32_t mask(int n) {
  return n >= 32 ? ~0u : ((1u << n) - 1u);
}

// Largest usable unbiased exponent and, at that exponent, the largest usable mantissa field.
int emax(FloatFormat f) {
  return (f.has_inf ? (1 << f.exp_bits) - 2 : (1 << f.exp_bits) - 1) - f.bias();
}
std::uint32_t max_man_at_emax(FloatFormat f) {
  return f.has_inf ? mask(f.man_bits) : mask(f.man_bits) - 1;  // FN: all-ones mantissa is NaN
}

std::uint32_t nan_bits(FloatFormat f, bool negative, std::uint64_t double_payload) {
  const std::uint32_t sign = negative ? 1u << (f.exp_bits + f.man_bits) : 0u;
  const std::uint32_t exp_field = mask(f.exp_bits) << f.man_bits;
  if (!f.has_inf) return sign | exp_field | mask(f.man_bits);
  // Keep the top payload bits; set the quiet bit so the result is a (quiet) NaN.
  const auto payload = static_cast<std::uint32_t>(double_payload >> (52 - f.man_bits));
  const std::uint32_t quiet = 1u << (f.man_bits - 1);
  return sign | exp_field | ((payload | quiet) & mask(f.man_bits));
}

double round_half_even(double m) {
  const double fl = std::floor(m);
  const double frac = m - fl;  // exact
  if (frac > 0.5) return fl + 1.0;
  if (frac < 0.5) return fl;
  return std::fmod(fl, 2.0) == 0.0 ? fl : fl + 1.0;
}

}  // namespace

std::uint32_t encode_float(double x, FloatFormat f, Overflow overflow) {
  const auto xb = bit_cast<std::uint64_t>(x);
  const bool negative = (xb >> 63) != 0;
  const std::uint32_t sign = negative ? 1u << (f.exp_bits + f.man_bits) : 0u;
  const std::uint32_t exp_all_ones = mask(f.exp_bits) << f.man_bits;

  if (std::isnan(x)) return nan_bits(f, negative, xb & ((std::uint64_t{1} << 52) - 1));

  const std::uint32_t max_finite_bits =
      sign | (static_cast<std::uint32_t>(emax(f) + f.bias()) << f.man_bits) | max_man_at_emax(f);
  const std::uint32_t overflow_bits = overflow == Overflow::kSaturate ? max_finite_bits
                                      : f.has_inf                     ? sign | exp_all_ones
                                                                      : nan_bits(f, negative, 0);
  if (std::isinf(x)) return f.has_inf ? sign | exp_all_ones : overflow_bits;
  if (x == 0.0) return sign;

  const double a = std::fabs(x);
  int e2;
  (void)std::frexp(a, &e2);  // a = f * 2^e2, f in [0.5, 1)
  const int emin = 1 - f.bias();
  int e = std::max(e2 - 1, emin);
  // Significand scaled so one unit is one ulp at exponent e; ldexp by a power of two is exact.
  double m = round_half_even(std::ldexp(a, f.man_bits - e));
  const double hidden = std::ldexp(1.0, f.man_bits);
  if (m >= 2.0 * hidden) {  // rounding carried into the next binade
    m = hidden;
    ++e;
  }
  if (m == 0.0) return sign;
  const auto man = static_cast<std::uint32_t>(m);
  if (man < (1u << f.man_bits)) return sign | man;  // subnormal (e == emin)
  const std::uint32_t man_field = man - (1u << f.man_bits);
  if (e > emax(f) || (e == emax(f) && man_field > max_man_at_emax(f))) return overflow_bits;
  return sign | (static_cast<std::uint32_t>(e + f.bias()) << f.man_bits) | man_field;
}

double decode_float(std::uint32_t bits, FloatFormat f) {
  const bool negative = ((bits >> (f.exp_bits + f.man_bits)) & 1u) != 0;
  const std::uint32_t exp_field = (bits >> f.man_bits) & mask(f.exp_bits);
  const std::uint32_t man_field = bits & mask(f.man_bits);
  double v;
  if (exp_field == mask(f.exp_bits) && f.has_inf) {
    if (man_field == 0) {
      v = HUGE_VAL;
    } else {
      // Carry the payload into the double's mantissa so NaN -> double -> NaN round-trips.
      const std::uint64_t db = (std::uint64_t{0x7ff} << 52) |
                               (static_cast<std::uint64_t>(man_field) << (52 - f.man_bits));
      v = bit_cast<double>(db);
    }
  } else if (!f.has_inf && exp_field == mask(f.exp_bits) && man_field == mask(f.man_bits)) {
    v = std::nan("");
  } else if (exp_field == 0) {
    v = std::ldexp(static_cast<double>(man_field), 1 - f.bias() - f.man_bits);
  } else {
    v = std::ldexp(static_cast<double>(man_field | (1u << f.man_bits)),
                   static_cast<int>(exp_field) - f.bias() - f.man_bits);
  }
  return negative ? -v : v;
}

double max_finite(FloatFormat f) {
  return std::ldexp(static_cast<double>(max_man_at_emax(f) | (1u << f.man_bits)),
                    emax(f) - f.man_bits);
}

float fp32_from_bits(std::uint32_t bits) {
  return bit_cast<float>(bits);
}

std::uint32_t fp32_to_bits(float f) {
  return bit_cast<std::uint32_t>(f);
}

}  // namespace octasim::models
