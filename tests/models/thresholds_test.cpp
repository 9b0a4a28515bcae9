#include "models/precision/thresholds.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "models/numerics/float_format.hpp"

// A namespace of its own: the unity build compiles this file with its target's others.
namespace octasim::models::thresholds_test {
namespace {

double p2(int e) {
  return std::ldexp(1.0, e);
}
std::uint16_t h(double x) {
  return fp16_from_double(x);
}

TEST(CcDirect, WorkedExample) {
  // a = 1.0 (exp 0), max_exp = 4, 3x3x8 kernel, scale 1:
  // bound = 2^(4-20) * 72 * 2 + 2^(0-10) = 144/65536 + 1/1024 = 0.00317383
  const double bound = 144.0 / 65536.0 + 1.0 / 1024.0;
  const auto near = check_cc_direct(h(1.0), h(1.0 + 3 * p2(-10)), 4, 3, 3, 8, 1.0);
  EXPECT_DOUBLE_EQ(near.bound, bound);
  EXPECT_DOUBLE_EQ(near.diff, 3 * p2(-10));  // 0.0029297 <= 0.0031738
  EXPECT_TRUE(near.pass);
  const auto far = check_cc_direct(h(1.0), h(1.0 + 4 * p2(-10)), 4, 3, 3, 8, 1.0);
  EXPECT_FALSE(far.pass);  // 0.0039063 > 0.0031738
  // The exponent term uses exp(a): a = 8.0 (exp 3) widens it to 2^-7.
  EXPECT_DOUBLE_EQ(check_cc_direct(h(8.0), h(8.0), 4, 3, 3, 8, 1.0).bound,
                   144.0 / 65536.0 + p2(-7));
}

TEST(CcWinograd, UsesEighteenC) {
  // bound = 2^(0-20) * 18*4 * 2 * 0.5 + 2^(-1-10) = 72/2^20 + 2^-11
  const auto r = check_cc_winograd(h(0.5), h(0.5), 0, 4, 0.5);
  EXPECT_DOUBLE_EQ(r.bound, 72.0 / 1048576.0 + p2(-11));
  EXPECT_TRUE(r.pass);
}

TEST(CcMaxExp, MasksLowTwoBitsOfEachExponent) {
  // data exps {3, 0}, weight exps {1, 6}: (3&~3)+(1&~3) = 0+0, (0&~3)+(6&~3) = 0+4 -> 4
  const std::uint16_t data[] = {h(8.0), h(1.0)};
  const std::uint16_t wt[] = {h(2.0), h(64.0)};
  EXPECT_EQ(cc_max_exp(data, wt, 2), 4);
  // Negative exponents: exp(0.25) = -2 -> -2 & ~3 = -4
  const std::uint16_t d2[] = {h(0.25)};
  const std::uint16_t w2[] = {h(0.25)};
  EXPECT_EQ(cc_max_exp(d2, w2, 1), -8);
}

TEST(Sdp, BitExact) {
  EXPECT_TRUE(check_sdp(0x3c00, 0x3c00).pass);
  EXPECT_FALSE(check_sdp(0x3c00, 0x3c01).pass);
  EXPECT_FALSE(check_sdp(0x0000, 0x8000).pass);  // +0 and -0 differ bit-wise
}

TEST(CdpPdp, BothAbsoluteAndRelativeBoundsMustHold) {
  // One fp16 ulp at 0.1 is 2^-14 = 6.1e-5 <= 1e-4; relative to max_value 1.0 it is 6.1e-5.
  EXPECT_TRUE(check_cdp(h(0.1), h(0.1) + 1, 1.0).pass);
  // Two ulps: 1.22e-4 > 1e-4 fails, although the relative part (1.2e-4 <= 1e-3) holds.
  EXPECT_FALSE(check_pdp(h(0.1), h(0.1) + 2, 1.0).pass);
  // diff 2^-14 with max_value 0.05: relative 1.22e-3 > 1e-3 -> fail
  const auto r = check_pdp(h(0.04), h(0.04) + 1, 0.05);      // one ulp at 0.04 is 2^-15
  EXPECT_TRUE(r.pass);                                       // 3.05e-5 <= 1e-4 and 6.1e-4 <= 1e-3
  EXPECT_FALSE(check_pdp(h(0.04), h(0.04) + 2, 0.05).pass);  // 6.1e-5 / 0.05 = 1.22e-3
  EXPECT_DOUBLE_EQ(check_cdp(h(1.0), h(1.0), 0.05).bound, 0.05 * 1e-3);
  EXPECT_TRUE(check_cdp(h(0.0), h(0.0), 0.0).pass);  // identical: pass even with max 0
}

TEST(Thresholds, SpecialValuePolicy) {
  EXPECT_TRUE(check_cdp(0x7e00, 0x7e01, 1.0).pass);                    // NaN vs NaN
  EXPECT_FALSE(check_cdp(0x7e00, h(1.0), 1.0).pass);                   // NaN vs number
  EXPECT_TRUE(check_cc_direct(0x7c00, 0x7c00, 0, 1, 1, 1, 1.0).pass);  // inf vs inf
  EXPECT_FALSE(check_cc_direct(0x7c00, 0xfc00, 0, 1, 1, 1, 1.0).pass);
  EXPECT_FALSE(check_cc_direct(0x7c00, 0x7bff, 15, 1, 1, 1, 1.0).pass);
}

}  // namespace
}  // namespace octasim::models::thresholds_test
