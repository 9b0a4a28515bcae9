// CDP layer programming: local response normalization over a feature surface in memory, in user
// terms (surfaces, local size, the input/output convertors, the LUT), programmed through Mmio,
// plus the LUT contents of a real LRN, y = x * (k + alpha/n * sum(x^2))^-beta, laid out as
// lut-programming.rst recommends for LRN: the LE table in exponent mode as the raw table over
// the whole input range, the LO table in linear mode as the density table near zero.
//
// Encoded: INT8/INT16 LRN over 3, 5, 7 or 9 channels with the square sum and the multiplier in
// use. Not encoded: FP16, the SQSUM/MUL bypasses, compressed surfaces.
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
  // Entries hold f * 2^fraction_bits; program the output convertor's shift with it to get
  // y = x * f at the input's scale.
  unsigned fraction_bits = 0;
};

// f(S) = (k + alpha / n * input_scale^2 * S)^-beta of the square sum S: LE exponent table
// LE[i] = f(2^i) (start 0, index offset 0), LO linear table LO[i] = f(i << s) with the smallest
// s whose coverage 256 << s reaches the knee 1 / (alpha / n * input_scale^2) (or the largest
// square sum of the precision); S = 0 and S inside LO take LO (underflow and hybrid priority),
// larger S the LE table. Entries are round(f * 2^F) with the largest F <= 30 that keeps f(0)
// within INT16. Throws FirmwareError for k <= 0, alpha < 0, beta < 0 or a bad local size.
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
