// The reference executor's quantized operators: exact integer sums with zero points, requantized
// in double and rounded half to even (ONNX's QuantizeLinear rounding).
#include <cmath>

#include "models/graph/reference_ops.hpp"

namespace octasim::models::graph::ops {
namespace {

void expect_int8(const Node& n, const Tensor& t, const char* what) {
  if (t.dtype != DType::kInt8 && t.dtype != DType::kUInt8) {
    throw GraphError(n.label() + ": " + what + " must be int8 or uint8, not " +
                     dtype_name(t.dtype));
  }
}

// A zero point (scalar or per-channel): element `k`, 0 when absent.
std::int64_t zero_point(const Inputs& in, std::size_t idx, std::size_t k) {
  if (!has_input(in, idx)) return 0;
  const Tensor& z = *in[idx];
  return z.i.size() == 1 ? z.i[0] : z.i[k];
}

double scale_at(const Tensor& s, std::size_t k) {
  return s.f.size() == 1 ? s.f[0] : s.f[k];
}

// sum over the window of (x - x_zp) * (w - w_zp[k]), NCHW / MCkk, padding contributing 0.
std::vector<std::int64_t> integer_conv(const Node& n, const Tensor& x, const Tensor& w,
                                       const Inputs& in, std::size_t xzp, std::size_t wzp,
                                       std::vector<std::int64_t>* shape) {
  expect_int8(n, x, "X");
  expect_int8(n, w, "W");
  if (x.shape.size() != 4 || w.shape.size() != 4) {
    throw GraphError(n.label() + ": only 2-D convolution (rank-4 X and W) is supported");
  }
  const std::int64_t batch = x.shape[0], channels = x.shape[1], height = x.shape[2],
                     width = x.shape[3], kernels = w.shape[0], group = n.get_int("group", 1);
  if (group <= 0 || channels % group != 0 || kernels % group != 0 ||
      w.shape[1] != channels / group) {
    throw GraphError(n.label() + ": W " + shape_string(w.shape) + " does not fit X " +
                     shape_string(x.shape));
  }
  const Window win = window(n, height, width, {w.shape[2], w.shape[3]});
  const std::int64_t cpg = channels / group, kpg = kernels / group;
  const std::int64_t xz = zero_point(in, xzp, 0);
  *shape = {batch, kernels, win.out_h, win.out_w};
  std::vector<std::int64_t> out(static_cast<std::size_t>(batch * kernels * win.out_h * win.out_w));
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t k = 0; k < kernels; ++k) {
      const std::int64_t wz = zero_point(in, wzp, static_cast<std::size_t>(k));
      for (std::int64_t oy = 0; oy < win.out_h; ++oy) {
        for (std::int64_t ox = 0; ox < win.out_w; ++ox) {
          std::int64_t sum = 0;
          for (std::int64_t c = 0; c < cpg; ++c) {
            for (std::int64_t r = 0; r < win.kh; ++r) {
              const std::int64_t iy = oy * win.sh - win.pad_top + r * win.dh;
              if (iy < 0 || iy >= height) continue;
              for (std::int64_t s = 0; s < win.kw; ++s) {
                const std::int64_t ix = ox * win.sw - win.pad_left + s * win.dw;
                if (ix < 0 || ix >= width) continue;
                const std::int64_t xv = x.i[static_cast<std::size_t>(
                    ((b * channels + (k / kpg) * cpg + c) * height + iy) * width + ix)];
                const std::int64_t wv =
                    w.i[static_cast<std::size_t>(((k * cpg + c) * win.kh + r) * win.kw + s)];
                sum += (xv - xz) * (wv - wz);
              }
            }
          }
          out[static_cast<std::size_t>(((b * kernels + k) * win.out_h + oy) * win.out_w + ox)] =
              sum;
        }
      }
    }
  }
  return out;
}

// sum_p (a[i,p] - a_zp[i]) * (b[p,j] - b_zp[j]) per matrix pair (numpy matmul batching; a_zp
// per row of A or per tensor, b_zp per column of B or per tensor).
std::vector<std::int64_t> integer_matmul(const Node& n, const Tensor& a, const Tensor& b,
                                         const Inputs& in, std::size_t azp, std::size_t bzp,
                                         std::vector<std::int64_t>* shape) {
  expect_int8(n, a, "A");
  expect_int8(n, b, "B");
  MatmulDims d;
  std::vector<std::int64_t> out;
  *shape = for_each_matrix(n, a, b, &d, [&](std::size_t ao, std::size_t bo, std::size_t yo) {
    out.resize(yo + d.m * d.n);
    for (std::size_t r = 0; r < d.m; ++r) {
      const std::int64_t az = zero_point(in, azp, r);
      for (std::size_t c = 0; c < d.n; ++c) {
        const std::int64_t bz = zero_point(in, bzp, c);
        std::int64_t sum = 0;
        for (std::size_t p = 0; p < d.k; ++p) {
          sum += (a.i[ao + r * d.k + p] - az) * (b.i[bo + p * d.n + c] - bz);
        }
        out[yo + r * d.n + c] = sum;
      }
    }
  });
  return out;
}

