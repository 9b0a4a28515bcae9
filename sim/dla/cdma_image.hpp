// Image input (CDMA DATAIN_FORMAT=PIXEL) of the convolution pipeline: decode of CDMA's image
// fields (PIXEL_FORMAT/MAPPING/SIGN_OVERRIDE, PIXEL_OFFSET, the UV plane, MEAN_FORMAT/
// MEAN_GLOBAL, D_CVT_*) and the functional run. The arithmetic is models/ops/conv_image.hpp.
//
// In image mode the CSC convolves a channel-pre-extended kernel: WEIGHT_WIDTH_EXT is 0 (width 1)
// and WEIGHT_CHANNEL_EXT + 1 = S * C, C = the pixel format's channel count (= CDMA
// DATAIN_CHANNEL + 1 = CSC DATAIN_CHANNEL_EXT + 1). octasim requires S * C to be a whole number
// of pixels. image_conv_view shows decode_conv these registers as the equivalent R x S x C
// direct convolution, so the feature path's consistency checks (strides, padding, output size
// with kernel width S, CACC, banks) apply unchanged.
//
// Refused with one line (not simulated): FP16 pixels or processing, the reserved pixel mapping,
// PIXEL_Y_OFFSET != 0, channel post-extension (CSC Y_EXTENSION), dilation, multi-batch,
// Winograd, compressed weights, CDMA and CSC disagreeing on the input format.
#pragma once

#include <cstdint>

#include "models/ops/conv_image.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::dla {

// Whether the CDMA group is programmed for image input.
[[nodiscard]] bool is_image_input(const RegRead& regs);

struct CdmaImage {
  models::ops::ImageSurface surface;
  models::ops::ImageConvert convert;
  std::uint32_t kernel_channels = 1;  // CSC WEIGHT_CHANNEL_EXT + 1 (pre-extended: S * C)
  std::uint32_t kernel_width = 1;     // S
  std::uint32_t kernel_height = 1;    // R
};

// Decodes and validates the image-specific programming; throws std::runtime_error with one line
// for what octasim does not implement.
[[nodiscard]] CdmaImage decode_cdma_image(const HwConfig& hw, const RegRead& regs);

// `regs` as the feature-input decode should read an image layer: DATAIN_FORMAT feature,
// IN_PRECISION = PROC_PRECISION, CSC's kernel R x S x C instead of R x 1 x (S*C), CSC
// DATAIN_WIDTH_EXT = CDMA's width (CSC's image path does not read it). Validates first
// (decode_cdma_image).
[[nodiscard]] RegRead image_conv_view(const HwConfig& hw, const RegRead& regs);

// run_conv for image input: the image cube with CDMA's conversion and left/right padding, the
// pre-extended weights unfolded, models::ops::run_conv_int, then the SDP in flying mode.
[[nodiscard]] OpResult run_conv_image(const HwConfig& hw, const RegRead& regs,
                                      const LutTables& sdp_lut, models::ops::Memory& mem);

}  // namespace octasim::dla
