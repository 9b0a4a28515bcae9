// The reference executor's data-movement and shape operators (Shape, Gather, Squeeze,
// Unsqueeze, Slice, Expand, ConstantOfShape, Cast, Where, Pad, Transpose, Split, Resize,
// Upsample: nearest, linear and cubic) and reductions (ReduceMean, ReduceSum, ReduceMax), with
// ONNX's semantics at every opset where an attribute became an input (axes, pads, split, scales).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "models/graph/reference_ops.hpp"

namespace octasim::models::graph::ops {
namespace {

std::size_t count_of(const std::vector<std::int64_t>& shape) {
  std::size_t c = 1;
  for (const std::int64_t d : shape) c *= static_cast<std::size_t>(d);
  return c;
}

// A tensor of `shape` and `dtype` whose element k is src element map(k).
Tensor gather_elements(const Tensor& src, std::vector<std::int64_t> shape,
                       const std::vector<std::size_t>& map) {
  Tensor out;
  out.dtype = src.dtype;
  out.shape = std::move(shape);
  if (is_float(src.dtype)) {
    out.f.resize(map.size());
    for (std::size_t k = 0; k < map.size(); ++k) out.f[k] = src.f[map[k]];
  } else {
    out.i.resize(map.size());
    for (std::size_t k = 0; k < map.size(); ++k) out.i[k] = src.i[map[k]];
  }
  return out;
}

// Row-major strides of `shape`.
std::vector<std::size_t> strides_of(const std::vector<std::int64_t>& shape) {
  std::vector<std::size_t> s(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) {
    s[d - 1] = s[d] * static_cast<std::size_t>(shape[d]);
  }
  return s;
}

// Calls fn(flat, coord) for every coordinate of `shape` in C order.
template <typename Fn>
void for_each_coord(const std::vector<std::int64_t>& shape, Fn&& fn) {
  const std::size_t total = count_of(shape);
  std::vector<std::int64_t> coord(shape.size(), 0);
  for (std::size_t k = 0; k < total; ++k) {
    fn(k, coord);
    for (std::size_t d = coord.size(); d-- > 0;) {
      if (++coord[d] < shape[d]) break;
      coord[d] = 0;
    }
  }
}

std::int64_t normalize_axis(const Node& n, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw GraphError(n.label() + ": axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  return axis < 0 ? axis + r : axis;
}

std::vector<std::int64_t> int_values(const Node& n, const Tensor& t, const char* what) {
  if (is_float(t.dtype)) {
    throw GraphError(n.label() + ": " + what + " must be an integer tensor, not " +
                     dtype_name(t.dtype));
  }
  return t.i;
}

// The `axes` of Squeeze/Unsqueeze/Reduce*: an input from `input_opset` on, an attribute before.
// `present` says whether any were given.
std::vector<std::int64_t> axes_of(const Node& n, const Inputs& in, std::int64_t opset,
                                  std::int64_t input_opset, bool* present) {
  if (opset >= input_opset) {
    *present = has_input(in, 1);
    return *present ? int_values(n, *in[1], "axes") : std::vector<std::int64_t>{};
  }
  *present = n.has("axes");
  return n.get_ints("axes", {});
}

Tensor filled(DType t, std::vector<std::int64_t> shape, double v) {
  Tensor out;
  out.dtype = t;
  out.shape = std::move(shape);
  if (is_float(t)) {
    out.f.assign(out.elements(), static_cast<float>(v));
  } else {
    out.i.assign(out.elements(), static_cast<std::int64_t>(v));
  }
  return out;
}

}  // namespace

std::vector<Tensor> shape_op(const Node& n, const Inputs& in) {
  const Tensor& x = input(n, in, 0);
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  std::int64_t start = n.get_int("start", 0), end = n.get_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<std::int64_t>(start, 0, rank);
  end = std::clamp<std::int64_t>(end, 0, rank);
  std::vector<std::int64_t> dims;
  for (std::int64_t d = start; d < end; ++d) dims.push_back(x.shape[static_cast<std::size_t>(d)]);
  const auto len = static_cast<std::int64_t>(dims.size());
  return {Tensor::ints(DType::kInt64, {len}, std::move(dims))};
}

std::vector<Tensor> gather(const Node& n, const Inputs& in) {
  const Tensor& data = input(n, in, 0);
  const Tensor& idx = input(n, in, 1);
  if (data.shape.empty()) throw GraphError(n.label() + ": data must have rank >= 1");
  const std::int64_t axis = normalize_axis(n, n.get_int("axis", 0), data.shape.size());
  const auto ax = static_cast<std::size_t>(axis);
  const std::vector<std::int64_t> indices = int_values(n, idx, "indices");
  const std::int64_t len = data.shape[ax];
  std::vector<std::int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < data.shape.size(); ++d) {
    if (d < ax) outer *= static_cast<std::size_t>(data.shape[d]);
    if (d > ax) inner *= static_cast<std::size_t>(data.shape[d]);
  }
  std::vector<std::size_t> map;
  map.reserve(outer * indices.size() * inner);
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::int64_t j : indices) {
      if (j < -len || j >= len) {
        throw GraphError(n.label() + ": index " + std::to_string(j) + " is out of range [" +
                         std::to_string(-len) + ", " + std::to_string(len) + ")");
      }
      if (j < 0) j += len;
      for (std::size_t k = 0; k < inner; ++k) {
        map.push_back((o * static_cast<std::size_t>(len) + static_cast<std::size_t>(j)) * inner +
                      k);
      }
    }
  }
  return {gather_elements(data, std::move(shape), map)};
}

