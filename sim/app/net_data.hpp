// Data files for `octasim net` and `octasim compile`: image batches and labels as NumPy .npy,
// ONNX TensorProto .pb or IDX (the MNIST format, optionally gzip-compressed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/graph/graph.hpp"

namespace octasim::app {

// A batch (first axis: items), at most `limit` items (0: all). Throws UsageError (one line
// naming the file) when the file cannot be read.
[[nodiscard]] models::graph::Tensor read_data_file(const std::string& path, std::size_t limit);
// The first `count` labels (integers) of a file; fewer is an error.
[[nodiscard]] std::vector<std::int64_t> read_labels_file(const std::string& path,
                                                         std::size_t count);

}  // namespace octasim::app
