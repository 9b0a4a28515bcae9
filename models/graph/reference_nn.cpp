// The reference executor's float network operators on NCHW tensors: Conv, pools,
// BatchNormalization, LRN, Gemm, MatMul.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "models/graph/reference_ops.hpp"

namespace octasim::models::graph::ops {
namespace {

void expect_rank(const Node& n, const Tensor& t, std::size_t rank, const char* what) {
  if (t.shape.size() != rank) {
    throw GraphError(n.label() + ": " + what + " must have rank " + std::to_string(rank) + " (is " +
                     shape_string(t.shape) + "; only 1-D and 2-D spatial operators are supported)");
  }
}

void expect_float(const Node& n, const Tensor& t) {
  if (!is_float(t.dtype)) {
    throw GraphError(n.label() + ": expects float input, not " + dtype_name(t.dtype));
  }
}

std::int64_t out_size(std::int64_t in, std::int64_t pads, std::int64_t span, std::int64_t stride,
                      bool ceil_mode) {
  const std::int64_t room = in + pads - span;
  if (room < 0) return 0;
  return (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
}

}  // namespace

Window window(const Node& n, std::int64_t height, std::int64_t width,
              const std::vector<std::int64_t>& kernel) {
  Window w;
  const std::vector<std::int64_t> k = n.get_ints("kernel_shape", kernel);
  const std::vector<std::int64_t> s = n.get_ints("strides", {1, 1});
  const std::vector<std::int64_t> d = n.get_ints("dilations", {1, 1});
  if (k.size() != 2 || s.size() != 2 || d.size() != 2) {
    throw GraphError(n.label() + ": kernel_shape, strides and dilations must have 2 values");
  }
  w.kh = k[0], w.kw = k[1], w.sh = s[0], w.sw = s[1], w.dh = d[0], w.dw = d[1];
  const std::int64_t span_h = (w.kh - 1) * w.dh + 1, span_w = (w.kw - 1) * w.dw + 1;
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  const bool ceil_mode = n.get_int("ceil_mode", 0) != 0;
  if (auto_pad == "NOTSET") {
    const std::vector<std::int64_t> p = n.get_ints("pads", {0, 0, 0, 0});
    if (p.size() != 4) throw GraphError(n.label() + ": pads must have 4 values");
    w.pad_top = p[0], w.pad_left = p[1], w.pad_bottom = p[2], w.pad_right = p[3];
    w.out_h = out_size(height, w.pad_top + w.pad_bottom, span_h, w.sh, ceil_mode);
    w.out_w = out_size(width, w.pad_left + w.pad_right, span_w, w.sw, ceil_mode);
  } else if (auto_pad == "VALID") {
    w.out_h = out_size(height, 0, span_h, w.sh, false);
    w.out_w = out_size(width, 0, span_w, w.sw, false);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    w.out_h = (height + w.sh - 1) / w.sh;
    w.out_w = (width + w.sw - 1) / w.sw;
    const std::int64_t ph = std::max<std::int64_t>(0, (w.out_h - 1) * w.sh + span_h - height);
    const std::int64_t pw = std::max<std::int64_t>(0, (w.out_w - 1) * w.sw + span_w - width);
    const bool upper = auto_pad == "SAME_UPPER";
    w.pad_top = upper ? ph / 2 : ph - ph / 2;
    w.pad_bottom = ph - w.pad_top;
    w.pad_left = upper ? pw / 2 : pw - pw / 2;
    w.pad_right = pw - w.pad_left;
  } else {
    throw GraphError(n.label() + ": auto_pad '" + auto_pad + "' is not valid");
  }
  return w;
}

std::vector<Tensor> conv(const Node& n, const Inputs& in) {
  const Tensor& x = input(n, in, 0);
  const Tensor& wt = input(n, in, 1);
  expect_float(n, x);
  expect_rank(n, x, 4, "X");
  expect_rank(n, wt, 4, "W");
  const std::int64_t batch = x.shape[0], channels = x.shape[1], height = x.shape[2],
                     width = x.shape[3];
  const std::int64_t kernels = wt.shape[0], group = n.get_int("group", 1);
  if (group <= 0 || channels % group != 0 || kernels % group != 0 ||
      wt.shape[1] != channels / group) {
    throw GraphError(n.label() + ": W " + shape_string(wt.shape) + " does not fit X " +
                     shape_string(x.shape) + " in " + std::to_string(group) + " groups");
  }
  const Window w = window(n, height, width, {wt.shape[2], wt.shape[3]});
  const bool bias = has_input(in, 2);
  const std::int64_t cpg = channels / group, kpg = kernels / group;
  Tensor y;
  y.shape = {batch, kernels, w.out_h, w.out_w};
  y.f.assign(y.elements(), 0.0F);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t k = 0; k < kernels; ++k) {
      const std::int64_t g = k / kpg;
      for (std::int64_t oy = 0; oy < w.out_h; ++oy) {
        for (std::int64_t ox = 0; ox < w.out_w; ++ox) {
          double sum = bias ? double{in[2]->f[static_cast<std::size_t>(k)]} : 0.0;
          for (std::int64_t c = 0; c < cpg; ++c) {
            for (std::int64_t r = 0; r < w.kh; ++r) {
              const std::int64_t iy = oy * w.sh - w.pad_top + r * w.dh;
              if (iy < 0 || iy >= height) continue;
              for (std::int64_t s = 0; s < w.kw; ++s) {
                const std::int64_t ix = ox * w.sw - w.pad_left + s * w.dw;
                if (ix < 0 || ix >= width) continue;
                sum +=
                    double{x.f[static_cast<std::size_t>(
                        ((b * channels + g * cpg + c) * height + iy) * width + ix)]} *
                    double{wt.f[static_cast<std::size_t>(((k * cpg + c) * w.kh + r) * w.kw + s)]};
              }
            }
          }
          y.f[static_cast<std::size_t>(((b * kernels + k) * w.out_h + oy) * w.out_w + ox)] =
              static_cast<float>(sum);
        }
      }
    }
  }
  return {y};
}

