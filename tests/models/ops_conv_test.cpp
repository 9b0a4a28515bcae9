// models/ops/conv: NVDLA's direct-convolution weight format (offsets derived by hand from
// format.rst), the feature surface round trip, and run_conv_int against an independent
// reference that builds the padded input explicitly; CACC truncation rounding and saturation.
#include "models/ops/conv.hpp"
#include "tests/models/vec_memory.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

namespace octasim::models::ops {
namespace {

using test::VecMemory;

// 10 kernels of 2x3x11 INT8 on nv_small (atomic-C 8, atomic-K 8): group 0 = kernels 0..7,
// group 1 = kernels 8..9; channel blocks of 8 and 3. Inside a group: C' -> K -> W -> H -> C.
TEST(ConvWeightLayout, OffsetsFollowFormatRst) {
  const ConvWeights w(10, 2, 3, 11);
  const ConvWeightLayout L{8, 8, ConvPrecision::kInt8};
  EXPECT_EQ(L.offset(w, 0, 0, 0, 0), 0u);
  EXPECT_EQ(L.offset(w, 0, 0, 0, 1), 1u);    // C' fastest
  EXPECT_EQ(L.offset(w, 1, 0, 0, 0), 8u);    // then K (8 channels per cube)
  EXPECT_EQ(L.offset(w, 0, 0, 1, 0), 64u);   // then W (8 kernels x 8)
  EXPECT_EQ(L.offset(w, 0, 1, 0, 0), 192u);  // then H (3 columns x 64)
  EXPECT_EQ(L.offset(w, 0, 0, 0, 8), 384u);  // then C: block 1 after 2x3x8x8 bytes
  EXPECT_EQ(L.offset(w, 1, 0, 0, 8), 387u);  // the last block's cubes hold 3 channels, unpadded
  EXPECT_EQ(L.offset(w, 0, 0, 1, 8), 408u);  // 8 kernels x 3
  EXPECT_EQ(L.offset(w, 8, 0, 0, 0), 528u);  // group 1 after 8 kernels x 66 bytes
  EXPECT_EQ(L.offset(w, 9, 0, 0, 0), 536u);
  EXPECT_EQ(L.offset(w, 8, 0, 1, 0), 544u);   // 2 kernels x 8
  EXPECT_EQ(L.offset(w, 8, 0, 0, 8), 624u);   // 528 + 2x3x2x8
  EXPECT_EQ(L.offset(w, 9, 1, 2, 10), 659u);  // the last byte
  EXPECT_EQ(L.bytes(w), 660u);
}

TEST(ConvWeightLayout, Int16GroupsHoldHalfAtomicK) {
  const ConvWeights w(20, 1, 1, 4);
  const ConvWeightLayout L{64, 32, ConvPrecision::kInt16};
  EXPECT_EQ(L.group_kernels(), 16u);
  EXPECT_EQ(L.offset(w, 1, 0, 0, 0), 8u);              // 4 channels x 2 bytes
  EXPECT_EQ(L.offset(w, 16, 0, 0, 0), 16u * 4u * 2u);  // group 1
}

TEST(ConvWeights, WriteThenReadRoundTripsAndPadsTo128Bytes) {
  ConvWeights w(10, 2, 3, 11);
  std::mt19937 rng(7);
  for (auto& v : w.data) v = static_cast<std::int8_t>(rng());
  const ConvWeightLayout L{8, 8, ConvPrecision::kInt8};
  VecMemory mem(4096);
  EXPECT_EQ(write_weights(w, 256, L, mem), 768u);  // 660 rounded up to 128
  EXPECT_EQ(mem.byte(256 + 659), static_cast<std::uint8_t>(w.at(9, 1, 2, 10)));
  EXPECT_EQ(mem.byte(256 + 660), 0u);
  const ConvWeights back = read_weights(256, 10, 2, 3, 11, L, mem);
  EXPECT_EQ(back.data, w.data);
}

TEST(ConvFeature, SurfaceRoundTripWithStridesAndZeroPaddingLanes) {
  ConvCube c(3, 2, 11);
  std::mt19937 rng(3);
  for (auto& v : c.data) v = static_cast<std::int8_t>(rng());
  const ConvFeatureSurface s{1000, 40, 100, 3, 2, 11, 8};
  VecMemory mem(2048);
  write_feature_cube(c, s, ConvPrecision::kInt8, mem);
  // Element (x=2, y=1, c=9): surface 1, line 1, atom 2, lane 1.
  EXPECT_EQ(mem.byte(1000 + 100 + 40 + 16 + 1), static_cast<std::uint8_t>(c.at(2, 1, 9)));
  EXPECT_EQ(mem.byte(1000 + 100 + 40 + 16 + 3), 0u);  // lane of channel 11: padding
  const ConvCube back = read_feature_cube(s, ConvPrecision::kInt8, mem);
  EXPECT_EQ(back.data, c.data);
}

// Independent reference: pad the input explicitly, then sum over the dilated window.
std::vector<std::int64_t> reference(const ConvCube& in, const ConvWeights& w, const ConvParams& p,
                                    std::uint32_t pad_right, std::uint32_t pad_bottom) {
  const std::uint32_t pw = in.width + p.pad_left + pad_right;
  const std::uint32_t ph = in.height + p.pad_top + pad_bottom;
  std::vector<std::int64_t> padded(std::size_t{pw} * ph * in.channels, p.pad_value);
  for (std::uint32_t c = 0; c < in.channels; ++c) {
    for (std::uint32_t y = 0; y < in.height; ++y) {
      for (std::uint32_t x = 0; x < in.width; ++x) {
        padded[(std::size_t{c} * ph + y + p.pad_top) * pw + x + p.pad_left] = in.at(x, y, c);
      }
    }
  }
  std::vector<std::int64_t> out;
  for (std::uint32_t k = 0; k < w.kernels; ++k) {
    for (std::uint32_t oy = 0; oy < p.out_height; ++oy) {
      for (std::uint32_t ox = 0; ox < p.out_width; ++ox) {
        std::int64_t sum = 0;
        for (std::uint32_t c = 0; c < in.channels; ++c) {
          for (std::uint32_t r = 0; r < w.kernel_height; ++r) {
            for (std::uint32_t s = 0; s < w.kernel_width; ++s) {
              const std::uint32_t y = oy * p.stride_y + r * p.dilation_y;
              const std::uint32_t x = ox * p.stride_x + s * p.dilation_x;
              sum += padded[(std::size_t{c} * ph + y) * pw + x] * w.at(k, r, s, c);
            }
          }
        }
        out.push_back(sum);
      }
    }
  }
  return out;
}

struct Shape {
  std::uint32_t w, h, c, k, r, s, sx, sy, dx, dy, pl, pr, pt, pb;
  std::int32_t pad;
};

TEST(RunConvInt, MatchesExplicitPaddingReference) {
  const Shape shapes[] = {
      {5, 4, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, -7},   // same padding, non-zero pad value
      {9, 7, 11, 10, 3, 2, 2, 3, 1, 1, 0, 2, 1, 0, 5},  // strides, asymmetric padding
      {8, 8, 4, 3, 3, 3, 1, 1, 2, 3, 2, 2, 3, 3, 127},  // dilation
      {1, 1, 8, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},    // 1x1x8
  };
  std::mt19937 rng(11);
  for (const Shape& sh : shapes) {
    ConvCube in(sh.w, sh.h, sh.c);
    for (auto& v : in.data) v = static_cast<std::int8_t>(rng());
    ConvWeights w(sh.k, sh.r, sh.s, sh.c);
    for (auto& v : w.data) v = static_cast<std::int8_t>(rng());
    ConvParams p;
    p.stride_x = sh.sx;
    p.stride_y = sh.sy;
    p.dilation_x = sh.dx;
    p.dilation_y = sh.dy;
    p.pad_left = sh.pl;
    p.pad_top = sh.pt;
    p.pad_value = sh.pad;
    p.out_width = conv_output_size(sh.w, sh.pl, sh.pr, sh.s, sh.dx, sh.sx);
    p.out_height = conv_output_size(sh.h, sh.pt, sh.pb, sh.r, sh.dy, sh.sy);
    ASSERT_GT(p.out_width, 0u);
    ASSERT_GT(p.out_height, 0u);
    const ConvResult res = run_conv_int(in, w, p, 16);
    const std::vector<std::int64_t> want = reference(in, w, p, sh.pr, sh.pb);
    ASSERT_EQ(res.out.channels, 16u);
    std::size_t i = 0;
    for (std::uint32_t k = 0; k < sh.k; ++k) {
      for (std::uint32_t y = 0; y < p.out_height; ++y) {
        for (std::uint32_t x = 0; x < p.out_width; ++x) {
          ASSERT_EQ(res.out.at(x, y, k), want[i++]) << "k " << k << " y " << y << " x " << x;
        }
      }
    }
    for (std::uint32_t k = sh.k; k < 16; ++k) EXPECT_EQ(res.out.at(0, 0, k), 0);  // lanes
    EXPECT_EQ(res.saturated, 0u);
    EXPECT_EQ(res.macs, std::uint64_t{p.out_width} * p.out_height * sh.k * sh.r * sh.s * sh.c);
  }
}

TEST(ConvOutputSize, ProgrammingGuideFormula) {
  EXPECT_EQ(conv_output_size(13, 1, 2, 5, 1, 1), 12u);         // dc_13x15x64_5x3x64x16
  EXPECT_EQ(conv_output_size(8192, 15, 12, 2, 22, 2), 4099u);  // dc_8192x1x1_2x3x1x41
  EXPECT_EQ(conv_output_size(1, 15, 15, 3, 15, 2), 1u);
  EXPECT_EQ(conv_output_size(2, 0, 0, 3, 1, 1), 0u);  // kernel larger than the input
}

// CACC CLIP_TRUNCATE: round half away from zero, then saturate to INT32 and count.
TEST(RunConvInt, TruncationRoundsHalfAwayFromZero) {
  const std::int32_t inputs[] = {5, 6, -5, -6, 7, -7};
  const std::int32_t want[] = {1, 2, -1, -2, 2, -2};  // x / 4: 1.25 1.5 -1.25 -1.5 1.75 -1.75
  ConvCube in(6, 1, 1);
  for (int i = 0; i < 6; ++i) in.at(static_cast<std::uint32_t>(i), 0, 0) = inputs[i];
  ConvWeights w(1, 1, 1, 1);
  w.at(0, 0, 0, 0) = 1;
  ConvParams p;
  p.out_width = 6;
  p.clip_truncate = 2;
  const ConvResult res = run_conv_int(in, w, p, 8);
  for (std::uint32_t i = 0; i < 6; ++i) EXPECT_EQ(res.out.at(i, 0, 0), want[i]) << i;
}

TEST(RunConvInt, SaturatesToInt32AndCounts) {
  ConvCube in(2, 1, 3);
  ConvWeights w(1, 1, 1, 3);
  for (std::uint32_t c = 0; c < 3; ++c) {
    in.at(0, 0, c) = 32767;
    in.at(1, 0, c) = -32768;
    w.at(0, 0, 0, c) = 32767;
  }
  ConvParams p;
  p.precision = ConvPrecision::kInt16;
  p.out_width = 2;
  ConvResult res = run_conv_int(in, w, p, 4);
  EXPECT_EQ(res.out.at(0, 0, 0), INT32_MAX);  // 3 * 32767^2 = 3221028867
  EXPECT_EQ(res.out.at(1, 0, 0), INT32_MIN);
  EXPECT_EQ(res.saturated, 2u);
  p.clip_truncate = 2;  // 805257216.75 -> 805257217 fits
  res = run_conv_int(in, w, p, 4);
  EXPECT_EQ(res.out.at(0, 0, 0), 805257217);
  EXPECT_EQ(res.saturated, 0u);
}

TEST(RunConvInt, PaddingValueFillsEveryPaddedPosition) {
  ConvCube in(1, 1, 1);
  in.at(0, 0, 0) = 3;
  ConvWeights w(1, 3, 3, 1);
  for (auto& v : w.data) v = 1;
  ConvParams p;
  p.pad_left = p.pad_top = 1;
  p.pad_value = -2;
  p.out_width = p.out_height = 1;
  EXPECT_EQ(run_conv_int(in, w, p, 8).out.at(0, 0, 0), 3 + 8 * -2);
}

TEST(RunConvInt, RejectsChannelMismatchAndFp16) {
  const ConvCube in(1, 1, 4);
  const ConvWeights w(1, 1, 1, 3);
  ConvParams p;
  EXPECT_THROW((void)run_conv_int(in, w, p, 8), std::runtime_error);
  p.precision = ConvPrecision::kFp16;
  EXPECT_THROW((void)run_conv_int(in, ConvWeights(1, 1, 1, 4), p, 8), std::runtime_error);
}

}  // namespace
}  // namespace octasim::models::ops
