#include "firmware/dla/sdp_quantize.hpp"

#include <cmath>
#include <cstring>

#include <fmt/core.h>

#include "models/numerics/float_format.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

namespace S = regs::SDP;
namespace RD = regs::SDP_RDMA;

// FP16 1/s, checked to be a normal FP16 number (a denormal or an infinite 1/s loses the code).
std::uint16_t inverse_scale(float scale) {
  if (!(scale > 0.0f) || !std::isfinite(scale)) {
    throw FirmwareError(fmt::format("SDP quantize: scale {} is not a positive number", scale));
  }
  const double inv = 1.0 / static_cast<double>(scale);
  if (inv < 0x1p-14 || inv > 65504.0) {
    throw FirmwareError(fmt::format(
        "SDP quantize: 1/scale = {} is not a normal FP16 number (2^-14..65504 expected)", inv));
  }
  return models::fp16_from_double(inv);
}

void check_range(float zero_point, std::int32_t lo, std::int32_t hi) {
  if (lo > hi || lo < -32768 || hi > 32767) {
    throw FirmwareError(
        fmt::format("SDP quantize: code range [{}, {}] is not an INT16 range", lo, hi));
  }
  if (hi - lo > 511) {
    throw FirmwareError(fmt::format(
        "SDP quantize: code range [{}, {}] is wider than 512 codes (the FP16 bound would drift)",
        lo, hi));
  }
  if (zero_point != std::nearbyint(zero_point) || zero_point < static_cast<float>(lo) ||
      zero_point > static_cast<float>(hi)) {
    throw FirmwareError(fmt::format("SDP quantize: zero point {} is not an integer in [{}, {}]",
                                    zero_point, lo, hi));
  }
}

// The upper bound in the input's domain: (hi - zp) * s, rounded to FP16.
std::uint16_t upper_bound_x(float scale, float zero_point, std::int32_t hi) {
  return models::fp16_from_double((static_cast<double>(hi) - static_cast<double>(zero_point)) *
                                  static_cast<double>(scale));
}

std::uint32_t fp32_bits(float v) {
  std::uint32_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

void write_le16(std::vector<std::uint8_t>& b, std::size_t at, std::uint16_t v) {
  b[at] = static_cast<std::uint8_t>(v);
  b[at + 1] = static_cast<std::uint8_t>(v >> 8);
}

}  // namespace

SdpQuantize sdp_quantize_per_tensor(float scale, float zero_point, std::int32_t lo,
                                    std::int32_t hi) {
  check_range(zero_point, lo, hi);
  SdpQuantize q;
  q.inv_scale = inverse_scale(scale);
  q.hi_x = upper_bound_x(scale, zero_point, hi);
  q.zero_point = models::fp16_from_float(zero_point);
  q.lo = static_cast<float>(lo);
  return q;
}

SdpQuantizeTables sdp_quantize_tables(const std::vector<float>& scale,
                                      const std::vector<float>& zero_point, std::int32_t lo,
                                      std::int32_t hi, unsigned atom_bytes) {
  if (scale.size() != zero_point.size() || scale.empty()) {
    throw FirmwareError(
        fmt::format("SDP quantize: {} scales for {} zero points", scale.size(), zero_point.size()));
  }
  const unsigned cpa = channels_per_atom(Precision::kFp16, atom_bytes);
  const std::size_t lanes = (scale.size() + cpa - 1) / cpa * cpa;
  SdpQuantizeTables t;
  t.bs.assign(lanes * 4, 0);
  t.zero_point.assign(lanes * 2, 0);
  for (std::size_t c = 0; c < scale.size(); ++c) {
    check_range(zero_point[c], lo, hi);
    write_le16(t.bs, 4 * c, upper_bound_x(scale[c], zero_point[c], hi));
    write_le16(t.bs, 4 * c + 2, inverse_scale(scale[c]));
    write_le16(t.zero_point, 2 * c, models::fp16_from_float(zero_point[c]));
  }
  return t;
}

SdpQuantize sdp_quantize_per_channel(std::uint64_t bs_table, std::uint64_t zero_point_table,
                                     std::int32_t lo) {
  SdpQuantize q;
  q.bs_table = bs_table;
  q.zero_point_table = zero_point_table;
  q.lo = static_cast<float>(lo);
  return q;
}

SdpLayer sdp_dequantize_layer(const FeatureSurface& src, const FeatureSurface& dst,
                              std::int32_t zero_point, std::int32_t multiplier, unsigned shift) {
  if (multiplier < -32768 || multiplier > 32767) {
    throw FirmwareError(
        fmt::format("SDP dequantize: multiplier {} is outside INT16 (D_CVT_SCALE)", multiplier));
  }
  if (shift > 63) {
    throw FirmwareError(fmt::format("SDP dequantize: shift {} is outside 0..63", shift));
  }
  SdpLayer l;
  l.precision = Precision::kInt16;
  l.out_precision = Precision::kFp16;
  l.src = src;
  l.dst = dst;
  l.cvt.offset = zero_point;
  l.cvt.scale = static_cast<std::int16_t>(multiplier);
  l.cvt.shift = shift;
  l.count_saturation = true;
  return l;
}