std::vector<Tensor> squeeze(const Node& n, const Inputs& in, std::int64_t opset) {
  Tensor out = input(n, in, 0);
  bool present = false;
  std::vector<std::int64_t> axes = axes_of(n, in, opset, 13, &present);
  std::vector<bool> drop(out.shape.size(), false);
  if (!present) {
    for (std::size_t d = 0; d < out.shape.size(); ++d) drop[d] = out.shape[d] == 1;
  }
  for (const std::int64_t a : axes) {
    const auto d = static_cast<std::size_t>(normalize_axis(n, a, out.shape.size()));
    if (out.shape[d] != 1) {
      throw GraphError(n.label() + ": cannot squeeze axis " + std::to_string(a) + " of size " +
                       std::to_string(out.shape[d]));
    }
    drop[d] = true;
  }
  std::vector<std::int64_t> shape;
  for (std::size_t d = 0; d < out.shape.size(); ++d) {
    if (!drop[d]) shape.push_back(out.shape[d]);
  }
  out.shape = std::move(shape);
  return {std::move(out)};
}

std::vector<Tensor> unsqueeze(const Node& n, const Inputs& in, std::int64_t opset) {
  Tensor out = input(n, in, 0);
  bool present = false;
  const std::vector<std::int64_t> axes = axes_of(n, in, opset, 13, &present);
  if (!present) throw GraphError(n.label() + ": axes are required");
  const std::size_t rank = out.shape.size() + axes.size();
  std::vector<bool> inserted(rank, false);
  for (const std::int64_t a : axes) {
    const auto d = static_cast<std::size_t>(normalize_axis(n, a, rank));
    if (inserted[d]) throw GraphError(n.label() + ": axis " + std::to_string(a) + " repeated");
    inserted[d] = true;
  }
  std::vector<std::int64_t> shape;
  std::size_t src = 0;
  for (std::size_t d = 0; d < rank; ++d) shape.push_back(inserted[d] ? 1 : out.shape[src++]);
  out.shape = std::move(shape);
  return {std::move(out)};
}

std::vector<Tensor> slice(const Node& n, const Inputs& in, std::int64_t opset) {
  const Tensor& data = input(n, in, 0);
  const std::size_t rank = data.shape.size();
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (opset >= 10) {
    starts = int_values(n, input(n, in, 1), "starts");
    ends = int_values(n, input(n, in, 2), "ends");
    if (has_input(in, 3)) axes = int_values(n, *in[3], "axes");
    if (has_input(in, 4)) steps = int_values(n, *in[4], "steps");
  } else {
    starts = n.get_ints("starts", {});
    ends = n.get_ints("ends", {});
    axes = n.get_ints("axes", {});
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    throw GraphError(n.label() + ": starts, ends, axes and steps differ in length");
  }
  std::vector<std::int64_t> first(rank, 0), step(rank, 1), shape = data.shape;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const auto d = static_cast<std::size_t>(normalize_axis(n, axes[k], rank));
    const std::int64_t dim = data.shape[d];
    const std::int64_t s = steps[k];
    if (s == 0) throw GraphError(n.label() + ": step 0");
    std::int64_t b = starts[k], e = ends[k];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    if (s > 0) {
      b = std::clamp<std::int64_t>(b, 0, dim);
      e = std::clamp<std::int64_t>(e, 0, dim);
      shape[d] = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = std::clamp<std::int64_t>(b, 0, dim - 1);
      e = std::clamp<std::int64_t>(e, -1, dim - 1);
      shape[d] = b > e ? (b - e - s - 1) / -s : 0;
    }
    first[d] = b;
    step[d] = s;
  }
  const std::vector<std::size_t> stride = strides_of(data.shape);
  std::vector<std::size_t> map(count_of(shape));
  for_each_coord(shape, [&](std::size_t k, const std::vector<std::int64_t>& c) {
    std::size_t at = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      at += static_cast<std::size_t>(first[d] + c[d] * step[d]) * stride[d];
    }
    map[k] = at;
  });
  return {gather_elements(data, std::move(shape), map)};
}

