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

}  // namespace octasim::models
