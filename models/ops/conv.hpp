// NVDLA's convolution core as a functional model: direct convolution as CDMA -> CSC -> CMAC ->
// CACC compute it, bit-exact for INT8/INT16.
//
// - Input: the cube the CSC sees (ConvCube), read by CDMA from a feature surface in memory
//   (format.rst: 1x1xC' atoms, C' = memory atom / bytes per element, lines `line_stride`
//   apart, surfaces `surface_stride` apart) or converted from an image (conv_image.hpp).
// - Weights: NVDLA's uncompressed direct-convolution format (format.rst "Basic Weight for
//   Direct Convolution"): kernels in groups of atomic-K (INT8) or atomic-K/2 (INT16/FP16), the
//   last group smaller; inside a group 1x1xC' cubes (C' = atomic-C elements, the last channel
//   block not padded) scanned C' -> K -> W -> H -> C; groups packed back to back.
// - Positions outside the input (zero padding) take PADDING_VALUE as the data value the CMAC
//   multiplies: its low 8 bits sign-extended for INT8 (NVDLA's dc traces require it), all 16
//   for INT16.
// - Products are exact; CACC accumulates every (kernel position, channel) partial sum of an
//   output element in a 48-bit saturating accumulator (NVDLA's assembly buffer), then
//   CLIP_TRUNCATE: round half away from zero right shift, saturated to INT32, each saturated
//   element counted (D_OUT_SATURATION).
// - Output elements of kernels beyond the kernel count inside the last atom (the padding lanes
//   of the output surface) are 0: the CMAC cells without a kernel hold zero weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/ops/memory.hpp"

namespace octasim::models::ops {

enum class ConvPrecision : std::uint8_t { kInt8 = 0, kInt16 = 1, kFp16 = 2 };

[[nodiscard]] constexpr unsigned conv_element_bytes(ConvPrecision p) {
  return p == ConvPrecision::kInt8 ? 1 : 2;
}

// A W x H x C cube of values, channel-planar: element (x, y, c) at (c * height + y) * width + x.
// INT8/INT16 values are held sign-extended; FP16 values as their bit patterns.
struct ConvCube {
  std::uint32_t width = 0, height = 0, channels = 0;
  std::vector<std::int32_t> data;

  ConvCube() = default;
  ConvCube(std::uint32_t w, std::uint32_t h, std::uint32_t c)
      : width(w), height(h), channels(c), data(std::size_t{w} * h * c, 0) {}
  [[nodiscard]] std::size_t index(std::uint32_t x, std::uint32_t y, std::uint32_t c) const {
    return (std::size_t{c} * height + y) * width + x;
  }
  [[nodiscard]] std::int32_t at(std::uint32_t x, std::uint32_t y, std::uint32_t c) const {
    return data[index(x, y, c)];
  }
  std::int32_t& at(std::uint32_t x, std::uint32_t y, std::uint32_t c) {
    return data[index(x, y, c)];
  }
};

// A feature surface in memory (NVDLA feature format).
struct ConvFeatureSurface {
  std::uint64_t base = 0;
  std::uint32_t line_stride = 0, surface_stride = 0;
  std::uint32_t width = 0, height = 0, channels = 0;
  unsigned atom_bytes = 8;  // the configuration's memory atom
};

// Reads a feature surface into a cube (values sign-extended from the precision's width).
[[nodiscard]] ConvCube read_feature_cube(const ConvFeatureSurface& s, ConvPrecision p,
                                         const Memory& mem);

// Writes a cube as a feature surface (the inverse of read_feature_cube; padding lanes of the
// last atom are written as 0). Used by firmware and tests to lay out inputs.
void write_feature_cube(const ConvCube& cube, const ConvFeatureSurface& s, ConvPrecision p,
                        Memory& mem);

// Kernel weights, kernel-major: weight (k, r, s, c) [r = row 0..kernel_height-1, s = column]
// at ((k * kernel_height + r) * kernel_width + s) * channels + c.
struct ConvWeights {
  std::uint32_t kernels = 0, kernel_height = 0, kernel_width = 0, channels = 0;
  std::vector<std::int32_t> data;