// The output type a zero point (input `idx`) gives, uint8 when absent.
DType quantized_type(const Inputs& in, std::size_t idx) {
  return has_input(in, idx) ? in[idx]->dtype : DType::kUInt8;
}

}  // namespace

std::vector<Tensor> conv_integer(const Node& n, const Inputs& in) {
  Tensor y;
  y.dtype = DType::kInt32;
  y.i = integer_conv(n, input(n, in, 0), input(n, in, 1), in, 2, 3, &y.shape);
  return {y};
}

std::vector<Tensor> qlinear_conv(const Node& n, const Inputs& in) {
  Tensor y;
  y.dtype = quantized_type(in, 7);
  const std::vector<std::int64_t> sums =
      integer_conv(n, input(n, in, 0), input(n, in, 3), in, 2, 5, &y.shape);
  const double xs = double{input(n, in, 1).f.at(0)}, ys = double{input(n, in, 6).f.at(0)};
  const Tensor& ws = input(n, in, 4);
  const std::int64_t yz = zero_point(in, 7, 0);
  const std::size_t plane = static_cast<std::size_t>(y.shape[2] * y.shape[3]);
  const auto kernels = static_cast<std::size_t>(y.shape[1]);
  y.i.resize(sums.size());
  for (std::size_t e = 0; e < sums.size(); ++e) {
    const std::size_t k = (e / plane) % kernels;
    const double acc = double(sums[e]) + (has_input(in, 8) ? double(in[8]->i[k]) : 0.0);
    y.i[e] = saturate(y.dtype, round_half_even(acc * xs * scale_at(ws, k) / ys) + double(yz));
  }
  return {y};
}

std::vector<Tensor> matmul_integer(const Node& n, const Inputs& in) {
  Tensor y;
  y.dtype = DType::kInt32;
  y.i = integer_matmul(n, input(n, in, 0), input(n, in, 1), in, 2, 3, &y.shape);
  return {y};
}

std::vector<Tensor> qlinear_matmul(const Node& n, const Inputs& in) {
  Tensor y;
  y.dtype = quantized_type(in, 7);
  const std::vector<std::int64_t> sums =
      integer_matmul(n, input(n, in, 0), input(n, in, 3), in, 2, 5, &y.shape);
  const Tensor& as = input(n, in, 1);
  const Tensor& bs = input(n, in, 4);
  const double ys = double{input(n, in, 6).f.at(0)};
  const std::int64_t yz = zero_point(in, 7, 0);
  const auto cols = static_cast<std::size_t>(y.shape.back());
  y.i.resize(sums.size());
  for (std::size_t e = 0; e < sums.size(); ++e) {
    const double scale = scale_at(as, 0) * scale_at(bs, e % cols) / ys;
    y.i[e] = saturate(y.dtype, round_half_even(double(sums[e]) * scale) + double(yz));
  }
  return {y};
}

namespace {

// The per-axis channel of flat element `e` of `shape` (axis may be negative), or 0 for a
// per-tensor scale.
std::size_t channel_of(const Node& n, const std::vector<std::int64_t>& shape, std::size_t e,
                       const Tensor& scale) {
  if (scale.f.size() <= 1) return 0;
  const auto rank = static_cast<std::int64_t>(shape.size());
  std::int64_t axis = n.get_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) throw GraphError(n.label() + ": axis out of range");
  std::size_t inner = 1;
  for (std::int64_t d = axis + 1; d < rank; ++d) inner *= static_cast<std::size_t>(shape[d]);
  return (e / inner) % static_cast<std::size_t>(shape[static_cast<std::size_t>(axis)]);
}

}  // namespace

std::vector<Tensor> quantize_linear(const Node& n, const Inputs& in) {
  const Tensor& x = input(n, in, 0);
  const Tensor& scale = input(n, in, 1);
  Tensor y;
  y.dtype = quantized_type(in, 2);
  y.shape = x.shape;
  y.i.resize(x.elements());
  for (std::size_t e = 0; e < y.i.size(); ++e) {
    const std::size_t c = channel_of(n, x.shape, e, scale);
    y.i[e] = saturate(y.dtype,
                      round_half_even(x.at(e) / double{scale.f[c]}) + double(zero_point(in, 2, c)));
  }
  return {y};
}

std::vector<Tensor> dequantize_linear(const Node& n, const Inputs& in) {
  const Tensor& x = input(n, in, 0);
  const Tensor& scale = input(n, in, 1);
  Tensor y;
  y.shape = x.shape;
  y.f.resize(x.elements());
  for (std::size_t e = 0; e < y.f.size(); ++e) {
    const std::size_t c = channel_of(n, x.shape, e, scale);
    y.f[e] = static_cast<float>((x.at(e) - double(zero_point(in, 2, c))) * double{scale.f[c]});
  }
  return {y};
}

}  // namespace octasim::models::graph::ops
