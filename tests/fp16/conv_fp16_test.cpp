// models/ops/conv_fp16: the FP16 direct convolution against an independent double-precision
// reference under NVDLA's CC threshold, exactness where the exact sum is representable, the
// special values and the CDMA counters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "models/numerics/float_format.hpp"
#include "models/ops/conv_fp16.hpp"
#include "models/precision/thresholds.hpp"

namespace octasim::models::ops {
namespace {

std::int32_t h(double v) {
  return static_cast<std::int16_t>(fp16_from_double(v));
}
double f16(std::int32_t bits) {
  return decode_float(static_cast<std::uint16_t>(bits), kFp16);
}
double f32(std::int32_t bits) {
  return decode_float(static_cast<std::uint32_t>(bits), kFp32);
}

struct Case {
  ConvCube in;
  ConvWeights w;
  ConvParams p;
};

Case random_case(std::uint32_t seed, std::uint32_t W, std::uint32_t H, std::uint32_t C,
                 std::uint32_t K, std::uint32_t R, std::uint32_t S, double scale_in,
                 double scale_w) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Case c{ConvCube(W, H, C), ConvWeights(K, R, S, C), ConvParams{}};
  for (auto& v : c.in.data) v = h(scale_in * u(rng));
  for (auto& v : c.w.data) v = h(scale_w * u(rng));
  c.p.precision = ConvPrecision::kFp16;
  c.p.pad_left = 1;
  c.p.pad_top = 1;
  c.p.out_width = conv_output_size(W, 1, 1, S, 1, 1);
  c.p.out_height = conv_output_size(H, 1, 0, R, 1, 1);
  c.p.pad_value = h(0.25);
  return c;
}

// The convolution in double, straight from the definition (no shared code with the model).
double reference(const Case& c, std::uint32_t k, std::uint32_t ox, std::uint32_t oy) {
  double acc = 0.0;
  for (std::uint32_t r = 0; r < c.w.kernel_height; ++r) {
    for (std::uint32_t s = 0; s < c.w.kernel_width; ++s) {
      const long y = long(oy) - long(c.p.pad_top) + long(r);
      const long x = long(ox) - long(c.p.pad_left) + long(s);
      const bool in = y >= 0 && y < long(c.in.height) && x >= 0 && x < long(c.in.width);
      for (std::uint32_t ch = 0; ch < c.in.channels; ++ch) {
        const double d =
            in ? f16(c.in.at(std::uint32_t(x), std::uint32_t(y), ch)) : f16(c.p.pad_value);
        acc += d * f16(c.w.at(k, r, s, ch));
      }
    }
  }
  return acc;
}

TEST(ConvFp16, WithinTheCcDirectThresholdOfADoubleReference) {
  const Case c = random_case(7, 6, 5, 150, 5, 3, 3, 4.0, 0.5);
  const ConvFp16Result res = run_conv_fp16(c.in, c.w, c.p, 16, false);
  const std::vector<int> max_exp = conv_fp16_max_exp(c.in, c.w, c.p);
  const int rsc = 3 * 3 * 150;
  int checked = 0;
  for (std::uint32_t k = 0; k < c.w.kernels; ++k) {
    for (std::uint32_t oy = 0; oy < c.p.out_height; ++oy) {
      for (std::uint32_t ox = 0; ox < c.p.out_width; ++ox) {
        const std::uint16_t a = fp16_from_double(f32(res.out.at(ox, oy, k)));
        const std::uint16_t b = fp16_from_double(reference(c, k, ox, oy));
        const int me = max_exp[(std::size_t{k} * c.p.out_height + oy) * c.p.out_width + ox];
        const ThresholdResult t = check_cc_direct(a, b, me, 3, 3, 150, 1.0);
        EXPECT_TRUE(t.pass) << "k " << k << " (" << ox << "," << oy << "): diff " << t.diff
                            << " bound " << t.bound;
        // A result three CC slacks plus 8 FP16 ulps away from the reference must fail the rule.
        const double slack = std::ldexp(rsc * 2.0, me - 20);
        const double off = f16(b) + 3 * slack + 8 * std::ldexp(1.0, fp16_exp(b) - 10);
        EXPECT_FALSE(check_cc_direct(fp16_from_double(off), b, me, 3, 3, 150, 1.0).pass)
            << "k " << k << " (" << ox << "," << oy << ")";
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 6 * 4 * 5);  // out 6x4 (pad 1 left/right/top, 0 bottom), 5 kernels
  // Lanes beyond the kernel count are +0.
  EXPECT_EQ(res.out.channels, 16u);
  EXPECT_EQ(res.out.at(0, 0, 15), 0);
}

TEST(ConvFp16, TheOneFp32RoundingIsTheOnlyError) {
  // The model's result is the double reference rounded to FP32 wherever the double sum itself
  // is exact: small-integer-valued data and weights make every partial sum exact in double.
  Case c = random_case(11, 4, 4, 96, 3, 3, 3, 1.0, 1.0);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> d(-64, 64);
  for (auto& v : c.in.data) v = h(d(rng));
  for (auto& v : c.w.data) v = h(d(rng) / 8.0);
  const ConvFp16Result res = run_conv_fp16(c.in, c.w, c.p, 16, false);
  for (std::uint32_t k = 0; k < 3; ++k) {
    for (std::uint32_t oy = 0; oy < c.p.out_height; ++oy) {
      for (std::uint32_t ox = 0; ox < c.p.out_width; ++ox) {
        EXPECT_EQ(static_cast<std::uint32_t>(res.out.at(ox, oy, k)),
                  fp32_bits_from_double(reference(c, k, ox, oy)));
      }
    }
  }
}

TEST(Fp16DotFp32, ExactAccumulationThenOneRounding) {
  // 1 + 2^-24 + 2^-24: accumulated in FP32 left to right it stays 1.0; exactly it is
  // 1 + 2^-23, one FP32 ulp above 1.
  const std::uint16_t data[3] = {0x3c00, 0x0001, 0x0001};  // 1, 2^-24, 2^-24
  const std::uint16_t wt[3] = {0x3c00, 0x3c00, 0x3c00};
  EXPECT_EQ(fp16_dot_fp32(data, wt, 3), 0x3f800001u);
  // Order does not matter: the same products reversed give the same bits.
  const std::uint16_t rdata[3] = {0x0001, 0x0001, 0x3c00};
  EXPECT_EQ(fp16_dot_fp32(rdata, wt, 3), 0x3f800001u);
  // Cancellation is exact: 65504*65504 - 65504*65504 + 2^-48.
  const std::uint16_t cd[3] = {0x7bff, 0x7bff, 0x0001};
  const std::uint16_t cw[3] = {0x7bff, 0xfbff, 0x0001};
  EXPECT_EQ(fp16_dot_fp32(cd, cw, 3), fp32_bits_from_double(std::ldexp(1.0, -48)));
  // Round to nearest even on a tie: 2^24 + 1 is halfway between FP32 neighbours 2^24 and
  // 2^24 + 2 -> 2^24. (2048 * 8192 = 2^24; 1 * 1.)
  const std::uint16_t td[2] = {0x6800, 0x3c00};  // 2048, 1
  const std::uint16_t tw[2] = {0x7000, 0x3c00};  // 8192, 1
  EXPECT_EQ(fp16_dot_fp32(td, tw, 2), 0x4b800000u);
}

TEST(Fp16DotFp32, SpecialValues) {
  const std::uint16_t one = 0x3c00, inf = 0x7c00, ninf = 0xfc00, nan = 0x7e00, zero = 0;
  const auto dot2 = [](std::uint16_t a0, std::uint16_t w0, std::uint16_t a1, std::uint16_t w1) {
    const std::uint16_t d[2] = {a0, a1}, w[2] = {w0, w1};
    return fp16_dot_fp32(d, w, 2);
  };
  EXPECT_EQ(dot2(inf, one, one, one), 0x7f800000u);
  EXPECT_EQ(dot2(inf, 0xbc00, one, one), 0xff800000u);
  EXPECT_EQ(dot2(inf, one, ninf, one), 0x7fc00000u);  // +inf + -inf
  EXPECT_EQ(dot2(inf, zero, one, one), 0x7fc00000u);  // inf * 0
  EXPECT_EQ(dot2(nan, one, one, one), 0x7fc00000u);
  EXPECT_EQ(dot2(zero, one, 0x8000, one), 0u);  // an exact zero sum is +0
}

TEST(ConvFp16, CountsNanAndInfInputsAndFlushesNan) {
  Case c = random_case(5, 3, 3, 8, 2, 1, 1, 1.0, 1.0);
  c.p.pad_left = c.p.pad_top = 0;
  c.p.out_width = c.p.out_height = 3;
  c.in.at(1, 1, 2) = 0x7e01;                               // NaN
  c.in.at(2, 0, 0) = 0x7c00;                               // +inf
  c.in.at(0, 2, 7) = static_cast<std::int16_t>(0xfc00);    // -inf
  c.w.at(1, 0, 0, 3) = static_cast<std::int16_t>(0xfe00);  // NaN weight of kernel 1
  const ConvFp16Result kept = run_conv_fp16(c.in, c.w, c.p, 16, false);
  EXPECT_EQ(kept.stats.nan_data, 1u);
  EXPECT_EQ(kept.stats.inf_data, 2u);
  EXPECT_EQ(kept.stats.nan_weight, 1u);
  EXPECT_EQ(kept.stats.inf_weight, 0u);
  EXPECT_EQ(static_cast<std::uint32_t>(kept.out.at(1, 1, 0)), 0x7fc00000u);  // NaN data
  EXPECT_EQ(static_cast<std::uint32_t>(kept.out.at(0, 0, 1)), 0x7fc00000u);  // NaN weight
  const ConvFp16Result flushed = run_conv_fp16(c.in, c.w, c.p, 16, true);
  EXPECT_EQ(flushed.stats.nan_data, 1u);  // counted, then flushed
  EXPECT_EQ(flushed.stats.nan_weight, 1u);
  // Element (1,1) of kernel 0 without its NaN: the dot product of the other seven channels.
  double want = 0;
  for (std::uint32_t ch = 0; ch < 8; ++ch) {
    if (ch != 2) want += f16(c.in.at(1, 1, ch)) * f16(c.w.at(0, 0, 0, ch));
  }
  EXPECT_EQ(static_cast<std::uint32_t>(flushed.out.at(1, 1, 0)), fp32_bits_from_double(want));
}

TEST(ConvFp16, PaddingTakesPaddingValueAsFp16) {
  // A 1x1x1 input of 2 and a 1x3 kernel of ones with one column of padding either side: one
  // output, -1.5 (PADDING_VALUE) + 2 + -1.5 = -1.
  ConvCube in(1, 1, 1);
  in.at(0, 0, 0) = h(2.0);
  ConvWeights w(1, 1, 3, 1);
  for (auto& v : w.data) v = h(1.0);
  ConvParams p;
  p.precision = ConvPrecision::kFp16;
  p.pad_left = 1;
  p.out_width = conv_output_size(1, 1, 1, 3, 1, 1);
  p.out_height = 1;
  p.pad_value = h(-1.5);
  const ConvFp16Result r = run_conv_fp16(in, w, p, 16, false);
  ASSERT_EQ(p.out_width, 1u);
  EXPECT_EQ(f32(r.out.at(0, 0, 0)), -1.0);
  // max_exp: pad -1.5 (exp 0) with weight 1 (exp 0) and 2 (exp 1 -> 0 after & ~3): 0.
  EXPECT_EQ(conv_fp16_max_exp(in, w, p), std::vector<int>{0});
}

TEST(ConvFp16, Fp16WeightsGroupInSixteenOnNvFull) {
  // nv_full: atomic-K 32 -> FP16 kernel groups of 16; a round trip through memory keeps every
  // weight, and kernel 16 starts the second group right after the first group's bytes.
  ConvWeights w(20, 1, 1, 70);
  for (std::size_t i = 0; i < w.data.size(); ++i) w.data[i] = h(double(i % 97) / 64.0);
  const ConvWeightLayout layout{64, 32, ConvPrecision::kFp16};
  EXPECT_EQ(layout.group_kernels(), 16u);
  EXPECT_EQ(layout.offset(w, 16, 0, 0, 0), 16u * 70 * 2);
  struct Mem final : Memory {
    std::vector<std::uint8_t> b = std::vector<std::uint8_t>(1 << 16, 0);
    void read(std::uint64_t a, std::uint8_t* d, std::size_t n) const override {
      std::copy_n(b.begin() + static_cast<long>(a), n, d);
    }
    void write(std::uint64_t a, const std::uint8_t* s, std::size_t n) override {
      std::copy_n(s, n, b.begin() + static_cast<long>(a));
    }
  } mem;
  (void)write_weights(w, 0, layout, mem);
  const ConvWeights back = read_weights(0, 20, 1, 1, 70, layout, mem);
  EXPECT_EQ(back.data, w.data);
}

}  // namespace
}  // namespace octasim::models::ops
