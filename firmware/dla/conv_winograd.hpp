// Winograd convolution layers (ConvLayer::winograd, hardware with ConvHardware::winograd): what
// the convolution firmware does differently from direct convolution (v1_ias_programming_guide.rst,
// format.rst, v1_ias_precision.rst; models/ops/conv_winograd.hpp holds the arithmetic).
//
//   layer            3x3 kernels, stride 1, no dilation, INT8/INT16, uncompressed weights, one
//                    batch; the
//                    output (the direct convolution's, from the layer's padding) a multiple of 4
//                    and at least 8 in width and height
//   weights          software's pre-transform 4U = (2G) g (2G)^T (exact in integers; every value
//                    must fit the precision), channels padded to 32 bytes (C'), in NVDLA's
//                    Winograd weight format: conv_winograd_weight_image()
//   padding          right/bottom padding programmed so that DATAIN_SIZE_EXT = output + 4 (the
//                    guide's DATAOUT = WIDTH_EXT - 4): two columns/rows more than the outputs use
//   registers        CONV_MODE=WINOGRAD in CDMA, CSC, CMAC_A/B, CACC; CDMA and CSC DATAIN_SIZE_EXT
//                    W + PL + PR x H + PT + PB; CSC WEIGHT_SIZE_EXT 4 x 4 x C'; CDMA
//                    BYTE_PER_KERNEL 16 C' elements; CSC D_PRA_CFG = pra_truncate
//   truncation       CACC CLIP_TRUNCATE = clip_truncate + 2 - pra_truncate, so the result has the
//                    direct convolution's scale (the bias relation SF_bs 2^bs_trunc = SF_in SF_wt /
//                    2^(pra_trunc + cc_out_trunc) with the weights' factor 4 in SF_wt); with
//                    pra_truncate 0 and no PRA saturation the output equals the direct layer's
//   PRA truncation   choose_pra_truncate: the smallest shift (0..2) under which no pre-transformed
//                    input (|V| <= 4 max|d|, each V a sum of four +-d) saturates the precision
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/dla/conv.hpp"

namespace octasim::firmware {

// The Winograd checks of plan_conv (after the common ones); `out` is the layer's output cube.
void check_winograd_layer(const ConvLayer& l, const ConvHardware& hw, const ConvCubeSize& out);

// Bytes of one transformed kernel: 4 x 4 x C' elements.
[[nodiscard]] std::uint64_t winograd_kernel_bytes(const ConvLayer& l);

// CACC CLIP_TRUNCATE of a Winograd layer (see above).
[[nodiscard]] unsigned winograd_clip_truncate(const ConvLayer& l);

// The PRA truncation for inputs of magnitude at most `max_abs_input` (including the padding
// value).
[[nodiscard]] unsigned choose_pra_truncate(std::uint32_t max_abs_input, Precision precision);

// 3x3 `weights` pre-transformed and laid out in NVDLA's Winograd weight format, zero-padded to a
// multiple of 128 bytes. Throws FirmwareError when a transformed weight does not fit.
[[nodiscard]] std::vector<std::uint8_t> conv_winograd_weight_image(
    const models::ops::ConvWeights& weights, Precision precision, const ConvHardware& hw);

// Weights already transformed (K x 4 x 4 x C, e.g. quantized by the network compiler in the
// transformed domain) in the same format, channels zero-padded to C'. Throws FirmwareError when
// a value does not fit the precision.
[[nodiscard]] std::vector<std::uint8_t> winograd_weight_image(const models::ops::ConvWeights& u,
                                                              Precision precision,
                                                              const ConvHardware& hw);

// run_conv_model's Winograd convolution: the transformed weights read from l.weight_address,
// models::ops::run_conv_winograd with the layer's PRA and CACC truncation.
[[nodiscard]] models::ops::ConvResult run_winograd_model(const ConvLayer& l, const ConvModel& m,
                                                         const ConvHardware& hw,
                                                         const models::ops::ConvCube& in,
                                                         const models::ops::Memory& mem);

}  // namespace octasim::firmware
