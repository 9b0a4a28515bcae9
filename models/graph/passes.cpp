#include "models/graph/passes.hpp"

#include <algorithm>
#include <cmath>

#include "models/graph/reference.hpp"

namespace octasim::models::graph {
namespace {

// Renames every read of tensor `from` (node inputs and graph outputs) to `to`.
void rename_reads(Graph& g, const std::string& from, const std::string& to) {
  for (Node& n : g.nodes) {
    for (std::string& in : n.inputs) {
      if (in == from) in = to;
    }
  }
  for (ValueInfo& out : g.outputs) {
    if (out.name == from) out.name = to;
  }
}

bool is_graph_output(const Graph& g, const std::string& name) {
  return std::any_of(g.outputs.begin(), g.outputs.end(),
                     [&](const ValueInfo& v) { return v.name == name; });
}

Node* producer_of(Graph& g, const std::string& tensor) {
  for (Node& n : g.nodes) {
    if (std::find(n.outputs.begin(), n.outputs.end(), tensor) != n.outputs.end()) return &n;
  }
  return nullptr;
}

}  // namespace

std::size_t fold_batch_norm(Graph& g) {
  std::size_t folded = 0;
  for (std::size_t idx = 0; idx < g.nodes.size();) {
    const Node bn = g.nodes[idx];
    Node* conv = bn.op_type == "BatchNormalization" && bn.inputs.size() == 5
                     ? producer_of(g, bn.inputs[0])
                     : nullptr;
    const bool foldable =
        conv != nullptr && conv->op_type == "Conv" && g.consumers(bn.inputs[0]) == 1 &&
        !is_graph_output(g, bn.inputs[0]) && conv->inputs.size() >= 2 &&
        g.is_constant(conv->inputs[1]) &&
        (conv->inputs.size() < 3 || conv->inputs[2].empty() || g.is_constant(conv->inputs[2])) &&
        std::all_of(bn.inputs.begin() + 1, bn.inputs.end(),
                    [&](const std::string& t) { return g.is_constant(t); }) &&
        bn.get_int("training_mode", 0) == 0 && bn.outputs.size() == 1;
    if (!foldable) {
      ++idx;
      continue;
    }
    const Tensor& w = g.initializers.at(conv->inputs[1]);
    const Tensor& gamma = g.initializers.at(bn.inputs[1]);
    const Tensor& beta = g.initializers.at(bn.inputs[2]);
    const Tensor& mean = g.initializers.at(bn.inputs[3]);
    const Tensor& var = g.initializers.at(bn.inputs[4]);
    const double eps = bn.get_float("epsilon", 1e-5F);
    const auto kernels = static_cast<std::size_t>(w.shape.at(0));
    const std::size_t per_kernel = w.elements() / kernels;
    Tensor nw = w;
    Tensor nb =
        Tensor::floats({static_cast<std::int64_t>(kernels)}, std::vector<float>(kernels, 0.0F));
    const bool has_bias = conv->inputs.size() >= 3 && !conv->inputs[2].empty();
    for (std::size_t k = 0; k < kernels; ++k) {
      const double s = double{gamma.f[k]} / std::sqrt(double{var.f[k]} + eps);
      for (std::size_t e = 0; e < per_kernel; ++e) {
        nw.f[k * per_kernel + e] = static_cast<float>(double{w.f[k * per_kernel + e]} * s);
      }
      const double b = has_bias ? double{g.initializers.at(conv->inputs[2]).f[k]} : 0.0;
      nb.f[k] = static_cast<float>((b - double{mean.f[k]}) * s + double{beta.f[k]});
    }
    const std::string wname = conv->name + "_bn_folded_W";
    const std::string bname = conv->name + "_bn_folded_B";
    g.initializers[wname] = std::move(nw);
    g.initializers[bname] = std::move(nb);
    conv->inputs.resize(3);
    conv->inputs[1] = wname;
    conv->inputs[2] = bname;
    conv->outputs[0] = bn.outputs[0];
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(idx));
    ++folded;
  }
  return folded;
}

std::size_t remove_identities(Graph& g) {
  std::size_t removed = 0;
  for (std::size_t idx = 0; idx < g.nodes.size();) {
    const Node n = g.nodes[idx];
    const bool identity = (n.op_type == "Identity" || n.op_type == "Dropout") &&
                          !n.inputs.empty() && !n.outputs.empty() &&
                          (n.outputs.size() == 1 || n.outputs[1].empty());
    if (!identity) {
      ++idx;
      continue;
    }
    const std::string& in = n.inputs[0];
    const std::string& out = n.outputs[0];
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(idx));
    // Looked up once the node is gone: in a malformed graph (x = Identity(x)) it was the producer.
    Node* producer = producer_of(g, in);
    if (producer != nullptr && g.consumers(in) == 0 && !is_graph_output(g, in)) {
      // The producer writes the output's name directly (graph output names survive).
      std::replace(producer->outputs.begin(), producer->outputs.end(), in, out);
    } else if (!is_graph_output(g, out)) {
      rename_reads(g, out, in);
    } else {
      // A graph input or constant read elsewhere, passed to a graph output: keep the node.
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(idx), n);
      ++idx;
      continue;
    }
    ++removed;
  }
  return removed;
}

std::map<std::string, std::vector<std::int64_t>> infer_shapes(const Graph& g, std::int64_t batch) {
  TensorMap inputs;
  for (const ValueInfo& vi : g.inputs) {
    Tensor t;
    t.dtype = vi.dtype;
    t.shape = vi.shape;
    for (std::int64_t& d : t.shape) {
      if (d < 0) d = batch;
    }
    if (is_float(t.dtype)) {
      t.f.assign(t.elements(), 0.0F);
    } else {
      t.i.assign(t.elements(), 0);
    }
    inputs[vi.name] = std::move(t);
  }
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const auto& [name, t] : run_reference(g, inputs)) shapes[name] = t.shape;
  return shapes;
}

}  // namespace octasim::models::graph
