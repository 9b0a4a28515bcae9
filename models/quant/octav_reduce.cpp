// The exact reductions of one OCTAV iteration: over a small group, over a large group in one
// branch-free pass (refilling a band), and over a band alone.
#include <algorithm>
#include <cfloat>
#include <cmath>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdexcept>
#include <string>

#include "models/quant/exact_sum.hpp"
#include "models/quant/octav_engine.hpp"

namespace octasim::models {
namespace octav_engine {
namespace {

OctavReductions reduce_small(const float* x, std::size_t n, std::uint32_t t, Signedness sign) {
  std::uint64_t table[256];
  std::uint32_t lo = 255;
  std::uint32_t hi = 0;
  std::uint64_t above = 0;
  std::uint64_t nonzero = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t m = octav_magnitude_bits(bits_of(x[i]), sign);
    nonzero += m != 0 ? 1 : 0;
    if (m > t) {
      const std::uint32_t e = m >> 23;
      if (lo > hi) {
        table[e] = 0;
        lo = hi = e;
      } else if (e < lo) {
        for (std::uint32_t k = e; k < lo; ++k) table[k] = 0;
        lo = e;
      } else if (e > hi) {
        for (std::uint32_t k = hi + 1; k <= e; ++k) table[k] = 0;
        hi = e;
      }
      table[e] += ExactMagnitudeSum::mantissa(m);
      ++above;
    }
  }
  const double sum = above > 0 ? ExactMagnitudeSum::round_to_double(table, static_cast<int>(lo),
                                                                    static_cast<int>(hi))
                               : 0.0;
  return {above, nonzero - above, sum};
}

// Walks the elements of one block whose bit is set in `mask` (those above the band's lower
// edge, a superset of those above t), adding to the exact sums and keeping band elements.
template <Signedness S>
struct Walker {
  std::uint32_t t;
  std::uint32_t hi;
  std::uint64_t (*table)[256];
  std::uint64_t (*table_hi)[256];
  std::uint32_t* kept;  // null without a band
  std::size_t kept_size = 0;

