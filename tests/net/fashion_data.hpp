// The Fashion-MNIST files for the network tests: a small reader of gzip-compressed IDX files
// (big-endian magic 0x0803 for images, 0x0801 for labels, then the dimensions), written here
// with zlib so that the tests depend on nothing under test. Images come back as float32 raw
// pixel values 0..255, N x 28 x 28 — what the committed model takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <zlib.h>

#include "models/graph/graph.hpp"

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

// The first `limit` items of an IDX file: their bytes and the per-item dimensions.
struct IdxItems {
  std::vector<std::uint8_t> bytes;
  std::vector<std::int64_t> item_shape;
  std::size_t count = 0;
};

inline IdxItems read_idx_gz(const std::string& path, std::size_t limit) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error(path + ": cannot open");
  const auto read = [&](void* dst, std::size_t n) {
    if (gzread(f, dst, static_cast<unsigned>(n)) != static_cast<int>(n)) {
      gzclose(f);
      throw std::runtime_error(path + ": truncated IDX file");
    }
  };
  const auto be32 = [&]() {
    unsigned char b[4];
    read(b, 4);
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
           std::uint32_t{b[3]};
  };
  const std::uint32_t magic = be32();
  if ((magic >> 8) != 0x08 || (magic & 0xff) == 0 || (magic & 0xff) > 3) {
    gzclose(f);
    throw std::runtime_error(path + ": not an unsigned-byte IDX file");
  }
  const std::uint32_t dims = magic & 0xff;
  const std::size_t total = be32();
  IdxItems items;
  std::size_t per = 1;
  for (std::uint32_t d = 1; d < dims; ++d) {
    items.item_shape.push_back(be32());
    per *= static_cast<std::size_t>(items.item_shape.back());
  }
  items.count = limit < total ? limit : total;
  items.bytes.resize(items.count * per);
  read(items.bytes.data(), items.bytes.size());
  gzclose(f);
  return items;
}

// The first `count` images of "train" or "t10k" as float32 N x 28 x 28 pixel values 0..255.
inline models::graph::Tensor fashion_images(const std::string& set, std::size_t count) {
  const IdxItems it = read_idx_gz(fashion_mnist_dir() + "/" + set + "-images-idx3-ubyte.gz", count);
  std::vector<std::int64_t> shape{static_cast<std::int64_t>(it.count)};
  shape.insert(shape.end(), it.item_shape.begin(), it.item_shape.end());
  return models::graph::Tensor::floats(std::move(shape),
                                       std::vector<float>(it.bytes.begin(), it.bytes.end()));
}

inline std::vector<int> fashion_labels(const std::string& set, std::size_t count) {
  const IdxItems it = read_idx_gz(fashion_mnist_dir() + "/" + set + "-labels-idx1-ubyte.gz", count);
  return std::vector<int>(it.bytes.begin(), it.bytes.end());
}

}  // namespace octasim::nettest
