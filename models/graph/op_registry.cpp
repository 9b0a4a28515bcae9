// The operator registry's table (op_registry.hpp). Each entry: the ONNX op, what it does, its
// reference kernel, its shape and MAC kernels where it has arithmetic worth skipping, whether it
// folds, its quantized behaviour, its lowerings in preference order and its FP16 roundings.
#include "models/graph/op_registry.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "models/graph/reference_ops.hpp"

namespace octasim::models::graph {
namespace {

using ops::has_input;

std::vector<Tensor> one(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

// A binary operator's result as booleans (Equal, Less, Greater).
Tensor as_bool(Tensor t) {
  Tensor b;
  b.dtype = DType::kBool;
  b.shape = std::move(t.shape);
  const std::size_t count = b.elements();
  b.i.resize(count);
  for (std::size_t k = 0; k < count; ++k) b.i[k] = (is_float(t.dtype) ? t.f[k] : t.i[k]) != 0;
  return b;
}

// ONNX TensorProto.DataType numbers of Cast's `to`.
DType onnx_dtype(const Node& n, std::int64_t to) {
  switch (to) {
    case 1:
      return DType::kFloat32;
    case 2:
      return DType::kUInt8;
    case 3:
      return DType::kInt8;
    case 6:
      return DType::kInt32;
    case 7:
      return DType::kInt64;
    case 9:
      return DType::kBool;
    case 10:
      return DType::kFloat16;
    case 11:
      return DType::kFloat64;
    default:
      throw GraphError(n.label() + ": Cast to ONNX data type " + std::to_string(to) +
                       " is not supported");
  }
}

// ---- shape kernels: outputs without the arithmetic ----------------------------------------

// The zero point input `idx` gives a quantized output its type (uint8 when absent).
DType quantized_type(const Inputs& in, std::size_t idx) {
  return has_input(in, idx) ? in[idx]->dtype : DType::kUInt8;
}

// A 2-D convolution's output; the reference kernel (which reports why) where the operands are
// not what it accepts.
std::vector<Tensor> conv_shape(const Node& n, const Inputs& in, std::int64_t opset) {
  const bool qlinear = n.op_type == "QLinearConv";
  const std::size_t w_at = qlinear ? 3 : 1;
  const bool ok = has_input(in, 0) && has_input(in, w_at) && in[0]->shape.size() == 4 &&
                  in[w_at]->shape.size() == 4;
  if (ok) {
    const Tensor& x = *in[0];
    const Tensor& w = *in[w_at];
    const std::int64_t group = n.get_int("group", 1);
    if (group > 0 && x.shape[1] % group == 0 && w.shape[0] % group == 0 &&
        w.shape[1] == x.shape[1] / group) {
      const ops::Window win = ops::window(n, x.shape[2], x.shape[3], {w.shape[2], w.shape[3]});
      DType t = DType::kFloat32;
      if (n.op_type == "ConvInteger") t = DType::kInt32;
      if (qlinear) t = quantized_type(in, 7);
      return one(Tensor::zeros(t, {x.shape[0], w.shape[0], win.out_h, win.out_w}));
    }
  }
  return run_op(n, in, opset);
}

std::vector<Tensor> gemm_shape(const Node& n, const Inputs& in, std::int64_t opset) {
  if (has_input(in, 0) && has_input(in, 1) && in[0]->shape.size() == 2 &&
      in[1]->shape.size() == 2) {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const bool ta = n.get_int("transA", 0) != 0, tb = n.get_int("transB", 0) != 0;
    if ((ta ? a.shape[0] : a.shape[1]) == (tb ? b.shape[1] : b.shape[0])) {
      return one(Tensor::zeros(DType::kFloat32,
                               {ta ? a.shape[1] : a.shape[0], tb ? b.shape[0] : b.shape[1]}));
    }
  }
  return run_op(n, in, opset);
}

std::vector<Tensor> matmul_shape(const Node& n, const Inputs& in, std::int64_t opset) {
  const bool qlinear = n.op_type == "QLinearMatMul";
  if (!has_input(in, 0) || !has_input(in, qlinear ? 3 : 1)) return run_op(n, in, opset);
  ops::MatmulDims dims;
  std::vector<std::int64_t> shape = ops::for_each_matrix(
      n, *in[0], *in[qlinear ? 3 : 1], &dims, [](std::size_t, std::size_t, std::size_t) {});
  DType t = DType::kFloat32;
  if (n.op_type == "MatMulInteger") t = DType::kInt32;
  if (qlinear) t = quantized_type(in, 7);
  return one(Tensor::zeros(t, std::move(shape)));
}

// ---- MAC kernels ----------------------------------------------------------------------------

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

// Output elements x C_in/group x kernel elements (W is M x C/group x kH x kW).
std::uint64_t conv_macs(const Node& n, const ShapeMap& shapes) {
  const auto* y = shape_of(shapes, n, 0, true);
  const auto* w = shape_of(shapes, n, n.op_type == "QLinearConv" ? 3 : 1, false);
  return y == nullptr || w == nullptr || w->size() < 2 ? 0 : product(*y) * product(*w, 1);
}

std::uint64_t gemm_macs(const Node& n, const ShapeMap& shapes) {
  const auto* y = shape_of(shapes, n, 0, true);
  const auto* a = shape_of(shapes, n, 0, false);
  if (y == nullptr || a == nullptr || a->size() != 2) return 0;
  const std::int64_t k = n.get_int("transA", 0) != 0 ? (*a)[0] : (*a)[1];
  return product(*y) * static_cast<std::uint64_t>(k);
}

std::uint64_t matmul_macs(const Node& n, const ShapeMap& shapes) {
  const auto* y = shape_of(shapes, n, 0, true);
  const auto* a = shape_of(shapes, n, 0, false);
  if (y == nullptr || a == nullptr || a->empty()) return 0;
  return product(*y) * static_cast<std::uint64_t>(a->back());
}

// ---- kernels adapting the reference operators to ReferenceKernel ----------------------------

#define OCTASIM_UNARY(expr)                           \
  [](const Node& n, const Inputs& in, std::int64_t) { \
    return one(ops::unary(n, in, [&n](double x) {     \
      (void)n;                                        \
      return expr;                                    \
    }));                                              \
  }
#define OCTASIM_BINARY(expr)                                                 \
  [](const Node& n, const Inputs& in, std::int64_t) {                        \
    return one(ops::binary(n, in, [](double a, double b) { return expr; })); \
  }
#define OCTASIM_OPS(call) [](const Node& n, const Inputs& in, std::int64_t) { return call; }
#define OCTASIM_OPS_OPSET(call) \
  [](const Node& n, const Inputs& in, std::int64_t opset) { return call; }

double hard_sigmoid(const Node& n, double x) {
  const double alpha = n.get_float("alpha", 0.2F), beta = n.get_float("beta", 0.5F);
  return std::clamp(alpha * x + beta, 0.0, 1.0);
}

// Pow's exponent may be of another type than its base; the result has the base's.
std::vector<Tensor> pow_kernel(const Node& n, const Inputs& in, std::int64_t) {
  const Tensor& base = ops::input(n, in, 0);
  Tensor exponent = ops::input(n, in, 1);
  if (is_float(base.dtype) != is_float(exponent.dtype)) {
    exponent = ops::cast(n, {&exponent}, base.dtype).front();
  }
  const bool ints = !is_float(base.dtype);
  const Inputs both = {&base, &exponent};
  return one(ops::binary(n, both, [ints](double a, double b) {
    const double p = std::pow(a, b);
    return ints ? std::trunc(p) : p;
  }));
}

// Inference: the identity, and a mask of all true. Training mode (random drops) is refused
// unless its ratio is 0, where it is the identity too.
std::vector<Tensor> dropout_kernel(const Node& n, const Inputs& in, std::int64_t) {
  const Tensor& x = ops::input(n, in, 0);
  const bool training = has_input(in, 2) && in[2]->at(0) != 0.0;
  const double ratio = has_input(in, 1) ? in[1]->at(0) : double{n.get_float("ratio", 0.5F)};
  if (training && ratio != 0.0) {
    throw GraphError(n.label() + ": training mode (random drops) is not supported: inference only");
  }
  std::vector<Tensor> out = one(x);
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) {
    out.push_back(Tensor::ints(DType::kBool, x.shape, std::vector<std::int64_t>(x.elements(), 1)));
  }
  return out;
}

double gelu(const Node& n, double x) {
  if (n.get_string("approximate", "none") == "tanh") {
    const double c = std::sqrt(2.0 / std::acos(-1.0));
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

std::vector<OpSchema> make_table() {
  using L = Lowering;
  using Q = Quantized;
  std::vector<OpSchema> t = {
      // Convolutions and matrix products.
      {"Conv",
       "2-D convolution (1-D as H = 1), groups, dilations, bias",
       OCTASIM_OPS(ops::conv(n, in)),
       conv_shape,
       conv_macs,
       true,
       Q::kRequantize,
       {L::kConv},
       2},
      {"ConvInteger",
       "integer convolution with zero points (exact INT32 sums)",
       OCTASIM_OPS(ops::conv_integer(n, in)),
       conv_shape,
       conv_macs,
       true,
       Q::kExact,
       {L::kConv},
       1},
      {"QLinearConv",
       "quantized convolution requantized to 8 bits",
       OCTASIM_OPS(ops::qlinear_conv(n, in)),
       conv_shape,
       conv_macs,
       true,
       Q::kExact,
       {},
       1},
      {"Gemm",
       "alpha A B + beta C (transA, transB)",
       OCTASIM_OPS(ops::gemm(n, in)),
       gemm_shape,
       gemm_macs,
       true,
       Q::kRequantize,
       {L::kFullyConnected},
       2},
      {"MatMul",
       "numpy matmul",
       OCTASIM_OPS(ops::matmul(n, in)),
       matmul_shape,
       matmul_macs,
       true,
       Q::kRequantize,
       {L::kFullyConnected},
       2},
      {"MatMulInteger",
       "integer matmul with zero points",
       OCTASIM_OPS(ops::matmul_integer(n, in)),
       matmul_shape,
       matmul_macs,
       true,
       Q::kExact,
       {L::kFullyConnected},
       1},
      {"QLinearMatMul",
       "quantized matmul requantized to 8 bits",
       OCTASIM_OPS(ops::qlinear_matmul(n, in)),
       matmul_shape,
       matmul_macs,
       true,
       Q::kExact,
       {},
       1},
      // Pooling and normalisation.
      {"MaxPool",
       "2-D (1-D) max pooling",
       OCTASIM_OPS(ops::max_pool(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kPool},
       1},
      {"AveragePool",
       "2-D (1-D) average pooling",
       OCTASIM_OPS(ops::average_pool(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kPool},
       3},
      {"GlobalAveragePool",
       "mean over the spatial axes",
       OCTASIM_OPS(ops::global_pool(n, in, false)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kPool},
       2},
      {"GlobalMaxPool",
       "max over the spatial axes",
       OCTASIM_OPS(ops::global_pool(n, in, true)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {},
       1},
      {"BatchNormalization",
       "inference batch normalization (running statistics)",
       OCTASIM_OPS(ops::batch_norm(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdp},
       2},
      {"LRN",
       "local response normalization across channels",
       OCTASIM_OPS(ops::lrn(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kLrn},
       2},
      {"Softmax",
       "softmax over one axis (opset 13; before, the flattened tail)",
       OCTASIM_OPS_OPSET(one(ops::softmax(n, in, opset))),
       nullptr,
       nullptr,
       true,
       Q::kFloatOnly,
       {L::kPpuSoftmax},
       1},
      // Element-wise arithmetic.
      {"Add",
       "a + b (numpy broadcasting)",
       OCTASIM_BINARY(a + b),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdp},
       1},
      {"Sub",
       "a - b (numpy broadcasting)",
       OCTASIM_BINARY(a - b),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {},
       1},
      {"Mul",
       "a * b (numpy broadcasting)",
       OCTASIM_BINARY(a * b),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdp},
       2},
      {"Div",
       "a / b (integer division truncates)",
       [](const Node& n, const Inputs& in, std::int64_t) {
         const bool ints = !is_float(ops::input(n, in, 0).dtype);
         return one(ops::binary(
             n, in, [ints](double a, double b) { return ints ? std::trunc(a / b) : a / b; }));
       },
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {},
       1},
      {"Pow", "a ^ b (the type of a)", pow_kernel, nullptr, nullptr, true, Q::kRequantize, {}, 1},
      {"Equal",
       "a == b (bool)",
       [](const Node& n, const Inputs& in, std::int64_t) {
         return one(as_bool(ops::binary(n, in, [](double a, double b) { return a == b ? 1 : 0; })));
       },
       nullptr,
       nullptr,
       true,
       Q::kFloatOnly,
       {},
       1},
      {"Where",
       "cond ? x : y (numpy broadcasting)",
       OCTASIM_OPS(ops::where(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kFloatOnly,
       {},
       1},
      {"Relu",
       "max(x, 0)",
       OCTASIM_UNARY(std::max(0.0, x)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdp},
       1},
      {"LeakyRelu",
       "x < 0 ? alpha x : x",
       OCTASIM_UNARY(x < 0 ? double{n.get_float("alpha", 0.01F)} * x : x),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kSdp},
       1},
      {"PRelu",
       "x < 0 ? slope x : x (slope broadcast)",
       OCTASIM_BINARY(a < 0 ? a * b : a),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdp},
       1},
      {"Clip",
       "min(max(x, min), max)",
       OCTASIM_OPS_OPSET(one(ops::clip(n, in, opset))),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kSdp},
       1},
      {"Sigmoid",
       "1 / (1 + e^-x)",
       OCTASIM_UNARY(1.0 / (1.0 + std::exp(-x))),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdpLut},
       1},
      {"Tanh",
       "tanh(x)",
       OCTASIM_UNARY(std::tanh(x)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdpLut},
       1},
      {"HardSigmoid",
       "max(0, min(1, alpha x + beta))",
       OCTASIM_UNARY(hard_sigmoid(n, x)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdpLut},
       1},
      {"HardSwish",
       "x max(0, min(1, x / 6 + 1 / 2))",
       OCTASIM_UNARY(x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdpLut},
       1},
      {"Exp", "e^x", OCTASIM_UNARY(std::exp(x)), nullptr, nullptr, true, Q::kRequantize, {}, 1},
      {"Sqrt",
       "square root",
       OCTASIM_UNARY(std::sqrt(x)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {},
       1},
      {"Reciprocal",
       "1 / x",
       OCTASIM_UNARY(1.0 / x),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {},
       1},
      {"Neg", "-x", OCTASIM_UNARY(-x), nullptr, nullptr, true, Q::kRequantize, {}, 1},
      {"Abs", "|x|", OCTASIM_UNARY(std::abs(x)), nullptr, nullptr, true, Q::kRequantize, {}, 1},
      {"Erf",
       "the error function",
       OCTASIM_UNARY(std::erf(x)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdpLut},
       1},
      {"Gelu",
       "x Phi(x) (approximate: none or tanh)",
       OCTASIM_UNARY(gelu(n, x)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kSdpLut},
       1},
      // Reductions.
      {"ReduceMean",
       "mean over axes (keepdims)",
       OCTASIM_OPS_OPSET(ops::reduce(n, in, opset, ops::Reduction::kMean)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kFolded},
       2},
      {"ReduceSum",
       "sum over axes (keepdims)",
       OCTASIM_OPS_OPSET(ops::reduce(n, in, opset, ops::Reduction::kSum)),
       nullptr,
       nullptr,
       true,
       Q::kRequantize,
       {L::kFolded},
       2},
      {"ReduceMax",
       "max over axes (keepdims)",
       OCTASIM_OPS_OPSET(ops::reduce(n, in, opset, ops::Reduction::kMax)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {},
       1},
      // Quantization.
      {"QuantizeLinear",
       "round(x / scale) + zero point, saturated",
       OCTASIM_OPS(ops::quantize_linear(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kExact,
       {L::kSdp},
       1},
      {"DequantizeLinear",
       "(q - zero point) scale",
       OCTASIM_OPS(ops::dequantize_linear(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kExact,
       {L::kSdp},
       1},
      // Layout and views.
      {"Identity",
       "x",
       OCTASIM_OPS(one(ops::input(n, in, 0))),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kFolded},
       1},
      {"Dropout",
       "x (inference; the mask all true)",
       dropout_kernel,
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kFolded},
       1},
      {"Flatten",
       "2-D view from `axis`",
       OCTASIM_OPS(one(ops::flatten(n, in))),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kView},
       1},
      {"Reshape",
       "the same elements in another shape",
       OCTASIM_OPS(one(ops::reshape(n, in))),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kView},
       1},
      {"Squeeze",
       "drops axes of size 1",
       OCTASIM_OPS_OPSET(ops::squeeze(n, in, opset)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kView},
       1},
      {"Unsqueeze",
       "inserts axes of size 1",
       OCTASIM_OPS_OPSET(ops::unsqueeze(n, in, opset)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kView},
       1},
      {"Concat",
       "joins tensors along an axis",
       OCTASIM_OPS(one(ops::concat(n, in))),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kConcat},
       1},
      {"Transpose",
       "permutes the axes",
       OCTASIM_OPS(ops::transpose(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {},
       1},
      {"DepthToSpace",
       "moves channel blocks into b x b pixel blocks (modes DCR, CRD)",
       OCTASIM_OPS(ops::depth_to_space(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kRubik},
       1},
      {"SpaceToDepth",
       "moves b x b pixel blocks into channel blocks",
       OCTASIM_OPS(ops::space_to_depth(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {},
       1},
      {"Split",
       "splits a tensor along an axis",
       OCTASIM_OPS_OPSET(ops::split(n, in, opset)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kChannelSlice},
       1},
      {"Slice",
       "a strided window of a tensor",
       OCTASIM_OPS_OPSET(ops::slice(n, in, opset)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kChannelSlice},
       1},
      {"Pad",
       "constant, reflect or edge padding",
       OCTASIM_OPS_OPSET(ops::pad(n, in, opset)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kFolded},
       1},
      {"Resize",
       "nearest, linear or cubic resampling",
       OCTASIM_OPS_OPSET(ops::resize(n, in, opset)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kResize},
       1},
      {"Upsample",
       "nearest or linear resampling (before opset 10)",
       OCTASIM_OPS_OPSET(ops::resize(n, in, opset)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {L::kResize},
       1},
      {"Expand",
       "broadcast to a shape",
       OCTASIM_OPS(ops::expand(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {},
       1},
      // Shape arithmetic (constants at a fixed batch: folded).
      {"Shape",
       "a tensor's shape",
       OCTASIM_OPS(ops::shape_op(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kFloatOnly,
       {L::kFolded},
       1},
      {"Gather",
       "elements at indices along an axis",
       OCTASIM_OPS(ops::gather(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kKeepsScale,
       {},
       1},
      {"ConstantOfShape",
       "a tensor of one value",
       OCTASIM_OPS(ops::constant_of_shape(n, in)),
       nullptr,
       nullptr,
       true,
       Q::kFloatOnly,
       {L::kFolded},
       1},
      {"Cast",
       "converts the element type",
       [](const Node& n, const Inputs& in,
          std::int64_t) { return ops::cast(n, in, onnx_dtype(n, n.get_int("to", 1))); },
       nullptr,
       nullptr,
       true,
       Q::kFloatOnly,
       {},
       1},
  };
  std::sort(t.begin(), t.end(), [](const OpSchema& a, const OpSchema& b) {
    return std::string_view(a.op_type) < std::string_view(b.op_type);
  });
  return t;
}

#undef OCTASIM_UNARY
#undef OCTASIM_BINARY
#undef OCTASIM_OPS
#undef OCTASIM_OPS_OPSET

}  // namespace

const char* lowering_name(Lowering l) {
  switch (l) {
    case Lowering::kConv:
      return "CONV";
    case Lowering::kFullyConnected:
      return "CONV (fully connected)";
    case Lowering::kPool:
      return "PDP";
    case Lowering::kLrn:
      return "CDP";
    case Lowering::kSdp:
      return "SDP";
    case Lowering::kSdpLut:
      return "SDP (LUT)";
    case Lowering::kView:
      return "view";
    case Lowering::kConcat:
      return "concat";
    case Lowering::kChannelSlice:
      return "channel slice";
    case Lowering::kPpuSoftmax:
      return "PPU";
    case Lowering::kResize:
      return "BDMA (nearest x f)";
    case Lowering::kRubik:
      return "Rubik (contract)";
    case Lowering::kFolded:
      return "folded";
  }
  return "?";
}

const std::vector<OpSchema>& all_ops() {
  static const std::vector<OpSchema> table = make_table();
  return table;
}

const OpSchema* find_op(std::string_view op_type) {
  const std::vector<OpSchema>& t = all_ops();
  const auto it = std::lower_bound(
      t.begin(), t.end(), op_type,
      [](const OpSchema& s, std::string_view name) { return std::string_view(s.op_type) < name; });
  return it != t.end() && std::string_view(it->op_type) == op_type ? &*it : nullptr;
}

bool lowers_to(std::string_view op_type, Lowering l) {
  const OpSchema* s = find_op(op_type);
  return s != nullptr &&
         std::find(s->lowerings.begin(), s->lowerings.end(), l) != s->lowerings.end();
}

std::vector<Tensor> run_op(const Node& node, const Inputs& in, std::int64_t opset) {
  const OpSchema* s = find_op(node.op_type);
  if (s == nullptr) {
    throw GraphError(node.label() + ": operator " + node.op_type + " is not supported");
  }
  return s->reference(node, in, opset);
}

std::vector<Tensor> run_op_shapes(const Node& node, const Inputs& in, std::int64_t opset) {
  const OpSchema* s = find_op(node.op_type);
  if (s != nullptr && s->shape != nullptr) return s->shape(node, in, opset);
  return run_op(node, in, opset);
}

}  // namespace octasim::models::graph
