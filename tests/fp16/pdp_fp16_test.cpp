// FP16 pooling of models/ops/pdp against independent derivations: FP17 patterns worked out by
// hand (and NVDLA's C model's FP17 constants), hand-computed windows, and a double-precision
// reference pool in this file checked with NVDLA's PDP threshold (check_pdp) and, for data small
// enough that doubles hold every product exactly, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/numerics/float_format.hpp"
#include "models/ops/pdp.hpp"
#include "models/precision/thresholds.hpp"
#include "tests/models/vec_memory.hpp"

namespace octasim::models::ops {
namespace {

using test::VecMemory;

constexpr std::uint16_t kNan = 0x7e00, kNan2 = 0xfd01, kNan3 = 0x7c01;
constexpr std::uint16_t kPosInf = 0x7c00, kNegInf = 0xfc00;

std::uint16_t h(double x) {
  return fp16_from_double(x);
}
double v(std::uint16_t bits) {
  return decode_float(bits, kFp16);
}

// 1/k rounded to FP17 by hand (exact fractions): 1/3 = 1.0101010101|0101.. x 2^-2 rounds down to
// 1365/4096; 1/5 = 1.1001100110|0110.. x 2^-3 rounds up to 1638/8192; 1/6 -> 1365/8192;
// 1/7 = 1.0010010010|0100.. x 2^-3 -> 1170/8192.
struct Recip {
  unsigned k;
  std::uint32_t bits;
  double value;
};
const Recip kRecips[] = {{1, 0x7c00, 1.0},           {2, 0x7800, 0.5},
                         {3, 0x7555, 1365.0 / 4096}, {4, 0x7400, 0.25},
                         {5, 0x7266, 1638.0 / 8192}, {6, 0x7155, 1365.0 / 8192},
                         {7, 0x7092, 1170.0 / 8192}, {8, 0x7000, 0.125}};

double recip_value(unsigned k) {
  for (const Recip& r : kRecips) {
    if (r.k == k) return r.value;
  }
  throw std::logic_error("kernel");
}

TEST(PdpFp17, ReciprocalsAndNvdlaConstants) {
  for (const Recip& r : kRecips) {
    EXPECT_EQ(pdp_fp16_recip(r.k), r.bits) << "1/" << r.k;
    EXPECT_EQ(pdp_fp17_value(r.bits), r.value) << "1/" << r.k;
  }
  // NVDLA's C model writes the kernel widths 2.0 and 3.0 as FP17 0x8000 and 0x8200.
  EXPECT_EQ(pdp_fp17_from_double(2.0), 0x8000u);
  EXPECT_EQ(pdp_fp17_from_double(3.0), 0x8200u);
  EXPECT_EQ(pdp_fp17_value(0x8200), 3.0);
  EXPECT_EQ(pdp_fp17_value(0x18200), -3.0);
  EXPECT_EQ(pdp_fp17_from_double(-0.25), 0x17400u);
  // Round to nearest even: 1 + 2^-11 is a tie (down to 1), 1 + 3 * 2^-11 one (up to 1 + 2^-9).
  EXPECT_EQ(pdp_fp17_from_double(1.0 + std::ldexp(1.0, -11)), 0x7c00u);
  EXPECT_EQ(pdp_fp17_from_double(1.0 + 3 * std::ldexp(1.0, -11)), 0x7c02u);
  // Saturation at 0xfbff (exponent 62: (2 - 2^-10) * 2^31), no subnormals, NaN.
  EXPECT_EQ(pdp_fp17_from_double(1e20), 0xfbffu);
  EXPECT_EQ(pdp_fp17_value(0xfbff), (2.0 - 1.0 / 1024) * 2147483648.0);
  EXPECT_EQ(pdp_fp17_from_double(std::ldexp(1.0, -31)), 0u);
  EXPECT_TRUE(std::isnan(pdp_fp17_value(pdp_fp17_from_double(std::nan("")))));
  EXPECT_TRUE(std::isinf(pdp_fp17_value(0xfc00)));
  EXPECT_THROW((void)pdp_fp16_recip(9), std::runtime_error);
}

// One window of `cols` x `rows` FP16 elements in row order.
std::uint16_t pool(PdpMethod m, const std::vector<std::uint16_t>& e, unsigned cols, unsigned rows,
                   unsigned kw, unsigned kh, bool nan_to_zero = false) {
  PdpConfig c;
  c.method = m;
  c.precision = PdpPrecision::kFp16;
  c.kernel_width = kw;
  c.kernel_height = kh;
  c.recip_kernel_width = pdp_fp16_recip(kw);
  c.recip_kernel_height = pdp_fp16_recip(kh);
  c.nan_to_zero = nan_to_zero;
  c.pad_value.fill(1000);  // FP16 ignores padding values
  std::vector<std::int32_t> plane(e.begin(), e.end());
  const unsigned pad = kw * kh > cols * rows ? 1 : 0;
  return static_cast<std::uint16_t>(
      pdp_pool_window(c, plane.data(), 1, cols, cols, rows, pad * (kw - cols), pad * (kh - rows)));
}

TEST(PdpFp16Window, MaxMinAreElementsWithSignedZeros) {
  const std::vector<std::uint16_t> w{h(0.5), h(-2.0), h(3.25), h(-0.125)};
  EXPECT_EQ(pool(PdpMethod::kMax, w, 2, 2, 2, 2), h(3.25));
  EXPECT_EQ(pool(PdpMethod::kMin, w, 2, 2, 2, 2), h(-2.0));
  // NVDLA orders -0 below +0, whichever comes first.
  EXPECT_EQ(pool(PdpMethod::kMax, {0x8000, 0x0000}, 2, 1, 2, 1), 0x0000);
  EXPECT_EQ(pool(PdpMethod::kMax, {0x0000, 0x8000}, 2, 1, 2, 1), 0x0000);
  EXPECT_EQ(pool(PdpMethod::kMin, {0x0000, 0x8000}, 2, 1, 2, 1), 0x8000);
  // Infinities order as numbers in max/min and come out as infinities.
  EXPECT_EQ(pool(PdpMethod::kMax, {h(1.0), kPosInf, kNegInf, h(2.0)}, 2, 2, 2, 2), kPosInf);
  EXPECT_EQ(pool(PdpMethod::kMin, {h(1.0), kPosInf, kNegInf, h(2.0)}, 2, 2, 2, 2), kNegInf);
  // Padding never enters max: a 3x3 window with one real element.
  EXPECT_EQ(pool(PdpMethod::kMax, {h(-7.0)}, 1, 1, 3, 3), h(-7.0));
}

TEST(PdpFp16Window, AverageByHand) {
  // 2x2 of 1, 2, 3, 4: 10 * 0.5 * 0.5 = 2.5 exactly.
  EXPECT_EQ(pool(PdpMethod::kAverage, {h(1), h(2), h(3), h(4)}, 2, 2, 2, 2), h(2.5));
  // 3x3 of 0.5: 4.5 * (1365/4096)^2 = 0.5 - 0.99988 * 2^-12, nearest FP16 0.5 - 2^-12 (0x37ff):
  // the FP17 reciprocal of 3 lies below 1/3.
  EXPECT_EQ(pool(PdpMethod::kAverage, std::vector<std::uint16_t>(9, h(0.5)), 3, 3, 3, 3), 0x37ff);
  // Padding adds 0 however the pad values are programmed: 1 real element 0.75 under a 2x2 kernel
  // gives 0.75 / 4.
  EXPECT_EQ(pool(PdpMethod::kAverage, {h(0.75)}, 1, 1, 2, 2), h(0.1875));
  // Subnormal results round to nearest even: 2^-24 / 2 ties to 0, 3 * 2^-24 / 2 to 2 * 2^-24.
  EXPECT_EQ(pool(PdpMethod::kAverage, {0x0001, 0x0000}, 2, 1, 2, 1), 0x0000);
  EXPECT_EQ(pool(PdpMethod::kAverage, {0x0003, 0x0000}, 2, 1, 2, 1), 0x0002);
  // Mixed signs summed exactly: 65504 - 65504 + 2^-24 + 2^-24 over 4 is 2^-25 -> tie to 0 ...
  EXPECT_EQ(pool(PdpMethod::kAverage, {0x7bff, 0xfbff, 0x0001, 0x0001}, 2, 2, 2, 2), 0x0000);
  // ... and 3 * 2^-24 over 2 (a 2x1 window) is 1.5 * 2^-24 -> 2 * 2^-24.
  EXPECT_EQ(pool(PdpMethod::kAverage, {0x7bff, 0xfbff, 0x0003, 0x0000}, 4, 1, 2, 1), 0x0002);
}

TEST(PdpFp16Window, AverageOfInfinitiesSaturatesLikeNvdla) {
  // An infinity stands in as the largest FP17 number, so the average saturates at 65504.
  EXPECT_EQ(pool(PdpMethod::kAverage, {kPosInf, h(1.0), h(1.0), h(1.0)}, 2, 2, 2, 2), 0x7bff);
  EXPECT_EQ(pool(PdpMethod::kAverage, {kNegInf, h(1.0), h(1.0), h(1.0)}, 2, 2, 2, 2), 0xfbff);
  // Opposite infinities cancel exactly: (0.25 + 0.25) / 4.
  EXPECT_EQ(pool(PdpMethod::kAverage, {kPosInf, kNegInf, h(0.25), h(0.25)}, 2, 2, 2, 2), h(0.125));
  // A reciprocal above 1 pushes 65504 past the largest FP16 number: saturated, not infinite.
  PdpConfig c;
  c.method = PdpMethod::kAverage;
  c.precision = PdpPrecision::kFp16;
  c.recip_kernel_width = 0x7c01;  // 1 + 2^-10
  c.recip_kernel_height = 0x7c00;
  const int128_t sum_65504 = int128_t{2047} << 29;  // 65504 = 2047 * 2^5, in units of 2^-24
  EXPECT_EQ(pdp_average_fp16(c, sum_65504), 0x7bff);
  EXPECT_EQ(pdp_average_fp16(c, -sum_65504), 0xfbff);
  c.recip_kernel_height = 0xfc00;  // FP17 infinity
  try {
    (void)pdp_average_fp16(c, 1);
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "PDP: D_RECIP_KERNEL_HEIGHT 0xfc00 is not a finite FP17 number (exponent 63: "
              "infinity or NaN)");
  }
}

TEST(PdpFp16Window, NanPropagationPicksNvdlasNan) {
  // One row: the first NaN from the left.
  EXPECT_EQ(pool(PdpMethod::kMax, {h(1), kNan2, kNan3}, 3, 1, 3, 1), kNan2);
  EXPECT_EQ(pool(PdpMethod::kAverage, {h(1), kNan2, kNan3}, 3, 1, 3, 1), kNan2);
  // Rows: the lowest row's NaN replaces the ones above.
  const std::vector<std::uint16_t> w{kNan, h(1), h(2), kNan3, kNan2, h(3)};
  EXPECT_EQ(pool(PdpMethod::kMin, w, 2, 3, 2, 3), kNan2);
  EXPECT_EQ(pool(PdpMethod::kAverage, w, 2, 3, 2, 3), kNan2);
  // NaN wins over infinities in the average.
  EXPECT_EQ(pool(PdpMethod::kAverage, {kPosInf, kNan}, 2, 1, 2, 1), kNan);
  // D_NAN_FLUSH_TO_ZERO: NaNs pool as +0.
  EXPECT_EQ(pool(PdpMethod::kAverage, {kNan, h(1), h(2), h(3)}, 2, 2, 2, 2, true), h(1.5));
  EXPECT_EQ(pool(PdpMethod::kMax, {kNan, h(-1), h(-2), h(-3)}, 2, 2, 2, 2, true), 0x0000);
}

// A random FP16 layer pooled by run_pdp_layer and by the reference below.
struct Fp16Layer {
  PdpLayerParams p;
  std::vector<std::uint16_t> in;  // in_width x in_height x lanes (all lanes of every atom)
  unsigned lanes = 0;
};

constexpr std::uint64_t kSrc = 0x100, kDst = 0x8000;

Fp16Layer make_layer(PdpMethod m, unsigned w, unsigned hgt, unsigned ch, unsigned k, unsigned s,
                     unsigned pad, double scale, unsigned seed) {
  Fp16Layer l;
  PdpConfig& c = l.p.cfg;
  c.method = m;
  c.precision = PdpPrecision::kFp16;
  c.kernel_width = c.kernel_height = k;
  c.stride_width = c.stride_height = s;
  c.pad_left = c.pad_right = c.pad_top = c.pad_bottom = pad;
  c.recip_kernel_width = c.recip_kernel_height = pdp_fp16_recip(k);
  l.p.in_width = w;
  l.p.in_height = hgt;
  l.p.channels = ch;
  l.p.out_width = (w + 2 * pad - k) / s + 1;
  l.p.out_height = (hgt + 2 * pad - k) / s + 1;
  l.p.atom_bytes = 32;
  l.lanes = 16 * ((ch + 15) / 16);
  l.p.src = kSrc;
  l.p.src_line_stride = w * 32;
  l.p.src_surface_stride = l.p.src_line_stride * hgt;
  l.p.dst = kDst;
  l.p.dst_line_stride = l.p.out_width * 32;
  l.p.dst_surface_stride = l.p.dst_line_stride * l.p.out_height;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-scale, scale);
  l.in.resize(std::size_t{w} * hgt * l.lanes);
  for (auto& x : l.in) x = h(d(rng));
  return l;
}

