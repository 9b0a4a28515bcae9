// The reference executor: runs a Graph with ONNX's semantics in plain C++ — float operators in
// float32 storage with double accumulation, integer operators (ConvInteger, MatMulInteger,
// QLinearConv, QLinearMatMul, QuantizeLinear, DequantizeLinear) exactly, rounding half to even
// as ONNX specifies. It is the FP32 reference the device's accuracy is compared with, and it is
// checked against ONNX's own backend test data (tests/onnx).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/graph/graph.hpp"

namespace octasim::models::graph {

using TensorMap = std::map<std::string, Tensor>;

// Whether the reference executor implements `op_type` (at the graph's opset); when not, `why`
// (if given) says what is missing.
[[nodiscard]] bool reference_supports(const Node& node, std::string* why = nullptr);

// Runs every node of `g` on `inputs` (by graph-input name) and returns every tensor computed,
// initializers and inputs included. Throws GraphError naming the node for an unsupported op or
// attribute, a missing input or a shape mismatch.
[[nodiscard]] TensorMap run_reference(const Graph& g, const TensorMap& inputs);

// run_reference image by image: `images` (first axis: the images) is fed to graph input `input`
// one image at a time — the compiler's graph passes fold shapes at batch 1 (a Reshape to
// [1, -1]; PyTorch's exports often bake the batch in too) — and every computed tensor is
// returned with the images' results stacked along its first axis (initializers once).
[[nodiscard]] TensorMap run_reference_images(const Graph& g, const std::string& input,
                                             const Tensor& images);

// Runs one node on its input tensors (in the node's input order; an omitted optional input is
// an empty Tensor with no shape and no data) and returns its outputs in order.
[[nodiscard]] std::vector<Tensor> run_node(const Node& node, const std::vector<const Tensor*>& in,
                                           std::int64_t opset);

}  // namespace octasim::models::graph
