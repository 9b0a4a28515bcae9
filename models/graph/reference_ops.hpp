// The reference executor's operators (reference.cpp dispatches to them): element-wise and shape
// operators in reference.cpp, convolution, pooling, normalisation and matrix products in
// reference_nn.cpp, the quantized operators in reference_quant.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/graph/graph.hpp"

namespace octasim::models::graph::ops {

using Inputs = std::vector<const Tensor*>;

// The input `k`, or a GraphError naming the node when it is absent.
const Tensor& input(const Node& n, const Inputs& in, std::size_t k);
// Whether optional input `k` is given.
bool has_input(const Inputs& in, std::size_t k);
// Round half to even (ONNX's rounding for quantization).
double round_half_even(double v);
// Saturate to the range of an 8-bit type.
std::int64_t saturate(DType t, double v);
// v (an integer) as a value of integer type t with ONNX's (numpy's) wrap-around: modulo 256 for
// uint8, two's complement for int8 and int32; bool: v != 0.
std::int64_t wrap(DType t, double v);

// numpy broadcasting: the shape of a op b, and the flat index into a tensor of `shape` for a
// coordinate of the broadcast shape.
std::vector<std::int64_t> broadcast_shape(const Node& n, const std::vector<std::int64_t>& a,
                                          const std::vector<std::int64_t>& b);
std::size_t broadcast_index(const std::vector<std::int64_t>& shape,
                            const std::vector<std::int64_t>& coord);

// MatMul's batching (numpy matmul: A [..., M, K] times B [..., K, N], batch dimensions
// broadcast): calls fn(a_offset, b_offset, y_offset) for each matrix pair, in elements, with
// m, k, n set. Returns Y's shape.
struct MatmulDims {
  std::size_t m = 0, k = 0, n = 0;
};
std::vector<std::int64_t> for_each_matrix(
    const Node& n, const Tensor& a, const Tensor& b, MatmulDims* dims,
    const std::function<void(std::size_t, std::size_t, std::size_t)>& fn);

// Spatial geometry of a 2-D window operator (Conv, pools) on an NCHW input.
struct Window {
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  std::int64_t out_h = 0, out_w = 0;
};
// kernel_shape (or the weight's spatial size `kernel`), strides, dilations, pads / auto_pad and
// ceil_mode, for input height x width.
Window window(const Node& n, std::int64_t height, std::int64_t width,
              const std::vector<std::int64_t>& kernel);

// reference.cpp: element-wise with numpy broadcasting (`fn` on doubles; the output takes the
// first input's type), Clip, Softmax, Flatten, Reshape, Concat.
Tensor binary(const Node& n, const Inputs& in, const std::function<double(double, double)>& fn);
Tensor unary(const Node& n, const Inputs& in, const std::function<double(double)>& fn);
Tensor clip(const Node& n, const Inputs& in, std::int64_t opset);
Tensor softmax(const Node& n, const Inputs& in, std::int64_t opset);
Tensor flatten(const Node& n, const Inputs& in);
Tensor reshape(const Node& n, const Inputs& in);
Tensor concat(const Node& n, const Inputs& in);

std::vector<Tensor> conv(const Node& n, const Inputs& in);
std::vector<Tensor> conv_integer(const Node& n, const Inputs& in);
std::vector<Tensor> qlinear_conv(const Node& n, const Inputs& in);
std::vector<Tensor> max_pool(const Node& n, const Inputs& in);
std::vector<Tensor> average_pool(const Node& n, const Inputs& in);
std::vector<Tensor> global_pool(const Node& n, const Inputs& in, bool max);
std::vector<Tensor> batch_norm(const Node& n, const Inputs& in);
std::vector<Tensor> lrn(const Node& n, const Inputs& in);
std::vector<Tensor> gemm(const Node& n, const Inputs& in);
std::vector<Tensor> matmul(const Node& n, const Inputs& in);
std::vector<Tensor> matmul_integer(const Node& n, const Inputs& in);
std::vector<Tensor> qlinear_matmul(const Node& n, const Inputs& in);
std::vector<Tensor> quantize_linear(const Node& n, const Inputs& in);
std::vector<Tensor> dequantize_linear(const Node& n, const Inputs& in);

// reference_tensor.cpp: data movement and shapes (ONNX semantics at `opset`), reductions.
std::vector<Tensor> shape_op(const Node& n, const Inputs& in);
std::vector<Tensor> gather(const Node& n, const Inputs& in);
std::vector<Tensor> squeeze(const Node& n, const Inputs& in, std::int64_t opset);
std::vector<Tensor> unsqueeze(const Node& n, const Inputs& in, std::int64_t opset);
std::vector<Tensor> slice(const Node& n, const Inputs& in, std::int64_t opset);
std::vector<Tensor> expand(const Node& n, const Inputs& in);
std::vector<Tensor> constant_of_shape(const Node& n, const Inputs& in);
std::vector<Tensor> cast(const Node& n, const Inputs& in, DType to);
std::vector<Tensor> where(const Node& n, const Inputs& in);
std::vector<Tensor> pad(const Node& n, const Inputs& in, std::int64_t opset);
std::vector<Tensor> transpose(const Node& n, const Inputs& in);
// DepthToSpace (modes DCR and CRD) and SpaceToDepth on N x C x H x W.
std::vector<Tensor> depth_to_space(const Node& n, const Inputs& in);
std::vector<Tensor> space_to_depth(const Node& n, const Inputs& in);
std::vector<Tensor> split(const Node& n, const Inputs& in, std::int64_t opset);
// Resize and Upsample: nearest neighbour, and linear and cubic interpolation over every axis
// (float tensors), with each coordinate_transformation_mode (tf_crop_and_resize: not nearest).
std::vector<Tensor> resize(const Node& n, const Inputs& in, std::int64_t opset);
enum class Reduction : std::uint8_t { kMean, kSum, kMax };
std::vector<Tensor> reduce(const Node& n, const Inputs& in, std::int64_t opset, Reduction kind);

}  // namespace octasim::models::graph::ops
