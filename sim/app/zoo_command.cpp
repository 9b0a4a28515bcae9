// `octasim zoo NAME --out FILE.onnx` and `octasim zoo --list`: the model zoo's standard
// networks (firmware/zoo) written as ONNX models, with their size as the importer reads them back.
#include <string>

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include "firmware/onnx/onnx_import.hpp"
#include "firmware/zoo/zoo.hpp"
#include "models/graph/macs.hpp"
#include "sim/app/commands.hpp"

namespace octasim::app {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s;
  for (const std::int64_t d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

// 4089184256 -> "4.09 G".
std::string readable(std::uint64_t n) {
  const auto v = static_cast<double>(n);
  if (v >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.2f} k", v / 1e3);
  return std::to_string(n);
}

}  // namespace

void add_zoo_command(CLI::App& app, ZooOptions& opts) {
  auto* cmd = app.add_subcommand(
      "zoo",
      "write a standard network (lenet5, alexnet, googlenet, resnet50, mobilenet_v2, vit_tiny, "
      "bert_tiny) as an ONNX "
      "model with deterministic untrained weights, and print its parameters and MACs");
  cmd->add_option("name", opts.name, "the model (see --list)");
  cmd->add_option("--out", opts.out, "the ONNX file to write");
  cmd->add_flag("--list", opts.list, "list the models with a one-line description");
  cmd->footer(
      "Weights are uniform random with He's variance 2/fan_in from a fixed seed: the same bytes "
      "on every run, for performance and MAC counts, not accuracy. lenet5 uses ReLU and max "
      "pooling, not the original's scaled tanh and trainable subsampling. MACs are per image: "
      "Conv output elements x C_in/group x kH x kW, plus M x N x K of each Gemm and MatMul (a "
      "batched MatMul's per batch: the transformers' attention).");
}

int run_zoo(const ZooOptions& opts) {
  namespace zoo = firmware::zoo;
  if (opts.list) {
    if (!opts.name.empty() || !opts.out.empty()) {
      throw UsageError("zoo: --list takes no model name and no --out");
    }
    for (const zoo::ModelInfo& m : zoo::models()) {
      fmt::print("{:<13} {}\n", m.name, m.description);
    }
    return 0;
  }
  if (opts.name.empty()) throw UsageError("zoo: expected a model name (see octasim zoo --list)");
  try {
    const zoo::ModelInfo& info = zoo::model_info(opts.name);
    if (opts.out.empty()) throw UsageError("zoo: " + info.name + ": --out FILE.onnx is required");
    zoo::write_model(info.name, opts.out);
    // The numbers are those of the file as every other command reads it.
    const models::graph::Graph g = firmware::load_onnx(opts.out);
    const std::uint64_t params = models::graph::count_parameters(g);
    const std::uint64_t macs = models::graph::count_macs(g);
    fmt::print("{}: input {}, {} parameters ({}), {} MACs ({}) per image, written to {}\n",
               info.name, shape_text(info.input_shape), params, readable(params), macs,
               readable(macs), opts.out);
  } catch (const zoo::ZooError& e) {
    throw UsageError(fmt::format("zoo: {}", e.what()));
  }
  return 0;
}

}  // namespace octasim::app
