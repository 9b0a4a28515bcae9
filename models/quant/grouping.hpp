// How a tensor is split into the groups that each get their own clipping scalar.
//
// A tensor is a C-order (row-major) array with a shape. Groups:
// - per tensor: one group, all elements;
// - per channel, axis a: group c holds every element whose index along axis a is c, in C
//   order (for weights [K, C, R, S], axis 0 is per output channel); a < 0 counts from the end;
// - per vector of N: each run of the last axis is cut into blocks of N consecutive elements
//   (the last block of a run is shorter when N does not divide it); groups are numbered in
//   C order of (run, block).
// Groups that are contiguous in memory are viewed in place; per-channel grouping on an axis
// other than the first copies the elements once into group-major order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace octasim::models {

enum class GroupKind : std::uint8_t { kTensor, kChannel, kVector };

struct Grouping {
  GroupKind kind = GroupKind::kTensor;
  int axis = 0;                 // kChannel
  std::size_t vector_size = 0;  // kVector

  [[nodiscard]] static Grouping per_tensor() { return {}; }
  [[nodiscard]] static Grouping per_channel(int axis) { return {GroupKind::kChannel, axis, 0}; }
  [[nodiscard]] static Grouping per_vector(std::size_t n) { return {GroupKind::kVector, 0, n}; }
};

[[nodiscard]] std::size_t element_count(const std::vector<std::size_t>& shape);

class GroupedTensor {
 public:
  // `data` must outlive this object (it is viewed, not copied, where possible). Throws
  // std::invalid_argument for an axis outside the shape or a vector size of 0.
  GroupedTensor(const float* data, const std::vector<std::size_t>& shape, const Grouping& grouping);

  [[nodiscard]] std::size_t group_count() const { return offsets_.size() - 1; }
  [[nodiscard]] const float* group_data(std::size_t g) const { return base_ + offsets_[g]; }
  [[nodiscard]] std::size_t group_size(std::size_t g) const {
    return offsets_[g + 1] - offsets_[g];
  }
  [[nodiscard]] std::size_t size() const { return offsets_.back(); }
  [[nodiscard]] const Grouping& grouping() const { return grouping_; }
  // The axis a per-channel grouping resolved to (0..rank-1).
  [[nodiscard]] int resolved_axis() const { return axis_; }

 private:
  Grouping grouping_;
  int axis_ = 0;
  const float* base_ = nullptr;
  std::vector<float> owned_;
  std::vector<std::size_t> offsets_;
};

}  // namespace octasim::models
