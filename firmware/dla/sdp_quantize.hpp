// ONNX QuantizeLinear and DequantizeLinear as one SDP layer each (firmware/dla/sdp.hpp), on
// NVDLA's two conversions between the integer and FP16 pipelines:
//
// QuantizeLinear (FP16 -> INT16; uint8 codes are INT16 elements 0..255, int8 codes -128..127):
//   SdpLayer{precision = kFp16, out_precision = kInt16, quantize = SdpQuantize}
//   q = int16(fp16(max(min(x, hi_x) * fp16(1/s) + fp16(zp), lo)))
// in FP32 with FP16 operands, the result rounded to FP16 (nearest even) and then to an integer
// with halves away from zero (NVDLA's Fp16ToInt16). ONNX rounds x / s to the nearest even
// integer before adding the zero point; NVDLA rounds x * (1/s) + zp once, halves away from zero,
// after an FP16 rounding. The codes differ where x / s is a tie (ONNX: 0.5 -> 0, 2.5 -> 2,
// -0.5 -> 0; NVDLA: 1, 3, -1 before the zero point, which moves the tie with it), where
// fp16(1/s) differs from 1/s enough to cross a half, and where x * (1/s) + zp lies within half
// an FP16 spacing of a half (1/16 for codes 128..255).
//
// DequantizeLinear (INT16 -> FP16): SdpLayer{precision = kInt16, out_precision = kFp16} with the
// zero point subtracted and the scale applied in the INT32 pipeline and the output convertor:
//   y = fp16(sat17(round_half_away((q - zp) * m >> shift)))     (sdp_dequantize_layer)
// NVDLA's INT16 -> FP16 output is an integer (the convertor rounds into 17 bits first): exact
// for ONNX whenever (q - zp) * s is an integer, i.e. s = m / 2^shift with every (q - zp) * s
// integral (ONNX's own dequantize tests use scales 1, 2 and 4). A fractional scale needs a
// second, FP16 layer multiplying by s (SdpStage::scale on an FP16 SdpLayer).
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/dla/sdp.hpp"
#include "firmware/driver/mmio.hpp"

namespace octasim::firmware {

// Per-tensor QuantizeLinear: scale s (1/s must be a normal FP16 number: 2^-14 <= 1/s <= 65504),
// zero point zp (an integer in [lo, hi]) and the code range [lo, hi] (uint8: 0, 255; int8:
// -128, 127; at most 512 codes wide, so that the input-domain upper bound stays within half a
// code). Throws FirmwareError otherwise.
[[nodiscard]] SdpQuantize sdp_quantize_per_tensor(float scale, float zero_point, std::int32_t lo,
                                                  std::int32_t hi);

// Per-channel QuantizeLinear (ONNX's axis = channel): the BRDMA table (per channel FP16 hi_x,
// FP16 1/s) and the NRDMA table (FP16 zero points), zero-padded to whole C' surfaces; load them at
// SdpQuantize::bs_table and ::zero_point_table (atom-aligned). Same limits as per tensor.
struct SdpQuantizeTables {
  std::vector<std::uint8_t> bs;
  std::vector<std::uint8_t> zero_point;
};
[[nodiscard]] SdpQuantizeTables sdp_quantize_tables(const std::vector<float>& scale,
                                                    const std::vector<float>& zero_point,
                                                    std::int32_t lo, std::int32_t hi,
                                                    unsigned atom_bytes);
[[nodiscard]] SdpQuantize sdp_quantize_per_channel(std::uint64_t bs_table,
                                                   std::uint64_t zero_point_table, std::int32_t lo);

// DequantizeLinear with an integer-valued result: y = (q - zp) * multiplier / 2^shift rounded
// (halves away from zero) to an integer, to FP16. Per tensor: the zero point in the output
// convertor's offset, the multiplier its scale. `src` holds INT16 codes (uint8 as 0..255), `dst`
// is an FP16 surface of the same cube. Throws FirmwareError for a multiplier outside INT16 or a
// shift above 63.
[[nodiscard]] SdpLayer sdp_dequantize_layer(const FeatureSurface& src, const FeatureSurface& dst,
                                            std::int32_t zero_point, std::int32_t multiplier,
                                            unsigned shift);

namespace detail {
// Used by firmware/dla/sdp.cpp for layers with SdpLayer::quantize.
void check_quantize(const SdpLayer& l, unsigned atom_bytes);
void write_quantize_rdma(Mmio& mmio, const SdpQuantize& q, std::uint32_t op_stride);
void write_quantize_stages(Mmio& mmio, const SdpQuantize& q);
void set_model_quantize(const SdpQuantize& q, std::uint32_t op_stride, models::ops::SdpConfig& c);
}  // namespace detail

}  // namespace octasim::firmware
