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

// Why the device's DLA (or the PPU's softmax kernel) cannot run planned layer `l` at the
// precision of `options` — an SDP layer the quantized pipeline does not do (a Mul of two tensors,
// an Add of a broadcast constant, ...), a Softmax below FP16 — or "" when it can. The planner
// does not know the precision: quantize_network sends such a layer of one node to the PPU
// (--fallback ppu) before calibrating.
[[nodiscard]] std::string quantized_refusal(const models::graph::Graph& g, const PlannedLayer& l,
                                            const QuantOptions& options);

}  // namespace octasim::firmware::net
