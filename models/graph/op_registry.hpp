// The operator registry: one entry per ONNX operator octasim knows, holding everything the
// reference executor, the shape inference, the MAC counter, the graph passes, the network
// compiler and `octasim onnx-test` need to know about it (TVM's / ONNX Runtime's op registry,
// in miniature):
//
//   - its FP32 reference kernel (ONNX semantics; reference.hpp runs it),
//   - a shape kernel giving the outputs' types and shapes without the arithmetic (operators
//     whose arithmetic is heavy: convolutions and matrix products),
//   - its multiply-accumulates for given shapes,
//   - whether constant folding may evaluate it at compile time,
//   - how its quantized (integer) form behaves,
//   - its lowerings onto the device, in preference order (firmware/net/plan.cpp maps each
//     Lowering to its planner), and
//   - the FP16 roundings a term meets before the output's (onnx-test's tolerance).
//
// Adding an operator is one entry in op_registry.cpp plus its kernels (README: "Adding an
// operator").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "models/graph/graph.hpp"

namespace octasim::models::graph {

using ShapeMap = std::map<std::string, std::vector<std::int64_t>>;
using Inputs = std::vector<const Tensor*>;

// Where the network compiler can put an operator's node.
enum class Lowering : std::uint8_t {
  kConv,            // a CONV layer (with SDP flying behind it)
  kFullyConnected,  // a CONV layer in NVDLA's fully-connected mapping
  kPool,            // PDP
  kLrn,             // CDP
  kSdp,             // SDP memory to memory (ALUs, multipliers, ReLU, convertors)
  kSdpLut,          // SDP memory to memory through its LUT (a unary function)
  kView,            // no layer: a view of the producer's surface
  kConcat,          // no layer: each input's producer writes into the output's surface
  kChannelSlice,    // no layer: channels from an atom boundary on, a surface inside the input's
  kPpuSoftmax,      // the PPU's softmax kernel (configurations with a PPU)
  kResize,          // BDMA copies: nearest upsampling by integer factors (each atom f x f times)
  kRubik,           // Rubik's contract mode (configurations with Rubik): DepthToSpace, DCR
  kFolded,          // removed before planning by the graph passes (passes.hpp)
};

[[nodiscard]] const char* lowering_name(Lowering l);

// The operator on integer codes (the quantized networks the compiler builds).
enum class Quantized : std::uint8_t {
  kRequantize,  // computes new values: the output gets its own calibrated clip
  kKeepsScale,  // moves, selects or clamps values (pools' max, views, Concat, Clip, LeakyRelu):
                // the input's clip
  kExact,       // integer operators of integer networks (ConvInteger, ...): exact
  kFloatOnly,   // only in the float domain (shape arithmetic, casts): folded or refused
};

using ReferenceKernel = std::vector<Tensor> (*)(const Node&, const Inputs&, std::int64_t opset);
using MacsKernel = std::uint64_t (*)(const Node&, const ShapeMap&);

struct OpSchema {
  const char* op_type = "";
  const char* summary = "";
  ReferenceKernel reference = nullptr;
  // Outputs with their types and shapes and zero values, without the arithmetic; nullptr: the
  // reference kernel is cheap enough to run on zeros.
  ReferenceKernel shape = nullptr;
  MacsKernel macs = nullptr;  // nullptr: no multiply-accumulates
  // Constant folding may run the reference kernel when every input is a constant.
  bool foldable = true;
  Quantized quantized = Quantized::kRequantize;
  std::vector<Lowering> lowerings;  // preference order; empty: the device cannot run it
  // FP16 roundings of a term before the output's own (backend_test.hpp's tolerance).
  int fp16_roundings = 1;
};

// The entry for `op_type`, or nullptr.
[[nodiscard]] const OpSchema* find_op(std::string_view op_type);

// Every entry, sorted by op_type.
[[nodiscard]] const std::vector<OpSchema>& all_ops();

// Whether the device can run `op_type` through `l` (the registry lists it).
[[nodiscard]] bool lowers_to(std::string_view op_type, Lowering l);

// Runs `node` through its registry entry's reference kernel. Throws GraphError for an operator
// the registry does not know.
[[nodiscard]] std::vector<Tensor> run_op(const Node& node, const Inputs& in, std::int64_t opset);

// Outputs with shapes and types only: the shape kernel where the entry has one, otherwise the
// reference kernel.
[[nodiscard]] std::vector<Tensor> run_op_shapes(const Node& node, const Inputs& in,
                                                std::int64_t opset);

}  // namespace octasim::models::graph