// Element (x, y, lane) of the layer's input in memory order.
std::size_t at(const Fp16Layer& l, unsigned x, unsigned y, unsigned lane) {
  const unsigned surface = lane / 16;
  return ((std::size_t{surface} * l.p.in_height + y) * l.p.in_width + x) * 16 + lane % 16;
}

void load(const Fp16Layer& l, VecMemory& m) {
  for (unsigned y = 0; y < l.p.in_height; ++y) {
    for (unsigned x = 0; x < l.p.in_width; ++x) {
      for (unsigned lane = 0; lane < l.lanes; ++lane) {
        const std::uint16_t e = l.in[at(l, x, y, lane)];
        const std::size_t off = at(l, x, y, lane) * 2;
        m.write(kSrc + off, reinterpret_cast<const std::uint8_t*>(&e), 2);
      }
    }
  }
}

std::uint16_t output(const Fp16Layer& l, const VecMemory& m, unsigned ox, unsigned oy,
                     unsigned lane) {
  const unsigned surface = lane / 16;
  const std::uint64_t a = kDst + surface * l.p.dst_surface_stride + oy * l.p.dst_line_stride +
                          ox * 32 + (lane % 16) * 2;
  std::uint8_t b[2];
  m.read(a, b, 2);
  return static_cast<std::uint16_t>(b[0] | b[1] << 8);
}

