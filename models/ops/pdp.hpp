// NVDLA's PDP (planar data processor): max / min / average pooling over kernels up to 8x8
// with strides up to 16, padding on each side and split-width mode, bit-exact with NVDLA's
// integer pipeline (INT8, INT16):
//
// - A window's input columns/rows are those of the padded plane it covers; padded positions
//   never enter max/min. For average, the padding enters as NVDLA's precomputed multiples:
//   per real row of the window PAD_VALUE_{L+R}X (L, R padded columns left/right of it), and
//   once PAD_VALUE_{T+B}X * kernel_width (T, B padded rows above/below). Software programs
//   PAD_VALUE_NX = N * pad, so the sum counts kernel_width*kernel_height - real elements pads.
// - The window sum is held in 16 bits (INT8) / 32 bits (INT16), wrapping.
// - average = round(round(sum * RECIP_KERNEL_WIDTH / 2^16) * RECIP_KERNEL_HEIGHT / 2^16),
//   each rounding half away from zero; the result keeps the output's low 8/16 bits.
// - Split width: each split is pooled as its own cube (first split: PAD_LEFT only, last:
//   PAD_RIGHT only, middle: none); a split after the first starts kernel_width - stride_width
//   columns before its partial input width and reads that many extra columns.
//
// Data in memory is NVDLA's feature format (format.rst); every lane of an atom is pooled and
// written, including lanes beyond the channel count (NVDLA pools whole atoms).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/ops/memory.hpp"

namespace octasim::models::ops {

enum class PdpMethod : std::uint8_t { kAverage = 0, kMax = 1, kMin = 2 };
enum class PdpPrecision : std::uint8_t { kInt8 = 0, kInt16 = 1 };

struct PdpConfig {
  PdpMethod method = PdpMethod::kMax;
  PdpPrecision precision = PdpPrecision::kInt8;
  unsigned kernel_width = 1, kernel_height = 1;                       // 1..8
  unsigned stride_width = 1, stride_height = 1;                       // 1..16
  unsigned pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;  // 0..7
  // PAD_VALUE_1X..7X decoded with pdp_pad_value: pad_value[n-1] is the value of n padded
  // positions.
  std::array<std::int32_t, 7> pad_value{};
  std::uint32_t recip_kernel_width = 1u << 16;   // D_RECIP_KERNEL_WIDTH, 1.0 = 2^16
  std::uint32_t recip_kernel_height = 1u << 16;  // D_RECIP_KERNEL_HEIGHT
};

[[nodiscard]] constexpr unsigned pdp_element_bytes(PdpPrecision p) {
  return p == PdpPrecision::kInt8 ? 1 : 2;
}

// D_POOLING_PADDING_VALUE_<n>_CFG (n = 1..7) as the average datapath adds it: the sign bit
// is bit 7, 8, 9, 9, 10, 10, 10 for n = 1..7 (INT8; INT16: 15, 16, 17, 17, 18, 18, 18); a set
// sign bit fills every bit above it, and the result keeps the accumulator's 16/32 bits.
[[nodiscard]] std::int32_t pdp_pad_value(std::uint32_t reg, unsigned n, PdpPrecision p);

// The input positions one window covers in one direction.
struct PdpSpan {
  int first = 0;                           // first real input index (meaningful when count > 0)
  unsigned count = 0;                      // real input positions in the window
  unsigned pad_before = 0, pad_after = 0;  // padded positions before / after them
};
// Window `out_index` of a direction with `in_size` inputs, kernel, stride and padding.
[[nodiscard]] PdpSpan pdp_window_span(unsigned out_index, unsigned kernel, unsigned stride,
                                      unsigned pad_before, unsigned in_size);

// The pooled value of one window of one channel. `first` points at the window's first real
// element; elements of a row are `col_stride` apart, rows `row_stride` apart; the window has
// `cols` x `rows` real elements, `pad_cols` padded columns per real row and `pad_rows` padded
// rows. Returns the output element (INT8 or INT16 value).
[[nodiscard]] std::int32_t pdp_pool_window(const PdpConfig& cfg, const std::int32_t* first,
                                           std::ptrdiff_t col_stride, std::ptrdiff_t row_stride,
                                           unsigned cols, unsigned rows, unsigned pad_cols,
                                           unsigned pad_rows);
// Average pooling's last step: the window sum (already including padding) to the output.
[[nodiscard]] std::int32_t pdp_average(const PdpConfig& cfg, std::int64_t sum);

// One split of a split-width layer (or the whole layer).
struct PdpSplit {
  std::int64_t in_col = 0;  // first input column read (may precede the split's partial width)
  unsigned in_width = 0;    // input columns pooled
  unsigned pad_left = 0, pad_right = 0;
  unsigned out_col = 0, out_width = 0;  // output columns written
};

// One PDP layer as its registers give it: what run_pdp_layer computes (firmware::PdpLayer is the
// user's description of a layer, and firmware::pdp_model_params translates it to this).
struct PdpLayerParams {
  PdpConfig cfg;
  unsigned in_width = 1, in_height = 1, channels = 1;
  unsigned out_width = 1, out_height = 1;
  // D_OPERATION_MODE_CFG.SPLIT_NUM (0: no split) and the partial widths (element counts, i.e.
  // register value + 1).
  unsigned split_num = 0;
  unsigned partial_in_first = 1, partial_in_mid = 1, partial_in_last = 1;
  unsigned partial_out_first = 1, partial_out_mid = 1, partial_out_last = 1;
  unsigned atom_bytes = 8;  // memory_atomic_size
  std::uint64_t src = 0, src_line_stride = 0, src_surface_stride = 0;
  std::uint64_t dst = 0, dst_line_stride = 0, dst_surface_stride = 0;
};

// The splits NVDLA walks for `layer` (one when split_num is 0).
[[nodiscard]] std::vector<PdpSplit> pdp_splits(const PdpLayerParams& layer);

struct PdpLayerResult {
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
};

// Throws std::runtime_error (one line) for programming NVDLA cannot pool (a window with no real
// input or reaching past the padding, kernel above 8, negative split widths, ...).
[[nodiscard]] PdpLayerResult run_pdp_layer(const PdpLayerParams& layer, Memory& mem);

}  // namespace octasim::models::ops
