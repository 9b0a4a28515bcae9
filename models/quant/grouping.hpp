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
// other than the first copies the elements into group-major order the first time a group's
// data are asked for (OCTAV reads a last-axis grouping in place, as columns, without the copy).
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

// A [rows, columns] row-major matrix whose columns are the groups.
struct ColumnView {
  const float* data = nullptr;
  std::size_t rows = 0;
  std::size_t columns = 0;
};

class GroupedTensor {
 public:
  // `data` must outlive this object (it is viewed, not copied, where possible). Throws
  // std::invalid_argument for an axis outside the shape or a vector size of 0.
  GroupedTensor(const float* data, const std::vector<std::size_t>& shape, const Grouping& grouping);

  [[nodiscard]] std::size_t group_count() const { return offsets_.size() - 1; }
  // Group g's elements in C order, contiguous (copied into group-major order on first use
  // when the grouping needs it).
  [[nodiscard]] const float* group_data(std::size_t g) const {
    if (base_ == nullptr) materialize();
    return base_ + offsets_[g];
  }
  // Set when the groups are the columns of a row-major matrix (per channel on the last axis,
  // more than one row): the data as they lie, without a copy.
  [[nodiscard]] bool has_columns() const { return columns_.data != nullptr; }
  [[nodiscard]] const ColumnView& columns() const { return columns_; }
  [[nodiscard]] std::size_t group_size(std::size_t g) const {
    return offsets_[g + 1] - offsets_[g];
  }
  [[nodiscard]] std::size_t size() const { return offsets_.back(); }
  [[nodiscard]] const Grouping& grouping() const { return grouping_; }
  // The axis a per-channel grouping resolved to (0..rank-1).
  [[nodiscard]] int resolved_axis() const { return axis_; }

 private:
  void materialize() const;

  Grouping grouping_;
  int axis_ = 0;
  const float* data_ = nullptr;
  std::size_t outer_ = 1;  // per channel: the tensor as [outer, channels, inner]
  std::size_t channels_ = 1;
  std::size_t inner_ = 1;
  ColumnView columns_;
  mutable const float* base_ = nullptr;  // null until the group-major copy exists
  mutable std::vector<float> owned_;
  std::vector<std::size_t> offsets_;
};

}  // namespace octasim::models
