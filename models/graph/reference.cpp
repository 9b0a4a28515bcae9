// The reference executor (its dispatch is the operator registry, op_registry.hpp), element-wise
// operators (with numpy broadcasting), Softmax and the shape operators (Flatten, Reshape, Concat).
#include "models/graph/reference.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "models/graph/op_registry.hpp"
#include "models/graph/reference_ops.hpp"

namespace octasim::models::graph {
namespace ops {

const Tensor& input(const Node& n, const Inputs& in, std::size_t k) {
  if (!has_input(in, k)) {
    throw GraphError(n.label() + ": input " + std::to_string(k) + " is missing");
  }
  return *in[k];
}

bool has_input(const Inputs& in, std::size_t k) {
  // An omitted optional input is the executor's empty Tensor: no data at all and no shape (a
  // tensor of zero elements has a 0 in its shape).
  if (k >= in.size() || in[k] == nullptr) return false;
  const Tensor& t = *in[k];
  return !t.f.empty() || !t.i.empty() || (!t.shape.empty() && t.elements() == 0);
}

double round_half_even(double v) {
  return std::nearbyint(v);
}  // default FE_TONEAREST

std::int64_t saturate(DType t, double v) {
  double lo = -128, hi = 127;
  if (t == DType::kUInt8) lo = 0, hi = 255;
  if (t == DType::kInt32) lo = -2147483648.0, hi = 2147483647.0;
  return static_cast<std::int64_t>(std::min(hi, std::max(lo, v)));
}

std::int64_t wrap(DType t, double v) {
  // Beyond int64 (an integer Pow's overflow): its ends, then the type's modular wrap.
  const double lim = 9223372036854774784.0;  // the largest double below 2^63
  const auto w = static_cast<std::int64_t>(std::clamp(v, -lim, lim));
  switch (t) {
    case DType::kInt8:
      return static_cast<std::int8_t>(static_cast<std::uint8_t>(w));
    case DType::kUInt8:
      return static_cast<std::uint8_t>(w);
    case DType::kInt32:
      return static_cast<std::int32_t>(static_cast<std::uint32_t>(w));
    case DType::kBool:
      return w != 0 ? 1 : 0;
    default:
      return w;
  }
}

std::vector<std::int64_t> broadcast_shape(const Node& n, const std::vector<std::int64_t>& a,
                                          const std::vector<std::int64_t>& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    const std::int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    const std::int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw GraphError(n.label() + ": shapes " + shape_string(a) + " and " + shape_string(b) +
                       " do not broadcast");
    }
    out[k] = da == 1 ? db : da;
  }
  return out;
}

// The flat index into a tensor of `shape` for output coordinate `coord` of the broadcast shape.
std::size_t broadcast_index(const std::vector<std::int64_t>& shape,
                            const std::vector<std::int64_t>& coord) {
  std::size_t idx = 0;
  const std::size_t off = coord.size() - shape.size();
  for (std::size_t k = 0; k < shape.size(); ++k) {
    idx = idx * static_cast<std::size_t>(shape[k]) +
          static_cast<std::size_t>(shape[k] == 1 ? 0 : coord[off + k]);
  }
  return idx;
}

