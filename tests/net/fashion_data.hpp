// The Fashion-MNIST files for the network tests, read with models/io/idx_file.hpp. Images come
// back as float32 raw pixel values 0..255, N x 28 x 28 — what the committed model takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "models/graph/graph.hpp"
#include "models/io/idx_file.hpp"

namespace octasim::nettest {

// Where Debian's dataset-fashion-mnist installs the files (compile definition), or "".
inline std::string fashion_mnist_dir() {
#ifdef OCTASIM_FASHION_MNIST_DIR
  return OCTASIM_FASHION_MNIST_DIR;
#else
  return "";
#endif
}

// True when all four files are there.
inline bool have_fashion_mnist() {
  const std::string d = fashion_mnist_dir();
  if (d.empty()) return false;
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    if (!std::filesystem::exists(std::filesystem::path(d) / f)) return false;
  }
  return true;
}

// The first `count` images of "train" or "t10k" as float32 N x 28 x 28 pixel values 0..255.
inline models::graph::Tensor fashion_images(const std::string& set, std::size_t count) {
  const models::IdxArray a =
      models::read_idx(fashion_mnist_dir() + "/" + set + "-images-idx3-ubyte.gz", count);
  std::vector<std::int64_t> shape(a.shape.begin(), a.shape.end());
  return models::graph::Tensor::floats(std::move(shape), a.as_floats());
}

inline std::vector<int> fashion_labels(const std::string& set, std::size_t count) {
  const models::IdxArray a =
      models::read_idx(fashion_mnist_dir() + "/" + set + "-labels-idx1-ubyte.gz", count);
  return std::vector<int>(a.ints.begin(), a.ints.end());
}

}  // namespace octasim::nettest
