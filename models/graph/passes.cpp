#include "models/graph/passes.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "models/graph/op_registry.hpp"
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

namespace {

Attribute ints_attr(std::vector<std::int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

Attribute int_attr(std::int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}

// The indices of the nodes that read `tensor`.
std::vector<std::size_t> readers(const Graph& g, const std::string& tensor) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& in = g.nodes[i].inputs;
    if (std::find(in.begin(), in.end(), tensor) != in.end()) out.push_back(i);
  }
  return out;
}

// An initializer's values as integers (pads, axes), or nothing when `name` is not a constant.
std::optional<std::vector<std::int64_t>> constant_ints(const Graph& g, const std::string& name) {
  if (name.empty() || !g.is_constant(name)) return std::nullopt;
  const Tensor& t = g.initializers.at(name);
  std::vector<std::int64_t> v;
  for (std::size_t k = 0; k < t.elements(); ++k) v.push_back(static_cast<std::int64_t>(t.at(k)));
  return v;
}

}  // namespace

std::string unused_tensor_name(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int k = 1; g.is_constant(name) || g.producer(name) != nullptr ||
                  std::any_of(g.inputs.begin(), g.inputs.end(),
                              [&](const ValueInfo& v) { return v.name == name; });
       ++k) {
    name = base + "_" + std::to_string(k);
  }
  return name;
}

std::size_t fold_constants(Graph& g, std::int64_t batch) {
  const ShapeMap shapes = infer_shapes(g, batch);
  std::size_t folded = 0;
  for (std::size_t idx = 0; idx < g.nodes.size();) {
    const Node& n = g.nodes[idx];
    const OpSchema* op = find_op(n.op_type);
    // Dropout at inference (or training at ratio 0) keeps every element: its mask is all true,
    // a constant of the input's shape, and the node is an identity (remove_identities).
    if (n.op_type == "Dropout" && n.outputs.size() > 1 && !n.outputs[1].empty() &&
        !n.inputs.empty() && shapes.count(n.inputs[0]) != 0) {
      const auto constant_or = [&](std::size_t k, double absent) -> std::optional<double> {
        if (k >= n.inputs.size() || n.inputs[k].empty()) return absent;
        if (!g.is_constant(n.inputs[k]) || g.initializers.at(n.inputs[k]).elements() != 1) {
          return std::nullopt;
        }
        return g.initializers.at(n.inputs[k]).at(0);
      };
      const std::optional<double> training = constant_or(2, 0.0);
      const std::optional<double> ratio = constant_or(1, double{n.get_float("ratio", 0.5F)});
      if (training && (*training == 0.0 || (ratio && *ratio == 0.0))) {
        const std::vector<std::int64_t>& x = shapes.at(n.inputs[0]);
        Tensor mask = Tensor::zeros(DType::kBool, x);
        std::fill(mask.i.begin(), mask.i.end(), 1);
        g.initializers[n.outputs[1]] = std::move(mask);
        g.nodes[idx].outputs.resize(1);
        ++folded;
      }
    }
    // A node writing a graph output folds too: the output is a constant the compiler writes into
    // the program's memory image (firmware/net: a folded output).
    bool fold = op != nullptr && op->foldable && !n.outputs.empty();
    std::vector<Tensor> values;
    if (fold && n.op_type == "Shape" && n.inputs.size() == 1 && shapes.count(n.inputs[0]) != 0) {
      // A shape is known at the compiled batch whatever the values.
      Tensor probe;
      probe.shape = shapes.at(n.inputs[0]);
      probe.f.assign(probe.elements(), 0.0F);
      values = run_op(n, {&probe}, g.opset);
    } else if (fold) {
      Inputs in;
      const Tensor absent;
      for (const std::string& name : n.inputs) {
        if (name.empty()) {
          in.push_back(&absent);
        } else if (g.is_constant(name)) {
          in.push_back(&g.initializers.at(name));
        } else {
          fold = false;
          break;
        }
      }
      if (fold) values = run_op(n, in, g.opset);
    }
    if (!fold) {
      ++idx;
      continue;
    }
    for (std::size_t k = 0; k < n.outputs.size() && k < values.size(); ++k) {
      g.initializers[n.outputs[k]] = std::move(values[k]);
    }
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(idx));
    ++folded;
  }
  // Initializers nothing reads any more (the inputs of folded shape arithmetic).
  for (auto it = g.initializers.begin(); it != g.initializers.end();) {
    const bool read = g.consumers(it->first) != 0;
    it = read ? std::next(it) : g.initializers.erase(it);
  }
  return folded;
}

