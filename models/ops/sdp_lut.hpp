// The SDP's two-level LUT (LE: 65 entries, exponent or linear index; LO: 257 entries, linear
// index) on the integer pipeline, as NVDLA's RTL/C-model computes it (lut-programming.rst; the
// C-model's sdp_y_idx / sdp_y_inp for the exact widths): index and 35-bit fraction per table,
// under/overflow, the table chosen by the priority fields, then linear interpolation between two
// entries or, outside the tables, extrapolation from the start/end point with the slope
// scale/shift.
//
// This is the SDP's own LUT adapter; the CDP shares the table layout (models/precision/lut*)
// but NVDLA's SDP LUT datapath has its own widths, kept here behind sdp_lut_lookup().
#pragma once

#include <array>
#include <cstdint>

namespace octasim::models::ops {

struct SdpLutConfig {
  bool le_linear = false;           // S_LUT_CFG.LUT_LE_FUNCTION: exponent (false) or linear
  bool uflow_priority_lo = false;   // LUT_UFLOW_PRIORITY: LE (false) or LO
  bool oflow_priority_lo = false;   // LUT_OFLOW_PRIORITY
  bool hybrid_priority_lo = false;  // LUT_HYBRID_PRIORITY
  std::int8_t le_index_offset = 0;  // S_LUT_INFO, signed 8-bit fields
  std::int8_t le_index_select = 0;
  std::int8_t lo_index_select = 0;
  std::int32_t le_start = 0, le_end = 0, lo_start = 0, lo_end = 0;
  std::int16_t le_uflow_scale = 0, le_oflow_scale = 0, lo_uflow_scale = 0, lo_oflow_scale = 0;
  std::int8_t le_uflow_shift = 0, le_oflow_shift = 0;  // signed 5-bit, sign-extended
  std::int8_t lo_uflow_shift = 0, lo_oflow_shift = 0;
  std::array<std::int16_t, 65> le{};
  std::array<std::int16_t, 257> lo{};
};

inline constexpr unsigned kSdpLutLeEntries = 65;
inline constexpr unsigned kSdpLutLoEntries = 257;
inline constexpr unsigned kSdpLutFractionBits = 35;

// One table's index computation.
struct SdpLutIndex {
  bool uflow = false;
  bool oflow = false;
  unsigned index = 0;          // 0 on underflow, entries - 1 on overflow
  std::uint64_t fraction = 0;  // position between index and index + 1, in 2^-35 units
  [[nodiscard]] bool hit() const { return !uflow && !oflow; }
};

// LE table in exponent mode: index = floor(log2(x - start)) - index_offset.
[[nodiscard]] SdpLutIndex sdp_lut_exponent_index(std::int32_t x, std::int32_t start,
                                                 std::int8_t index_offset);
// Linear table (LE in linear mode, LO): index = (x - start) >> index_select.
[[nodiscard]] SdpLutIndex sdp_lut_linear_index(std::int32_t x, std::int32_t start,
                                               std::int8_t index_select, unsigned entries);

// The result of one lookup and the events NVDLA's LUT counters count.
struct SdpLutResult {
  std::int32_t value = 0;
  bool uflow = false;   // the chosen table underflowed (D_PERF_LUT_UFLOW)
  bool oflow = false;   // the chosen table overflowed (D_PERF_LUT_OFLOW)
  bool le_hit = false;  // LE in range (D_PERF_LUT_LE_HIT)
  bool lo_hit = false;  // LO in range (D_PERF_LUT_LO_HIT)
  // D_PERF_LUT_HYBRID counts lookups whose chosen table is in range (NVDLA's RTL and C-model
  // count !(uflow | oflow) of the chosen result).
  [[nodiscard]] bool hybrid() const { return !uflow && !oflow; }
};

[[nodiscard]] SdpLutResult sdp_lut_lookup(const SdpLutConfig& lut, std::int32_t x);

}  // namespace octasim::models::ops
