// Small models::graph::Graph builders for the network compiler's unit tests: graphs written
// node by node as an ONNX exporter would, so that a test states every tensor it feeds the
// planner and the weight quantizer.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "models/graph/graph.hpp"

namespace octasim::nettest {

using models::graph::Attribute;
using models::graph::Graph;
using models::graph::Node;
using models::graph::Tensor;
using models::graph::ValueInfo;

inline Attribute int_attr(std::int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}

inline Attribute float_attr(float v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = v;
  return a;
}

inline Attribute ints_attr(std::vector<std::int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

inline Attribute string_attr(std::string v) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}

class GraphBuilder {
 public:
  explicit GraphBuilder(std::int64_t opset = 13) { g_.opset = opset; }

  GraphBuilder& input(const std::string& name, std::vector<std::int64_t> shape) {
    g_.inputs.push_back(ValueInfo{name, models::graph::DType::kFloat32, std::move(shape)});
    return *this;
  }
  GraphBuilder& output(const std::string& name) {
    g_.outputs.push_back(ValueInfo{name, models::graph::DType::kFloat32, {}});
    return *this;
  }
  GraphBuilder& constant(const std::string& name, std::vector<std::int64_t> shape,
                         std::vector<float> values) {
    g_.initializers[name] = Tensor::floats(std::move(shape), std::move(values));
    return *this;
  }
  // Appends a node; returns it so a test can add attributes.
  Node& node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
             std::vector<std::string> outputs) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    g_.nodes.push_back(std::move(n));
    return g_.nodes.back();
  }

  [[nodiscard]] const Graph& graph() const { return g_; }
  [[nodiscard]] Graph& graph() { return g_; }

 private:
  Graph g_;
};

// `n` values 0.01 * ((i * 37) % 101 - 50): deterministic, of both signs, none zero-heavy.
inline std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = 0.01F * static_cast<float>(static_cast<int>((i * 37) % 101) - 50);
  }
  return v;
}

// A 1-D INT64 tensor holding `v` (shapes, axes, sizes).
inline Tensor int64_tensor(std::vector<std::int64_t> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor::ints(models::graph::DType::kInt64, {n}, std::move(v));
}

// A 1x1 Conv `name` from `in` (cin channels) to `out` (k channels) with mostly positive ramp
// weights (outputs not all zero after ReLU), followed by a Relu unless `relu` is false.
inline void conv1x1(GraphBuilder& b, const std::string& name, const std::string& in,
                    const std::string& out, std::int64_t cin, std::int64_t k, bool relu = true) {
  std::vector<float> w = ramp(static_cast<std::size_t>(k * cin));
  for (float& v : w) v += 0.2F;
  b.constant(name + "_W", {k, cin, 1, 1}, w);
  b.node("Conv", name, {in, name + "_W"}, {relu ? name + "_pre" : out});
  if (relu) b.node("Relu", name + "_relu", {name + "_pre"}, {out});
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The message of the exception `f` throws, or "" when it does not.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace octasim::nettest
