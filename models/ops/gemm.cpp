#include "models/ops/gemm.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/numerics/bit_cast.hpp"
#include "models/numerics/float_format.hpp"

namespace octasim::models::ops {
namespace {

constexpr std::array<GemmTypeInfo, 6> kInfo{{
    {"fp16_fp32", 16, 4, 4, 4, 4, 8},
    {"fp16_fp16", 16, 2, 4, 4, 4, 8},
    {"bf16_fp32", 16, 4, 4, 4, 4, 8},
    {"int8_int32", 8, 4, 8, 8, 16, 16},
    {"int4_int32", 4, 4, 8, 8, 32, 32},
    {"fp32", 32, 4, 1, 1, 1, 1},
}};

enum class AccKind { kFp32, kFp16, kInt32 };

AccKind acc_kind(GemmType t) {
  switch (t) {
    case GemmType::kFp16Fp16:
      return AccKind::kFp16;
    case GemmType::kInt8Int32:
    case GemmType::kInt4Int32:
      return AccKind::kInt32;
    default:
      return AccKind::kFp32;
  }
}

bool is_int(GemmType t) {
  return acc_kind(t) == AccKind::kInt32;
}

std::uint32_t load_le(const std::uint8_t* p, unsigned bytes) {
  std::uint32_t v = 0;
  for (unsigned i = 0; i < bytes; ++i) v |= std::uint32_t{p[i]} << (8 * i);
  return v;
}

void store_le(std::uint8_t* p, std::uint32_t v, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Element `i` of an input array: floats exactly as float, integers sign-extended.
float input_float(GemmType t, const std::uint8_t* base, std::size_t i) {
  switch (t) {
    case GemmType::kFp16Fp32:
    case GemmType::kFp16Fp16:
      return fp16_to_float(static_cast<std::uint16_t>(load_le(base + 2 * i, 2)));
    case GemmType::kBf16Fp32:
      return fp32_from_bits(load_le(base + 2 * i, 2) << 16);
    default:
      return fp32_from_bits(load_le(base + 4 * i, 4));
  }
}

std::int32_t input_int(GemmType t, const std::uint8_t* base, std::size_t i) {
  if (t == GemmType::kInt8Int32) return static_cast<std::int8_t>(base[i]);
  const unsigned nib = (i & 1) ? base[i / 2] >> 4 : base[i / 2] & 0xfu;
  return nib >= 8 ? static_cast<std::int32_t>(nib) - 16 : static_cast<std::int32_t>(nib);
}

double input_value(GemmType t, const std::uint8_t* base, std::size_t i) {
  return is_int(t) ? static_cast<double>(input_int(t, base, i))
                   : static_cast<double>(input_float(t, base, i));
}

double acc_value(GemmType t, const std::uint8_t* base, std::size_t i) {
  switch (acc_kind(t)) {
    case AccKind::kFp16:
      return decode_float(load_le(base + 2 * i, 2), kFp16);
    case AccKind::kInt32:
      return static_cast<double>(static_cast<std::int32_t>(load_le(base + 4 * i, 4)));
    case AccKind::kFp32:
      break;
  }
  return static_cast<double>(fp32_from_bits(load_le(base + 4 * i, 4)));
}

// Stores an accumulator value (already a value of the type; NaN canonical).
void store_acc_value(GemmType t, std::uint8_t* base, std::size_t i, double v) {
  switch (acc_kind(t)) {
    case AccKind::kFp16:
      store_le(base + 2 * i, std::isnan(v) ? 0x7e00u : encode_float(v, kFp16), 2);
      return;
    case AccKind::kInt32: {
      const double c = std::clamp(std::round(std::isnan(v) ? 0.0 : v), -2147483648.0, 2147483647.0);
      store_le(base + 4 * i, static_cast<std::uint32_t>(static_cast<std::int32_t>(c)), 4);
      return;
    }
    case AccKind::kFp32:
      break;
  }
  store_le(base + 4 * i, std::isnan(v) ? 0x7fc00000u : encode_float(v, kFp32), 4);
}

// x rounded to FP16 (RNE, overflow to inf), as a double; agrees with encode_float(x, kFp16).
double round_fp16(double x) {
  if (!std::isfinite(x)) return x;
  if (std::fabs(x) >= 65520.0) return std::copysign(std::numeric_limits<double>::infinity(), x);
  const auto bits = bit_cast<std::uint64_t>(x);
  const int be = static_cast<int>((bits >> 52) & 0x7ffu) - 1023;  // |x| in [2^be, 2^(be+1))
  if (be < -25) return std::copysign(0.0, x);                     // below 2^-25: to zero
  const int qe = std::max(be - 10, -24);                          // the FP16 quantum 2^qe
  // Adding 1.5 * 2^(52 + qe) rounds x (|x| < 2^(qe + 11)) to a multiple of 2^qe, to nearest
  // even, in one double add; subtracting it again is exact.
  const std::uint64_t magic_bits =
      (static_cast<std::uint64_t>(52 + qe + 1023) << 52) | (std::uint64_t{1} << 51);
  const auto magic = bit_cast<double>(magic_bits);
  return std::copysign((x + magic) - magic, x);
}

// acc16 = round_fp16(p + acc16), one rounding, computed as round_fp16 of the double sum.
// Why that is exact: the FP16 rounding boundaries (midpoints, and 65520 for overflow) are
// doubles. If the double sum s is inexact, the exact sum lies strictly between s and a
// neighbouring double, with no boundary strictly inside, so both round alike unless s itself
// is a boundary. s cannot be one: p (an FP16 x FP16 product: 22 significant bits, a multiple of
// 2^-48) and acc (a multiple of 2^-24) sum to a multiple of 2^-48, exact in double below 2^5.
// For an inexact sum of exponent e >= 5 one addend must have a set bit below 2^(e-52): if it is
// acc, e >= 29 and both sums overflow to inf; if it is p, |p| < 2^(e-30), so s is within
// 2^(e-30) + ulp(s) of acc, an FP16 value whose nearest boundary is >= 2^(e-12) away.
// (ops_gemm_test checks this against exact 128-bit fixed-point sums.) The product is exact in
// double, so a compiler contracting p + acc into a double fma cannot change the result.
double fp16_step(double acc, double p) {
  return round_fp16(p + acc);
}

std::int64_t saturating_add(std::int64_t acc, std::int64_t add, std::uint64_t& sat) {
  std::int64_t v = acc + add;
  if (v > std::numeric_limits<std::int32_t>::max()) {
    v = std::numeric_limits<std::int32_t>::max();
    ++sat;
  } else if (v < std::numeric_limits<std::int32_t>::min()) {
    v = std::numeric_limits<std::int32_t>::min();
    ++sat;
  }
  return v;
}

void check_tile(const GemmOperands& ops, unsigned m0, unsigned m1, unsigned n0, unsigned n1) {
  if (m0 > m1 || m1 > ops.m || n0 > n1 || n1 > ops.n) {
    throw std::invalid_argument("gemm: tile rows [" + std::to_string(m0) + "," +
                                std::to_string(m1) + ") cols [" + std::to_string(n0) + "," +
                                std::to_string(n1) + ") outside " + std::to_string(ops.m) + "x" +
                                std::to_string(ops.n));
  }
}

std::size_t type_index(GemmType t) {
  const auto i = static_cast<std::size_t>(t);
  if (i >= kInfo.size()) throw std::invalid_argument("gemm: unknown GemmType");
  return i;
}

}  // namespace

const GemmTypeInfo& gemm_type_info(GemmType type) {
  return kInfo[type_index(type)];
}

std::optional<GemmType> parse_gemm_type(std::string_view name) {
  for (std::size_t i = 0; i < kInfo.size(); ++i) {
    if (name == kInfo[i].name) return static_cast<GemmType>(i);
  }
  return std::nullopt;
}

std::size_t gemm_input_bytes(GemmType type, std::size_t elements) {
  const unsigned bits = gemm_type_info(type).input_bits;
  return bits == 4 ? (elements + 1) / 2 : elements * (bits / 8);
}

std::size_t gemm_acc_bytes(GemmType type, std::size_t elements) {
  return elements * gemm_type_info(type).acc_bytes;
}

std::vector<std::uint8_t> encode_gemm_input(GemmType type, const std::vector<double>& values) {
  std::vector<std::uint8_t> out(gemm_input_bytes(type, values.size()), 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    switch (type) {
      case GemmType::kFp16Fp32:
      case GemmType::kFp16Fp16:
        store_le(out.data() + 2 * i, encode_float(v, kFp16), 2);
        break;
      case GemmType::kBf16Fp32:
        store_le(out.data() + 2 * i, encode_float(v, kBf16), 2);
        break;
      case GemmType::kFp32:
        store_le(out.data() + 4 * i, encode_float(v, kFp32), 4);
        break;
      case GemmType::kInt8Int32:
        out[i] = static_cast<std::uint8_t>(static_cast<std::int32_t>(
            std::clamp(std::round(std::isnan(v) ? 0.0 : v), -128.0, 127.0)));
        break;
      case GemmType::kInt4Int32: {
        const auto q =
            static_cast<std::int32_t>(std::clamp(std::round(std::isnan(v) ? 0.0 : v), -8.0, 7.0));
        const auto nib = static_cast<std::uint8_t>(q & 0xf);
        out[i / 2] = static_cast<std::uint8_t>((i & 1) ? (out[i / 2] & 0x0fu) | (nib << 4)
                                                       : (out[i / 2] & 0xf0u) | nib);
        break;
      }
    }
  }
  return out;
}

std::vector<std::uint8_t> encode_gemm_acc(GemmType type, const std::vector<double>& values) {
  std::vector<std::uint8_t> out(gemm_acc_bytes(type, values.size()), 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    switch (acc_kind(type)) {
      case AccKind::kFp16:
        store_le(out.data() + 2 * i, encode_float(v, kFp16), 2);
        break;
      case AccKind::kFp32:
        store_le(out.data() + 4 * i, encode_float(v, kFp32), 4);
        break;
      case AccKind::kInt32:
        store_acc_value(type, out.data(), i, v);
        break;
    }
  }
  return out;
}

std::vector<double> decode_gemm_input(GemmType type, const std::vector<std::uint8_t>& bytes,
                                      std::size_t count) {
  if (bytes.size() < gemm_input_bytes(type, count)) {
    throw std::invalid_argument("decode_gemm_input: storage too short");
  }
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = input_value(type, bytes.data(), i);
  return out;
}

std::vector<double> decode_gemm_acc(GemmType type, const std::vector<std::uint8_t>& bytes,
                                    std::size_t count) {
  if (bytes.size() < gemm_acc_bytes(type, count)) {
    throw std::invalid_argument("decode_gemm_acc: storage too short");
  }
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = acc_value(type, bytes.data(), i);
  return out;
}

void gemm_load_c(const GemmOperands& ops, unsigned m0, unsigned m1, unsigned n0, unsigned n1,
                 std::vector<double>& acc) {
  check_tile(ops, m0, m1, n0, n1);
  const std::size_t tn = n1 - n0;
  acc.assign(std::size_t{m1 - m0} * tn, 0.0);
  if (ops.c == nullptr) return;
  for (unsigned i = m0; i < m1; ++i) {
    for (unsigned j = n0; j < n1; ++j) {
      acc[(i - m0) * tn + (j - n0)] = acc_value(ops.type, ops.c, std::size_t{i} * ops.n + j);
    }
  }
}

void gemm_store_d(const GemmOperands& ops, unsigned m0, unsigned m1, unsigned n0, unsigned n1,
                  const std::vector<double>& acc, std::uint8_t* d) {
  check_tile(ops, m0, m1, n0, n1);
  const std::size_t tn = n1 - n0;
  if (acc.size() != std::size_t{m1 - m0} * tn) {
    throw std::invalid_argument("gemm_store_d: accumulator size does not match the tile");
  }
  for (unsigned i = m0; i < m1; ++i) {
    for (unsigned j = n0; j < n1; ++j) {
      store_acc_value(ops.type, d, std::size_t{i} * ops.n + j, acc[(i - m0) * tn + (j - n0)]);
    }
  }
}

std::uint64_t gemm_accumulate(const GemmOperands& ops, unsigned m0, unsigned m1, unsigned n0,
                              unsigned n1, unsigned k0, unsigned k1, std::vector<double>& acc) {
  check_tile(ops, m0, m1, n0, n1);
  if (k0 > k1 || k1 > ops.k) {
    throw std::invalid_argument("gemm_accumulate: k range [" + std::to_string(k0) + "," +
                                std::to_string(k1) + ") outside K=" + std::to_string(ops.k));
  }
  const std::size_t tm = m1 - m0, tn = n1 - n0, tk = k1 - k0;
  if (acc.size() != tm * tn) {
    throw std::invalid_argument("gemm_accumulate: accumulator size does not match the tile");
  }
  if (tm == 0 || tn == 0 || tk == 0) return 0;
  const GemmType t = ops.type;
  const std::size_t K = ops.k, N = ops.n;

  if (is_int(t)) {
    // A rows and B columns of the tile, k contiguous.
    std::vector<std::int32_t> a(tm * tk), b(tn * tk);
    for (std::size_t i = 0; i < tm; ++i)
      for (std::size_t kk = 0; kk < tk; ++kk)
        a[i * tk + kk] = input_int(t, ops.a, (m0 + i) * K + k0 + kk);
    for (std::size_t j = 0; j < tn; ++j)
      for (std::size_t kk = 0; kk < tk; ++kk)
        b[j * tk + kk] = input_int(t, ops.b, (k0 + kk) * N + n0 + j);
    const unsigned mk = gemm_type_info(t).mma_k;
    std::uint64_t sat = 0;
    for (std::size_t i = 0; i < tm; ++i) {
      for (std::size_t j = 0; j < tn; ++j) {
        const std::int32_t* ar = &a[i * tk];
        const std::int32_t* br = &b[j * tk];
        auto x = static_cast<std::int64_t>(acc[i * tn + j]);
        for (std::size_t s = k0; s < k1;) {
          const std::size_t e = std::min<std::size_t>(k1, (s / mk + 1) * mk);
          std::int64_t sum = 0;
          for (std::size_t kk = s; kk < e; ++kk) sum += std::int64_t{ar[kk - k0]} * br[kk - k0];
          x = saturating_add(x, sum, sat);
          s = e;
        }
        acc[i * tn + j] = static_cast<double>(x);
      }
    }
    return sat;
  }

  std::vector<float> a(tm * tk), b(tn * tk);
  for (std::size_t i = 0; i < tm; ++i)
    for (std::size_t kk = 0; kk < tk; ++kk)
      a[i * tk + kk] = input_float(t, ops.a, (m0 + i) * K + k0 + kk);
  for (std::size_t j = 0; j < tn; ++j)
    for (std::size_t kk = 0; kk < tk; ++kk)
      b[j * tk + kk] = input_float(t, ops.b, (k0 + kk) * N + n0 + j);

  // Four output elements at a time: independent chains, each still k ascending.
  auto run = [&](auto step, auto to_acc) {
    for (std::size_t i = 0; i < tm; ++i) {
      const float* ar = &a[i * tk];
      std::size_t j = 0;
      for (; j + 4 <= tn; j += 4) {
        const float* b0 = &b[j * tk];
        auto x0 = to_acc(acc[i * tn + j]), x1 = to_acc(acc[i * tn + j + 1]);
        auto x2 = to_acc(acc[i * tn + j + 2]), x3 = to_acc(acc[i * tn + j + 3]);
        for (std::size_t kk = 0; kk < tk; ++kk) {
          const float av = ar[kk];
          x0 = step(av, b0[kk], x0);
          x1 = step(av, b0[tk + kk], x1);
          x2 = step(av, b0[2 * tk + kk], x2);
          x3 = step(av, b0[3 * tk + kk], x3);
        }
        acc[i * tn + j] = static_cast<double>(x0);
        acc[i * tn + j + 1] = static_cast<double>(x1);
        acc[i * tn + j + 2] = static_cast<double>(x2);
        acc[i * tn + j + 3] = static_cast<double>(x3);
      }
      for (; j < tn; ++j) {
        const float* br = &b[j * tk];
        auto x = to_acc(acc[i * tn + j]);
        for (std::size_t kk = 0; kk < tk; ++kk) x = step(ar[kk], br[kk], x);
        acc[i * tn + j] = static_cast<double>(x);
      }
    }
  };
  if (acc_kind(t) == AccKind::kFp16) {
    run([](float av, float bv,
           double x) { return fp16_step(x, static_cast<double>(av) * static_cast<double>(bv)); },
        [](double v) { return v; });
  } else {
    run([](float av, float bv, float x) { return std::fma(av, bv, x); },
        [](double v) { return static_cast<float>(v); });
  }
  return 0;
}

GemmResult gemm_reference(const GemmOperands& ops) {
  GemmResult r;
  r.d.assign(gemm_acc_bytes(ops.type, std::size_t{ops.m} * ops.n), 0);
  std::vector<double> acc;
  gemm_load_c(ops, 0, ops.m, 0, ops.n, acc);
  r.saturations = gemm_accumulate(ops, 0, ops.m, 0, ops.n, 0, ops.k, acc);
  gemm_store_d(ops, 0, ops.m, 0, ops.n, acc, r.d.data());
  return r;
}

std::vector<double> gemm_fp64(unsigned m, unsigned n, unsigned k, const std::vector<double>& a,
                              const std::vector<double>& b) {
  if (a.size() != std::size_t{m} * k || b.size() != std::size_t{k} * n) {
    throw std::invalid_argument("gemm_fp64: operand sizes do not match the shape");
  }
  std::vector<double> d(std::size_t{m} * n, 0.0);
  for (std::size_t i = 0; i < m; ++i) {
    double* row = &d[i * n];
    for (std::size_t kk = 0; kk < k; ++kk) {
      const double av = a[i * k + kk];
      const double* brow = &b[kk * n];
      for (std::size_t j = 0; j < n; ++j) row[j] += av * brow[j];
    }
  }
  return d;
}

unsigned ConvGemmShape::out_h() const {
  if (stride_h == 0 || h + 2 * pad_h < r) return 0;
  return (h + 2 * pad_h - r) / stride_h + 1;
}

unsigned ConvGemmShape::out_w() const {
  if (stride_w == 0 || w + 2 * pad_w < s) return 0;
  return (w + 2 * pad_w - s) / stride_w + 1;
}

namespace {

void check_conv(const ConvGemmShape& sh) {
  if (sh.n == 0 || sh.c == 0 || sh.k_out == 0 || sh.r == 0 || sh.s == 0 || sh.out_h() == 0 ||
      sh.out_w() == 0) {
    throw std::invalid_argument("conv gemm: empty or invalid shape");
  }
}

// Input element index for output row m and reduction index kk, or -1 for a padded tap.
long long conv_tap(const ConvGemmShape& sh, std::size_t m, std::size_t kk) {
  const std::size_t ow = sh.out_w(), oh = sh.out_h();
  const std::size_t x = m % ow, y = (m / ow) % oh, ni = m / (ow * oh);
  const std::size_t ci = kk % sh.c, si = (kk / sh.c) % sh.s, ri = kk / (std::size_t{sh.c} * sh.s);
  const long long iy = static_cast<long long>(y * sh.stride_h + ri) - sh.pad_h;
  const long long ix = static_cast<long long>(x * sh.stride_w + si) - sh.pad_w;
  if (iy < 0 || ix < 0 || iy >= sh.h || ix >= sh.w) return -1;
  return ((static_cast<long long>(ni) * sh.h + iy) * sh.w + ix) * sh.c + static_cast<long long>(ci);
}

}  // namespace

GemmResult conv_implicit_gemm_reference(GemmType type, const ConvGemmShape& sh,
                                        const std::uint8_t* input, const std::uint8_t* weights,
                                        const std::uint8_t* bias_c) {
  check_conv(sh);
  const std::size_t M = sh.gemm_m(), N = sh.k_out, K = sh.gemm_k();
  GemmResult r;
  r.d.assign(gemm_acc_bytes(type, M * N), 0);
  const unsigned mk = gemm_type_info(type).mma_k;
  std::vector<long long> taps(K);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t kk = 0; kk < K; ++kk) taps[kk] = conv_tap(sh, m, kk);
    for (std::size_t o = 0; o < N; ++o) {
      double acc = bias_c ? acc_value(type, bias_c, m * N + o) : 0.0;
      const std::size_t w0 = o * K;  // KRSC: weight (o, kk) at o * K + kk
      if (is_int(type)) {
        auto x = static_cast<std::int64_t>(acc);
        std::int64_t chunk = 0;
        for (std::size_t kk = 0; kk < K; ++kk) {
          if (taps[kk] >= 0) {
            chunk += std::int64_t{input_int(type, input, static_cast<std::size_t>(taps[kk]))} *
                     input_int(type, weights, w0 + kk);
          }
          if ((kk + 1) % mk == 0 || kk + 1 == K) {
            x = saturating_add(x, chunk, r.saturations);
            chunk = 0;
          }
        }
        acc = static_cast<double>(x);
      } else if (acc_kind(type) == AccKind::kFp16) {
        for (std::size_t kk = 0; kk < K; ++kk) {
          if (taps[kk] < 0) continue;
          acc = fp16_step(acc, static_cast<double>(
                                   input_float(type, input, static_cast<std::size_t>(taps[kk]))) *
                                   static_cast<double>(input_float(type, weights, w0 + kk)));
        }
      } else {
        auto x = static_cast<float>(acc);
        for (std::size_t kk = 0; kk < K; ++kk) {
          if (taps[kk] < 0) continue;
          x = std::fma(input_float(type, input, static_cast<std::size_t>(taps[kk])),
                       input_float(type, weights, w0 + kk), x);
        }
        acc = static_cast<double>(x);
      }
      store_acc_value(type, r.d.data(), m * N + o, acc);
    }
  }
  return r;
}

std::vector<std::uint8_t> conv_im2col(GemmType type, const ConvGemmShape& sh,
                                      const std::uint8_t* input) {
  check_conv(sh);
  const std::size_t M = sh.gemm_m(), K = sh.gemm_k();
  std::vector<double> a(M * K, 0.0);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t kk = 0; kk < K; ++kk) {
      const long long t = conv_tap(sh, m, kk);
      if (t >= 0) a[m * K + kk] = input_value(type, input, static_cast<std::size_t>(t));
    }
  }
  return encode_gemm_input(type, a);
}

}  // namespace octasim::models::ops
