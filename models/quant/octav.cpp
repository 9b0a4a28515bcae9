#include "models/quant/octav.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "models/quant/exact_sum.hpp"

namespace octasim::models {
namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Groups below this size use one table with a touched-exponent range (cheap to clear);
// larger ones use four tables in rotation so consecutive adds do not wait on each other.
constexpr std::size_t kSmallGroup = 2048;

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

// A band of a group's magnitudes, lo < m <= hi, copied out, with exact totals for the
// elements outside it. While the threshold t satisfies lo <= t <= hi, everything outside the
// band is on a known side of t, so an iteration only needs the band. The totals are exact, so
// the reductions equal those of a full pass bit for bit.
struct Band {
  std::uint32_t lo = 0;
  std::uint32_t hi = 0;
  // The band's magnitudes: storage[0, size). storage has room for the whole group (plus a
  // block), carved from the per-thread workspace's uninitialised arena: pages never written
  // cost nothing, and a full pass writes without checks.
  std::uint32_t* storage = nullptr;
  std::size_t size = 0;
  std::uint64_t nonzero_below = 0;  // 0 < m <= lo
  std::uint64_t count_above = 0;    // m > hi
  // Exact sum of the magnitudes above hi, in rotation (see reduce_large); only entries
  // [e_lo, e_hi] are in use (and initialised).
  int e_lo = 0;
  int e_hi = -1;
  std::uint64_t table_above[4][256];

  [[nodiscard]] bool holds(std::uint32_t t) const { return lo <= t && t <= hi; }
};

// Memory the bands live in, kept per thread between calls: on a machine where first touching a
// page is slow, a QAT loop calling OCTAV every step would otherwise pay for it every call.
// Kept only up to kKeepElements magnitudes; larger requests get memory for the one call.
class BandWorkspace {
 public:
  static constexpr std::size_t kKeepElements = std::size_t{1} << 26;  // 256 MiB

  BandWorkspace(std::size_t magnitudes, std::size_t bands) {
    Cache& c = cache();
    if (magnitudes <= kKeepElements) {
      arena_.swap(c.arena);
      std::swap(capacity_, c.capacity);
      bands_.swap(c.bands);
    }
    if (capacity_ < magnitudes) {  // uninitialised: pages are touched only where written
      arena_.reset(new std::uint32_t[magnitudes]);
      capacity_ = magnitudes;
    }
    if (bands_.size() < bands) bands_.resize(bands);
  }
  ~BandWorkspace() {
    Cache& c = cache();
    if (capacity_ <= kKeepElements && capacity_ >= c.capacity) {
      c.arena.swap(arena_);
      std::swap(c.capacity, capacity_);
      c.bands.swap(bands_);
    }
  }
  BandWorkspace(const BandWorkspace&) = delete;
  BandWorkspace& operator=(const BandWorkspace&) = delete;
  BandWorkspace(BandWorkspace&&) = delete;
  BandWorkspace& operator=(BandWorkspace&&) = delete;

  [[nodiscard]] std::uint32_t* arena() { return arena_.get(); }
  [[nodiscard]] Band* band(std::size_t i) { return &bands_[i]; }

