// Independent references for the quantization tests: distributions' quantiles, the continuous
// fixed points of OCTAV's eq. 6 solved by bisection on closed forms, and an exact sum oracle.
// None of it calls the code under test.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace octasim::models::testref {

__extension__ typedef __int128 i128;

// Root of f on [lo, hi] by bisection (f(lo) and f(hi) of opposite signs).
inline double bisect(const std::function<double(double)>& f, double lo, double hi) {
  const bool lo_negative = f(lo) < 0.0;
  for (int i = 0; i < 100; ++i) {  // 2^-100 of the bracket: below double resolution
    const double mid = 0.5 * (lo + hi);
    if ((f(mid) < 0.0) == lo_negative) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

// The noise constant, written out: 4^-B/3 signed, 4^-B/12 unsigned.
inline double c_of(int bits, bool is_signed) {
  return std::pow(4.0, -bits) / (is_signed ? 3.0 : 12.0);
}

// Inverse of the half-normal CDF P(|X| <= a) = erf(a / sqrt 2).
inline double half_normal_quantile(double p) {
  return bisect([p](double a) { return std::erf(a / std::sqrt(2.0)) - p; }, 0.0, 40.0);
}

// n magnitudes, one per cell of equal probability 1/n of |X|, each the mean of |X| over its
// cell (so the data carry the distribution's first moment in every cell, tail included);
// signs alternate. X standard normal: the cell [a, b] has mean n sqrt(2/pi) (e^-a^2/2 - e^-b^2/2).
inline std::vector<float> normal_quantile_data(std::size_t n) {
  std::vector<float> v(n);
  const double k = std::sqrt(2.0 / M_PI) * static_cast<double>(n);
  double a = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double b =
        i + 1 == n ? std::numeric_limits<double>::infinity()
                   : half_normal_quantile(static_cast<double>(i + 1) / static_cast<double>(n));
    const double mean =
        k * (std::exp(-0.5 * a * a) - (std::isinf(b) ? 0.0 : std::exp(-0.5 * b * b)));
    v[i] = static_cast<float>(i % 2 == 0 ? mean : -mean);
    a = b;
  }
  return v;
}

// The same for |X| ~ Exp(1) (X Laplace with unit scale): cell [a, b] has mean
// n ((a + 1) e^-a - (b + 1) e^-b).
inline std::vector<float> laplace_quantile_data(std::size_t n, bool alternate_signs = true) {
  std::vector<float> v(n);
  const double nn = static_cast<double>(n);
  double a = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double b = i + 1 == n ? std::numeric_limits<double>::infinity()
                                : -std::log1p(-static_cast<double>(i + 1) / nn);
    const double mean =
        nn * ((a + 1.0) * std::exp(-a) - (std::isinf(b) ? 0.0 : (b + 1.0) * std::exp(-b)));
    v[i] = static_cast<float>(alternate_signs && i % 2 == 1 ? -mean : mean);
    a = b;
  }
  return v;
}

// Continuous fixed point of eq. 6, s (c P(|X| <= s) + P(|X| > s)) = E[|X|; |X| > s]:
// half-normal: P(|X| > s) = erfc(s/sqrt2), E[|X|; |X| > s] = sqrt(2/pi) exp(-s^2/2).
inline double normal_fixed_point(double c) {
  return bisect(
      [c](double s) {
        const double tail = std::erfc(s / std::sqrt(2.0));
        const double mean_tail = std::sqrt(2.0 / M_PI) * std::exp(-0.5 * s * s);
        return s * (c * (1.0 - tail) + tail) - mean_tail;
      },
      1e-6, 20.0);
}

// Exp(1): P(|X| > s) = e^-s, E[|X|; |X| > s] = (s + 1) e^-s; the equation reduces to
// c s (e^s - 1) = 1.
inline double laplace_fixed_point(double c) {
  return bisect([c](double s) { return c * s * std::expm1(s) - 1.0; }, 1e-9, 60.0);
}

// |X| uniform on [0, a]: s (c s/a + (a - s)/a) = (a^2 - s^2)/(2a) gives 2 c s^2 = (a - s)^2,
// so s = a / (1 + sqrt(2c)).
inline double uniform_fixed_point(double a, double c) {
  return a / (1.0 + std::sqrt(2.0 * c));
}

// Exact sum of float magnitudes whose exponents lie in [2^-40, 2^40): fixed point with the
// unit 2^-63, summed in a 128-bit integer, converted once (GCC's int128 -> double rounds to
// nearest, ties to even).
inline double exact_sum_oracle(const std::vector<float>& v) {
  i128 acc = 0;
  for (const float f : v) {
    const double a = std::fabs(static_cast<double>(f));
    acc += static_cast<i128>(std::ldexp(a, 63));  // exact: a has at most 24 significant bits
  }
  return std::ldexp(static_cast<double>(acc), -63);
}

// Every fixed point of eq. 6 on the data, found exhaustively (no iteration): with magnitudes
// sorted a_1 <= ... <= a_n and k of them at or below s, s = (sum of a_{k+1..n}) /
// (c * #{0 < a_i, i <= k} + (n - k)); a candidate counts when a_k <= s < a_{k+1}.
inline std::vector<double> discrete_fixed_points(std::vector<double> a, double c) {
  std::sort(a.begin(), a.end());
  const std::size_t n = a.size();
  std::vector<long double> suffix(n + 1, 0.0L);
  for (std::size_t i = n; i-- > 0;) suffix[i] = suffix[i + 1] + a[i];
  std::size_t zeros = 0;
  while (zeros < n && a[zeros] == 0.0) ++zeros;
  std::vector<double> out;
  for (std::size_t k = zeros; k <= n; ++k) {
    const long double den = static_cast<long double>(c) * static_cast<long double>(k - zeros) +
                            static_cast<long double>(n - k);
    if (den == 0.0L) continue;
    const auto s = static_cast<double>(suffix[k] / den);
    if ((k == 0 || a[k - 1] <= s) && (k == n || s < a[k])) out.push_back(s);
  }
  return out;
}

}  // namespace octasim::models::testref
