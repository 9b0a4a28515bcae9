// The element-wise operand of an SDP stage (SdpStage::ew, firmware/dla/sdp.hpp) and the units
// around it: which X stage does what, the operand RDMAs (BRDMA/NRDMA/ERDMA), the BN and EW
// registers, and the same programming as models/ describes it. Private to firmware/dla's SDP
// programming (sdp.cpp).
#pragma once

#include <cstdint>

#include "firmware/dla/sdp.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/sdp.hpp"

namespace octasim::firmware::detail {

// Which X stage does what: bias (and with bias_scale the multiplier) or the lower clamp in BS's
// ALU, BS's multiplier in PReLU mode; the multiplier, bn_bias_scale, the upper clamp or an
// element-wise operand (SdpEwUnit::kBn) in BN; ReLU in BN when BN multiplies or takes the operand,
// else in BS (BS when BN only clamps, BS alone when the layer has neither bias nor multiplier).
// bs_alu: BS's ALU sums a memory operand; bs_mul: BS multiplies by a memory operand.
struct SdpStages {
  bool bs_used, bs_alu, bs_mul, bs_relu, bn_used, bn_relu;
};
[[nodiscard]] SdpStages sdp_stages(const SdpLayer& l);

// The element-wise operand in BN (NRDMA) or in EW (ERDMA), or null.
[[nodiscard]] const SdpElementwise* sdp_bn_operand(const SdpLayer& l);
[[nodiscard]] const SdpElementwise* sdp_ew_operand(const SdpLayer& l);

// One operand RDMA's D_{B,N,E}RDMA_CFG (the three share the bit layout): disabled, or DATA_USE
// `data_use`, one- or two-byte elements, per channel or per element, in `ram`.
[[nodiscard]] std::uint32_t sdp_rdma_cfg(bool enabled, std::uint32_t data_use,
                                         bool two_bytes = true, bool per_element = false,
                                         Ram ram = Ram::kMc);

// One X stage (BS or BN) as NVDLA's D_DP_{BS,BN}_CFG encodes it; both share the bit layout.
[[nodiscard]] std::uint32_t sdp_x_cfg(bool used, bool alu_sum, bool mul, bool relu,
                                      bool prelu = false);

// Checks `l.ew` against the layer (FirmwareError messages start with `who`).
void check_sdp_ew(const SdpLayer& l, unsigned atom_bytes, const char* who);

// NRDMA and ERDMA: the per-channel `scale` or `bn_bias_scale` table (op_stride bytes per C'
// surface and operand) or the element-wise operand in BN, the element-wise operand in EW.
void write_sdp_nrdma_erdma(Mmio& mmio, const SdpLayer& l, std::uint32_t op_stride);

// BN's and EW's D_ registers for the layer's multiplier, clamp, element-wise operand and ReLU.
void write_sdp_bn_ew(Mmio& mmio, const SdpLayer& l, const SdpStages& st);

// The element-wise operand in the models/ configuration (its RDMA stream and stage).
void set_model_sdp_ew(const SdpLayer& l, models::ops::SdpConfig& c);

}  // namespace octasim::firmware::detail