  void walk(const float* block, std::uint32_t mask) {
    while (mask != 0) {
      const int j = __builtin_ctz(mask);
      mask &= mask - 1;
      const std::uint32_t m = magnitude<S>(bits_of(block[j]));
      const std::uint32_t mant = ExactMagnitudeSum::mantissa(m);
      table[j & 3][m >> 23] += mant & (m > t ? ~0u : 0u);
      if (kept != nullptr) {
        table_hi[j & 3][m >> 23] += mant & (m > hi ? ~0u : 0u);
        kept[kept_size] = m;
        kept_size += m <= hi ? 1 : 0;
      }
    }
  }
};

struct PassCounts {
  std::uint64_t above = 0;     // m > t
  std::uint64_t nonzero = 0;   // m != 0
  std::uint64_t above_lo = 0;  // m > lo
  std::uint64_t above_hi = 0;  // m > hi
};

#if defined(__SSE2__)
// The block loop with SSE2 (every x86-64 has it): compares and counts four lanes at a time,
// and a movemask gives the lanes to walk. Same results as the portable loop below.
template <Signedness S>
PassCounts scan_blocks(const float* x, std::size_t blocks, std::uint32_t t, std::uint32_t lo,
                       std::uint32_t hi, Walker<S>& w) {
  const __m128i vt = _mm_set1_epi32(static_cast<int>(t));
  const __m128i vlo = _mm_set1_epi32(static_cast<int>(lo));
  const __m128i vhi = _mm_set1_epi32(static_cast<int>(std::min(hi, 0x7fffffffu)));
  const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
  const __m128i zero = _mm_setzero_si128();
  PassCounts total;
  auto lanes = [](__m128i v) {
    alignas(16) std::int32_t l[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(l), v);
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(l[0])) +
           static_cast<std::uint32_t>(l[1]) + static_cast<std::uint32_t>(l[2]) +
           static_cast<std::uint32_t>(l[3]);
  };
  constexpr std::size_t kFlush = std::size_t{1} << 24;  // per-lane int32 counts stay < 2^31
  for (std::size_t b0 = 0; b0 < blocks; b0 += kFlush) {
    const std::size_t b1 = std::min(blocks, b0 + kFlush);
    __m128i ca = zero;
    __m128i cz = zero;
    __m128i cl = zero;
    __m128i ch = zero;
    for (std::size_t b = b0; b < b1; ++b) {
      const float* block = x + b * kBlock;
      int mask = 0;
      for (int k = 0; k < 4; ++k) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4 * k));
        const __m128i m = S == Signedness::kSigned ? _mm_and_si128(v, abs_mask)
                                                   : _mm_andnot_si128(_mm_srai_epi32(v, 31), v);
        const __m128i gl = _mm_cmpgt_epi32(m, vlo);
        ca = _mm_sub_epi32(ca, _mm_cmpgt_epi32(m, vt));
        cz = _mm_sub_epi32(cz, _mm_cmpeq_epi32(m, zero));
        cl = _mm_sub_epi32(cl, gl);
        ch = _mm_sub_epi32(ch, _mm_cmpgt_epi32(m, vhi));
        mask |= _mm_movemask_ps(_mm_castsi128_ps(gl)) << (4 * k);
      }
      if (mask != 0) w.walk(block, static_cast<std::uint32_t>(mask));
    }
    total.above += lanes(ca);
    total.nonzero += 4 * (b1 - b0) * 4 - lanes(cz);
    total.above_lo += lanes(cl);
    total.above_hi += lanes(ch);
  }
  return total;
}
#else
template <Signedness S>
PassCounts scan_blocks(const float* x, std::size_t blocks, std::uint32_t t, std::uint32_t lo,
                       std::uint32_t hi, Walker<S>& w) {
  PassCounts total;
  for (std::size_t b = 0; b < blocks; ++b) {
    const float* block = x + b * kBlock;
    std::uint32_t mask = 0;
    for (std::size_t j = 0; j < kBlock; ++j) {
      const std::uint32_t m = magnitude<S>(bits_of(block[j]));
      total.above += m > t ? 1 : 0;
      total.nonzero += m != 0 ? 1 : 0;
      total.above_lo += m > lo ? 1 : 0;
      total.above_hi += m > hi ? 1 : 0;
      mask |= (m > lo ? 1u : 0u) << j;
    }
    if (mask != 0) w.walk(block, mask);
  }
  return total;
}
#endif

}  // namespace

void zero_tables(std::uint64_t (*tables)[256], int lo, int hi) {
  for (int k = 0; k < 4; ++k) {
    for (int e = lo; e <= hi; ++e) tables[k][e] = 0;
  }
}

namespace {

// Sums the four rotation tables over [lo, hi] into the first and rounds it.
double merge_and_round(std::uint64_t (*tables)[256], int lo, int hi) {
  for (int e = lo; e <= hi; ++e) tables[0][e] += tables[1][e] + tables[2][e] + tables[3][e];
  return lo <= hi ? ExactMagnitudeSum::round_to_double(tables[0], lo, hi) : 0.0;
}

// One full pass at threshold t; max_bits bounds the magnitudes (it limits the exponent range
// the exact sums touch). With `band` (whose lo <= t <= hi), the band is refilled in the same
// pass. Blocks of kBlock elements are compared and counted branch-free; only the elements
// above the band's lower edge (or above t) are visited one by one.
template <Signedness S>
OctavReductions reduce_large(const float* x, std::size_t n, std::uint32_t t, Band* band,
                             std::uint32_t max_bits) {
  if (n >= ExactMagnitudeSum::kMaxElements) {
    throw std::invalid_argument("OCTAV group of " + std::to_string(n) +
                                " elements exceeds the exact accumulator's 2^40 limit");
  }
  const std::uint32_t lo = band != nullptr ? band->lo : t;
  const std::uint32_t hi = band != nullptr ? band->hi : 0x7fffffffu;
  const int e_top = static_cast<int>(max_bits >> 23);
  // Exact sums in four tables used in rotation (lane j goes to table j % 4), so consecutive
  // adds to one exponent do not wait on each other; merged at the end.
  std::uint64_t table[4][256];
  const int e_t = static_cast<int>(t >> 23);
  zero_tables(table, e_t, e_top);
  Walker<S> w{t, hi, table, nullptr, nullptr};
  if (band != nullptr) {
    w.kept = band->storage;
    w.table_hi = band->table_above;
    band->e_lo = static_cast<int>(band->lo >> 23);
    band->e_hi = e_top;
    zero_tables(band->table_above, band->e_lo, band->e_hi);
  }
  const std::size_t blocks = n / kBlock;
  PassCounts c = scan_blocks<S>(x, blocks, t, lo, hi, w);
  const float* tail = x + blocks * kBlock;
  std::uint32_t mask = 0;
  for (std::size_t j = 0; j < n - blocks * kBlock; ++j) {
    const std::uint32_t m = magnitude<S>(bits_of(tail[j]));
    c.above += m > t ? 1 : 0;
    c.nonzero += m != 0 ? 1 : 0;
    c.above_lo += m > lo ? 1 : 0;
    c.above_hi += m > hi ? 1 : 0;
    mask |= (m > lo ? 1u : 0u) << j;
  }
  if (mask != 0) w.walk(tail, mask);
  if (band != nullptr) {
    band->size = w.kept_size;
    band->count_above = c.above_hi;
    band->nonzero_below = c.nonzero - c.above_lo;
  }
  return {c.above, c.nonzero - c.above, merge_and_round(table, e_t, e_top)};
}

}  // namespace