std::vector<Tensor> expand(const Node& n, const Inputs& in) {
  const Tensor& x = input(n, in, 0);
  const std::vector<std::int64_t> target = int_values(n, input(n, in, 1), "shape");
  const std::vector<std::int64_t> shape = broadcast_shape(n, x.shape, target);
  std::vector<std::size_t> map(count_of(shape));
  for_each_coord(shape, [&](std::size_t k, const std::vector<std::int64_t>& c) {
    map[k] = broadcast_index(x.shape, c);
  });
  return {gather_elements(x, shape, map)};
}

std::vector<Tensor> constant_of_shape(const Node& n, const Inputs& in) {
  const std::vector<std::int64_t> shape = int_values(n, input(n, in, 0), "shape");
  for (const std::int64_t d : shape) {
    if (d < 0) throw GraphError(n.label() + ": negative dimension " + std::to_string(d));
  }
  if (!n.has("value")) return {filled(DType::kFloat32, shape, 0.0)};
  const auto it = n.attributes.find("value");
  if (it->second.kind != Attribute::Kind::kTensor || it->second.t.elements() != 1) {
    throw GraphError(n.label() + ": 'value' must be a one-element tensor");
  }
  const Tensor& v = it->second.t;
  return {filled(v.dtype, shape, v.at(0))};
}

std::vector<Tensor> cast(const Node& n, const Inputs& in, DType to) {
  const Tensor& x = input(n, in, 0);
  Tensor out;
  out.dtype = to;
  out.shape = x.shape;
  const std::size_t count = x.elements();
  if (is_float(to)) {
    out.f.resize(count);
    for (std::size_t k = 0; k < count; ++k) out.f[k] = static_cast<float>(x.at(k));
    return {std::move(out)};
  }
  out.i.resize(count);
  for (std::size_t k = 0; k < count; ++k) {
    const double v = x.at(k);
    if (to == DType::kBool) {
      out.i[k] = v != 0.0 ? 1 : 0;
    } else if (!std::isfinite(v)) {
      throw GraphError(n.label() + ": cannot cast " + std::to_string(v) + " to " + dtype_name(to));
    } else {
      out.i[k] = static_cast<std::int64_t>(std::trunc(v));
      if (to == DType::kInt8 || to == DType::kUInt8 || to == DType::kInt32) {
        out.i[k] = saturate(to, static_cast<double>(out.i[k]));
      }
    }
  }
  return {std::move(out)};
}

std::vector<Tensor> where(const Node& n, const Inputs& in) {
  const Tensor& cond = input(n, in, 0);
  const Tensor& a = input(n, in, 1);
  const Tensor& b = input(n, in, 2);
  if (a.dtype != b.dtype) throw GraphError(n.label() + ": X and Y differ in type");
  const std::vector<std::int64_t> shape =
      broadcast_shape(n, broadcast_shape(n, cond.shape, a.shape), b.shape);
  Tensor out;
  out.dtype = a.dtype;
  out.shape = shape;
  (is_float(a.dtype) ? out.f.resize(count_of(shape)) : out.i.resize(count_of(shape)));
  for_each_coord(shape, [&](std::size_t k, const std::vector<std::int64_t>& c) {
    const bool pick_a = cond.at(broadcast_index(cond.shape, c)) != 0.0;
    const Tensor& src = pick_a ? a : b;
    const std::size_t at = broadcast_index(src.shape, c);
    if (is_float(out.dtype)) {
      out.f[k] = src.f[at];
    } else {
      out.i[k] = src.i[at];
    }
  });
  return {std::move(out)};
}

