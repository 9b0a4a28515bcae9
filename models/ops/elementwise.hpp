// FP32 element-wise and row-reduction kernels as the PPU runs them (the golden of its
// kElementwise / kReduce kernels): one FP32 operation per element, row sums accumulated in FP32
// over the columns in ascending order from +0.
#pragma once

#include <cstddef>
#include <cstdint>

namespace octasim::models::ops {

enum class ElementwiseOp : std::uint32_t { kAdd = 0, kMul = 1, kRelu = 2 };

// D = op(a, b); relu ignores b (max(a, 0); NaN stays NaN, -0 becomes +0).
[[nodiscard]] inline float elementwise(ElementwiseOp op, float a, float b) {
  switch (op) {
    case ElementwiseOp::kAdd:
      return a + b;
    case ElementwiseOp::kMul:
      return a * b;
    case ElementwiseOp::kRelu:
      return a > 0.0f || a != a ? a : 0.0f;
  }
  return a;
}

// Sum of row[0..cols) in FP32, ascending, from +0 (one rounding per add).
[[nodiscard]] inline float reduce_row_sum(const float* row, std::size_t cols) {
  float acc = 0.0f;
  for (std::size_t c = 0; c < cols; ++c) acc = acc + row[c];
  return acc;
}

}  // namespace octasim::models::ops
