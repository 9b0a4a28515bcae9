// Winograd convolution (CDMA/CSC/CMAC/CACC CONV_MODE=WINOGRAD) on configurations with the
// feature (hw.dla.winograd): register decode into ConvLayer, the functional run through
// models/ops/conv_winograd, and the CSC schedule the cycle-level ConvCore uses.
//
// Programming (v1_ias_programming_guide.rst, stride 1 only: the stride channel extension is not
// modelled):
// - CDMA DATAIN_SIZE: the input cube W x H x C in memory; CDMA and CSC DATAIN_SIZE_EXT: W + PL +
//   PR, H + PT + PB, C.
// - CSC WEIGHT_SIZE_EXT: 4 x 4 x C' (C' = C rounded up to 32 bytes); CDMA BYTE_PER_KERNEL 16 C'
//   bytes per element; the weights in NVDLA's Winograd format (models/ops/conv_winograd.hpp),
//   uncompressed.
// - Stride 1, dilation 1 (CDMA and CSC); CSC and CACC DATAOUT: WIDTH_EXT - 4, HEIGHT_EXT - 4,
//   each a multiple of 4 and at least 8.
// - CSC D_PRA_CFG PRA_TRUNCATE 0..2; INT8 or INT16 (FP16 Winograd is not modelled yet); one batch.
#pragma once

#include <cstdint>

#include "sim/dla/conv_functional.hpp"

namespace octasim::dla {

// CDMA D_MISC_CFG CONV_MODE is WINOGRAD.
[[nodiscard]] bool is_winograd(const RegRead& regs);

// The Winograd-specific part of decode_conv, after decode_conv_mode (precision, batch, weight
// format; l.winograd set) and the geometry (strides, dilation, padding): the input surface, the
// transformed weights, the output, PRA_TRUNCATE. Throws one clear line on programming Winograd
// cannot run.
void decode_winograd(const HwConfig& hw, const RegRead& regs, ConvLayer& l);

// The CSC's work for a Winograd layer (v1_ias_unit_description.rst, "Parameters of operation
// modes"): an atomic operation is one 4x4x4 input tile (2x2 outputs of every kernel of the
// group); a stripe is 16~32 atomics; a block operation is one stripe operation (no R x S loop);
// the channel operation has C'/4 blocks.
struct WinogradSchedule {
  std::uint64_t kernel_bytes = 0;  // one transformed kernel: 4 x 4 x C' elements
  std::uint32_t atomics = 0;       // output tiles: out_width x out_height / 4
  std::uint32_t packages = 0;      // block operations per stripe: C' / 4
  std::uint32_t outputs_per_atomic = 4;
};
[[nodiscard]] WinogradSchedule winograd_schedule(const ConvLayer& l);

// run_conv for a Winograd layer: decode, read the input and the transformed weights, the
// models/ op, then finish_conv (SDP in flying mode).
[[nodiscard]] OpResult run_conv_winograd_layer(const HwConfig& hw, const RegRead& regs,
                                               const LutTables& sdp_lut, models::ops::Memory& mem);

}  // namespace octasim::dla