std::vector<Tensor> pad(const Node& n, const Inputs& in, std::int64_t opset) {
  const Tensor& x = input(n, in, 0);
  const std::size_t rank = x.shape.size();
  std::vector<std::int64_t> pads;
  double value = 0.0;
  if (opset >= 11) {
    pads = int_values(n, input(n, in, 1), "pads");
    if (has_input(in, 2)) value = in[2]->at(0);
    if (has_input(in, 3)) {
      const std::vector<std::int64_t> axes = int_values(n, *in[3], "axes");
      std::vector<std::int64_t> full(2 * rank, 0);
      if (pads.size() != 2 * axes.size()) {
        throw GraphError(n.label() + ": pads must have 2 values per axis");
      }
      for (std::size_t k = 0; k < axes.size(); ++k) {
        const auto d = static_cast<std::size_t>(normalize_axis(n, axes[k], rank));
        full[d] = pads[k];
        full[d + rank] = pads[k + axes.size()];
      }
      pads = std::move(full);
    }
  } else {
    pads = n.get_ints(opset >= 2 ? "pads" : "paddings", {});
    value = n.get_float("value", 0.0F);
  }
  if (pads.size() != 2 * rank) {
    throw GraphError(n.label() + ": pads must have " + std::to_string(2 * rank) + " values, has " +
                     std::to_string(pads.size()));
  }
  const std::string mode = n.get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    throw GraphError(n.label() + ": mode '" + mode +
                     "' is not supported (constant, reflect, edge)");
  }
  std::vector<std::int64_t> shape(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    shape[d] = x.shape[d] + pads[d] + pads[d + rank];
    if (shape[d] < 0) throw GraphError(n.label() + ": pads remove more than the input holds");
  }
  const std::vector<std::size_t> stride = strides_of(x.shape);
  Tensor out = filled(x.dtype, shape, value);
  for_each_coord(shape, [&](std::size_t k, const std::vector<std::int64_t>& c) {
    std::size_t at = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      std::int64_t s = c[d] - pads[d];
      const std::int64_t dim = x.shape[d];
      if (s < 0 || s >= dim) {
        if (mode == "constant" || dim == 0) return;
        if (mode == "edge") {
          s = std::clamp<std::int64_t>(s, 0, dim - 1);
        } else {  // reflect (no edge repeat)
          if (dim == 1) {
            s = 0;
          } else {
            const std::int64_t period = 2 * (dim - 1);
            s = ((s % period) + period) % period;
            if (s >= dim) s = period - s;
          }
        }
      }
      at += static_cast<std::size_t>(s) * stride[d];
    }
    if (is_float(out.dtype)) {
      out.f[k] = x.f[at];
    } else {
      out.i[k] = x.i[at];
    }
  });
  return {std::move(out)};
}

std::vector<Tensor> transpose(const Node& n, const Inputs& in) {
  const Tensor& x = input(n, in, 0);
  const std::size_t rank = x.shape.size();
  std::vector<std::int64_t> perm(rank);
  for (std::size_t d = 0; d < rank; ++d) perm[d] = static_cast<std::int64_t>(rank - 1 - d);
  perm = n.get_ints("perm", perm);
  std::vector<std::int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t d = 0; d < sorted.size(); ++d) {
    if (sorted.size() != rank || sorted[d] != static_cast<std::int64_t>(d)) {
      throw GraphError(n.label() + ": perm is not a permutation of the " + std::to_string(rank) +
                       " axes");
    }
  }
  std::vector<std::int64_t> shape(rank);
  for (std::size_t d = 0; d < rank; ++d) shape[d] = x.shape[static_cast<std::size_t>(perm[d])];
  const std::vector<std::size_t> stride = strides_of(x.shape);
  std::vector<std::size_t> map(count_of(shape));
  for_each_coord(shape, [&](std::size_t k, const std::vector<std::int64_t>& c) {
    std::size_t at = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      at += static_cast<std::size_t>(c[d]) * stride[static_cast<std::size_t>(perm[d])];
    }
    map[k] = at;
  });
  return {gather_elements(x, std::move(shape), map)};
}

std::vector<Tensor> depth_to_space(const Node& n, const Inputs& in) {
  const Tensor& x = input(n, in, 0);
  const std::int64_t b = n.get_int("blocksize", 0);
  const std::string mode = n.get_string("mode", "DCR");
  if (x.shape.size() != 4 || b < 1 || x.shape[1] % (b * b) != 0 ||
      (mode != "DCR" && mode != "CRD")) {
    throw GraphError(n.label() +
                     ": DepthToSpace needs N x C x H x W, blocksize b >= 1 dividing C " +
                     "by b^2 and mode DCR or CRD");
  }
  const std::int64_t N = x.shape[0], C = x.shape[1] / (b * b), H = x.shape[2], W = x.shape[3];
  std::vector<std::int64_t> shape{N, C, H * b, W * b};
  std::vector<std::size_t> map(count_of(shape));
  // ONNX: DCR reshapes to N x b x b x C x H x W, CRD to N x C x b x b x H x W; output
  // (n, c, h b + by, w b + bx) is input channel (by b + bx) C + c (DCR) or c b^2 + by b + bx.
  for_each_coord(shape, [&](std::size_t k, const std::vector<std::int64_t>& o) {
    const std::int64_t by = o[2] % b, bx = o[3] % b;
    const std::int64_t ch = mode == "DCR" ? (by * b + bx) * C + o[1] : o[1] * b * b + by * b + bx;
    map[k] = static_cast<std::size_t>(((o[0] * C * b * b + ch) * H + o[2] / b) * W + o[3] / b);
  });
  return {gather_elements(x, std::move(shape), map)};
}