 private:
  struct Cache {
    std::unique_ptr<std::uint32_t[]> arena;
    std::size_t capacity = 0;
    std::vector<Band> bands;
  };
  static Cache& cache() {
    thread_local Cache c;
    return c;
  }
  std::unique_ptr<std::uint32_t[]> arena_;
  std::size_t capacity_ = 0;
  std::vector<Band> bands_;
};

template <Signedness S>
inline std::uint32_t magnitude(std::uint32_t b) {
  return octav_magnitude_bits(b, S);
}

constexpr std::size_t kBlock = 16;

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

// One full pass at threshold t. With `band` (whose lo <= t <= hi), the band is refilled in
// the same pass. Blocks of kBlock elements are compared and counted branch-free; only the
// elements above the band's lower edge (or above t) are visited one by one.
void zero_tables(std::uint64_t (*tables)[256], int lo, int hi) {
  for (int k = 0; k < 4; ++k) {
    for (int e = lo; e <= hi; ++e) tables[k][e] = 0;
  }
}

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

OctavReductions full_reduce(const float* x, std::size_t n, std::uint32_t t, Signedness sign,
                            Band* band, std::uint32_t max_bits = 0x7f7fffffu) {
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

struct GroupStats {
  std::uint32_t max_bits = 0;
  std::uint32_t min_nonzero_bits = 0xffffffffu;
};

[[noreturn]] void throw_not_finite(const float* x, std::size_t n, std::size_t group) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t b = bits_of(x[i]);
    if ((b & 0x7f800000u) != 0x7f800000u) continue;
    throw std::invalid_argument(
        (group == static_cast<std::size_t>(-1) ? std::string()
                                               : "group " + std::to_string(group) + " ") +
        "element " + std::to_string(i) + " is " + ((b & 0x7fffffu) != 0 ? "NaN" : "infinite") +
        "; OCTAV needs finite values");
  }
  throw std::logic_error("throw_not_finite: no such element");
}

template <Signedness S>
GroupStats group_stats(const float* x, std::size_t n, std::size_t group) {
  std::uint32_t max_m = 0;
  std::uint32_t min_nz = 0x7fffffffu;
  bool special = false;
  std::size_t i = 0;
#if defined(__SSE2__)
  // Non-negative finite floats order like their bit patterns, so max/min of the magnitudes
  // as floats (maxps/minps) are max/min of the bits; zeros become +inf for the minimum.
  const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
  const __m128i exp_mask = _mm_set1_epi32(0x7f800000);
  __m128 vmax = _mm_setzero_ps();
  __m128 vmin = _mm_castsi128_ps(exp_mask);
  __m128i vspecial = _mm_setzero_si128();
  for (; i + 4 <= n; i += 4) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    const __m128i m = S == Signedness::kSigned ? _mm_and_si128(v, abs_mask)
                                               : _mm_andnot_si128(_mm_srai_epi32(v, 31), v);
    vspecial = _mm_or_si128(vspecial, _mm_cmpeq_epi32(_mm_and_si128(v, exp_mask), exp_mask));
    vmax = _mm_max_ps(vmax, _mm_castsi128_ps(m));
    const __m128i nz =
        _mm_or_si128(m, _mm_and_si128(_mm_cmpeq_epi32(m, _mm_setzero_si128()), exp_mask));
    vmin = _mm_min_ps(vmin, _mm_castsi128_ps(nz));
  }
  alignas(16) std::uint32_t lane_max[4];
  alignas(16) std::uint32_t lane_min[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(lane_max), _mm_castps_si128(vmax));
  _mm_store_si128(reinterpret_cast<__m128i*>(lane_min), _mm_castps_si128(vmin));
  special = _mm_movemask_epi8(vspecial) != 0;
  for (int k = 0; k < 4; ++k) {
    max_m = std::max(max_m, lane_max[k]);
    if (lane_min[k] != 0x7f800000u) min_nz = std::min(min_nz, lane_min[k]);
  }
#endif
  for (; i < n; ++i) {
    const std::uint32_t bits = bits_of(x[i]);
    const std::uint32_t m = magnitude<S>(bits);
    special = special || (bits & 0x7f800000u) == 0x7f800000u;
    max_m = std::max(max_m, m);
    if (m != 0) min_nz = std::min(min_nz, m);
  }
  if (special) throw_not_finite(x, n, group);
  GroupStats st;
  st.max_bits = max_m;
  if (max_m != 0) st.min_nonzero_bits = min_nz;
  return st;
}

void check_options(const OctavOptions& o) {
  check_quant_bits(o.bits);
  if (o.max_iterations < 1) throw std::invalid_argument("OCTAV needs max_iterations >= 1");
  if (!(o.tolerance >= 0.0) || !std::isfinite(o.tolerance)) {
    throw std::invalid_argument("OCTAV tolerance must be finite and >= 0");
  }
  if (o.init == OctavInit::kValue &&
      (!(o.initial_value >= 0.0) || !std::isfinite(o.initial_value))) {
    throw std::invalid_argument("OCTAV initial value must be finite and >= 0");
  }
}

