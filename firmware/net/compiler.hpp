// The network compiler's front door: an ONNX file (or a Graph) to a NetProgram — import, graph
// passes (BatchNormalization folded into Conv, Identity/Dropout removed), planning into DLA
// layers, calibration on images (or a calibration table), lowering — and the NVDLA trace of one
// inference that `octasim compile` writes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "firmware/net/calibrate.hpp"
#include "firmware/net/placement.hpp"
#include "firmware/net/plan.hpp"
#include "firmware/net/program.hpp"
#include "firmware/net/quant.hpp"
#include "models/graph/graph.hpp"

namespace octasim {
struct HwConfig;
}

namespace octasim::firmware::net {

struct CompiledNetwork {
  models::graph::Graph graph;  // after the passes
  NetPlan plan;
  NetProgram program;
};

// The passes and the plan for `hw` (program still empty); `fallback`: what becomes of the nodes
// the DLA cannot run (plan.hpp).
[[nodiscard]] CompiledNetwork prepare_network(models::graph::Graph g, const HwConfig& hw,
                                              Fallback fallback = Fallback::kPpu);
// Calibrates (or takes `table`) and lowers a prepared network into net.program, then places its
// data in the CV-SRAM as `placement` allows (placement.hpp).
void quantize_network(CompiledNetwork& net, const HwConfig& hw,
                      const models::graph::Tensor& calibration_images, const QuantOptions& options,
                      const CalibrationTable* table = nullptr,
                      const PlacementOptions& placement = {});

// Both: applies the passes to `g` and compiles it for `hw`. `calibration_images`: a batch of the
// graph's input (first axis: images). `table`: clips to use instead of calibrating (may be
// null). Throws models::graph::GraphError (naming the node) or CalibrationError.
[[nodiscard]] CompiledNetwork compile_network(models::graph::Graph g, const HwConfig& hw,
                                              const models::graph::Tensor& calibration_images,
                                              const QuantOptions& options,
                                              const CalibrationTable* table = nullptr,
                                              const PlacementOptions& placement = {});

// `count` deterministic pseudo-random images (uniform in [0, 1), std::mt19937 seeded with
// `seed`) of the graph input's shape with the batch axis set to `count`.
[[nodiscard]] models::graph::Tensor random_images(const NetPlan& plan, std::size_t count,
                                                  unsigned seed = 20241124);

// `batch` reshaped to images of the network's input: its first axis is the image count and the
// remaining elements must match the input's per-image shape (a 28x28 IDX image batch becomes
// N x 1 x 28 x 28); integer elements become float. Throws GraphError otherwise.
[[nodiscard]] models::graph::Tensor as_input_batch(const NetPlan& plan,
                                                   const models::graph::Tensor& batch);

// Images [first, first + count) of a batch.
[[nodiscard]] models::graph::Tensor slice_batch(const models::graph::Tensor& batch,
                                                std::size_t first, std::size_t count);

struct NetTraceFiles {
  std::string trace;        // DIR/net.cfg
  std::string layer_map;    // DIR/layer_map.json
  std::string calibration;  // DIR/calibration.json
};

// Writes, into `dir` (created if needed), the NVDLA trace of one inference of image `index` of
// `images`: the constants and the input loaded, every layer programmed and awaited, each
// layer's output checked by CRC against the quantized reference executor (runtime.hpp), and the
// network outputs' codes checked by file; the layer map (hardware layer -> ONNX nodes, engine,
// surfaces, clip) and the calibration table beside it. Throws FirmwareError when a file cannot
// be written.
NetTraceFiles write_network_trace(const CompiledNetwork& net, const models::graph::Tensor& images,
                                  std::size_t index, const std::string& dir);

}  // namespace octasim::firmware::net
