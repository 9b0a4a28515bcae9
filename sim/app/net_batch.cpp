#include "sim/app/net_batch.hpp"

#include <map>
#include <string>
#include <variant>
#include <vector>

#include <fmt/core.h>

#include "firmware/net/batch.hpp"

namespace octasim::app {

namespace fn = firmware::net;

void print_batch_layers(const fn::NetProgram& p, const Timing& timing, const BatchResult& r,
                        unsigned macs_per_cycle) {
  struct Row {
    std::string engine, nodes, runs;
    std::uint64_t cycles = 0, macs = 0, saturations = 0, longest = 0;
    LayerBound bound;
    std::size_t copies = 0;
  };
  std::vector<Row> rows;
  std::map<std::string, std::size_t> index;  // ONNX nodes -> row
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    const fn::NetLayer& l = p.layers[i];
    const auto [it, added] = index.emplace(l.nodes, rows.size());
    if (added) {
      rows.emplace_back();
      rows.back().engine = l.engine;
      rows.back().nodes = l.nodes;
    }
    Row& row = rows[it->second];
    const LayerTime t = i < timing.layers.size() ? timing.layers[i] : LayerTime{};
    row.cycles += t.cycles;
    row.macs += l.macs;
    row.saturations += i < r.saturations.size() ? r.saturations[i] : 0;
    if (t.cycles >= row.longest) {
      row.longest = t.cycles;
      row.bound = t.bound;
    }
    const auto* conv = std::get_if<firmware::ConvLayer>(&l.hw);
    if (conv != nullptr && fn::fully_connected(*conv)) {
      row.runs += fmt::format("{}{}", row.runs.empty() ? "batch " : "+", conv->batches);
    }
    ++row.copies;
  }
  fmt::print(
      "\nlayers (cycles: one batch of {} images on the cycle-level device, and per frame; "
      "runs: layers per image, or the multi-batch layers' batches; saturations: {} image{}):\n",
      p.images, r.outputs.size(), r.outputs.size() == 1 ? "" : "s");
  fmt::print("  {:>2}  {:<5} {:>10} {:>9} {:>7}  {:<16} {:<14} {:>11}  {}\n", "#", "unit", "cycles",
             "/frame", "MAC%", "bound", "runs", "saturations", "ONNX nodes");
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& row = rows[k];
    const std::string bound =
        row.bound.name.empty() ? "-"
                               : fmt::format("{} {:.0f}%", row.bound.name, 100.0 * row.bound.share);
    const std::string util =
        row.macs == 0 || row.cycles == 0
            ? std::string("-")
            : fmt::format("{:.1f}", 100.0 * static_cast<double>(row.macs) /
                                        (static_cast<double>(row.cycles) * macs_per_cycle));
    const std::string runs =
        !row.runs.empty() ? row.runs : fmt::format("{}/image", row.copies / p.images);
    fmt::print("  {:>2}  {:<5} {:>10} {:>9} {:>7}  {:<16} {:<14} {:>11}  {}\n", k, row.engine,
               row.cycles, row.cycles / p.images, util, bound, runs, row.saturations, row.nodes);
  }
}

}  // namespace octasim::app