  ConvWeights() = default;
  ConvWeights(std::uint32_t k, std::uint32_t r, std::uint32_t s, std::uint32_t c)
      : kernels(k),
        kernel_height(r),
        kernel_width(s),
        channels(c),
        data(std::size_t{k} * r * s * c, 0) {}
  [[nodiscard]] std::size_t index(std::uint32_t k, std::uint32_t r, std::uint32_t s,
                                  std::uint32_t c) const {
    return ((std::size_t{k} * kernel_height + r) * kernel_width + s) * channels + c;
  }
  [[nodiscard]] std::int32_t at(std::uint32_t k, std::uint32_t r, std::uint32_t s,
                                std::uint32_t c) const {
    return data[index(k, r, s, c)];
  }
  std::int32_t& at(std::uint32_t k, std::uint32_t r, std::uint32_t s, std::uint32_t c) {
    return data[index(k, r, s, c)];
  }
};

// NVDLA's weight grouping for a configuration and precision.
struct ConvWeightLayout {
  unsigned atomic_c = 8;  // channel block (elements) of a small cube
  unsigned atomic_k = 8;  // MAC array kernels at INT8; a group holds atomic_k (INT8) or half
  ConvPrecision precision = ConvPrecision::kInt8;

  [[nodiscard]] unsigned group_kernels() const {
    return precision == ConvPrecision::kInt8 ? atomic_k : atomic_k / 2;
  }
  // Byte offset of weight (k, r, s, c) in the packed direct-convolution format.
  [[nodiscard]] std::uint64_t offset(const ConvWeights& w, std::uint32_t k, std::uint32_t r,
                                     std::uint32_t s, std::uint32_t c) const;
  // Packed size in bytes before the 128-byte alignment padding.
  [[nodiscard]] std::uint64_t bytes(const ConvWeights& w) const;
};

[[nodiscard]] ConvWeights read_weights(std::uint64_t base, std::uint32_t kernels,
                                       std::uint32_t kernel_height, std::uint32_t kernel_width,
                                       std::uint32_t channels, const ConvWeightLayout& layout,
                                       const Memory& mem);
// Packs `w` into memory at `base` (firmware, tests); returns the bytes written, padded with
// zeros to a multiple of 128.
std::uint64_t write_weights(const ConvWeights& w, std::uint64_t base,
                            const ConvWeightLayout& layout, Memory& mem);

struct ConvParams {
  ConvPrecision precision = ConvPrecision::kInt8;
  std::uint32_t stride_x = 1, stride_y = 1;
  std::uint32_t dilation_x = 1, dilation_y = 1;
  std::uint32_t pad_left = 0, pad_top = 0;
  std::uint32_t out_width = 1, out_height = 1;  // as programmed (determines right/bottom pad)
  std::int32_t pad_value = 0;                   // sign-extended PADDING_VALUE
  unsigned clip_truncate = 0;                   // CACC CLIP_TRUNCATE (0..31)
};

struct ConvResult {
  // out_width x out_height x (kernels rounded up to the output atom) INT32 values, in the
  // order CACC delivers them to SDP; lanes beyond the kernel count are 0.
  ConvCube out;
  std::uint32_t saturated = 0;  // CACC D_OUT_SATURATION
  std::uint64_t macs = 0;       // useful multiply-accumulates (kernel positions inside the input
                                // and padding both count: the MAC array computes them)
};

// Output width of a direct convolution: (in + pad_left + pad_right - dilated kernel) / stride
// + 1, the formula NVDLA's programming guide gives. `pad_after` is pad_right (or pad_bottom).
[[nodiscard]] std::uint32_t conv_output_size(std::uint32_t in, std::uint32_t pad_before,
                                             std::uint32_t pad_after, std::uint32_t kernel,
                                             std::uint32_t dilation, std::uint32_t stride);

// Direct convolution of `in` with `w`: CMAC products and CACC accumulation, truncation and
// saturation. `out_channels_padded` rounds the output channel count up (to the memory atom's
// element count) so the result covers whole output atoms.
[[nodiscard]] ConvResult run_conv_int(const ConvCube& in, const ConvWeights& w, const ConvParams& p,
                                      std::uint32_t out_channels_padded);

}  // namespace octasim::models::ops
