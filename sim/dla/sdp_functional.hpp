// SDP register decode (SDP + SDP_RDMA register groups and the LUT memories) into the models/
// layer configuration. run_sdp (functional.hpp) is decode + models::ops::run_sdp_layer; the
// cycle-level SDP decodes the same way and feeds models::ops::SdpDatapath as data streams in.
#pragma once

#include <utility>

#include "models/ops/sdp.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::dla {

// An SDP operation's registers decoded once (OpResult::descriptor of an SDP operation run by
// run_sdp): the functional layer ran with `config` and the timing plan (plan_sdp) reads it.
struct SdpDescriptor final : OperationDescriptor {
  explicit SdpDescriptor(models::ops::SdpConfig decoded) : config(std::move(decoded)) {}
  models::ops::SdpConfig config;
};

// Throws std::runtime_error for programming the configuration cannot execute: a feature `hw`
// leaves out ("SDP EW is not present in this configuration (nv_small)"), a reserved encoding,
// an SDP/SDP_RDMA mismatch.
[[nodiscard]] models::ops::SdpConfig decode_sdp(const HwConfig& hw, const RegRead& regs,
                                                const LutTables& lut);

// Whether SDP_RDMA takes part in the SDP's operation: always when it reads the input from memory;
// in flying mode only when a BS/BN/EW stage takes an operand from memory.
[[nodiscard]] bool sdp_rdma_takes_part(const RegRead& regs);

// The OpResult of a finished SDP layer: cube, bytes moved and the status/statistics registers
// its D_PERF_ENABLE selects.
[[nodiscard]] OpResult sdp_result(const models::ops::SdpConfig& cfg,
                                  const models::ops::SdpLayerResult& layer, const RegRead& regs);

// Runs the SDP layer `cfg` (input: `flying`, the convolution's output, or memory when null) and
// makes its OpResult (no DMA surfaces). With OUTPUT_DST=PDP the WDMA writes nothing: the output
// cube goes into OpResult::to_pdp and its size into bytes_on_the_fly. Throws for an output PDP
// cannot take on the fly (EQL mode, an output atom narrower than a memory atom).
[[nodiscard]] OpResult run_sdp_op(const models::ops::SdpConfig& cfg, models::ops::Memory& mem,
                                  const models::ops::ConvCube* flying, const RegRead& regs);

// The surfaces the layer's DMAs move (MRDMA input unless flying, the enabled operand streams,
// the WDMA output unless EW is in EQL mode or the output goes to PDP), on real addresses.
[[nodiscard]] DmaSurfaces sdp_surfaces(const models::ops::SdpConfig& cfg);

}  // namespace octasim::dla