// The reference: the window's real elements in double; average = exact sum / kernel size (the
// exact average) and, separately, exact sum * the hand-rounded reciprocals (exact in double for
// |x| < 2^-4: 64 elements of at most 2^20 units of 2^-24 times two 11-bit mantissas).
struct RefWindow {
  double max = -INFINITY, min = INFINITY, sum = 0, max_abs = 0;
};

RefWindow ref_window(const Fp16Layer& l, unsigned ox, unsigned oy, unsigned lane) {
  const PdpConfig& c = l.p.cfg;
  RefWindow r;
  for (unsigned ky = 0; ky < c.kernel_height; ++ky) {
    for (unsigned kx = 0; kx < c.kernel_width; ++kx) {
      const int x = static_cast<int>(ox * c.stride_width + kx) - static_cast<int>(c.pad_left);
      const int y = static_cast<int>(oy * c.stride_height + ky) - static_cast<int>(c.pad_top);
      if (x < 0 || y < 0 || x >= static_cast<int>(l.p.in_width) ||
          y >= static_cast<int>(l.p.in_height)) {
        continue;
      }
      const double e = v(l.in[at(l, static_cast<unsigned>(x), static_cast<unsigned>(y), lane)]);
      r.max = std::max(r.max, e);
      r.min = std::min(r.min, e);
      r.sum += e;
      r.max_abs = std::max(r.max_abs, std::fabs(e));
    }
  }
  return r;
}

