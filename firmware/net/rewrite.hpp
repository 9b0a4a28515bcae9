// Graph rewrites the DLA's limits call for, after models/graph's device-independent clean-up
// (passes.hpp simplify_graph) and before planning (plan.hpp): each replaces nodes the planner
// would refuse by equivalent ones it lowers. Every rewrite keeps the graph's outputs (exactly in
// real arithmetic) and returns how many places it changed.
#pragma once

#include <cstddef>

#include "models/graph/graph.hpp"

namespace octasim::firmware::net {

// Where a Concat input cannot live inside the Concat's surface because it already lives
// elsewhere — concatenated by an earlier Concat (DenseNet concatenates every feature into every
// later block's input) or twice by one Concat, or a channel slice (inside its source's surface:
// ShuffleNet concatenates one half of a Split with the other half's branch) — inserts Mul(input, 1)
// before the Concat, which plans as an SDP layer copying (and at INT8 requantizing) the tensor into
// place.
std::size_t insert_concat_copies(models::graph::Graph& g);

// PDP's kernel is at most 8 x 8 (kPdpMaxKernel): a GlobalAveragePool over a larger H or W (a
// squeeze-excitation block at 32 x 32) becomes a chain of AveragePools with equal, non-overlapping
// windows (kernel = stride = a factor of H and of W, each at most 8), then a GlobalAveragePool of
// what is left: the mean of equal-sized means is the mean. H or W with a prime factor above 8
// stays (the planner refuses it with PDP's message).
inline constexpr unsigned kPdpMaxKernel = 8;
std::size_t split_global_pools(models::graph::Graph& g);

// ShuffleNet's channel shuffle, Reshape(x: 1 x C x H x W -> 1 x g x C/g x H x W), Transpose
// (perm 0,2,1,3,4), Reshape(-> 1 x C x H x W), each intermediate read by the next node only: a
// permutation of the channels (output channel j g + i is input channel i C/g + j), which the DLA
// has no unit for (BDMA and Rubik move whole atoms). Replaced by a 1x1 Conv whose weights are the
// 0/1 permutation matrix: exact at FP16 (one product by 1, no sum), at INT8 a CONV layer that
// requantizes (the output gets its own clip — a permutation's max is its input's — and weight
// code 127; signed codes). Costs one CONV layer of C x C MACs per pixel.
std::size_t rewrite_channel_shuffles(models::graph::Graph& g);

// All three, in that order.
std::size_t rewrite_for_dla(models::graph::Graph& g);

}  // namespace octasim::firmware::net
