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

#include <CLI/CLI.hpp>
#include "models/io/tensor_file.hpp"
#include "models/quant/calibrators.hpp"
#include "models/quant/grouping.hpp"
#include "models/quant/octav.hpp"
#include "models/quant/quantizer.hpp"
#include "sim/app/clip_core.hpp"

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

// Non-finite ratios (0/0) print as "-" and go to JSON as null.
nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

void add_clip_command(CLI::App& app, ClipOptions& opts) {
  auto* cmd = app.add_subcommand(
      "clip", "clipping scalars of a tensor (.npy, .npz or raw float32) by OCTAV or a peer method");
  cmd->add_option("file", opts.file,
                  "tensor file: .npy (any numeric dtype, C or Fortran order), ARCHIVE.npz:ARRAY "
                  "or raw float32")
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
  check_clip_options(opts);
  const ClipComputation c = compute_clips(opts, opts.file, t.values, t.shape, t.dtype);
  const std::vector<ClipRow>& rows = c.rows;
  const std::string& grouping_text = c.grouping_text;
  const double total = c.total_mse;
  const double total_max = c.total_mse_max;
  const bool iterative = c.iterative;

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
      const ClipRow& r = rows[g];
      nlohmann::json o;
      o["group"] = g;
      o["elements"] = r.elements;
      o["clip"] = r.result.clip;
      o["mse"] = r.mse;
      o["mse_max"] = r.mse_max;
      o["mse_ratio"] = number_or_null(r.mse / r.mse_max);
      o["iterations"] = r.result.iterations;
      o["converged"] = iterative ? nlohmann::json(r.result.converged) : nlohmann::json(nullptr);
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
    const ClipRow& r = rows[g];
    fmt::print("{:>6} {:>10} {:>15.9g} {:>13.6e} {:>13.6e} {:>13} {:>10} {:>9}\n", g, r.elements,
               r.result.clip, r.mse, r.mse_max, ratio_text(r.mse, r.mse_max), r.result.iterations,
               iterative ? (r.result.converged ? "yes" : "no") : "-");
  }
  fmt::print("all groups: MSE {:.6e}, MSE(max) {:.6e}, MSE/MSE(max) {}\n", total, total_max,
             ratio_text(total, total_max));
  return 0;
}

}  // namespace octasim::app
