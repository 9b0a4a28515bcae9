// NVDLA's Rubik (RBK) reshape engine: moves data without computing on it, in one of three modes
// (v1_ias_unit_description.rst "RUBIK", v1_ias_programming_guide.rst "Rubik programming"):
//
// - Contract: the second phase of a deconvolution. The input is a feature cube W x H x C whose
//   C = x_stride * y_stride * C' channels are x_stride * y_stride groups of C' channels (the
//   convolution layers of phase I appended one after another in C, x fastest); the output is
//   the feature cube (W * x_stride) x (H * y_stride) x C'. Input element (w, h, g * C' + c) with
//   g = gy * x_stride + gx goes to output (w * x_stride + gx, h * y_stride + gy, c).
//   Addresses as the registers give them: group g of the input starts CONTRACT_STRIDE_0 bytes
//   after group g - 1 (each group its own run of C'-channel surfaces, DAIN_SURF_STRIDE apart);
//   the y_stride output lines of input line h start at DAOUT_ADDR + h * CONTRACT_STRIDE_1, one
//   DAOUT_LINE_STRIDE apart. C' * element bytes must fill whole atoms (C % (sx*sy*32 B) == 0),
//   so every atom moves whole.
// - Split: a feature cube W x H x C to `out_channels` planes (NVDLA's M-planar, pitch-linear,
//   format.rst): element (w, h, c) goes to DAOUT_ADDR + c * DAOUT_PLANAR_STRIDE +
//   h * DAOUT_LINE_STRIDE + w * element bytes, for the first out_channels channels.
// - Merge: the inverse: `in_channels` planes (DAIN_PLANAR_STRIDE, DAIN_LINE_STRIDE) to a feature
//   cube of as many channels; the padding lanes of the last surface's atoms are written as zero.
//
// Feature format (format.rst): element (w, h, c) of a cube at `base` is at base +
// (c / C'') * surface_stride + h * line_stride + w * atom + (c % C'') * element bytes, with
// C'' = atom / element bytes channels per atom (32-byte atoms where Rubik exists: nv_full).
#pragma once

#include <cstdint>

#include "models/ops/memory.hpp"

namespace octasim::models::ops {

enum class RubikMode : std::uint8_t { kContract = 0, kSplit = 1, kMerge = 2 };

struct RubikParams {
  RubikMode mode = RubikMode::kContract;
  unsigned element_bytes = 1;  // 1 (INT8) or 2 (INT16, FP16)
  unsigned atom_bytes = 32;
  std::uint32_t width = 1, height = 1;  // the input cube / planes
  std::uint32_t in_channels = 1;        // DATAIN_CHANNEL + 1
  std::uint32_t out_channels = 1;       // DATAOUT_CHANNEL + 1
  unsigned x_stride = 1, y_stride = 1;  // contract: DECONV_X/Y_STRIDE + 1
  std::uint64_t in_base = 0, in_line_stride = 0, in_surface_stride = 0, in_planar_stride = 0;
  std::uint64_t out_base = 0, out_line_stride = 0, out_surface_stride = 0, out_planar_stride = 0;
  std::uint64_t contract_stride_0 = 0;  // input bytes from one C' group to the next
  std::uint64_t contract_stride_1 = 0;  // output bytes from one input line's lines to the next
};

// The output cube's size.
struct RubikCube {
  std::uint32_t width = 0, height = 0, channels = 0;
};
[[nodiscard]] RubikCube rubik_output_cube(const RubikParams& p);

// Throws std::invalid_argument (one line) for parameters the modes above do not define: an
// element size other than 1 or 2, an atom not a multiple of it, an empty cube, a contract whose
// channels are not x_stride * y_stride whole-atom groups of out_channels, a split of more
// channels than the input has, a merge whose output channel count differs from its planes.
void check_rubik(const RubikParams& p);

// Runs the operation: reads `src`, writes `dst` (the same memory when both surfaces are in it).
void run_rubik(const RubikParams& p, const Memory& src, Memory& dst);

}  // namespace octasim::models::ops
