#include "models/quant/exact_sum.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/quant/reference.hpp"

namespace octasim::models {
namespace {

double sum_of(const std::vector<float>& v) {
  ExactMagnitudeSum s;
  for (const float f : v) s.add(f);
  return s.value();
}

TEST(ExactSum, SmallExactCases) {
  EXPECT_EQ(sum_of({}), 0.0);
  EXPECT_EQ(sum_of({1.0f, 0x1p-24f, 0x1p-24f}), 1.0 + 0x1p-23);
  EXPECT_EQ(sum_of({-3.0f, 0.5f}), 3.5);          // magnitudes
  const float tiny = std::nextafter(0.0f, 1.0f);  // 2^-149, subnormal
  EXPECT_EQ(sum_of({tiny, tiny, tiny}), 3.0 * 0x1p-149);
  EXPECT_EQ(sum_of({FLT_MAX, FLT_MAX, FLT_MAX, FLT_MAX}), 4.0 * static_cast<double>(FLT_MAX));
}

TEST(ExactSum, RoundsOnceToNearestEven) {
  // 2^52 + 2^52 = 2^53; adding 1 gives a tie between 2^53 and 2^53 + 2: even (2^53) wins.
  EXPECT_EQ(sum_of({0x1p52f, 0x1p52f, 1.0f}), 0x1p53);
  // + 3: 2^53 + 3 ties between 2^53 + 2 and 2^53 + 4: 2^53 + 4 (even mantissa).
  EXPECT_EQ(sum_of({0x1p52f, 0x1p52f, 3.0f}), 0x1p53 + 4.0);
  // 2^53 + 1 + 2^-20: just above the tie, rounds up.
  EXPECT_EQ(sum_of({0x1p52f, 0x1p52f, 1.0f, 0x1p-20f}), 0x1p53 + 2.0);
  // A double-precision running sum would lose the small terms one by one.
  std::vector<float> v = {0x1p53f};
  for (int i = 0; i < 4; ++i) v.push_back(1.0f);
  EXPECT_EQ(sum_of(v), 0x1p53 + 4.0);
}

TEST(ExactSum, MatchesOracleInAnyOrder) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> expo(-30.0, 30.0);
  std::vector<float> v(20000);
  for (auto& f : v) f = static_cast<float>(std::exp2(expo(rng)) * (rng() & 1 ? 1.0 : -1.0));
  const double want = testref::exact_sum_oracle(v);
  EXPECT_EQ(sum_of(v), want);
  std::shuffle(v.begin(), v.end(), rng);
  EXPECT_EQ(sum_of(v), want);
  std::sort(v.begin(), v.end());
  EXPECT_EQ(sum_of(v), want);
  // Split and merged.
  ExactMagnitudeSum a;
  ExactMagnitudeSum b;
  for (std::size_t i = 0; i < v.size(); ++i) (i % 3 == 0 ? a : b).add(v[i]);
  a.merge(b);
  EXPECT_EQ(a.value(), want);
}

}  // namespace
}  // namespace octasim::models
