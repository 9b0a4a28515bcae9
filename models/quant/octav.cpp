#include "models/quant/octav.hpp"

#include <algorithm>
#include <cmath>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "models/quant/octav_engine.hpp"

namespace octasim::models {
namespace octav_engine {
namespace {

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

// SplitMix64: a fixed, portable generator for the kRandom initial guess.
std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

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

// The update after the reductions at run.s: the next iterate, the convergence test (with the
// 2-cycle rule) and the range later iterates are expected in. False when the group stops.
bool advance(GroupRun& run, const OctavReductions& r, const OctavOptions& o) {
  const double next = octav_update(r, o.bits, o.sign);
  ++run.result.iterations;
  const double change = std::fabs(next - run.s);
  const OctavConvergence c = octav_convergence(run.previous, run.s, next, o.tolerance);
  run.result.clip = c.clip;
  if (c.converged || run.result.iterations >= o.max_iterations) {
    run.active = false;
    run.result.converged = c.converged;
    run.band = nullptr;
    return false;
  }
  run.want_lo = next >= run.s ? run.s : next;
  run.want_hi = next >= run.s ? next + kReach * change : run.s;
  run.previous = run.s;
  run.s = next;
  return true;
}

void aim_band(GroupRun& run) {
  const bool have_range = run.want_hi > run.want_lo;
  run.band->lo = octav_threshold_bits(have_range ? run.want_lo : (1.0 - kBandBelow) * run.s);
  run.band->hi = octav_threshold_bits(have_range ? run.want_hi : (1.0 + kBandAbove) * run.s);
}

void narrow_to_expected(GroupRun& run) {
  if (run.band->size <= kBandMinKeep) return;
  const std::uint32_t lo = std::max(run.band->lo, octav_threshold_bits(run.want_lo));
  const std::uint32_t hi = std::min(run.band->hi, octav_threshold_bits(run.want_hi));
  const std::uint32_t t_next = octav_threshold_bits(run.s);
  if (lo <= t_next && t_next <= hi && (lo > run.band->lo || hi < run.band->hi)) {
    narrow_band(*run.band, lo, hi);
  }
}

namespace {

// `group` numbers the group for the random initial guess and error messages (kNoGroup: a
// lone group, numbered 0 and not named in messages).
constexpr std::size_t kNoGroup = static_cast<std::size_t>(-1);

GroupRun start_group(const float* x, std::size_t n, const OctavOptions& o, std::size_t group) {
  return start_from_stats(o.sign == Signedness::kSigned
                              ? group_stats<Signedness::kSigned>(x, n, group)
                              : group_stats<Signedness::kUnsigned>(x, n, group),
                          o, group == kNoGroup ? 0 : group);
}

void step_group(GroupRun& run, const float* x, std::size_t n, const OctavOptions& o) {
  const std::uint32_t t = octav_threshold_bits(run.s);
  OctavReductions r;
  if (run.band && run.band->holds(t)) {
    r = band_reduce(*run.band, t);
  } else if (run.spare != nullptr && run.s > 0.0) {
    run.band = run.spare;
    aim_band(run);
    r = full_reduce(x, n, t, o.sign, run.band, run.max_bits);
  } else {
    r = full_reduce(x, n, t, o.sign, nullptr, run.max_bits);
  }
  if (!advance(run, r, o)) return;
  if (run.band) narrow_to_expected(run);
}

// The column engine keeps a 256-entry table per column and 32-bit counts per column.
bool use_columns(const GroupedTensor& t) {
  return t.has_columns() && t.columns().columns <= 4096 && t.columns().rows >= 64 &&
         t.columns().rows < (std::size_t{1} << 32);
}

}  // namespace
}  // namespace octav_engine

using namespace octav_engine;

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
    return octav_columns(t.columns(), opts);
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
