// `octasim ops`: the operator registry (models/graph/op_registry.hpp) as a table: every ONNX
// operator octasim knows, where the compiler puts it, and what it computes.
#include <string>

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include "models/graph/op_registry.hpp"
#include "sim/app/commands.hpp"

namespace octasim::app {

void add_ops_command(CLI::App& app) {
  app.add_subcommand("ops",
                     "list the ONNX operators octasim knows: the device lowering of each (in "
                     "preference order; 'folded': removed by the graph passes before lowering) and "
                     "what it computes. A node the DLA refuses runs on the PPU's kNode kernel "
                     "where the configuration has a PPU (--fallback ppu): 'PPU (fallback)' "
                     "for the operators only the PPU runs");
}

int run_ops() {
  namespace g = models::graph;
  fmt::print("{:<19} {:<28} {}\n", "operator", "lowering", "computes");
  for (const g::OpSchema& op : g::all_ops()) {
    std::string lowering;
    for (const g::Lowering l : op.lowerings) {
      lowering += (lowering.empty() ? "" : ", ") + std::string(g::lowering_name(l));
    }
    fmt::print("{:<19} {:<28} {}\n", op.op_type, lowering.empty() ? "PPU (fallback)" : lowering,
               op.summary);
  }
  return 0;
}

}  // namespace octasim::app