float float_of(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// Per-group state of the iteration.
struct GroupRun {
  double s = 0.0;
  double previous = -1.0;  // s_{n-1}, to detect a 2-cycle
  double want_lo = 0.0;    // where the next iterates are expected (band edges)
  double want_hi = 0.0;
  std::uint32_t max_bits = 0;
  Band* spare = nullptr;  // this group's band (its storage has room for n + kBlock), if any
  ClipResult result;
  bool active = true;
  Band* band = nullptr;  // set while the band is valid
};

// SplitMix64: a fixed, portable generator for the kRandom initial guess.
std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

GroupRun start_from_stats(const GroupStats& st, const OctavOptions& o, std::size_t group) {
  GroupRun run;
  run.max_bits = st.max_bits;
  if (st.max_bits == 0) {  // no nonzero element
    run.active = false;
    return run;
  }
  if (st.max_bits == st.min_nonzero_bits) {  // one nonzero magnitude: represented exactly
    run.result.clip = float_of(st.max_bits);
    run.active = false;
    return run;
  }
  switch (o.init) {
    case OctavInit::kHalfMax:
      run.s = 0.5 * static_cast<double>(float_of(st.max_bits));
      break;
    case OctavInit::kZero:
      run.s = 0.0;
      break;
    case OctavInit::kValue:
      run.s = o.initial_value;
      break;
    case OctavInit::kRandom: {
      const std::uint64_t u = splitmix64(o.seed ^ splitmix64(group)) >> 11;  // 53 bits
      run.s = (1.0 - std::ldexp(static_cast<double>(u), -53)) *
              static_cast<double>(float_of(st.max_bits));  // in (0, max]
      break;
    }
  }
  return run;
}

// `group` numbers the group for the random initial guess and error messages (kNoGroup: a
// lone group, numbered 0 and not named in messages).
constexpr std::size_t kNoGroup = static_cast<std::size_t>(-1);

GroupRun start_group(const float* x, std::size_t n, const OctavOptions& o, std::size_t group) {
  return start_from_stats(o.sign == Signedness::kSigned
                              ? group_stats<Signedness::kSigned>(x, n, group)
                              : group_stats<Signedness::kUnsigned>(x, n, group),
                          o, group == kNoGroup ? 0 : group);
}

// Bands only pay off for large groups. The first full pass keeps the magnitudes from
// (1 - kBandBelow) s to (1 + kBandAbove) s (from s = max/2 the optimum is more often above). After
// a step from s to s', the optimum of the convex J is expected between them after a step down
// (Newton overshoots from above), and above s' after a step up, within kReach times the step. The
// band is cut down to that range once it holds more than kBandMinKeep elements; a band that does
// not hold the next threshold is rebuilt around the range by the next full pass. A wrong guess only
// costs time: an iteration whose threshold is outside the band makes a full pass.
constexpr double kBandBelow = 0.2;  // first band: [(1 - below) s, (1 + above) s]
constexpr double kBandAbove = 0.5;
constexpr double kReach = 4.0;
constexpr std::size_t kBandMinKeep = 64;

// The update after the reductions at run.s: the next iterate, the convergence test (with the
// 2-cycle rule) and the range later iterates are expected in. False when the group stops.
bool advance(GroupRun& run, const OctavReductions& r, const OctavOptions& o) {
  const double next = octav_update(r, o.bits, o.sign);
  ++run.result.iterations;
  const double change = std::fabs(next - run.s);
  const bool cycle = next == run.previous;  // alternating around one data magnitude
  const bool converged = cycle || next == run.s || change <= o.tolerance * next;
  run.result.clip = cycle ? std::min(next, run.s) : next;
  if (converged || run.result.iterations >= o.max_iterations) {
    run.active = false;
    run.result.converged = converged;
    run.band = nullptr;
    return false;
  }
  run.want_lo = next >= run.s ? run.s : next;
  run.want_hi = next >= run.s ? next + kReach * change : run.s;
  run.previous = run.s;
  run.s = next;
  return true;
}

void step_group(GroupRun& run, const float* x, std::size_t n, const OctavOptions& o) {
  const std::uint32_t t = octav_threshold_bits(run.s);
  OctavReductions r;
  if (run.band && run.band->holds(t)) {
    r = band_reduce(*run.band, t);
  } else if (run.spare != nullptr && run.s > 0.0) {
    run.band = run.spare;
    const bool have_range = run.want_hi > run.want_lo;
    run.band->lo = octav_threshold_bits(have_range ? run.want_lo : (1.0 - kBandBelow) * run.s);
    run.band->hi = octav_threshold_bits(have_range ? run.want_hi : (1.0 + kBandAbove) * run.s);
    r = full_reduce(x, n, t, o.sign, run.band, run.max_bits);
  } else {
    r = full_reduce(x, n, t, o.sign, nullptr, run.max_bits);
  }
  if (!advance(run, r, o)) return;
  if (run.band && run.band->size > kBandMinKeep) {
    const std::uint32_t lo = std::max(run.band->lo, octav_threshold_bits(run.want_lo));
    const std::uint32_t hi = std::min(run.band->hi, octav_threshold_bits(run.want_hi));
    const std::uint32_t t_next = octav_threshold_bits(run.s);
    if (lo <= t_next && t_next <= hi && (lo > run.band->lo || hi < run.band->hi)) {
      narrow_band(*run.band, lo, hi);
    }
  }
}

// Per channel on the last axis, the groups are the columns of a [rows, columns] matrix. Rather
// than copying them out, a full pass goes over the matrix row by row, comparing every column
// against its own threshold (and refilling the columns' bands); iterations inside a column's
// band read only the band. The reductions are the same exact ones as for a contiguous group.
template <Signedness S>
std::vector<GroupStats> column_stats(const ColumnView& v, std::vector<std::uint64_t>& nonzero) {
  const std::size_t rows = v.rows;
  const std::size_t cols = v.columns;
  std::vector<std::uint32_t> mx(cols + 4, 0);
  std::vector<std::uint32_t> mn(cols + 4, 0x7f800000u);
  std::vector<std::uint32_t> zeros(cols + 4, 0);
  std::uint32_t special = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = v.data + r * cols;
    std::size_t c = 0;
#if defined(__SSE2__)
    const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
    const __m128i exp_mask = _mm_set1_epi32(0x7f800000);
    __m128i sp = _mm_setzero_si128();
    for (; c + 4 <= cols; c += 4) {
      const __m128i x4 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c));
      const __m128i m = S == Signedness::kSigned ? _mm_and_si128(x4, abs_mask)
                                                 : _mm_andnot_si128(_mm_srai_epi32(x4, 31), x4);
      sp = _mm_or_si128(sp, _mm_cmpeq_epi32(_mm_and_si128(x4, exp_mask), exp_mask));
      const __m128i is_zero = _mm_cmpeq_epi32(m, _mm_setzero_si128());
      auto* pmx = reinterpret_cast<__m128*>(mx.data() + c);
      auto* pmn = reinterpret_cast<__m128*>(mn.data() + c);
      auto* pz = reinterpret_cast<__m128i*>(zeros.data() + c);
      _mm_storeu_ps(
          reinterpret_cast<float*>(pmx),
          _mm_max_ps(_mm_loadu_ps(reinterpret_cast<const float*>(pmx)), _mm_castsi128_ps(m)));
      _mm_storeu_ps(
          reinterpret_cast<float*>(pmn),
          _mm_min_ps(_mm_loadu_ps(reinterpret_cast<const float*>(pmn)),
                     _mm_castsi128_ps(_mm_or_si128(m, _mm_and_si128(is_zero, exp_mask)))));
      _mm_storeu_si128(pz, _mm_sub_epi32(_mm_loadu_si128(pz), is_zero));
    }
    special |= static_cast<std::uint32_t>(_mm_movemask_epi8(sp));
