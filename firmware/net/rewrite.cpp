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
      if (!is_one(one)) one = models::graph::unused_tensor_name(g, one);
      g.initializers[one] = models::graph::Tensor::floats({}, {1.0F});
      const std::string out =
          models::graph::unused_tensor_name(g, in + "_copy_" + std::to_string(k) + "_" + base);
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
      pool.outputs = {
          models::graph::unused_tensor_name(g, n.outputs[0] + "_stage" + std::to_string(s))};
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

std::size_t rewrite_channel_shuffles(Graph& g) {
  std::size_t rewritten = 0;
  for (bool again = true; again;) {
    again = false;
    const models::graph::ShapeMap shapes = models::graph::infer_shapes(g, 1);
    const auto shape = [&](const std::string& t) {
      const auto it = shapes.find(t);
      return it == shapes.end() ? std::vector<std::int64_t>{} : it->second;
    };
    // The node reading `t`, when exactly one does and `t` is no graph output.
    const auto only_reader = [&](const std::string& t) -> std::size_t {
      if (g.consumers(t) != 1) return g.nodes.size();
      for (const models::graph::ValueInfo& o : g.outputs) {
        if (o.name == t) return g.nodes.size();
      }
      for (std::size_t k = 0; k < g.nodes.size(); ++k) {
        const auto& in = g.nodes[k].inputs;
        if (std::find(in.begin(), in.end(), t) != in.end()) return k;
      }
      return g.nodes.size();
    };
    for (std::size_t i = 0; i < g.nodes.size() && !again; ++i) {
      const Node& r1 = g.nodes[i];
      if (r1.op_type != "Reshape" || r1.inputs.empty() || r1.outputs.size() != 1) continue;
      const std::vector<std::int64_t> x = shape(r1.inputs[0]);
      const std::vector<std::int64_t> split = shape(r1.outputs[0]);
      if (x.size() != 4 || x[0] != 1 || split.size() != 5 || split[0] != 1 || split[1] < 2 ||
          split[1] * split[2] != x[1] || split[3] != x[2] || split[4] != x[3]) {
        continue;
      }
      const std::size_t ti = only_reader(r1.outputs[0]);
      if (ti == g.nodes.size() || g.nodes[ti].op_type != "Transpose" ||
          g.nodes[ti].get_ints("perm", {}) != std::vector<std::int64_t>{0, 2, 1, 3, 4}) {
        continue;
      }
      const std::size_t r2i = only_reader(g.nodes[ti].outputs.at(0));
      if (r2i == g.nodes.size() || g.nodes[r2i].op_type != "Reshape" ||
          g.nodes[r2i].inputs.at(0) != g.nodes[ti].outputs[0] ||
          shape(g.nodes[r2i].outputs.at(0)) != x) {
        continue;
      }
      const std::int64_t groups = split[1], per = split[2], c = x[1];
      std::vector<float> w(static_cast<std::size_t>(c * c), 0.0F);
      for (std::int64_t gi = 0; gi < groups; ++gi) {
        for (std::int64_t j = 0; j < per; ++j) {
          w[static_cast<std::size_t>((j * groups + gi) * c + gi * per + j)] = 1.0F;
        }
      }
      const std::string base = g.nodes[r2i].name.empty() ? "channel_shuffle" : g.nodes[r2i].name;
      const std::string weight = models::graph::unused_tensor_name(g, base + "_permutation");
      g.initializers[weight] = models::graph::Tensor::floats({c, c, 1, 1}, std::move(w));
      Node conv;
      conv.op_type = "Conv";
      conv.name = base + "_shuffle";
      conv.inputs = {r1.inputs[0], weight};
      conv.outputs = {g.nodes[r2i].outputs[0]};
      // Where the last Reshape was (its input's producer comes before the first); then the
      // Transpose and the first Reshape, which come before it, go.
      g.nodes[r2i] = std::move(conv);
      for (std::size_t k : {std::max(i, ti), std::min(i, ti)}) {
        g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(k));
      }
      ++rewritten;
      again = true;
    }
  }
  return rewritten;
}

std::size_t rewrite_for_dla(Graph& g) {
  std::size_t changes = insert_concat_copies(g);
  changes += split_global_pools(g);
  changes += rewrite_channel_shuffles(g);
  return changes;
}

}  // namespace octasim::firmware::net
