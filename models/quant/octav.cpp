#include "models/quant/octav.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>

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
  std::vector<std::uint32_t> bits;
  std::uint64_t nonzero_below = 0;  // 0 < m <= lo
  std::uint64_t count_above = 0;    // m > hi
  std::uint64_t table_above[256] = {};

  [[nodiscard]] bool holds(std::uint32_t t) const { return lo <= t && t <= hi; }
};

template <Signedness S>
inline std::uint32_t magnitude(std::uint32_t b) {
  return octav_magnitude_bits(b, S);
}

constexpr std::size_t kBlock = 16;

struct BlockCounts {
  std::int32_t above;
  std::int32_t nonzero;
  std::int32_t above_lo;
  std::int32_t above_hi;
};

// Counts one block. Magnitudes and thresholds are below 2^31, so signed compares order them;
// a fixed trip count and local counters let GCC vectorise this at -O2.
template <Signedness S>
__attribute__((noinline)) BlockCounts count_block(const std::uint32_t* buf, std::int32_t t,
                                                  std::int32_t lo, std::int32_t hi) {
  std::int32_t a = 0;
  std::int32_t z = 0;
  std::int32_t l = 0;
  std::int32_t h = 0;
  for (std::size_t j = 0; j < kBlock; ++j) {
    const auto m = static_cast<std::int32_t>(magnitude<S>(buf[j]));
    a += m > t ? 1 : 0;
    z += m != 0 ? 1 : 0;
    l += m > lo ? 1 : 0;
    h += m > hi ? 1 : 0;
  }
  return {a, z, l, h};
}

// One full pass at threshold t. With `band` (whose lo <= t), it is refilled in the same pass.
// Blocks of kBlock elements: a branch-free, vectorised pass counts the block, and only a block
// holding an element above the band's lower edge (or above t) is walked again, from L1.
template <Signedness S>
OctavReductions reduce_large(const float* x, std::size_t n, std::uint32_t t, Band* band) {
  if (n >= ExactMagnitudeSum::kMaxElements) {
    throw std::invalid_argument("OCTAV group of " + std::to_string(n) +
                                " elements exceeds the exact accumulator's 2^40 limit");
  }
  // Without a band only "is any element above t" matters for walking a block; lo = t - 1 (a
  // superset) keeps the two counts distinct expressions, which GCC needs to vectorise them.
  const std::uint32_t lo = band != nullptr ? band->lo : (t == 0 ? 0 : t - 1);
  const std::uint32_t hi = band != nullptr ? band->hi : 0xffffffffu;
  std::uint64_t table[256] = {};
  std::uint64_t above = 0;
  std::uint64_t nonzero = 0;
  std::uint64_t above_lo = 0;
  std::uint64_t above_hi = 0;
  std::uint64_t dummy_table[256];
  std::uint64_t* table_hi = band != nullptr ? band->table_above : dummy_table;
  std::vector<std::uint32_t> dummy_bits;
  std::vector<std::uint32_t>& kept = band != nullptr ? band->bits : dummy_bits;
  if (band != nullptr) {
    kept.clear();
    std::fill(std::begin(band->table_above), std::end(band->table_above), 0);
  }
  std::size_t kept_size = 0;
  std::uint32_t buf[kBlock];
  auto walk = [&](const std::uint32_t* block, std::size_t len) {
    if (band != nullptr && kept.size() < kept_size + kBlock) {
      kept.resize(std::max<std::size_t>(2 * kept.size(), kept_size + kBlock));
    }
    for (std::size_t j = 0; j < len; ++j) {
      const std::uint32_t m = magnitude<S>(block[j]);
      const std::uint32_t mant = ExactMagnitudeSum::mantissa(m);
      if (m > t) table[m >> 23] += mant;
      if (band != nullptr) {
        if (m > hi) table_hi[m >> 23] += mant;
        kept[kept_size] = m;
        kept_size += (m > lo && m <= hi) ? 1 : 0;
      }
    }
  };
  const auto ti = static_cast<std::int32_t>(t);
  const auto loi = static_cast<std::int32_t>(lo);
  const auto hii = static_cast<std::int32_t>(std::min(hi, 0x7fffffffu));
  std::size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    std::memcpy(buf, x + i, sizeof buf);
    const BlockCounts c = count_block<S>(buf, ti, loi, hii);
    const std::int32_t a = c.above;
    const std::int32_t z = c.nonzero;
    const std::int32_t l = c.above_lo;
    const std::int32_t h = c.above_hi;
    above += static_cast<std::uint64_t>(a);
    nonzero += static_cast<std::uint64_t>(z);
    above_lo += static_cast<std::uint64_t>(l);
    above_hi += static_cast<std::uint64_t>(h);
    if (l != 0 || a != 0) walk(buf, kBlock);
  }
  const std::size_t tail = n - i;
  std::memcpy(buf, x + i, tail * sizeof(float));
  for (std::size_t j = 0; j < tail; ++j) {
    const auto m = static_cast<std::int32_t>(magnitude<S>(buf[j]));
    above += m > ti ? 1 : 0;
    nonzero += m != 0 ? 1 : 0;
    above_lo += m > loi ? 1 : 0;
    above_hi += m > hii ? 1 : 0;
  }
  walk(buf, tail);
  if (band != nullptr) {
    kept.resize(kept_size);
    band->count_above = above_hi;
    band->nonzero_below = nonzero - above_lo;
  }
  return {above, nonzero - above, ExactMagnitudeSum::round_to_double(table)};
}

