// SDP LUT contents for unary activation functions (Sigmoid, Tanh, HardSigmoid, HardSwish, SiLU,
// Erf, GELU)
// over integer codes, and the error bound of each table against the exact function. The lookup
// itself is models::ops::sdp_lut_lookup (NVDLA's integer LUT datapath); these functions only
// choose what goes into S_LUT_* and the two tables.
//
// Two layouts:
//
// * Per code (sdp_lut_per_code): the input takes at most 256 codes (INT8 codes, 8- or 4-bit).
//   The LO table in linear mode with index select 0 holds one entry per code, LO[i] =
//   Q(f((in_lo - 1 + i) * in_step)), where Q rounds to the output's codes (half away from zero)
//   and clamps them to [out_lo, out_hi]. Every input code lands exactly on an entry (fraction 0,
//   or the overflow point with slope 0), so the lookup returns the entry: the output is the
//   exact f quantized once. LE is never chosen (its start is INT32's largest, every priority is
//   LO). Bound: |lookup(q) - clamp(f(q in_step) / out_step, out_lo, out_hi)| <= 0.5 + 2^-30
//   (the 2^-30 covers f being evaluated in double precision).
//
// * Two-level INT16 (sdp_lut_int16, Sigmoid, Tanh, Erf, Phi): input codes -32768..32767. LO is the
//   density table, linear over the central half (-16384, 16384), 256 segments of 128 codes
//   (LO_START -16384, index select 7); LE the raw table, linear over the whole range, 64 segments
//   of 1024 codes from LE_START -32769 (index select 10) to LE_END 32767. Both in range: LO
//   (hybrid priority); LO out of range: LE; 32767 (both over): LE's last entry. Slopes are 0.
//   Entries are round(f(node * in_step) / out_step) clamped to INT16. Bound, in output steps,
//   for every input code:
//       |lookup(q) - f(q in_step) / out_step| <= I + E + 1/2
//   I = max over the segments each table answers of h^2/8 * sup|f''| on the segment / out_step
//   (linear interpolation between exact samples; h the segment in input units; sup|f''| from
//   |f''| at the segment's ends and at the zeros of f''' inside it: Sigmoid +-ln(2+sqrt(3)),
//   Tanh +-atanh(1/sqrt(3)), Erf +-1/sqrt(2), Phi +-1), E = the largest |entry - f(node)/out_step|
//   (rounding, and the clamp of Sigmoid's and Tanh's +1 to 32767 at out_step 2^-15), 1/2 the
//   lookup's own rounding of the interpolated value (sdp_lut_lookup rounds the 35-bit fraction's
//   product half away). At in_step 2^-11 (Sigmoid, inputs to +-16) and 2^-12 (Tanh, +-8), out_step
//   2^-15: Sigmoid I = 1.54, E = 1.0 (the clamp), bound 3.04 steps (9.3e-5; 2.20 observed over
//   every code); Tanh I = 3.08, bound 4.57 steps (1.4e-4; 3.77 observed) (sdp_lut_tables_test).
#pragma once

#include <cstdint>

#include "models/ops/sdp_lut.hpp"

namespace octasim::firmware {

// kGelu: x Phi(x) (ONNX's Gelu, PyTorch's nn.GELU); kNormalCdf: Phi(x) = (1 + erf(x / sqrt 2)) / 2,
// the table the FP16 GELU multiplies by x.
enum class UnaryFunction : std::uint8_t {
  kSigmoid,
  kTanh,
  kHardSigmoid,
  kHardSwish,
  kSilu,
  kErf,
  kGelu,
  kNormalCdf
};

// A unary function of the network compiler's activations: ONNX's definitions.
struct Unary {
  UnaryFunction function = UnaryFunction::kSigmoid;
  double alpha = 0.2,
         beta = 0.5;  // HardSigmoid's max(0, min(1, alpha x + beta)); HardSwish: x times it

  [[nodiscard]] double operator()(double x) const;
  // "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "SiLU", "Erf", "GELU", "Phi".
  [[nodiscard]] const char* name() const;
  // sup |f''| over [a, b] (Sigmoid, Tanh, Erf, Phi; FirmwareError for the others).
  [[nodiscard]] double second_derivative_bound(double a, double b) const;
  // The function's range lies in [0, +inf) (Sigmoid, HardSigmoid): unsigned output codes.
  [[nodiscard]] bool non_negative() const;
  // The least upper bound of |f| when it is finite (1 for Sigmoid, Tanh, HardSigmoid, Erf, Phi),
  // else 0.
  [[nodiscard]] double magnitude_bound() const;
};

struct SdpLutTable {
  models::ops::SdpLutConfig config;  // S_LUT_* and both tables
  double error_bound = 0.0;          // in output steps (the header's bound)
};

// One entry per input code in [in_lo, in_hi] (at most 256 codes); output codes in
// [out_lo, out_hi]. Throws FirmwareError for more codes or an output range beyond INT16.
[[nodiscard]] SdpLutTable sdp_lut_per_code(const Unary& f, double in_step, int in_lo, int in_hi,
                                           double out_step, int out_lo, int out_hi);

// The two-level table over INT16 input codes (Sigmoid, Tanh, Erf, Phi). Throws FirmwareError for
// other functions.
[[nodiscard]] SdpLutTable sdp_lut_int16(const Unary& f, double in_step, double out_step);

}  // namespace octasim::firmware
