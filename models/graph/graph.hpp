// A network as octasim's compiler and reference executor see it: named tensors flowing through
// nodes in topological order. Independent of ONNX's protobuf classes (firmware/onnx imports into
// it) and of the simulator. Operator names and attribute names follow ONNX.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace octasim::models::graph {

// A graph that cannot be executed or lowered (unknown op, wrong attribute, shape mismatch): one
// line naming the node and what was expected.
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Element types the reference executor computes with (ONNX TensorProto.DataType subset).
enum class DType : std::uint8_t {
  kFloat32,
  kFloat16,
  kFloat64,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kBool
};

[[nodiscard]] const char* dtype_name(DType t);
[[nodiscard]] bool is_float(DType t);

// A tensor value. Floating-point elements live in `f` (FP16/FP64 converted to float32), integer
// and boolean elements in `i`; the other vector is empty.
struct Tensor {
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;  // empty: a scalar
  std::vector<float> f;
  std::vector<std::int64_t> i;

  [[nodiscard]] std::size_t elements() const;
  // Element `k` (C order) as double, whatever the type.
  [[nodiscard]] double at(std::size_t k) const {
    return is_float(dtype) ? double{f[k]} : static_cast<double>(i[k]);
  }
  [[nodiscard]] static Tensor floats(std::vector<std::int64_t> shape, std::vector<float> values);
  [[nodiscard]] static Tensor ints(DType t, std::vector<std::int64_t> shape,
                                   std::vector<std::int64_t> values);
  // A tensor of type `t` and shape `shape`, every element zero.
  [[nodiscard]] static Tensor zeros(DType t, std::vector<std::int64_t> shape);
};

// "2x3x4" for messages.
[[nodiscard]] std::string shape_string(const std::vector<std::int64_t>& shape);

// An ONNX attribute: exactly one of the members is meaningful, by `kind`.
struct Attribute {
  enum class Kind : std::uint8_t {
    kInt,
    kFloat,
    kString,
    kInts,
    kFloats,
    kTensor
  } kind = Kind::kInt;
  std::int64_t i = 0;
  float f = 0.0F;
  std::string s;
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
  Tensor t;
};

struct Node {
  std::string name;     // ONNX node name (may be empty: then op_type + index in messages)
  std::string op_type;  // "Conv", "Relu", ...
  std::vector<std::string> inputs;   // tensor names; "" for an omitted optional input
  std::vector<std::string> outputs;  // tensor names
  std::map<std::string, Attribute> attributes;

  [[nodiscard]] bool has(const std::string& attr) const { return attributes.count(attr) != 0; }
  // Attribute accessors with ONNX defaults; a present attribute of another kind is a GraphError.
  [[nodiscard]] std::int64_t get_int(const std::string& attr, std::int64_t fallback) const;
  [[nodiscard]] float get_float(const std::string& attr, float fallback) const;
  [[nodiscard]] std::string get_string(const std::string& attr, const std::string& fallback) const;
  [[nodiscard]] std::vector<std::int64_t> get_ints(const std::string& attr,
                                                   std::vector<std::int64_t> fallback) const;
  // "Conv 'conv1'" (or "Conv #3" without a name) for messages.
  [[nodiscard]] std::string label() const;
};

// A graph input or output: its name, element type and shape (-1 for a dimension the model leaves
// symbolic, such as the batch).
struct ValueInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;
};

struct Graph {
  std::string name;
  std::int64_t opset = 0;         // the default domain's opset version
  std::vector<ValueInfo> inputs;  // without the initializers
  std::vector<ValueInfo> outputs;
  std::map<std::string, Tensor> initializers;  // constants: weights, biases, shapes
  std::vector<Node> nodes;                     // topological order

  [[nodiscard]] bool is_constant(const std::string& tensor) const {
    return initializers.count(tensor) != 0;
  }
  // The node that produces `tensor`, or nullptr for a graph input or initializer.
  [[nodiscard]] const Node* producer(const std::string& tensor) const;
  // How many node inputs and graph outputs read `tensor`.
  [[nodiscard]] std::size_t consumers(const std::string& tensor) const;
};

}  // namespace octasim::models::graph