std::vector<std::int64_t> for_each_matrix(
    const Node& n, const Tensor& a, const Tensor& b, MatmulDims* dims,
    const std::function<void(std::size_t, std::size_t, std::size_t)>& fn) {
  if (a.shape.size() < 2 || b.shape.size() < 2) {
    throw GraphError(n.label() + ": MatMul of a 1-D operand is not supported (A " +
                     shape_string(a.shape) + ", B " + shape_string(b.shape) + ")");
  }
  const std::vector<std::int64_t> ab(a.shape.begin(), a.shape.end() - 2);
  const std::vector<std::int64_t> bb(b.shape.begin(), b.shape.end() - 2);
  dims->m = static_cast<std::size_t>(a.shape[a.shape.size() - 2]);
  dims->k = static_cast<std::size_t>(a.shape.back());
  dims->n = static_cast<std::size_t>(b.shape.back());
  if (static_cast<std::size_t>(b.shape[b.shape.size() - 2]) != dims->k) {
    throw GraphError(n.label() + ": A " + shape_string(a.shape) + " and B " +
                     shape_string(b.shape) + " do not multiply");
  }
  std::vector<std::int64_t> batch = broadcast_shape(n, ab, bb);
  std::size_t count = 1;
  for (const std::int64_t d : batch) count *= static_cast<std::size_t>(d);
  std::vector<std::int64_t> coord(batch.size(), 0);
  for (std::size_t i = 0; i < count; ++i) {
    fn(broadcast_index(ab, coord) * dims->m * dims->k,
       broadcast_index(bb, coord) * dims->k * dims->n, i * dims->m * dims->n);
    for (std::size_t d = coord.size(); d-- > 0;) {
      if (++coord[d] < batch[d]) break;
      coord[d] = 0;
    }
  }
  batch.push_back(static_cast<std::int64_t>(dims->m));
  batch.push_back(static_cast<std::int64_t>(dims->n));
  return batch;
}

Tensor binary(const Node& n, const Inputs& in, const std::function<double(double, double)>& fn) {
  const Tensor& a = ops::input(n, in, 0);
  const Tensor& b = ops::input(n, in, 1);
  if (is_float(a.dtype) != is_float(b.dtype)) {
    throw GraphError(n.label() + ": mixed " + dtype_name(a.dtype) + " and " + dtype_name(b.dtype));
  }
  Tensor out;
  out.dtype = a.dtype;
  out.shape = ops::broadcast_shape(n, a.shape, b.shape);
  const std::size_t count = out.elements();
  std::vector<std::int64_t> coord(out.shape.size(), 0);
  if (is_float(out.dtype)) {
    out.f.resize(count);
  } else {
    out.i.resize(count);
  }
  for (std::size_t k = 0; k < count; ++k) {
    const double v =
        fn(a.at(ops::broadcast_index(a.shape, coord)), b.at(ops::broadcast_index(b.shape, coord)));
    if (is_float(out.dtype)) {
      out.f[k] = static_cast<float>(v);
    } else {
      // ONNX's integer arithmetic wraps (numpy's: uint8 modulo 256); an integer division by
      // zero is 0, as numpy gives it.
      out.i[k] = std::isfinite(v) ? wrap(out.dtype, v) : 0;
    }
    for (std::size_t d = coord.size(); d-- > 0;) {
      if (++coord[d] < out.shape[d]) break;
      coord[d] = 0;
    }
  }
  return out;
}

Tensor unary(const Node& n, const Inputs& in, const std::function<double(double)>& fn) {
  Tensor out = ops::input(n, in, 0);
  if (!is_float(out.dtype)) throw GraphError(n.label() + ": expects a float tensor");
  for (float& v : out.f) v = static_cast<float>(fn(v));
  return out;
}

Tensor clip(const Node& n, const Inputs& in, std::int64_t opset) {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  if (opset >= 11) {
    if (ops::has_input(in, 1)) lo = in[1]->at(0);
    if (ops::has_input(in, 2)) hi = in[2]->at(0);
  } else {
    lo = n.get_float("min", -std::numeric_limits<float>::max());
    hi = n.get_float("max", std::numeric_limits<float>::max());
  }
  Tensor out = ops::input(n, in, 0);
  const auto bound = [&](double x) { return std::min(hi, std::max(lo, x)); };
  for (float& v : out.f) v = static_cast<float>(bound(v));
  for (std::int64_t& v : out.i) v = static_cast<std::int64_t>(bound(static_cast<double>(v)));
  return out;
}

