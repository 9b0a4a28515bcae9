// Unary activations on SDP — Sigmoid, Tanh, HardSigmoid, HardSwish, SiLU, Erf, GELU
// (plan_activation.cpp plans them, program_activation.cpp lowers them):
// how each runs at each precision and what it costs in accuracy.
//
// INT8/INT4 (quantized codes; configurations with the SDP LUT: nv_full, nv_large, soc_large,
// ...): one SDP layer, memory to memory, whose EW stage is the LUT alone, one entry per input
// code (firmware/dla/sdp_lut_tables.hpp sdp_lut_per_code): the output code is the exact f of the
// input code's value, rounded once to the output's step and clamped to its codes — within 1/2 an
// output step of the unclipped value. Sigmoid and HardSigmoid write unsigned codes; every
// output's clip is calibrated as any other tensor's, capped at 1 for Sigmoid, Tanh, HardSigmoid
// and Erf. Without the LUT (nv_small), HardSigmoid runs as the affine map clip(alpha x +
// beta, 0, 1) on BS/BN (ew_fixed_point.hpp affine_fixed_point: within 1/2 + eps output steps;
// ReLU for 0, the output's saturation at its clip <= 1 for 1); the others are refused.
//
// FP16 (NVDLA's SDP LUT is in the integer pipeline here: the register and LUT documents give the
// FP16 LUT's START/END and slopes as FP16/FP32 values but not its index and fraction arithmetic,
// so it cannot be modelled bit for bit; the LUT runs between SDP's precision convertors):
//   Sigmoid, Tanh, Erf: three SDP layers — FP16 -> INT16 codes q = round(x 2^k) (the QuantizeLinear
//     layer with 1/s = 2^k: exact scaling, one rounding, saturating at the INT16 range: |x| up to
//     2^(15-k)); the two-level INT16 LUT (sdp_lut_int16) to codes of 2^-15, converted to FP16 by
//     the INT16 -> FP16 output convertor; an FP16 layer multiplying by 2^-15 (exact).
//     k = 11 for Sigmoid (|x| <= 16), 12 for Tanh and Erf (|x| <= 8).
//   SiLU, GELU: the same three layers for Sigmoid (SiLU) or Phi(x) = (1 + erf(x / sqrt 2)) / 2
//     (GELU, k = 12), the third also multiplying by x (EW, FP32, then the output's one FP16
//     rounding).
//   HardSigmoid: one FP16 layer: BS (x + fp16(beta/alpha)) * fp16(alpha), ReLU, BN MIN 1.0.
//   HardSwish: the same layer with alpha = 1/6, beta = 1/2, then EW multiplies by x.
// fp16_activation_bound gives the resulting error for one element.
//
// Why these recipes. HardSigmoid and HardSwish are piecewise linear/quadratic and could run on
// BS/BN (multiplier, ALU, ReLU, clamp) or, for HardSwish, an EW multiply by x. At INT8 the
// per-code LUT is the better choice wherever it exists: its output is the exact function rounded
// once (1/2 step), where BS/BN's affine map adds its fixed point's eps and an INT8 x * g(x) would
// need a second requantization of the product (and INT8 Mul of two tensors is not lowered); so
// BS/BN serve only where there is no LUT. At FP16 it is the other way round: the LUT needs the
// INT16 grid (an absolute error of about 2^-13 on x), while BS/BN/EW compute alpha x + beta and
// x * g(x) in FP32 from the FP16 input itself — only alpha and beta/alpha are rounded to FP16 —
// with one FP16 rounding at the output, so HardSigmoid and HardSwish use those units. Sigmoid,
// Tanh and Erf have no such form and take the INT16 LUT; SiLU multiplies the Sigmoid by x in EW
// (FP32) rather than tabulating x s(x), whose INT16 codes would have to cover |x| up to 65504.
#pragma once

#include "firmware/dla/sdp_lut_tables.hpp"

namespace octasim::firmware::net {

// The function the FP16 recipe tabulates: Sigmoid for SiLU, Phi for GELU (then times x), else u.
[[nodiscard]] Unary lut_factor(const Unary& u);

// The INT16 codes' input exponent k of the FP16 recipe (x 2^k) and the LUT's output step 2^-15.
[[nodiscard]] int fp16_lut_input_exponent(const Unary& u);
inline constexpr int kFp16LutOutputExponent = 15;

// A bound on |device - f(x)| for one element of the FP16 lowering of `u` (SiLU, HardSwish: the
// whole x * g(x)), where x is the FP16 value the device reads: the input's rounding to the
// INT16 grid, the table's bound (sdp_lut_int16), the clamp of |x| beyond the grid, the FP16
// roundings of the operands and of the output. Not for the INT8 recipes (their bound is half an
// output step).
[[nodiscard]] double fp16_activation_bound(const Unary& u, double x);

// sup |f'| (a Lipschitz constant of f over the reals).
[[nodiscard]] double activation_lipschitz(const Unary& u);

}  // namespace octasim::firmware::net
