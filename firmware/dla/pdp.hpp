// PDP layer programming: pooling a feature surface in memory (NVDLA's "offline processing
// without split width") described in user terms, programmed through Mmio.
//
// Encoded: INT8/INT16/FP16 max, min and average pooling, kernels 1..8, strides 1..16, padding
// 0..7 on each side (smaller than the kernel) with a pad value for INT8/INT16 average pooling
// (FP16 ignores pad values: padded positions add 0 and the divisor stays the whole kernel; the
// reciprocals are programmed as FP17, models/ops/pdp.hpp). Not encoded: split-width mode (one
// pass over the whole width). On-the-fly input from SDP: `on_the_fly`
// (programmed with its producer by firmware/dla/conv_pool.hpp).
#pragma once

#include <cstdint>

#include "firmware/dla/surface.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/pdp.hpp"

namespace octasim::firmware {

enum class PoolMethod : std::uint8_t { kAverage = 0, kMax = 1, kMin = 2 };

struct PdpLayer {
  Precision precision = Precision::kInt8;
  FeatureSurface src;  // read by PDP_RDMA
  FeatureSurface dst;  // pooled: width/height as pdp_output_size() gives them, same channels
  PoolMethod method = PoolMethod::kMax;
  unsigned kernel_width = 1, kernel_height = 1;                       // 1..8
  unsigned stride_x = 1, stride_y = 1;                                // 1..16
  unsigned pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;  // 0..7, below the kernel
  // The value padded positions contribute to an INT8/INT16 average (max and min ignore
  // padding). FP16 ignores it: it must be 0.
  std::int32_t pad_value = 0;
  // Average pooling with both reciprocals 1: the window sum (a divisor that depends on the
  // window, such as ONNX's count_include_pad=0, is then applied by the next layer).
  bool sum = false;
  // Average: the divisors of D_RECIP_KERNEL_WIDTH/HEIGHT where they are not the kernel's (0): a
  // band of windows that all cover the same padding, pooled as a layer of its own, divided by
  // its windows' real columns and rows (ONNX's count_include_pad=0).
  unsigned divisor_width = 0, divisor_height = 0;
  // FP16 only: D_NAN_FLUSH_TO_ZERO, input NaNs pooled as +0 (still counted in D_NAN_INPUT_NUM).
  bool nan_to_zero = false;
  // FLYING_MODE=ON_FLYING: the input is SDP's output on the fly; `src` gives only its cube, and
  // PDP_RDMA is neither programmed nor enabled (NVDLA's programming guide, "On-the-fly
  // processing").
  bool on_the_fly = false;
};

// Output width or height of pooling `in` positions: (in + pads - kernel) / stride + 1; 0 when
// the kernel does not fit.
[[nodiscard]] std::uint32_t pdp_output_size(std::uint32_t in, unsigned kernel, unsigned stride,
                                            unsigned pad_before, unsigned pad_after);

// Programs `layer` into register group `group` of PDP and PDP_RDMA: S_POINTER (PDP, then
// PDP_RDMA), the PDP_RDMA and PDP D_ registers, then D_OP_ENABLE of PDP_RDMA before PDP's.
// Returns the GLB S_INTR_STATUS bit of its completion (PDP_DONE_STATUS<group>). Throws
// FirmwareError, before any register is written, for a layer it cannot program.
// `rdma_group` (0 or 1), when given, is PDP_RDMA's group where it differs from PDP's: a flying
// PDP (fed by SDP) leaves PDP_RDMA's consumer pointer where it was.
[[nodiscard]] unsigned program_pdp(Mmio& mmio, const PdpLayer& layer, unsigned group,
                                   unsigned atom_bytes, int rdma_group = -1);

// The same layer as models/ describes it (models::ops::run_pdp_layer).
[[nodiscard]] models::ops::PdpLayerParams pdp_model_params(const PdpLayer& layer,
                                                           unsigned atom_bytes);

}  // namespace octasim::firmware