Tensor softmax(const Node& n, const Inputs& in, std::int64_t opset) {
  Tensor out = ops::input(n, in, 0);
  const auto rank = static_cast<std::int64_t>(out.shape.size());
  std::int64_t axis = n.get_int("axis", opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) throw GraphError(n.label() + ": axis out of range");
  // Opset 13 normalises along one axis; before, over everything from `axis` on.
  std::size_t outer = 1, inner = 1, len = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    const auto dim = static_cast<std::size_t>(out.shape[static_cast<std::size_t>(d)]);
    if (d < axis) {
      outer *= dim;
    } else if (d == axis || opset < 13) {
      len *= dim;
    } else {
      inner *= dim;
    }
  }
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t k = 0; k < inner; ++k) {
      const auto at = [&](std::size_t j) -> float& { return out.f[(o * len + j) * inner + k]; };
      double top = -std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < len; ++j) top = std::max(top, double{at(j)});
      double sum = 0;
      for (std::size_t j = 0; j < len; ++j) sum += std::exp(double{at(j)} - top);
      for (std::size_t j = 0; j < len; ++j) {
        at(j) = static_cast<float>(std::exp(double{at(j)} - top) / sum);
      }
    }
  }
  return out;
}

Tensor flatten(const Node& n, const Inputs& in) {
  Tensor out = ops::input(n, in, 0);
  const auto rank = static_cast<std::int64_t>(out.shape.size());
  std::int64_t axis = n.get_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) throw GraphError(n.label() + ": axis out of range");
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    (d < axis ? outer : inner) *= out.shape[static_cast<std::size_t>(d)];
  }
  out.shape = {outer, inner};
  return out;
}

Tensor reshape(const Node& n, const Inputs& in) {
  Tensor out = ops::input(n, in, 0);
  const Tensor& spec = ops::input(n, in, 1);
  const bool allow_zero = n.get_int("allowzero", 0) != 0;
  std::vector<std::int64_t> shape(spec.i.begin(), spec.i.end());
  std::int64_t known = 1;
  std::size_t infer = shape.size();
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0 && !allow_zero) {
      if (k >= out.shape.size()) throw GraphError(n.label() + ": 0 copies a missing dimension");
      shape[k] = out.shape[k];
    }
    if (shape[k] == -1) {
      if (infer != shape.size()) throw GraphError(n.label() + ": more than one -1 in the shape");
      infer = k;
    } else {
      known *= shape[k];
    }
  }
  const auto count = static_cast<std::int64_t>(out.elements());
  if (infer != shape.size()) {
    if (known == 0 || count % known != 0) throw GraphError(n.label() + ": cannot infer -1");
    shape[infer] = count / known;
  }
  std::int64_t total = 1;
  for (const std::int64_t d : shape) total *= d;
  if (total != count) {
    throw GraphError(n.label() + ": cannot reshape " + shape_string(out.shape) + " to " +
                     shape_string(shape));
  }
  out.shape = shape;
  return out;
}

// ONNX Concat: the inputs joined along `axis` (negative counts from the end); every other
// dimension must agree.
Tensor concat(const Node& n, const Inputs& in) {
  const Tensor& first = ops::input(n, in, 0);
  const auto rank = static_cast<std::int64_t>(first.shape.size());
  std::int64_t axis = n.get_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) throw GraphError(n.label() + ": axis out of range");
  const auto ax = static_cast<std::size_t>(axis);
  Tensor out;
  out.dtype = first.dtype;
  out.shape = first.shape;
  out.shape[ax] = 0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    const Tensor& t = ops::input(n, in, k);
    std::vector<std::int64_t> a = t.shape, b = first.shape;
    if (a.size() == b.size()) a[ax] = b[ax] = 0;
    if (a != b || t.dtype != first.dtype) {
      throw GraphError(n.label() + ": input " + std::to_string(k) + " of shape " +
                       shape_string(t.shape) + " does not concatenate with " +
                       shape_string(first.shape) + " on axis " + std::to_string(axis));
    }
    out.shape[ax] += t.shape[ax];
  }
  // Each input contributes a block of shape[axis] x inner elements to every outer index.
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < first.shape.size(); ++d) {
    if (d < ax) outer *= static_cast<std::size_t>(first.shape[d]);
    if (d > ax) inner *= static_cast<std::size_t>(first.shape[d]);
  }
  const bool floats = is_float(first.dtype);
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t k = 0; k < in.size(); ++k) {
      const Tensor& t = *in[k];
      const std::size_t block = static_cast<std::size_t>(t.shape[ax]) * inner;
      if (floats) {
        out.f.insert(out.f.end(), t.f.begin() + static_cast<std::ptrdiff_t>(o * block),
                     t.f.begin() + static_cast<std::ptrdiff_t>((o + 1) * block));
      } else {
        out.i.insert(out.i.end(), t.i.begin() + static_cast<std::ptrdiff_t>(o * block),
                     t.i.begin() + static_cast<std::ptrdiff_t>((o + 1) * block));
      }
    }
  }
  return out;
}

}  // namespace ops

