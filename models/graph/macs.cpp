#include "models/graph/macs.hpp"

#include <utility>

#include "models/graph/op_registry.hpp"
#include "models/graph/passes.hpp"

namespace octasim::models::graph {
std::uint64_t node_macs(const Node& n, const ShapeMap& shapes) {
  const OpSchema* op = find_op(n.op_type);
  return op == nullptr || op->macs == nullptr ? 0 : op->macs(n, shapes);
}

std::vector<NodeMacs> macs_per_node(const Graph& g) {
  const ShapeMap shapes = infer_shapes(g, 1);
  std::vector<NodeMacs> out;
  out.reserve(g.nodes.size());
  for (const Node& n : g.nodes) out.push_back({n.name, n.op_type, node_macs(n, shapes)});
  return out;
}

std::uint64_t count_macs(const Graph& g) {
  std::uint64_t total = 0;
  for (const NodeMacs& m : macs_per_node(g)) total += m.macs;
  return total;
}

std::uint64_t count_parameters(const Graph& g) {
  std::uint64_t total = 0;
  for (const auto& [name, t] : g.initializers) {
    if (is_float(t.dtype)) total += t.elements();
  }
  return total;
}

}  // namespace octasim::models::graph
