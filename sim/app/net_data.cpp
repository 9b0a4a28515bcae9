#include "sim/app/net_data.hpp"

#include <cmath>

#include <fmt/core.h>

#include "firmware/onnx/onnx_import.hpp"
#include "models/io/idx_file.hpp"
#include "models/io/tensor_file.hpp"
#include "sim/app/commands.hpp"

namespace octasim::app {

using models::graph::Tensor;

namespace {

Tensor first_items(Tensor t, std::size_t limit) {
  if (limit == 0 || t.shape.empty() || static_cast<std::size_t>(t.shape[0]) <= limit) return t;
  const std::size_t per = t.elements() / static_cast<std::size_t>(t.shape[0]);
  t.shape[0] = static_cast<std::int64_t>(limit);
  if (!t.f.empty()) t.f.resize(limit * per);
  if (!t.i.empty()) t.i.resize(limit * per);
  return t;
}

}  // namespace

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// IDX by name (MNIST's "-idx3-ubyte", ".idx", optionally ".gz"), .npy (integers allowed), else an
// ONNX TensorProto.
Tensor read_any(const std::string& path, std::size_t limit) {
  const std::string base = ends_with(path, ".gz") ? path.substr(0, path.size() - 3) : path;
  if (base.find("-idx") != std::string::npos || ends_with(base, ".idx")) {
    const models::IdxArray a = models::read_idx(path, limit == 0 ? models::kIdxAllItems : limit);
    std::vector<std::int64_t> shape(a.shape.begin(), a.shape.end());
    return Tensor::floats(std::move(shape), a.as_floats());
  }
  if (ends_with(path, ".npy")) {
    models::Tensor npy = models::read_npy(path, true);
    std::vector<std::int64_t> shape(npy.shape.begin(), npy.shape.end());
    return Tensor::floats(std::move(shape), std::move(npy.values));
  }
  return firmware::read_tensor(path);
}

}  // namespace

Tensor read_data_file(const std::string& path, std::size_t limit) {
  Tensor t;
  try {
    t = read_any(path, limit);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  if (t.shape.empty()) throw UsageError(fmt::format("{}: a scalar is not a batch", path));
  return first_items(std::move(t), limit);
}

std::vector<std::int64_t> read_labels_file(const std::string& path, std::size_t count) {
  const Tensor t = read_data_file(path, count);
  const bool one_per_item = t.shape.size() == 1 || (t.shape.size() == 2 && t.shape[1] == 1);
  if (!one_per_item) {
    throw UsageError(
        fmt::format("{}: labels of shape {}: expected one class index per image "
                    "(shape N or N x 1)",
                    path, models::graph::shape_string(t.shape)));
  }
  if (t.elements() < count) {
    throw UsageError(fmt::format("{}: {} labels for {} images", path, t.elements(), count));
  }
  std::vector<std::int64_t> labels(count);
  for (std::size_t k = 0; k < count; ++k) {
    const double v = t.at(k);
    if (v != std::floor(v) || v < 0) {
      throw UsageError(fmt::format("{}: label {} is {}, not a class index", path, k, v));
    }
    labels[k] = static_cast<std::int64_t>(v);
  }
  return labels;
}

}  // namespace octasim::app