bool reference_supports(const Node& node, std::string* why) {
  if (find_op(node.op_type) != nullptr) return true;
  if (why != nullptr) *why = "the reference executor has no " + node.op_type;
  return false;
}

std::vector<Tensor> run_node(const Node& node, const std::vector<const Tensor*>& in,
                             std::int64_t opset) {
  return run_op(node, in, opset);
}

TensorMap run_reference(const Graph& g, const TensorMap& inputs) {
  TensorMap values = g.initializers;
  for (const ValueInfo& vi : g.inputs) {
    const auto it = inputs.find(vi.name);
    if (it == inputs.end()) throw GraphError("graph input '" + vi.name + "' is not given");
    values[vi.name] = it->second;
  }
  const Tensor absent;
  for (const Node& n : g.nodes) {
    std::vector<const Tensor*> in;
    for (const std::string& name : n.inputs) {
      if (name.empty()) {
        in.push_back(&absent);
        continue;
      }
      const auto it = values.find(name);
      if (it == values.end()) {
        throw GraphError(n.label() + ": input '" + name + "' is not computed before it");
      }
      in.push_back(&it->second);
    }
    std::vector<Tensor> out = run_node(n, in, g.opset);
    for (std::size_t k = 0; k < n.outputs.size() && k < out.size(); ++k) {
      if (!n.outputs[k].empty()) values[n.outputs[k]] = std::move(out[k]);
    }
  }
  return values;
}

TensorMap run_reference_images(const Graph& g, const std::string& input, const Tensor& images) {
  const std::size_t count =
      images.shape.empty() ? 1
                           : static_cast<std::size_t>(std::max<std::int64_t>(images.shape[0], 1));
  if (count == 1) return run_reference(g, {{input, images}});
  const std::size_t per = images.elements() / count;
  TensorMap out;
  for (std::size_t i = 0; i < count; ++i) {
    Tensor one = images;
    one.shape[0] = 1;
    if (is_float(images.dtype)) {
      one.f.assign(images.f.begin() + static_cast<std::ptrdiff_t>(i * per),
                   images.f.begin() + static_cast<std::ptrdiff_t>((i + 1) * per));
    } else {
      one.i.assign(images.i.begin() + static_cast<std::ptrdiff_t>(i * per),
                   images.i.begin() + static_cast<std::ptrdiff_t>((i + 1) * per));
    }
    TensorMap values = run_reference(g, {{input, one}});
    for (auto& [name, t] : values) {
      if (g.is_constant(name) && i > 0) continue;
      if (i == 0 || g.is_constant(name)) {
        if (!g.is_constant(name) && t.shape.empty()) t.shape = {1};
        out[name] = std::move(t);
        continue;
      }
      Tensor& acc = out.at(name);
      acc.f.insert(acc.f.end(), t.f.begin(), t.f.end());
      acc.i.insert(acc.i.end(), t.i.begin(), t.i.end());
      acc.shape[0] += t.shape.empty() ? 1 : t.shape[0];
    }
  }
  return out;
}

}  // namespace octasim::models::graph
