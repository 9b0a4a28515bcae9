#include "firmware/net/plan.hpp"

#include <algorithm>

#include <fmt/core.h>

#include "models/graph/passes.hpp"

namespace octasim::firmware::net {

using models::graph::Graph;
using models::graph::GraphError;
using models::graph::Node;

const char* layer_engine(LayerKind k) {
  switch (k) {
    case LayerKind::kConv:
      return "CONV";
    case LayerKind::kPool:
      return "PDP";
    case LayerKind::kLrn:
      return "CDP";
    case LayerKind::kRelu:
      return "SDP";
  }
  return "?";
}

const std::string& NetPlan::resolve(const std::string& tensor) const {
  const auto it = views.find(tensor);
  return it == views.end() ? tensor : it->second;
}

std::string layer_nodes_label(const Graph& g, const PlannedLayer& l) {
  std::string s;
  for (std::size_t i : l.nodes) s += (s.empty() ? "" : " + ") + g.nodes[i].label();
  return s;
}

namespace {

unsigned as_unsigned(const Node& n, std::int64_t v, const char* what) {
  if (v < 0 || v > 65535)
    throw GraphError(fmt::format("{}: {} {} is out of range", n.label(), what, v));
  return static_cast<unsigned>(v);
}

// ONNX's 2-D spatial attributes: kernel (from the attribute or `fallback`), strides, pads
// [top, left, bottom, right], dilations. auto_pad other than NOTSET/VALID is refused.
struct Spatial {
  unsigned kh = 1, kw = 1, sy = 1, sx = 1, top = 0, left = 0, bottom = 0, right = 0, dy = 1, dx = 1;
};

Spatial spatial(const Node& n, std::vector<std::int64_t> kernel_fallback) {
  Spatial s;
  const auto two = [&](const char* attr, std::vector<std::int64_t> def) {
    const std::vector<std::int64_t> v = n.get_ints(attr, std::move(def));
    if (v.size() != 2) {
      throw GraphError(fmt::format("{}: attribute '{}' must have 2 values (2-D {}), has {}",
                                   n.label(), attr, n.op_type, v.size()));
    }
    return v;
  };
  const auto k = two("kernel_shape", std::move(kernel_fallback));
  const auto st = two("strides", {1, 1});
  const auto dil = two("dilations", {1, 1});
  const std::vector<std::int64_t> pads = n.get_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4) {
    throw GraphError(
        fmt::format("{}: attribute 'pads' must have 4 values, has {}", n.label(), pads.size()));
  }
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    throw GraphError(
        fmt::format("{}: auto_pad {} is not supported (give explicit pads)", n.label(), auto_pad));
  }
  s.kh = as_unsigned(n, k[0], "kernel height");
  s.kw = as_unsigned(n, k[1], "kernel width");
  s.sy = as_unsigned(n, st[0], "stride");
  s.sx = as_unsigned(n, st[1], "stride");
  s.dy = as_unsigned(n, dil[0], "dilation");
  s.dx = as_unsigned(n, dil[1], "dilation");
  if (auto_pad == "NOTSET") {
    s.top = as_unsigned(n, pads[0], "pad");
    s.left = as_unsigned(n, pads[1], "pad");
    s.bottom = as_unsigned(n, pads[2], "pad");
    s.right = as_unsigned(n, pads[3], "pad");
  }
  return s;
}

class Planner {
 public:
  Planner(const Graph& g, std::string config) : g_(g), config_(std::move(config)) {}