std::vector<Tensor> space_to_depth(const Node& n, const Inputs& in) {
  const Tensor& x = input(n, in, 0);
  const std::int64_t b = n.get_int("blocksize", 0);
  if (x.shape.size() != 4 || b < 1 || x.shape[2] % b != 0 || x.shape[3] % b != 0) {
    throw GraphError(n.label() + ": SpaceToDepth needs N x C x H x W with H and W multiples of " +
                     "blocksize b >= 1");
  }
  const std::int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  std::vector<std::int64_t> shape{N, C * b * b, H / b, W / b};
  std::vector<std::size_t> map(count_of(shape));
  // ONNX: output channel (by b + bx) C + c at (h, w) is input (c, h b + by, w b + bx).
  for_each_coord(shape, [&](std::size_t k, const std::vector<std::int64_t>& o) {
    const std::int64_t g = o[1] / C, c = o[1] % C;
    map[k] =
        static_cast<std::size_t>(((o[0] * C + c) * H + o[2] * b + g / b) * W + o[3] * b + g % b);
  });
  return {gather_elements(x, std::move(shape), map)};
}

std::vector<Tensor> split(const Node& n, const Inputs& in, std::int64_t opset) {
  const Tensor& x = input(n, in, 0);
  if (x.shape.empty()) throw GraphError(n.label() + ": cannot split a scalar");
  const auto axis =
      static_cast<std::size_t>(normalize_axis(n, n.get_int("axis", 0), x.shape.size()));
  std::vector<std::int64_t> sizes;
  if (opset >= 13) {
    if (has_input(in, 1)) sizes = int_values(n, *in[1], "split");
  } else {
    sizes = n.get_ints("split", {});
  }
  const std::int64_t dim = x.shape[axis];
  if (sizes.empty()) {
    const std::size_t parts = n.outputs.size();
    const auto want =
        static_cast<std::size_t>(n.get_int("num_outputs", static_cast<std::int64_t>(parts)));
    if (want == 0) throw GraphError(n.label() + ": no outputs");
    const std::int64_t each =
        (dim + static_cast<std::int64_t>(want) - 1) / static_cast<std::int64_t>(want);
    for (std::int64_t left = dim; left > 0; left -= each) sizes.push_back(std::min(each, left));
    if (sizes.size() != want) {
      throw GraphError(n.label() + ": " + std::to_string(dim) + " elements do not split into " +
                       std::to_string(want) + " parts");
    }
  }
  if (std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0}) != dim) {
    throw GraphError(n.label() + ": split sizes do not add up to " + std::to_string(dim));
  }
  std::vector<Tensor> outs;
  std::int64_t start = 0;
  for (const std::int64_t len : sizes) {
    std::vector<std::int64_t> shape = x.shape;
    shape[axis] = len;
    const std::vector<std::size_t> stride = strides_of(x.shape);
    std::vector<std::size_t> map(count_of(shape));
    for_each_coord(shape, [&](std::size_t k, const std::vector<std::int64_t>& c) {
      std::size_t at = 0;
      for (std::size_t d = 0; d < shape.size(); ++d) {
        at += static_cast<std::size_t>(c[d] + (d == axis ? start : 0)) * stride[d];
      }
      map[k] = at;
    });
    outs.push_back(gather_elements(x, std::move(shape), map));
    start += len;
  }
  return outs;
}

