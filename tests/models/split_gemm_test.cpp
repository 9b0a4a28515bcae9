// Split-precision FP32 GEMM (models/ops/split_gemm.hpp): the decomposition's exactness and the
// measured accuracy of each configuration on 128x128x1024 U(-1,1) GEMMs against FP64.
#include "models/ops/split_gemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "models/numerics/float_format.hpp"
#include "models/ops/gemm.hpp"

namespace octasim::models::ops {
namespace {

constexpr unsigned kM = 128, kN = 128, kK = 1024;

struct Problem {
  std::vector<float> a, b;
  std::vector<double> ref;  // FP64 product of the FP32 inputs
};

Problem make_problem(double scale) {
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Problem p;
  p.a.resize(std::size_t{kM} * kK);
  p.b.resize(std::size_t{kK} * kN);
  for (auto& x : p.a) x = static_cast<float>(static_cast<double>(u(rng)) * scale);
  for (auto& x : p.b) x = static_cast<float>(static_cast<double>(u(rng)) * scale);
  p.ref = gemm_fp64(kM, kN, kK, {p.a.begin(), p.a.end()}, {p.b.begin(), p.b.end()});
  return p;
}

const Problem& unit_problem() {
  static const Problem p = make_problem(1.0);
  return p;
}

const Problem& small_problem() {  // inputs scaled by 2^-10: residuals in FP16's subnormals
  static const Problem p = make_problem(std::ldexp(1.0, -10));
  return p;
}

const Problem& tiny_problem() {  // inputs scaled by 2^-14: the inputs at FP16's smallest normal
  static const Problem p = make_problem(std::ldexp(1.0, -14));
  return p;
}

double error_of(const Problem& p, const SplitConfig& c) {
  return relative_frobenius_error(split_gemm(kM, kN, kK, p.a, p.b, c), p.ref);
}

double fp32_error(const Problem& p) {
  return relative_frobenius_error(gemm_fp32(kM, kN, kK, p.a, p.b), p.ref);
}

TEST(SplitFp32, PartsAreFormatValuesAndReconstructExactly) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> x(1000);
  for (auto& v : x) v = u(rng);
  // BF16, 3 parts, scale 2^8: 3 x 8 significant bits cover FP32's 24, so the sum is exact.
  const SplitConfig bf{SplitFormat::kBf16, 3, 6, 8};
  const auto parts = split_fp32(x, bf);
  ASSERT_EQ(parts.size(), 3u);
  for (std::size_t e = 0; e < x.size(); ++e) {
    double sum = 0.0;
    for (unsigned i = 0; i < 3; ++i) {
      const double v = static_cast<double>(parts[i][e]);
      EXPECT_EQ(decode_float(encode_float(v, kBf16), kBf16), v) << "part " << i << " not BF16";
      sum += std::ldexp(v, -8 * static_cast<int>(i));
    }
    EXPECT_EQ(sum, static_cast<double>(x[e])) << e;
  }
  // FP16, 3 parts, scale 2^11: 33 bits, exact again.
  const SplitConfig hf{SplitFormat::kFp16, 3, 6, 11};
  const auto hp = split_fp32(x, hf);
  for (std::size_t e = 0; e < x.size(); ++e) {
    double sum = 0.0;
    for (unsigned i = 0; i < 3; ++i)
      sum += std::ldexp(static_cast<double>(hp[i][e]), -11 * static_cast<int>(i));
    EXPECT_EQ(sum, static_cast<double>(x[e])) << e;
  }
  // One BF16 part is plain rounding.
  const auto one =
      split_fp32({1.0f + std::ldexp(1.0f, -8)}, SplitConfig{SplitFormat::kBf16, 1, 1, 8});
  EXPECT_EQ(one[0][0], 1.0f);  // tie to even
  EXPECT_EQ(recommended_residual_scale_log2(SplitFormat::kBf16), 8);
  EXPECT_EQ(recommended_residual_scale_log2(SplitFormat::kFp16), 11);
}

TEST(SplitFp32, BadConfigThrows) {
  const std::vector<float> x{1.0f};
  EXPECT_THROW((void)split_fp32(x, SplitConfig{SplitFormat::kBf16, 0, 1, 8}),
               std::invalid_argument);
  EXPECT_THROW((void)split_fp32(x, SplitConfig{SplitFormat::kBf16, 4, 1, 8}),
               std::invalid_argument);
  EXPECT_THROW((void)split_fp32(x, SplitConfig{SplitFormat::kBf16, 1, 3, 8}),
               std::invalid_argument);
  EXPECT_THROW((void)split_fp32(x, SplitConfig{SplitFormat::kBf16, 2, 6, 8}),
               std::invalid_argument);
  EXPECT_THROW((void)split_fp32(x, SplitConfig{SplitFormat::kBf16, 2, 2, 8}),
               std::invalid_argument);
}

TEST(SplitGemm, SmallCaseFollowsTheDefinedOrder) {
  // 1x1x2: the partial products computed by the test with the documented order and
  // compared bit for bit.
  const std::vector<float> a{1.1f, -0.3f}, b{0.7f, 2.9f};
  const SplitConfig c{SplitFormat::kBf16, 2, 3, 8};
  const auto ap = split_fp32(a, c), bp = split_fp32(b, c);
  auto dot = [](const std::vector<float>& x, const std::vector<float>& y) {
    float acc = 0.0f;
    for (std::size_t i = 0; i < x.size(); ++i) acc = std::fma(x[i], y[i], acc);
    return acc;
  };
  const float p00 = dot(ap[0], bp[0]);
  const float p01 = std::ldexp(dot(ap[0], bp[1]), -8);
  const float p10 = std::ldexp(dot(ap[1], bp[0]), -8);
  const float expect = (p10 + p01) + p00;
  const auto d = split_gemm(1, 1, 2, a, b, c);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(fp32_to_bits(d[0]), fp32_to_bits(expect));
}

TEST(SplitGemm, MeasuredAccuracyBf16) {
  const Problem& p = unit_problem();
  const double e_fp32 = fp32_error(p);
  const double e1 = error_of(p, SplitConfig{SplitFormat::kBf16, 1, 1, 8});
  const double e3 = error_of(p, SplitConfig{SplitFormat::kBf16, 2, 3, 8});
  const double e6 = error_of(p, SplitConfig{SplitFormat::kBf16, 3, 6, 8});
  std::printf(
      "128x128x1024 U(-1,1), relative Frobenius error vs FP64:\n"
      "  plain FP32 (fmaf chain)      %.3e\n"
      "  BF16 1 part, 1 product       %.3e\n"
      "  BF16 2 parts, 3 products     %.3e\n"
      "  BF16 3 parts, 6 products     %.3e\n",
      e_fp32, e1, e3, e6);
  EXPECT_GT(e_fp32, 1e-8);
  EXPECT_LT(e_fp32, 1e-6);
  EXPECT_GT(e1, 5e-4);
  EXPECT_LT(e1, 5e-3);
  EXPECT_LT(e3, 2e-5);
  EXPECT_LT(e3, e1 / 50);
  EXPECT_LT(e6, 2.0 * e_fp32);
  EXPECT_LT(e6, e3 / 10);
}

// Without residual scaling the last FP16 part is quantised to 2^-24 (the smallest subnormal),
// so the error grows like 2^-24 / input scale: ~2^-14 relative for inputs of order 2^-10,
// ~2^-10 for 2^-14. With s = 11 every part is a normal FP16 number.
TEST(SplitGemm, MeasuredAccuracyFp16NeedsResidualScaling) {
  const Problem& p = small_problem();
  const double e_fp32 = fp32_error(p);
  const double e_unscaled = error_of(p, SplitConfig{SplitFormat::kFp16, 3, 6, 0});
  const double e_scaled = error_of(p, SplitConfig{SplitFormat::kFp16, 3, 6, 11});
  const double e1 = error_of(p, SplitConfig{SplitFormat::kFp16, 1, 1, 11});
  const double e3 = error_of(p, SplitConfig{SplitFormat::kFp16, 2, 3, 11});
  const Problem& q = tiny_problem();
  const double t_fp32 = fp32_error(q);
  const double t_unscaled = error_of(q, SplitConfig{SplitFormat::kFp16, 3, 6, 0});
  const double t_scaled = error_of(q, SplitConfig{SplitFormat::kFp16, 3, 6, 11});
  std::printf(
      "128x128x1024 U(-1,1) * 2^-10, relative Frobenius error vs FP64:\n"
      "  plain FP32 (fmaf chain)              %.3e\n"
      "  FP16 1 part, 1 product               %.3e\n"
      "  FP16 2 parts, 3 products, scale 2^11 %.3e\n"
      "  FP16 3 parts, 6 products, no scale   %.3e (%.0fx FP32)\n"
      "  FP16 3 parts, 6 products, scale 2^11 %.3e\n"
      "128x128x1024 U(-1,1) * 2^-14:\n"
      "  plain FP32 (fmaf chain)              %.3e\n"
      "  FP16 3 parts, 6 products, no scale   %.3e (%.0fx FP32)\n"
      "  FP16 3 parts, 6 products, scale 2^11 %.3e\n",
      e_fp32, e1, e3, e_unscaled, e_unscaled / e_fp32, e_scaled, t_fp32, t_unscaled,
      t_unscaled / t_fp32, t_scaled);
  EXPECT_GT(e_fp32, 1e-8);
  EXPECT_LT(e_fp32, 1e-6);
  EXPECT_GT(e_unscaled, 30 * e_fp32);
  EXPECT_GT(e_unscaled, std::ldexp(1.0, -17));
  EXPECT_LT(e_scaled, 2.0 * e_fp32);
  EXPECT_LT(e3, e1 / 50);
  EXPECT_GT(t_unscaled, 500 * t_fp32);
  EXPECT_GT(t_unscaled, 8 * e_unscaled);  // 2^4 smaller inputs, ~2^4 larger relative error
  EXPECT_LT(t_scaled, 2.0 * t_fp32);
}

TEST(SplitGemm, RelativeFrobeniusError) {
  EXPECT_DOUBLE_EQ(relative_frobenius_error({3.0f, 4.0f}, {3.0, 4.0}), 0.0);
  EXPECT_DOUBLE_EQ(relative_frobenius_error({3.0f, 5.0f}, {3.0, 4.0}), 0.2);
}

}  // namespace
}  // namespace octasim::models::ops
