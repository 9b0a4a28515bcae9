#include "firmware/net/rewrite.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "models/graph/op_registry.hpp"
#include "models/graph/passes.hpp"

namespace octasim::firmware::net {

using models::graph::Graph;
using models::graph::Node;

namespace {

bool is_graph_input(const Graph& g, const std::string& t) {
  return std::any_of(g.inputs.begin(), g.inputs.end(),
                     [&](const models::graph::ValueInfo& v) { return v.name == t; });
}

// Whether `name` is taken by a tensor of `g`.
bool taken(const Graph& g, const std::string& name) {
  return g.is_constant(name) || g.producer(name) != nullptr || is_graph_input(g, name);
}

std::string fresh(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int n = 1; taken(g, name); ++n) name = base + "_" + std::to_string(n);
  return name;
}

// `n` as factors of at most `limit`, largest first (16 -> 8, 2); empty when a prime factor
// exceeds it.
std::vector<std::int64_t> small_factors(std::int64_t n, std::int64_t limit) {
  std::vector<std::int64_t> out;
  while (n > limit) {
    std::int64_t f = limit;
    while (f > 1 && n % f != 0) --f;
    if (f == 1) return {};
    out.push_back(f);
    n /= f;
  }
  out.push_back(n);
  return out;
}

}  // namespace

std::size_t insert_concat_copies(Graph& g) {
  const auto is_view = [&](const std::string& t) {
    const Node* p = g.producer(t);
    return p != nullptr && models::graph::lowers_to(p->op_type, models::graph::Lowering::kView);
  };
  // A channel slice lives inside its source's surface: it always needs a copy.
  const auto is_slice = [&](const std::string& t) {
    const Node* p = g.producer(t);
    return p != nullptr &&
           models::graph::lowers_to(p->op_type, models::graph::Lowering::kChannelSlice);
  };
  std::set<std::string> placed;
  std::size_t copies = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op_type != "Concat") continue;
    for (std::size_t k = 0; k < g.nodes[i].inputs.size(); ++k) {
      const std::string in = g.nodes[i].inputs[k];
      if (in.empty() || g.is_constant(in) || is_view(in)) continue;  // plan_concat refuses them
      if (placed.count(in) == 0 && !is_slice(in)) {
        placed.insert(in);
        continue;
      }
      // The tensor already lives elsewhere: an SDP layer copies it into this Concat's surface.
      const std::string base = g.nodes[i].name.empty() ? "concat" : g.nodes[i].name;
      const auto is_one = [&](const std::string& name) {
        return g.is_constant(name) && g.initializers.at(name).elements() == 1 &&
               g.initializers.at(name).dtype == models::graph::DType::kFloat32 &&
               g.initializers.at(name).f[0] == 1.0F;
      };
      std::string one = base + "_copy_one";
      for (int n = 1; taken(g, one) && !is_one(one); ++n) {
        one = base + "_copy_one_" + std::to_string(n);
      }
      g.initializers[one] = models::graph::Tensor::floats({}, {1.0F});
      const std::string out = fresh(g, in + "_copy_" + std::to_string(k) + "_" + base);
      Node copy;
      copy.op_type = "Mul";
      copy.name = base + "_copy_" + std::to_string(k);
      copy.inputs = {in, one};
      copy.outputs = {out};
      g.nodes[i].inputs[k] = out;
      placed.insert(out);
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), std::move(copy));
      ++i;  // the Concat moved one on
      ++copies;
    }
  }
  return copies;
}

std::size_t split_global_pools(Graph& g) {
  const models::graph::ShapeMap shapes = models::graph::infer_shapes(g, 1);
  std::size_t split = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node n = g.nodes[i];
    if (n.op_type != "GlobalAveragePool" || n.inputs.empty() || n.outputs.size() != 1 ||
        shapes.count(n.inputs[0]) == 0) {
      continue;
    }
    const std::vector<std::int64_t>& x = shapes.at(n.inputs[0]);
    if (x.size() != 4 || (x[2] <= kPdpMaxKernel && x[3] <= kPdpMaxKernel)) continue;
    std::vector<std::int64_t> fh = small_factors(x[2], kPdpMaxKernel);
    std::vector<std::int64_t> fw = small_factors(x[3], kPdpMaxKernel);
    if (fh.empty() || fw.empty()) continue;
    // All stages but the last are AveragePools; the last factors stay for the global pool.
    const std::size_t stages = std::max(fh.size(), fw.size());
    fh.resize(stages, 1);
    fw.resize(stages, 1);
    std::vector<Node> chain;
    std::string in = n.inputs[0];
    for (std::size_t s = 0; s + 1 < stages; ++s) {
      Node pool;
      pool.op_type = "AveragePool";
      pool.name = n.name + "_stage" + std::to_string(s);
      pool.inputs = {in};
      pool.outputs = {fresh(g, n.outputs[0] + "_stage" + std::to_string(s))};
      models::graph::Attribute k;
      k.kind = models::graph::Attribute::Kind::kInts;
      k.ints = {fh[s], fw[s]};
      pool.attributes["kernel_shape"] = k;
      pool.attributes["strides"] = k;
      in = pool.outputs[0];
      chain.push_back(std::move(pool));
    }
    Node last = n;
    last.inputs[0] = in;
    chain.push_back(std::move(last));
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), chain.begin(), chain.end());
    i += chain.size() - 1;
    ++split;
  }
  return split;
}

std::size_t rewrite_for_dla(Graph& g) {
  std::size_t changes = insert_concat_copies(g);
  changes += split_global_pools(g);
  return changes;
}

}  // namespace octasim::firmware::net