#endif
    for (; c < cols; ++c) {
      const std::uint32_t b = bits_of(row[c]);
      special |= (b & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
      const std::uint32_t m = magnitude<S>(b);
      mx[c] = std::max(mx[c], m);
      if (m != 0) mn[c] = std::min(mn[c], m);
      zeros[c] += m == 0 ? 1 : 0;
    }
  }
  if (special != 0) {
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        const std::uint32_t b = bits_of(v.data[r * cols + c]);
        if ((b & 0x7f800000u) != 0x7f800000u) continue;
        throw std::invalid_argument("group " + std::to_string(c) + " element " + std::to_string(r) +
                                    " is " + ((b & 0x7fffffu) != 0 ? "NaN" : "infinite") +
                                    "; OCTAV needs finite values");
      }
    }
  }
  std::vector<GroupStats> st(cols);
  nonzero.assign(cols, 0);
  for (std::size_t c = 0; c < cols; ++c) {
    st[c].max_bits = mx[c];
    if (mx[c] != 0) st[c].min_nonzero_bits = mn[c];
    nonzero[c] = rows - zeros[c];
  }
  return st;
}

// One row pass for the columns with full[c] set: reductions at t[c], and their bands refilled.
template <Signedness S>
void column_pass(const ColumnView& v, const std::vector<char>& full,
                 const std::vector<std::uint32_t>& t, std::vector<GroupRun>& runs,
                 std::vector<std::uint64_t>& table, std::vector<std::uint32_t>& above) {
  const std::size_t rows = v.rows;
  const std::size_t cols = v.columns;
  // Columns not in this pass get thresholds nothing exceeds.
  std::vector<std::uint32_t> tt(cols + 4, 0x7fffffffu);
  std::vector<std::uint32_t> lo(cols + 4, 0x7fffffffu);
  std::vector<std::uint32_t> hi(cols + 4, 0x7fffffffu);
  std::vector<std::uint32_t> above_lo(cols + 4, 0);
  std::vector<std::uint32_t> above_hi(cols + 4, 0);
  for (std::size_t c = 0; c < cols; ++c) {
    above[c] = 0;
    if (!full[c]) continue;
    Band& b = *runs[c].band;
    tt[c] = t[c];
    lo[c] = b.lo;
    hi[c] = b.hi;
    b.size = 0;
    b.e_lo = static_cast<int>(b.lo >> 23);
    b.e_hi = static_cast<int>(runs[c].max_bits >> 23);
    zero_tables(b.table_above, b.e_lo, b.e_hi);
    std::fill(table.begin() + static_cast<std::ptrdiff_t>(c * 256 + (t[c] >> 23)),
              table.begin() + static_cast<std::ptrdiff_t>(c * 256 + b.e_hi + 1), 0);
  }
  // Per-column pointers and fill levels in flat arrays, and branch-free updates: the columns
  // of one row hit different tables, so nothing waits on the previous element.
  std::vector<std::uint32_t*> store(cols);
  std::vector<std::uint64_t*> table_hi(cols);
  std::vector<std::size_t> filled(cols, 0);
  for (std::size_t c = 0; c < cols; ++c) {
    if (!full[c]) continue;
    store[c] = runs[c].band->storage;
    table_hi[c] = runs[c].band->table_above[0];
  }
  auto visit = [&](std::size_t c, std::uint32_t m) {
    const std::uint32_t mant = ExactMagnitudeSum::mantissa(m);
    const std::uint32_t e = m >> 23;
    table[c * 256 + e] += mant & (m > tt[c] ? ~0u : 0u);
    const bool over = m > hi[c];
    table_hi[c][e] += mant & (over ? ~0u : 0u);
    store[c][filled[c]] = m;
    filled[c] += over ? 0 : 1;
  };
  std::vector<std::uint32_t> cnt_above(cols + 4, 0);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = v.data + r * cols;
    std::size_t c = 0;
#if defined(__SSE2__)
    const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
    for (; c + 4 <= cols; c += 4) {
      const __m128i x4 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c));
      const __m128i m = S == Signedness::kSigned ? _mm_and_si128(x4, abs_mask)
                                                 : _mm_andnot_si128(_mm_srai_epi32(x4, 31), x4);
      const __m128i gl =
          _mm_cmpgt_epi32(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(lo.data() + c)));
      int mask = _mm_movemask_ps(_mm_castsi128_ps(gl));
      if (mask == 0) continue;
      const __m128i gt =
          _mm_cmpgt_epi32(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(tt.data() + c)));
      const __m128i gh =
          _mm_cmpgt_epi32(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi.data() + c)));
      auto* pa = reinterpret_cast<__m128i*>(cnt_above.data() + c);
      auto* pl = reinterpret_cast<__m128i*>(above_lo.data() + c);
      auto* ph = reinterpret_cast<__m128i*>(above_hi.data() + c);
      _mm_storeu_si128(pa, _mm_sub_epi32(_mm_loadu_si128(pa), gt));
      _mm_storeu_si128(pl, _mm_sub_epi32(_mm_loadu_si128(pl), gl));
      _mm_storeu_si128(ph, _mm_sub_epi32(_mm_loadu_si128(ph), gh));
      while (mask != 0) {
        const int j = __builtin_ctz(static_cast<unsigned>(mask));
        mask &= mask - 1;
        visit(c + static_cast<std::size_t>(j), magnitude<S>(bits_of(row[c + j])));
      }
    }
