// The SDP LUT tables of firmware/dla/sdp_lut_tables.hpp against the exact functions: every input
// code looked up through models::ops::sdp_lut_lookup (NVDLA's integer LUT datapath), compared
// with the function computed here from std:: math (its own formulas, not the firmware's), must
// be within the table's stated bound; and the bound must be small enough to be worth stating.
#include <algorithm>
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "firmware/dla/sdp_lut_tables.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/sdp_lut.hpp"

namespace octasim::firmware {
namespace {

using Fn = std::function<double(double)>;

const Fn kSigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
const Fn kTanh = [](double x) { return std::tanh(x); };
const Fn kSilu = [](double x) { return x / (1.0 + std::exp(-x)); };
const Fn kErf = [](double x) { return std::erf(x); };
const Fn kPhi = [](double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); };
const Fn kGelu = [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); };
const Fn kHardSwish = [](double x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); };
Fn hard_sigmoid(double a, double b) {
  return [a, b](double x) { return std::clamp(a * x + b, 0.0, 1.0); };
}

struct PerCodeCase {
  Unary u;
  Fn exact;
  double in_step, out_step;
  int out_lo, out_hi;
};

// The largest |lookup - clamp(f / out_step)| over INT8 codes.
double per_code_error(const PerCodeCase& c, const SdpLutTable& t) {
  double worst = 0.0;
  for (int q = -128; q <= 127; ++q) {
    const double want = std::clamp(c.exact(q * c.in_step) / c.out_step,
                                   static_cast<double>(c.out_lo), static_cast<double>(c.out_hi));
    const auto r = models::ops::sdp_lut_lookup(t.config, q);
    worst = std::max(worst, std::abs(r.value - want));
  }
  return worst;
}

TEST(SdpLutPerCode, EveryInt8CodeIsTheRoundedFunction) {
  const std::vector<PerCodeCase> cases = {
      {Unary{UnaryFunction::kSigmoid}, kSigmoid, 6.0 / 127, 1.0 / 127, 0, 127},
      {Unary{UnaryFunction::kTanh}, kTanh, 3.0 / 127, 1.0 / 127, -127, 127},
      // A clip below the function's range: codes saturate at the output's clip.
      {Unary{UnaryFunction::kTanh}, kTanh, 3.0 / 127, 0.5 / 127, -127, 127},
      {Unary{UnaryFunction::kHardSigmoid, 0.3, 0.4}, hard_sigmoid(0.3, 0.4), 4.0 / 127, 1.0 / 127,
       0, 127},
      {Unary{UnaryFunction::kHardSwish, 1.0 / 6, 0.5}, kHardSwish, 5.0 / 127, 5.0 / 127, -127, 127},
      {Unary{UnaryFunction::kSilu}, kSilu, 8.0 / 127, 8.0 / 127, -127, 127},
      {Unary{UnaryFunction::kErf}, kErf, 3.0 / 127, 1.0 / 127, -127, 127},
      {Unary{UnaryFunction::kGelu}, kGelu, 6.0 / 127, 6.0 / 127, -127, 127},
      // 4-bit output codes in INT8 elements.
      {Unary{UnaryFunction::kSigmoid}, kSigmoid, 4.0 / 127, 1.0 / 15, 0, 15},
  };
  for (const PerCodeCase& c : cases) {
    const SdpLutTable t =
        sdp_lut_per_code(c.u, c.in_step, -128, 127, c.out_step, c.out_lo, c.out_hi);
    EXPECT_LE(t.error_bound, 0.5 + 1e-6) << c.u.name();
    const double worst = per_code_error(c, t);
    EXPECT_LE(worst, t.error_bound) << c.u.name();
    // Rounding to codes leaves up to half a step somewhere: the bound is attained, not loose.
    EXPECT_GT(worst, 0.4) << c.u.name();
  }
}

