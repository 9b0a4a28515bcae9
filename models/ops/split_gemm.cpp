#include "models/ops/split_gemm.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "models/numerics/float_format.hpp"
#include "models/ops/gemm.hpp"

namespace octasim::models::ops {
namespace {

constexpr std::pair<unsigned, unsigned> kPairs[] = {{0, 0}, {0, 1}, {1, 0}, {0, 2}, {1, 1}, {2, 0}};

void check_config(const SplitConfig& c) {
  if (c.parts < 1 || c.parts > 3) throw std::invalid_argument("split_gemm: parts must be 1..3");
  const bool ok =
      c.products == 1 || (c.products == 3 && c.parts >= 2) || (c.products == 6 && c.parts == 3);
  if (!ok) {
    throw std::invalid_argument("split_gemm: products must be 1, 3 (parts >= 2) or 6 (parts == 3)");
  }
}

FloatFormat format_of(SplitFormat f) {
  return f == SplitFormat::kBf16 ? kBf16 : kFp16;
}

GemmType gemm_type_of(SplitFormat f) {
  return f == SplitFormat::kBf16 ? GemmType::kBf16Fp32 : GemmType::kFp16Fp32;
}

std::vector<std::uint8_t> fp32_storage(const std::vector<float>& v) {
  std::vector<std::uint8_t> out(v.size() * 4);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint32_t bits = fp32_to_bits(v[i]);
    for (unsigned b = 0; b < 4; ++b) out[4 * i + b] = static_cast<std::uint8_t>(bits >> (8 * b));
  }
  return out;
}

std::vector<float> fp32_values(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / 4);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint32_t bits = 0;
    for (unsigned b = 0; b < 4; ++b) bits |= std::uint32_t{bytes[4 * i + b]} << (8 * b);
    out[i] = fp32_from_bits(bits);
  }
  return out;
}

void check_shape(unsigned m, unsigned n, unsigned k, const std::vector<float>& a,
                 const std::vector<float>& b) {
  if (a.size() != std::size_t{m} * k || b.size() != std::size_t{k} * n) {
    throw std::invalid_argument("split_gemm: operand sizes do not match the shape");
  }
}

}  // namespace

int recommended_residual_scale_log2(SplitFormat format) {
  return format_of(format).man_bits + 1;
}

std::vector<std::vector<float>> split_fp32(const std::vector<float>& x, const SplitConfig& config) {
  check_config(config);
  const FloatFormat fmt = format_of(config.format);
  std::vector<std::vector<float>> parts(config.parts, std::vector<float>(x.size()));
  for (std::size_t e = 0; e < x.size(); ++e) {
    double r = static_cast<double>(x[e]);
    for (unsigned i = 0; i < config.parts; ++i) {
      const double p = decode_float(encode_float(r, fmt), fmt);
      parts[i][e] = static_cast<float>(p);                // exact: a BF16/FP16 value
      r = std::ldexp(r - p, config.residual_scale_log2);  // exact (see header)
    }
  }
  return parts;
}

std::vector<float> split_gemm(unsigned m, unsigned n, unsigned k, const std::vector<float>& a,
                              const std::vector<float>& b, const SplitConfig& config) {
  check_config(config);
  check_shape(m, n, k, a, b);
  const auto ap = split_fp32(a, config);
  const auto bp = split_fp32(b, config);
  const GemmType type = gemm_type_of(config.format);
  std::vector<std::vector<std::uint8_t>> as, bs;
  for (const auto& p : ap) as.push_back(encode_gemm_input(type, {p.begin(), p.end()}));
  for (const auto& p : bp) bs.push_back(encode_gemm_input(type, {p.begin(), p.end()}));

  std::vector<float> d;
  for (unsigned idx = config.products; idx-- > 0;) {
    const auto [i, j] = kPairs[idx];
    const GemmOperands ops{type, m, n, k, as[i].data(), bs[j].data(), nullptr};
    std::vector<float> p = fp32_values(gemm_reference(ops).d);
    const int unscale = -static_cast<int>(i + j) * config.residual_scale_log2;
    for (float& v : p) v = std::ldexp(v, unscale);
    if (d.empty()) {
      d = std::move(p);
    } else {
      for (std::size_t e = 0; e < d.size(); ++e) d[e] = d[e] + p[e];
    }
  }
  return d;
}

std::vector<float> gemm_fp32(unsigned m, unsigned n, unsigned k, const std::vector<float>& a,
                             const std::vector<float>& b) {
  check_shape(m, n, k, a, b);
  const auto as = fp32_storage(a);
  const auto bs = fp32_storage(b);
  const GemmOperands ops{GemmType::kFp32, m, n, k, as.data(), bs.data(), nullptr};
  return fp32_values(gemm_reference(ops).d);
}

double relative_frobenius_error(const std::vector<float>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) {
    throw std::invalid_argument("relative_frobenius_error: sizes differ");
  }
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double diff = static_cast<double>(got[i]) - ref[i];
    num += diff * diff;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

}  // namespace octasim::models::ops