namespace {

// A 1-D window's node as the 2-D one of height 1 (kernel 1 x k, pads [0, b, 0, e]).
Node as_2d(const Node& n) {
  Node m = n;
  for (const char* attr : {"kernel_shape", "strides", "dilations"}) {
    if (!n.has(attr)) continue;
    std::vector<std::int64_t> v = n.get_ints(attr, {});
    if (v.size() != 1) throw GraphError(n.label() + ": " + attr + " must have 1 value (1-D)");
    m.attributes[attr].ints = {1, v[0]};
  }
  if (n.has("pads")) {
    std::vector<std::int64_t> v = n.get_ints("pads", {});
    if (v.size() != 2) throw GraphError(n.label() + ": pads must have 2 values (1-D)");
    m.attributes["pads"].ints = {0, v[0], 0, v[1]};
  }
  return m;
}

Tensor pool(const Node& n, const Tensor& x, bool average);

// 1-D pooling (N x C x L) as 2-D pooling of N x C x 1 x L.
Tensor pool_1d(const Node& n, const Tensor& x, bool average) {
  Tensor x2 = x;
  x2.shape = {x.shape[0], x.shape[1], 1, x.shape[2]};
  Tensor y = pool(as_2d(n), x2, average);
  y.shape = {y.shape[0], y.shape[1], y.shape[3]};
  return y;
}

// Max or average pooling over the window; `average` divides by the count of positions inside
// the input, or of the whole (padded) window with count_include_pad.
Tensor pool(const Node& n, const Tensor& x, bool average) {
  if (average || is_float(x.dtype)) expect_float(n, x);
  if (x.shape.size() == 3) return pool_1d(n, x, average);
  expect_rank(n, x, 4, "X");
  if (!n.has("kernel_shape")) throw GraphError(n.label() + ": kernel_shape is required");
  const Window w = window(n, x.shape[2], x.shape[3], {});
  const bool include_pad = n.get_int("count_include_pad", 0) != 0;
  if (n.get_int("storage_order", 0) != 0) {
    throw GraphError(n.label() + ": storage_order 1 is not supported");
  }
  const std::int64_t planes = x.shape[0] * x.shape[1], height = x.shape[2], width = x.shape[3];
  Tensor y;
  y.dtype = x.dtype;
  y.shape = {x.shape[0], x.shape[1], w.out_h, w.out_w};
  (is_float(x.dtype) ? y.f.resize(y.elements()) : y.i.resize(y.elements()));
  for (std::int64_t p = 0; p < planes; ++p) {
    for (std::int64_t oy = 0; oy < w.out_h; ++oy) {
      for (std::int64_t ox = 0; ox < w.out_w; ++ox) {
        double acc = average ? 0.0 : -std::numeric_limits<double>::infinity();
        std::int64_t count = 0, padded = 0;
        for (std::int64_t r = 0; r < w.kh; ++r) {
          const std::int64_t iy = oy * w.sh - w.pad_top + r * w.dh;
          for (std::int64_t s = 0; s < w.kw; ++s) {
            const std::int64_t ix = ox * w.sw - w.pad_left + s * w.dw;
            // Positions in the explicit padding count with count_include_pad; positions beyond
            // it (ceil_mode's extra window) never do.
            if (iy < -w.pad_top || iy >= height + w.pad_bottom || ix < -w.pad_left ||
                ix >= width + w.pad_right) {
              continue;
            }
            ++padded;
            if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;
            const double v = x.at(static_cast<std::size_t>((p * height + iy) * width + ix));
            acc = average ? acc + v : std::max(acc, v);
            ++count;
          }
        }
        if (average)
          acc /= static_cast<double>(include_pad ? padded : std::max<std::int64_t>(count, 1));
        const auto at = static_cast<std::size_t>((p * w.out_h + oy) * w.out_w + ox);
        if (is_float(y.dtype)) {
          y.f[at] = static_cast<float>(acc);
        } else {
          y.i[at] = static_cast<std::int64_t>(acc);
        }
      }
    }
  }
  return y;
}

}  // namespace

