#include "models/quant/grouping.hpp"

#include <stdexcept>

namespace octasim::models {

std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (const std::size_t d : shape) n *= d;
  return n;
}

GroupedTensor::GroupedTensor(const float* data, const std::vector<std::size_t>& shape,
                             const Grouping& grouping)
    : grouping_(grouping), base_(data) {
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
      std::size_t outer = 1;
      std::size_t inner = 1;
      for (int i = 0; i < axis_; ++i) outer *= shape[static_cast<std::size_t>(i)];
      for (int i = axis_ + 1; i < rank; ++i) inner *= shape[static_cast<std::size_t>(i)];
      const std::size_t channels = shape[static_cast<std::size_t>(axis_)];
      const std::size_t per_group = outer * inner;
      offsets_.resize(channels + 1);
      for (std::size_t c = 0; c <= channels; ++c) offsets_[c] = c * per_group;
      if (outer > 1 && n > 0) {
        owned_.resize(n);
        if (inner == 1) {
          for (std::size_t o = 0; o < outer; ++o) {
            const float* src = data + o * channels;
            for (std::size_t c = 0; c < channels; ++c) owned_[c * outer + o] = src[c];
          }
        } else {
          for (std::size_t o = 0; o < outer; ++o) {
            for (std::size_t c = 0; c < channels; ++c) {
              const float* src = data + (o * channels + c) * inner;
              float* dst = owned_.data() + c * per_group + o * inner;
              for (std::size_t i = 0; i < inner; ++i) dst[i] = src[i];
            }
          }
        }
        base_ = owned_.data();
      }
      break;
    }
  }
}

}  // namespace octasim::models
