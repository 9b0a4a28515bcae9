// models/ops/conv_winograd: Winograd F(2x2,3x3) as the NVDLA documentation describes it. Every
// expected value is derived by hand from the matrices of v1_ias_unit_description.rst or comes
// from the direct convolution (models/ops/conv), where Winograd is exact (pra_trunc 0, values
// that fit).
#include "models/ops/conv_winograd.hpp"
#include "tests/models/vec_memory.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>

namespace octasim::models::ops {
namespace {

using test::VecMemory;

ConvWeights kernel3x3(std::uint32_t k, std::uint32_t c, std::int32_t fill) {
  ConvWeights g(k, 3, 3, c);
  std::fill(g.data.begin(), g.data.end(), fill);
  return g;
}

// All-ones kernel: 4U[y][x] = rs[y] * rs[x] with rs the row sums of 2G = (2, 3, 1, 2).
TEST(WinogradWeights, AllOnesKernelTransformsToOuterProductOfRowSums) {
  const ConvWeights u = winograd_transform_weights(kernel3x3(1, 1, 1), ConvPrecision::kInt8);
  ASSERT_EQ(u.kernel_width, 4u);
  ASSERT_EQ(u.channels, 32u);  // INT8: padded to 32 bytes
  const int rs[4] = {2, 3, 1, 2};
  for (std::uint32_t y = 0; y < 4; ++y)
    for (std::uint32_t x = 0; x < 4; ++x) EXPECT_EQ(u.at(0, y, x, 0), rs[y] * rs[x]) << y << x;
  for (std::uint32_t c = 1; c < 32; ++c) EXPECT_EQ(u.at(0, 1, 1, c), 0);
}

// Centre-only kernel: 4U = outer(col1, col1) with col1 = 2G's middle column (0, 1, -1, 0).
TEST(WinogradWeights, CentreKernelTransform) {
  ConvWeights g(1, 3, 3, 1);
  g.at(0, 1, 1, 0) = 1;
  const ConvWeights u = winograd_transform_weights(g, ConvPrecision::kInt16);
  EXPECT_EQ(u.channels, 16u);  // INT16: 16 elements = 32 bytes
  const int col[4] = {0, 1, -1, 0};
  for (std::uint32_t y = 0; y < 4; ++y)
    for (std::uint32_t x = 0; x < 4; ++x) EXPECT_EQ(u.at(0, y, x, 0), col[y] * col[x]);
}

TEST(WinogradWeights, RefusesWhatDoesNotFit) {
  // 9 x 8 x ... : 4U[1][1] = 9 * 15 = 135 > 127.
  EXPECT_THROW((void)winograd_transform_weights(kernel3x3(1, 1, 15), ConvPrecision::kInt8),
               std::runtime_error);
  EXPECT_NO_THROW((void)winograd_transform_weights(kernel3x3(1, 1, 14), ConvPrecision::kInt8));
  EXPECT_THROW((void)winograd_transform_weights(ConvWeights(1, 1, 1, 1), ConvPrecision::kInt8),
               std::runtime_error);
  EXPECT_THROW((void)winograd_transform_weights(kernel3x3(1, 1, 1), ConvPrecision::kFp16),
               std::runtime_error);
}

// format.rst: groups of 32 kernels (INT8), 4x4x4 small cubes scanned K -> C inside a group;
// inside a cube channel, then x, then y (our documented choice).
TEST(WinogradWeights, FormatOffsets) {
  const ConvWeights u(40, 4, 4, 32);
  const ConvWeightLayout L{64, 32, ConvPrecision::kInt8};
  EXPECT_EQ(winograd_weight_offset(u, L, 0, 0, 0, 1), 1u);
  EXPECT_EQ(winograd_weight_offset(u, L, 0, 0, 1, 0), 4u);
  EXPECT_EQ(winograd_weight_offset(u, L, 0, 1, 0, 0), 16u);
  EXPECT_EQ(winograd_weight_offset(u, L, 1, 0, 0, 0), 64u);      // next kernel's cube 0
  EXPECT_EQ(winograd_weight_offset(u, L, 0, 0, 0, 4), 2048u);    // cube 1 after 32 kernels
  EXPECT_EQ(winograd_weight_offset(u, L, 32, 0, 0, 0), 16384u);  // group 1: 32 x 8 cubes x 64
  EXPECT_EQ(winograd_weight_offset(u, L, 33, 0, 0, 0), 16448u);
  EXPECT_EQ(winograd_weight_offset(u, L, 32, 0, 0, 4), 16896u);  // 8 kernels in the last group
  EXPECT_EQ(winograd_weight_bytes(u, L), 20480u);
  const ConvWeightLayout L16{64, 32, ConvPrecision::kInt16};
  EXPECT_EQ(winograd_weight_offset(u, L16, 16, 0, 0, 0), 16u * 8 * 64 * 2);  // 16 per group

  VecMemory mem(1 << 16);
  ConvWeights w(40, 4, 4, 32);
  std::mt19937 rng(7);
  for (auto& v : w.data) v = static_cast<std::int32_t>(rng() % 256) - 128;
  EXPECT_EQ(write_winograd_weights(w, 256, L, mem), 20480u);
  EXPECT_EQ(read_winograd_weights(256, 40, 32, L, mem).data, w.data);
}

// PRA on a one-hot tile d[1][1] = a: C^T d C = a * outer(q, q), q = (0, 1, -1, 1).
TEST(WinogradPra, OneHotTileAndTruncationRounding) {
  std::int64_t d[16] = {};
  d[1 * 4 + 1] = 3;
  const int q[4] = {0, 1, -1, 1};
  std::int64_t v[16];
  winograd_pra(d, 0, ConvPrecision::kInt8, v);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(v[i], 3 * q[i / 4] * q[i % 4]) << i;
  winograd_pra(d, 1, ConvPrecision::kInt8, v);  // +-1.5 rounds half away: +-2
  for (int i = 0; i < 16; ++i) EXPECT_EQ(v[i], 2 * q[i / 4] * q[i % 4]) << i;
  winograd_pra(d, 2, ConvPrecision::kInt8, v);  // +-0.75: +-1
  for (int i = 0; i < 16; ++i) EXPECT_EQ(v[i], q[i / 4] * q[i % 4]) << i;
}

// A constant tile a: only V[1][1] = 4a is non-zero; 4 * 127 saturates INT8 unless pra_trunc 2.
TEST(WinogradPra, SaturatesToThePrecision) {
  std::int64_t d[16];
  std::fill(d, d + 16, 127);
  std::int64_t v[16];
  winograd_pra(d, 0, ConvPrecision::kInt8, v);
  EXPECT_EQ(v[5], 127);
  EXPECT_EQ(v[0], 0);
  winograd_pra(d, 2, ConvPrecision::kInt8, v);
  EXPECT_EQ(v[5], 127);  // 508 / 4 exactly
  winograd_pra(d, 0, ConvPrecision::kInt16, v);
  EXPECT_EQ(v[5], 508);
}

// One 4x4 tile with d[1][1] = 3, all-ones kernel, pra_trunc 1: V' = 2 outer(q, q), 4U =
// outer(rs, rs), so M = 2 outer(p, p) with p = rs * q = (0, 3, -1, 2); A^T p = (2, 2) and every
// output is 2 * 2 * 2 = 8 (exact arithmetic would give 4 * 3 / 2 = 6).
TEST(WinogradConv, PraTruncRoundingOnOneTile) {
  ConvCube in(4, 4, 1);
  in.at(1, 1, 0) = 3;
  const ConvWeights u = winograd_transform_weights(kernel3x3(1, 1, 1), ConvPrecision::kInt8);
  ConvParams p;
  p.out_width = 2;
  p.out_height = 2;
  const ConvResult r1 = run_conv_winograd(in, u, p, 1, 1);
  for (std::uint32_t y = 0; y < 2; ++y)
    for (std::uint32_t x = 0; x < 2; ++x) EXPECT_EQ(r1.out.at(x, y, 0), 8);
  const ConvResult r0 = run_conv_winograd(in, u, p, 0, 1);
  for (std::uint32_t y = 0; y < 2; ++y)
    for (std::uint32_t x = 0; x < 2; ++x) EXPECT_EQ(r0.out.at(x, y, 0), 12);  // 4 x 3
  EXPECT_EQ(r0.macs, 1u * 16 * 32);  // one tile, 16 products, 32 (padded) channels
}

// The centre kernel with CLIP_TRUNCATE 2 (undoing 4U's factor) copies the padded input.
TEST(WinogradConv, CentreKernelCopiesTheInput) {
  ConvCube in(6, 4, 2);
  for (std::size_t i = 0; i < in.data.size(); ++i) in.data[i] = static_cast<std::int32_t>(i) - 20;
  ConvWeights g(2, 3, 3, 2);
  g.at(0, 1, 1, 0) = 1;
  g.at(1, 1, 1, 1) = -1;
  const ConvWeights u = winograd_transform_weights(g, ConvPrecision::kInt8);
  ConvParams p;
  p.pad_left = 1;
  p.pad_top = 1;
  p.pad_value = -5;
  p.out_width = 6;
  p.out_height = 4;
  p.clip_truncate = 2;
  const ConvResult r = run_conv_winograd(in, u, p, 0, 8);
  ASSERT_EQ(r.out.channels, 8u);
  for (std::uint32_t y = 0; y < 4; ++y) {
    for (std::uint32_t x = 0; x < 6; ++x) {
      EXPECT_EQ(r.out.at(x, y, 0), in.at(x, y, 0));
      EXPECT_EQ(r.out.at(x, y, 1), -in.at(x, y, 1));
      EXPECT_EQ(r.out.at(x, y, 5), 0);
    }
  }
}

// Random layers: Winograd (pra_trunc 0, CLIP_TRUNCATE t + 2) equals direct convolution
// (CLIP_TRUNCATE t) bit for bit, padding value included, at INT8 and INT16.
TEST(WinogradConv, MatchesDirectConvolutionWhereExact) {
  std::mt19937 rng(11);
  for (ConvPrecision prec : {ConvPrecision::kInt8, ConvPrecision::kInt16}) {
    for (int trial = 0; trial < 4; ++trial) {
      const std::uint32_t C = 1 + rng() % 13, K = 1 + rng() % 5;
      ConvCube in(7 + rng() % 5, 6 + rng() % 5, C);
      for (auto& v : in.data) v = static_cast<std::int32_t>(rng() % 63) - 31;  // |V| <= 124
      ConvWeights g(K, 3, 3, C);
      for (auto& v : g.data) v = static_cast<std::int32_t>(rng() % 15) - 7;  // |4U| <= 112
      ConvParams p;
      p.precision = prec;
      p.pad_left = rng() % 2;
      p.pad_top = rng() % 2;
      p.pad_value = static_cast<std::int32_t>(rng() % 9) - 4;
      p.out_width = (in.width + p.pad_left - 2) / 2 * 2;
      p.out_height = (in.height + p.pad_top - 2) / 2 * 2;
      p.clip_truncate = trial % 3;
      const ConvResult direct = run_conv_int(in, g, p, K);
      ConvParams pw = p;
      pw.clip_truncate = p.clip_truncate + 2;
      const ConvResult wino = run_conv_winograd(in, winograd_transform_weights(g, prec), pw, 0, K);
      ASSERT_EQ(wino.out.data, direct.out.data) << "trial " << trial;
      EXPECT_EQ(wino.saturated, 0u);
    }
  }
}

TEST(WinogradConv, RefusesStrideOddOutputAndNon4x4Weights) {
  const ConvCube in(8, 8, 1);
  const ConvWeights u = winograd_transform_weights(kernel3x3(1, 1, 1), ConvPrecision::kInt8);
  ConvParams p;
  p.out_width = 6;
  p.out_height = 6;
  p.stride_x = 2;
  EXPECT_THROW((void)run_conv_winograd(in, u, p, 0, 1), std::runtime_error);
  p.stride_x = 1;
  p.out_width = 5;
  EXPECT_THROW((void)run_conv_winograd(in, u, p, 0, 1), std::runtime_error);
  p.out_width = 6;
  EXPECT_THROW((void)run_conv_winograd(in, kernel3x3(1, 1, 1), p, 0, 1), std::runtime_error);
}

}  // namespace
}  // namespace octasim::models::ops
