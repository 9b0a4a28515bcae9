#include "models/quant/octav.hpp"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "models/quant/calibrators.hpp"
#include "models/quant/grouping.hpp"
#include "tests/quant/reference.hpp"

namespace octasim::models {
namespace {

using testref::c_of;

OctavOptions precise(int bits, Signedness sign = Signedness::kSigned) {
  OctavOptions o;
  o.bits = bits;
  o.sign = sign;
  o.tolerance = 0.0;  // run to the exact fixed point
  o.max_iterations = 200;
  return o;
}

// The recursion written out with the public one-iteration primitives only (no bands, no
// per-group bookkeeping): what octav() must reproduce bit for bit.
ClipResult reference_octav(const std::vector<float>& x, const OctavOptions& o, double s0) {
  ClipResult r;
  double s = s0;
  double before = -1.0;
  r.converged = false;
  while (r.iterations < o.max_iterations) {
    const double next = octav_update(octav_reduce(x.data(), x.size(), s, o.sign), o.bits, o.sign);
    ++r.iterations;
    if (next == before) {  // 2-cycle: the smaller of the two
      r.clip = std::min(next, s);
      r.converged = true;
      return r;
    }
    const bool done = next == s || std::fabs(next - s) <= o.tolerance * next;
    before = s;
    s = next;
    if (done) {
      r.converged = true;
      break;
    }
  }
  r.clip = s;
  return r;
}

std::vector<float> gaussian(std::size_t n, unsigned seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<float> laplace(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<float> e(1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = (rng() & 1) != 0 ? e(rng) : -e(rng);
  return v;
}

TEST(OctavUpdate, HandComputedStep) {
  // S = 10, N0 = 3, N1 = 2, B = 2: s = 3*10 / (3/16 + 6) = 30/6.1875.
  const OctavReductions r{2, 3, 10.0};
  EXPECT_DOUBLE_EQ(octav_update(r, 2, Signedness::kSigned), 30.0 / 6.1875);
  // Unsigned: 12*10 / (3/16 + 24).
  EXPECT_DOUBLE_EQ(octav_update(r, 2, Signedness::kUnsigned), 120.0 / 24.1875);
  // Nothing nonzero: 0.
  EXPECT_EQ(octav_update(OctavReductions{0, 0, 0.0}, 4, Signedness::kSigned), 0.0);
}

TEST(OctavConvergence, CycleFixedPointAndTolerance) {
  // A 2-cycle converges on the smaller of the two iterates.
  OctavConvergence c = octav_convergence(2.0, 3.0, 2.0, 0.0);
  EXPECT_TRUE(c.converged);
  EXPECT_EQ(c.clip, 2.0);
  c = octav_convergence(3.0, 2.0, 3.0, 0.0);
  EXPECT_TRUE(c.converged);
  EXPECT_EQ(c.clip, 2.0);
  // A fixed point converges even with tolerance 0.
  c = octav_convergence(1.0, 2.5, 2.5, 0.0);
  EXPECT_TRUE(c.converged);
  EXPECT_EQ(c.clip, 2.5);
  // Relative change |next - s| <= tolerance * next, measured against next.
  EXPECT_TRUE(octav_convergence(-1.0, 1.0, 1.1, 0.1 / 1.1 + 1e-12).converged);
  c = octav_convergence(-1.0, 1.0, 1.1, 0.05);
  EXPECT_FALSE(c.converged);
  EXPECT_EQ(c.clip, 1.1);
}

TEST(OctavThreshold, LargestFloatAtOrBelow) {
  auto bits = [](float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
  };
  EXPECT_EQ(octav_threshold_bits(1.0), bits(1.0f));
  EXPECT_EQ(octav_threshold_bits(0.1), bits(0.099999994f));  // 0.1f rounds above 0.1
  EXPECT_EQ(octav_threshold_bits(1.0 + 1e-12), bits(1.0f));
  EXPECT_EQ(octav_threshold_bits(0.0), 0u);
  EXPECT_EQ(octav_threshold_bits(1e300), bits(FLT_MAX));
}

TEST(OctavReduce, CountsAndExactSumAgainstOracle) {
  for (const std::size_t n : {std::size_t{37}, std::size_t{1000}, std::size_t{100003}}) {
    std::vector<float> x = gaussian(n, 5);
    for (std::size_t i = 0; i < n; i += 7) x[i] = 0.0f;
    x[1] = 1.5f;  // exactly at the threshold: counts as at-or-below
    x[2] = -1.5f;
    const double s = 1.5;
    std::uint64_t above = 0;
    std::uint64_t below = 0;
    std::vector<float> tail;
    for (const float v : x) {
      const float a = std::fabs(v);
      if (a > 1.5f) {
        ++above;
        tail.push_back(a);
      } else if (a != 0.0f) {
        ++below;
      }
    }
    const OctavReductions r = octav_reduce(x.data(), n, s, Signedness::kSigned);
    EXPECT_EQ(r.count_above, above) << n;
    EXPECT_EQ(r.count_nonzero_at_or_below, below) << n;
    EXPECT_EQ(r.sum_above, testref::exact_sum_oracle(tail)) << n;
  }
}

TEST(OctavReduce, UnsignedUsesPositivePartOnly) {
  const std::vector<float> x = {-5.0f, -0.0f, 0.0f, 1.0f, 2.0f, 3.0f, -3.0f};
  const OctavReductions r = octav_reduce(x.data(), x.size(), 1.5, Signedness::kUnsigned);
  EXPECT_EQ(r.count_above, 2u);                // 2, 3
  EXPECT_EQ(r.count_nonzero_at_or_below, 1u);  // 1
  EXPECT_EQ(r.sum_above, 5.0);
  const OctavReductions rs = octav_reduce(x.data(), x.size(), 1.5, Signedness::kSigned);
  EXPECT_EQ(rs.count_above, 4u);  // 5, 2, 3, 3
  EXPECT_EQ(rs.sum_above, 13.0);
}

TEST(Octav, ZerosAreExcludedFromTheDenominator) {
  // {1, 1, 1, 4}, B = 2: at any s in [1, 4) the fixed point is 3*4 / (3/16 + 3) = 64/17, and
  // it lies in [1, 4). Zeros must not change it (counted, they would give 12/(103/16+3)).
  std::vector<float> x = {1.0f, 1.0f, 4.0f, 1.0f};
  const ClipResult plain = octav(x.data(), x.size(), precise(2));
  EXPECT_DOUBLE_EQ(plain.clip, 64.0 / 17.0);
  EXPECT_TRUE(plain.converged);
  x.insert(x.end(), 100, 0.0f);
  x.insert(x.begin(), 50, -0.0f);
  const ClipResult with_zeros = octav(x.data(), x.size(), precise(2));
  EXPECT_EQ(with_zeros.clip, plain.clip);
}

TEST(Octav, UnsignedVariantUsesTheTwelfthConstantAndIgnoresNegatives) {
  // Unsigned, B = 2: magnitudes {1, 1, 1, 4} (negatives clamp to 0 and drop out);
  // fixed point 12*4 / (3/16 + 12) = 256/65.
  const std::vector<float> x = {-5.0f, 1.0f, 1.0f, 4.0f, 1.0f, -0.5f};
  const ClipResult r = octav(x.data(), x.size(), precise(2, Signedness::kUnsigned));
  EXPECT_DOUBLE_EQ(r.clip, 256.0 / 65.0);
  // Signed on the same data sees |-5| and |-0.5| as well: a different answer.
  EXPECT_NE(octav(x.data(), x.size(), precise(2)).clip, r.clip);
}

TEST(Octav, DegenerateGroups) {
  const std::vector<float> zeros(10, 0.0f);
  const ClipResult z = octav(zeros.data(), zeros.size(), OctavOptions{});
  EXPECT_EQ(z.clip, 0.0);
  EXPECT_EQ(z.iterations, 0);
  EXPECT_TRUE(z.converged);

  const float one = -2.5f;
  const ClipResult single = octav(&one, 1, OctavOptions{});
  EXPECT_EQ(single.clip, 2.5);
  EXPECT_TRUE(single.converged);

  const std::vector<float> same = {2.0f, -2.0f, 0.0f, 2.0f};
  EXPECT_EQ(octav(same.data(), same.size(), OctavOptions{}).clip, 2.0);

  const std::vector<float> negative_only = {-1.0f, -2.0f};
  OctavOptions u;
  u.sign = Signedness::kUnsigned;
  EXPECT_EQ(octav(negative_only.data(), negative_only.size(), u).clip, 0.0);
}

TEST(Octav, RejectsNanAndInf) {
  std::vector<float> x = {1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f};
  try {
    (void)octav(x.data(), x.size(), OctavOptions{});
    FAIL() << "NaN accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("element 2 is NaN"), std::string::npos) << e.what();
  }
  x[2] = -std::numeric_limits<float>::infinity();
  EXPECT_THROW((void)octav(x.data(), x.size(), OctavOptions{}), std::invalid_argument);
  OctavOptions bad;
  bad.bits = 1;
  x[2] = 0.0f;
  EXPECT_THROW((void)octav(x.data(), x.size(), bad), std::invalid_argument);
}

// The golden values: the continuous fixed point of eq. 6 for the distribution, solved by
// bisection on its closed form; the data are the distribution's midpoint quantiles, so the
// empirical fixed point approaches it as n grows.
TEST(Octav, NormalQuantilesMatchTheContinuousFixedPoint) {
  const std::vector<float> x = testref::normal_quantile_data(200000);
  for (const int bits : {2, 3, 4, 6, 8}) {
    const double want = testref::normal_fixed_point(c_of(bits, true));
    const ClipResult r = octav(x.data(), x.size(), precise(bits));
    EXPECT_TRUE(r.converged) << bits;
    EXPECT_NEAR(r.clip, want, 2e-3 * want) << "B=" << bits;
  }
}

TEST(Octav, LaplaceQuantilesMatchTheContinuousFixedPoint) {
  const std::vector<float> x = testref::laplace_quantile_data(200000);
  for (const int bits : {2, 3, 4, 6, 8}) {
    const double want = testref::laplace_fixed_point(c_of(bits, true));
    const ClipResult r = octav(x.data(), x.size(), precise(bits));
    EXPECT_TRUE(r.converged) << bits;
    EXPECT_NEAR(r.clip, want, 2e-3 * want) << "B=" << bits;
  }
}

TEST(Octav, UnsignedExponentialQuantilesMatchTheContinuousFixedPoint) {
  const std::vector<float> x = testref::laplace_quantile_data(200000, false);  // all >= 0
  for (const int bits : {2, 4, 8}) {
    const double want = testref::laplace_fixed_point(c_of(bits, false));
    const ClipResult r = octav(x.data(), x.size(), precise(bits, Signedness::kUnsigned));
    EXPECT_NEAR(r.clip, want, 2e-3 * want) << "B=" << bits;
  }
}

// The data's own fixed point, found by an exhaustive scan of the sorted magnitudes.
TEST(Octav, ReachesTheDatasExactFixedPoint) {
  for (const unsigned seed : {11u, 12u}) {
    const std::vector<float> x = seed == 11 ? gaussian(20000, seed) : laplace(20000, seed);
    std::vector<double> mags;
    for (const float v : x) mags.push_back(std::fabs(static_cast<double>(v)));
    for (const int bits : {2, 4, 8, 12}) {
      const std::vector<double> fixed = testref::discrete_fixed_points(mags, c_of(bits, true));
      ASSERT_EQ(fixed.size(), 1u) << "seed " << seed << " B=" << bits;
      const ClipResult r = octav(x.data(), x.size(), precise(bits));
      EXPECT_TRUE(r.converged);
      EXPECT_NEAR(r.clip, fixed[0], 1e-12 * fixed[0]) << "seed " << seed << " B=" << bits;
    }
  }
}

TEST(Octav, UniformGridMatchesTheClosedForm) {
  const std::size_t n = 100000;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((2.0 * (static_cast<double>(i) + 0.5) / n - 1.0) * 3.0);
  }
  for (const int bits : {2, 4, 8, 12}) {
    const double want = testref::uniform_fixed_point(3.0, c_of(bits, true));
    EXPECT_NEAR(octav(x.data(), n, precise(bits)).clip, want, 1e-4 * want) << bits;
  }
}

TEST(Octav, TwoCycleAroundADataMagnitudeCountsAsConverged) {
  // Cell means of Exp(1) at B = 2 have no exact fixed point (the exhaustive scan finds none):
  // the recursion alternates between two values either side of one magnitude.
  const std::vector<float> x = testref::laplace_quantile_data(200000);
  OctavOptions o = precise(2);
  o.init = OctavInit::kZero;
  const ClipResult r = octav(x.data(), x.size(), o);
  EXPECT_TRUE(r.converged);
  std::vector<double> mags;
  for (const float v : x) mags.push_back(std::fabs(static_cast<double>(v)));
  EXPECT_TRUE(testref::discrete_fixed_points(mags, c_of(2, true)).empty());  // so it cycles
  // The two values straddle one magnitude: from r.clip the update must go up, and from the
  // next one back down to r.clip.
  const double up = octav_update(octav_reduce(x.data(), x.size(), r.clip, o.sign), 2, o.sign);
  EXPECT_GT(up, r.clip);
  EXPECT_EQ(octav_update(octav_reduce(x.data(), x.size(), up, o.sign), 2, o.sign), r.clip);
}

TEST(Octav, InsensitiveToTheInitialGuess) {
  const std::vector<float> x = gaussian(50000, 9);
  OctavOptions o = precise(4);
  const double base = octav(x.data(), x.size(), o).clip;
  for (const double s0 : {0.0, 0.01, 1.0, 3.0, 100.0}) {
    o.init = OctavInit::kValue;
    o.initial_value = s0;
    EXPECT_NEAR(octav(x.data(), x.size(), o).clip, base, 1e-9 * base) << s0;
  }
  o.init = OctavInit::kZero;
  EXPECT_NEAR(octav(x.data(), x.size(), o).clip, base, 1e-9 * base);
  // The patent's random start: reproducible for a seed, different starts for different seeds,
  // the same answer.
  o.init = OctavInit::kRandom;
  o.max_iterations = 1;
  std::vector<double> firsts;
  for (const std::uint64_t seed : {0u, 1u, 2u, 3u}) {
    o.seed = seed;
    o.max_iterations = 1;
    firsts.push_back(octav(x.data(), x.size(), o).clip);
    EXPECT_EQ(octav(x.data(), x.size(), o).clip, firsts.back());
    o.max_iterations = 200;
    EXPECT_NEAR(octav(x.data(), x.size(), o).clip, base, 1e-9 * base) << seed;
  }
  EXPECT_NE(firsts[0], firsts[1]);
  EXPECT_NE(firsts[1], firsts[2]);
}

TEST(Octav, ReportsIterationsAndNonConvergence) {
  const std::vector<float> x = gaussian(5000, 3);
  OctavOptions o;
  o.max_iterations = 1;
  o.init = OctavInit::kZero;
  const ClipResult one = octav(x.data(), x.size(), o);
  EXPECT_EQ(one.iterations, 1);
  EXPECT_FALSE(one.converged);
  // From 0 every nonzero element is above: the first iterate is the mean magnitude.
  double sum = 0.0;
  for (const float v : x) sum += std::fabs(static_cast<double>(v));
  EXPECT_NEAR(one.clip, sum / static_cast<double>(x.size()), 1e-12 * one.clip);
  const ClipResult full = octav(x.data(), x.size(), OctavOptions{});
  EXPECT_TRUE(full.converged);
  EXPECT_LE(full.iterations, 10);
  EXPECT_GT(full.iterations, 1);
}

// The default start (half the largest magnitude) converges within the default 10 iterations on
// light- and heavy-tailed data at every usual bit width.
TEST(Octav, DefaultsConvergeWithinTenIterations) {
  std::mt19937_64 rng(17);
  std::student_t_distribution<double> t3(3.0);
  std::vector<float> student(20000);
  for (auto& v : student) v = static_cast<float>(t3(rng));
  const std::vector<float> data[] = {gaussian(20000, 15), laplace(20000, 16), student};
  for (const auto& x : data) {
    for (const int bits : {2, 3, 4, 6, 8}) {
      OctavOptions o;
      o.bits = bits;
      const ClipResult r = octav(x.data(), x.size(), o);
      EXPECT_TRUE(r.converged) << "B=" << bits << " after " << r.iterations;
      EXPECT_LE(r.iterations, 10);
    }
  }
}

// octav() (bands, grouped iteration) against the recursion written out with octav_reduce and
// octav_update: same scalar bits, same iteration count, same convergence flag.
TEST(Octav, FastPathEqualsThePlainRecursionBitForBit) {
  for (const unsigned seed : {1u, 2u, 3u}) {
    const std::vector<float> x = seed == 2 ? laplace(300000, seed) : gaussian(300000, seed);
    for (const int bits : {2, 4, 8}) {
      for (const Signedness sign : {Signedness::kSigned, Signedness::kUnsigned}) {
        OctavOptions o;
        o.bits = bits;
        o.sign = sign;
        o.max_iterations = 30;
        o.tolerance = seed == 3 ? 0.0 : 1e-4;
        float mx = 0.0f;
        for (const float v : x) {
          mx = std::max(mx, sign == Signedness::kSigned ? std::fabs(v) : v);
        }
        const ClipResult want = reference_octav(x, o, 0.5 * static_cast<double>(mx));
        const ClipResult got = octav(x.data(), x.size(), o);
        EXPECT_EQ(got.clip, want.clip) << seed << " B=" << bits;
        EXPECT_EQ(got.iterations, want.iterations) << seed << " B=" << bits;
        EXPECT_EQ(got.converged, want.converged) << seed << " B=" << bits;
      }
    }
  }
}

TEST(OctavGrouped, PerChannelEqualsEachChannelAlone) {
  const std::vector<std::size_t> shape = {6, 5, 700};
  std::vector<float> x = gaussian(6 * 5 * 700, 21);
  for (std::size_t i = 0; i < x.size(); i += 13) x[i] = 0.0f;
  for (std::size_t i = 0; i < 700; ++i) x[i] *= 4.0f;  // channel scales differ
  OctavOptions o;
  o.bits = 3;
  for (const int axis : {0, 1, 2, -1, -3}) {
    const GroupedTensor t(x.data(), shape, Grouping::per_channel(axis));
    const std::vector<ClipResult> got = octav(t, o);
    const int a = axis < 0 ? axis + 3 : axis;
    ASSERT_EQ(got.size(), shape[static_cast<std::size_t>(a)]);
    for (std::size_t c = 0; c < got.size(); ++c) {
      // Gather channel c by hand in C order.
      std::vector<float> ch;
      for (std::size_t i = 0; i < shape[0]; ++i) {
        for (std::size_t j = 0; j < shape[1]; ++j) {
          for (std::size_t k = 0; k < shape[2]; ++k) {
            const std::size_t idx[3] = {i, j, k};
            if (idx[a] == c) ch.push_back(x[(i * shape[1] + j) * shape[2] + k]);
          }
        }
      }
      const ClipResult alone = octav(ch.data(), ch.size(), o);
      EXPECT_EQ(got[c].clip, alone.clip) << "axis " << axis << " channel " << c;
      EXPECT_EQ(got[c].iterations, alone.iterations);
    }
  }
}

// The last axis is read in place as the columns of a matrix (a different pass structure):
// still the same results as each column alone, including degenerate columns.
TEST(OctavGrouped, LastAxisColumnsEqualEachColumnAlone) {
  for (const Signedness sign : {Signedness::kSigned, Signedness::kUnsigned}) {
    for (const auto& shape :
         {std::vector<std::size_t>{5000, 7}, std::vector<std::size_t>{10, 10, 33}}) {
      const std::size_t cols = shape.back();
      const std::size_t rows = element_count(shape) / cols;
      std::vector<float> x = laplace(rows * cols, 31);
      for (std::size_t r = 0; r < rows; ++r) {
        x[r * cols + 1] = 0.0f;                            // an all-zero column
        x[r * cols + 2] = r % 2 != 0 ? 2.0f : -2.0f;       // one magnitude only
        x[r * cols + 3] *= static_cast<float>(1 + r % 5);  // a wider column
        if (r % 9 == 0) x[r * cols + 4] = 0.0f;            // zeros mixed in
      }
      OctavOptions o;
      o.bits = 4;
      o.sign = sign;
      const GroupedTensor t(x.data(), shape, Grouping::per_channel(-1));
      ASSERT_TRUE(t.has_columns());
      const std::vector<ClipResult> got = octav(t, o);
      for (std::size_t c = 0; c < cols; ++c) {
        std::vector<float> col(rows);
        for (std::size_t r = 0; r < rows; ++r) col[r] = x[r * cols + c];
        const ClipResult alone = octav(col.data(), rows, o);
        EXPECT_EQ(got[c].clip, alone.clip) << "rows " << rows << " column " << c;
        EXPECT_EQ(got[c].iterations, alone.iterations) << "rows " << rows << " column " << c;
        EXPECT_EQ(got[c].converged, alone.converged);
      }
    }
  }
}

TEST(OctavGrouped, NanIsReportedWithGroupAndElement) {
  std::vector<float> x(400, 1.5f);
  x[7] = 0.5f;
  x[57 * 4 + 2] = std::numeric_limits<float>::quiet_NaN();
  for (const int axis : {1, 0}) {
    const GroupedTensor t(x.data(), {100, 4}, Grouping::per_channel(axis));
    try {
      (void)octav(t, OctavOptions{});
      FAIL() << "NaN accepted";
    } catch (const std::invalid_argument& e) {
      const std::string want =
          axis == 1 ? "group 2 element 57 is NaN" : "group 57 element 2 is NaN";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

TEST(OctavGrouped, PerVectorEqualsEachBlockAlone) {
  const std::vector<std::size_t> shape = {3, 100};
  const std::vector<float> x = laplace(300, 4);
  const GroupedTensor t(x.data(), shape, Grouping::per_vector(32));
  ASSERT_EQ(t.group_count(), 12u);  // 4 blocks per row: 32, 32, 32, 4
  EXPECT_EQ(t.group_size(3), 4u);
  const std::vector<ClipResult> got = octav(t, OctavOptions{});
  for (std::size_t row = 0; row < 3; ++row) {
    for (std::size_t b = 0; b < 4; ++b) {
      const std::size_t begin = row * 100 + b * 32;
      const std::size_t len = b == 3 ? 4 : 32;
      EXPECT_EQ(got[row * 4 + b].clip, octav(x.data() + begin, len, OctavOptions{}).clip);
    }
  }
}

TEST(OctavGrouped, RejectsBadAxis) {
  const std::vector<float> x(6, 1.0f);
  EXPECT_THROW(GroupedTensor(x.data(), {2, 3}, Grouping::per_channel(2)), std::invalid_argument);
  EXPECT_THROW(GroupedTensor(x.data(), {2, 3}, Grouping::per_channel(-3)), std::invalid_argument);
  EXPECT_THROW(GroupedTensor(x.data(), {2, 3}, Grouping::per_vector(0)), std::invalid_argument);
}

// The optimum of the model (eq. 4) against the empirical optimum found by sweeping s.
TEST(Octav, MseWithinTwoPercentOfBruteForceOnRealisticData) {
  struct Case {
    const char* name;
    std::vector<float> data;
    Signedness sign;
  };
  std::vector<float> relu = gaussian(30000, 8);
  for (auto& v : relu) v = std::max(v, 0.0f);
  const Case cases[] = {{"gaussian", gaussian(30000, 6), Signedness::kSigned},
                        {"laplace", laplace(30000, 7), Signedness::kSigned},
                        {"relu(gaussian)", relu, Signedness::kUnsigned}};
  for (const Case& c : cases) {
    for (const int bits : {3, 4, 6, 8}) {
      OctavOptions o;
      o.bits = bits;
      o.sign = c.sign;
      const ClipResult oct = octav(c.data.data(), c.data.size(), o);
      const ClipResult bf = brute_force_clip(c.data.data(), c.data.size(), bits, c.sign, 600);
      const double mse_oct = empirical_mse(c.data.data(), c.data.size(), oct.clip, bits, c.sign);
      const double mse_bf = empirical_mse(c.data.data(), c.data.size(), bf.clip, bits, c.sign);
      EXPECT_LE(mse_oct, 1.02 * mse_bf) << c.name << " B=" << bits;
      const double mse_max =
          empirical_mse(c.data.data(), c.data.size(),
                        max_scale(c.data.data(), c.data.size(), c.sign), bits, c.sign);
      EXPECT_LT(mse_oct, mse_max) << c.name << " B=" << bits;
    }
  }
}

// 10^8 elements: |x| uniform on [0, 1] at midpoint quantiles, whose fixed point has the closed
// form 1/(1 + sqrt(2c)). Needs ~400 MB; skipped in sanitizer and unoptimised builds, where it
// would take minutes (the 10^5-element version above covers the same arithmetic).
TEST(Octav, HundredMillionElements) {
#if defined(OCTASIM_QUANT_SLOW_BUILD)
  GTEST_SKIP() << "10^8-element test runs only in optimised, unsanitised builds";
#else
  const std::size_t n = 100'000'000;
  std::vector<float> x(n);
  const double inv = 1.0 / static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto a = static_cast<float>((static_cast<double>(i) + 0.5) * inv);
    x[i] = (i & 1) != 0 ? -a : a;
  }
  for (const int bits : {4, 8}) {
    OctavOptions o;
    o.bits = bits;
    o.tolerance = 1e-7;
    o.max_iterations = 30;
    const ClipResult r = octav(x.data(), n, o);
    const double want = testref::uniform_fixed_point(1.0, c_of(bits, true));
    EXPECT_TRUE(r.converged);
    EXPECT_NEAR(r.clip, want, 1e-6 * want) << bits;
  }
#endif
}

}  // namespace
}  // namespace octasim::models