TEST(SdpLutPerCode, CodesBeyondTheTableTakeItsEnds) {
  const SdpLutTable t =
      sdp_lut_per_code(Unary{UnaryFunction::kSigmoid}, 0.05, -20, 20, 1.0 / 127, 0, 127);
  const auto at = [&](std::int32_t x) { return models::ops::sdp_lut_lookup(t.config, x).value; };
  // One entry per code from in_lo - 1 on, 257 of them: below, the first; above, the last.
  EXPECT_EQ(at(-100), std::lround(127 * kSigmoid(-21 * 0.05)));
  EXPECT_EQ(at(-20), std::lround(127 * kSigmoid(-20 * 0.05)));
  EXPECT_EQ(at(1000), std::lround(127 * kSigmoid(235 * 0.05)));
  EXPECT_EQ(at(0), 64);  // 63.5 rounds away from zero
}

TEST(SdpLutPerCode, RefusesMoreThan256Codes) {
  EXPECT_THROW((void)sdp_lut_per_code(Unary{}, 1.0, -128, 128, 1.0, 0, 127), FirmwareError);
  EXPECT_THROW((void)sdp_lut_per_code(Unary{}, 1.0, -128, 127, 1.0, 0, 40000), FirmwareError);
}

struct Int16Case {
  UnaryFunction f;
  Fn exact;
  int in_exponent;
  double max_bound;  // in output steps of 2^-15
};

TEST(SdpLutInt16, EveryInt16CodeWithinTheBound) {
  // Sigmoid at 2^-11 (|x| <= 16), Tanh, Erf and Phi (GELU's) at 2^-12 (|x| <= 8), outputs in
  // steps of 2^-15.
  const std::vector<Int16Case> cases = {{UnaryFunction::kSigmoid, kSigmoid, 11, 4.0},
                                        {UnaryFunction::kTanh, kTanh, 12, 5.0},
                                        {UnaryFunction::kErf, kErf, 12, 6.0},
                                        {UnaryFunction::kNormalCdf, kPhi, 12, 3.0}};
  const double out_step = std::ldexp(1.0, -15);
  for (const Int16Case& c : cases) {
    const double in_step = std::ldexp(1.0, -c.in_exponent);
    const SdpLutTable t = sdp_lut_int16(Unary{c.f}, in_step, out_step);
    double worst = 0.0;
    std::int32_t worst_at = 0;
    for (std::int32_t q = -32768; q <= 32767; ++q) {
      const double want = c.exact(q * in_step) / out_step;
      const double e = std::abs(models::ops::sdp_lut_lookup(t.config, q).value - want);
      if (e > worst) worst = e, worst_at = q;
    }
    const char* name = Unary{c.f}.name();
    EXPECT_LE(worst, t.error_bound) << name << " at code " << worst_at;
    // Useful: a few 2^-15 steps, under a quarter of FP16's step at 1 (2^-11 = 16 steps).
    EXPECT_LE(t.error_bound, c.max_bound) << name;
    // Tight: the interpolation error is really there (within a factor of 3 of the bound).
    EXPECT_GE(worst, t.error_bound / 3) << name;
  }
}

TEST(SdpLutInt16, DensityTableAnswersTheCentreRawTableTheRest) {
  const SdpLutTable t =
      sdp_lut_int16(Unary{UnaryFunction::kTanh}, std::ldexp(1.0, -12), std::ldexp(1.0, -15));
  EXPECT_TRUE(models::ops::sdp_lut_lookup(t.config, 100).lo_hit);
  const auto edge = models::ops::sdp_lut_lookup(t.config, 20000);
  EXPECT_TRUE(edge.le_hit);
  EXPECT_FALSE(edge.lo_hit);
  // The last code is both tables' overflow: LE's last entry, tanh(8) in 2^-15 steps, clamped.
  EXPECT_EQ(models::ops::sdp_lut_lookup(t.config, 32767).value, 32767);
  EXPECT_EQ(models::ops::sdp_lut_lookup(t.config, -32768).value,
            std::lround(std::tanh(-8.0) * 32768));
}

TEST(SdpLutInt16, RefusesFunctionsWithoutACurvatureBound) {
  EXPECT_THROW(
      (void)sdp_lut_int16(Unary{UnaryFunction::kHardSwish}, 1.0 / 4096, std::ldexp(1.0, -15)),
      FirmwareError);
}

}  // namespace
}  // namespace octasim::firmware
