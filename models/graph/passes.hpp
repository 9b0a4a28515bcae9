// Graph rewrites that keep a graph's outputs (up to float rounding) and simplify what the
// compiler lowers: BatchNormalization folded into the Conv before it, Identity and Dropout
// removed; and shape inference by running the reference executor on a zero input.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/graph/graph.hpp"
#include "models/graph/op_registry.hpp"

namespace octasim::models::graph {

// Folds every BatchNormalization whose input is a Conv's only use, with constant weights, bias
// and statistics, into that Conv (W' = W * s, B' = (B - mean) * s + beta, s = gamma /
// sqrt(var + eps)); the Conv then produces the BatchNormalization's output. Returns how many.
std::size_t fold_batch_norm(Graph& g);

// Removes Identity and Dropout (inference: the identity) nodes by renaming: the producer of the
// input takes the output's name when nothing else reads the input, otherwise the readers of the
// output read the input. Returns how many were removed.
std::size_t remove_identities(Graph& g);

// A name no tensor of `g` (initializer, node output, graph input) has: `base`, else `base_1`,
// `base_2`, ...: for the tensors a rewrite adds.
[[nodiscard]] std::string unused_tensor_name(const Graph& g, const std::string& base);

// Evaluates at compile time every node whose registry entry folds and whose inputs are all
// constants, and every Shape of a tensor whose shape is known at `batch` (-1 dimensions of
// the graph inputs become `batch`): their outputs become initializers, so the shape subgraphs
// PyTorch exports (Shape, Gather, Unsqueeze, Concat, ..., ConstantOfShape, Equal, Where,
// Expand) leave constants behind — a graph output too (a constant output, which the compiler
// writes into the program's memory image). A Dropout's mask at inference (training_mode absent
// or 0, or ratio 0) is all true: it becomes a constant and the Dropout an identity. Returns how
// many nodes were folded (and masks made constant).
std::size_t fold_constants(Graph& g, std::int64_t batch = 1);

// Removes Pad nodes: a Pad of nothing (all pads 0) always; a constant zero Pad of H and W of an
// N x C x H x W tensor when every reader is a Conv (whose padding is zeros) or an AveragePool
// that counts its padding or has none (it then counts the Pad's zeros as elements:
// count_include_pad=1, as PyTorch's AvgPool2d exports). Other pads (a non-zero value, reflect or
// edge, padding N or C) stay. Returns how many were removed.
std::size_t fold_pads(Graph& g);

// ReduceMean over H and W of an N x C x H x W tensor becomes GlobalAveragePool; ReduceSum over
// them GlobalAveragePool then Mul by H W; keepdims=0 adds a Reshape to N x C (a view). Returns
// how many were rewritten.
std::size_t reductions_to_pooling(Graph& g);

// Sub(x, c) becomes Add(x, -c) and Div(x, c) Mul(x, 1/c) for a float constant c (the
// reciprocal rounded once to float), so SDP's adder and multiplier take them. Returns how many.
std::size_t constant_arithmetic(Graph& g);

// The clean-up before lowering, in order: remove_identities, fold_constants (batch 1),
// fold_pads, reductions_to_pooling, constant_arithmetic, fold_batch_norm. Returns the changes.
std::size_t simplify_graph(Graph& g);

// Every tensor's shape for graph inputs whose -1 dimensions become `batch`: each node's
// registry shape kernel (op_registry.hpp: Conv, Gemm, MatMul and their integer forms without
// their arithmetic) or, for the others, its reference kernel on the zero values found so far, so
// shape subgraphs (Shape, Gather, Concat, ...) compute the values they pass on. Throws
// GraphError like run_reference.
[[nodiscard]] ShapeMap infer_shapes(const Graph& g, std::int64_t batch = 1);

// Every tensor's element type, as infer_shapes computes it (the registry's kernels on zeros).
[[nodiscard]] std::map<std::string, DType> infer_dtypes(const Graph& g);

}  // namespace octasim::models::graph
