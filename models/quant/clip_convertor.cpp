#include "models/quant/clip_convertor.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "models/numerics/int_range.hpp"
#include "models/precision/sdp_stages.hpp"

namespace octasim::models {
namespace {

void check_clip(double s) {
  if (!(s >= 0.0) || !std::isfinite(s)) {
    throw std::invalid_argument("clipping scalar must be finite and >= 0");
  }
}

// The least-error INT16 scale (0..32767) and shift (0..max_shift) for the multiplier r > 0:
// scale * 2^-shift nearest r, ties to the smaller shift.
ConvertorParams nearest_scale(double r, unsigned max_shift) {
  ConvertorParams best;
  best.offset = 0;
  best.scale = 0;
  best.shift = 0;
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

int bit_length(uint128_t x) {
  const auto high = static_cast<std::uint64_t>(x >> 64);
  const auto low = static_cast<std::uint64_t>(x);
  if (high != 0) return 128 - __builtin_clzll(high);
  return low != 0 ? 64 - __builtin_clzll(low) : 0;
}

// floor(a / b), b > 0, from an estimate a few units off (a 128-bit division is the slow part of
// the search below; these are multiplications).
uint128_t floor_div(uint128_t a, uint128_t b, double estimate) {
  uint128_t q = estimate > 0.0 ? static_cast<std::uint64_t>(estimate) : 0;
  while (q > 0 && q * b > a) --q;
  while ((q + 1) * b <= a) ++q;
  return q;
}

// An exact positive rational num / den.
struct Ratio {
  uint128_t num = 1, den = 1;
  double approx = 1.0;  // num / den, for estimates
};

// The code rate the product r1 * r2 / 2^t2 must reach: M / s, or M for s < 1 (every nonzero
// integer then lies beyond s and takes code +-M). s is a double m * 2^e, so M / s is exact.
// Callers keep 1 <= s <= 65536 * M < 2^33.
Ratio code_rate(double s, int m_code) {
  const auto m = static_cast<uint128_t>(m_code);
  if (s < 1.0) return {m, 1, static_cast<double>(m_code)};
  int e = 0;
  const double f = std::frexp(s, &e);
  auto mant = static_cast<std::uint64_t>(std::ldexp(f, 53));
  e -= 53;
  while ((mant & 1u) == 0) {
    mant >>= 1;
    ++e;
  }
  const double approx = m_code / s;
  if (e >= 0) return {m, uint128_t{mant} << e, approx};
  return {m << -e, mant, approx};
}

// The code rates p that give every integer x in 1..x_max the code the exact rate gives,
// round(x * p) = round(x * rate) (half away from zero, so -x alike): the intersection over x of
// [(k - 1/2) / x, (k + 1/2) / x), k = round(x * rate). Bounds are fractions num / den; den 0 is
// an open end.
struct Window {
  uint128_t lo_num = 0, lo_den = 1, hi_num = 1, hi_den = 0;
};

Window code_window(const Ratio& rate, std::uint32_t x_max) {
  Window w;
  for (std::uint32_t x = 1; x <= x_max; ++x) {
    const uint128_t k = floor_div(2 * rate.num * x + rate.den, 2 * rate.den, x * rate.approx);
    const uint128_t den = 2 * uint128_t{x};
    if (k > 0 && (2 * k - 1) * w.lo_den > w.lo_num * den) {
      w.lo_num = 2 * k - 1;
      w.lo_den = den;
    }
    if (w.hi_den == 0 || (2 * k + 1) * w.hi_den < w.hi_num * den) {
      w.hi_num = 2 * k + 1;
      w.hi_den = den;
    }
  }
  return w;
}

// One way to realise the code rate: r1 * r2 / 2^t2, and where it lies.
struct Product {
  std::uint32_t r1 = 0, r2 = 0;
  unsigned t2 = 0;
  bool in_window = false;  // gives every x up to floor(s) its exact code
  bool above = false;      // >= the rate (rounds exact ties x * rate = k + 1/2 as the ideal)

  [[nodiscard]] uint128_t value() const { return uint128_t{r1} * r2; }  // times 2^-t2
};

// a * 2^-ta < b * 2^-tb (both below 2^94 once shifted).
bool less_value(const Product& a, const Product& b) {
  const uint128_t la = a.t2 == b.t2 ? a.value() : a.value() << b.t2;
  const uint128_t lb = a.t2 == b.t2 ? b.value() : b.value() << a.t2;
  return la != lb ? la < lb : a.r1 < b.r1;
}

// The order of preference: inside the window first, then at or above the rate; among those
// above, the smallest; among those below, the largest.
bool preferred(const Product& a, const Product& b) {
  if (a.in_window != b.in_window) return a.in_window;
  if (a.above != b.above) return a.above;
  return a.above ? less_value(a, b) : less_value(b, a);
}

// Calls visit(product) for each r1 from 32767 down to 16384 (the 15-bit multipliers: a smaller
// r1 times a power of two is among them) with the largest t2 <= 63 at which
// r2 = ceil(rate * 2^t2 / r1) stays within INT16: for that r2 (>= the rate), then the one below
// it (< the rate), until visit returns false.
template <class Visit>
void for_each_product(const Ratio& rate, const Window& w, Visit&& visit) {
  int shifted_for = -1;  // the t2 the window bounds below are shifted to
  uint128_t lo = 0, hi = 0;
  for (std::uint32_t r1 = 32767; r1 >= 16384; --r1) {
    const uint128_t den = rate.den * r1;
    const uint128_t limit = den * 32767;  // r2 <= 32767  <=>  num * 2^t <= 32767 * den
    if (rate.num > limit) continue;       // never: the rate is at most 65535
    int t = std::min(63, bit_length(limit) - bit_length(rate.num));
    while ((rate.num << t) > limit) --t;
    const auto t2 = static_cast<unsigned>(t);
    if (t != shifted_for) {
      shifted_for = t;
      lo = w.lo_num << t2;
      hi = w.hi_num << t2;
    }
    const uint128_t scaled = rate.num << t2;
    const double estimate = rate.approx * static_cast<double>(std::uint64_t{1} << t2) / r1;
    const auto floor_r2 = static_cast<std::uint32_t>(floor_div(scaled, den, estimate));
    const bool exact = uint128_t{floor_r2} * den == scaled;
    const auto in_window = [&](std::uint32_t r2) {
      const uint128_t v = uint128_t{r1} * r2;
      return v * w.lo_den >= lo && (w.hi_den == 0 || v * w.hi_den < hi);
    };
    const std::uint32_t ceil_r2 = std::max<std::uint32_t>(floor_r2 + (exact ? 0 : 1), 1);
    if (!visit(Product{r1, ceil_r2, t2, in_window(ceil_r2), true})) return;
    if (!exact && floor_r2 >= 1 && !visit(Product{r1, floor_r2, t2, in_window(floor_r2), false})) {
      return;
    }
  }
}

// BN's truncation of y * r2 (y <= 0): round_half_away(y * r2 / 2^t2).
std::int64_t bn_code(std::int64_t y, const Product& p) {
  return static_cast<std::int64_t>(shift_right_round_half_away(int128_t{y} * p.r2, p.t2));
}

struct LowerClamp {
  bool found = false;
  std::int16_t op = 0;
  std::uint8_t shift = 0;
};

// A representable BN ALU operand op << shift (op INT16, shift 0..63, within INT32) that BN's
// truncation maps to code -M: any value of the interval of y with round(y * r2 / 2^t2) = -M.
LowerClamp clamp_at_code(const Product& p, int m_code) {
  const uint128_t m = static_cast<uint128_t>(m_code);
  uint128_t lo = 0, hi = 0;  // magnitudes
  if (p.t2 == 0) {
    if (m % p.r2 != 0) return {};
    lo = hi = m / p.r2;
  } else {
    const uint128_t half = uint128_t{1} << (p.t2 - 1);
    lo = ((m << p.t2) - half + p.r2 - 1) / p.r2;
    hi = ((m << p.t2) + half + p.r2 - 1) / p.r2 - 1;
  }
  for (unsigned shift = 0; shift <= 31; ++shift) {
    const uint128_t op = (lo + (uint128_t{1} << shift) - 1) >> shift;
    const uint128_t value = op << shift;
    if (value > (uint128_t{1} << 31)) break;
    if (op <= 32768 && value <= hi && bn_code(-static_cast<std::int64_t>(value), p) == -m_code) {
      return {true, static_cast<std::int16_t>(-static_cast<std::int64_t>(op)),
              static_cast<std::uint8_t>(shift)};
    }
  }
  return {};
}

// The lower clamp for signed data: at code -M, else (no INT16 input reaches code -M - 1) below
// every input, else not found.
LowerClamp lower_clamp(const Product& p, int m_code) {
  const LowerClamp at = clamp_at_code(p, m_code);
  if (at.found) return at;
  if (bn_code(-32768 * static_cast<std::int64_t>(p.r1), p) >= -m_code) return {true, -32768, 16};
  return {};
}

// The nearest representable operand to the centre of the code -M interval (the fallback).
LowerClamp nearest_clamp(const Product& p, int m_code) {
  const double centre = -static_cast<double>(m_code) * std::ldexp(1.0, static_cast<int>(p.t2)) /
                        static_cast<double>(p.r2);
  for (unsigned shift = 0; shift <= 16; ++shift) {
    const double op = std::round(std::ldexp(centre, -static_cast<int>(shift)));
    if (op >= -32768.0) {
      return {true, static_cast<std::int16_t>(op), static_cast<std::uint8_t>(shift)};
    }
  }
  return {true, -32768, 16};
}

LowerClamp clamp_for(const Product& c, Signedness sign, int m_code) {
  return sign == Signedness::kSigned ? lower_clamp(c, m_code) : LowerClamp{true, 0, 0};
}

struct Choice {
  Product product;
  LowerClamp clamp;
};

// The first product inside the window that has a lower clamp (unsigned: any); else the
// preferred one (the smallest at or above the rate) that has one; else the preferred one with
// the nearest clamp.
Choice choose_product(const Ratio& rate, const Window& w, Signedness sign, int m_code) {
  Choice first;
  bool found = false;
  for_each_product(rate, w, [&](const Product& c) {
    if (!c.in_window) return true;
    first = {c, clamp_for(c, sign, m_code)};
    found = first.clamp.found;
    return !found;
  });
  if (found) return first;
  Choice best;
  Product top;
  bool any_top = false;
  for_each_product(rate, w, [&](const Product& c) {
    if (!any_top || preferred(c, top)) {
      top = c;
      any_top = true;
    }
    if (found && !preferred(c, best.product)) return true;
    const LowerClamp l = clamp_for(c, sign, m_code);
    if (l.found) {
      best = {c, l};
      found = true;
    }
    return true;
  });
  if (found) return best;
  return {top, nearest_clamp(top, m_code)};
}

// The SDP's output for input x with `p`, at INT16 output precision.
std::int64_t fake_quant_output(const FakeQuantParams& p, Signedness sign, std::int32_t x) {
  const FakeQuantStages st = fake_quant_stages(p, sign);
  std::int32_t v = ops::SdpDatapath::x_stage(st.bs, x, 0, 0);
  v = ops::SdpDatapath::x_stage(st.bn, v, 0, 0);
  return sdp_output_convert(v, st.cvt, IntPrecision::kInt16).value;
}

// hi: floor(s) or floor(s) + 1, whichever brings the output above s nearer round(s).
std::int16_t choose_hi(FakeQuantParams p, Signedness sign, double s) {
  const double f = std::floor(s);
  const auto h0 = static_cast<std::int16_t>(std::fmin(f, 32767.0));
  const auto h1 = static_cast<std::int16_t>(std::fmin(f + 1.0, 32767.0));
  const double target = std::fmin(std::round(s), 32767.0);
  p.hi = h0;
  const double e0 = std::fabs(static_cast<double>(fake_quant_output(p, sign, h0)) - target);
  p.hi = h1;
  const double e1 = std::fabs(static_cast<double>(fake_quant_output(p, sign, h1)) - target);
  return e1 < e0 ? h1 : h0;
}

}  // namespace

ConvertorParams clip_to_convertor(double s, int bits, Signedness sign, unsigned max_shift) {
  check_quant_bits(bits);
  check_clip(s);
  if (s == 0.0) return ConvertorParams{0, 0, 0};
  const double r = std::ldexp(1.0, sign == Signedness::kSigned ? bits - 1 : bits) / s;
  return nearest_scale(r, max_shift);
}

ClampBounds clip_to_clamp(double s, Signedness sign) {
  check_clip(s);
  ClampBounds b;
  b.hi = static_cast<std::int16_t>(std::fmin(std::floor(s), 32767.0));
  b.lo = sign == Signedness::kSigned ? static_cast<std::int16_t>(-b.hi) : std::int16_t{0};
  return b;
}

double convertor_multiplier(const ConvertorParams& p) {
  return std::ldexp(static_cast<double>(p.scale), -static_cast<int>(p.shift));
}

int fake_quant_max_code(int bits, Signedness sign) {
  check_quant_bits(bits);
  return sign == Signedness::kSigned ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
}

FakeQuantParams clip_to_fake_quant(double s, int bits, Signedness sign) {
  const int m = fake_quant_max_code(bits, sign);
  check_clip(s);
  FakeQuantParams p;
  if (s == 0.0 || s > 65536.0 * m) return p;
  const Ratio rate = code_rate(s, m);
  // Every x up to floor(s) + 1 keeps its code (beyond, the clamps decide).
  const auto x_max = static_cast<std::uint32_t>(std::fmin(std::floor(s) + 1.0, 32768.0));
  const Choice choice = choose_product(rate, code_window(rate, x_max), sign, m);
  const Product& chosen = choice.product;
  p.r1 = static_cast<std::int16_t>(chosen.r1);
  p.r2 = static_cast<std::int16_t>(chosen.r2);
  p.t2 = static_cast<std::uint8_t>(chosen.t2);
  p.lo = choice.clamp.op;
  p.lo_shift = choice.clamp.shift;
  p.cvt = nearest_scale(s / m, kConvertorMaxShift);
  p.hi = choose_hi(p, sign, s);
  return p;
}

FakeQuantStages fake_quant_stages(const FakeQuantParams& p, Signedness sign) {
  FakeQuantStages st;
  ops::SdpXConfig& bs = st.bs;
  bs.bypass = false;
  bs.alu_bypass = false;
  bs.alu_algo = SdpAluAlgo::kMin;
  bs.alu_src = ops::SdpOperandSource::kRegister;
  bs.alu_operand = p.hi;
  bs.alu_shift = 0;
  bs.mul_bypass = false;
  bs.mul_src = ops::SdpOperandSource::kRegister;
  bs.mul_operand = p.r1;
  bs.mul_shift = 0;
  bs.relu_bypass = sign == Signedness::kSigned;
  ops::SdpXConfig& bn = st.bn;
  bn.bypass = false;
  bn.alu_bypass = false;
  bn.alu_algo = SdpAluAlgo::kMax;
  bn.alu_src = ops::SdpOperandSource::kRegister;
  bn.alu_operand = p.lo;
  bn.alu_shift = p.lo_shift;
  bn.mul_bypass = false;
  bn.mul_src = ops::SdpOperandSource::kRegister;
  bn.mul_operand = p.r2;
  bn.mul_shift = p.t2;
  bn.relu_bypass = true;
  st.cvt = p.cvt;
  return st;
}

}  // namespace octasim::models
