// Weight quantization for the network compiler: a Conv's or fully-connected layer's float
// weights as per-output-channel INT codes in the layout models/ops/conv.hpp describes
// (kernel, row, column, channel), with each channel's scale, and the float bias.
#pragma once

#include <optional>
#include <vector>

#include "firmware/net/plan.hpp"
#include "firmware/net/quant.hpp"
#include "models/graph/graph.hpp"
#include "models/ops/conv.hpp"

namespace octasim::firmware::net {

struct QuantizedWeights {
  models::ops::ConvWeights codes;  // K x R x S x C codes
  std::vector<double> scales;      // s_w[k]: weight = code * s_w[k]
  std::vector<double> bias;        // b[k] in real units (0 without a bias)
};

// The weights of conv layer `l` reading a tensor of cube `in`: a Conv's [K, C, R, S] weights, or
// a Gemm/MatMul's B (with alpha, and beta on the bias) laid over the input cube in ONNX's
// flattening order (channel, row, column). `bits` 8 or 4: codes in [-(2^(bits-1) - 1),
// 2^(bits-1) - 1] with s_w = max|w_k| / (2^(bits-1) - 1) (kMax), or the MMSE scale and codes
// of models::mmse_weight_quantization (kMmse: codes down to -2^(bits-1)), or OCTAV's clip of
// the channel (kOctav: s_w = clip / (2^(bits-1) - 1), codes saturating). A channel of zeros gets
// scale 1 and zero codes. Throws GraphError on a shape that does not match.
// A grouped Conv's weights are dense over the input's channels: zero between groups. `group` g
// (of G = ConvAttrs::groups) takes that group alone, the weights of a CONV layer of its own: its
// K/G kernels [g K/G, (g+1) K/G) over its C/G input channels [g C/G, (g+1) C/G) (channel 0 the
// group's first), their bias; each kernel quantized on those values (with kMax the same codes and
// scales as the dense layer's; kMmse and kOctav see no zeros of other groups). Every function
// below takes `group` alike (not for fully-connected layers).
[[nodiscard]] QuantizedWeights quantize_conv_weights(const models::graph::Graph& g,
                                                     const PlannedLayer& l, const Cube& in,
                                                     int bits, WeightQuantizer quantizer,
                                                     std::optional<unsigned> group = std::nullopt);

// A 3x3 convolution's weights for Winograd mode (models/ops/conv_winograd.hpp): each kernel slice
// transformed in float, 4U = (2G) g (2G)^T, and the K x 4 x 4 x C result quantized per output
// channel as above. The codes are what the hardware multiplies; with acc_step = s_x s_w[k] the
// layer's sums (CACC's +2 bits absorbing the factor 4) approximate the direct convolution's, as
// for quantize_conv_weights, so the requantization is the same. Quantizing in the transformed
// domain uses each channel's full code range; quantizing g first could overflow the transform.
[[nodiscard]] QuantizedWeights winograd_conv_weights(const models::graph::Graph& g,
                                                     const PlannedLayer& l, const Cube& in,
                                                     int bits, WeightQuantizer quantizer,
                                                     std::optional<unsigned> group = std::nullopt);

// The same weights unquantized: `codes` holds each weight as its FP16 bit pattern (round to
// nearest even), scales are 1 and the bias is the float bias (FP16 networks).
[[nodiscard]] QuantizedWeights fp16_conv_weights(const models::graph::Graph& g,
                                                 const PlannedLayer& l, const Cube& in,
                                                 std::optional<unsigned> group = std::nullopt);

// ConvInteger / MatMulInteger weights: codes w - w_zero_point (per output or one value), scales
// 1, and the bias that removes the input's zero point: -x_zero_point * sum(codes of the output).
[[nodiscard]] QuantizedWeights integer_conv_weights(const models::graph::Graph& g,
                                                    const PlannedLayer& l, const Cube& in,
                                                    std::optional<unsigned> group = std::nullopt);

// One output channel's `n` float weights as `bits`-bit codes in `out` (quantize_conv_weights's
// quantizer); returns the channel's scale, 1 for a channel of zeros (codes 0). Also the INT8
// weights of a MatMul/Gemm on the PPU at --precision mixed (program_ppu.cpp).
[[nodiscard]] double quantize_weight_channel(const float* w, std::size_t n, int bits,
                                             WeightQuantizer quantizer, std::int32_t* out);

// `w` reading a padded channel layout (a Concat's, program.hpp NetTensor::channel_map): input
// channel c of `w` becomes channel map[c] of `physical`, the channels no entry names get zero
// weights, so whatever the surface holds there adds nothing.
[[nodiscard]] models::ops::ConvWeights spread_input_channels(const models::ops::ConvWeights& w,
                                                             const std::vector<std::uint32_t>& map,
                                                             std::uint32_t physical);

}  // namespace octasim::firmware::net
