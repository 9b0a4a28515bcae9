// Convolution-pipeline register decode (CDMA, CSC, CMAC_A/B, CACC) into the models/ direct
// convolution. run_conv (functional.hpp) is decode + read + models::ops::run_conv_int + the SDP
// in flying mode; the cycle-level convolution core times the same decoded layer.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "models/ops/conv.hpp"
#include "models/ops/sdp.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::dla {

struct ConvLayer {
  models::ops::ConvPrecision precision = models::ops::ConvPrecision::kInt8;
  models::ops::ConvFeatureSurface input;  // CDMA feature surface (DATAIN_SIZE, strides)
  std::uint32_t kernels = 1, kernel_width = 1, kernel_height = 1;
  std::uint64_t weight_base = 0;
  // What CDMA's weight DMA fetches: D_WEIGHT_BYTES, plus for compressed weights D_WMB_BYTES and
  // the WGS (wgs_bytes).
  std::uint64_t weight_bytes = 0;
  // Compressed weights (D_WEIGHT_FORMAT=COMPRESSED, models/ops/conv_compress.hpp): the data
  // surface at weight_base is D_WEIGHT_BYTES (compressed_bytes) long.
  bool weight_compressed = false;
  std::uint64_t wmb_base = 0, wgs_base = 0;
  std::uint32_t compressed_bytes = 0;  // CDMA D_WEIGHT_BYTES
  std::uint32_t wmb_bytes = 0;         // CDMA (= CSC) D_WMB_BYTES
  std::uint32_t wgs_bytes = 0;         // WGS bytes CDMA reads (0 when WEIGHT_REUSE keeps them)
  std::uint32_t pad_right = 0, pad_bottom = 0;
  models::ops::ConvParams params;  // strides, dilation, padding, output size, truncation
  unsigned data_banks = 1, weight_banks = 1;
  std::uint32_t entries_per_slice = 0;  // CBUF entries one input line (slice) takes
  std::uint32_t atomics = 0;            // CSC D_ATOMICS: output atoms per channel group
  std::uint32_t release_slices = 0;     // CSC D_RELEASE
  // Multi-batch mode (CDMA/CSC/CACC D_BATCH_NUMBER + 1): input cube b is at input.base +
  // b * batch_stride (CDMA D_BATCH_STRIDE); every batch shares the weights.
  std::uint32_t batches = 1;
  std::uint32_t batch_stride = 0;

  // Input cube b's surface.
  [[nodiscard]] models::ops::ConvFeatureSurface batch_input(std::uint32_t b) const {
    models::ops::ConvFeatureSurface s = input;
    s.base += std::uint64_t{b} * batch_stride;
    return s;
  }
};

// The convolution core's output of one layer: CACC's cube of every batch.
struct ConvOutput {
  std::vector<models::ops::ConvCube> batches;
  std::uint32_t saturated = 0;  // CACC D_OUT_SATURATION, all batches
  std::uint64_t macs = 0;

  void add(models::ops::ConvResult&& r) {
    batches.push_back(std::move(r.out));
    saturated = saturated + r.saturated < saturated ? ~std::uint32_t{0} : saturated + r.saturated;
    macs += r.macs;
  }
};

// A convolution's registers decoded (OpResult::descriptor of a CONV operation).
struct ConvDescriptor final : OperationDescriptor {
  explicit ConvDescriptor(const ConvLayer& l) : layer(l) {}
  ConvLayer layer;
};

// Throws std::runtime_error with one clear line for programming octasim cannot execute:
// Winograd, compressed weights with image input, multi-batch on a configuration without it,
// inconsistent CDMA/CSC/CACC programming, a precision the configuration lacks, an input or kernel
// group the CBUF banks cannot hold. Image input is decoded through cdma_image.hpp's view of the
// registers.
[[nodiscard]] ConvLayer decode_conv(const HwConfig& hw, const RegRead& regs);

// The common tail of a convolution's functional run: SDP (flying) on the CACC output `conv`
// (one cube per batch), CACC D_OUT_SATURATION, and the OpResult fields (cubes, kernel, bytes with
// `inputs` the surfaces CDMA fetches, one per batch, MACs, the MAC array's peak at the layer's
// precision, the DMA surfaces, the decoded layer).
[[nodiscard]] OpResult finish_conv(const HwConfig& hw, const ConvLayer& l,
                                   const models::ops::SdpConfig& sdp, const ConvOutput& conv,
                                   const std::vector<SurfaceRegion>& inputs, const RegRead& regs,
                                   models::ops::Memory& mem);

}  // namespace octasim::dla
