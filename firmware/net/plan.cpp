#include "firmware/net/plan.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/core.h>

#include "firmware/net/planner.hpp"
#include "models/graph/macs.hpp"
#include "models/graph/op_registry.hpp"
#include "models/graph/passes.hpp"

namespace octasim::firmware::net {

using models::graph::Graph;
using models::graph::GraphError;
using models::graph::Lowering;
using models::graph::Node;

const char* layer_engine(LayerKind k) {
  switch (k) {
    case LayerKind::kConv:
      return "CONV";
    case LayerKind::kPool:
      return "PDP";
    case LayerKind::kLrn:
      return "CDP";
    case LayerKind::kSdp:
      return "SDP";
    case LayerKind::kSoftmax:
      return "PPU";
    case LayerKind::kBdma:
      return "BDMA";
    case LayerKind::kRubik:
      return "RUBIK";
    case LayerKind::kPpu:
      return "PPU";
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

namespace detail {
namespace {

unsigned as_unsigned(const Node& n, std::int64_t v, const char* what) {
  if (v < 0 || v > 65535)
    throw GraphError(fmt::format("{}: {} {} is out of range", n.label(), what, v));
  return static_cast<unsigned>(v);
}

// ONNX's spatial attributes of a 2-D (or 1-D: H = 1) window: kernel (from the attribute or
// `fallback`), strides, pads [top, left, bottom, right], dilations; auto_pad SAME_UPPER/LOWER
// pads as ONNX computes it for the input's `in_h` x `in_w`.
struct Spatial {
  unsigned kh = 1, kw = 1, sy = 1, sx = 1, top = 0, left = 0, bottom = 0, right = 0, dy = 1, dx = 1;
};

Spatial spatial(const Node& n, std::vector<std::int64_t> kernel_fallback, std::int64_t in_h,
                std::int64_t in_w) {
  Spatial s;
  const std::vector<std::int64_t> k0 = n.get_ints("kernel_shape", std::move(kernel_fallback));
  const std::size_t dims = k0.size();
  if (dims != 1 && dims != 2) {
    throw GraphError(
        fmt::format("{}: a {}-D window: the DLA computes 1-D and 2-D ones", n.label(), dims));
  }
  // 1-D attributes become 2-D ones with a height of 1.
  const auto two = [&](const char* attr, std::int64_t def) {
    std::vector<std::int64_t> v = n.get_ints(attr, std::vector<std::int64_t>(dims, def));
    if (v.size() != dims) {
      throw GraphError(fmt::format("{}: attribute '{}' must have {} values, has {}", n.label(),
                                   attr, dims, v.size()));
    }
    if (dims == 1) v.insert(v.begin(), 1);
    return v;
  };
  std::vector<std::int64_t> k = k0;
  if (dims == 1) k.insert(k.begin(), 1);
  const auto st = two("strides", 1);
  const auto dil = two("dilations", 1);
  std::vector<std::int64_t> pads = n.get_ints("pads", std::vector<std::int64_t>(2 * dims, 0));
  if (pads.size() != 2 * dims) {
    throw GraphError(fmt::format("{}: attribute 'pads' must have {} values, has {}", n.label(),
                                 2 * dims, pads.size()));
  }
  if (dims == 1) pads = {0, pads[0], 0, pads[1]};
  s.kh = as_unsigned(n, k[0], "kernel height");
  s.kw = as_unsigned(n, k[1], "kernel width");
  s.sy = as_unsigned(n, st[0], "stride");
  s.sx = as_unsigned(n, st[1], "stride");
  s.dy = as_unsigned(n, dil[0], "dilation");
  s.dx = as_unsigned(n, dil[1], "dilation");
  if (s.sy == 0 || s.sx == 0) throw GraphError(fmt::format("{}: stride 0", n.label()));
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    s.top = as_unsigned(n, pads[0], "pad");
    s.left = as_unsigned(n, pads[1], "pad");
    s.bottom = as_unsigned(n, pads[2], "pad");
    s.right = as_unsigned(n, pads[3], "pad");
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // Output ceil(in / stride); the padding that needs, the odd one after (UPPER) or before.
    const auto same = [&](std::int64_t in, unsigned kernel, unsigned stride, unsigned dilation,
                          unsigned& before, unsigned& after) {
      const std::int64_t out = (in + stride - 1) / stride;
      const std::int64_t total = std::max<std::int64_t>(
          0, (out - 1) * stride + (std::int64_t{kernel} - 1) * dilation + 1 - in);
      const std::int64_t small = total / 2;
      before = as_unsigned(n, auto_pad == "SAME_UPPER" ? small : total - small, "pad");
      after = as_unsigned(n, total - before, "pad");
    };
    same(in_h, s.kh, s.sy, s.dy, s.top, s.bottom);
    same(in_w, s.kw, s.sx, s.dx, s.left, s.right);
  } else if (auto_pad != "VALID") {
    throw GraphError(fmt::format("{}: auto_pad {} is not an ONNX value", n.label(), auto_pad));
  }
  return s;
}

// ONNX's ceil_mode: the extra padding after the input that the last, partial window needs.
unsigned ceil_extra(std::int64_t in, unsigned kernel, unsigned stride, unsigned before,
                    unsigned after) {
  const std::int64_t span = in + before + after - kernel;
  if (span < 0) return 0;
  std::int64_t ceil_out = (span + stride - 1) / stride + 1;
  // ONNX (and PyTorch) drop a last window that would start in the padding after the input.
  if ((ceil_out - 1) * stride >= in + before) --ceil_out;
  const std::int64_t needed = (ceil_out - 1) * stride + kernel - (in + before + after);
  return static_cast<unsigned>(std::max<std::int64_t>(0, needed));
}

}  // namespace

NetPlan Planner::run() {
  // A weight or bias the graph takes as an input (ONNX's node tests do) is refused by the node
  // that needs it constant, before the inputs are counted. (One computed by another node, as in
  // attention's activation x activation MatMul, is the node's planner's to refuse: the PPU may
  // take it.)
  const auto graph_input = [&](const std::string& t) {
    return std::any_of(g_.inputs.begin(), g_.inputs.end(),
                       [&](const models::graph::ValueInfo& v) { return v.name == t; });
  };
  for (const Node& n : g_.nodes) {
    const bool weighted = n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul" ||
                          n.op_type == "ConvInteger" || n.op_type == "MatMulInteger";
    for (std::size_t k = 1; weighted && k < n.inputs.size(); ++k) {
      if (!n.inputs[k].empty() && graph_input(n.inputs[k])) {
        (void)constant(n, k, k == 1 ? "weight" : "bias");
      }
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
  if (!models::graph::is_float(data_inputs[0].dtype)) {
    plan_.dtypes = models::graph::infer_dtypes(g_);
  }
  plan_.input_shape = plan_.shapes.at(plan_.input);
  set_cube(plan_.input, nullptr);
  for (const auto& o : g_.outputs) plan_.outputs.push_back(o.name);
  used_.assign(g_.nodes.size(), false);
  for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
    if (!used_[i]) plan_node(i);
  }
  for (const std::string& out : plan_.outputs) {
    const std::string& t = plan_.resolve(out);
    if (g_.is_constant(t)) {
      // A folded output (a Shape, a Dropout's mask): the compiler writes its value into the
      // program's memory image, a surface of its shape (any shape, as a PPU layer's).
      set_cube(t, nullptr, true);
      continue;
    }
    const bool produced =
        t == plan_.input || std::any_of(plan_.layers.begin(), plan_.layers.end(),
                                        [&](const PlannedLayer& l) { return l.output == t; });
    if (!produced && plan_.concats.count(t) == 0 && plan_.slices.count(t) == 0) {
      throw GraphError(fmt::format("graph output '{}' is not computed by any layer", out));
    }
  }
  return std::move(plan_);
}

const Node* Planner::sole_consumer(const std::string& tensor, std::size_t* index) const {
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

const models::graph::Tensor& Planner::constant(const Node& n, std::size_t k,
                                               const char* what) const {
  if (n.inputs.size() <= k || !g_.is_constant(n.inputs[k])) {
    throw GraphError(
        fmt::format("{}: the {} must be a constant (an initializer) for the DLA", n.label(), what));
  }
  return g_.initializers.at(n.inputs[k]);
}

void Planner::set_cube(const std::string& tensor, const Node* n, bool ppu) {
  const auto& shape = plan_.shapes.at(tensor);
  const auto dim = [&](std::size_t i) { return static_cast<std::uint32_t>(shape[i]); };
  Cube c;
  const bool dla_shape =
      shape.size() >= 1 && shape.size() <= 4 && (shape.size() != 4 || shape[0] == 1);
  if (ppu && !dla_shape) {
    // W the last axis, H the one before, C the product of the others (C order kept).
    std::uint64_t channels = 1;
    for (std::size_t k = 0; k + 2 < shape.size(); ++k) {
      channels *= static_cast<std::uint64_t>(std::max<std::int64_t>(shape[k], 0));
      if (channels > (std::uint64_t{1} << 24)) {
        throw GraphError(fmt::format("{}tensor '{}' of shape {} has more than 2^24 channels",
                                     n != nullptr ? n->label() + ": " : "", tensor,
                                     models::graph::shape_string(shape)));
      }
    }
    c = {shape.empty() ? 1U : dim(shape.size() - 1), shape.size() < 2 ? 1U : dim(shape.size() - 2),
         static_cast<std::uint32_t>(channels)};
    ppu_only_.insert(tensor);
  } else if (shape.size() == 4 && shape[0] == 1) {
    c = {dim(3), dim(2), dim(1)};
  } else if (shape.size() == 3 && shape[0] == 1) {
    c = {dim(2), 1, dim(1)};
  } else if (shape.size() == 3) {
    c = {dim(2), dim(1), dim(0)};
  } else if (shape.size() == 2) {
    c = {1, dim(0), dim(1)};
  } else if (shape.size() == 1) {
    c = {1, 1, dim(0)};
  } else {
    throw GraphError(fmt::format(
        "{}tensor '{}' has shape {}: the DLA holds 1xCxHxW, 1xCxL, CxHxW, MxK or K "
        "tensors (one image)",
        n != nullptr ? n->label() + ": " : "", tensor, models::graph::shape_string(shape)));
  }
  if (c.width == 0 || c.height == 0 || c.channels == 0) {
    throw GraphError(fmt::format("{}tensor '{}' is empty ({})",
                                 n != nullptr ? n->label() + ": " : "", tensor,
                                 models::graph::shape_string(shape)));
  }
  plan_.cubes[tensor] = c;
}

std::pair<std::int64_t, std::int64_t> Planner::spatial_size(const Node& n) const {
  const auto& shape = plan_.shapes.at(n.inputs.at(0));
  if (shape.size() == 4) return {shape[2], shape[3]};
  if (shape.size() == 3) return {1, shape[2]};
  throw GraphError(fmt::format("{}: input of shape {}: expected N x C x H x W or N x C x L",
                               n.label(), models::graph::shape_string(shape)));
}

std::string Planner::data_input(const Node& n, bool view_ok) {
  const std::string& in = n.inputs.at(0);
  if (!view_ok && plan_.views.count(in) != 0) {
    throw GraphError(fmt::format("{}: reads the {} of '{}', which only a Gemm/MatMul can use",
                                 n.label(), "flattened view", plan_.views.at(in)));
  }
  const std::string& t = view_ok ? plan_.resolve(in) : in;
  if (plan_.cubes.count(t) == 0) {
    throw GraphError(fmt::format("{}: input '{}' is not computed on the device", n.label(), in));
  }
  if (ppu_only_.count(t) != 0) {
    throw GraphError(fmt::format("{}: input '{}' of shape {} is held for the PPU only", n.label(),
                                 in, models::graph::shape_string(plan_.shapes.at(t))));
  }
  return t;
}

std::pair<std::optional<double>, std::optional<double>> Planner::clip_bounds(const Node& n) const {
  // Before opset 11 the attributes (default: FP32's range), from 11 on optional inputs.
  std::optional<double> lo, hi;
  if (n.attributes.count("min") != 0) lo = n.get_float("min", 0.0F);
  if (n.attributes.count("max") != 0) hi = n.get_float("max", 0.0F);
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) lo = constant(n, 1, "min").at(0);
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) hi = constant(n, 2, "max").at(0);
  // A bound at or beyond FP32's largest magnitude bounds nothing.
  if (lo && *lo <= -3.4e38) lo.reset();
  if (hi && *hi >= 3.4e38) hi.reset();
  return {lo, hi};
}

void Planner::fuse_activation(PlannedLayer& layer, bool take_clip) {
  std::size_t idx = 0;
  const Node* act = sole_consumer(layer.output, &idx);
  if (act == nullptr) return;
  if (act->op_type == "Relu") {
    layer.conv.relu = true;
  } else if (act->op_type == "Clip" && take_clip) {
    const auto [lo, hi] = clip_bounds(*act);
    if (lo != 0.0 || (hi && !(*hi > 0.0))) return;  // not a ReLU with a cap: its own layer
    layer.conv.relu = true;
    layer.conv.clip_max = hi.value_or(0.0);
  } else {
    return;
  }
  used_[idx] = true;
  layer.nodes.push_back(idx);
  layer.output = act->outputs.at(0);
}

void Planner::plan_conv(std::size_t i) {
  const Node& n = g_.nodes[i];
  PlannedLayer l;
  l.kind = LayerKind::kConv;
  l.nodes = {i};
  l.input = data_input(n, false);
  const auto& w = constant(n, 1, "weight");
  if (w.shape.size() != 4 && w.shape.size() != 3) {
    throw GraphError(fmt::format("{}: weights of shape {}: only 2-D convolution is supported",
                                 n.label(), models::graph::shape_string(w.shape)));
  }
  const std::int64_t groups = n.get_int("group", 1);
  const std::int64_t channels = plan_.cubes.at(l.input).channels;
  if (groups < 1 || channels % groups != 0 || w.shape[0] % groups != 0 ||
      w.shape[1] * groups != channels) {
    throw GraphError(
        fmt::format("{}: group {} does not divide {} input channels and {} kernels "
                    "of weights {}",
                    n.label(), groups, channels, w.shape[0], models::graph::shape_string(w.shape)));
  }
  l.conv.groups = static_cast<unsigned>(groups);
  l.conv.weight = n.inputs[1];
  if (n.op_type == "ConvInteger") {
    integer_operands(n, l.conv);
  } else if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    (void)constant(n, 2, "bias");
    l.conv.bias = n.inputs[2];
  }
  if (w.shape.size() == 3) {
    throw GraphError(fmt::format("{}: 1-D convolution is not supported yet", n.label()));
  }
  const auto [in_h, in_w] = spatial_size(n);
  const Spatial s = spatial(n, {w.shape[2], w.shape[3]}, in_h, in_w);
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
  fuse_residual(l);
  set_cube(l.output, &n);
  plan_.layers.push_back(std::move(l));
}

void Planner::integer_operands(const Node& n, ConvAttrs& a) {
  a.integer = true;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    if (constant(n, 2, "input zero point").elements() != 1) {
      throw GraphError(fmt::format("{}: the input zero point must be one value", n.label()));
    }
    a.input_zero_point = n.inputs[2];
  }
  if (n.inputs.size() > 3 && !n.inputs[3].empty()) {
    (void)constant(n, 3, "weight zero point");
    a.weight_zero_point = n.inputs[3];
  }
}

void Planner::plan_fc(std::size_t i) {
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
  if (n.op_type == "MatMulInteger") integer_operands(n, l.conv);
  if (n.op_type == "Gemm") {
    if (n.get_int("transA", 0) != 0) {
      // The host writes the graph input: it lays A (K x M) out as the rows of its transpose.
      const auto& a = plan_.shapes.at(n.inputs[0]);
      if (n.inputs[0] != plan_.input || g_.consumers(n.inputs[0]) != 1 || a.size() != 2) {
        throw GraphError(
            fmt::format("{}: transA=1 is supported on the graph's input only (the host lays it out "
                        "transposed; the DLA has no transpose)",
                        n.label()));
      }
      plan_.cubes[l.input] = {1, static_cast<std::uint32_t>(a[1]),
                              static_cast<std::uint32_t>(a[0])};
      plan_.transposed.insert(l.input);
    }
    l.conv.transpose_b = n.get_int("transB", 0) != 0;
    l.conv.alpha = n.get_float("alpha", 1.0F);
    l.conv.beta = n.get_float("beta", 1.0F);
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const auto& c = constant(n, 2, "C operand");
      const std::size_t outputs = static_cast<std::size_t>(b.shape[l.conv.transpose_b ? 0 : 1]);
      if (c.elements() == outputs || c.elements() == 1) {
        l.conv.bias = n.inputs[2];
      } else {
        l.conv.matrix_bias = n.inputs[2];  // broadcast to the output: checked when lowered
      }
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
  if (in_shape.size() != 2) {
    throw GraphError(
        fmt::format("{}: input of shape {}: a fully-connected layer takes M x K rows (batched "
                    "matrix products are not supported)",
                    n.label(), models::graph::shape_string(in_shape)));
  }
  const Cube& c = plan_.cubes.at(l.input);
  // A flattened cube: the kernel covers it (one row); rows of their own: a 1x1 kernel.
  l.conv.rows = plan_.views.count(n.inputs[0]) == 0;
  if (!l.conv.rows && in_shape[0] != 1) {
    throw GraphError(fmt::format("{}: a flattened input of shape {} has more than one row",
                                 n.label(), models::graph::shape_string(in_shape)));
  }
  l.conv.kernel_w = l.conv.rows ? 1 : c.width;
  l.conv.kernel_h = l.conv.rows ? 1 : c.height;
  fuse_activation(l);
  set_cube(l.output, &n);
  plan_.layers.push_back(std::move(l));
}

void Planner::plan_pool(std::size_t i) {
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
    const auto [in_h, in_w] = spatial_size(n);
    Spatial s = spatial(n, {}, in_h, in_w);
    if (s.dy != 1 || s.dx != 1) {
      throw GraphError(fmt::format("{}: dilated pooling is not supported", n.label()));
    }
    l.pool.kind = n.op_type == "MaxPool" ? PoolKind::kMax : PoolKind::kAverage;
    if (n.get_int("ceil_mode", 0) != 0) {
      // The last, partial windows: padding after the input, which max pooling ignores.
      const unsigned extra_y = ceil_extra(in_h, s.kh, s.sy, s.top, s.bottom);
      const unsigned extra_x = ceil_extra(in_w, s.kw, s.sx, s.left, s.right);
      // Average: ONNX divides a partial window by the elements it covers.
      if (l.pool.kind == PoolKind::kAverage && extra_x + extra_y != 0) {
        l.pool.exclude_pad = true;
      }
      s.bottom += extra_y;
      s.right += extra_x;
    }
    const bool padded = s.top + s.left + s.bottom + s.right != 0;
    if (l.pool.kind == PoolKind::kAverage && padded && n.get_int("count_include_pad", 0) == 0) {
      l.pool.exclude_pad = true;
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

void Planner::plan_lrn(std::size_t i) {
  const Node& n = g_.nodes[i];
  PlannedLayer l;
  l.kind = LayerKind::kLrn;
  l.nodes = {i};
  l.input = data_input(n, false);
  l.lrn.size = as_unsigned(n, n.get_int("size", 0), "size");
  l.lrn.alpha = n.get_float("alpha", 1e-4F);
  l.lrn.beta = n.get_float("beta", 0.75F);
  l.lrn.bias = n.get_float("bias", 1.0F);
  l.output = n.outputs.at(0);
  set_cube(l.output, &n);
  plan_.layers.push_back(std::move(l));
}

void Planner::plan_view(std::size_t i) {
  const Node& n = g_.nodes[i];
  // Any shape: the elements keep ONNX's C order, which is the order the host reads a surface
  // in; a Gemm/MatMul reading the view checks it is one row (plan_fc).
  const std::string& src = plan_.resolve(n.inputs.at(0));
  if (plan_.cubes.count(src) == 0) {
    throw GraphError(
        fmt::format("{}: input '{}' is not computed on the device", n.label(), n.inputs.at(0)));
  }
  plan_.views[n.outputs[0]] = src;
}

void Planner::plan_node(std::size_t i) {
  if (fallback_ != Fallback::kPpu || !has_ppu_) return plan_on_dla(i);
  // A node whose DLA layer the lowering refused (a constraint the planners do not check).
  if (const auto it = refused_.find(i); it != refused_.end()) return plan_ppu(i, it->second);
  // The DLA first; what it refuses goes to the PPU, from the plan as it was before the attempt
  // (a planner may have fused nodes or set cubes before refusing).
  NetPlan before = plan_;
  std::vector<bool> used_before = used_;
  std::set<std::string> ppu_only_before = ppu_only_;
  try {
    return plan_on_dla(i);
  } catch (const GraphError& e) {
    plan_ = std::move(before);
    used_ = std::move(used_before);
    ppu_only_ = std::move(ppu_only_before);
    plan_ppu(i, e.what());
  }
}

void Planner::plan_on_dla(std::size_t i) {
  const Node& n = g_.nodes[i];
  const models::graph::OpSchema* op = models::graph::find_op(n.op_type);
  // A pattern one SDP layer computes, from its first node: PyTorch's GELU (plan_activation.cpp).
  if ((n.op_type == "Div" || n.op_type == "Mul") && !gelu_pattern(i).empty()) {
    return plan_activation(i);
  }
  // The registry's lowerings in preference order: the first this configuration has.
  for (const Lowering l : op != nullptr ? op->lowerings : std::vector<Lowering>{}) {
    switch (l) {
      case Lowering::kConv:
        return plan_conv(i);
      case Lowering::kFullyConnected:
        return plan_fc(i);
      case Lowering::kPool:
        return plan_pool(i);
      case Lowering::kLrn:
        return plan_lrn(i);
      case Lowering::kSdp:
        return plan_sdp(i);
      case Lowering::kView:
        return plan_view(i);
      case Lowering::kConcat:
        return plan_concat(i);
      case Lowering::kChannelSlice:
        return plan_channel_slice(i);
      case Lowering::kPpuSoftmax:
        if (has_ppu_) return plan_softmax(i);
        break;
      case Lowering::kSdpLut:
        return plan_activation(i);
      case Lowering::kResize:
        return plan_resize(i);
      case Lowering::kRubik:
        return plan_depth_to_space(i);
      case Lowering::kFolded:
        break;
    }
  }
  throw GraphError(refusal(n, op));
}

std::string Planner::refusal(const Node& n, const models::graph::OpSchema* op) const {
  if (op == nullptr) {
    return fmt::format("{}: {} is not an operator octasim knows (`octasim ops` lists them)",
                       n.label(), n.op_type);
  }
  const auto has = [&](Lowering l) {
    return std::find(op->lowerings.begin(), op->lowerings.end(), l) != op->lowerings.end();
  };
  if (has(Lowering::kPpuSoftmax)) {
    return fmt::format("{}: {} is not supported on the DLA of {} (no PPU in this configuration)",
                       n.label(), n.op_type, config_);
  }
  if (has(Lowering::kFolded)) {
    return fmt::format(
        "{}: {} could not be folded away before lowering (a {} the graph passes cannot remove)",
        n.label(), n.op_type,
        n.op_type == "Pad" ? "non-zero, non-spatial or reflect/edge pad" : "form");
  }
  if (n.op_type == "Div") {
    // A Div by a constant is a Mul after the graph passes; what reaches here is not GELU's.
    return fmt::format(
        "{}: Div is not supported on the DLA of {} (it is lowered only as the start of GELU: "
        "Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5))",
        n.label(), config_);
  }
  return fmt::format("{}: {} is not supported on the DLA of {}", n.label(), n.op_type, config_);
}

}  // namespace detail

NetPlan plan_network(const Graph& g, const std::string& config_name, bool has_ppu,
                     Fallback fallback, const std::map<std::size_t, std::string>& refused) {
  return detail::Planner(g, config_name, has_ppu, fallback, refused).run();
}

}  // namespace octasim::firmware::net
