// A network's size as papers and performance sheets quote it: multiply-accumulates per image
// (the "network MACs" of the matrix operators; the DLA's dense expansion of a grouped
// convolution does not change them) and parameters. Shapes come from shape inference that
// skips the arithmetic of those operators, so counting ResNet-50 takes milliseconds, not the
// seconds the reference executor needs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/graph/graph.hpp"
#include "models/graph/op_registry.hpp"
#include "models/graph/passes.hpp"

namespace octasim::models::graph {

// Multiply-accumulates of one node for the tensor shapes `shapes` (infer_shapes, passes.hpp):
// its registry entry's MAC kernel (op_registry.cpp): Conv, ConvInteger and QLinearConv output
// elements x C_in/group x kernel elements; Gemm M x N x K; MatMul, MatMulInteger and
// QLinearMatMul output elements x K. 0 for every other operator.
[[nodiscard]] std::uint64_t node_macs(const Node& n, const ShapeMap& shapes);

struct NodeMacs {
  std::string node;  // Node::name
  std::string op_type;
  std::uint64_t macs = 0;
};

// node_macs for every node (in graph order) at batch 1: a symbolic batch counts one image, a
// fixed batch N counts N.
[[nodiscard]] std::vector<NodeMacs> macs_per_node(const Graph& g);

// The sum of macs_per_node.
[[nodiscard]] std::uint64_t count_macs(const Graph& g);

// Elements of the floating-point initializers: weights, biases and normalisation parameters
// (BatchNormalization's running mean and variance included, which PyTorch's parameter counts
// leave out as buffers).
[[nodiscard]] std::uint64_t count_parameters(const Graph& g);

}  // namespace octasim::models::graph
