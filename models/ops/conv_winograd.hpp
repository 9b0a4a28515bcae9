// NVDLA's Winograd convolution F(2x2, 3x3) as a functional model (v1_ias_unit_description.rst
// "Winograd Convolution", v1_ias_precision.rst, format.rst "Basic Weight for Winograd
// Convolution"), bit-exact for INT8/INT16 under the rules below.
//
//   S = A^T [ U (.) V ] A,   U = G g G^T (software),   V = C^T d C (CSC's PRA)
//
// - g: a 3x3 kernel slice of one channel; d: a 4x4 tile of the padded input of one channel
//   (positions outside the input take PADDING_VALUE, as in direct convolution); S: a 2x2 tile of
//   outputs. Tiles step by 2 in x and y.
// - Software transforms the weights (G holds halves): winograd_transform_weights returns
//   4U = (2G) g (2G)^T, exact in integers. The layer's result is then 4x the direct
//   convolution's; firmware absorbs the factor 4 into CACC's CLIP_TRUNCATE (+2 bits, exact
//   because the rounding shift of 4x by t+2 equals that of x by t).
// - PRA (pra_trunc, CSC D_PRA_CFG PRA_TRUNCATE 0..2): every pre-transformed element is shifted
//   right by pra_trunc rounding half away from zero (the rounding CACC's CLIP_TRUNCATE uses) and
//   saturated to the precision's range (INT8: -128..127, INT16: -32768..32767). The
//   documentation says only "truncate ... to INT8/16 representable"; the rounding choice is ours.
// - CMAC: 16 exact products per 4x4x4 small cube and channel; phase 1 sums the 4 channels of a
//   small cube, phases 2-3 (POA) apply A^T . A exactly; CACC accumulates every channel block's
//   4 outputs, clamps to its 48-bit assembly buffer, then CLIP_TRUNCATE (round half away,
//   saturate to INT32, counted) — the direct path's widths and rounding.
// - Memory format of the transformed weights: kernels in groups as direct convolution
//   (ConvWeightLayout::group_kernels); the channels padded with zeros to 32 bytes
//   (winograd_channels); a kernel cut into 4x4x4 small cubes (channel blocks of 4), scanned K -> C
//   within the group; inside a small cube the order is channel, then x, then y (format.rst does
//   not give the inner order; ours is the feature format's channel-innermost order).
#pragma once

#include <cstdint>

#include "models/ops/conv.hpp"

namespace octasim::models::ops {

// The transformed kernel's width and height, and the output tile a 4x4 input tile yields.
inline constexpr std::uint32_t kWinogradTile = 4;
inline constexpr std::uint32_t kWinogradOutTile = 2;

// The channel count of a Winograd weight cube: C rounded up to 32 bytes of elements (format.rst:
// "Divide kernels to 1x1x32Byte small cubes. If the channel size is not divisible by 32, append
// 0s"); CSC WEIGHT_CHANNEL_EXT at stride 1.
[[nodiscard]] std::uint32_t winograd_channels(std::uint32_t channels, ConvPrecision p);

// 4U = (2G) g (2G)^T of every 3x3 kernel slice: a kernels x 4 x 4 x winograd_channels(C) cube
// (extra channels zero). Throws std::runtime_error when `g` is not 3x3 or a transformed value
// does not fit the precision (INT8/INT16); FP16 is refused (not modelled).
[[nodiscard]] ConvWeights winograd_transform_weights(const ConvWeights& g, ConvPrecision p);

// Byte offset of transformed weight (k, y, x, c) in NVDLA's Winograd weight format and the
// packed size (before 128-byte alignment); `layout` gives the group size and precision.
[[nodiscard]] std::uint64_t winograd_weight_offset(const ConvWeights& u,
                                                   const ConvWeightLayout& layout, std::uint32_t k,
                                                   std::uint32_t y, std::uint32_t x,
                                                   std::uint32_t c);
[[nodiscard]] std::uint64_t winograd_weight_bytes(const ConvWeights& u,
                                                  const ConvWeightLayout& layout);
// Reads / writes (zero-padded to 128 bytes; returns the bytes written) transformed weights.
[[nodiscard]] ConvWeights read_winograd_weights(std::uint64_t base, std::uint32_t kernels,
                                                std::uint32_t channels,
                                                const ConvWeightLayout& layout, const Memory& mem);
std::uint64_t write_winograd_weights(const ConvWeights& u, std::uint64_t base,
                                     const ConvWeightLayout& layout, Memory& mem);

// CSC's PRA on one 4x4 tile d (row-major d[y*4+x]): V = C^T d C, then the pra_trunc rounding
// shift and saturation to `p`. Exposed for tests.
void winograd_pra(const std::int64_t d[16], unsigned pra_trunc, ConvPrecision p,
                  std::int64_t v[16]);

// Winograd convolution of `in` with transformed weights `u` (4x4 kernels, channels >= the
// input's; the extra channels see zero data). p.stride and p.dilation must be 1; p.out_width and
// p.out_height even. `macs` counts the CMAC's products: 16 per output tile, channel and kernel.
[[nodiscard]] ConvResult run_conv_winograd(const ConvCube& in, const ConvWeights& u,
                                           const ConvParams& p, unsigned pra_trunc,
                                           std::uint32_t out_channels_padded);

}  // namespace octasim::models::ops