std::vector<Tensor> max_pool(const Node& n, const Inputs& in) {
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) {
    throw GraphError(n.label() + ": the Indices output is not supported");
  }
  return {pool(n, input(n, in, 0), false)};
}

std::vector<Tensor> average_pool(const Node& n, const Inputs& in) {
  return {pool(n, input(n, in, 0), true)};
}

std::vector<Tensor> global_pool(const Node& n, const Inputs& in, bool max) {
  const Tensor& x = input(n, in, 0);
  expect_float(n, x);
  if (x.shape.size() < 3) throw GraphError(n.label() + ": X must be N x C x spatial");
  Tensor y;
  y.shape = {x.shape[0], x.shape[1]};
  std::size_t spatial = 1;
  for (std::size_t d = 2; d < x.shape.size(); ++d) {
    y.shape.push_back(1);
    spatial *= static_cast<std::size_t>(x.shape[d]);
  }
  const std::size_t planes = static_cast<std::size_t>(x.shape[0] * x.shape[1]);
  y.f.resize(planes);
  for (std::size_t p = 0; p < planes; ++p) {
    double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (std::size_t k = 0; k < spatial; ++k) {
      const double v = double{x.f[p * spatial + k]};
      acc = max ? std::max(acc, v) : acc + v;
    }
    y.f[p] = static_cast<float>(max ? acc : acc / static_cast<double>(spatial));
  }
  return {y};
}

std::vector<Tensor> batch_norm(const Node& n, const Inputs& in) {
  const Tensor& x = input(n, in, 0);
  expect_float(n, x);
  if (n.get_int("training_mode", 0) != 0 || (n.outputs.size() > 1 && !n.outputs[1].empty())) {
    throw GraphError(n.label() + ": only inference (training_mode 0, one output) is supported");
  }
  const Tensor& scale = input(n, in, 1);
  const Tensor& bias = input(n, in, 2);
  const Tensor& mean = input(n, in, 3);
  const Tensor& var = input(n, in, 4);
  const double eps = n.get_float("epsilon", 1e-5F);
  if (x.shape.size() < 2) throw GraphError(n.label() + ": X must be N x C x ...");
  const auto channels = static_cast<std::size_t>(x.shape[1]);
  std::size_t inner = 1;
  for (std::size_t d = 2; d < x.shape.size(); ++d) inner *= static_cast<std::size_t>(x.shape[d]);
  Tensor y = x;
  for (std::size_t k = 0; k < y.f.size(); ++k) {
    const std::size_t c = (k / inner) % channels;
    y.f[k] = static_cast<float>((double{x.f[k]} - double{mean.f[c]}) /
                                    std::sqrt(double{var.f[c]} + eps) * double{scale.f[c]} +
                                double{bias.f[c]});
  }
  return {y};
}