OctavReductions full_reduce(const float* x, std::size_t n, std::uint32_t t, Signedness sign,
                            Band* band, std::uint32_t max_bits) {
  if (n < kSmallGroup) return reduce_small(x, n, t, sign);
  return sign == Signedness::kSigned ? reduce_large<Signedness::kSigned>(x, n, t, band, max_bits)
                                     : reduce_large<Signedness::kUnsigned>(x, n, t, band, max_bits);
}

// The reductions from a band alone.
OctavReductions band_reduce(const Band& b, std::uint32_t t) {
  std::uint64_t table[4][256];
  for (int k = 0; k < 4; ++k) {
    for (int e = b.e_lo; e <= b.e_hi; ++e) table[k][e] = b.table_above[k][e];
  }
  std::uint64_t above = 0;
  const std::size_t n = b.size;
  for (std::size_t i = 0; i < n; ++i) {  // band elements are all nonzero (m > lo >= 0)
    const std::uint32_t m = b.storage[i];
    const std::uint32_t is_above = m > t ? 1u : 0u;
    above += is_above;
    table[i % 4][m >> 23] += ExactMagnitudeSum::mantissa(m) & (0u - is_above);
  }
  return {b.count_above + above, b.nonzero_below + (n - above),
          merge_and_round(table, b.e_lo, b.e_hi)};
}

// Cuts b down to the edges [lo, hi] (within its own), in place; branch-free, with the sums in
// rotation like reduce_large.
void narrow_band(Band& b, std::uint32_t lo, std::uint32_t hi) {
  std::size_t kept = 0;
  std::uint64_t over_count = 0;
  std::uint64_t under_count = 0;
  for (std::size_t i = 0; i < b.size; ++i) {
    const std::uint32_t m = b.storage[i];
    const bool over = m > hi;
    const bool under = m <= lo;
    over_count += over ? 1 : 0;
    under_count += under ? 1 : 0;
    b.table_above[i % 4][m >> 23] += ExactMagnitudeSum::mantissa(m) & (over ? ~0u : 0u);
    b.storage[kept] = m;
    kept += (over || under) ? 0 : 1;
  }
  b.count_above += over_count;
  b.nonzero_below += under_count;
  b.size = kept;
  b.lo = lo;
  b.hi = hi;
}

}  // namespace octav_engine

using namespace octav_engine;

std::uint32_t octav_threshold_bits(double s) {
  if (!(s > 0.0)) return 0;
  if (s >= static_cast<double>(FLT_MAX)) return bits_of(FLT_MAX);
  float f = static_cast<float>(s);  // nearest; step down once if it rounded up
  if (static_cast<double>(f) > s) f = std::nextafter(f, 0.0f);
  return bits_of(f);
}

OctavReductions octav_reduce(const float* x, std::size_t n, double s, Signedness sign) {
  return full_reduce(x, n, octav_threshold_bits(s), sign, nullptr);
}

}  // namespace octasim::models