OctavReductions full_reduce(const float* x, std::size_t n, std::uint32_t t, Signedness sign,
                            Band* band) {
  if (n < kSmallGroup) return reduce_small(x, n, t, sign);
  return sign == Signedness::kSigned ? reduce_large<Signedness::kSigned>(x, n, t, band)
                                     : reduce_large<Signedness::kUnsigned>(x, n, t, band);
}

// The reductions from a band alone; with `narrowed`, also the band cut to (lo, hi].
OctavReductions band_reduce(const Band& b, std::uint32_t t, Band* narrowed) {
  std::uint64_t table[256];
  std::copy(std::begin(b.table_above), std::end(b.table_above), table);
  std::uint64_t above = b.count_above;
  std::uint64_t at_or_below = b.nonzero_below;
  for (const std::uint32_t m : b.bits) {  // band elements are all nonzero (m > lo >= 0)
    if (m > t) {
      ++above;
      table[m >> 23] += ExactMagnitudeSum::mantissa(m);
    } else {
      ++at_or_below;
    }
  }
  if (narrowed != nullptr) {
    narrowed->bits.clear();
    narrowed->nonzero_below = b.nonzero_below;
    narrowed->count_above = b.count_above;
    std::copy(std::begin(b.table_above), std::end(b.table_above), narrowed->table_above);
    for (const std::uint32_t m : b.bits) {
      if (m > narrowed->hi) {
        ++narrowed->count_above;
        narrowed->table_above[m >> 23] += ExactMagnitudeSum::mantissa(m);
      } else if (m > narrowed->lo) {
        narrowed->bits.push_back(m);
      } else {
        ++narrowed->nonzero_below;
      }
    }
  }
  return {above, at_or_below, ExactMagnitudeSum::round_to_double(table)};
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
  // Magnitudes are below 2^31, so signed int32 compares order them (and vectorise).
  std::int32_t max_m = 0;
  std::int32_t min_nz = 0x7fffffff;
  std::uint32_t special = 0;
  constexpr std::size_t kStatsBlock = 32;
  std::uint32_t buf[kStatsBlock];
  auto scan = [&](std::size_t len) {
    for (std::size_t j = 0; j < len; ++j) {
      special |= (buf[j] & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
      const auto m = static_cast<std::int32_t>(magnitude<S>(buf[j]));
      max_m = std::max(max_m, m);
      min_nz = std::min(min_nz, m == 0 ? 0x7fffffff : m);
    }
  };
  std::size_t i = 0;
  for (; i + kStatsBlock <= n; i += kStatsBlock) {
    std::memcpy(buf, x + i, sizeof buf);
    scan(kStatsBlock);
  }
  std::memcpy(buf, x + i, (n - i) * sizeof(float));
  scan(n - i);
  if (special != 0) throw_not_finite(x, n, group);
  GroupStats st;
  st.max_bits = static_cast<std::uint32_t>(max_m);
  if (max_m != 0) st.min_nonzero_bits = static_cast<std::uint32_t>(min_nz);
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
  ClipResult result;
  bool active = true;
  std::unique_ptr<Band> band;
  std::unique_ptr<Band> spare;
};

GroupRun start_group(const float* x, std::size_t n, const OctavOptions& o, std::size_t group) {
  GroupRun run;
  const GroupStats st = o.sign == Signedness::kSigned
                            ? group_stats<Signedness::kSigned>(x, n, group)
                            : group_stats<Signedness::kUnsigned>(x, n, group);
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
  }
  return run;
}