std::size_t fold_pads(Graph& g) {
  std::size_t folded = 0;
  for (std::size_t idx = 0; idx < g.nodes.size();) {
    const Node pad = g.nodes[idx];
    std::optional<std::vector<std::int64_t>> pads;
    double value = 0.0;
    bool constant_value = true;
    if (pad.op_type == "Pad" && !pad.inputs.empty() && pad.outputs.size() == 1) {
      if (g.opset >= 11) {
        pads = pad.inputs.size() > 1 ? constant_ints(g, pad.inputs[1]) : std::nullopt;
        if (pad.inputs.size() > 2 && !pad.inputs[2].empty()) {
          constant_value = g.is_constant(pad.inputs[2]);
          if (constant_value) value = g.initializers.at(pad.inputs[2]).at(0);
        }
        if (pad.inputs.size() > 3 && !pad.inputs[3].empty()) pads.reset();  // axes: not folded
      } else {
        pads = pad.get_ints("pads", {});
        value = pad.get_float("value", 0.0F);
      }
    }
    const bool zero_constant =
        pads && constant_value && value == 0.0 && pad.get_string("mode", "constant") == "constant";
    const std::string& out = pad.outputs.empty() ? pad.op_type : pad.outputs[0];
    const bool all_zero = zero_constant && std::all_of(pads->begin(), pads->end(),
                                                       [](std::int64_t p) { return p == 0; });
    // Only H and W of an N x C x H x W tensor padded, by non-negative amounts.
    const bool spatial =
        zero_constant && pads->size() == 8 && (*pads)[0] == 0 && (*pads)[1] == 0 &&
        (*pads)[4] == 0 && (*pads)[5] == 0 &&
        std::all_of(pads->begin(), pads->end(), [](std::int64_t p) { return p >= 0; });
    const std::vector<std::size_t> users =
        pad.op_type == "Pad" ? readers(g, out) : std::vector<std::size_t>{};
    // Where the zeros can become the consumer's padding: a Conv pads with zeros; an AveragePool
    // counting its padding (or with none of its own) averages the zeros as real elements.
    const auto absorbs = [&](const Node& c) {
      if (c.inputs.empty() || c.inputs[0] != out ||
          c.get_string("auto_pad", "NOTSET") != "NOTSET") {
        return false;
      }
      if (c.op_type == "Conv") return true;
      if (c.op_type != "AveragePool") return false;
      const std::vector<std::int64_t> own = c.get_ints("pads", {0, 0, 0, 0});
      const bool unpadded =
          std::all_of(own.begin(), own.end(), [](std::int64_t p) { return p == 0; });
      return c.get_int("count_include_pad", 0) != 0 || unpadded;
    };
    const bool into_consumers =
        spatial && !users.empty() && !is_graph_output(g, out) &&
        std::all_of(users.begin(), users.end(), [&](std::size_t u) { return absorbs(g.nodes[u]); });
    if (!all_zero && !into_consumers) {
      ++idx;
      continue;
    }
    if (!all_zero) {
      // ONNX pads [x1_begin, x2_begin, ..., x1_end, x2_end, ...]; the consumer's [top, left,
      // bottom, right].
      for (const std::size_t u : users) {
        Node& c = g.nodes[u];
        std::vector<std::int64_t> own = c.get_ints("pads", {0, 0, 0, 0});
        if (own.size() != 4) own.assign(4, 0);
        own[0] += (*pads)[2];
        own[1] += (*pads)[3];
        own[2] += (*pads)[6];
        own[3] += (*pads)[7];
        c.attributes["pads"] = ints_attr(own);
        if (c.op_type == "AveragePool") c.attributes["count_include_pad"] = int_attr(1);
      }
    }
    if (is_graph_output(g, out)) {
      ++idx;  // an unpadded graph output: left to the Pad
      continue;
    }
    rename_reads(g, out, pad.inputs[0]);
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(idx));
    ++folded;
  }
  return folded;
}

