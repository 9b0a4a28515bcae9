// `octasim net --expect Y0.npy [Y1.npy ...]`: the device's outputs against expected outputs from
// elsewhere (the framework the model was exported from: PyTorch, ONNX Runtime), one file per
// graph output, first axis the images. Per output: the relative L2 error ||d - e|| / ||e|| over
// every image and the largest absolute error; `--max-rel-error B` makes an output above B a
// failure (exit status 1).
#pragma once

#include <string>
#include <vector>

#include "models/graph/graph.hpp"

namespace octasim::app {

struct ExpectedComparison {
  std::string output;  // the graph output's name
  std::string file;
  double rel_l2 = 0.0;
  double max_abs = 0.0;
  bool within = true;  // rel_l2 <= the bound (or no bound)
};

// `device[i][k]`: output k of image i, dequantized. Reads the files (UsageError naming a file
// that cannot be read or whose element count is not images x the output's elements), prints one
// line per output and returns the comparisons. `max_rel_error` < 0: no bound.
std::vector<ExpectedComparison> compare_expected(
    const std::vector<std::string>& files, const std::vector<std::string>& output_names,
    const std::vector<std::vector<models::graph::Tensor>>& device, double max_rel_error);

}  // namespace octasim::app
