// The machinery behind octav() (models/quant/octav.hpp), shared by its files: the exact
// reductions over a whole group or over a band of it (octav_reduce.cpp), the per-group
// Newton-Raphson state and step (octav.cpp) and the per-column engine (octav_columns.cpp).
// Internal to models/quant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "models/numerics/bit_cast.hpp"
#include "models/quant/grouping.hpp"
#include "models/quant/octav.hpp"

namespace octasim::models::octav_engine {

[[nodiscard]] inline std::uint32_t bits_of(float f) {
  return bit_cast<std::uint32_t>(f);
}
[[nodiscard]] inline float float_of(std::uint32_t b) {
  return bit_cast<float>(b);
}

// Groups below this size use one table with a touched-exponent range (cheap to clear);
// larger ones use four tables in rotation so consecutive adds do not wait on each other.
constexpr std::size_t kSmallGroup = 2048;

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

// Exact sums in four tables used in rotation (lane j goes to table j % 4): clears [lo, hi].
void zero_tables(std::uint64_t (*tables)[256], int lo, int hi);

// One full pass at threshold t (max_bits bounds the magnitudes); with `band` (whose
// lo <= t <= hi) the band is refilled in the same pass.
[[nodiscard]] OctavReductions full_reduce(const float* x, std::size_t n, std::uint32_t t,
                                          Signedness sign, Band* band,
                                          std::uint32_t max_bits = 0x7f7fffffu);
// The reductions from a band alone.
[[nodiscard]] OctavReductions band_reduce(const Band& b, std::uint32_t t);
// Cuts b down to the edges [lo, hi] (within its own), in place.
void narrow_band(Band& b, std::uint32_t lo, std::uint32_t hi);

struct GroupStats {
  std::uint32_t max_bits = 0;
  std::uint32_t min_nonzero_bits = 0xffffffffu;
};

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

// The first state of a group with these magnitude statistics; `group` seeds the random initial
// guess.
[[nodiscard]] GroupRun start_from_stats(const GroupStats& st, const OctavOptions& o,
                                        std::size_t group);
// The update after the reductions at run.s: the next iterate, the convergence test (with the
// 2-cycle rule) and the range later iterates are expected in. False when the group stops.
[[nodiscard]] bool advance(GroupRun& run, const OctavReductions& r, const OctavOptions& o);
// Sets the edges of run.band (about to be refilled by a full pass) around where the next iterates
// are expected, or around run.s before the first step.
void aim_band(GroupRun& run);
// After a step, cuts a band holding more than kBandMinKeep elements down to the expected range
// when the next threshold is inside it.
void narrow_to_expected(GroupRun& run);

// OCTAV on the columns of a [rows, columns] matrix (per channel on the last axis).
[[nodiscard]] std::vector<ClipResult> octav_columns(const ColumnView& v, const OctavOptions& o);

}  // namespace octasim::models::octav_engine
