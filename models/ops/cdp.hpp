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
// FP16 (D_DATA_FORMAT = FP16; elements are FP16 bit patterns). What NVDLA does (precision.rst
// "CDP convertors", lut-programming.rst, NVDLA's C model cmod/cdp and its HLS float library):
// cdp_in_cvt and cdp_out_cvt are bypassed (the DATIN_*/DATOUT_* registers are ignored), each
// element is squared in FP32, the window is summed in FP32 in a fixed tree order (below), the
// LUT is looked up with the FP32 square sum (FP16 entries, FP32 START/END), and the LUT result
// multiplies the element in NVDLA's FP17 (11 significant bits) before conversion to FP16.
// NVDLA's golden rule for CDP FP16 is (|a-b| <= 0.0001) && (|a-b| / max_value <= 0.001)
// (models/precision/thresholds.hpp), max_value the largest element of the square-sum window.
//
// octasim's defined FP16 order (every fp32(.) one rounding to nearest even):
//   x       = the FP16 element; D_NAN_FLUSH_TO_ZERO turns a NaN into +0 first. Lanes beyond the
//             channel count, and channels outside the cube, are +0.
//   sq[j]   = x[j]^2 in FP32 (exact: 22 significant bits).
//   sqsum   = NVDLA's order: s = fp32(fp32(sq[c-1] + sq[c+1]) + sq[c]), then for r = 2 .. n/2
//             s = fp32(s + fp32(sq[c-r] + sq[c+r]))     (SQSUM_BYPASS: sqsum = x)
//   lut     = lut_lookup_fp16(sqsum)                     models/precision/lut.hpp (FP32)
//   y       = x * lut rounded once to FP16, to nearest even (the exact product; IEEE overflow to
//             infinity, counted by D_OUT_SATURATION)    (MUL_BYPASS: y = lut rounded to FP16,
//             or NaN when x is NaN, as NVDLA passes x through)
//   A NaN y is written as the quiet NaN 0x7e00 (0xfe00 when its sign bit is set).
// Where this differs from NVDLA: the LUT interpolation/extrapolation and the final multiply
// keep FP32 and an exact product with one rounding, where NVDLA rounds to FP17 (11 significant
// bits) after each step; the square sum is NVDLA's order exactly.
// Statistics: D_NAN_INPUT_NUM / D_INF_INPUT_NUM count every element of every atom CDP_RDMA
// reads (padding lanes included), before any flush; D_NAN_OUTPUT_NUM every element written; the
// LUT statistics as for integers.
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

enum class CdpPrecision : std::uint8_t { kInt8 = 0, kInt16 = 1, kFp16 = 2 };

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
  bool nan_to_zero = false;         // D_NAN_FLUSH_TO_ZERO (FP16): input NaNs become +0
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

// FP16: the LUT input of channel c (x holds `count` elements as floats, NaNs already flushed
// if D_NAN_FLUSH_TO_ZERO): NVDLA's FP32 square-sum order, or x[c] under SQSUM_BYPASS.
[[nodiscard]] float cdp_lut_input_fp16(const CdpConfig& cfg, const float* x, unsigned count,
                                       unsigned c);
// FP16: LUT, multiplication and the FP16 rounding for one element (its FP16 bit pattern);
// records the LUT, saturation and NaN-output statistics.
[[nodiscard]] std::uint16_t cdp_output_fp16(const CdpConfig& cfg, const LutTables& lut,
                                            float lut_input, std::uint16_t x, CdpStats& stats);
// FP16 pixel: `raw` holds `lanes` FP16 bit patterns, the first `channels` real; counts
// D_NAN_INPUT_NUM / D_INF_INPUT_NUM over all lanes and writes `lanes` outputs. `scratch` must
// hold `lanes` entries.
void cdp_pixel_fp16(const CdpConfig& cfg, const LutTables& lut, const std::uint16_t* raw,
                    unsigned channels, unsigned lanes, std::uint16_t* out, float* scratch,
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
