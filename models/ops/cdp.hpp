// NVDLA's CDP (cross-channel data processor): local response normalization over 3/5/7/9
// channels, bit-exact with NVDLA's integer pipeline:
//
//   x_cvt   = sat_N(round_half_away(((x - DATIN_OFFSET) * DATIN_SCALE) >> DATIN_SHIFTER))
//                                                        cdp_in_cvt, N = 9 (INT8) / 17 (INT16)
//   sqsum   = sum of x_cvt^2 over channels c-n/2 .. c+n/2 (channels outside 0..C-1 are 0)
//             (SQSUM_BYPASS: sqsum = x_cvt)
//   lut     = two-level LUT(sqsum)                         models/precision/lut.hpp
//   prod    = lut * x_cvt                                 (MUL_BYPASS: prod = lut)
//   y       = sat_M(round_half_away(((prod - DATOUT_OFFSET) * DATOUT_SCALE) >> DATOUT_SHIFTER))
//                                                        cdp_out_cvt, M = 8 / 16
//
// Widths (NVDLA cmod/hls/cdp_libs): INT8 uses the low 8 bits of DATIN_OFFSET and the low 25
// bits of DATOUT_OFFSET; INT16 the low 16 / all 32. D_OUT_SATURATION counts outputs whose
// floor-shifted value lies more than one step outside the output range (the HLS convertor's
// flag, see shift_right_round_saturate_hls).
//
// Data in memory is NVDLA's feature format (format.rst): 1x1xK atoms of memory_atomic_size
// bytes (K = atom/element size channels), W atoms per line, lines line_stride apart, surfaces
// of K channels surface_stride apart. Every lane of the last surface is computed and written:
// lanes beyond the channel count read as DATIN_OFFSET (so they convert to 0), as NVDLA does.
#pragma once

#include <cstdint>
#include <vector>

#include "models/ops/memory.hpp"
#include "models/precision/lut.hpp"

namespace octasim::models::ops {

enum class CdpPrecision : std::uint8_t { kInt8 = 0, kInt16 = 1 };

struct CdpConfig {
  CdpPrecision precision = CdpPrecision::kInt8;
  unsigned local_size = 3;          // D_LRN_CFG.NORMALZ_LEN: 3, 5, 7 or 9 channels
  bool sqsum_bypass = false;        // D_FUNC_BYPASS.SQSUM_BYPASS
  bool mul_bypass = false;          // D_FUNC_BYPASS.MUL_BYPASS
  std::int32_t datin_offset = 0;    // D_DATIN_OFFSET (16-bit register, sign-extended)
  std::int16_t datin_scale = 1;     // D_DATIN_SCALE
  std::uint8_t datin_shifter = 0;   // D_DATIN_SHIFTER, 0..31
  std::int32_t datout_offset = 0;   // D_DATOUT_OFFSET
  std::int16_t datout_scale = 1;    // D_DATOUT_SCALE
  std::uint8_t datout_shifter = 0;  // D_DATOUT_SHIFTER, 0..63
  LutConfig lut;
};

// The statistics registers of one CDP layer.
struct CdpStats {
  SaturationCounter out_saturation;  // D_OUT_SATURATION
  LutCounters lut;                   // D_PERF_LUT_*
  // D_NAN_INPUT_NUM, D_INF_INPUT_NUM, D_NAN_OUTPUT_NUM: FP16 only, 0 for integer layers.
  SaturationCounter nan_input, inf_input, nan_output;
};

// Bytes per element in memory.
[[nodiscard]] constexpr unsigned cdp_element_bytes(CdpPrecision p) {
  return p == CdpPrecision::kInt8 ? 1 : 2;
}

// cdp_in_cvt for one element (x is INT8 or INT16).
[[nodiscard]] std::int32_t cdp_in_cvt(const CdpConfig& cfg, std::int32_t x);
// The LUT input of channel c: the square sum of cvt[c - n/2 .. c + n/2] (indices outside
// 0..count-1 contribute 0), or cvt[c] itself under SQSUM_BYPASS.
[[nodiscard]] std::int64_t cdp_lut_input(const CdpConfig& cfg, const std::int32_t* cvt,
                                         unsigned count, unsigned c);
// LUT, multiplication and cdp_out_cvt for one element: `lut_input` from cdp_lut_input, `cvt`
// the element's converted input. Records LUT and saturation statistics.
[[nodiscard]] std::int32_t cdp_output(const CdpConfig& cfg, const LutTables& lut,
                                      std::int64_t lut_input, std::int32_t cvt, CdpStats& stats);
// cdp_out_cvt alone (value and HLS saturation flag).
[[nodiscard]] Saturated cdp_out_cvt(const CdpConfig& cfg, std::int64_t prod);

// One pixel: `raw` holds `lanes` elements (all surfaces' lanes of a 1x1 column), the first
// `channels` real; writes `lanes` outputs. `scratch` must hold `lanes` entries.
void cdp_pixel(const CdpConfig& cfg, const LutTables& lut, const std::int32_t* raw,
               unsigned channels, unsigned lanes, std::int32_t* out, std::int32_t* scratch,
               CdpStats& stats);

// One CDP layer between two memory surfaces (CDP_RDMA reads, CDP writes) as its registers give
// it: what run_cdp_layer computes (firmware::CdpLayer is the user's description of a layer, and
// firmware::cdp_model_params translates it to this).
struct CdpLayerParams {
  CdpConfig cfg;
  unsigned width = 1, height = 1, channels = 1;
  unsigned atom_bytes = 8;  // memory_atomic_size
  std::uint64_t src = 0, src_line_stride = 0, src_surface_stride = 0;
  std::uint64_t dst = 0, dst_line_stride = 0, dst_surface_stride = 0;
};

struct CdpLayerResult {
  CdpStats stats;
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
};

// Throws std::runtime_error (one line) for a layer the model cannot run (bad geometry).
[[nodiscard]] CdpLayerResult run_cdp_layer(const CdpLayerParams& layer, const LutTables& lut,
                                           Memory& mem);

}  // namespace octasim::models::ops
