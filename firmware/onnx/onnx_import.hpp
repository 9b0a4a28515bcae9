// ONNX import through Debian's official ONNX library (libonnx-dev: onnx.proto's generated
// classes, protobuf): a ModelProto file becomes a models::graph::Graph, a TensorProto `.pb` or a
// NumPy `.npy` file a models::graph::Tensor. Opsets up to 17 of the default domain: operators
// run with their current (opset 13+) semantics, and the executor follows the older ones where
// they differ for an operator octasim supports (Softmax before 13, Clip before 11); attributes of
// the opsets before 7 that change an operator's meaning (consumed_inputs, is_test, spatial,
// broadcast) are refused.
#pragma once

#include <stdexcept>
#include <string>

#include "models/graph/graph.hpp"

namespace octasim::firmware {

// A model or tensor file octasim cannot read: one line starting with the path.
class OnnxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::int64_t kMinOpset = 1;
inline constexpr std::int64_t kMaxOpset = 17;

// Reads `path` (a binary ModelProto). Initializers become constants; Constant nodes are folded
// into initializers; graph inputs that are initializers are not inputs. Refuses opsets above
// 17, other operator domains, legacy attributes, external data, subgraphs and sparse tensors.
[[nodiscard]] models::graph::Graph load_onnx(const std::string& path);

// A TensorProto file (ONNX backend test data: input_0.pb, output_0.pb).
[[nodiscard]] models::graph::Tensor read_tensor_pb(const std::string& path);

// `.npy` (float16/32/64) or `.pb` by the file's name.
[[nodiscard]] models::graph::Tensor read_tensor(const std::string& path);

}  // namespace octasim::firmware