#endif
    for (; c < cols; ++c) {
      const std::uint32_t m = magnitude<S>(bits_of(row[c]));
      if (m <= lo[c]) continue;
      cnt_above[c] += m > tt[c] ? 1 : 0;
      ++above_lo[c];
      above_hi[c] += m > hi[c] ? 1 : 0;
      visit(c, m);
    }
  }
  for (std::size_t c = 0; c < cols; ++c) {
    above[c] = cnt_above[c];
    if (!full[c]) continue;
    Band& b = *runs[c].band;
    b.size = filled[c];
    b.count_above = above_hi[c];
    b.nonzero_below = above_lo[c];  // the caller, which knows the nonzero count, subtracts
  }
}

template <Signedness S>
std::vector<ClipResult> octav_columns(const ColumnView& v, const OctavOptions& o) {
  const std::size_t rows = v.rows;
  const std::size_t cols = v.columns;
  std::vector<std::uint64_t> nonzero;
  const std::vector<GroupStats> stats = column_stats<S>(v, nonzero);
  std::vector<GroupRun> runs(cols);
  BandWorkspace ws(cols * rows, cols);
  for (std::size_t c = 0; c < cols; ++c) {
    runs[c] = start_from_stats(stats[c], o, c);
    runs[c].band = ws.band(c);
    runs[c].band->storage = ws.arena() + c * rows;
    runs[c].band->size = 0;
  }
  std::vector<std::uint32_t> t(cols);
  std::vector<std::uint32_t> above(cols);
  std::vector<std::uint64_t> table(cols * 256);
  std::vector<char> full(cols);
  std::vector<char> banded(cols, 0);  // the column's band is valid
  for (bool any = true; any;) {
    any = false;
    bool need_pass = false;
    for (std::size_t c = 0; c < cols; ++c) {
      full[c] = 0;
      if (!runs[c].active) continue;
      GroupRun& run = runs[c];
      t[c] = octav_threshold_bits(run.s);
      if (banded[c] && run.band->holds(t[c])) {
        if (!advance(run, band_reduce(*run.band, t[c]), o)) continue;
        any = true;
        if (run.band->size > kBandMinKeep) {
          const std::uint32_t lo = std::max(run.band->lo, octav_threshold_bits(run.want_lo));
          const std::uint32_t hi = std::min(run.band->hi, octav_threshold_bits(run.want_hi));
          const std::uint32_t t_next = octav_threshold_bits(run.s);
          if (lo <= t_next && t_next <= hi && (lo > run.band->lo || hi < run.band->hi)) {
            narrow_band(*run.band, lo, hi);
          }
        }
        continue;
      }
      full[c] = 1;
      need_pass = true;
      const bool have_range = run.want_hi > run.want_lo;
      run.band->lo = octav_threshold_bits(have_range ? run.want_lo : (1.0 - kBandBelow) * run.s);
      run.band->hi = octav_threshold_bits(have_range ? run.want_hi : (1.0 + kBandAbove) * run.s);
      run.band->lo = std::min(run.band->lo, t[c]);
      run.band->hi = std::max(run.band->hi, t[c]);
    }
    if (!need_pass) continue;
    column_pass<S>(v, full, t, runs, table, above);
    for (std::size_t c = 0; c < cols; ++c) {
      if (!full[c]) continue;
      GroupRun& run = runs[c];
      run.band->nonzero_below = nonzero[c] - run.band->nonzero_below;
      banded[c] = 1;
      const int lo = static_cast<int>(t[c] >> 23);
      const int hi = static_cast<int>(run.max_bits >> 23);
      const OctavReductions red{
          above[c], nonzero[c] - above[c],
          above[c] > 0 ? ExactMagnitudeSum::round_to_double(&table[c * 256], lo, hi) : 0.0};
      if (advance(run, red, o)) any = true;
    }
  }
  std::vector<ClipResult> out(cols);
  for (std::size_t c = 0; c < cols; ++c) out[c] = runs[c].result;
  return out;
}

