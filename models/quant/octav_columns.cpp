// OCTAV per channel on the last axis: the groups are the columns of a [rows, columns] matrix.
#include <algorithm>
#include <cstddef>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdexcept>
#include <string>
#include <vector>

#include "models/quant/exact_sum.hpp"
#include "models/quant/octav_engine.hpp"

namespace octasim::models::octav_engine {
namespace {

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
        narrow_to_expected(run);
        continue;
      }
      full[c] = 1;
      need_pass = true;
      aim_band(run);
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

}  // namespace

std::vector<ClipResult> octav_columns(const ColumnView& v, const OctavOptions& o) {
  return o.sign == Signedness::kSigned ? octav_columns<Signedness::kSigned>(v, o)
                                       : octav_columns<Signedness::kUnsigned>(v, o);
}

}  // namespace octasim::models::octav_engine
