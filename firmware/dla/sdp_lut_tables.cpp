#include "firmware/dla/sdp_lut_tables.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/core.h>

#include "firmware/driver/mmio.hpp"

namespace octasim::firmware {
namespace {

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// The standard normal distribution's CDF, Phi(x) = (1 + erf(x / sqrt 2)) / 2.
double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

double clamp01(double v) {
  return std::max(0.0, std::min(1.0, v));
}

// Round half away from zero, then clamp to [lo, hi].
std::int32_t entry(double v, std::int32_t lo, std::int32_t hi) {
  const double r = v < 0 ? -std::floor(-v + 0.5) : std::floor(v + 0.5);
  return static_cast<std::int32_t>(std::max<double>(lo, std::min<double>(hi, r)));
}

}  // namespace

double Unary::operator()(double x) const {
  switch (function) {
    case UnaryFunction::kSigmoid:
      return sigmoid(x);
    case UnaryFunction::kTanh:
      return std::tanh(x);
    case UnaryFunction::kHardSigmoid:
      return clamp01(alpha * x + beta);
    case UnaryFunction::kHardSwish:
      return x * clamp01(alpha * x + beta);  // ONNX HardSwish: alpha 1/6, beta 1/2
    case UnaryFunction::kSilu:
      return x * sigmoid(x);
    case UnaryFunction::kErf:
      return std::erf(x);
    case UnaryFunction::kGelu:
      return x * normal_cdf(x);
    case UnaryFunction::kNormalCdf:
      return normal_cdf(x);
  }
  return 0.0;
}

const char* Unary::name() const {
  switch (function) {
    case UnaryFunction::kSigmoid:
      return "Sigmoid";
    case UnaryFunction::kTanh:
      return "Tanh";
    case UnaryFunction::kHardSigmoid:
      return "HardSigmoid";
    case UnaryFunction::kHardSwish:
      return "HardSwish";
    case UnaryFunction::kSilu:
      return "SiLU";
    case UnaryFunction::kErf:
      return "Erf";
    case UnaryFunction::kGelu:
      return "GELU";
    case UnaryFunction::kNormalCdf:
      return "Phi";
  }
  return "?";
}

bool Unary::non_negative() const {
  return function == UnaryFunction::kSigmoid || function == UnaryFunction::kHardSigmoid ||
         function == UnaryFunction::kNormalCdf;
}

double Unary::magnitude_bound() const {
  return function == UnaryFunction::kSigmoid || function == UnaryFunction::kTanh ||
                 function == UnaryFunction::kHardSigmoid || function == UnaryFunction::kErf ||
                 function == UnaryFunction::kNormalCdf
             ? 1.0
             : 0.0;
}

double Unary::second_derivative_bound(double a, double b) const {
  // |f''| is largest at an end of [a, b] or where f''' = 0 inside it.
  double (*d2)(double) = nullptr;
  double critical = 0.0;
  if (function == UnaryFunction::kSigmoid) {
    d2 = [](double x) {
      const double s = sigmoid(x);
      return s * (1 - s) * (1 - 2 * s);
    };
    critical = std::log(2.0 + std::sqrt(3.0));  // f''' = s(1-s)(1 - 6s + 6s^2) = 0
  } else if (function == UnaryFunction::kTanh) {
    d2 = [](double x) {
      const double t = std::tanh(x);
      return -2 * t * (1 - t * t);
    };
    critical = std::atanh(1.0 / std::sqrt(3.0));  // f''' = -2 (1 - t^2)(1 - 3 t^2) = 0
  } else if (function == UnaryFunction::kErf) {
    d2 = [](double x) { return -4 * x / std::sqrt(std::acos(-1.0)) * std::exp(-x * x); };
    critical = 1.0 / std::sqrt(2.0);  // f''' = (4 / sqrt(pi)) (2x^2 - 1) e^(-x^2) = 0
  } else if (function == UnaryFunction::kNormalCdf) {
    d2 = [](double x) { return -x * std::exp(-x * x / 2) / std::sqrt(2 * std::acos(-1.0)); };
    critical = 1.0;  // f''' = (x^2 - 1) phi(x) = 0
  } else {
    throw FirmwareError(fmt::format("SDP LUT: no second-derivative bound for {}", name()));
  }
  double m = std::max(std::abs(d2(a)), std::abs(d2(b)));
  for (const double c : {-critical, critical}) {
    if (a <= c && c <= b) m = std::max(m, std::abs(d2(c)));
  }
  return m;
}

SdpLutTable sdp_lut_per_code(const Unary& f, double in_step, int in_lo, int in_hi, double out_step,
                             int out_lo, int out_hi) {
  if (in_hi < in_lo || in_hi - in_lo > 255) {
    throw FirmwareError(fmt::format(
        "SDP LUT: input codes {}..{}: one entry per code holds at most 256", in_lo, in_hi));
  }
  if (out_lo < -32768 || out_hi > 32767 || out_hi < out_lo || !(in_step > 0) || !(out_step > 0)) {
    throw FirmwareError(fmt::format("SDP LUT: output codes {}..{} (steps {}, {}) do not fit INT16",
                                    out_lo, out_hi, in_step, out_step));
  }
  SdpLutTable t;
  models::ops::SdpLutConfig& c = t.config;
  c.le_linear = true;
  c.le_start = std::numeric_limits<std::int32_t>::max();  // LE always under: never chosen
  c.le_end = std::numeric_limits<std::int32_t>::max();
  c.uflow_priority_lo = c.oflow_priority_lo = c.hybrid_priority_lo = true;
  c.lo_index_select = 0;
  c.lo_start = in_lo - 1;  // x <= start underflows: the first code is entry 1
  c.lo_end = in_lo - 1 + 256;
  for (unsigned i = 0; i < c.lo.size(); ++i) {
    const double x = (static_cast<double>(c.lo_start) + i) * in_step;
    c.lo[i] = static_cast<std::int16_t>(entry(f(x) / out_step, out_lo, out_hi));
  }
  t.error_bound = 0.5 + std::ldexp(1.0, -30);
  return t;
}

SdpLutTable sdp_lut_int16(const Unary& f, double in_step, double out_step) {
  if (f.function != UnaryFunction::kSigmoid && f.function != UnaryFunction::kTanh &&
      f.function != UnaryFunction::kErf && f.function != UnaryFunction::kNormalCdf) {
    throw FirmwareError(fmt::format(
        "SDP LUT: the two-level INT16 table is built for Sigmoid, Tanh, Erf and Phi, not {}",
        f.name()));
  }
  constexpr std::int32_t kLoStart = -16384, kLoEnd = 16384;
  constexpr int kLoSelect = 7;  // 256 segments of 128 codes
  constexpr std::int32_t kLeStart = -32769, kLeEnd = 32767;
  constexpr int kLeSelect = 10;  // 64 segments of 1024 codes
  SdpLutTable t;
  models::ops::SdpLutConfig& c = t.config;
  c.le_linear = true;
  c.le_index_select = kLeSelect;
  c.lo_index_select = kLoSelect;
  c.le_start = kLeStart;
  c.le_end = kLeEnd;
  c.lo_start = kLoStart;
  c.lo_end = kLoEnd;
  c.hybrid_priority_lo = true;  // both in range: the density table
  c.uflow_priority_lo = false;  // never both under (LE starts below every code)
  c.oflow_priority_lo = false;  // 32767: LE's last entry
  double entry_error = 0.0;
  const auto fill = [&](auto& table, std::int32_t start, int select) {
    for (unsigned i = 0; i < table.size(); ++i) {
      const double v = f((start + (std::int64_t{i} << select)) * in_step) / out_step;
      const std::int32_t e = entry(v, -32768, 32767);
      table[i] = static_cast<std::int16_t>(e);
      entry_error = std::max(entry_error, std::abs(e - v));
    }
  };
  fill(c.lo, kLoStart, kLoSelect);
  fill(c.le, kLeStart, kLeSelect);
  // Interpolation: every LO segment; the LE segments reaching outside (kLoStart, kLoEnd).
  double interp = 0.0;
  const auto segment = [&](double a, double b) {
    const double h = (b - a) * in_step;
    interp = std::max(interp, h * h / 8 * f.second_derivative_bound(a * in_step, b * in_step));
  };
  for (std::int32_t i = 0; i < 256; ++i) {
    segment(kLoStart + (i << kLoSelect), kLoStart + ((i + 1) << kLoSelect));
  }
  for (std::int32_t i = 0; i < 64; ++i) {
    const std::int32_t a = kLeStart + (i << kLeSelect), b = kLeStart + ((i + 1) << kLeSelect);
    if (a <= kLoStart || b >= kLoEnd) segment(a, b);
  }
  t.error_bound = interp / out_step + entry_error + 0.5;
  return t;
}

}  // namespace octasim::firmware