// Bands only pay off for large groups. A full pass at s keeps the magnitudes within
// kBandSpan * s of s; an iteration inside a band also cuts it down to kBandWidth times the
// last step around the new s once it holds more than kBandMinKeep elements.
constexpr double kBandSpan = 0.25;
constexpr double kBandWidth = 2.0;
constexpr std::size_t kBandMinKeep = 4096;

void set_band_edges(Band& b, double s, double half_width) {
  b.lo = octav_threshold_bits(std::max(0.0, s - half_width));
  b.hi = octav_threshold_bits(s + half_width);
}

void step_group(GroupRun& run, const float* x, std::size_t n, const OctavOptions& o) {
  const std::uint32_t t = octav_threshold_bits(run.s);
  OctavReductions r;
  if (run.band && run.band->holds(t)) {
    r = band_reduce(*run.band, t, nullptr);
  } else if (n >= kSmallGroup && run.s > 0.0) {
    if (!run.band) run.band = std::make_unique<Band>();
    set_band_edges(*run.band, run.s, kBandSpan * run.s);
    r = full_reduce(x, n, t, o.sign, run.band.get());
  } else {
    run.band.reset();
    r = full_reduce(x, n, t, o.sign, nullptr);
  }
  const double next = octav_update(r, o.bits, o.sign);
  ++run.result.iterations;
  const double change = std::fabs(next - run.s);
  const bool cycle = next == run.previous;  // alternating around one data magnitude
  const bool converged = cycle || next == run.s || change <= o.tolerance * next;
  run.result.clip = cycle ? std::min(next, run.s) : next;
  run.previous = run.s;
  run.s = next;
  if (converged || run.result.iterations >= o.max_iterations) {
    run.active = false;
    run.result.converged = converged;
    run.band.reset();
    run.spare.reset();
    return;
  }
  const std::uint32_t t_next = octav_threshold_bits(next);
  if (run.band && run.band->holds(t_next) && run.band->bits.size() > kBandMinKeep) {
    if (!run.spare) run.spare = std::make_unique<Band>();
    set_band_edges(*run.spare, next, kBandWidth * change);
    if (run.spare->lo >= run.band->lo && run.spare->hi <= run.band->hi) {
      (void)band_reduce(*run.band, t_next, run.spare.get());
      std::swap(run.band, run.spare);
    }
  }
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
  GroupRun run = start_group(x, n, opts, static_cast<std::size_t>(-1));
  while (run.active) step_group(run, x, n, opts);
  return run.result;
}

std::vector<ClipResult> octav(const GroupedTensor& t, const OctavOptions& opts) {
  check_options(opts);
  const std::size_t groups = t.group_count();
  std::vector<GroupRun> runs(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    runs[g] = start_group(t.group_data(g), t.group_size(g), opts,
                          groups > 1 ? g : static_cast<std::size_t>(-1));
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
