// The mapping from a clipping scalar to the fields of NVDLA's INT convertor (SDP D_CVT_*, CDP
// D_DATOUT_*): y = saturate(round_half_away(((x - offset) * scale) >> shift)) with an INT16
// scale and a 6-bit shift. The OCTAV unit's auto-program and octasim's firmware both call this
// one function, so a device-computed clip and a firmware-computed one program the same fields.
//
// B-bit clipped quantization at clipping scalar s (quantizer.hpp) codes x as round(x * r) with
// r = 2^(B-1)/s (signed) or 2^B/s (unsigned); the convertor approximates r by scale * 2^-shift
// with offset 0. Among every shift 0..max_shift, scale = round(r * 2^shift) clamped to
// [0, 32767] is the best INT16 for that shift; the pair with the least |scale * 2^-shift - r|
// wins, ties going to the smaller shift. s == 0 (a tensor without a nonzero element) gives
// scale 0: every output is 0. The convertor saturates at its output precision, so B should be
// the output width for signed data (8 for INT8) and one less for unsigned data.
#pragma once

#include <cstdint>

#include "models/ops/sdp.hpp"
#include "models/precision/convertor.hpp"
#include "models/quant/quantizer.hpp"

namespace octasim::models {

inline constexpr unsigned kConvertorMaxShift = 63;  // SDP and CDP output convertors: 6 bits

// Throws std::invalid_argument for s < 0, a non-finite s, or bits outside 2..16.
[[nodiscard]] ConvertorParams clip_to_convertor(double s, int bits, Signedness sign,
                                                unsigned max_shift = kConvertorMaxShift);

// The clamp bounds that clip integer data at s before the convertor (SDP BS ALU MIN, BN ALU
// MAX with register operands), for outputs wider than B bits whose own saturation does not
// clip: hi = floor(s) (the largest integer not above s, at most 32767), lo = -hi (signed) or 0
// (unsigned). Codes then stay within +-2^(B-1) (signed) or [0, 2^B] (unsigned), the levels of
// models::UniformQuantizer. Throws like clip_to_convertor.
struct ClampBounds {
  std::int16_t lo = 0;
  std::int16_t hi = 0;
};
[[nodiscard]] ClampBounds clip_to_clamp(double s, Signedness sign);

// The multiplier the fields realise: scale * 2^-shift.
[[nodiscard]] double convertor_multiplier(const ConvertorParams& p);

// Fake quantization at clip s in an INT8/INT16 SDP (the OCTAV unit's AUTO_PROGRAM=FAKEQUANT):
// the tensor keeps its own integer units, its values snapped to the B-bit grid of s,
//   A' = round(q * s / M),  q = round(clamp(A, lo, s) * M / s),
// M = 2^(B-1) - 1 and lo = -s (signed), M = 2^B - 1 and lo = 0 (unsigned); every round is
// half away from zero (std::round), as SDP's truncations and convertor round.
//
// SDP's stages, all operands from registers:
//   BS: ALU MIN with `hi`; multiplier `r1`, shift 0 (exact: Y = min(A, hi) * r1 < 2^30);
//       ReLU for unsigned data.
//   BN: ALU MAX with `lo` << `lo_shift` (in Y's units, the clamp at code -M; unsigned: 0);
//       multiplier `r2`, shift `t2`: q = round(Y * r2 / 2^t2), the code.
//   output convertor: offset 0, scale and shift `cvt`: A' = round(q * scale / 2^shift).
// Why the code takes two multipliers: one INT16 multiplier approximates M/s to 2^-15 relative,
// and an input whose x * M/s lies that close to a rounding boundary k + 1/2 gets the neighbour
// code, an error of a whole step s/M (18 units of A at B = 4 on INT8 data). The products
// r1 * r2 / 2^t2 of two INT16s resolve ~2^-29. The rate must give every integer x up to
// floor(s) + 1 the code round(x * M/s) (s < 1: rate M, since every nonzero integer lies beyond
// s): the rates that do form a window [max (k_x - 1/2)/x, min (k_x + 1/2)/x) around M/s,
// computed exactly (s is a binary fraction; an exact tie x * M/s = k + 1/2 closes the window at
// M/s, so the tie rounds away from zero as the ideal does). Candidates: for r1 from 32767 down
// to 16384, the largest t2 <= 63 at which r2 = ceil(M/s * 2^t2 / r1) stays within INT16, that r2
// and the one below it; the first inside the window for which `lo` exists is taken. When none
// is (seen only for INT16 data at B >= 12, with thousands of inputs below s), the smallest
// product at or above M/s that has a `lo`: a few inputs next to a boundary then get the
// neighbouring code.
// `lo` is any representable value (INT16 << 0..31, within INT32) that BN's truncation maps to
// -M exactly: then max(Y, lo) maps every Y to max(q, -M). Failing that, a value below every
// INT16 input's Y when no INT16 input reaches code -M - 1; failing both, the candidate is
// skipped (and if every candidate is, the nearest value to the code -M interval is used).
// `hi` is floor(s) or floor(s) + 1 (at most 32767), whichever makes the output of inputs above
// s nearer round(s) (the ideal's value there); ties take floor(s). Inputs up to floor(s) are
// not clamped either way.
// The convertor's scale * 2^-shift is the least-error approximation of s/M (as
// clip_to_convertor chooses), so |A' - ideal| <= 1 whenever the codes agree (|q| * error < 1
// for s <= 32768), and the outputs take at most 2M + 1 (signed) or M + 1 (unsigned) values
// (tests/octav/fake_quant_test.cpp checks codes, outputs and levels against an exact rational
// computation).
// s == 0 (a tensor without a nonzero element), and any s > 65536 * M (every INT16 input codes to
// 0), give all operands 0: every output is 0. Throws like clip_to_convertor.
struct FakeQuantParams {
  std::int16_t hi = 0;           // D_DP_BS_ALU_SRC_VALUE
  std::int16_t r1 = 0;           // D_DP_BS_MUL_SRC_VALUE (D_DP_BS_MUL_CFG shift 0)
  std::int16_t lo = 0;           // D_DP_BN_ALU_SRC_VALUE
  std::uint8_t lo_shift = 0;     // D_DP_BN_ALU_CFG.BN_ALU_SHIFT_VALUE
  std::int16_t r2 = 0;           // D_DP_BN_MUL_SRC_VALUE
  std::uint8_t t2 = 0;           // D_DP_BN_MUL_CFG.BN_MUL_SHIFT_VALUE
  ConvertorParams cvt{0, 0, 0};  // D_CVT_OFFSET / SCALE / SHIFT
};
[[nodiscard]] FakeQuantParams clip_to_fake_quant(double s, int bits, Signedness sign);

// M: the largest code, 2^(B-1) - 1 (signed) or 2^B - 1 (unsigned). Throws for bits outside
// 2..16.
[[nodiscard]] int fake_quant_max_code(int bits, Signedness sign);

// The SDP stages that realise `p` as models::ops::SdpConfig describes them (register operands;
// BS ReLU for unsigned data; EW is left to the caller, bypassed).
struct FakeQuantStages {
  ops::SdpXConfig bs, bn;
  ConvertorParams cvt;
};
[[nodiscard]] FakeQuantStages fake_quant_stages(const FakeQuantParams& p, Signedness sign);

}  // namespace octasim::models
