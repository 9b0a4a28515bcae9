#include "models/quant/grouping.hpp"

#include <algorithm>
#include <stdexcept>

namespace octasim::models {

std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (const std::size_t d : shape) n *= d;
  return n;
}

GroupedTensor::GroupedTensor(const float* data, const std::vector<std::size_t>& shape,
                             const Grouping& grouping)
    : grouping_(grouping), data_(data), base_(data) {
  const std::size_t n = element_count(shape);
  const int rank = static_cast<int>(shape.size());
  switch (grouping.kind) {
    case GroupKind::kTensor:
      offsets_ = {0, n};
      break;
    case GroupKind::kVector: {
      if (grouping.vector_size == 0) throw std::invalid_argument("vector size must be >= 1");
      const std::size_t run = rank == 0 ? 1 : shape.back();
      const std::size_t runs = run == 0 ? 0 : n / run;
      offsets_.push_back(0);
      for (std::size_t r = 0; r < runs; ++r) {
        for (std::size_t b = grouping.vector_size; b < run; b += grouping.vector_size) {
          offsets_.push_back(r * run + b);
        }
        offsets_.push_back((r + 1) * run);
      }
      break;
    }
    case GroupKind::kChannel: {
      axis_ = grouping.axis < 0 ? grouping.axis + rank : grouping.axis;
      if (rank == 0 || axis_ < 0 || axis_ >= rank) {
        throw std::invalid_argument("channel axis " + std::to_string(grouping.axis) +
                                    " is outside a tensor of rank " + std::to_string(rank));
      }
      for (int i = 0; i < axis_; ++i) outer_ *= shape[static_cast<std::size_t>(i)];
      for (int i = axis_ + 1; i < rank; ++i) inner_ *= shape[static_cast<std::size_t>(i)];
      channels_ = shape[static_cast<std::size_t>(axis_)];
      const std::size_t per_group = outer_ * inner_;
      offsets_.resize(channels_ + 1);
      for (std::size_t c = 0; c <= channels_; ++c) offsets_[c] = c * per_group;
      if (outer_ > 1 && n > 0) {
        base_ = nullptr;  // group-major copy made on first use
        if (inner_ == 1) columns_ = {data, outer_, channels_};
      }
      break;
    }
  }
}

void GroupedTensor::materialize() const {
  const std::size_t n = offsets_.back();
  const std::size_t per_group = outer_ * inner_;
  owned_.resize(n);
  if (inner_ == 1) {
    // A transpose of [outer, channels], in tiles so that reads and writes both stay within a
    // few cache lines per channel.
    constexpr std::size_t kTile = 32;
    for (std::size_t o0 = 0; o0 < outer_; o0 += kTile) {
      const std::size_t o1 = std::min(outer_, o0 + kTile);
      for (std::size_t c0 = 0; c0 < channels_; c0 += kTile) {
        const std::size_t c1 = std::min(channels_, c0 + kTile);
        for (std::size_t c = c0; c < c1; ++c) {
          float* dst = owned_.data() + c * outer_;
          for (std::size_t o = o0; o < o1; ++o) dst[o] = data_[o * channels_ + c];
        }
      }
    }
  } else {
    for (std::size_t o = 0; o < outer_; ++o) {
      for (std::size_t c = 0; c < channels_; ++c) {
        const float* src = data_ + (o * channels_ + c) * inner_;
        std::copy(src, src + inner_, owned_.data() + c * per_group + o * inner_);
      }
    }
  }
  base_ = owned_.data();
}

}  // namespace octasim::models