namespace {

// One axis of a Resize: input and output lengths, the scale (output / input), the resized length
// the coordinate formulas divide by and, for tf_crop_and_resize, the region of interest.
//
// ONNX's reference (and so its node tests' expected outputs) takes the resized length as
// scale x input length, not rounded: scales 0.6 of a width 4 give 2 outputs, but align_corners
// maps them as if there were 2.4 (test_resize_downsample_scales_linear_align_corners' 3.142857).
// With sizes it is the size itself.
struct ResizeAxis {
  std::int64_t len_in = 1, len_out = 1;
  double scale = 1, resized = 1;
  double roi_start = 0, roi_end = 1;
};

// The input coordinate of output index `o` (ONNX's coordinate_transformation_mode); *outside is
// set where tf_crop_and_resize samples outside the input (the output is extrapolation_value).
// pytorch_half_pixel maps a single output to -0.5 as ONNX's reference does (Operators.md says 0:
// the same for nearest and linear, which read the edge either way; cubic differs).
double resize_source(const Node& n, const std::string& coord, const ResizeAxis& a, std::int64_t o,
                     bool* outside) {
  *outside = false;
  const double x = static_cast<double>(o);
  const double last = static_cast<double>(a.len_in - 1);
  if (coord == "half_pixel") return (x + 0.5) / a.scale - 0.5;
  if (coord == "pytorch_half_pixel") return a.resized == 1 ? -0.5 : (x + 0.5) / a.scale - 0.5;
  if (coord == "asymmetric") return x / a.scale;
  if (coord == "tf_half_pixel_for_nn") return (x + 0.5) / a.scale;
  if (coord == "align_corners") return a.resized == 1 ? 0.0 : x * last / (a.resized - 1);
  if (coord == "tf_crop_and_resize") {
    const double span = a.roi_end - a.roi_start;
    double s = a.resized == 1 ? span * last / 2 : x * span * last / (a.resized - 1);
    s += a.roi_start * last;
    *outside = s < 0 || s > last;
    return s;
  }
  throw GraphError(n.label() + ": coordinate_transformation_mode '" + coord + "' is not supported");
}

// Linear (2 taps) or cubic (4 taps) weights of one output along one axis, as ONNX defines them:
// the taps are the input indices nearest the source coordinate s, preferring the lower ones, so
// that the fraction r of s past the last tap left of it is in (0, 1] (an integer s has r = 1:
// its own index is the second tap of two, the third of four). Indices past the edges read the
// edge value (the input edge-padded by half the taps); exclude_outside gives them weight 0 and
// renormalises the rest.
struct ResizeTaps {
  bool outside = false;  // tf_crop_and_resize outside the input: extrapolation_value
  std::int64_t first = 0;
  std::array<double, 4> weight{};
};

ResizeTaps resize_taps(const Node& n, const std::string& coord, const ResizeAxis& a, std::int64_t o,
                       bool cubic, double cubic_a, bool exclude_outside) {
  ResizeTaps t;
  const double s = resize_source(n, coord, a, o, &t.outside);
  if (t.outside) return t;
  const std::int64_t taps = cubic ? 4 : 2, pad = taps / 2;
  const double below = std::floor(s);
  const double r = s == below ? 1.0 : s - below;  // in (0, 1]
  // The tap left of s (s itself excluded), kept well inside int64 for far-off coordinates.
  const double left = std::clamp(s == below ? below - 1 : below, -2.0 * static_cast<double>(pad),
                                 static_cast<double>(a.len_in + taps));
  // The window of taps stays inside the padded input (ONNX's nearest taps among its indices).
  t.first = std::clamp(static_cast<std::int64_t>(left) - (pad - 1), -pad,
                       a.len_in - 1 + pad - (taps - 1));
  if (cubic) {
    const double A = cubic_a;
    // Keys' kernel at distance d: near for d <= 1, far for 1 < d < 2.
    const auto near = [A](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };
    const auto far = [A](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };
    t.weight = {far(r + 1), near(r), near(1 - r), far(2 - r)};
  } else {
    t.weight = {1 - r, r, 0, 0};
  }
  if (exclude_outside) {
    double sum = 0;
    for (std::int64_t k = 0; k < taps; ++k) {
      const std::int64_t at = t.first + k;
      if (at < 0 || at >= a.len_in) t.weight[static_cast<std::size_t>(k)] = 0;
      sum += t.weight[static_cast<std::size_t>(k)];
    }
    for (double& w : t.weight) w /= sum;
  }
  return t;
}

// Linear or cubic resampling, one axis at a time from the last (ONNX's reference interpolates
// the innermost axis first), in double: N-linear / N-cubic over every axis (an axis whose length
// and coordinates do not change has weight 1 on its own index).
Tensor resize_interpolate(const Node& n, const Tensor& x, const std::vector<ResizeAxis>& axes,
                          const std::string& coord, bool cubic) {
  const double cubic_a = n.get_float("cubic_coeff_a", -0.75F);
  const bool exclude_outside = n.get_int("exclude_outside", 0) != 0;
  const double extrapolation = n.get_float("extrapolation_value", 0.0F);
  const std::int64_t taps = cubic ? 4 : 2;
  std::vector<double> cur(x.f.begin(), x.f.end());
  std::vector<std::int64_t> shape = x.shape;
  for (std::size_t d = axes.size(); d-- > 0;) {
    const ResizeAxis& a = axes[d];
    std::size_t outer = 1, inner = 1;
    for (std::size_t e = 0; e < d; ++e) outer *= static_cast<std::size_t>(shape[e]);
    for (std::size_t e = d + 1; e < shape.size(); ++e) inner *= static_cast<std::size_t>(shape[e]);
    const auto len_in = static_cast<std::size_t>(a.len_in);
    const auto len_out = static_cast<std::size_t>(a.len_out);
    std::vector<double> next(outer * len_out * inner);
    for (std::size_t o = 0; o < len_out; ++o) {
      const ResizeTaps t =
          resize_taps(n, coord, a, static_cast<std::int64_t>(o), cubic, cubic_a, exclude_outside);
      for (std::size_t p = 0; p < outer; ++p) {
        double* dst = &next[(p * len_out + o) * inner];
        if (t.outside) {
          std::fill(dst, dst + inner, extrapolation);
          continue;
        }
        std::fill(dst, dst + inner, 0.0);
        for (std::int64_t k = 0; k < taps; ++k) {
          const auto at =
              static_cast<std::size_t>(std::clamp<std::int64_t>(t.first + k, 0, a.len_in - 1));
          const double w = t.weight[static_cast<std::size_t>(k)];
          const double* src = &cur[(p * len_in + at) * inner];
          for (std::size_t q = 0; q < inner; ++q) dst[q] += w * src[q];
        }
      }
    }
    cur = std::move(next);
    shape[d] = a.len_out;
  }
  Tensor out;
  out.dtype = x.dtype;
  out.shape = std::move(shape);
  out.f.assign(cur.size(), 0.0F);
  for (std::size_t k = 0; k < cur.size(); ++k) out.f[k] = static_cast<float>(cur[k]);
  return out;
}

}  // namespace

