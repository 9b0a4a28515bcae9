// Convolution-pipeline register decode (CDMA, CSC, CMAC_A/B, CACC) into the models/ direct
// convolution. run_conv (functional.hpp) is decode + read + models::ops::run_conv_int + the SDP
// in flying mode; the cycle-level convolution core times the same decoded layer.
#pragma once

#include <cstdint>

#include "models/ops/conv.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::dla {

struct ConvLayer {
  models::ops::ConvPrecision precision = models::ops::ConvPrecision::kInt8;
  models::ops::ConvFeatureSurface input;  // CDMA feature surface (DATAIN_SIZE, strides)
  std::uint32_t kernels = 1, kernel_width = 1, kernel_height = 1;
  std::uint64_t weight_base = 0;
  std::uint32_t weight_bytes = 0;  // CDMA D_WEIGHT_BYTES (what its DMA fetches)
  std::uint32_t pad_right = 0, pad_bottom = 0;
  models::ops::ConvParams params;  // strides, dilation, padding, output size, truncation
  unsigned data_banks = 1, weight_banks = 1;
  std::uint32_t entries_per_slice = 0;  // CBUF entries one input line (slice) takes
  std::uint32_t atomics = 0;            // CSC D_ATOMICS: output atoms per channel group
  std::uint32_t release_slices = 0;     // CSC D_RELEASE
};

// Throws std::runtime_error with one clear line for programming octasim cannot execute:
// Winograd, multi-batch, compressed weights, image input (not yet), inconsistent CDMA/CSC/CACC
// programming, a precision the configuration lacks.
[[nodiscard]] ConvLayer decode_conv(const HwConfig& hw, const RegRead& regs);

}  // namespace octasim::dla
