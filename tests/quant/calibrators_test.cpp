#include "models/quant/calibrators.hpp"

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

// A namespace of its own: the unity build compiles this file with its target's others.
namespace octasim::models::calibrators_test {
namespace {

std::vector<float> gaussian(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(BruteForce, PicksTheLeastMseCandidateOnItsGrid) {
  const std::vector<float> x = gaussian(20000, 1);
  const std::size_t k = 200;
  const ClipResult r = brute_force_clip(x.data(), x.size(), 4, Signedness::kSigned, k);
  EXPECT_EQ(r.iterations, 200);
  const double s_max = max_scale(x.data(), x.size(), Signedness::kSigned);
  const double best = empirical_mse(x.data(), x.size(), r.clip, 4, Signedness::kSigned);
  bool on_grid = false;
  for (std::size_t j = 1; j <= k; ++j) {
    const double s = s_max * static_cast<double>(j) / static_cast<double>(k);
    on_grid = on_grid || s == r.clip;
    EXPECT_LE(best, empirical_mse(x.data(), x.size(), s, 4, Signedness::kSigned)) << j;
  }
  EXPECT_TRUE(on_grid);
  EXPECT_LT(r.clip, s_max);  // 4-bit Gaussian data want clipping
}

TEST(BruteForce, AllZeroAndBadArguments) {
  const std::vector<float> z(5, 0.0f);
  EXPECT_EQ(brute_force_clip(z.data(), z.size(), 4, Signedness::kSigned, 10).clip, 0.0);
  EXPECT_THROW((void)brute_force_clip(z.data(), z.size(), 4, Signedness::kSigned, 0),
               std::invalid_argument);
}

TEST(MaxAndPercentile, HandComputed) {
  std::vector<float> x;
  for (int i = 1; i <= 1000; ++i) x.push_back(static_cast<float>(i % 2 ? i : -i));
  EXPECT_EQ(max_clip(x.data(), x.size(), Signedness::kSigned).clip, 1000.0);
  EXPECT_EQ(percentile_clip(x.data(), x.size(), Signedness::kSigned, 99.0).clip, 990.0);
  EXPECT_EQ(percentile_clip(x.data(), x.size(), Signedness::kSigned, 100.0).clip, 1000.0);
  EXPECT_EQ(percentile_clip(x.data(), x.size(), Signedness::kSigned, 0.1).clip, 1.0);
  EXPECT_EQ(percentile_clip(x.data(), x.size(), Signedness::kSigned, 99.95).clip, 1000.0);
  // Unsigned: negatives count as 0 (500 of the 1000 magnitudes).
  EXPECT_EQ(percentile_clip(x.data(), x.size(), Signedness::kUnsigned, 50.0).clip, 0.0);
  EXPECT_EQ(percentile_clip(x.data(), x.size(), Signedness::kUnsigned, 75.0).clip, 499.0);
  EXPECT_THROW((void)percentile_clip(x.data(), x.size(), Signedness::kSigned, 0.0),
               std::invalid_argument);
}

TEST(MseHistogram, CloseToBruteForceAndBetterThanMax) {
  const std::vector<float> x = gaussian(30000, 2);
  for (const int bits : {4, 8}) {
    const ClipResult h = mse_histogram_clip(x.data(), x.size(), bits, Signedness::kSigned);
    EXPECT_EQ(h.iterations, 2048 - 128);
    const ClipResult b = brute_force_clip(x.data(), x.size(), bits, Signedness::kSigned, 500);
    const double mh = empirical_mse(x.data(), x.size(), h.clip, bits, Signedness::kSigned);
    const double mb = empirical_mse(x.data(), x.size(), b.clip, bits, Signedness::kSigned);
    const double mm =
        empirical_mse(x.data(), x.size(), max_scale(x.data(), x.size(), Signedness::kSigned), bits,
                      Signedness::kSigned);
    EXPECT_LE(mh, 1.05 * mb) << bits;
    EXPECT_LT(mh, mm) << bits;
  }
}

TEST(Calibrate, DispatchesPerGroup) {
  const std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f, 8.0f, -4.0f};
  const GroupedTensor t(x.data(), {2, 3}, Grouping::per_channel(0));
  CalibrationOptions o;
  const auto r = calibrate(t, ClipMethod::kMax, o);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].clip, 3.0);
  EXPECT_EQ(r[1].clip, 8.0);
  ClipMethod m;
  EXPECT_TRUE(parse_clip_method("mse-hist", m));
  EXPECT_EQ(m, ClipMethod::kMseHistogram);
  EXPECT_FALSE(parse_clip_method("entropy", m));
}

}  // namespace
}  // namespace octasim::models::calibrators_test