std::vector<Tensor> resize(const Node& n, const Inputs& in, std::int64_t opset) {
  const Tensor& x = input(n, in, 0);
  const std::size_t rank = x.shape.size();
  std::vector<double> scales;
  std::vector<std::int64_t> sizes;
  std::vector<double> roi;
  const std::string mode = n.get_string("mode", "nearest");
  std::string coord = "asymmetric";
  std::string nearest = "round_prefer_floor";
  if (n.op_type == "Upsample") {
    if (opset >= 9) {
      const Tensor& s = input(n, in, 1);
      for (std::size_t k = 0; k < s.elements(); ++k) scales.push_back(s.at(k));
    } else {
      for (const float v :
           n.attributes.count("scales") ? n.attributes.at("scales").floats : std::vector<float>{}) {
        scales.push_back(v);
      }
    }
    nearest = "floor";  // Upsample's nearest: floor(y / scale)
    if (mode != "nearest" && mode != "linear") {
      throw GraphError(n.label() + ": Upsample mode '" + mode + "' is not nearest or linear");
    }
  } else {
    coord =
        n.get_string("coordinate_transformation_mode", opset >= 11 ? "half_pixel" : "asymmetric");
    nearest = n.get_string("nearest_mode", "round_prefer_floor");
    const std::size_t scales_at = opset >= 11 ? 2 : 1;
    if (has_input(in, scales_at)) {
      const Tensor& s = *in[scales_at];
      for (std::size_t k = 0; k < s.elements(); ++k) scales.push_back(s.at(k));
    }
    if (opset >= 11 && has_input(in, 3)) sizes = int_values(n, *in[3], "sizes");
    if (opset >= 11 && has_input(in, 1)) {
      for (std::size_t k = 0; k < in[1]->elements(); ++k) roi.push_back(in[1]->at(k));
    }
    if (n.has("axes") || n.get_int("antialias", 0) != 0 ||
        n.get_string("keep_aspect_ratio_policy", "stretch") != "stretch") {
      throw GraphError(n.label() +
                       ": axes, antialias and keep_aspect_ratio_policy are not supported");
    }
    if (mode != "nearest" && mode != "linear" && (mode != "cubic" || opset < 11)) {
      throw GraphError(n.label() + ": mode '" + mode + "' is not nearest, linear or cubic (" +
                       "from opset 11) at opset " + std::to_string(opset));
    }
  }
  const bool crop = coord == "tf_crop_and_resize";
  if (crop && mode == "nearest") {
    throw GraphError(n.label() + ": tf_crop_and_resize is supported in modes linear and cubic");
  }
  if (crop && roi.size() != 2 * rank) {
    throw GraphError(n.label() + ": tf_crop_and_resize needs roi, a start and an end per axis (" +
                     std::to_string(2 * rank) + " values)");
  }
  std::vector<ResizeAxis> axes(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    axes[d].len_in = x.shape[d];
    if (crop) {
      axes[d].roi_start = roi[d];
      axes[d].roi_end = roi[rank + d];
    }
  }
  if (!sizes.empty()) {
    if (sizes.size() != rank) throw GraphError(n.label() + ": sizes must have one value per axis");
    for (std::size_t d = 0; d < rank; ++d) {
      if (sizes[d] < 0) throw GraphError(n.label() + ": sizes must not be negative");
      axes[d].len_out = sizes[d];
      axes[d].resized = static_cast<double>(sizes[d]);
      axes[d].scale = static_cast<double>(sizes[d]) / static_cast<double>(x.shape[d]);
    }
  } else {
    if (scales.size() != rank) {
      throw GraphError(n.label() + ": scales must have one value per axis (" +
                       std::to_string(rank) + ")");
    }
    for (std::size_t d = 0; d < rank; ++d) {
      if (!(scales[d] > 0)) throw GraphError(n.label() + ": scales must be positive");
      ResizeAxis& a = axes[d];
      a.scale = scales[d];
      // tf_crop_and_resize scales the region of interest: floor(length x (end - start) x scale).
      a.resized =
          static_cast<double>(x.shape[d]) * (crop ? a.roi_end - a.roi_start : 1.0) * scales[d];
      a.len_out = static_cast<std::int64_t>(std::floor(a.resized));
    }
  }
  std::vector<std::int64_t> shape(rank);
  for (std::size_t d = 0; d < rank; ++d) shape[d] = axes[d].len_out;
  if (mode != "nearest") {
    if (!is_float(x.dtype)) {
      throw GraphError(n.label() + ": mode '" + mode + "' resamples float tensors only, not " +
                       dtype_name(x.dtype));
    }
    return {resize_interpolate(n, x, axes, coord, mode == "cubic")};
  }
  const auto source = [&](std::size_t d, std::int64_t o) {
    bool outside = false;
    const double s = resize_source(n, coord, axes[d], o, &outside);
    double r = 0;
    if (nearest == "floor") {
      r = std::floor(s);
    } else if (nearest == "ceil") {
      r = std::ceil(s);
    } else if (nearest == "round_prefer_ceil") {
      r = std::floor(s + 0.5);
    } else if (nearest == "round_prefer_floor") {
      r = std::ceil(s - 0.5);
    } else {
      throw GraphError(n.label() + ": nearest_mode '" + nearest + "' is not supported");
    }
    r = std::clamp(r, 0.0, static_cast<double>(x.shape[d] - 1));
    return static_cast<std::int64_t>(r);
  };
  const std::vector<std::size_t> stride = strides_of(x.shape);
  std::vector<std::size_t> map(count_of(shape));
  for_each_coord(shape, [&](std::size_t k, const std::vector<std::int64_t>& c) {
    std::size_t at = 0;
    for (std::size_t d = 0; d < rank; ++d)
      at += static_cast<std::size_t>(source(d, c[d])) * stride[d];
    map[k] = at;
  });
  return {gather_elements(x, std::move(shape), map)};
}

