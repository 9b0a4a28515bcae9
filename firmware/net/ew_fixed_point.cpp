#include "firmware/net/ew_fixed_point.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/core.h>

#include "models/graph/graph.hpp"

namespace octasim::firmware::net {

using models::graph::GraphError;

namespace {

constexpr double kInt16Max = 32767.0;
// The largest |z| the limits are stated for (output steps): beyond 256 the output saturates
// whatever a relative error of 2^-15 does.
constexpr double kZLimit = 256.0;

// Round half away from zero, as the device's shifters round.
double round_away(double v) {
  return v < 0 ? -std::floor(-v + 0.5) : std::floor(v + 0.5);
}

// The largest t <= 63 with round(|f| 2^t) <= 32767 for every f in `factors` (f != 0), or -1 when
// even t = 0 overflows.
int largest_shift(const std::vector<double>& factors) {
  double f_max = 0.0;
  for (double f : factors) f_max = std::max(f_max, std::abs(f));
  if (round_away(f_max) > kInt16Max) return -1;
  int t = 0;
  while (t < 63 && round_away(f_max * std::ldexp(1.0, t + 1)) <= kInt16Max) ++t;
  return t;
}

}  // namespace

ChannelMulFixedPoint channel_mul_fixed_point(double x_step, double operand_step, double out_step,
                                             const std::string& who) {
  const double f = x_step * operand_step / out_step;
  if (!(f > 0.0) || !std::isfinite(f)) {
    throw GraphError(fmt::format("{}: steps {}, {} and {} give no product scale", who, x_step,
                                 operand_step, out_step));
  }
  const int t = largest_shift({f});
  if (t < 0) {
    throw GraphError(fmt::format(
        "{}: the product's scale {} (input step x operand step / output step) exceeds SDP's "
        "INT16 output convertor scale",
        who, f));
  }
  ChannelMulFixedPoint p;
  p.out_shift = static_cast<unsigned>(t);
  const double exact = f * std::ldexp(1.0, t);
  p.out_mul = static_cast<std::int16_t>(round_away(exact));
  p.relative = std::abs(p.out_mul - exact) / exact;
  return p;
}

BsFixedPoint bs_fixed_point(const std::vector<double>& acc_step, const std::vector<double>& bias,
                            double to, const std::string& who) {
  const std::size_t k = acc_step.size();
  std::vector<double> factor(k), b(k);
  double bias_max = 0.0;
  for (std::size_t i = 0; i < k; ++i) {
    const double bi = i < bias.size() ? bias[i] : 0.0;
    factor[i] = acc_step[i] / to;
    if (acc_step[i] == 0.0) {
      throw GraphError(fmt::format("{}: channel {} has an accumulator step of 0", who, i));
    }
    b[i] = bi / acc_step[i];
    bias_max = std::max(bias_max, std::abs(b[i]));
  }
  BsFixedPoint f;
  while (round_away(bias_max / std::ldexp(1.0, static_cast<int>(f.alu_shift))) > kInt16Max) {
    ++f.alu_shift;
  }
  if (f.alu_shift > 31) throw GraphError(fmt::format("{}: bias out of range", who));
  const int t = largest_shift(factor);
  if (t < 0) {
    const auto big = std::max_element(factor.begin(), factor.end(),
                                      [](double x, double y) { return std::abs(x) < std::abs(y); });
    throw GraphError(
        fmt::format("{}: the requantization factor {} exceeds SDP's INT16 multiplier", who, *big));
  }
  f.mul_shift = static_cast<unsigned>(t);
  f.alu.resize(k);
  f.mul.resize(k);
  f.mul_error.resize(k);
  const double alu_unit = std::ldexp(1.0, static_cast<int>(f.alu_shift));
  for (std::size_t i = 0; i < k; ++i) {
    const double alu = round_away(b[i] / alu_unit);
    const double m = round_away(factor[i] * std::ldexp(1.0, t));
    f.alu[i] = static_cast<std::int16_t>(alu);
    f.mul[i] = static_cast<std::int16_t>(m);
    f.mul_error[i] = std::abs(m - factor[i] * std::ldexp(1.0, t));
    f.bias_error = std::max(f.bias_error, std::abs(alu * alu_unit - b[i]) * std::abs(acc_step[i]));
  }
  return f;
}

double EwAddFixedPoint::bound(std::size_t k, double acc, double z) const {
  const double b =
      acc + std::ldexp(static_cast<double>(bs.alu.at(k)), static_cast<int>(bs.alu_shift));
  return eps_bias + (std::abs(z) + eps_bias) * out_relative + out_gain / 2 +
         acc_gain.at(k) * std::abs(b);
}

EwAddFixedPoint ew_add_fixed_point(const std::vector<double>& acc_step,
                                   const std::vector<double>& bias, double operand_step,
                                   double out_step, SdpEwUnit unit, const std::string& who) {
  double acc_max = 0.0;
  for (double s : acc_step) acc_max = std::max(acc_max, std::abs(s));
  // a: (1) the operand's shift, (2) R_max <= 32767, (3) s_y / s_i <= 2^16.
  const int a1 = unit == SdpEwUnit::kBn ? 23 : 14;
  const int a2 = static_cast<int>(std::floor(std::log2(kInt16Max * operand_step / acc_max)));
  const int a3 = static_cast<int>(std::floor(16.0 + std::log2(operand_step / out_step)));
  const int a = std::min({a1, a2, a3});
  if (a < 0) {
    throw GraphError(fmt::format(
        "{}: no intermediate step aligns the operand (step {}) with the main input (step up to "
        "{}) and the output (step {}) in SDP's INT32 pipeline",
        who, operand_step, acc_max, out_step));
  }
  EwAddFixedPoint f;
  f.operand_shift = static_cast<unsigned>(a);
  f.intermediate_step = std::ldexp(operand_step, -a);
  f.bs = bs_fixed_point(acc_step, bias, f.intermediate_step, who);
  const double ratio = f.intermediate_step / out_step;  // <= 2^-(16 - ...) by construction
  const int t2 = largest_shift({ratio});
  if (t2 < 0) {
    throw GraphError(fmt::format("{}: the output step {} is too fine for the intermediate step {}",
                                 who, out_step, f.intermediate_step));
  }
  f.out_shift = static_cast<unsigned>(t2);
  const double m2 = round_away(ratio * std::ldexp(1.0, t2));
  f.out_mul = static_cast<std::int16_t>(m2);
  f.out_gain = std::ldexp(m2, -t2);
  f.out_relative = std::abs(m2 - ratio * std::ldexp(1.0, t2)) / (ratio * std::ldexp(1.0, t2));
  f.eps_bias = f.bs.bias_error / out_step;
  const double headroom =
      0.5 - f.eps_bias - f.out_gain / 2 - (kZLimit + f.eps_bias) * f.out_relative;
  for (double r : f.bs.mul_error) {
    const double gain = f.out_gain * r / std::ldexp(1.0, static_cast<int>(f.bs.mul_shift));
    f.acc_gain.push_back(gain);
    f.acc_limit.push_back(gain > 0.0 ? std::max(0.0, headroom / gain)
                                     : std::numeric_limits<double>::infinity());
  }
  return f;
}

namespace {

// The affine map's registers for one choice of E_lo (affine_fixed_point), or false when T would
// be negative.
bool affine_for(const std::vector<double>& f, const std::vector<double>& bias,
                const std::vector<int>& e, int e_lo, AffineFixedPoint& a) {
  const std::size_t k = f.size();
  std::vector<double> n(k, 1.0);
  double bias_units = 0.0;  // max |add / s_y| / n: the bias's size in BN's units at T = 0
  for (std::size_t i = 0; i < k; ++i) {
    if (f[i] != 0.0) n[i] = std::ldexp(1.0, std::max(e[i], e_lo) - e_lo);
    bias_units = std::max(bias_units, std::abs(bias[i]) / n[i]);
  }
  // T: 15 bits for m1, within 63, and every bias C << a2 (a2 <= 16) inside INT32.
  int t = std::min(14 - e_lo, 63);
  if (bias_units > 0.0) {
    t = std::min(t, static_cast<int>(std::floor(std::log2(kInt16Max * 65536.0 / bias_units))));
  }
  if (t < 0) return false;
  a = AffineFixedPoint{};
  a.bn_mul_shift = static_cast<unsigned>(t);
  while (round_away(bias_units * std::ldexp(1.0, t - static_cast<int>(a.bn_alu_shift))) >
         kInt16Max) {
    ++a.bn_alu_shift;
  }
  const double unit = std::ldexp(1.0, -t);  // BN's output step per unit of v, times n
  for (std::size_t i = 0; i < k; ++i) {
    const double m1 =
        std::clamp(round_away(f[i] * std::ldexp(1.0, t) / n[i]), -kInt16Max, kInt16Max);
    const double c =
        round_away(bias[i] * std::ldexp(1.0, t - static_cast<int>(a.bn_alu_shift)) / n[i]);
    a.bs_mul.push_back(static_cast<std::int16_t>(m1));
    a.bn_mul.push_back(static_cast<std::int16_t>(n[i]));
    a.bn_alu.push_back(static_cast<std::int16_t>(c));
    a.x_gain.push_back(std::abs(m1 * n[i] * unit - f[i]));
    a.bias_error.push_back(
        std::abs(std::ldexp(c, static_cast<int>(a.bn_alu_shift)) * n[i] * unit - bias[i]));
  }
  return true;
}

}  // namespace

AffineFixedPoint affine_fixed_point(double x_step, const std::vector<double>& mul,
                                    const std::vector<double>& add, double out_step,
                                    const std::string& who) {
  const std::size_t k = mul.size();
  std::vector<double> f(k), bias(k);
  std::vector<int> e(k, 0);
  int e_max = std::numeric_limits<int>::min(), e_min = std::numeric_limits<int>::max();
  for (std::size_t i = 0; i < k; ++i) {
    f[i] = x_step * mul[i] / out_step;
    bias[i] = (add.empty() ? 0.0 : add.at(i)) / out_step;
    if (f[i] == 0.0) continue;
    e[i] = static_cast<int>(std::floor(std::log2(std::abs(f[i]))));
    e_max = std::max(e_max, e[i]);
    e_min = std::min(e_min, e[i]);
  }
  if (e_max == std::numeric_limits<int>::min()) e_max = e_min = 0;  // every multiplier 0
  if (e_max > 14) {
    throw GraphError(fmt::format(
        "{}: the output step {} is more than 2^15 times finer than the input's {} times the "
        "multiplier",
        who, out_step, x_step));
  }
  // E_lo from E_max down to E_max - 14: the smallest bound over INT8 codes wins (per-channel
  // exponents sharpen the large multipliers but coarsen the biases of the large channels).
  AffineFixedPoint best, candidate;
  double best_eps = std::numeric_limits<double>::infinity();
  for (int e_lo = e_max; e_lo >= std::max(e_min, e_max - 14); --e_lo) {
    if (!affine_for(f, bias, e, e_lo, candidate)) continue;
    double eps = 0.0;
    for (std::size_t i = 0; i < k; ++i) eps = std::max(eps, candidate.bound(i, 128.0));
    if (eps < best_eps) {
      best_eps = eps;
      best = candidate;
    }
  }
  if (best.bs_mul.size() != k) {
    throw GraphError(fmt::format(
        "{}: a bias of more than 2^31 output steps is beyond SDP's INT32 pipeline", who));
  }
  return best;
}

}  // namespace octasim::firmware::net
