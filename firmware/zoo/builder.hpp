// The model zoo's graph builder (private to firmware/zoo): appends ONNX nodes and their
// deterministic initializers to a ModelProto, keeping every tensor's shape (NCHW for the
// convolutional networks, 1 x tokens x features for the transformers) so that a network is
// written layer by layer without counting channels by hand.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace octasim::firmware::zoo::detail {

using Shape = std::vector<std::int64_t>;

// splitmix64 (Steele, Lea and Flood 2014): the weights' bits, independent of the standard
// library's distributions, so the same seed gives the same model on every machine.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1) on a grid of 2^-23 (24 bits: exact in float).
  float symmetric() {
    const auto bits = static_cast<std::int32_t>(next() >> 40);
    return static_cast<float>(bits - (1 << 23)) / static_cast<float>(1 << 23);
  }

 private:
  std::uint64_t state_;
};

struct ConvSpec {
  std::int64_t out = 0;  // kernels
  std::int64_t kernel = 1;
  std::int64_t stride = 1;
  std::int64_t pad = 0;  // on every side
  std::int64_t group = 1;
  bool bias = true;
};

// Every method adds one node named `name` whose output tensor has the same name, and returns
// that name.
class ModelBuilder {
 public:
  ModelBuilder(const std::string& name, const std::string& doc, std::uint64_t seed,
               const Shape& input);

  [[nodiscard]] const std::string& input() const { return input_; }
  [[nodiscard]] const Shape& shape(const std::string& tensor) const;
  [[nodiscard]] std::int64_t channels(const std::string& tensor) const { return shape(tensor)[1]; }

  // Weights uniform with He's variance 2 / fan_in (fan_in = C/group x k x k); biases
  // uniform in [-0.01, 0.01).
  std::string conv(const std::string& x, const std::string& name, const ConvSpec& spec);
  // gamma = gamma_scale x (1 +- 0.1), beta and mean within +-0.05, var 1 +- 0.1, epsilon 1e-5.
  std::string batch_norm(const std::string& x, const std::string& name, float gamma_scale = 1.0F);
  std::string relu(const std::string& x, const std::string& name);
  // ReLU6 as ONNX exports it: Clip with min 0 and max 6 as inputs (opset 11+).
  std::string relu6(const std::string& x, const std::string& name);
  std::string max_pool(const std::string& x, const std::string& name, std::int64_t kernel,
                       std::int64_t stride, std::int64_t pad = 0, bool ceil_mode = false);
  std::string average_pool(const std::string& x, const std::string& name, std::int64_t kernel,
                           std::int64_t stride);
  std::string global_average_pool(const std::string& x, const std::string& name);
  // Caffe's across-channel LRN (size 5, alpha 1e-4, beta 0.75, bias 1).
  std::string lrn(const std::string& x, const std::string& name);
  std::string add(const std::string& a, const std::string& b, const std::string& name);
  // Joins on `axis` (channels by default); every other dimension must agree.
  std::string concat(const std::vector<std::string>& xs, const std::string& name,
                     std::int64_t axis = 1);
  std::string flatten(const std::string& x, const std::string& name);
  // Y = X W^T + B (transB = 1, W stored out x in as PyTorch and Caffe do), He-scaled.
  std::string gemm(const std::string& x, const std::string& name, std::int64_t out);

  // ---- Transformers: the operators PyTorch 1.13 exports at opset 13 ----
  // A learned tensor registered for the shapes: offset + scale x U[-1, 1) per element (class
  // token, position embedding).
  std::string parameter(const std::string& name, const Shape& shape, double scale,
                        double offset = 0.0);
  // A float scalar initializer, shared by every node that names it (one per name).
  std::string scalar(const std::string& name, float value);
  // Add, Sub, Mul, Div or Pow with NumPy broadcasting.
  std::string binary(const std::string& op, const std::string& a, const std::string& b,
                     const std::string& name);
  // nn.Linear on a 1 x T x in sequence as PyTorch exports it: MatMul by the weight stored
  // in x out (the transpose, folded into an initializer) named `name`.matmul, then Add of the
  // bias (the node `name`). Weights He-scaled (fan_in = in), biases U[-0.01, 0.01).
  std::string linear(const std::string& x, const std::string& name, std::int64_t out);
  // MatMul of two activations of the same rank and batch dimensions (attention's q k^T, a v).
  std::string matmul(const std::string& a, const std::string& b, const std::string& name);
  std::string transpose(const std::string& x, const std::string& name,
                        const std::vector<std::int64_t>& perm);
  // Reshape to a constant shape (an int64 initializer `name`.shape), as static export gives.
  std::string reshape(const std::string& x, const std::string& name, const Shape& to);
  // x[..., index, ...] on `axis` (a scalar index: the axis goes), as `x[:, 0]` exports.
  std::string gather(const std::string& x, const std::string& name, std::int64_t axis,
                     std::int64_t index);
  std::string softmax(const std::string& x, const std::string& name);  // on the last axis
  // nn.LayerNorm on the last axis, decomposed as PyTorch exports it at opset 13: ReduceMean,
  // Sub, Pow 2, ReduceMean, Add eps (1e-5), Sqrt, Div, Mul gamma, Add beta (the node `name`);
  // gamma 1 +- 0.1 and beta within +-0.05, as batch_norm's.
  std::string layer_norm(const std::string& x, const std::string& name);
  // nn.GELU() (exact, erf) as PyTorch exports it at opset 13 (ONNX's Gelu op is opset 20):
  // Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5), the last Mul the node `name`.
  std::string gelu(const std::string& x, const std::string& name);

  // The model with `output` as its only graph output. The builder is spent afterwards.
  [[nodiscard]] onnx::ModelProto finish(const std::string& output);

 private:
  onnx::NodeProto& node(const std::string& op, const std::string& name,
                        const std::vector<std::string>& inputs, const Shape& out);
  // A float initializer `name` of `shape`: offset + scale x U[-1, 1) per element.
  std::string random_tensor(const std::string& name, const Shape& shape, double scale,
                            double offset = 0.0);
  std::string tensor(const std::string& name, const Shape& shape, const std::vector<float>& values);
  // An int64 initializer (Reshape's shape, Gather's index), registered for the shapes.
  std::string int64_tensor(const std::string& name, const Shape& shape,
                           const std::vector<std::int64_t>& values);
  std::string pooled(const std::string& op, const std::string& x, const std::string& name,
                     std::int64_t kernel, std::int64_t stride, std::int64_t pad, bool ceil_mode);

  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  std::string input_;
  std::map<std::string, Shape> shapes_;
  SplitMix64 rng_;
};

}  // namespace octasim::firmware::zoo::detail