std::vector<Tensor> reduce(const Node& n, const Inputs& in, std::int64_t opset, Reduction kind) {
  const Tensor& x = input(n, in, 0);
  const std::size_t rank = x.shape.size();
  // ReduceSum took axes as an input at opset 13, the others at 18.
  const std::int64_t input_opset = kind == Reduction::kSum ? 13 : 18;
  bool present = false;
  const std::vector<std::int64_t> axes = axes_of(n, in, opset, input_opset, &present);
  std::vector<bool> reduced(rank, false);
  if (axes.empty()) {
    const bool noop = n.get_int("noop_with_empty_axes", 0) != 0;
    if (noop) return {x};
    std::fill(reduced.begin(), reduced.end(), true);
  }
  for (const std::int64_t a : axes)
    reduced[static_cast<std::size_t>(normalize_axis(n, a, rank))] = true;
  const bool keep = n.get_int("keepdims", 1) != 0;
  std::vector<std::int64_t> kept_shape(rank), shape;
  for (std::size_t d = 0; d < rank; ++d) {
    kept_shape[d] = reduced[d] ? 1 : x.shape[d];
    if (!reduced[d] || keep) shape.push_back(kept_shape[d]);
  }
  const std::size_t out_count = count_of(kept_shape);
  std::vector<double> acc(out_count,
                          kind == Reduction::kMax ? -std::numeric_limits<double>::infinity() : 0.0);
  const std::vector<std::size_t> out_stride = strides_of(kept_shape);
  std::size_t per_output = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    if (reduced[d]) per_output *= static_cast<std::size_t>(x.shape[d]);
  }
  for_each_coord(x.shape, [&](std::size_t k, const std::vector<std::int64_t>& c) {
    std::size_t at = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      at += reduced[d] ? 0 : static_cast<std::size_t>(c[d]) * out_stride[d];
    }
    const double v = x.at(k);
    acc[at] = kind == Reduction::kMax ? std::max(acc[at], v) : acc[at] + v;
  });
  Tensor out;
  out.dtype = x.dtype;
  out.shape = std::move(shape);
  const bool mean = kind == Reduction::kMean;
  if (is_float(x.dtype)) {
    out.f.resize(out_count);
    for (std::size_t k = 0; k < out_count; ++k) {
      out.f[k] = static_cast<float>(mean ? acc[k] / static_cast<double>(per_output) : acc[k]);
    }
  } else {
    out.i.resize(out_count);
    for (std::size_t k = 0; k < out_count; ++k) {
      out.i[k] = static_cast<std::int64_t>(
          mean ? std::trunc(acc[k] / static_cast<double>(per_output)) : acc[k]);
    }
  }
  return {std::move(out)};
}

}  // namespace octasim::models::graph::ops
