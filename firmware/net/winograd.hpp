// Accuracy-aware Winograd (--winograd auto): what the convolution core's F(2x2, 3x3) mode costs
// in accuracy, measured per layer before the compiler chooses it. At INT8 the transformed weights
// 4U = (2G) g (2G)^T are quantized per output channel on a range up to 9x wider than g's, and PRA
// truncates the transformed input (up to 2 bits for 8-bit codes): both coarsen the layer's sums.
// For every layer winograd.cpp could run in Winograd mode, measure_winograd runs the layer on the
// calibration images' codes both ways with the device's arithmetic (models::ops::run_conv_int and
// run_conv_winograd, the same weights quantizers as the lowering) and compares each result,
// dequantized with its bias, with the FP32 reference executor's output of the Conv node: the
// relative L2 errors e_direct and e_winograd. The layer keeps Winograd mode only when
//   e_winograd <= (1 + budget) e_direct
// (budget QuantOptions::winograd_budget, 10% by default); the output's requantization is the same
// in both modes and left out. A layer with no calibration entry for its input is not measured
// and stays direct. Dense-expanded grouped convolutions (depthwise) never use Winograd.
#pragma once

#include <map>
#include <string>

#include "firmware/net/plan.hpp"
#include "firmware/net/quant.hpp"
#include "models/graph/graph.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::firmware::net {

// The measurements (by the layer's output tensor) on at most `max_images` images of `images` (a
// batch in the network's input shape).
[[nodiscard]] std::map<std::string, WinogradMeasure> measure_winograd(
    const models::graph::Graph& g, const NetPlan& plan, const CalibrationTable& table,
    const models::graph::Tensor& images, const QuantOptions& options, const HwConfig& hw,
    std::size_t max_images = 2);

}  // namespace octasim::firmware::net
