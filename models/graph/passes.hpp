// Graph rewrites that keep a graph's outputs (up to float rounding) and simplify what the
// compiler lowers: BatchNormalization folded into the Conv before it, Identity and Dropout
// removed; and shape inference by running the reference executor on a zero input.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/graph/graph.hpp"

namespace octasim::models::graph {

// Folds every BatchNormalization whose input is a Conv's only use, with constant weights, bias
// and statistics, into that Conv (W' = W * s, B' = (B - mean) * s + beta, s = gamma /
// sqrt(var + eps)); the Conv then produces the BatchNormalization's output. Returns how many.
std::size_t fold_batch_norm(Graph& g);

// Removes Identity and Dropout (inference: the identity) nodes by renaming: the producer of the
// input takes the output's name when nothing else reads the input, otherwise the readers of the
// output read the input. Returns how many were removed.
std::size_t remove_identities(Graph& g);

// Every tensor's shape for graph inputs of the given shapes (a -1 dimension in the graph's input
// becomes `batch`), found by running the graph on zeros.
[[nodiscard]] std::map<std::string, std::vector<std::int64_t>> infer_shapes(const Graph& g,
                                                                            std::int64_t batch = 1);

}  // namespace octasim::models::graph
