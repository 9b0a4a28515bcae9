#include "models/graph/macs.hpp"

#include <optional>
#include <utility>

#include "models/graph/reference.hpp"
#include "models/graph/reference_ops.hpp"

namespace octasim::models::graph {
namespace {

using ops::Inputs;

Tensor zeros(DType t, std::vector<std::int64_t> shape) {
  Tensor z;
  z.dtype = t;
  z.shape = std::move(shape);
  (is_float(t) ? z.f.assign(z.elements(), 0.0F) : z.i.assign(z.elements(), 0));
  return z;
}

// The zero point input `idx` gives a quantized output its type (uint8 when absent), as the
// reference executor does.
DType quantized_type(const Inputs& in, std::size_t idx) {
  return ops::has_input(in, idx) ? in[idx]->dtype : DType::kUInt8;
}

// A 2-D convolution's output without its arithmetic, or nothing when the operands are not what
// the reference executor's convolution accepts (it then runs and reports why).
std::optional<Tensor> conv_output(const Node& n, const Inputs& in) {
  const bool qlinear = n.op_type == "QLinearConv";
  if (!ops::has_input(in, 0) || !ops::has_input(in, qlinear ? 3 : 1)) return std::nullopt;
  const Tensor& x = *in[0];
  const Tensor& w = *in[qlinear ? 3 : 1];
  if (x.shape.size() != 4 || w.shape.size() != 4) return std::nullopt;
  const std::int64_t group = n.get_int("group", 1);
  if (group <= 0 || x.shape[1] % group != 0 || w.shape[0] % group != 0 ||
      w.shape[1] != x.shape[1] / group) {
    return std::nullopt;
  }
  const ops::Window win = ops::window(n, x.shape[2], x.shape[3], {w.shape[2], w.shape[3]});
  DType t = DType::kFloat32;
  if (n.op_type == "ConvInteger") t = DType::kInt32;
  if (qlinear) t = quantized_type(in, 7);
  return zeros(t, {x.shape[0], w.shape[0], win.out_h, win.out_w});
}

std::optional<Tensor> gemm_output(const Node& n, const Inputs& in) {
  if (!ops::has_input(in, 0) || !ops::has_input(in, 1)) return std::nullopt;
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  if (a.shape.size() != 2 || b.shape.size() != 2) return std::nullopt;
  const bool ta = n.get_int("transA", 0) != 0, tb = n.get_int("transB", 0) != 0;
  if ((ta ? a.shape[0] : a.shape[1]) != (tb ? b.shape[1] : b.shape[0])) return std::nullopt;
  return zeros(DType::kFloat32, {ta ? a.shape[1] : a.shape[0], tb ? b.shape[0] : b.shape[1]});
}

std::optional<Tensor> matmul_output(const Node& n, const Inputs& in) {
  const bool qlinear = n.op_type == "QLinearMatMul";
  if (!ops::has_input(in, 0) || !ops::has_input(in, qlinear ? 3 : 1)) return std::nullopt;
  ops::MatmulDims dims;
  std::vector<std::int64_t> shape = ops::for_each_matrix(
      n, *in[0], *in[qlinear ? 3 : 1], &dims, [](std::size_t, std::size_t, std::size_t) {});
  DType t = DType::kFloat32;
  if (n.op_type == "MatMulInteger") t = DType::kInt32;
  if (qlinear) t = quantized_type(in, 7);
  return zeros(t, std::move(shape));
}

std::vector<Tensor> shape_only(const Node& n, const Inputs& in, std::int64_t opset) {
  std::optional<Tensor> y;
  const std::string& op = n.op_type;
  if (op == "Conv" || op == "ConvInteger" || op == "QLinearConv") y = conv_output(n, in);
  if (op == "Gemm") y = gemm_output(n, in);
  if (op == "MatMul" || op == "MatMulInteger" || op == "QLinearMatMul") y = matmul_output(n, in);
  if (y) return {std::move(*y)};
  return run_node(n, in, opset);
}

std::uint64_t product(const std::vector<std::int64_t>& shape, std::size_t from = 0) {
  std::uint64_t p = 1;
  for (std::size_t d = from; d < shape.size(); ++d) p *= static_cast<std::uint64_t>(shape[d]);
  return p;
}

const std::vector<std::int64_t>* shape_of(const ShapeMap& shapes, const Node& n, std::size_t k,
                                          bool output) {
  const std::vector<std::string>& names = output ? n.outputs : n.inputs;
  if (k >= names.size() || names[k].empty()) return nullptr;
  const auto it = shapes.find(names[k]);
  return it == shapes.end() ? nullptr : &it->second;
}

}  // namespace

ShapeMap infer_shapes_fast(const Graph& g, std::int64_t batch) {
  std::map<std::string, Tensor> computed;
  std::map<std::string, const Tensor*> values;
  for (const auto& [name, t] : g.initializers) values[name] = &t;
  for (const ValueInfo& vi : g.inputs) {
    std::vector<std::int64_t> shape = vi.shape;
    for (std::int64_t& d : shape) {
      if (d < 0) d = batch;
    }
    computed[vi.name] = zeros(vi.dtype, std::move(shape));
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
    std::vector<Tensor> out = shape_only(n, in, g.opset);
    for (std::size_t k = 0; k < n.outputs.size() && k < out.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      Tensor& slot = computed[n.outputs[k]];
      slot = std::move(out[k]);
      values[n.outputs[k]] = &slot;
    }
  }
  ShapeMap shapes;
  for (const auto& [name, t] : values) shapes[name] = t->shape;
  return shapes;
}

std::uint64_t node_macs(const Node& n, const ShapeMap& shapes) {
  const std::string& op = n.op_type;
  const std::vector<std::int64_t>* y = shape_of(shapes, n, 0, true);
  if (y == nullptr) return 0;
  if (op == "Conv" || op == "ConvInteger" || op == "QLinearConv") {
    // W is M x C/group x kH x kW: each output element accumulates C/group x kH x kW products.
    const std::vector<std::int64_t>* w = shape_of(shapes, n, op == "QLinearConv" ? 3 : 1, false);
    return w == nullptr || w->size() < 2 ? 0 : product(*y) * product(*w, 1);
  }
  if (op == "Gemm") {
    const std::vector<std::int64_t>* a = shape_of(shapes, n, 0, false);
    if (a == nullptr || a->size() != 2) return 0;
    const std::int64_t k = n.get_int("transA", 0) != 0 ? (*a)[0] : (*a)[1];
    return product(*y) * static_cast<std::uint64_t>(k);
  }
  if (op == "MatMul" || op == "MatMulInteger" || op == "QLinearMatMul") {
    const std::vector<std::int64_t>* a = shape_of(shapes, n, 0, false);
    if (a == nullptr || a->empty()) return 0;
    return product(*y) * static_cast<std::uint64_t>(a->back());
  }
  return 0;
}

std::vector<NodeMacs> macs_per_node(const Graph& g) {
  const ShapeMap shapes = infer_shapes_fast(g, 1);
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
