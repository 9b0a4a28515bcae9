#include "models/precision/lut.hpp"

#include <cmath>

#include "models/numerics/float_format.hpp"
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

// Which table's answer the priority rules take, and the statistic the lookup counts toward.
struct Selection {
  LutTableId table;
  LutOutcome outcome;
};

Selection select_table(const LutConfig& cfg, LutHit le, LutHit lo) {
  if (le == LutHit::kUnderflow && lo == LutHit::kUnderflow) {
    return {cfg.uflow_priority, LutOutcome::kUnderflow};
  }
  if (le == LutHit::kOverflow && lo == LutHit::kOverflow) {
    return {cfg.oflow_priority, LutOutcome::kOverflow};
  }
  const bool le_hit = le == LutHit::kHit;
  const bool lo_hit = lo == LutHit::kHit;
  if (le_hit != lo_hit) {
    return le_hit ? Selection{LutTableId::kLe, LutOutcome::kLeHit}
                  : Selection{LutTableId::kLo, LutOutcome::kLoHit};
  }
  return {cfg.hybrid_priority, LutOutcome::kHybrid};
}

// FP16 pipeline helpers. Every operation is done in double and rounded once to float: for
// +, -, * of floats double has enough bits (53 >= 2 * 24 + 2) that this equals the IEEE FP32
// operation rounded to nearest even, and no compiler contraction can fuse across the casts.
float fp32_add(float a, float b) {
  return static_cast<float>(static_cast<double>(a) + static_cast<double>(b));
}
float fp32_sub(float a, float b) {
  return static_cast<float>(static_cast<double>(a) - static_cast<double>(b));
}
float fp32_mul(float a, float b) {
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b));
}

float fp16_entry(std::int16_t e) {
  return fp16_to_float(static_cast<std::uint16_t>(e));
}

// base + fp32(dx * slope); a zero slope adds nothing.
float extrapolate_fp16(float base, float dx, std::int16_t slope) {
  const float s = fp16_entry(slope);
  if (s == 0.0f) return base;
  return fp32_add(base, fp32_mul(dx, s));
}

// LUT[i] + fp32(fp32(LUT[i+1] - LUT[i]) * fraction * 2^-16).
float interpolate_fp16(std::int16_t e0, std::int16_t e1, std::uint32_t fraction16) {
  const float y0 = fp16_entry(e0);
  const float step = fp32_sub(fp16_entry(e1), y0);
  return fp32_add(y0, fp32_mul(step, std::ldexp(static_cast<float>(fraction16), -16)));
}

template <std::size_t N>
LutFp16TableResult linear_lookup_fp16(const std::array<std::int16_t, N>& table, float start,
                                      float end, std::int32_t select, std::int16_t uflow_scale,
                                      std::int16_t oflow_scale, float x) {
  constexpr std::size_t kLast = N - 1;
  const float d = fp32_sub(x, start);
  if (!(d > 0.0f)) {
    return {extrapolate_fp16(fp16_entry(table[0]), d, uflow_scale), LutHit::kUnderflow};
  }
  const float t = std::ldexp(d, -select);
  if (!(t < static_cast<float>(kLast))) {
    return {extrapolate_fp16(fp16_entry(table[kLast]), fp32_sub(x, end), oflow_scale),
            LutHit::kOverflow};
  }
  const float whole = std::floor(t);
  const auto index = static_cast<std::size_t>(whole);
  const auto fraction = static_cast<std::uint32_t>(std::floor((t - whole) * 65536.0f));
  return {interpolate_fp16(table[index], table[index + 1], fraction), LutHit::kHit};
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
  const Selection sel = select_table(cfg, le.hit, lo.hit);
  return {sel.table == LutTableId::kLo ? lo.value : le.value, sel.outcome};
}

LutResult lut_lookup(const LutConfig& cfg, const LutTables& t, std::int64_t x) {
  return lut_select(cfg, lut_le_lookup(cfg, t, x), lut_lo_lookup(cfg, t, x));
}

float lut_fp32_register(std::int64_t reg) {
  return fp32_from_bits(static_cast<std::uint32_t>(static_cast<std::uint64_t>(reg) & 0xffffffffu));
}

LutFp16TableResult lut_le_lookup_fp16(const LutConfig& cfg, const LutTables& t, float x) {
  const float start = lut_fp32_register(cfg.le_start);
  const float end = lut_fp32_register(cfg.le_end);
  if (cfg.le_function == LutLeFunction::kLinear) {
    return linear_lookup_fp16(t.le, start, end, cfg.le_index_select, cfg.le_slope_uflow_scale,
                              cfg.le_slope_oflow_scale, x);
  }
  constexpr int kLast = static_cast<int>(kLutLeEntries) - 1;
  const float d = fp32_sub(x, start);
  const std::uint32_t bits = fp32_to_bits(d);
  const int index = static_cast<int>((bits >> 23) & 0xffu) - 127 - cfg.le_index_offset;
  if (!(d > 0.0f) || index < 0) {
    const float first = cfg.le_index_offset <= -127
                            ? start
                            : fp32_add(start, std::ldexp(1.0f, cfg.le_index_offset));
    return {extrapolate_fp16(fp16_entry(t.le[0]), fp32_sub(x, first), cfg.le_slope_uflow_scale),
            LutHit::kUnderflow};
  }
  if (index >= kLast || std::isinf(d)) {
    return {extrapolate_fp16(fp16_entry(t.le[kLast]), fp32_sub(x, end), cfg.le_slope_oflow_scale),
            LutHit::kOverflow};
  }
  const auto i = static_cast<std::size_t>(index);
  return {interpolate_fp16(t.le[i], t.le[i + 1], (bits >> 7) & 0xffffu), LutHit::kHit};
}

LutFp16TableResult lut_lo_lookup_fp16(const LutConfig& cfg, const LutTables& t, float x) {
  return linear_lookup_fp16(t.lo, lut_fp32_register(cfg.lo_start), lut_fp32_register(cfg.lo_end),
                            cfg.lo_index_select, cfg.lo_slope_uflow_scale, cfg.lo_slope_oflow_scale,
                            x);
}

LutFp16Result lut_lookup_fp16(const LutConfig& cfg, const LutTables& t, float x) {
  const LutFp16TableResult le = lut_le_lookup_fp16(cfg, t, x);
  const LutFp16TableResult lo = lut_lo_lookup_fp16(cfg, t, x);
  const Selection sel = select_table(cfg, le.hit, lo.hit);
  return {sel.table == LutTableId::kLo ? lo.value : le.value, sel.outcome};
}

}  // namespace octasim::models