void check_layer_against_reference(const Fp16Layer& l) {
  VecMemory m(0x20000);
  load(l, m);
  const PdpLayerResult res = run_pdp_layer(l.p, m);
  EXPECT_EQ(res.nan_input, 0u);
  EXPECT_EQ(res.nan_output, 0u);
  const PdpConfig& c = l.p.cfg;
  const double kernel = c.kernel_width * c.kernel_height;
  const double recips = recip_value(c.kernel_width) * recip_value(c.kernel_height);
  int nonexact = 0;
  for (unsigned oy = 0; oy < l.p.out_height; ++oy) {
    for (unsigned ox = 0; ox < l.p.out_width; ++ox) {
      for (unsigned lane = 0; lane < l.lanes; ++lane) {
        const std::uint16_t got = output(l, m, ox, oy, lane);
        const RefWindow r = ref_window(l, ox, oy, lane);
        if (c.method == PdpMethod::kMax) {
          ASSERT_EQ(v(got), r.max) << ox << "," << oy << "," << lane;
          continue;
        }
        if (c.method == PdpMethod::kMin) {
          ASSERT_EQ(v(got), r.min) << ox << "," << oy << "," << lane;
          continue;
        }
        // Bit for bit: octasim's defined order, derived independently.
        ASSERT_EQ(got, h(r.sum * recips)) << ox << "," << oy << "," << lane;
        // NVDLA's PDP rule against the exact average.
        const std::uint16_t exact = h(r.sum / kernel);
        const ThresholdResult t = check_pdp(got, exact, r.max_abs);
        ASSERT_TRUE(t.pass) << ox << "," << oy << "," << lane << ": " << v(got) << " vs "
                            << v(exact) << " diff " << t.diff << " bound " << t.bound;
        if (got != exact) ++nonexact;
      }
    }
  }
  // The FP17 reciprocals of 3 and 5 are inexact: some averages land one step off.
  if (c.method == PdpMethod::kAverage && (c.kernel_width == 3 || c.kernel_width == 5)) {
    EXPECT_GT(nonexact, 0);
  }
}

