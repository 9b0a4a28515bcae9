// Calibration: the clipping scalar of every tensor the device quantizes (the network's input and
// each hardware layer's output), found on calibration images run through the FP32 reference
// executor (models/graph/reference.hpp) with the method the user chose (max, percentile,
// mse-hist, octav: models/quant/calibrators.hpp), or taken from a calibration table.
//
// Code bits and sign follow what the datapath can hold (quant.hpp): a tensor is unsigned when a
// ReLU produced it (or a pool/LRN of an unsigned tensor), or, for the network's input, when no
// calibration value is negative. At INT4, 4-bit codes where a clamp exists: convolution outputs
// after a ReLU (SDP's BN ALU clamps them); the network's input, LRN outputs (CDP has no clamp),
// signed outputs, the sum of an Add (fused into a convolution or on SDP alone) and SDP's affine
// maps (BatchNormalization, per-channel Mul/Add not after a convolution: BN adds or scales there,
// EW has no clamp after its sum) keep 8-bit codes; a pool or a lone ReLU keeps its input's codes
// (its output has the input's quantization exactly).
// Concat: its output and inputs share one quantization (each producer requantizes to it in its
// SDP), and so, through pools and lone ReLUs (which keep the codes), does the whole group they
// link: its clip is calibrated on the values of all its tensors (or, from a table, the largest
// clip among its Concat outputs), its codes are unsigned when every member is, 4-bit only when
// every member is.
#pragma once

#include <string>

#include "firmware/net/plan.hpp"
#include "firmware/net/quant.hpp"
#include "models/graph/graph.hpp"

namespace octasim::firmware::net {

// `images`: a batch (first axis) of the graph's input. `given`: a calibration table to take the
// clips from instead (then `images` only decides the input's sign when the table does not say;
// a tensor missing from the table is a CalibrationError naming it). Pools take their input's
// quantization.
[[nodiscard]] CalibrationTable calibrate(const models::graph::Graph& g, const NetPlan& plan,
                                         const models::graph::Tensor& images,
                                         const QuantOptions& options,
                                         const CalibrationTable* given = nullptr);

// --precision mixed: the clips of the activation operands (inputs 0 and 1 not constant) of the
// MatMul and Gemm nodes on the PPU (int8_matmul_node), keyed by the node's input name, signed
// 8-bit (step = clip / 127), calibrated like an INT8 network's tensors (options.calibration on
// the FP32 reference's values of `images`) or taken from `given`. octav-device is refused (the
// OCTAV unit clips DLA convolution outputs, not a PPU operand's FP16 surface).
[[nodiscard]] CalibrationTable calibrate_matmul_operands(const models::graph::Graph& g,
                                                         const NetPlan& plan,
                                                         const models::graph::Tensor& images,
                                                         const QuantOptions& options,
                                                         const CalibrationTable* given = nullptr);

// Whether node `n` (on the PPU) is a matrix product --precision mixed runs in INT8: a MatMul or
// Gemm whose inputs 0 and 1 are present, a constant among them float and 2-D.
[[nodiscard]] bool int8_matmul_node(const models::graph::Graph& g, const models::graph::Node& n);

// Why the device's DLA (or the PPU's softmax kernel) cannot run planned layer `l` at the
// precision of `options` — an SDP layer the quantized pipeline does not do (a Mul of two tensors,
// an Add of a broadcast constant, ...), a Softmax below FP16 — or "" when it can. The planner
// does not know the precision: quantize_network sends such a layer of one node to the PPU
// (--fallback ppu) before calibrating.
[[nodiscard]] std::string quantized_refusal(const models::graph::Graph& g, const PlannedLayer& l,
                                            const QuantOptions& options);

}  // namespace octasim::firmware::net
