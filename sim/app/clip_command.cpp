// `octasim clip`: clipping scalars for a tensor file by OCTAV or a peer method, with the
// quantization MSE each reaches beside max-scaling's.
#include <climits>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "models/io/tensor_file.hpp"
#include "models/quant/calibrators.hpp"
#include "models/quant/grouping.hpp"
#include "models/quant/octav.hpp"
#include "models/quant/quantizer.hpp"
#include "sim/app/commands.hpp"

namespace octasim::app {
namespace {

std::vector<std::size_t> parse_shape(const std::string& text) {
  std::vector<std::size_t> shape;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const unsigned long long d = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || item[0] == '-') {
      throw UsageError(fmt::format("--shape '{}': expected dimensions like 64,3,3,3", text));
    }
    shape.push_back(static_cast<std::size_t>(d));
  }
  if (shape.empty()) throw UsageError("--shape: expected dimensions like 64,3,3,3");
  return shape;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

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

// Non-finite ratios (0/0) print as "-" and go to JSON as null.
nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

void add_clip_command(CLI::App& app, ClipOptions& opts) {
  auto* cmd = app.add_subcommand(
      "clip", "clipping scalars of a tensor (.npy or raw float32) by OCTAV or a peer method");
  cmd->add_option("file", opts.file, "tensor file: .npy (float16/32/64, C order) or raw float32")
      ->required();
  cmd->add_option("--bits", opts.bits, "quantizer bits B")
      ->capture_default_str()
      ->check(CLI::Range(2, 16));
  cmd->add_flag("--unsigned", opts.is_unsigned, "unsigned quantizer [0, s] (post-ReLU data)");
  cmd->add_option("--method", opts.method, "calibration method")
      ->capture_default_str()
      ->check(CLI::IsMember({"octav", "bruteforce", "max", "percentile", "mse-hist"}));
  auto* ch = cmd->add_option("--per-channel", opts.per_channel,
                             "one scalar per index of this axis (negative counts from the end)");
  auto* vec =
      cmd->add_option("--per-vector", opts.per_vector, "one scalar per N elements of the last axis")
          ->check(CLI::PositiveNumber);
  ch->excludes(vec);
  cmd->add_flag("--json", opts.json, "print JSON");
  cmd->add_option("--shape", opts.shape, "shape of a raw float32 file, e.g. 64,3,3,3");
  cmd->add_option("--init", opts.init, "OCTAV initial guess: half-max, zero, random or a value")
      ->capture_default_str();
  cmd->add_option("--tol", opts.tolerance, "OCTAV relative tolerance")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-iter", opts.max_iterations, "OCTAV maximum iterations")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--candidates", opts.candidates, "brute-force candidates")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000000));
  cmd->add_option("--percentile", opts.percentile, "percentile method's p")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 100.0));
}

int run_clip(const ClipOptions& opts) {
  models::Tensor t;
  try {
    t = models::read_tensor_file(
        opts.file, opts.shape.empty() ? std::vector<std::size_t>{} : parse_shape(opts.shape));
  } catch (const models::TensorFileError& e) {
    throw UsageError(e.what());
  }
  if (t.values.empty()) throw UsageError(fmt::format("{}: the tensor is empty", opts.file));
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    if (!std::isfinite(t.values[i])) {
      throw UsageError(fmt::format("{}: element {} (index {}) is {}{}; clip needs finite values",
                                   opts.file, i, index_text(i, t.shape),
                                   std::isnan(t.values[i]) ? "NaN" : "infinite",
                                   t.dtype == "float64" ? " in FP32" : ""));
    }
  }

  models::Grouping grouping;
  std::string grouping_text = "per tensor";
  if (opts.per_channel != ClipOptions::kNoAxis) {
    const int rank = static_cast<int>(t.shape.size());
    if (opts.per_channel < -rank || opts.per_channel >= rank) {
      throw UsageError(fmt::format("--per-channel {}: axis outside a tensor of shape {}",
                                   opts.per_channel, shape_text(t.shape)));
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

  const models::GroupedTensor groups(t.values.data(), t.shape, grouping);
  const std::vector<models::ClipResult> results = models::calibrate(groups, method, co);

  struct Row {
    std::size_t elements;
    models::ClipResult r;
    double mse;
    double mse_max;
  };
  std::vector<Row> rows;
  double sse = 0.0;
  double sse_max = 0.0;
  for (std::size_t g = 0; g < groups.group_count(); ++g) {
    const float* x = groups.group_data(g);
    const std::size_t n = groups.group_size(g);
    const double mse = models::empirical_mse(x, n, results[g].clip, opts.bits, sign);
    const double mse_max =
        models::empirical_mse(x, n, models::max_scale(x, n, sign), opts.bits, sign);
    rows.push_back({n, results[g], mse, mse_max});
    sse += mse * static_cast<double>(n);
    sse_max += mse_max * static_cast<double>(n);
  }
  const double total = sse / static_cast<double>(t.values.size());
  const double total_max = sse_max / static_cast<double>(t.values.size());
  const bool iterative = method == models::ClipMethod::kOctav;

  if (opts.json) {
    nlohmann::json j;
    j["file"] = opts.file;
    j["dtype"] = t.dtype;
    j["shape"] = t.shape;
    j["bits"] = opts.bits;
    j["signed"] = !opts.is_unsigned;
    j["method"] = opts.method;
    j["grouping"] = grouping_text;
    j["groups"] = nlohmann::json::array();
    for (std::size_t g = 0; g < rows.size(); ++g) {
      const Row& r = rows[g];
      nlohmann::json o;
      o["group"] = g;
      o["elements"] = r.elements;
      o["clip"] = r.r.clip;
      o["mse"] = r.mse;
      o["mse_max"] = r.mse_max;
      o["mse_ratio"] = number_or_null(r.mse / r.mse_max);
      o["iterations"] = r.r.iterations;
      o["converged"] = iterative ? nlohmann::json(r.r.converged) : nlohmann::json(nullptr);
      j["groups"].push_back(o);
    }
    j["total"] = {
        {"mse", total}, {"mse_max", total_max}, {"mse_ratio", number_or_null(total / total_max)}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }

  fmt::print("{}: {} {} ({} element{})\n", opts.file, t.dtype, shape_text(t.shape), t.values.size(),
             t.values.size() == 1 ? "" : "s");
  fmt::print("method {}, {}-bit {}, {} ({} group{})\n", opts.method, opts.bits,
             opts.is_unsigned ? "unsigned" : "signed", grouping_text, rows.size(),
             rows.size() == 1 ? "" : "s");
  fmt::print("{:>6} {:>10} {:>15} {:>13} {:>13} {:>13} {:>10} {:>9}\n", "group", "elements",
             "clip scalar", "MSE", "MSE(max)", "MSE/MSE(max)", "iterations", "converged");
  auto ratio_text = [](double a, double b) {
    const double r = a / b;
    return std::isfinite(r) ? fmt::format("{:.4f}", r) : std::string("-");
  };
  for (std::size_t g = 0; g < rows.size(); ++g) {
    const Row& r = rows[g];
    fmt::print("{:>6} {:>10} {:>15.9g} {:>13.6e} {:>13.6e} {:>13} {:>10} {:>9}\n", g, r.elements,
               r.r.clip, r.mse, r.mse_max, ratio_text(r.mse, r.mse_max), r.r.iterations,
               iterative ? (r.r.converged ? "yes" : "no") : "-");
  }
  fmt::print("all groups: MSE {:.6e}, MSE(max) {:.6e}, MSE/MSE(max) {}\n", total, total_max,
             ratio_text(total, total_max));
  return 0;
}

}  // namespace octasim::app
