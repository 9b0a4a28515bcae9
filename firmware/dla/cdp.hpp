// CDP layer programming: local response normalization over a feature surface in memory, in user
// terms (surfaces, local size, the input/output convertors, the LUT), programmed through Mmio,
// plus the LUT contents of a real LRN, y = x * (k + alpha/n * sum(x^2))^-beta, laid out as
// lut-programming.rst recommends for LRN: the LE table in exponent mode as the raw table over
// the whole input range, the LO table in linear mode as the density table near zero.
//
// Encoded: INT8/INT16/FP16 LRN over 3, 5, 7 or 9 channels with the square sum and the
// multiplier in use. Not encoded: the SQSUM/MUL bypasses, compressed surfaces.
//
// FP16 (precision = Precision::kFp16): elements are FP16 bit patterns; the convertors are
// bypassed by the hardware, so in_cvt and out_cvt must stay {0, 1, 0}; the LUT entries and slope
// scales are FP16 bit patterns and LUT START/END hold FP32 bit patterns (models/precision/lut.hpp);
// nan_to_zero programs D_NAN_FLUSH_TO_ZERO. make_lrn_lut(params, Precision::kFp16) builds the
// whole LUT; an FP16 LRN layer is {precision, src, dst, local_size, lut = config, lut_tables =
// tables}.
#pragma once

#include <cstdint>

#include "firmware/dla/surface.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/cdp.hpp"
#include "models/precision/lut.hpp"

namespace octasim::firmware {

// A CDP convertor: y = saturate(round_half_away(((x - offset) * scale) >> shift)).
struct CdpConvertor {
  std::int32_t offset = 0;
  std::int16_t scale = 1;
  unsigned shift = 0;
};

struct CdpLayer {
  Precision precision = Precision::kInt8;
  FeatureSurface src;       // read by CDP_RDMA
  FeatureSurface dst;       // same width, height and channels
  unsigned local_size = 5;  // channels summed: 3, 5, 7 or 9
  // Input convertor (shift 0..31; offset within the element range) and output convertor
  // (shift 0..63; INT8: offset within 25 bits).
  CdpConvertor in_cvt, out_cvt;
  // The S_LUT_* registers (decoded values) and the table contents.
  models::LutConfig lut;
  models::LutTables lut_tables;
  // D_PERF_ENABLE.LUT_EN: count LUT hits/misses into D_PERF_LUT_*.
  bool count_lut = true;
  // D_NAN_FLUSH_TO_ZERO (FP16 only; written only for FP16 layers): input NaNs become +0.
  bool nan_to_zero = false;
};

// Local response normalization in real numbers; `input_scale` is the real value of one
// integer step of the CDP's (converted) input.
struct LrnParams {
  unsigned local_size = 5;
  double k = 2.0;
  double alpha = 1e-4;
  double beta = 0.75;
  double input_scale = 1.0;
};

struct LrnLut {
  models::LutConfig config;
  models::LutTables tables;
  // INT8/INT16: entries hold f * 2^fraction_bits; program the output convertor's shift with it
  // to get y = x * f at the input's scale. FP16: 0 (entries are f itself).
  unsigned fraction_bits = 0;
};

// f(S) = (k + alpha / n * input_scale^2 * S)^-beta of the square sum S: LE exponent table
// LE[i] = f(2^i) (start 0, index offset 0), LO linear table LO[i] = f(i << s) with the smallest
// s whose coverage 256 << s reaches the knee 1 / (alpha / n * input_scale^2) (or the largest
// square sum of the precision); S = 0 and S inside LO take LO (underflow and hybrid priority),
// larger S the LE table. Entries are round(f * 2^F) with the largest F <= 30 that keeps f(0)
// within INT16.
//
// FP16 (input_scale is the real value of 1.0, normally 1): entries are FP16(f), rounded to
// nearest even, START/END FP32. LO (linear, density) samples LO[i] = f(i * 2^s) from 0 to
// L = 2^(s+8), s the smallest (8-bit signed) with L >= max(16 * local_size, k / a) (inputs up to
// 4 in every channel, and the knee where a*S reaches k; a = alpha / n * input_scale^2),
// capped at the largest FP16 square sum; LE (exponent, raw) samples LE[i] = f(2^(s+8+i)) from L
// on (start 0, index offset s + 8, so it covers every square sum above L). S = 0 and S < L take
// LO (underflow and hybrid priority), S >= L takes LE; slopes are 0 (an overflow or a NaN
// square sum takes the last/first entry). Inside LO the step's interpolation error is below
// about (2^s * a / k)^2 * beta * (beta + 1) / 8 relative (1e-5 when L is set by the knee), so
// y = x * f is within FP16's two roundings (entry and output, 2^-11 relative each) of the exact
// LRN; above L the exponent table interpolates linearly within an octave of S (several percent
// for large square sums, where f ~ (a*S)^-beta).
//
// Throws FirmwareError for k <= 0, alpha < 0, beta < 0, a bad local size, or (FP16) k^-beta
// beyond 65504.
[[nodiscard]] LrnLut make_lrn_lut(const LrnParams& params, Precision precision);

// Programs `layer` into register group `group` of CDP and CDP_RDMA: S_POINTER (CDP, then
// CDP_RDMA), the CDP_RDMA D_ registers, the LUT (both tables through S_LUT_ACCESS_CFG/DATA, LE
// then LO, then the S_LUT_* registers), the CDP D_ registers, then D_OP_ENABLE of CDP_RDMA
// before CDP's. The LUT is shared by both register groups: do not program a CDP layer while
// the other group is running. Returns the GLB S_INTR_STATUS bit of its completion
// (CDP_DONE_STATUS<group>). Throws FirmwareError, before any register is written, for a layer
// it cannot program.
[[nodiscard]] unsigned program_cdp(Mmio& mmio, const CdpLayer& layer, unsigned group,
                                   unsigned atom_bytes);

// The same layer as models/ describes it (models::ops::run_cdp_layer with layer.lut_tables).
[[nodiscard]] models::ops::CdpLayerParams cdp_model_params(const CdpLayer& layer,
                                                           unsigned atom_bytes);

}  // namespace octasim::firmware
