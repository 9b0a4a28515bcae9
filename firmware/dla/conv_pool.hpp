// Convolution -> SDP -> PDP on the fly (NVDLA's flying mode): one convolution layer whose SDP
// output streams into PDP (SDP D_FEATURE_MODE_CFG.OUTPUT_DST=PDP, PDP D_OPERATION_MODE_CFG
// FLYING_MODE=ON_FLYING), so the convolution's output never goes to memory; PDP's WDMA writes the
// pooled surface. Programmed as NVDLA's own trace for this mode does it
// (nv_large/pdp_3x3x33_2x2_ave_int8_0): PDP first (S_POINTER, D_ registers, D_OP_ENABLE; its
// RDMA untouched), then the convolution (program_conv, SDP sending to PDP). The device starts
// them together once both are enabled; the host waits for PDP's interrupt, then SDP's.
#pragma once

#include "firmware/dla/conv.hpp"
#include "firmware/dla/pdp.hpp"
#include "firmware/driver/mmio.hpp"

namespace octasim::firmware {

struct ConvPoolLayer {
  ConvLayer conv;  // conv.dst gives the output cube only (SDP's WDMA writes nothing)
  // The pooling of that cube: pool.src is not used (it is conv.dst's cube), pool.dst is written.
  PdpLayer pool;
};

// GLB S_INTR_STATUS bits of the two completions, in the order the host waits for them.
struct ConvPoolInterrupts {
  unsigned pdp = 0;  // PDP_DONE_STATUS<group>
  unsigned sdp = 0;  // SDP_DONE_STATUS<group>
};

// Programs `layer` into register group `group` of PDP and of the convolution pipeline. Throws
// FirmwareError, before any register is written, for a layer it cannot program (either part, or
// a pooling precision other than the convolution's).
// `pdp_group` / `sdp_group` (0 or 1), when given, are PDP's and SDP's groups where they differ
// from the convolution units' (their consumer pointers advance with their own layers), and
// `rdma_group` SDP_RDMA's (program_conv).
[[nodiscard]] ConvPoolInterrupts program_conv_pool(Mmio& mmio, const ConvPoolLayer& layer,
                                                   unsigned group, const ConvHardware& hw,
                                                   int pdp_group = -1, int sdp_group = -1,
                                                   int rdma_group = -1);
// The checks program_conv_pool makes before writing anything (FirmwareError).
void check_conv_pool(const ConvPoolLayer& layer, const ConvHardware& hw);

// Golden output (models/ only): runs run_conv_model, which writes the SDP output to conv.dst in
// `mem` (a scratch surface there; the device never writes it), then models::ops::run_pdp_layer
// pooling it into pool.dst.
ConvGolden run_conv_pool_model(const ConvPoolLayer& layer, const ConvHardware& hw,
                               models::ops::Memory& mem);

}  // namespace octasim::firmware
