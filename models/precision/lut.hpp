// NVDLA's two-level hybrid lookup table (lut-programming.rst): an LE table of 65 entries
// (exponent or linear mode) and an LO table of 257 entries (linear), each with its own start,
// end, index select and under/overflow extrapolation, and priority rules that pick one result
// when both tables hit or both miss.
//
// Widths. The lookup input x is the integer the unit feeds its LUT, as a signed value of at
// most 38 bits: CDP INT8 feeds the 22-bit square sum (or the 9-bit converted input when the
// square sum is bypassed), CDP INT16 the 38-bit square sum (17-bit input when bypassed).
// LUT_*_START/END are 38-bit signed (LOW 32 bits + HIGH 6 bits). Table entries are INT16.
// Interpolation products are held in 56 bits (saturating), the result is saturated to INT16.
//
// These are the integer rules of NVDLA's CDP (cmod/cdp lookup_lut*). NVDLA's SDP uses the same
// tables, registers and priority rules but its own index widths (35-bit fraction, overflow at
// the last entry) and interpolation (cmod/hls/sdp/sdp_y_idx.cpp, sdp_y_inp.cpp); the SDP keeps
// those in models/ops/sdp_lut.
// The table contents come from the register file's S_LUT_ACCESS_CFG/DATA port
// (sim/core/lut_tables.hpp holds them as raw 16-bit words).
#pragma once

#include <array>
#include <cstdint>

#include "models/precision/convertor.hpp"

