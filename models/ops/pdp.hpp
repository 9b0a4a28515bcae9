// NVDLA's PDP (planar data processor): max / min / average pooling over kernels up to 8x8
// with strides up to 16, padding on each side and split-width mode, bit-exact with NVDLA's
// integer pipeline (INT8, INT16), and FP16 in a defined order (below):
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
// FP16 (D_DATA_FORMAT = FP16; elements are FP16 bit patterns). What NVDLA does (precision.rst
// "PDP convertors", hwarch.rst D_RECIP_KERNEL_*, NVDLA's C model cmod/pdp + its HLS float
// library): max/min compare FP16 values directly; average converts every element to "FP17"
// (1 sign, 6 exponent bits with bias 31, 10 mantissa bits; no subnormals, no infinity: an FP16
// infinity becomes the largest finite FP17 number (2 - 2^-10) * 2^31), adds the elements of a
// row left to right and then the rows top to bottom in FP17 with a round-to-nearest-even after
// every add, multiplies by RECIP_KERNEL_WIDTH and then RECIP_KERNEL_HEIGHT (both FP17 numbers,
// "the actual value" 1/kernel) rounding each product, and converts to FP16 (subnormals rounded
// to nearest even; anything at or above 2^16 becomes 65504: NVDLA saturates, it never writes an
// infinity from average). The padding values are ignored (precision.rst: "for FP16 pipe,
// they're ignored"): padded positions add 0, while the reciprocals still divide by the whole
// kernel. NVDLA's own FP16 golden rule for PDP is not bit-exactness but
// (|a-b| <= 0.0001) && (|a-b| / max_value <= 0.001) (models/precision/thresholds.hpp check_pdp).
//
// octasim's defined FP16 order, inside that rule:
// - max/min: exactly NVDLA's comparison (-0 < +0; infinities order as numbers), so the result is
//   one of the window's elements and carries no error at all;
// - average: the window's elements are summed exactly (every FP16 number is an integer multiple
//   of 2^-24, and an infinity's FP17 stand-in of 2^-24 too, so a 128-bit fixed-point sum holds
//   any window), multiplied exactly by the decoded FP17 RECIP_KERNEL_WIDTH and
//   RECIP_KERNEL_HEIGHT, and rounded once to FP16, to nearest even, saturating at +-65504 like
//   NVDLA. Why: NVDLA's FP17 adds carry 11 significant bits, so its sum of a window is not
//   defined by anything but its exact hardware order; with one rounding the result does not
//   depend on any order (the functional and cycle-level devices, splits and flying input agree
//   bit for bit), and the only differences from the exact average are the reciprocals' FP17
//   rounding (1/k for k = 1..8 rounds to FP17 with a relative error of 0 or 2^-12) and the one
//   final rounding: the result is the correctly rounded average or one FP16 step beside it,
//   while NVDLA's rounded adds stray further. check_pdp admits it for averages below 2^-4 in
//   magnitude (there one FP16 step is at most 2^-15 + the 1e-3 relative part); larger values
//   fail NVDLA's absolute 1e-4 bound whatever the order, NVDLA's own included. A zero average
//   is +0.
// - NaN: the output is NaN whenever a window element is NaN (average and max/min alike), with
//   the bit pattern NVDLA's propagation picks: within a row the first NaN from the left, across
//   rows the NaN of the lowest row that has one (NVDLA's height stage keeps the incoming row's
//   NaN over the accumulated one). D_NAN_FLUSH_TO_ZERO turns every input NaN into +0 first.
// - Statistics: D_NAN_INPUT_NUM / D_INF_INPUT_NUM count every element of every atom PDP_RDMA
//   reads from memory (padding lanes included, a split's overlap columns once per read; nothing
//   on the fly), before any flush; D_NAN_OUTPUT_NUM every element of every atom written.
//
// Data in memory is NVDLA's feature format (format.rst); every lane of an atom is pooled and
// written, including lanes beyond the channel count (NVDLA pools whole atoms).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/numerics/int_range.hpp"
#include "models/ops/memory.hpp"

namespace octasim::models::ops {

enum class PdpMethod : std::uint8_t { kAverage = 0, kMax = 1, kMin = 2 };
// D_DATA_FORMAT.INPUT_DATA's encoding.
enum class PdpPrecision : std::uint8_t { kInt8 = 0, kInt16 = 1, kFp16 = 2 };

struct PdpConfig {
  PdpMethod method = PdpMethod::kMax;
  PdpPrecision precision = PdpPrecision::kInt8;
  unsigned kernel_width = 1, kernel_height = 1;                       // 1..8
  unsigned stride_width = 1, stride_height = 1;                       // 1..16
  unsigned pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;  // 0..7
  // PAD_VALUE_1X..7X decoded with pdp_pad_value: pad_value[n-1] is the value of n padded
  // positions.
  std::array<std::int32_t, 7> pad_value{};
  // D_RECIP_KERNEL_WIDTH / _HEIGHT: INT8/INT16 1.0 = 2^16; FP16 an FP17 number (pdp_fp17_*).
  std::uint32_t recip_kernel_width = 1u << 16;
  std::uint32_t recip_kernel_height = 1u << 16;
  bool nan_to_zero = false;  // D_NAN_FLUSH_TO_ZERO (FP16): input NaNs become +0
};

// NVDLA's FP17 (1 sign, 6 exponent bits biased by 31, 10 mantissa bits) in the low 17 bits:
// the value of a pattern (exponent 0 is zero whatever the mantissa: FP17 has no subnormals;
// exponent 63 is infinity, or NaN with a non-zero mantissa), and the FP17 number nearest `x`
// (round to nearest even; below 2^-30 in magnitude 0, beyond the largest finite number
// (2 - 2^-10) * 2^31 that number, as NVDLA saturates; NaN 0x1fe00).
[[nodiscard]] double pdp_fp17_value(std::uint32_t bits);
[[nodiscard]] std::uint32_t pdp_fp17_from_double(double x);
// D_RECIP_KERNEL_* for an FP16 layer: 1/kernel as FP17 (1/3 = 0x7555).
[[nodiscard]] std::uint32_t pdp_fp16_recip(unsigned kernel);

// Bytes of one element in memory (INT8 1, INT16 and FP16 2).
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
// rows. Returns the output element (INT8 or INT16 value; FP16: its bit pattern, the elements
// being FP16 bit patterns too, and padding is ignored).
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

// The FP16 average of the exact sum `sum` * 2^-24 (an integer multiple of 2^-24; FP17 stand-ins
// for infinities included): sum * recip width * recip height rounded once to FP16 (nearest
// even, +-65504 at most). Throws for a reciprocal that is NaN or infinite.
[[nodiscard]] std::uint16_t pdp_average_fp16(const PdpConfig& cfg, int128_t sum);

struct PdpLayerResult {
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  // FP16 statistics (0 for INT8/INT16): D_NAN_INPUT_NUM, D_INF_INPUT_NUM, D_NAN_OUTPUT_NUM.
  std::uint32_t nan_input = 0, inf_input = 0, nan_output = 0;
};

// Throws std::runtime_error (one line) for programming NVDLA cannot pool (a window with no real
// input or reaching past the padding, kernel above 8, negative split widths, ...).
[[nodiscard]] PdpLayerResult run_pdp_layer(const PdpLayerParams& layer, Memory& mem);

}  // namespace octasim::models::ops