  NetPlan run() {
    // A weight or bias the graph takes as an input (ONNX's node tests do) is refused by the node
    // that needs it constant, before the inputs are counted.
    for (const Node& n : g_.nodes) {
      const bool weighted = n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul";
      for (std::size_t k = 1; weighted && k < n.inputs.size(); ++k) {
        if (!n.inputs[k].empty()) (void)constant(n, k, k == 1 ? "weight" : "bias");
      }
    }
    const auto data_inputs = g_.inputs;
    if (data_inputs.size() != 1) {
      throw GraphError(
          fmt::format("the graph has {} data inputs; octasim compiles networks with "
                      "exactly one",
                      data_inputs.size()));
    }
    plan_.input = data_inputs[0].name;
    plan_.shapes = models::graph::infer_shapes(g_, 1);
    plan_.input_shape = plan_.shapes.at(plan_.input);
    set_cube(plan_.input, nullptr);
    for (const auto& o : g_.outputs) plan_.outputs.push_back(o.name);
    used_.assign(g_.nodes.size(), false);
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!used_[i]) plan_node(i);
    }
    for (const std::string& out : plan_.outputs) {
      const std::string& t = plan_.resolve(out);
      const bool produced = std::any_of(plan_.layers.begin(), plan_.layers.end(),
                                        [&](const PlannedLayer& l) { return l.output == t; });
      if (!produced) {
        throw GraphError(fmt::format("graph output '{}' is not computed by any layer", out));
      }
    }
    return std::move(plan_);
  }

 private:
  // The only node reading `tensor`, when exactly one does and it is not a graph output.
  const Node* sole_consumer(const std::string& tensor, std::size_t* index) const {
    if (g_.consumers(tensor) != 1) return nullptr;
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (std::find(n.inputs.begin(), n.inputs.end(), tensor) != n.inputs.end()) {
        *index = i;
        return &n;
      }
    }
    return nullptr;
  }

  const models::graph::Tensor& constant(const Node& n, std::size_t k, const char* what) const {
    if (n.inputs.size() <= k || !g_.is_constant(n.inputs[k])) {
      throw GraphError(fmt::format("{}: the {} must be a constant (an initializer) for the DLA",
                                   n.label(), what));
    }
    return g_.initializers.at(n.inputs[k]);
  }

  // The device cube of a 4-D NCHW or 2-D N x F tensor (N = 1).
  void set_cube(const std::string& tensor, const Node* n) {
    const auto& shape = plan_.shapes.at(tensor);
    Cube c;
    if (shape.size() == 4 && shape[0] == 1) {
      c = {static_cast<std::uint32_t>(shape[3]), static_cast<std::uint32_t>(shape[2]),
           static_cast<std::uint32_t>(shape[1])};
    } else if (shape.size() == 2 && shape[0] == 1) {
      c = {1, 1, static_cast<std::uint32_t>(shape[1])};
    } else {
      throw GraphError(fmt::format(
          "{}tensor '{}' has shape {}: the DLA holds 1xCxHxW or 1xF "
          "tensors (one image)",
          n != nullptr ? n->label() + ": " : "", tensor, models::graph::shape_string(shape)));
    }
    plan_.cubes[tensor] = c;
  }

  // The data input of a layer: must be a tensor the device holds (not a view, unless `view_ok`).
  std::string data_input(const Node& n, bool view_ok) {
    const std::string& in = n.inputs.at(0);
    if (!view_ok && plan_.views.count(in) != 0) {
      throw GraphError(fmt::format("{}: reads the {} of '{}', which only a Gemm/MatMul can use",
                                   n.label(), "flattened view", plan_.views.at(in)));
    }
    const std::string& t = view_ok ? plan_.resolve(in) : in;
    if (plan_.cubes.count(t) == 0) {
      throw GraphError(fmt::format("{}: input '{}' is not computed on the device", n.label(), in));
    }
    return t;
  }

  // Fuses a Relu or Clip(0, c) reading `layer.output` into the layer.
  void fuse_activation(PlannedLayer& layer) {
    std::size_t idx = 0;
    const Node* act = sole_consumer(layer.output, &idx);
    if (act == nullptr) return;
    if (act->op_type == "Relu") {
      layer.conv.relu = true;
    } else if (act->op_type == "Clip") {
      double lo = act->get_float("min", -3.4e38F), hi = act->get_float("max", 3.4e38F);
      if (act->inputs.size() > 1 && !act->inputs[1].empty()) lo = constant(*act, 1, "min").at(0);
      if (act->inputs.size() > 2 && !act->inputs[2].empty()) hi = constant(*act, 2, "max").at(0);
      if (lo != 0.0 || !(hi > 0.0)) return;  // not a ReLU with a cap: left to its own layer
      layer.conv.relu = true;
      layer.conv.clip_max = hi < 1e30 ? hi : 0.0;
    } else {
      return;
    }
    used_[idx] = true;
    layer.nodes.push_back(idx);
    layer.output = act->outputs.at(0);
  }

  void plan_conv(std::size_t i) {
    const Node& n = g_.nodes[i];
    PlannedLayer l;
    l.kind = LayerKind::kConv;
    l.nodes = {i};
    l.input = data_input(n, false);
    const auto& w = constant(n, 1, "weight");
    if (w.shape.size() != 4) {
      throw GraphError(fmt::format("{}: weights of shape {}: only 2-D convolution is supported",
                                   n.label(), models::graph::shape_string(w.shape)));
    }
    if (n.get_int("group", 1) != 1) {
      throw GraphError(
          fmt::format("{}: grouped/depthwise convolution (group {}) is not supported "
                      "yet",
                      n.label(), n.get_int("group", 1)));
    }
    l.conv.weight = n.inputs[1];
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      (void)constant(n, 2, "bias");
      l.conv.bias = n.inputs[2];
    }
    const Spatial s = spatial(n, {w.shape[2], w.shape[3]});
    l.conv.kernel_h = s.kh;
    l.conv.kernel_w = s.kw;
    l.conv.stride_y = s.sy;
    l.conv.stride_x = s.sx;
    l.conv.dilation_y = s.dy;
    l.conv.dilation_x = s.dx;
    l.conv.pad_top = s.top;
    l.conv.pad_left = s.left;
    l.conv.pad_bottom = s.bottom;
    l.conv.pad_right = s.right;
    l.output = n.outputs.at(0);
    fuse_activation(l);
    set_cube(l.output, &n);
    plan_.layers.push_back(std::move(l));
  }

  // Gemm (transA 0, constant B and C) or MatMul with a constant B and an optional Add of a
  // constant bias after it.
  void plan_fc(std::size_t i) {
    const Node& n = g_.nodes[i];
    PlannedLayer l;
    l.kind = LayerKind::kConv;
    l.nodes = {i};
    l.conv.fully_connected = true;
    l.input = data_input(n, true);
    const auto& b = constant(n, 1, "B operand");
    if (b.shape.size() != 2) {
      throw GraphError(fmt::format("{}: B of shape {} is not a matrix", n.label(),
                                   models::graph::shape_string(b.shape)));
    }
    l.conv.weight = n.inputs[1];
    l.output = n.outputs.at(0);
    if (n.op_type == "Gemm") {
      if (n.get_int("transA", 0) != 0) {
        throw GraphError(
            fmt::format("{}: transA=1 is not supported (the input is a row)", n.label()));
      }
      l.conv.transpose_b = n.get_int("transB", 0) != 0;
      l.conv.alpha = n.get_float("alpha", 1.0F);
      l.conv.beta = n.get_float("beta", 1.0F);
      if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
        (void)constant(n, 2, "C operand");
        l.conv.bias = n.inputs[2];
      }
    } else {
      std::size_t idx = 0;
      const Node* add = sole_consumer(l.output, &idx);
      if (add != nullptr && add->op_type == "Add" && add->inputs.size() == 2) {
        const std::string& other = add->inputs[0] == l.output ? add->inputs[1] : add->inputs[0];
        if (g_.is_constant(other)) {
          l.conv.bias = other;
          used_[idx] = true;
          l.nodes.push_back(idx);
          l.output = add->outputs.at(0);
        }
      }
    }
    const auto& in_shape = plan_.shapes.at(n.inputs[0]);
    if (in_shape.size() != 2 || in_shape[0] != 1) {
      throw GraphError(fmt::format("{}: input of shape {}: a fully-connected layer takes 1 x F",
                                   n.label(), models::graph::shape_string(in_shape)));
    }
    const Cube& c = plan_.cubes.at(l.input);
    l.conv.kernel_w = c.width;
    l.conv.kernel_h = c.height;
    fuse_activation(l);
    set_cube(l.output, &n);
    plan_.layers.push_back(std::move(l));
  }

  void plan_pool(std::size_t i) {
    const Node& n = g_.nodes[i];
    PlannedLayer l;
    l.kind = LayerKind::kPool;
    l.nodes = {i};
    l.input = data_input(n, false);
    if (n.outputs.size() > 1 && !n.outputs[1].empty()) {
      throw GraphError(fmt::format("{}: the Indices output is not supported", n.label()));
    }
    const Cube& c = plan_.cubes.at(l.input);
    if (n.op_type == "GlobalAveragePool") {
      l.pool.kind = PoolKind::kAverage;
      l.pool.kernel_w = c.width;
      l.pool.kernel_h = c.height;
    } else {
      const Spatial s = spatial(n, {});
      if (s.dy != 1 || s.dx != 1) {
        throw GraphError(fmt::format("{}: dilated pooling is not supported", n.label()));
      }
      if (n.get_int("ceil_mode", 0) != 0) {
        throw GraphError(fmt::format("{}: ceil_mode=1 is not supported", n.label()));
      }
      l.pool.kind = n.op_type == "MaxPool" ? PoolKind::kMax : PoolKind::kAverage;
      const bool padded = s.top + s.left + s.bottom + s.right != 0;
      if (l.pool.kind == PoolKind::kAverage && padded && n.get_int("count_include_pad", 0) == 0) {
        throw GraphError(
            fmt::format("{}: padded average pooling with count_include_pad=0 is not "
                        "supported (PDP divides by the whole kernel)",
                        n.label()));
      }
      if (n.op_type == "MaxPool" && n.get_int("storage_order", 0) != 0) {
        throw GraphError(fmt::format("{}: storage_order=1 is not supported", n.label()));
      }
      l.pool.kernel_h = s.kh;
      l.pool.kernel_w = s.kw;
      l.pool.stride_y = s.sy;
      l.pool.stride_x = s.sx;
      l.pool.pad_top = s.top;
      l.pool.pad_left = s.left;
      l.pool.pad_bottom = s.bottom;
      l.pool.pad_right = s.right;
    }
    l.output = n.outputs.at(0);
    set_cube(l.output, &n);
    plan_.layers.push_back(std::move(l));
  }

  void plan_simple(std::size_t i, LayerKind kind) {
    const Node& n = g_.nodes[i];
    PlannedLayer l;
    l.kind = kind;
    l.nodes = {i};
    l.input = data_input(n, false);
    if (kind == LayerKind::kLrn) {
      l.lrn.size = as_unsigned(n, n.get_int("size", 0), "size");
      l.lrn.alpha = n.get_float("alpha", 1e-4F);
      l.lrn.beta = n.get_float("beta", 0.75F);
      l.lrn.bias = n.get_float("bias", 1.0F);
    }
    l.output = n.outputs.at(0);
    set_cube(l.output, &n);
    plan_.layers.push_back(std::move(l));
  }

  void plan_view(std::size_t i) {
    const Node& n = g_.nodes[i];
    const auto& out_shape = plan_.shapes.at(n.outputs.at(0));
    if (out_shape.size() != 2 || out_shape[0] != 1) {
      throw GraphError(fmt::format("{}: output shape {}: only flattening to 1 x F is supported",
                                   n.label(), models::graph::shape_string(out_shape)));
    }
    const std::string& src = plan_.resolve(n.inputs.at(0));
    if (plan_.cubes.count(src) == 0) {
      throw GraphError(
          fmt::format("{}: input '{}' is not computed on the device", n.label(), n.inputs.at(0)));
    }
    plan_.views[n.outputs[0]] = src;
  }

  void plan_node(std::size_t i) {
    const Node& n = g_.nodes[i];
    const std::string& op = n.op_type;
    if (op == "Conv") return plan_conv(i);
    if (op == "Gemm" || op == "MatMul") return plan_fc(i);
    if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool") return plan_pool(i);
    if (op == "LRN") return plan_simple(i, LayerKind::kLrn);
    if (op == "Relu") return plan_simple(i, LayerKind::kRelu);
    if (op == "Flatten" || op == "Reshape") return plan_view(i);
    throw GraphError(
        fmt::format("{}: {} is not supported on the DLA of {} (octasim lowers Conv, "
                    "Gemm, MatMul, MaxPool, AveragePool, GlobalAveragePool, LRN, "
                    "Relu, Clip, Flatten, Reshape)",
                    n.label(), op, config_));
  }

  const Graph& g_;
  std::string config_;
  NetPlan plan_;
  std::vector<bool> used_;
};

}  // namespace

NetPlan plan_network(const Graph& g, const std::string& config_name) {
  return Planner(g, config_name).run();
}

}  // namespace octasim::firmware::net