std::size_t reductions_to_pooling(Graph& g) {
  const ShapeMap shapes = infer_shapes(g, 1);
  std::size_t rewritten = 0;
  for (std::size_t idx = 0; idx < g.nodes.size(); ++idx) {
    const Node n = g.nodes[idx];
    if ((n.op_type != "ReduceMean" && n.op_type != "ReduceSum") || n.inputs.empty() ||
        n.outputs.size() != 1 || shapes.count(n.inputs[0]) == 0) {
      continue;
    }
    const std::vector<std::int64_t>& x = shapes.at(n.inputs[0]);
    const std::int64_t axes_input_opset = n.op_type == "ReduceSum" ? 13 : 18;
    std::optional<std::vector<std::int64_t>> axes =
        g.opset >= axes_input_opset
            ? (n.inputs.size() > 1 ? constant_ints(g, n.inputs[1]) : std::nullopt)
            : std::optional<std::vector<std::int64_t>>(n.get_ints("axes", {}));
    if (x.size() != 4 || !axes || axes->size() != 2) continue;
    for (std::int64_t& a : *axes) a = a < 0 ? a + 4 : a;
    std::sort(axes->begin(), axes->end());
    if (*axes != std::vector<std::int64_t>{2, 3}) continue;
    // mean over H, W = GlobalAveragePool; a sum is that mean times H W; keepdims=0 drops the
    // 1 x 1 (a view).
    const bool keep = n.get_int("keepdims", 1) != 0;
    const bool sum = n.op_type == "ReduceSum";
    const std::string& y = n.outputs[0];
    std::vector<Node> nodes;
    Node pool;
    pool.op_type = "GlobalAveragePool";
    pool.name = n.name;
    pool.inputs = {n.inputs[0]};
    pool.outputs = {sum || !keep ? unused_tensor_name(g, y + "_mean") : y};
    nodes.push_back(pool);
    if (sum) {
      const std::string factor = unused_tensor_name(g, y + "_area");
      g.initializers[factor] = Tensor::floats({}, {static_cast<float>(x[2] * x[3])});
      Node mul;
      mul.op_type = "Mul";
      mul.name = n.name + "_area";
      mul.inputs = {pool.outputs[0], factor};
      mul.outputs = {keep ? y : unused_tensor_name(g, y + "_sum")};
      nodes.push_back(mul);
    }
    if (!keep) {
      const std::string shape = unused_tensor_name(g, y + "_shape");
      g.initializers[shape] = Tensor::ints(DType::kInt64, {2}, {0, x[1]});  // 0: N as it is
      Node reshape;
      reshape.op_type = "Reshape";
      reshape.name = n.name + "_squeeze";
      reshape.inputs = {nodes.back().outputs[0], shape};
      reshape.outputs = {y};
      nodes.push_back(reshape);
    }
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(idx));
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(idx), nodes.begin(), nodes.end());
    idx += nodes.size() - 1;
    ++rewritten;
  }
  return rewritten;
}

std::size_t constant_arithmetic(Graph& g) {
  std::size_t rewritten = 0;
  for (Node& n : g.nodes) {
    if ((n.op_type != "Sub" && n.op_type != "Div") || n.inputs.size() != 2 ||
        g.is_constant(n.inputs[0]) || !g.is_constant(n.inputs[1])) {
      continue;
    }
    const Tensor& c = g.initializers.at(n.inputs[1]);
    if (!is_float(c.dtype)) continue;
    Tensor t = c;
    t.dtype = DType::kFloat32;
    // x - c = x + (-c); x / c = x * (1 / c), the reciprocal rounded once to float.
    for (float& v : t.f) v = n.op_type == "Sub" ? -v : static_cast<float>(1.0 / double{v});
    const std::string name =
        unused_tensor_name(g, n.inputs[1] + (n.op_type == "Sub" ? "_neg" : "_recip"));
    g.initializers[name] = std::move(t);
    n.op_type = n.op_type == "Sub" ? "Add" : "Mul";
    n.inputs[1] = name;
    ++rewritten;
  }
  return rewritten;
}

std::size_t simplify_graph(Graph& g) {
  std::size_t changes = remove_identities(g);
  changes += fold_constants(g, 1);
  changes += remove_identities(g);  // Dropouts whose mask fold_constants made a constant
  changes += fold_pads(g);
  changes += reductions_to_pooling(g);
  changes += constant_arithmetic(g);
  changes += fold_batch_norm(g);
  return changes;
}

namespace {

// Every tensor of `g` as its registry kernels compute it on zero inputs (infer_shapes).
template <typename F>
void infer_tensors(const Graph& g, std::int64_t batch, F&& each) {
  std::map<std::string, Tensor> computed;
  std::map<std::string, const Tensor*> values;
  for (const auto& [name, t] : g.initializers) values[name] = &t;
  for (const ValueInfo& vi : g.inputs) {
    std::vector<std::int64_t> shape = vi.shape;
    for (std::int64_t& d : shape) {
      if (d < 0) d = batch;
    }
    computed[vi.name] = Tensor::zeros(vi.dtype, std::move(shape));
    values[vi.name] = &computed[vi.name];
  }
  const Tensor absent;
  for (const Node& n : g.nodes) {
    Inputs in;
    for (const std::string& name : n.inputs) {
      if (name.empty()) {
        in.push_back(&absent);
        continue;
      }
      const auto it = values.find(name);
      if (it == values.end()) {
        throw GraphError(n.label() + ": input '" + name + "' is not computed before it");
      }
      in.push_back(it->second);
    }
    std::vector<Tensor> out = run_op_shapes(n, in, g.opset);
    for (std::size_t k = 0; k < n.outputs.size() && k < out.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      Tensor& slot = computed[n.outputs[k]];
      slot = std::move(out[k]);
      values[n.outputs[k]] = &slot;
    }
  }
  for (const auto& [name, t] : values) each(name, *t);
}

}  // namespace

ShapeMap infer_shapes(const Graph& g, std::int64_t batch) {
  ShapeMap shapes;
  infer_tensors(g, batch,
                [&](const std::string& name, const Tensor& t) { shapes[name] = t.shape; });
  return shapes;
}

std::map<std::string, DType> infer_dtypes(const Graph& g) {
  std::map<std::string, DType> types;
  infer_tensors(g, 1, [&](const std::string& name, const Tensor& t) { types[name] = t.dtype; });
  return types;
}

}  // namespace octasim::models::graph