namespace detail {

void check_quantize(const SdpLayer& l, unsigned atom_bytes) {
  if (!l.quantize) return;
  if (l.precision != Precision::kFp16 || l.output_precision() != Precision::kInt16) {
    throw FirmwareError(fmt::format("SDP quantize: {} -> {} layer; FP16 -> INT16 expected",
                                    precision_name(l.precision),
                                    precision_name(l.output_precision())));
  }
  if (l.bias || l.scale || l.bias_scale || l.clamp_max || l.clamp_min || l.prelu || l.relu ||
      l.ew || l.output_to_pdp) {
    throw FirmwareError(
        "SDP quantize: the layer uses BS, BN and EW itself (no bias, scale, bias_scale, "
        "clamp_max, clamp_min, prelu, relu, ew or output to PDP)");
  }
  for (const auto& table : {l.quantize->bs_table, l.quantize->zero_point_table}) {
    if (table && *table % atom_bytes != 0) {
      throw FirmwareError(
          fmt::format("SDP quantize: table address 0x{:x} is not aligned to the {}-byte atom",
                      *table, atom_bytes));
    }
  }
}

void write_quantize_rdma(Mmio& mmio, const SdpQuantize& q, std::uint32_t op_stride) {
  using B = RD::D_BRDMA_CFG;
  using N = RD::D_NRDMA_CFG;
  const auto cfg = [](bool on, std::uint32_t use) {
    if (!on) return B::BRDMA_DISABLE.set(0, B::BRDMA_DISABLE_YES);
    return B::BRDMA_DISABLE.set(0, B::BRDMA_DISABLE_NO) | B::BRDMA_DATA_USE.set(0, use) |
           B::BRDMA_DATA_SIZE.set(0, B::BRDMA_DATA_SIZE_TWO_BYTE) |
           B::BRDMA_DATA_MODE.set(0, B::BRDMA_DATA_MODE_PER_KERNEL) |
           B::BRDMA_RAM_TYPE.set(0, B::BRDMA_RAM_TYPE_MC);
  };
  mmio.write32(B::kAddr, cfg(q.bs_table.has_value(), B::BRDMA_DATA_USE_BOTH));
  if (q.bs_table) {
    mmio.write32(RD::D_BS_BASE_ADDR_LOW::kAddr, low32(*q.bs_table));
    mmio.write32(RD::D_BS_BASE_ADDR_HIGH::kAddr, high32(*q.bs_table));
    mmio.write32(RD::D_BS_LINE_STRIDE::kAddr, 2 * op_stride);
    mmio.write32(RD::D_BS_SURFACE_STRIDE::kAddr, 2 * op_stride);
  }
  mmio.write32(N::kAddr, cfg(q.zero_point_table.has_value(), N::NRDMA_DATA_USE_ALU));
  if (q.zero_point_table) {
    mmio.write32(RD::D_BN_BASE_ADDR_LOW::kAddr, low32(*q.zero_point_table));
    mmio.write32(RD::D_BN_BASE_ADDR_HIGH::kAddr, high32(*q.zero_point_table));
    mmio.write32(RD::D_BN_LINE_STRIDE::kAddr, op_stride);
    mmio.write32(RD::D_BN_SURFACE_STRIDE::kAddr, op_stride);
  }
  mmio.write32(RD::D_ERDMA_CFG::kAddr,
               RD::D_ERDMA_CFG::ERDMA_DISABLE.set(0, RD::D_ERDMA_CFG::ERDMA_DISABLE_YES));
}

void write_quantize_stages(Mmio& mmio, const SdpQuantize& q) {
  using BS = S::D_DP_BS_CFG;
  mmio.write32(BS::kAddr, BS::BS_BYPASS.set(0, BS::BS_BYPASS_NO) |
                              BS::BS_ALU_BYPASS.set(0, BS::BS_ALU_BYPASS_NO) |
                              BS::BS_ALU_ALGO.set(0, BS::BS_ALU_ALGO_MIN) |
                              BS::BS_MUL_BYPASS.set(0, BS::BS_MUL_BYPASS_NO) |
                              BS::BS_MUL_PRELU.set(0, BS::BS_MUL_PRELU_NO) |
                              BS::BS_RELU_BYPASS.set(0, BS::BS_RELU_BYPASS_YES));
  const std::uint32_t bs_src = q.bs_table ? 1u : 0u;  // MEM : REG
  mmio.write32(S::D_DP_BS_ALU_CFG::kAddr, S::D_DP_BS_ALU_CFG::BS_ALU_SRC.set(0, bs_src));
  mmio.write32(S::D_DP_BS_ALU_SRC_VALUE::kAddr, q.bs_table ? 0u : q.hi_x);
  mmio.write32(S::D_DP_BS_MUL_CFG::kAddr, S::D_DP_BS_MUL_CFG::BS_MUL_SRC.set(0, bs_src));
  mmio.write32(S::D_DP_BS_MUL_SRC_VALUE::kAddr, q.bs_table ? 0u : q.inv_scale);

  using BN = S::D_DP_BN_CFG;
  mmio.write32(BN::kAddr, BN::BN_BYPASS.set(0, BN::BN_BYPASS_NO) |
                              BN::BN_ALU_BYPASS.set(0, BN::BN_ALU_BYPASS_NO) |
                              BN::BN_ALU_ALGO.set(0, BN::BN_ALU_ALGO_SUM) |
                              BN::BN_MUL_BYPASS.set(0, BN::BN_MUL_BYPASS_YES) |
                              BN::BN_MUL_PRELU.set(0, BN::BN_MUL_PRELU_NO) |
                              BN::BN_RELU_BYPASS.set(0, BN::BN_RELU_BYPASS_YES));
  mmio.write32(S::D_DP_BN_ALU_CFG::kAddr,
               S::D_DP_BN_ALU_CFG::BN_ALU_SRC.set(0, q.zero_point_table ? 1u : 0u));
  mmio.write32(S::D_DP_BN_ALU_SRC_VALUE::kAddr, q.zero_point_table ? 0u : q.zero_point);
  mmio.write32(S::D_DP_BN_MUL_CFG::kAddr, 0);
  mmio.write32(S::D_DP_BN_MUL_SRC_VALUE::kAddr, 0);

  using E = S::D_DP_EW_CFG;
  mmio.write32(E::kAddr, E::EW_BYPASS.set(0, E::EW_BYPASS_NO) |
                             E::EW_ALU_BYPASS.set(0, E::EW_ALU_BYPASS_NO) |
                             E::EW_ALU_ALGO.set(0, E::EW_ALU_ALGO_MAX) |
                             E::EW_MUL_BYPASS.set(0, E::EW_MUL_BYPASS_YES) |
                             E::EW_MUL_PRELU.set(0, E::EW_MUL_PRELU_NO) |
                             E::EW_LUT_BYPASS.set(0, E::EW_LUT_BYPASS_YES));
  using A = S::D_DP_EW_ALU_CFG;
  mmio.write32(A::kAddr, A::EW_ALU_SRC.set(0, A::EW_ALU_SRC_REG) |
                             A::EW_ALU_CVT_BYPASS.set(0, A::EW_ALU_CVT_BYPASS_YES));
  mmio.write32(S::D_DP_EW_ALU_SRC_VALUE::kAddr, fp32_bits(q.lo));
  using M = S::D_DP_EW_MUL_CFG;
  mmio.write32(M::kAddr, M::EW_MUL_SRC.set(0, M::EW_MUL_SRC_REG) |
                             M::EW_MUL_CVT_BYPASS.set(0, M::EW_MUL_CVT_BYPASS_YES));
  mmio.write32(S::D_DP_EW_TRUNCATE_VALUE::kAddr, 0);
}

void set_model_quantize(const SdpQuantize& q, std::uint32_t op_stride, models::ops::SdpConfig& c) {
  using models::ops::SdpDataMode;
  using models::ops::SdpDataUse;
  using models::ops::SdpOperandSource;
  const auto table = [&](std::uint64_t base, SdpDataUse use, std::uint32_t stride) {
    models::ops::SdpOperandSurface s;
    s.enabled = true;
    s.use = use;
    s.bytes_per_component = 2;
    s.mode = SdpDataMode::kPerChannel;
    s.base = base;
    s.line_stride = s.surface_stride = stride;
    return s;
  };
  const SdpOperandSource bs_src =
      q.bs_table ? SdpOperandSource::kMemory : SdpOperandSource::kRegister;
  c.bs.bypass = false;
  c.bs.alu_bypass = false;
  c.bs.alu_algo = models::SdpAluAlgo::kMin;
  c.bs.alu_src = bs_src;
  c.bs.alu_operand = static_cast<std::int16_t>(q.bs_table ? 0 : q.hi_x);
  c.bs.mul_bypass = false;
  c.bs.mul_src = bs_src;
  c.bs.mul_operand = static_cast<std::int16_t>(q.bs_table ? 0 : q.inv_scale);
  if (q.bs_table) c.brdma = table(*q.bs_table, SdpDataUse::kBoth, 2 * op_stride);

  c.bn.bypass = false;
  c.bn.alu_bypass = false;
  c.bn.alu_algo = models::SdpAluAlgo::kSum;
  c.bn.alu_src = q.zero_point_table ? SdpOperandSource::kMemory : SdpOperandSource::kRegister;
  c.bn.alu_operand = static_cast<std::int16_t>(q.zero_point_table ? 0 : q.zero_point);
  if (q.zero_point_table) c.nrdma = table(*q.zero_point_table, SdpDataUse::kAlu, op_stride);

  c.ew.bypass = false;
  c.ew.alu_bypass = false;
  c.ew.alu_algo = models::SdpAluAlgo::kMax;
  c.ew.alu_src = SdpOperandSource::kRegister;
  c.ew.alu_operand = static_cast<std::int32_t>(fp32_bits(q.lo));
  c.ew.lut_bypass = true;
}

}  // namespace detail
}  // namespace octasim::firmware
