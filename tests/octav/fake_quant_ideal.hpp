// The ideal of fake quantization at clip s (models/quant/clip_convertor.hpp), computed exactly
// on s's binary value, independently of the SDP model:
//   q* = round(clamp(x, lo, s) * M / s),  A* = round(q* * s / M)  (round half away from zero),
// lo = -s (signed) or 0 (unsigned), A* saturated to the output precision.
#pragma once

#include <cmath>
#include <cstdint>

#include "models/numerics/int_range.hpp"
#include "models/quant/quantizer.hpp"

namespace octasim::test {

using models::int128_t;

// s = mant * 2^exp exactly (s > 0, a double).
struct Binary {
  std::int64_t mant = 0;
  int exp = 0;
};
inline Binary binary(double s) {
  int e = 0;
  const double f = std::frexp(s, &e);
  Binary b{static_cast<std::int64_t>(std::ldexp(f, 53)), e - 53};
  while (b.mant % 2 == 0) {
    b.mant /= 2;
    ++b.exp;
  }
  return b;
}

// round half away from zero of n / d, d > 0.
inline int128_t round_div(int128_t n, int128_t d) {
  const int128_t mag = (2 * (n < 0 ? -n : n) + d) / (2 * d);
  return n < 0 ? -mag : mag;
}

inline int128_t pow2(int e) {
  return int128_t{1} << e;
}

// x * M / s and q * s / M as exact fractions, rounded.
inline int128_t code_of(std::int64_t x, int m, const Binary& b) {
  if (b.exp >= 0) return round_div(int128_t{x} * m, int128_t{b.mant} * pow2(b.exp));
  return round_div(int128_t{x} * m * pow2(-b.exp), b.mant);
}
inline int128_t value_of(int128_t q, int m, const Binary& b) {
  if (b.exp >= 0) return round_div(q * b.mant * pow2(b.exp), m);
  return round_div(q * b.mant, int128_t{m} * pow2(-b.exp));
}

struct Ideal {
  int128_t code = 0;
  std::int64_t value = 0;
};
// x is an integer, so clamp(x, -s, s) is x inside and +-s (code +-M) outside.
inline Ideal ideal(std::int64_t x, double s, int m, models::Signedness sign,
                   models::IntPrecision out) {
  Ideal r;
  if (s == 0.0) return r;
  const Binary b = binary(s);
  const auto xd = static_cast<double>(x);
  if (sign == models::Signedness::kUnsigned && x < 0) {
    r.code = 0;
  } else if (xd > s) {
    r.code = m;
  } else if (xd < -s) {
    r.code = -m;
  } else {
    r.code = code_of(x, m, b);
  }
  r.value = models::saturate(value_of(r.code, m, b), out).value;
  return r;
}

}  // namespace octasim::test
