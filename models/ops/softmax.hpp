// Softmax over one axis of an FP16 feature surface: the golden of the PPU's kSoftmax kernel
// (sim/ppu/softmax_kernel.cpp computes every line by calling softmax_surface_line below, so the
// model and the simulator are one implementation and agree bit for bit).
//
// Layout: NVDLA's feature format (format.rst, "Feature data format"; firmware/dla/surface.hpp):
// the W x H x C cube is cut into S = ceil(C / C') surfaces of C' = atom_bytes / 2 channels, and
// element (w, h, c) lives at
//   address + (c / C') * surface_stride + h * line_stride + w * atom_bytes + (c % C') * 2.
// A line is the elements along the axis with the other two coordinates fixed; lines are numbered
//   axis C: line = h * W + w (C elements),  axis H: line = c * W + w (H elements),
//   axis W: line = c * H + h (W elements).
//
// Arithmetic of one line x[0..n) (FP16 bit patterns), in this order:
//   1. v[i] = x[i] widened to FP32 (exact).
//   2. m = v[0]; for i = 1 .. n-1 ascending: if (v[i] > m) m = v[i].          (FP32 compare)
//   3. e[i] = std::exp(v[i] - m)   one FP32 subtraction (rounded), then std::exp on float.
//   4. s = +0; for i = 0 .. n-1 ascending: s = s + e[i].                      (FP32 adds)
//   5. y[i] = e[i] / s, one FP32 division, rounded to FP16 to nearest even.
// v[i] - m <= 0, so e[i] lies in [0, 1], e[argmax] = 1 and s in [1, n]: nothing overflows and
// nothing divides by zero for any finite input (x = 65504 next to x = -65504 is fine).
// Outputs lie in [0, 1] and are never -0 (exp underflows to +0).
//
// Accuracy: std::exp is the C library's expf. The model and the simulator call the same
// function in the same binary, so they agree bit for bit (another libm may differ in the last
// FP32 bit). Against the exact softmax of the FP16 inputs the FP32 quotient of step 5 is within
// about (n + 3 + |v[i] - m|) FP32 ulps (the sequential sum, expf, the subtraction, the division),
// so after the FP16 rounding every output is within 1 FP16 ulp for lines of practical length.
//
// NaN and infinity: a NaN anywhere in a line makes every output of the line NaN; so does +Inf
// (+Inf - +Inf is NaN). -Inf elements give +0, unless every element of the line is -Inf (then
// -Inf - -Inf is NaN: the line is NaN). Every NaN output is written as the quiet NaN 0x7e00.
//
// Writing: each output atom is written whole: the padding lanes of the last surface (channels
// C .. S*C'-1) become +0, as the DLA's convolution and Rubik write them; bytes between lines and
// surfaces (stride gaps) are not touched. The output may be the input (in place).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/ops/memory.hpp"

namespace octasim::models::ops {

enum class SoftmaxAxis : std::uint32_t { kC = 0, kH = 1, kW = 2 };

inline constexpr std::uint16_t kSoftmaxNan = 0x7e00;
inline constexpr std::uint32_t kSoftmaxMaxDim = 8192;  // NVDLA's cube registers: 1 .. 8192
inline constexpr std::uint64_t kSoftmaxMaxSurfaceBytes = std::uint64_t{1} << 28;

// One surface's place in memory (the shape is shared by input and output).
struct SoftmaxSurface {
  std::uint64_t address = 0;
  std::uint32_t line_stride = 0;     // bytes from one line (h) to the next
  std::uint32_t surface_stride = 0;  // bytes from one C' surface to the next
};

struct SoftmaxShape {
  std::uint32_t width = 1, height = 1, channels = 1;
  unsigned atom_bytes = 8;  // the configuration's memory atom
  SoftmaxAxis axis = SoftmaxAxis::kC;

  [[nodiscard]] unsigned channels_per_atom() const { return atom_bytes / 2; }
  [[nodiscard]] std::uint32_t surfaces() const {
    return (channels + channels_per_atom() - 1) / channels_per_atom();
  }
  // Elements per line (n) and the number of lines.
  [[nodiscard]] std::uint32_t line_length() const;
  [[nodiscard]] std::uint64_t lines() const;
};

struct SoftmaxCoord {
  std::uint32_t w = 0, h = 0, c = 0;
};

// Steps 2..5 before the FP16 rounding: y[i] = e[i] / s in FP32 (every y NaN for a NaN line).
void softmax_line_fp32(const float* v, std::size_t n, float* y);
// A whole line, FP16 in and out (NaN outputs 0x7e00). `scratch` holds 2n floats afterwards.
void softmax_line_fp16(const std::uint16_t* x, std::size_t n, std::uint16_t* y,
                       std::vector<float>& scratch);

// Why the shape and surfaces cannot be a softmax (empty: they can): an axis other than 0..2, an
// atom that is not a power of two from 2 to 128 bytes, a dimension outside 1..8192, an address or
// stride not a multiple of the atom, lines or surfaces that overlap (line_stride < W * atom when
// H > 1, surface_stride < (H - 1) * line_stride + W * atom when S > 1), or a surface spanning more
// than 2^28 bytes or past the end of the 64-bit address space.
[[nodiscard]] std::string softmax_layout_error(const SoftmaxShape& shape, const SoftmaxSurface& in,
                                               const SoftmaxSurface& out);

// Bytes from a surface's address to the end of its last atom.
[[nodiscard]] std::uint64_t softmax_surface_bytes(const SoftmaxShape& shape,
                                                  const SoftmaxSurface& s);
// Byte offset of element (w, h, c) from the surface's address.
[[nodiscard]] std::uint64_t softmax_element_offset(const SoftmaxShape& shape,
                                                   const SoftmaxSurface& s, SoftmaxCoord e);
// Element i of line `line`.
[[nodiscard]] SoftmaxCoord softmax_line_element(const SoftmaxShape& shape, std::uint64_t line,
                                                std::uint32_t i);

// Scratch buffers of softmax_surface_line (reused across calls).
struct SoftmaxScratch {
  std::vector<std::uint16_t> x, y;
  std::vector<float> f;
};

// Line `line`: reads its elements from `in` (the input surface's bytes, from its address) and
// writes its outputs into `out` (the output surface's bytes, from its address).
void softmax_surface_line(const SoftmaxShape& shape, const SoftmaxSurface& in_surface,
                          const std::uint8_t* in, const SoftmaxSurface& out_surface,
                          std::uint8_t* out, std::uint64_t line, SoftmaxScratch& scratch);

// Every line, and +0 in the padding lanes of every output atom. `in` and `out` hold
// softmax_surface_bytes of each surface; the layout must be valid (softmax_layout_error empty).
void softmax_surface(const SoftmaxShape& shape, const SoftmaxSurface& in_surface,
                     const std::uint8_t* in, const SoftmaxSurface& out_surface, std::uint8_t* out);

// The layer on a memory: reads the input surface, writes the output surface's atoms. Throws
// std::invalid_argument naming the problem for an invalid layout.
void run_softmax(const SoftmaxShape& shape, const SoftmaxSurface& in, const SoftmaxSurface& out,
                 Memory& mem);

}  // namespace octasim::models::ops