namespace octasim::models {

inline constexpr unsigned kLutLeEntries = 65;
inline constexpr unsigned kLutLoEntries = 257;

// The S_LUT_CFG *_PRIORITY fields: 0 selects LE, 1 selects LO.
enum class LutTableId : std::uint8_t { kLe = 0, kLo = 1 };
// S_LUT_CFG.LUT_LE_FUNCTION.
enum class LutLeFunction : std::uint8_t { kExponent = 0, kLinear = 1 };

struct LutTables {
  std::array<std::int16_t, kLutLeEntries> le{};
  std::array<std::int16_t, kLutLoEntries> lo{};
};

// The S_LUT_* registers, decoded to plain signed values (decode with lut_start_end and
// sign_extend from int_width.hpp).
struct LutConfig {
  LutLeFunction le_function = LutLeFunction::kExponent;
  LutTableId uflow_priority = LutTableId::kLe;   // both tables underflow
  LutTableId oflow_priority = LutTableId::kLe;   // both tables overflow
  LutTableId hybrid_priority = LutTableId::kLe;  // both hit, or one under- and one overflows
  // Exponent mode: LE[i] samples x = le_start + 2^(i + le_index_offset). INT8.
  std::int32_t le_index_offset = 0;
  // Linear mode: index = (x - start) >> index_select (a negative select shifts left).
  std::int32_t le_index_select = 0;
  std::int32_t lo_index_select = 0;
  std::int64_t le_start = 0, le_end = 0, lo_start = 0, lo_end = 0;  // 38-bit signed
  // Out-of-range extrapolation: LUT[0] + (x - START) * SCALE * 2^-SHIFT (underflow),
  // LUT[N] + (x - END) * SCALE * 2^-SHIFT (overflow). SHIFT is 5-bit signed.
  std::int16_t le_slope_uflow_scale = 0, le_slope_oflow_scale = 0;
  std::int16_t lo_slope_uflow_scale = 0, lo_slope_oflow_scale = 0;
  std::int32_t le_slope_uflow_shift = 0, le_slope_oflow_shift = 0;
  std::int32_t lo_slope_uflow_shift = 0, lo_slope_oflow_shift = 0;
};

// A 38-bit LUT_*_START/END register pair (LOW 32 bits, HIGH 6 bits) as a signed value.
[[nodiscard]] std::int64_t lut_start_end(std::uint32_t low, std::uint32_t high);

enum class LutHit : std::uint8_t { kHit, kUnderflow, kOverflow };

// One table's answer for one input.
struct LutTableResult {
  std::int16_t value;
  LutHit hit;
  friend bool operator==(const LutTableResult& a, const LutTableResult& b) {
    return a.value == b.value && a.hit == b.hit;
  }
};

// Which statistic a lookup counts toward (D_PERF_LUT_*): exactly one per input.
enum class LutOutcome : std::uint8_t {
  kLeHit,      // only LE hit                     -> D_PERF_LUT_LE_HIT
  kLoHit,      // only LO hit                     -> D_PERF_LUT_LO_HIT
  kUnderflow,  // both underflow                  -> D_PERF_LUT_UFLOW
  kOverflow,   // both overflow                   -> D_PERF_LUT_OFLOW
  kHybrid,     // both hit, or one under one over -> D_PERF_LUT_HYBRID
};

struct LutResult {
  std::int16_t value;
  LutOutcome outcome;
  friend bool operator==(const LutResult& a, const LutResult& b) {
    return a.value == b.value && a.outcome == b.outcome;
  }
};

// LE table lookup (exponent or linear per cfg.le_function). Exponent mode: d = x - le_start;
// d <= 0 or floor(log2 d) < le_index_offset underflows; index = floor(log2 d) - offset;
// index >= 64 overflows; otherwise the fraction (d - 2^log) / 2^log kept to 16 bits
// (truncated) interpolates LE[index]..LE[index+1]. Underflow extrapolates from
// le_start + 2^le_index_offset (from le_start when the offset is negative).
[[nodiscard]] LutTableResult lut_le_lookup(const LutConfig& cfg, const LutTables& t,
                                           std::int64_t x);
// LO table lookup (linear).
[[nodiscard]] LutTableResult lut_lo_lookup(const LutConfig& cfg, const LutTables& t,
                                           std::int64_t x);
// The priority rules of both tables' answers.
[[nodiscard]] LutResult lut_select(const LutConfig& cfg, const LutTableResult& le,
                                   const LutTableResult& lo);
// lut_select(lut_le_lookup(x), lut_lo_lookup(x)).
[[nodiscard]] LutResult lut_lookup(const LutConfig& cfg, const LutTables& t, std::int64_t x);

// FP16 pipeline (CDP D_DATA_FORMAT = FP16; lut-programming.rst, NVDLA's C model cmod/cdp HLS):
// the lookup input x is an FP32 number (CDP's square sum), the table entries and the slope
// scales are FP16 bit patterns, START/END are FP32 numbers held in the low 32 bits of their
// registers (the HIGH bits are ignored), the slope shifts are unused, and the result is FP32.
// NVDLA computes the interpolation and extrapolation in its "FP17" format (11 significant
// bits), whose rounding is not documented; octasim's defined order keeps FP32 throughout, every
// step below rounded once to FP32, to nearest even (fp32(.)):
//   d = fp32(x - START); d <= 0 or NaN underflows.
//   Exponent mode (LE): e = the biased exponent field of d minus 127 (floor(log2 d) for normal
//     d), index = e - LE_INDEX_OFFSET, fraction = the top 16 mantissa bits of d (bits 22..7);
//     index < 0 underflows, index >= 64 overflows (an infinite d too).
//   Linear mode: t = d * 2^-INDEX_SELECT (INDEX_SELECT is 8-bit signed at FP16), t >= N - 1
//     (64 for LE, 256 for LO) overflows, index = floor(t), fraction = floor((t - index) * 2^16).
//   Hit:       LUT[index] + fp32(fp32(LUT[index+1] - LUT[index]) * fraction * 2^-16).
//   Underflow: LUT[0] + fp32(fp32(x - B) * UFLOW_SCALE), B = START + 2^LE_INDEX_OFFSET in
//              exponent mode (START alone for an offset <= -127), START in linear mode.
//   Overflow:  LUT[N-1] + fp32(fp32(x - END) * OFLOW_SCALE).
//   A zero slope scale adds nothing (so an infinite or NaN x extrapolates to the entry itself,
//   not to NaN); otherwise IEEE rules hold (a NaN slope or x - B gives NaN).
// The priority rules and statistics are the integer ones (lut_select).
struct LutFp16TableResult {
  float value;
  LutHit hit;
};
struct LutFp16Result {
  float value;
  LutOutcome outcome;
};
// A START/END register value (lut_start_end) as the FP32 number of its low 32 bits.
[[nodiscard]] float lut_fp32_register(std::int64_t reg);
[[nodiscard]] LutFp16TableResult lut_le_lookup_fp16(const LutConfig& cfg, const LutTables& t,
                                                    float x);
[[nodiscard]] LutFp16TableResult lut_lo_lookup_fp16(const LutConfig& cfg, const LutTables& t,
                                                    float x);
// Both tables and the priority rules.
[[nodiscard]] LutFp16Result lut_lookup_fp16(const LutConfig& cfg, const LutTables& t, float x);

// The five D_PERF_LUT_* statistics of one layer (32-bit, sticky at the maximum).
struct LutCounters {
  SaturationCounter uflow, oflow, hybrid, le_hit, lo_hit;
  void record(LutOutcome o) {
    uflow.record(o == LutOutcome::kUnderflow);
    oflow.record(o == LutOutcome::kOverflow);
    hybrid.record(o == LutOutcome::kHybrid);
    le_hit.record(o == LutOutcome::kLeHit);
    lo_hit.record(o == LutOutcome::kLoHit);
  }
};

}  // namespace octasim::models
