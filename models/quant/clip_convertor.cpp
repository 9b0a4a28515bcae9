#include "models/quant/clip_convertor.hpp"

#include <cmath>
#include <stdexcept>

namespace octasim::models {

ConvertorParams clip_to_convertor(double s, int bits, Signedness sign, unsigned max_shift) {
  check_quant_bits(bits);
  if (!(s >= 0.0) || !std::isfinite(s)) {
    throw std::invalid_argument("clipping scalar must be finite and >= 0");
  }
  ConvertorParams best;
  best.offset = 0;
  best.scale = 0;
  best.shift = 0;
  if (s == 0.0) return best;
  const double r = std::ldexp(1.0, sign == Signedness::kSigned ? bits - 1 : bits) / s;
  double best_error = r;  // scale 0
  for (unsigned shift = 0; shift <= max_shift; ++shift) {
    const double ideal = std::ldexp(r, static_cast<int>(shift));
    const double scale = std::fmin(std::round(ideal), 32767.0);
    // |scale * 2^-shift - r|, measured at the scale of r.
    const double error = std::ldexp(std::fabs(scale - ideal), -static_cast<int>(shift));
    if (error < best_error) {
      best_error = error;
      best.scale = static_cast<std::int16_t>(scale);
      best.shift = static_cast<std::uint8_t>(shift);
    }
  }
  return best;
}

ClampBounds clip_to_clamp(double s, Signedness sign) {
  if (!(s >= 0.0) || !std::isfinite(s)) {
    throw std::invalid_argument("clipping scalar must be finite and >= 0");
  }
  ClampBounds b;
  b.hi = static_cast<std::int16_t>(std::fmin(std::floor(s), 32767.0));
  b.lo = sign == Signedness::kSigned ? static_cast<std::int16_t>(-b.hi) : std::int16_t{0};
  return b;
}

double convertor_multiplier(const ConvertorParams& p) {
  return std::ldexp(static_cast<double>(p.scale), -static_cast<int>(p.shift));
}

}  // namespace octasim::models
