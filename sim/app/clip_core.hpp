// What `octasim clip` computes, apart from reading the file and printing: the clipping scalar
// of every group of a tensor and the MSE each reaches beside max-scaling's. The CLI and the
// Python module (python/octasim/_core.cpp) both call compute_clips, so they agree exactly.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "models/quant/calibrators.hpp"
#include "sim/app/commands.hpp"

namespace octasim::app {

struct ClipRow {
  std::size_t elements = 0;
  models::ClipResult result;
  double mse = 0.0;      // with the method's clipping scalar
  double mse_max = 0.0;  // with max-scaling
};

struct ClipComputation {
  std::string grouping_text;  // "per tensor", "per channel, axis 0", ...
  std::vector<ClipRow> rows;  // one per group, in models::GroupedTensor's order
  double total_mse = 0.0;     // over all elements
  double total_mse_max = 0.0;
  bool iterative = false;  // OCTAV: iterations and convergence mean something
};

// The options CLI11 checks on the command line (bits, method, vector size, tolerance, ...),
// checked again for callers that do not parse a command line. Throws UsageError.
void check_clip_options(const ClipOptions& opts);

// Clips of `values` (C order, `shape`) by opts' method and grouping. `name` names the tensor in
// errors (UsageError: an empty tensor, a non-finite element with its index, an axis outside
// the shape, a bad --init). `dtype` only words the non-finite message.
[[nodiscard]] ClipComputation compute_clips(const ClipOptions& opts, const std::string& name,
                                            const std::vector<float>& values,
                                            const std::vector<std::size_t>& shape,
                                            const std::string& dtype);

// "[2, 3]"
[[nodiscard]] std::string shape_text(const std::vector<std::size_t>& shape);

}  // namespace octasim::app
