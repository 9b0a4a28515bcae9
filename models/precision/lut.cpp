#include "models/precision/lut.hpp"

#include "models/precision/int_width.hpp"

namespace octasim::models {

namespace {

// Width of the interpolation/extrapolation products (cmod/cdp INTERP_INTERMIDIATE_BITS).
constexpr unsigned kInterpBits = 56;
// Fraction bits kept between two table entries.
constexpr unsigned kFractionBits = 16;

std::int16_t saturate_int16(int128_t v) {
  return static_cast<std::int16_t>(saturate_bits(v, 16).value);
}

// LUT[i] + round_half_away((LUT[i+1] - LUT[i]) * fraction / 2^16), saturated to INT16.
std::int16_t interpolate(std::int16_t y0, std::int16_t y1, std::int64_t fraction) {
  const int128_t delta = (int128_t{y1} - y0) * fraction;
  return saturate_int16(int128_t{y0} + scale_pow2_saturate(delta, kFractionBits, kInterpBits));
}

// base + round_half_away(dx * scale * 2^-shift), the product held in 56 bits.
std::int16_t extrapolate(std::int16_t base, int128_t dx, std::int16_t scale, int shift) {
  return saturate_int16(int128_t{base} + scale_pow2_saturate(dx * scale, shift, kInterpBits));
}

// floor(log2(v)) for v > 0.
int floor_log2(std::uint64_t v) {
  return 63 - __builtin_clzll(v);
}

// The 16-bit fraction of a distance d > 0 below 2^bits (bits > 0): d / 2^bits, truncated.
std::int64_t fraction16(std::uint64_t d, int bits) {
  if (bits > static_cast<int>(kFractionBits)) {
    return static_cast<std::int64_t>(d >> (bits - static_cast<int>(kFractionBits)));
  }
  return static_cast<std::int64_t>(d << (static_cast<int>(kFractionBits) - bits));
}

template <std::size_t N>
LutTableResult linear_lookup(const std::array<std::int16_t, N>& table, std::int64_t start,
                             std::int64_t end, std::int32_t select, std::int16_t uflow_scale,
                             std::int32_t uflow_shift, std::int16_t oflow_scale,
                             std::int32_t oflow_shift, std::int64_t x) {
  constexpr std::uint64_t kLast = N - 1;
  const int128_t d = int128_t{x} - start;
  if (d <= 0) {
    return {extrapolate(table[0], d, uflow_scale, uflow_shift), LutHit::kUnderflow};
  }
  const auto ud = static_cast<std::uint64_t>(d);  // 0 < d < 2^39
  std::uint64_t index;
  if (select >= 0) {
    index = select >= 63 ? 0 : ud >> select;
  } else {
    // A left shift of 9 or more moves every d >= 1 past the last entry (N - 1 <= 256).
    index = -select >= 9 ? kLast : ud << -select;
  }
  if (index >= kLast) {
    return {extrapolate(table[kLast], int128_t{x} - end, oflow_scale, oflow_shift),
            LutHit::kOverflow};
  }
  std::int64_t fraction = 0;
  if (select > 0) {
    const std::uint64_t rem = select >= 63 ? ud : ud & ((std::uint64_t{1} << select) - 1);
    fraction = fraction16(rem, select);
  }
  return {interpolate(table[index], table[index + 1], fraction), LutHit::kHit};
}

}  // namespace

std::int64_t lut_start_end(std::uint32_t low, std::uint32_t high) {
  return sign_extend((std::uint64_t{high} << 32) | low, 38);
}

LutTableResult lut_le_lookup(const LutConfig& cfg, const LutTables& t, std::int64_t x) {
  if (cfg.le_function == LutLeFunction::kLinear) {
    return linear_lookup(t.le, cfg.le_start, cfg.le_end, cfg.le_index_select,
                         cfg.le_slope_uflow_scale, cfg.le_slope_uflow_shift,
                         cfg.le_slope_oflow_scale, cfg.le_slope_oflow_shift, x);
  }
  const int128_t d = int128_t{x} - cfg.le_start;
  const int log = d > 0 ? floor_log2(static_cast<std::uint64_t>(d)) : 0;
  const int index = log - cfg.le_index_offset;
  if (d <= 0 || index < 0) {
    // LE[0] samples le_start + 2^offset; beyond 2^62 the product saturates either way.
    const int off = cfg.le_index_offset;
    const int128_t first = off < 0 ? 0 : (int128_t{1} << (off > 62 ? 62 : off));
    return {extrapolate(t.le[0], d - first, cfg.le_slope_uflow_scale, cfg.le_slope_uflow_shift),
            LutHit::kUnderflow};
  }
  if (index >= static_cast<int>(kLutLeEntries) - 1) {
    return {extrapolate(t.le[kLutLeEntries - 1], int128_t{x} - cfg.le_end, cfg.le_slope_oflow_scale,
                        cfg.le_slope_oflow_shift),
            LutHit::kOverflow};
  }
  const auto ud = static_cast<std::uint64_t>(d);
  const std::uint64_t above = ud - (std::uint64_t{1} << log);
  const std::int64_t fraction = log == 0 ? 0 : fraction16(above, log);
  return {interpolate(t.le[static_cast<std::size_t>(index)],
                      t.le[static_cast<std::size_t>(index) + 1], fraction),
          LutHit::kHit};
}

LutTableResult lut_lo_lookup(const LutConfig& cfg, const LutTables& t, std::int64_t x) {
  return linear_lookup(t.lo, cfg.lo_start, cfg.lo_end, cfg.lo_index_select,
                       cfg.lo_slope_uflow_scale, cfg.lo_slope_uflow_shift, cfg.lo_slope_oflow_scale,
                       cfg.lo_slope_oflow_shift, x);
}

LutResult lut_select(const LutConfig& cfg, const LutTableResult& le, const LutTableResult& lo) {
  const auto pick = [&](LutTableId id) { return id == LutTableId::kLo ? lo.value : le.value; };
  if (le.hit == LutHit::kUnderflow && lo.hit == LutHit::kUnderflow) {
    return {pick(cfg.uflow_priority), LutOutcome::kUnderflow};
  }
  if (le.hit == LutHit::kOverflow && lo.hit == LutHit::kOverflow) {
    return {pick(cfg.oflow_priority), LutOutcome::kOverflow};
  }
  const bool le_hit = le.hit == LutHit::kHit;
  const bool lo_hit = lo.hit == LutHit::kHit;
  if (le_hit != lo_hit) {
    return le_hit ? LutResult{le.value, LutOutcome::kLeHit}
                  : LutResult{lo.value, LutOutcome::kLoHit};
  }
  return {pick(cfg.hybrid_priority), LutOutcome::kHybrid};
}

LutResult lut_lookup(const LutConfig& cfg, const LutTables& t, std::int64_t x) {
  return lut_select(cfg, lut_le_lookup(cfg, t, x), lut_lo_lookup(cfg, t, x));
}

}  // namespace octasim::models
