#include "sim/app/clip_core.hpp"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "models/quant/grouping.hpp"
#include "models/quant/octav.hpp"
#include "models/quant/quantizer.hpp"

namespace octasim::app {
namespace {

std::string index_text(std::size_t flat, const std::vector<std::size_t>& shape) {
  std::vector<std::size_t> idx(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    idx[i] = shape[i] == 0 ? 0 : flat % shape[i];
    flat = shape[i] == 0 ? 0 : flat / shape[i];
  }
  return shape_text(idx);
}

models::OctavOptions octav_options(const ClipOptions& o) {
  models::OctavOptions oo;
  oo.bits = o.bits;
  oo.sign = o.is_unsigned ? models::Signedness::kUnsigned : models::Signedness::kSigned;
  oo.tolerance = o.tolerance;
  oo.max_iterations = o.max_iterations;
  if (o.init == "half-max") {
    oo.init = models::OctavInit::kHalfMax;
  } else if (o.init == "zero") {
    oo.init = models::OctavInit::kZero;
  } else if (o.init == "random") {
    oo.init = models::OctavInit::kRandom;  // seed 0: reproducible
  } else {
    char* end = nullptr;
    const double v = std::strtod(o.init.c_str(), &end);
    if (o.init.empty() || *end != '\0' || !(v >= 0.0) || !std::isfinite(v)) {
      throw UsageError(fmt::format(
          "--init '{}': expected half-max, zero, random or a finite clipping scalar >= 0", o.init));
    }
    oo.init = models::OctavInit::kValue;
    oo.initial_value = v;
  }
  return oo;
}

}  // namespace

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void check_clip_options(const ClipOptions& opts) {
  if (opts.bits < 2 || opts.bits > 16) {
    throw UsageError(fmt::format("bits {}: expected 2 to 16", opts.bits));
  }
  models::ClipMethod method = models::ClipMethod::kOctav;
  if (!models::parse_clip_method(opts.method, method)) {
    throw UsageError(
        fmt::format("unknown method '{}' (expected octav, bruteforce, max, percentile or mse-hist)",
                    opts.method));
  }
  if (opts.per_channel != ClipOptions::kNoAxis && opts.per_vector > 0) {
    throw UsageError("per channel and per vector exclude each other");
  }
  if (!(opts.tolerance >= 0.0)) {
    throw UsageError(fmt::format("tol {}: expected a number >= 0", opts.tolerance));
  }
  if (opts.max_iterations < 1 || opts.max_iterations > 1000000) {
    throw UsageError(fmt::format("max_iter {}: expected 1 to 1000000", opts.max_iterations));
  }
  if (opts.candidates < 1 || opts.candidates > 100000000) {
    throw UsageError(fmt::format("candidates {}: expected 1 to 100000000", opts.candidates));
  }
  if (!(opts.percentile >= 1e-9 && opts.percentile <= 100.0)) {
    throw UsageError(fmt::format("percentile {}: expected 1e-9 to 100", opts.percentile));
  }
}

ClipComputation compute_clips(const ClipOptions& opts, const std::string& name,
                              const std::vector<float>& values,
                              const std::vector<std::size_t>& shape, const std::string& dtype) {
  if (values.empty()) throw UsageError(fmt::format("{}: the tensor is empty", name));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw UsageError(fmt::format("{}: element {} (index {}) is {}{}; clip needs finite values",
                                   name, i, index_text(i, shape),
                                   std::isnan(values[i]) ? "NaN" : "infinite",
                                   dtype == "float64" ? " in FP32" : ""));
    }
  }

  ClipComputation out;
  models::Grouping grouping;
  std::string& grouping_text = out.grouping_text;
  grouping_text = "per tensor";
  if (opts.per_channel != ClipOptions::kNoAxis) {
    const int rank = static_cast<int>(shape.size());
    if (opts.per_channel < -rank || opts.per_channel >= rank) {
      throw UsageError(fmt::format("--per-channel {}: axis outside a tensor of shape {}",
                                   opts.per_channel, shape_text(shape)));
    }
    grouping = models::Grouping::per_channel(opts.per_channel);
    grouping_text = fmt::format("per channel, axis {}",
                                opts.per_channel < 0 ? opts.per_channel + rank : opts.per_channel);
  } else if (opts.per_vector > 0) {
    grouping = models::Grouping::per_vector(opts.per_vector);
    grouping_text = fmt::format("per vector of {} along the last axis", opts.per_vector);
  }

  models::ClipMethod method = models::ClipMethod::kOctav;
  if (!models::parse_clip_method(opts.method, method)) {
    throw UsageError(fmt::format("unknown method '{}'", opts.method));
  }
  models::CalibrationOptions co;
  co.octav = octav_options(opts);
  co.candidates = opts.candidates;
  co.percentile = opts.percentile;
  const models::Signedness sign = co.octav.sign;

  const models::GroupedTensor groups(values.data(), shape, grouping);
  const std::vector<models::ClipResult> results = models::calibrate(groups, method, co);

  double sse = 0.0;
  double sse_max = 0.0;
  for (std::size_t g = 0; g < groups.group_count(); ++g) {
    const float* x = groups.group_data(g);
    const std::size_t n = groups.group_size(g);
    const double mse = models::empirical_mse(x, n, results[g].clip, opts.bits, sign);
    const double mse_max =
        models::empirical_mse(x, n, models::max_scale(x, n, sign), opts.bits, sign);
    out.rows.push_back({n, results[g], mse, mse_max});
    sse += mse * static_cast<double>(n);
    sse_max += mse_max * static_cast<double>(n);
  }
  out.total_mse = sse / static_cast<double>(values.size());
  out.total_mse_max = sse_max / static_cast<double>(values.size());
  out.iterative = method == models::ClipMethod::kOctav;
  return out;
}

}  // namespace octasim::app
