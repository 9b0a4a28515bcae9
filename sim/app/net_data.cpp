#include "sim/app/net_data.hpp"

#include <cmath>

#include <fmt/core.h>

#include "firmware/onnx/onnx_import.hpp"
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

Tensor read_data_file(const std::string& path, std::size_t limit) {
  Tensor t;
  try {
    t = firmware::read_tensor(path);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  if (t.shape.empty()) throw UsageError(fmt::format("{}: a scalar is not a batch", path));
  return first_items(std::move(t), limit);
}

std::vector<std::int64_t> read_labels_file(const std::string& path, std::size_t count) {
  const Tensor t = read_data_file(path, count);
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
