// Tensor-core GEMM reference (models/ops/gemm.hpp) against independent test-side derivations:
// a naive std::fma loop on floats, an exact 128-bit fixed-point FP16 accumulation with its own
// rounding, int64 sums with hand-derived saturation counts, and a direct convolution loop.
#include "models/ops/gemm.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "models/numerics/float_format.hpp"

namespace octasim::models::ops {
namespace {

__extension__ typedef __int128 i128;  // NOLINT: exact FP16 sums need 81 bits

constexpr GemmType kAllTypes[] = {GemmType::kFp16Fp32,  GemmType::kFp16Fp16,  GemmType::kBf16Fp32,
                                  GemmType::kInt8Int32, GemmType::kInt4Int32, GemmType::kFp32};

bool is_int_type(GemmType t) {
  return t == GemmType::kInt8Int32 || t == GemmType::kInt4Int32;
}

// A random value of the input type (drawn and rounded with float_format, not gemm.cpp).
double random_input(GemmType t, std::mt19937& rng, double range = 2.0) {
  std::uniform_real_distribution<double> u(-range, range);
  switch (t) {
    case GemmType::kFp16Fp32:
    case GemmType::kFp16Fp16:
      return decode_float(encode_float(u(rng), kFp16), kFp16);
    case GemmType::kBf16Fp32:
      return decode_float(encode_float(u(rng), kBf16), kBf16);
    case GemmType::kFp32:
      return static_cast<double>(static_cast<float>(u(rng)));
    case GemmType::kInt8Int32:
      return std::uniform_int_distribution<int>(-128, 127)(rng);
    case GemmType::kInt4Int32:
      return std::uniform_int_distribution<int>(-8, 7)(rng);
  }
  return 0.0;
}

std::vector<double> random_inputs(GemmType t, std::size_t count, std::mt19937& rng,
                                  double range = 2.0) {
  std::vector<double> v(count);
  for (auto& x : v) x = random_input(t, rng, range);
  return v;
}

// A random accumulator value (C). INT32: half of them within 255 of a limit, so that
// accumulations saturate.
double random_acc(GemmType t, std::mt19937& rng) {
  if (is_int_type(t)) {
    const std::int32_t v = std::uniform_int_distribution<std::int32_t>(INT32_MIN, INT32_MAX)(rng);
    if ((v & 1) == 0) return v;
    const double off = std::uniform_int_distribution<int>(0, 255)(rng);
    return v < 0 ? -2147483648.0 + off : 2147483647.0 - off;
  }
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  if (t == GemmType::kFp16Fp16) return decode_float(encode_float(u(rng), kFp16), kFp16);
  return static_cast<double>(static_cast<float>(u(rng)));
}

// --- test-side FP16 accumulation: exact in units of 2^-48, rounded by hand -------------------

i128 to_units(double v) {  // v: an FP16 value or an FP16 x FP16 product (multiple of 2^-48)
  const double scaled = std::ldexp(v, 48);
  // |scaled| < 2^81: split into two exactly representable halves.
  const double hi = std::ldexp(std::trunc(std::ldexp(scaled, -40)), 40);
  const double lo = scaled - hi;
  return static_cast<i128>(static_cast<std::int64_t>(std::ldexp(hi, -40))) * (i128{1} << 40) +
         static_cast<i128>(static_cast<std::int64_t>(lo));
}

// Rounds units * 2^-48 to FP16 (RNE, overflow to inf) and returns the value.
double fp16_round_units(i128 units, bool negative_zero_sign) {
  if (units == 0) return negative_zero_sign ? -0.0 : 0.0;
  const bool neg = units < 0;
  i128 mag = neg ? -units : units;
  int top = 0;
  while ((mag >> (top + 1)) != 0) ++top;  // value's top bit is 2^(top - 48)
  const int qe = std::max(top - 48 - 10, -24);
  const int shift = qe + 48;  // >= 24
  i128 q = mag >> shift;
  const i128 rem = mag - (q << shift);
  const i128 half = i128{1} << (shift - 1);
  if (rem > half || (rem == half && (q & 1) != 0)) ++q;
  double v = std::ldexp(static_cast<double>(static_cast<std::int64_t>(q)), qe);
  if (v > 65504.0) v = std::numeric_limits<double>::infinity();
  return neg ? -v : v;
}

// One FP16-accumulator step acc + a*b, exactly rounded once (finite operands).
double fp16_step_exact(double acc, double a, double b) {
  const double p = a * b;  // exact (22 bits)
  const i128 s = to_units(p) + to_units(acc);
  // An exact zero sum: +0 unless both addends are -0 (IEEE RNE).
  const bool negzero = std::signbit(p) && std::signbit(acc);
  return fp16_round_units(s, negzero);
}

// --- test-side naive GEMM ----------------------------------------------------------------------

struct Expected {
  std::vector<double> d;
  std::uint64_t saturations = 0;
};

Expected naive_gemm(GemmType t, unsigned m, unsigned n, unsigned k, const std::vector<double>& a,
                    const std::vector<double>& b, const std::vector<double>* c) {
  Expected e;
  e.d.assign(std::size_t{m} * n, 0.0);
  const unsigned mk = t == GemmType::kInt8Int32 ? 16 : 32;
  for (unsigned i = 0; i < m; ++i) {
    for (unsigned j = 0; j < n; ++j) {
      const double c0 = c ? (*c)[std::size_t{i} * n + j] : 0.0;
      if (is_int_type(t)) {
        auto acc = static_cast<std::int64_t>(c0);
        std::int64_t chunk = 0;
        for (unsigned kk = 0; kk < k; ++kk) {
          chunk += static_cast<std::int64_t>(a[std::size_t{i} * k + kk]) *
                   static_cast<std::int64_t>(b[std::size_t{kk} * n + j]);
          if ((kk + 1) % mk == 0 || kk + 1 == k) {
            acc += chunk;
            chunk = 0;
            if (acc > INT32_MAX) {
              acc = INT32_MAX;
              ++e.saturations;
            }
            if (acc < INT32_MIN) {
              acc = INT32_MIN;
              ++e.saturations;
            }
          }
        }
        e.d[std::size_t{i} * n + j] = static_cast<double>(acc);
      } else if (t == GemmType::kFp16Fp16) {
        double acc = c0;
        for (unsigned kk = 0; kk < k; ++kk) {
          acc = fp16_step_exact(acc, a[std::size_t{i} * k + kk], b[std::size_t{kk} * n + j]);
        }
        e.d[std::size_t{i} * n + j] = acc;
      } else {
        auto acc = static_cast<float>(c0);
        for (unsigned kk = 0; kk < k; ++kk) {
          acc = std::fma(static_cast<float>(a[std::size_t{i} * k + kk]),
                         static_cast<float>(b[std::size_t{kk} * n + j]), acc);
        }
        e.d[std::size_t{i} * n + j] = static_cast<double>(acc);
      }
    }
  }
  return e;
}

// Bitwise equality of two accumulator values of type t (sign of zero included).
bool same_bits(GemmType t, double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  if (is_int_type(t)) return x == y;
  return x == y && std::signbit(x) == std::signbit(y);
}

TEST(GemmTypes, InfoAndParse) {
  const char* names[] = {"fp16_fp32", "fp16_fp16", "bf16_fp32", "int8_int32", "int4_int32", "fp32"};
  const unsigned bits[] = {16, 16, 16, 8, 4, 32};
  const unsigned acc[] = {4, 2, 4, 4, 4, 4};
  const unsigned mult[] = {8, 8, 8, 16, 32, 1};
  const unsigned mk[] = {4, 4, 4, 16, 32, 1};
  for (int i = 0; i < 6; ++i) {
    const GemmTypeInfo& info = gemm_type_info(kAllTypes[i]);
    EXPECT_STREQ(info.name, names[i]);
    EXPECT_EQ(info.input_bits, bits[i]);
    EXPECT_EQ(info.acc_bytes, acc[i]);
    EXPECT_EQ(info.shape_multiple, mult[i]);
    EXPECT_EQ(info.mma_k, mk[i]);
    ASSERT_TRUE(parse_gemm_type(names[i]).has_value());
    EXPECT_EQ(*parse_gemm_type(names[i]), kAllTypes[i]);
  }
  EXPECT_EQ(gemm_type_info(GemmType::kInt8Int32).mma_m, 8u);
  EXPECT_EQ(gemm_type_info(GemmType::kFp16Fp32).mma_n, 4u);
  EXPECT_FALSE(parse_gemm_type("fp16").has_value());
  EXPECT_FALSE(parse_gemm_type("").has_value());
}

TEST(GemmStorage, Int4PackingLowNibbleFirstAcrossRows) {
  // A 3x3 INT4 matrix: 9 elements in 5 bytes, element 3 (row 1, col 0) shares byte 1 with 2.
  const std::vector<double> v{1, -2, 3, -8, 7, 0, -1, 5, -3};
  const auto bytes = encode_gemm_input(GemmType::kInt4Int32, v);
  ASSERT_EQ(bytes.size(), 5u);
  EXPECT_EQ(bytes[0], 0xE1);  // -2 high, 1 low
  EXPECT_EQ(bytes[1], 0x83);  // -8 high, 3 low
  EXPECT_EQ(bytes[2], 0x07);
  EXPECT_EQ(bytes[3], 0x5F);
  EXPECT_EQ(bytes[4], 0x0D);  // the odd last element alone, high nibble 0
  EXPECT_EQ(decode_gemm_input(GemmType::kInt4Int32, bytes, 9), v);
  EXPECT_EQ(gemm_input_bytes(GemmType::kInt4Int32, 9), 5u);
  EXPECT_EQ(gemm_input_bytes(GemmType::kInt4Int32, 10), 5u);
  EXPECT_EQ(gemm_input_bytes(GemmType::kInt8Int32, 9), 9u);
  EXPECT_EQ(gemm_input_bytes(GemmType::kBf16Fp32, 9), 18u);
  EXPECT_EQ(gemm_acc_bytes(GemmType::kFp16Fp16, 9), 18u);
  EXPECT_EQ(gemm_acc_bytes(GemmType::kInt4Int32, 9), 36u);

  std::mt19937 rng(7);
  for (std::size_t count : {1u, 2u, 31u, 64u, 101u}) {
    const auto r = random_inputs(GemmType::kInt4Int32, count, rng);
    EXPECT_EQ(
        decode_gemm_input(GemmType::kInt4Int32, encode_gemm_input(GemmType::kInt4Int32, r), count),
        r);
  }
}

TEST(GemmStorage, IntegerEncodingRoundsHalfAwayAndSaturates) {
  const auto i4 =
      decode_gemm_input(GemmType::kInt4Int32,
                        encode_gemm_input(GemmType::kInt4Int32, {9.0, -9.6, 2.5, -2.5, 0.49}), 5);
  EXPECT_EQ(i4, (std::vector<double>{7, -8, 3, -3, 0}));
  const auto i8 = decode_gemm_input(
      GemmType::kInt8Int32, encode_gemm_input(GemmType::kInt8Int32, {200.0, -129.0, -0.5}), 3);
  EXPECT_EQ(i8, (std::vector<double>{127, -128, -1}));
  const auto acc = decode_gemm_acc(GemmType::kInt8Int32,
                                   encode_gemm_acc(GemmType::kInt8Int32, {3e9, -3e9, -7.5}), 3);
  EXPECT_EQ(acc, (std::vector<double>{2147483647.0, -2147483648.0, -8.0}));
  // Float storage: RNE, little endian.
  const auto f16 = encode_gemm_input(GemmType::kFp16Fp16, {1.0 + std::ldexp(1.0, -11)});
  EXPECT_EQ(f16, (std::vector<std::uint8_t>{0x00, 0x3c}));  // tie to even: 1.0
  const auto b16 = encode_gemm_input(GemmType::kBf16Fp32, {-2.0});
  EXPECT_EQ(b16, (std::vector<std::uint8_t>{0x00, 0xc0}));
}

class GemmTypeTest : public ::testing::TestWithParam<GemmType> {};

TEST_P(GemmTypeTest, ReferenceMatchesNaiveLoop) {
  const GemmType t = GetParam();
  std::mt19937 rng(11 + static_cast<unsigned>(t));
  struct Shape {
    unsigned m, n, k;
  };
  for (const Shape s : {Shape{13, 7, 29}, Shape{1, 1, 1}, Shape{8, 8, 64}, Shape{5, 11, 100}}) {
    const auto a = random_inputs(t, std::size_t{s.m} * s.k, rng);
    const auto b = random_inputs(t, std::size_t{s.k} * s.n, rng);
    std::vector<double> c(std::size_t{s.m} * s.n);
    for (auto& x : c) x = random_acc(t, rng);
    const auto as = encode_gemm_input(t, a), bs = encode_gemm_input(t, b);
    const auto cs = encode_gemm_acc(t, c);
    for (bool with_c : {false, true}) {
      const GemmOperands ops{t, s.m, s.n, s.k, as.data(), bs.data(), with_c ? cs.data() : nullptr};
      const GemmResult r = gemm_reference(ops);
      ASSERT_EQ(r.d.size(), gemm_acc_bytes(t, std::size_t{s.m} * s.n));
      const auto got = decode_gemm_acc(t, r.d, std::size_t{s.m} * s.n);
      const Expected e = naive_gemm(t, s.m, s.n, s.k, a, b, with_c ? &c : nullptr);
      EXPECT_EQ(r.saturations, e.saturations);
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(same_bits(t, got[i], e.d[i]))
            << gemm_type_info(t).name << " " << s.m << "x" << s.n << "x" << s.k << " element " << i
            << ": " << got[i] << " vs " << e.d[i];
      }
    }
  }
}

// Any tiling with k split at multiples of mma_k gives gemm_reference's bits and saturations.
TEST_P(GemmTypeTest, TileDecompositionIsBitExact) {
  const GemmType t = GetParam();
  const unsigned mk = gemm_type_info(t).mma_k;
  std::mt19937 rng(100 + static_cast<unsigned>(t));
  struct Shape {
    unsigned m, n, k;
  };
  for (const Shape s : {Shape{13, 7, 29}, Shape{33, 17, 70}, Shape{16, 16, 96}, Shape{2, 3, 5}}) {
    const auto as = encode_gemm_input(t, random_inputs(t, std::size_t{s.m} * s.k, rng));
    const auto bs = encode_gemm_input(t, random_inputs(t, std::size_t{s.k} * s.n, rng));
    std::vector<double> c(std::size_t{s.m} * s.n);
    for (auto& x : c) x = random_acc(t, rng);  // INT: full range, so some tiles saturate
    const auto cs = encode_gemm_acc(t, c);
    const GemmOperands ops{t, s.m, s.n, s.k, as.data(), bs.data(), cs.data()};
    const GemmResult ref = gemm_reference(ops);
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<std::uint8_t> d(ref.d.size(), 0xAB);
      std::uint64_t sat = 0;
      const unsigned tm = std::uniform_int_distribution<unsigned>(1, s.m)(rng);
      const unsigned tn = std::uniform_int_distribution<unsigned>(1, s.n)(rng);
      for (unsigned m0 = 0; m0 < s.m; m0 += tm) {
        for (unsigned n0 = 0; n0 < s.n; n0 += tn) {
          const unsigned m1 = std::min(s.m, m0 + tm), n1 = std::min(s.n, n0 + tn);
          std::vector<double> acc;
          gemm_load_c(ops, m0, m1, n0, n1, acc);
          for (unsigned k0 = 0; k0 < s.k;) {
            const unsigned steps = std::uniform_int_distribution<unsigned>(1, 3)(rng);
            const unsigned k1 = std::min(s.k, k0 + steps * mk);
            sat += gemm_accumulate(ops, m0, m1, n0, n1, k0, k1, acc);
            k0 = k1;
          }
          gemm_store_d(ops, m0, m1, n0, n1, acc, d.data());
        }
      }
      EXPECT_EQ(d, ref.d) << gemm_type_info(t).name << " " << s.m << "x" << s.n << "x" << s.k
                          << " tile " << tm << "x" << tn;
      EXPECT_EQ(sat, ref.saturations);
    }
    if (is_int_type(t) && s.k >= 29) {
      EXPECT_GT(ref.saturations, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GemmTypeTest, ::testing::ValuesIn(kAllTypes),
                         [](const ::testing::TestParamInfo<GemmType>& i) {
                           return std::string(gemm_type_info(i.param).name);
                         });

TEST(GemmInt, SaturationCountedPerMmaStep) {
  // INT8, 1x1xK with all products (-128)(-128) = 16384: each 16-wide step adds 262144. After
  // step j the exact sum is j * 2^18, which first exceeds INT32_MAX at j = 8192 (2^31); with
  // 8200 steps the accumulator saturates at steps 8192..8200: 9 saturations.
  const unsigned k = 16 * 8200;
  const std::vector<double> ones(k, -128.0);
  const auto as = encode_gemm_input(GemmType::kInt8Int32, ones);
  const GemmOperands ops{GemmType::kInt8Int32, 1, 1, k, as.data(), as.data(), nullptr};
  const GemmResult r = gemm_reference(ops);
  EXPECT_EQ(r.saturations, 9u);
  EXPECT_EQ(decode_gemm_acc(GemmType::kInt8Int32, r.d, 1)[0], 2147483647.0);

  // INT4 (32-wide steps): C = INT32_MAX - 10, step 1 adds 100 (saturates), step 2 adds -50.
  // The per-step saturation leaves INT32_MAX - 50, not the exact INT32_MAX + 40 clamped.
  std::vector<double> a(64, 0.0), b(64, 1.0);
  for (int i = 0; i < 20; ++i) a[i] = 5;
  for (int i = 32; i < 42; ++i) a[i] = -5;
  const auto a4 = encode_gemm_input(GemmType::kInt4Int32, a);
  const auto b4 = encode_gemm_input(GemmType::kInt4Int32, b);
  const auto c4 = encode_gemm_acc(GemmType::kInt4Int32, {2147483647.0 - 10});
  const GemmOperands ops4{GemmType::kInt4Int32, 1, 1, 64, a4.data(), b4.data(), c4.data()};
  const GemmResult r4 = gemm_reference(ops4);
  EXPECT_EQ(r4.saturations, 1u);
  EXPECT_EQ(decode_gemm_acc(GemmType::kInt4Int32, r4.d, 1)[0], 2147483647.0 - 50);
  // Low side: C = INT32_MIN + 5, a product sum of -100 saturates to INT32_MIN.
  const auto c4n = encode_gemm_acc(GemmType::kInt4Int32, {-2147483648.0 + 5});
  std::vector<double> an(64, 0.0);
  for (int i = 0; i < 20; ++i) an[i] = -5;
  const auto a4n = encode_gemm_input(GemmType::kInt4Int32, an);
  const GemmOperands ops4n{GemmType::kInt4Int32, 1, 1, 64, a4n.data(), b4.data(), c4n.data()};
  const GemmResult r4n = gemm_reference(ops4n);
  EXPECT_EQ(r4n.saturations, 1u);
  EXPECT_EQ(decode_gemm_acc(GemmType::kInt4Int32, r4n.d, 1)[0], -2147483648.0);
}

std::uint32_t d_word(const GemmResult& r, std::size_t i, unsigned bytes) {
  std::uint32_t v = 0;
  for (unsigned b = 0; b < bytes; ++b) v |= std::uint32_t{r.d[i * bytes + b]} << (8 * b);
  return v;
}

TEST(GemmSpecial, NanAndInfFp32Accumulator) {
  const double inf = std::numeric_limits<double>::infinity();
  for (GemmType t : {GemmType::kFp16Fp32, GemmType::kBf16Fp32, GemmType::kFp32}) {
    const std::vector<double> a{-0.0, 2.0, inf, 1.0,    // row 0
                                1.0,  inf, inf, 0.0};   // row 1
    const std::vector<double> b{1.0,  1.0,  1.0, 1.0,   //
                                -0.0, -0.0, 1.0, 1.0,   //
                                0.0,  -0.0, 1.0, -1.0,  //
                                0.0,  -0.0, 3.0, 1.0};
    const auto as = encode_gemm_input(t, a), bs = encode_gemm_input(t, b);
    const GemmOperands ops{t, 2, 4, 4, as.data(), bs.data(), nullptr};
    const GemmResult r = gemm_reference(ops);
    EXPECT_EQ(d_word(r, 0, 4), 0x7fc00000u);  // inf * 0: NaN, stored canonical
    EXPECT_EQ(d_word(r, 1, 4), 0x7fc00000u);  // inf * -0
    EXPECT_EQ(d_word(r, 2, 4), 0x7f800000u);  // 2 + inf + 3 = +inf
    EXPECT_EQ(d_word(r, 3, 4), 0xff800000u);  // 2 - inf + 1 = -inf
    EXPECT_EQ(d_word(r, 4, 4), 0x7fc00000u);  // inf * -0
    EXPECT_EQ(d_word(r, 5, 4), 0x7fc00000u);
    EXPECT_EQ(d_word(r, 6, 4), 0x7f800000u);  // inf + inf
    EXPECT_EQ(d_word(r, 7, 4), 0x7fc00000u);  // inf - inf
  }
}

TEST(GemmSpecial, SignedZeros) {
  for (GemmType t :
       {GemmType::kFp16Fp32, GemmType::kFp16Fp16, GemmType::kBf16Fp32, GemmType::kFp32}) {
    const unsigned bytes = gemm_type_info(t).acc_bytes;
    const std::uint32_t neg_zero = bytes == 2 ? 0x8000u : 0x80000000u;
    // Every product -0: (-0)(+1) and (+0)(-1).
    const auto as = encode_gemm_input(t, {-0.0, 0.0});
    const auto bs = encode_gemm_input(t, {1.0, -1.0});
    const GemmOperands no_c{t, 1, 1, 2, as.data(), bs.data(), nullptr};
    EXPECT_EQ(d_word(gemm_reference(no_c), 0, bytes), 0u) << "no C: acc starts at +0";
    const auto cs = encode_gemm_acc(t, {-0.0});
    const GemmOperands with_c{t, 1, 1, 2, as.data(), bs.data(), cs.data()};
    EXPECT_EQ(d_word(gemm_reference(with_c), 0, bytes), neg_zero) << "C = -0 stays -0";
    // An exact cancellation gives +0 (RNE): 1*1 + 1*(-1) from C = -0.
    const auto a2 = encode_gemm_input(t, {1.0, 1.0});
    const GemmOperands cancel{t, 1, 1, 2, a2.data(), bs.data(), cs.data()};
    EXPECT_EQ(d_word(gemm_reference(cancel), 0, bytes), 0u);
  }
}

TEST(GemmSpecial, Fp16AccumulatorOverflowAndNan) {
  const GemmType t = GemmType::kFp16Fp16;
  // C = 65504 (max FP16). +8 rounds back to 65504; +16 is the tie 65520 -> even -> inf.
  const auto cs = encode_gemm_acc(t, {65504.0, 65504.0, -65504.0});
  const auto as = encode_gemm_input(t, {1.0});
  const auto bs = encode_gemm_input(t, {8.0, 16.0, -16.0});
  const GemmOperands ops{t, 1, 3, 1, as.data(), bs.data(), cs.data()};
  const GemmResult r = gemm_reference(ops);
  EXPECT_EQ(d_word(r, 0, 2), 0x7bffu);
  EXPECT_EQ(d_word(r, 1, 2), 0x7c00u);
  EXPECT_EQ(d_word(r, 2, 2), 0xfc00u);
  // A = [[300, 300], [inf, 1]], B = [[300, 0], [-300, -inf]]:
  // 300*300 = 90000 overflows to inf, and an inf accumulator stays inf when -90000 is added;
  // 0 + 300*(-inf) = -inf; inf*300 + 1*(-300) = inf; inf*0 = NaN, stored canonical 0x7e00.
  const double inf = std::numeric_limits<double>::infinity();
  const auto a2 = encode_gemm_input(t, {300.0, 300.0, inf, 1.0});
  const auto b2 = encode_gemm_input(t, {300.0, 0.0, -300.0, -inf});
  const GemmOperands ops2{t, 2, 2, 2, a2.data(), b2.data(), nullptr};
  const GemmResult r2 = gemm_reference(ops2);
  EXPECT_EQ(d_word(r2, 0, 2), 0x7c00u);
  EXPECT_EQ(d_word(r2, 1, 2), 0xfc00u);
  EXPECT_EQ(d_word(r2, 2, 2), 0x7c00u);
  EXPECT_EQ(d_word(r2, 3, 2), 0x7e00u);
}

TEST(GemmSpecial, Fp16AccumulatorSingleRounding) {
  // 2049 = 3 * 683 is halfway between 2048 and 2050; added to acc = 0 it ties to even 2048,
  // while 2049 + 2^-24 (C = smallest subnormal) must round up to 2050 — a double-rounding
  // implementation through float (2049 + 2^-24 rounds to 2049 in FP32) would give 2048.
  const GemmType t = GemmType::kFp16Fp16;
  const auto as = encode_gemm_input(t, {3.0});
  const auto bs = encode_gemm_input(t, {683.0, 683.0});
  const auto cs = encode_gemm_acc(t, {0.0, std::ldexp(1.0, -24)});
  const GemmOperands ops{t, 1, 2, 1, as.data(), bs.data(), cs.data()};
  const auto d = decode_gemm_acc(t, gemm_reference(ops).d, 2);
  EXPECT_EQ(d[0], 2048.0);
  EXPECT_EQ(d[1], 2050.0);
}

// Single FP16-accumulator steps (K = 1, C random) over the whole FP16 range, subnormals and
// overflow included, against the exact 128-bit sum: the double-sum shortcut must never round
// differently.
TEST(GemmSpecial, Fp16AccumulatorStepMatchesExactSumOverTheRange) {
  const GemmType t = GemmType::kFp16Fp16;
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> bits(0, 0xffff);
  auto finite_fp16 = [&]() {
    for (;;) {
      const double v = decode_float(static_cast<std::uint32_t>(bits(rng)), kFp16);
      if (std::isfinite(v)) return v;
    }
  };
  const unsigned m = 64, n = 64;
  std::uint64_t checked = 0;
  for (int round = 0; round < 8; ++round) {
    std::vector<double> a(m), b(n), c(std::size_t{m} * n);
    for (auto& x : a) x = finite_fp16();
    for (auto& x : b) x = finite_fp16();
    for (auto& x : c) x = finite_fp16();
    if (round % 2 == 1) {  // C near a product's magnitude: cancellations and ties
      for (unsigned i = 0; i < m; ++i) {
        for (unsigned j = 0; j < n; ++j) {
          const double v =
              decode_float(encode_float(-a[i] * b[j] * (1 + std::ldexp(1.0, -11)), kFp16), kFp16);
          if (std::isfinite(v)) c[i * n + j] = v;  // (else keep the random finite C)
        }
      }
    }
    const auto as = encode_gemm_input(t, a), bs = encode_gemm_input(t, b);
    const auto cs = encode_gemm_acc(t, c);
    const GemmOperands ops{t, m, n, 1, as.data(), bs.data(), cs.data()};
    const auto got = decode_gemm_acc(t, gemm_reference(ops).d, std::size_t{m} * n);
    for (unsigned i = 0; i < m; ++i) {
      for (unsigned j = 0; j < n; ++j) {
        const double want = fp16_step_exact(c[i * n + j], a[i], b[j]);
        ASSERT_TRUE(same_bits(t, got[i * n + j], want))
            << a[i] << " * " << b[j] << " + " << c[i * n + j] << ": " << got[i * n + j] << " vs "
            << want;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 8u * 64 * 64);
}

// --- convolution -------------------------------------------------------------------------------

// A direct convolution loop, NHWC / KRSC, taps in (r, s, c) order, padding skipped.
Expected naive_conv(GemmType t, const ConvGemmShape& sh, const std::vector<double>& in,
                    const std::vector<double>& wt, const std::vector<double>* bias) {
  const unsigned oh = (sh.h + 2 * sh.pad_h - sh.r) / sh.stride_h + 1;
  const unsigned ow = (sh.w + 2 * sh.pad_w - sh.s) / sh.stride_w + 1;
  const unsigned mk = t == GemmType::kInt8Int32 ? 16 : 32;
  Expected e;
  e.d.assign(std::size_t{sh.n} * oh * ow * sh.k_out, 0.0);
  for (unsigned b = 0; b < sh.n; ++b) {
    for (unsigned y = 0; y < oh; ++y) {
      for (unsigned x = 0; x < ow; ++x) {
        for (unsigned o = 0; o < sh.k_out; ++o) {
          const std::size_t out = ((std::size_t{b} * oh + y) * ow + x) * sh.k_out + o;
          double acc = bias ? (*bias)[out] : 0.0;
          std::int64_t iacc = static_cast<std::int64_t>(acc), chunk = 0;
          float facc = static_cast<float>(acc);
          unsigned kk = 0;
          for (unsigned ri = 0; ri < sh.r; ++ri) {
            for (unsigned si = 0; si < sh.s; ++si) {
              for (unsigned ci = 0; ci < sh.c; ++ci, ++kk) {
                const int iy = static_cast<int>(y * sh.stride_h + ri) - static_cast<int>(sh.pad_h);
                const int ix = static_cast<int>(x * sh.stride_w + si) - static_cast<int>(sh.pad_w);
                const bool inside = iy >= 0 && ix >= 0 && iy < static_cast<int>(sh.h) &&
                                    ix < static_cast<int>(sh.w);
                const double dv =
                    inside ? in[((std::size_t{b} * sh.h + iy) * sh.w + ix) * sh.c + ci] : 0.0;
                const double wv = wt[((std::size_t{o} * sh.r + ri) * sh.s + si) * sh.c + ci];
                if (is_int_type(t)) {
                  chunk += static_cast<std::int64_t>(dv) * static_cast<std::int64_t>(wv);
                  if ((kk + 1) % mk == 0 || kk + 1 == sh.r * sh.s * sh.c) {
                    // (the test data never reaches the limits: saturations == 0 asserted)
                    iacc = std::clamp<std::int64_t>(iacc + chunk, INT32_MIN, INT32_MAX);
                    chunk = 0;
                  }
                } else if (!inside) {
                  continue;
                } else if (t == GemmType::kFp16Fp16) {
                  acc = fp16_step_exact(acc, dv, wv);
                } else {
                  facc = std::fma(static_cast<float>(dv), static_cast<float>(wv), facc);
                }
              }
            }
          }
          e.d[out] = is_int_type(t)             ? static_cast<double>(iacc)
                     : t == GemmType::kFp16Fp16 ? acc
                                                : static_cast<double>(facc);
        }
      }
    }
  }
  return e;
}

TEST_P(GemmTypeTest, ConvImplicitGemmMatchesDirectConvAndIm2col) {
  const GemmType t = GetParam();
  std::mt19937 rng(300 + static_cast<unsigned>(t));
  ConvGemmShape sh;
  sh.n = 2;
  sh.h = 7;
  sh.w = 6;
  sh.c = 5;
  sh.k_out = 3;
  sh.r = 3;
  sh.s = 2;
  sh.stride_h = 2;
  sh.stride_w = 1;
  sh.pad_h = 1;
  sh.pad_w = 1;
  ASSERT_EQ(sh.out_h(), 4u);  // (7 + 2 - 3) / 2 + 1
  ASSERT_EQ(sh.out_w(), 7u);  // (6 + 2 - 2) / 1 + 1
  const std::size_t M = sh.gemm_m(), N = sh.k_out, K = sh.gemm_k();
  ASSERT_EQ(M, 56u);
  ASSERT_EQ(K, 30u);
  const auto in = random_inputs(t, std::size_t{sh.n} * sh.h * sh.w * sh.c, rng);
  const auto wt = random_inputs(t, N * K, rng);
  std::vector<double> bias(M * N);
  for (auto& x : bias)
    x = is_int_type(t) ? std::uniform_int_distribution<int>(-1000, 1000)(rng) : random_acc(t, rng);
  const auto ins = encode_gemm_input(t, in), wts = encode_gemm_input(t, wt);
  const auto bs = encode_gemm_acc(t, bias);
  for (bool with_bias : {false, true}) {
    const GemmResult r = conv_implicit_gemm_reference(t, sh, ins.data(), wts.data(),
                                                      with_bias ? bs.data() : nullptr);
    EXPECT_EQ(r.saturations, 0u);
    const auto got = decode_gemm_acc(t, r.d, M * N);
    const Expected e = naive_conv(t, sh, in, wt, with_bias ? &bias : nullptr);
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(same_bits(t, got[i], e.d[i])) << "element " << i;
    }

    // Explicit im2col + gemm_reference: equal values (a +0 padding product may only flip the
    // sign of a zero result, so compare with ==).
    const auto a = conv_im2col(t, sh, ins.data());
    ASSERT_EQ(a.size(), gemm_input_bytes(t, M * K));
    std::vector<double> bt(K * N);  // B[kk][o] = weight(o, kk)
    for (std::size_t o = 0; o < N; ++o)
      for (std::size_t kk = 0; kk < K; ++kk) bt[kk * N + o] = wt[o * K + kk];
    const auto b = encode_gemm_input(t, bt);
    const GemmOperands ops{t,
                           static_cast<unsigned>(M),
                           static_cast<unsigned>(N),
                           static_cast<unsigned>(K),
                           a.data(),
                           b.data(),
                           with_bias ? bs.data() : nullptr};
    const auto via_gemm = decode_gemm_acc(t, gemm_reference(ops).d, M * N);
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(via_gemm[i], got[i]) << i;
  }
}

TEST(GemmConv, PaddingTapsAreSkippedNotAddedAsZero) {
  // A 1x1 input holding -0, a 3x3 kernel of ones, pad 1: the one output has a single in-bounds
  // product, -0, and C = -0. The implicit reference skips the padded taps and keeps -0;
  // im2col adds +0 products (0 * 1) -> +0.
  const GemmType t = GemmType::kFp32;
  ConvGemmShape sh;
  sh.h = 1;
  sh.w = 1;
  sh.c = 1;
  sh.k_out = 1;
  sh.r = 3;
  sh.s = 3;
  sh.pad_h = 1;
  sh.pad_w = 1;
  const auto in = encode_gemm_input(t, {-0.0});
  const auto wt = encode_gemm_input(t, std::vector<double>(9, 1.0));
  const auto c = encode_gemm_acc(t, {-0.0});
  const GemmResult r = conv_implicit_gemm_reference(t, sh, in.data(), wt.data(), c.data());
  EXPECT_EQ(d_word(r, 0, 4), 0x80000000u);
  const auto a = conv_im2col(t, sh, in.data());
  const GemmOperands ops{t, 1, 1, 9, a.data(), wt.data(), c.data()};
  EXPECT_EQ(d_word(gemm_reference(ops), 0, 4), 0u);
}

TEST(GemmArgs, BadRangesThrow) {
  const auto as = encode_gemm_input(GemmType::kFp32, std::vector<double>(6, 1.0));
  const GemmOperands ops{GemmType::kFp32, 2, 2, 3, as.data(), as.data(), nullptr};
  std::vector<double> acc(4, 0.0);
  EXPECT_THROW((void)gemm_accumulate(ops, 0, 3, 0, 2, 0, 3, acc), std::invalid_argument);
  EXPECT_THROW((void)gemm_accumulate(ops, 0, 2, 0, 2, 0, 4, acc), std::invalid_argument);
  std::vector<double> small(3, 0.0);
  EXPECT_THROW((void)gemm_accumulate(ops, 0, 2, 0, 2, 0, 3, small), std::invalid_argument);
  EXPECT_EQ(gemm_accumulate(ops, 0, 2, 0, 2, 0, 3, acc), 0u);
  EXPECT_EQ(acc, (std::vector<double>{3, 3, 3, 3}));
}

TEST(GemmFp64, MatchesHandComputation) {
  const auto d = gemm_fp64(2, 2, 3, {1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12});
  EXPECT_EQ(d, (std::vector<double>{58, 64, 139, 154}));
}

}  // namespace
}  // namespace octasim::models::ops
