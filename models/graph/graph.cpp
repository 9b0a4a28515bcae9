#include "models/graph/graph.hpp"

#include <utility>

namespace octasim::models::graph {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat64:
      return "float64";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

bool is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kFloat64;
}

std::size_t Tensor::elements() const {
  std::size_t n = 1;
  for (const std::int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

Tensor Tensor::floats(std::vector<std::int64_t> shape, std::vector<float> values) {
  Tensor t;
  t.dtype = DType::kFloat32;
  t.shape = std::move(shape);
  t.f = std::move(values);
  if (t.f.size() != t.elements()) {
    throw GraphError("tensor of shape " + shape_string(t.shape) + " given " +
                     std::to_string(t.f.size()) + " values");
  }
  return t;
}

Tensor Tensor::zeros(DType t, std::vector<std::int64_t> shape) {
  Tensor z;
  z.dtype = t;
  z.shape = std::move(shape);
  (is_float(t) ? z.f.assign(z.elements(), 0.0F) : z.i.assign(z.elements(), 0));
  return z;
}

Tensor Tensor::ints(DType type, std::vector<std::int64_t> shape, std::vector<std::int64_t> values) {
  Tensor t;
  t.dtype = type;
  t.shape = std::move(shape);
  t.i = std::move(values);
  if (t.i.size() != t.elements()) {
    throw GraphError("tensor of shape " + shape_string(t.shape) + " given " +
                     std::to_string(t.i.size()) + " values");
  }
  return t;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    s += (k == 0 ? "" : "x") + (shape[k] < 0 ? std::string("?") : std::to_string(shape[k]));
  }
  return s;
}

namespace {

const Attribute* find(const Node& n, const std::string& attr, Attribute::Kind kind,
                      const char* expected) {
  const auto it = n.attributes.find(attr);
  if (it == n.attributes.end()) return nullptr;
  if (it->second.kind != kind) {
    throw GraphError(n.label() + ": attribute '" + attr + "' must be " + expected);
  }
  return &it->second;
}

}  // namespace

std::int64_t Node::get_int(const std::string& attr, std::int64_t fallback) const {
  const Attribute* a = find(*this, attr, Attribute::Kind::kInt, "an integer");
  return a != nullptr ? a->i : fallback;
}

float Node::get_float(const std::string& attr, float fallback) const {
  const Attribute* a = find(*this, attr, Attribute::Kind::kFloat, "a float");
  return a != nullptr ? a->f : fallback;
}

std::string Node::get_string(const std::string& attr, const std::string& fallback) const {
  const Attribute* a = find(*this, attr, Attribute::Kind::kString, "a string");
  return a != nullptr ? a->s : fallback;
}

std::vector<std::int64_t> Node::get_ints(const std::string& attr,
                                         std::vector<std::int64_t> fallback) const {
  const Attribute* a = find(*this, attr, Attribute::Kind::kInts, "a list of integers");
  return a != nullptr ? a->ints : fallback;
}

std::string Node::label() const {
  return op_type + (name.empty() ? std::string(" (unnamed)") : " '" + name + "'");
}

const Node* Graph::producer(const std::string& tensor) const {
  for (const Node& n : nodes) {
    for (const std::string& out : n.outputs) {
      if (out == tensor) return &n;
    }
  }
  return nullptr;
}

std::size_t Graph::consumers(const std::string& tensor) const {
  std::size_t count = 0;
  for (const Node& n : nodes) {
    for (const std::string& in : n.inputs) count += in == tensor ? 1 : 0;
  }
  for (const ValueInfo& out : outputs) count += out.name == tensor ? 1 : 0;
  return count;
}

}  // namespace octasim::models::graph