TEST(PdpFp16Layer, Average3x3Stride2Pad1MatchesReference) {
  check_layer_against_reference(make_layer(PdpMethod::kAverage, 9, 7, 20, 3, 2, 1, 0.06, 1));
}

TEST(PdpFp16Layer, AverageGlobal5x5MatchesReference) {
  check_layer_against_reference(make_layer(PdpMethod::kAverage, 5, 5, 48, 5, 1, 0, 0.06, 2));
}

TEST(PdpFp16Layer, Average2x2MatchesReference) {
  check_layer_against_reference(make_layer(PdpMethod::kAverage, 8, 6, 16, 2, 2, 0, 0.06, 3));
}

TEST(PdpFp16Layer, MaxAndMinAreExact) {
  check_layer_against_reference(make_layer(PdpMethod::kMax, 9, 7, 20, 3, 2, 1, 1000.0, 4));
  check_layer_against_reference(make_layer(PdpMethod::kMin, 8, 6, 16, 2, 2, 0, 1000.0, 5));
}

TEST(PdpFp16Layer, CountsNanAndInfinityInAndOut) {
  Fp16Layer l = make_layer(PdpMethod::kMax, 4, 4, 16, 2, 2, 0, 1.0, 6);
  l.in[at(l, 0, 0, 0)] = kNan;     // window (0, 0) lane 0
  l.in[at(l, 3, 3, 5)] = kNan2;    // window (1, 1) lane 5
  l.in[at(l, 2, 3, 5)] = kNan3;    // the same window, same lane
  l.in[at(l, 1, 2, 9)] = kPosInf;  // window (0, 1) lane 9
  l.in[at(l, 3, 0, 15)] = kNegInf;
  VecMemory m(0x20000);
  load(l, m);
  const PdpLayerResult res = run_pdp_layer(l.p, m);
  EXPECT_EQ(res.nan_input, 3u);
  EXPECT_EQ(res.inf_input, 2u);
  EXPECT_EQ(res.nan_output, 2u);
  EXPECT_EQ(output(l, m, 0, 0, 0), kNan);
  EXPECT_EQ(output(l, m, 1, 1, 5), kNan3);  // first from the left in the row
  EXPECT_EQ(output(l, m, 0, 1, 9), kPosInf);

  // Flushed NaNs are still counted as inputs but no output is NaN.
  l.p.cfg.nan_to_zero = true;
  VecMemory m2(0x20000);
  load(l, m2);
  const PdpLayerResult flushed = run_pdp_layer(l.p, m2);
  EXPECT_EQ(flushed.nan_input, 3u);
  EXPECT_EQ(flushed.nan_output, 0u);
}

}  // namespace
}  // namespace octasim::models::ops