// The column engine keeps a 256-entry table per column and 32-bit counts per column.
bool use_columns(const GroupedTensor& t) {
  return t.has_columns() && t.columns().columns <= 4096 && t.columns().rows >= 64 &&
         t.columns().rows < (std::size_t{1} << 32);
}

}  // namespace

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

double octav_update(const OctavReductions& r, int bits, Signedness sign) {
  const double k = sign == Signedness::kSigned ? 3.0 : 12.0;
  const double num = k * r.sum_above;
  const double den = std::ldexp(static_cast<double>(r.count_nonzero_at_or_below), -2 * bits) +
                     k * static_cast<double>(r.count_above);
  return den > 0.0 ? num / den : 0.0;
}

ClipResult octav(const float* x, std::size_t n, const OctavOptions& opts) {
  check_options(opts);
  GroupRun run = start_group(x, n, opts, kNoGroup);
  if (n >= kSmallGroup && run.active) {
    BandWorkspace ws(n + kBlock, 1);
    run.spare = ws.band(0);
    run.spare->storage = ws.arena();
    while (run.active) step_group(run, x, n, opts);
  } else {
    while (run.active) step_group(run, x, n, opts);
  }
  return run.result;
}

std::vector<ClipResult> octav(const GroupedTensor& t, const OctavOptions& opts) {
  check_options(opts);
  if (use_columns(t)) {
    return opts.sign == Signedness::kSigned
               ? octav_columns<Signedness::kSigned>(t.columns(), opts)
               : octav_columns<Signedness::kUnsigned>(t.columns(), opts);
  }
  const std::size_t groups = t.group_count();
  std::vector<GroupRun> runs(groups);
  std::size_t magnitudes = 0;
  std::size_t large = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    if (t.group_size(g) < kSmallGroup) continue;
    magnitudes += t.group_size(g) + kBlock;
    ++large;
  }
  BandWorkspace ws(magnitudes, large);
  std::size_t offset = 0;
  std::size_t next_band = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    runs[g] = start_group(t.group_data(g), t.group_size(g), opts, groups > 1 ? g : kNoGroup);
    if (t.group_size(g) >= kSmallGroup) {
      runs[g].spare = ws.band(next_band++);
      runs[g].spare->storage = ws.arena() + offset;
      offset += t.group_size(g) + kBlock;
    }
  }
  // Iteration-major: one pass over all unconverged groups per iteration.
  for (bool any = true; any;) {
    any = false;
    for (std::size_t g = 0; g < groups; ++g) {
      if (!runs[g].active) continue;
      step_group(runs[g], t.group_data(g), t.group_size(g), opts);
      any = any || runs[g].active;
    }
  }
  std::vector<ClipResult> out(groups);
  for (std::size_t g = 0; g < groups; ++g) out[g] = runs[g].result;
  return out;
}

}  // namespace octasim::models