std::vector<Tensor> lrn(const Node& n, const Inputs& in) {
  const Tensor& x = input(n, in, 0);
  expect_float(n, x);
  expect_rank(n, x, 4, "X");
  const std::int64_t size = n.get_int("size", 0);
  if (size <= 0) throw GraphError(n.label() + ": size must be positive");
  const double alpha = n.get_float("alpha", 1e-4F), beta = n.get_float("beta", 0.75F),
               bias = n.get_float("bias", 1.0F);
  const std::int64_t channels = x.shape[1], plane = x.shape[2] * x.shape[3];
  const std::int64_t before = (size - 1) / 2, after = size - 1 - before;
  Tensor y = x;
  for (std::int64_t b = 0; b < x.shape[0]; ++b) {
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t p = 0; p < plane; ++p) {
        double sq = 0;
        for (std::int64_t j = std::max<std::int64_t>(0, c - before);
             j <= std::min(channels - 1, c + after); ++j) {
          const double v = double{x.f[static_cast<std::size_t>((b * channels + j) * plane + p)]};
          sq += v * v;
        }
        const auto k = static_cast<std::size_t>((b * channels + c) * plane + p);
        y.f[k] = static_cast<float>(double{x.f[k]} /
                                    std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
      }
    }
  }
  return {y};
}

std::vector<Tensor> gemm(const Node& n, const Inputs& in) {
  const Tensor& a = input(n, in, 0);
  const Tensor& b = input(n, in, 1);
  expect_float(n, a);
  expect_rank(n, a, 2, "A");
  expect_rank(n, b, 2, "B");
  const bool ta = n.get_int("transA", 0) != 0, tb = n.get_int("transB", 0) != 0;
  const double alpha = n.get_float("alpha", 1.0F), beta = n.get_float("beta", 1.0F);
  const std::int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  const std::int64_t kb = tb ? b.shape[1] : b.shape[0], nn = tb ? b.shape[0] : b.shape[1];
  if (k != kb) {
    throw GraphError(n.label() + ": A " + shape_string(a.shape) + " and B " +
                     shape_string(b.shape) + " do not multiply");
  }
  Tensor y;
  y.shape = {m, nn};
  y.f.resize(y.elements());
  const Tensor* c = has_input(in, 2) ? in[2] : nullptr;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < nn; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        sum += double{a.f[static_cast<std::size_t>(ta ? p * m + i : i * k + p)]} *
               double{b.f[static_cast<std::size_t>(tb ? j * k + p : p * nn + j)]};
      }
      double bias = 0;
      if (c != nullptr) {
        // C broadcasts to M x N (scalar, N, 1 x N, M x 1 or M x N).
        const std::vector<std::int64_t>& cs = c->shape;
        const std::int64_t rows = cs.size() == 2 ? cs[0] : 1;
        const std::int64_t cols = cs.empty() ? 1 : cs.back();
        bias = double{
            c->f[static_cast<std::size_t>((rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j))]};
      }
      y.f[static_cast<std::size_t>(i * nn + j)] = static_cast<float>(alpha * sum + beta * bias);
    }
  }
  return {y};
}

std::vector<Tensor> matmul(const Node& n, const Inputs& in) {
  const Tensor& a = input(n, in, 0);
  const Tensor& b = input(n, in, 1);
  expect_float(n, a);
  Tensor y;
  MatmulDims d;
  std::vector<std::pair<std::size_t, std::size_t>> jobs;  // (a, b) offsets per Y matrix
  y.shape = for_each_matrix(
      n, a, b, &d, [&](std::size_t ao, std::size_t bo, std::size_t) { jobs.emplace_back(ao, bo); });
  y.f.resize(y.elements());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const auto [ao, bo] = jobs[j];
    for (std::size_t r = 0; r < d.m; ++r) {
      for (std::size_t c = 0; c < d.n; ++c) {
        double sum = 0;
        for (std::size_t p = 0; p < d.k; ++p) {
          sum += double{a.f[ao + r * d.k + p]} * double{b.f[bo + p * d.n + c]};
        }
        y.f[(j * d.m + r) * d.n + c] = static_cast<float>(sum);
      }
    }
  }
  return {y};
}

}  // namespace octasim::models::graph::ops
