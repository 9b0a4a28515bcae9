#include "firmware/dla/sdp_ew.hpp"

#include <string>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware::detail {
namespace {

namespace S = regs::SDP;
namespace RD = regs::SDP_RDMA;

// FP16 1.0: the scale of the EW operand convertor, which FP16 does not bypass.
constexpr std::uint16_t kFp16One = 0x3c00;

bool add_op(const SdpElementwise& e) {
  return e.op == SdpEwOp::kAdd;
}

// The operand's element size follows the pipeline: INT8 one byte, INT16/FP16 two.
bool two_bytes(Precision p) {
  return p != Precision::kInt8;
}

void check_unit(const SdpLayer& l, const SdpElementwise& e, const char* who) {
  const bool fp16 = l.precision == Precision::kFp16;
  if (e.unit == SdpEwUnit::kEw) {
    if (e.shift != 0 || e.rescale) {
      throw FirmwareError(fmt::format(
          "{} an element-wise operand in EW takes no BN shift or rescale (they belong to BN)",
          who));
    }
    if (fp16 && (e.cvt.offset != 0 || e.cvt.scale != 1 || e.cvt.truncate != 0 || e.truncate != 0)) {
      throw FirmwareError(fmt::format(
          "{} FP16 element-wise operand: the EW convertor is the FP16 identity (offset 0, scale "
          "1, truncate 0 expected)",
          who));
    }
    if (e.cvt.truncate > 63) {
      throw FirmwareError(fmt::format(
          "{} element-wise operand convertor truncate {} is outside 0..63", who, e.cvt.truncate));
    }
    if (e.truncate > 1023) {
      throw FirmwareError(fmt::format("{} EW truncate {} is outside 0..1023", who, e.truncate));
    }
    return;
  }
  if (l.scale || l.clamp_max || l.bn_bias_scale) {
    const char* other = l.scale ? "scale" : l.bn_bias_scale ? "bn_bias_scale" : "clamp_max";
    throw FirmwareError(fmt::format("{} an element-wise operand in BN and {} both need BN's {}",
                                    who, other, l.clamp_max && !l.scale ? "ALU" : "multiplier"));
  }
  if (e.cvt.offset != 0 || e.cvt.scale != 1 || e.cvt.truncate != 0 || e.truncate != 0) {
    throw FirmwareError(fmt::format(
        "{} an element-wise operand in BN has no operand convertor (it belongs to EW)", who));
  }
  if (e.rescale && !add_op(e)) {
    throw FirmwareError(fmt::format(
        "{} BN's rescale follows an element-wise add only (mul takes the operand)", who));
  }
  const unsigned rescale_shift = e.rescale ? e.rescale->shift : 0;
  if (e.shift > 63 || rescale_shift > 63) {
    throw FirmwareError(fmt::format("{} element-wise BN shift {} is outside 0..63", who,
                                    e.shift > 63 ? e.shift : rescale_shift));
  }
  if (fp16 && (e.shift != 0 || rescale_shift != 0)) {
    throw FirmwareError(fmt::format("{} FP16 operands take no shift (0 expected)", who));
  }
}

}  // namespace

const SdpElementwise* sdp_bn_operand(const SdpLayer& l) {
  return l.ew && l.ew->unit == SdpEwUnit::kBn ? &*l.ew : nullptr;
}

const SdpElementwise* sdp_ew_operand(const SdpLayer& l) {
  return l.ew && l.ew->unit == SdpEwUnit::kEw ? &*l.ew : nullptr;
}

SdpStages sdp_stages(const SdpLayer& l) {
  SdpStages s{};
  const bool bn_ew = sdp_bn_operand(l) != nullptr;
  const bool bn_mul = l.scale.has_value() || l.bn_bias_scale.has_value() || bn_ew;
  s.bn_used = bn_mul || l.clamp_max.has_value();
  s.bn_relu = l.relu && bn_mul;
  s.bs_alu = l.bias.has_value() || l.bias_scale.has_value();
  s.bs_mul = l.bias_scale.has_value();
  s.bs_relu = l.relu && !s.bn_relu;
  s.bs_used = s.bs_alu || s.bs_relu || l.clamp_min.has_value() || l.prelu.has_value();
  return s;
}

std::uint32_t sdp_rdma_cfg(bool enabled, std::uint32_t data_use, bool two, bool per_element,
                           Ram ram) {
  using C = RD::D_BRDMA_CFG;  // NRDMA/ERDMA share the layout
  static_assert(static_cast<std::uint32_t>(Ram::kCv) == C::BRDMA_RAM_TYPE_CV &&
                static_cast<std::uint32_t>(Ram::kMc) == C::BRDMA_RAM_TYPE_MC);
  if (!enabled) return C::BRDMA_DISABLE.set(0, C::BRDMA_DISABLE_YES);
  std::uint32_t v = C::BRDMA_DISABLE.set(0, C::BRDMA_DISABLE_NO);
  v = C::BRDMA_DATA_USE.set(v, data_use);
  v = C::BRDMA_DATA_SIZE.set(v, two ? C::BRDMA_DATA_SIZE_TWO_BYTE : C::BRDMA_DATA_SIZE_ONE_BYTE);
  v = C::BRDMA_DATA_MODE.set(
      v, per_element ? C::BRDMA_DATA_MODE_PER_ELEMENT : C::BRDMA_DATA_MODE_PER_KERNEL);
  return C::BRDMA_RAM_TYPE.set(v, static_cast<std::uint32_t>(ram));
}

std::uint32_t sdp_x_cfg(bool used, bool alu_sum, bool mul, bool relu, bool prelu) {
  using C = S::D_DP_BS_CFG;
  if (!used) {
    return C::BS_BYPASS.set(0, 1) | C::BS_ALU_BYPASS.set(0, 1) | C::BS_MUL_BYPASS.set(0, 1) |
           C::BS_RELU_BYPASS.set(0, 1);
  }
  std::uint32_t v = C::BS_BYPASS.set(0, C::BS_BYPASS_NO);
  v = C::BS_ALU_BYPASS.set(v, alu_sum ? C::BS_ALU_BYPASS_NO : C::BS_ALU_BYPASS_YES);
  v = C::BS_ALU_ALGO.set(v, alu_sum ? C::BS_ALU_ALGO_SUM : C::BS_ALU_ALGO_MAX);
  v = C::BS_MUL_BYPASS.set(v, mul ? C::BS_MUL_BYPASS_NO : C::BS_MUL_BYPASS_YES);
  v = C::BS_MUL_PRELU.set(v, prelu ? C::BS_MUL_PRELU_YES : C::BS_MUL_PRELU_NO);
  return C::BS_RELU_BYPASS.set(v, relu ? C::BS_RELU_BYPASS_NO : C::BS_RELU_BYPASS_YES);
}

void check_sdp_ew(const SdpLayer& l, unsigned atom_bytes, const char* who) {
  if (!l.ew) return;
  const SdpElementwise& e = *l.ew;
  if (l.output_precision() != l.precision) {
    throw FirmwareError(fmt::format(
        "{} an element-wise operand with a precision conversion ({} -> {}) is not encoded", who,
        precision_name(l.precision), precision_name(l.output_precision())));
  }
  if (l.batches != 1) {
    throw FirmwareError(fmt::format(
        "{} an element-wise operand with {} batches is not encoded (one cube)", who, l.batches));
  }
  std::string unit = who;  // "SDP:" -> "SDP element-wise operand"
  if (!unit.empty() && unit.back() == ':') unit.pop_back();
  check_surface(e.surface, l.precision, atom_bytes, unit + " element-wise operand");
  if (e.per_channel) {
    // PER_KERNEL: the RDMA reads channel c at c * DATA_SIZE, which a 1x1xC surface holds only
    // when its atoms follow one another (surface stride one atom).
    if (e.surface.width != 1 || e.surface.height != 1 || e.surface.channels != l.dst.channels) {
      throw FirmwareError(
          fmt::format("{} per-channel operand cube {}x{}x{} is not 1x1x{} (one value per channel)",
                      who, e.surface.width, e.surface.height, e.surface.channels, l.dst.channels));
    }
    if (e.surface.surface_stride != atom_bytes) {
      throw FirmwareError(fmt::format(
          "{} per-channel operand surface stride {} is not one {}-byte atom (the RDMA reads the "
          "operand as a linear table)",
          who, e.surface.surface_stride, atom_bytes));
    }
    check_unit(l, e, who);
    return;
  }
  if (e.surface.width != l.dst.width || e.surface.height != l.dst.height ||
      e.surface.channels != l.dst.channels) {
    throw FirmwareError(
        fmt::format("{} element-wise operand cube {}x{}x{} differs from the input cube {}x{}x{}",
                    who, e.surface.width, e.surface.height, e.surface.channels, l.dst.width,
                    l.dst.height, l.dst.channels));
  }
  check_unit(l, e, who);
}

void write_sdp_nrdma_erdma(Mmio& mmio, const SdpLayer& l, std::uint32_t op_stride) {
  const SdpElementwise* bn = sdp_bn_operand(l);
  const SdpElementwise* ew = sdp_ew_operand(l);
  const bool two = two_bytes(l.precision);
  if (bn != nullptr) {
    using C = RD::D_NRDMA_CFG;
    mmio.write32(C::kAddr,
                 sdp_rdma_cfg(true, add_op(*bn) ? C::NRDMA_DATA_USE_ALU : C::NRDMA_DATA_USE_MUL,
                              two, !bn->per_channel, bn->surface.ram));
    mmio.write32(RD::D_BN_BASE_ADDR_LOW::kAddr, low32(bn->surface.address));
    mmio.write32(RD::D_BN_BASE_ADDR_HIGH::kAddr, high32(bn->surface.address));
    mmio.write32(RD::D_BN_LINE_STRIDE::kAddr, bn->surface.line_stride);
    mmio.write32(RD::D_BN_SURFACE_STRIDE::kAddr, bn->surface.surface_stride);
  } else {
    using C = RD::D_NRDMA_CFG;
    const bool both = l.bn_bias_scale.has_value();
    const Ram ram = both ? l.bn_bias_scale->ram : l.scale ? l.scale->ram : Ram::kMc;
    mmio.write32(C::kAddr, sdp_rdma_cfg(l.scale.has_value() || both,
                                        both ? C::NRDMA_DATA_USE_BOTH : C::NRDMA_DATA_USE_MUL, true,
                                        false, ram));
    if (l.scale || both) {
      const std::uint64_t base = both ? l.bn_bias_scale->address : l.scale->address;
      const std::uint32_t stride = both ? 2 * op_stride : op_stride;
      mmio.write32(RD::D_BN_BASE_ADDR_LOW::kAddr, low32(base));
      mmio.write32(RD::D_BN_BASE_ADDR_HIGH::kAddr, high32(base));
      mmio.write32(RD::D_BN_LINE_STRIDE::kAddr, stride);
      mmio.write32(RD::D_BN_SURFACE_STRIDE::kAddr, stride);
    }
  }
  using E = RD::D_ERDMA_CFG;
  mmio.write32(E::kAddr, sdp_rdma_cfg(ew != nullptr,
                                      ew != nullptr && !add_op(*ew) ? E::ERDMA_DATA_USE_MUL
                                                                    : E::ERDMA_DATA_USE_ALU,
                                      two, ew == nullptr || !ew->per_channel,
                                      ew != nullptr ? ew->surface.ram : Ram::kMc));
  if (ew != nullptr) {
    mmio.write32(RD::D_EW_BASE_ADDR_LOW::kAddr, low32(ew->surface.address));
    mmio.write32(RD::D_EW_BASE_ADDR_HIGH::kAddr, high32(ew->surface.address));
    mmio.write32(RD::D_EW_LINE_STRIDE::kAddr, ew->surface.line_stride);
    mmio.write32(RD::D_EW_SURFACE_STRIDE::kAddr, ew->surface.surface_stride);
  }
}

namespace {

// BN: the per-channel multiplier or bias and multiplier (with the ReLU after them), the clamp
// (ALU MIN, register operand), or the element-wise operand (ALU SUM or the multiplier, from
// NRDMA) with BN's register rescale and the ReLU after it.
void write_bn_registers(Mmio& mmio, const SdpLayer& l, const SdpStages& st) {
  using C = S::D_DP_BN_CFG;
  const SdpElementwise* e = sdp_bn_operand(l);
  const bool e_add = e != nullptr && add_op(*e);
  const bool e_mul = e != nullptr && !e_add;
  const bool both = l.bn_bias_scale.has_value();
  const bool mul = l.scale.has_value() || both || e_mul || (e_add && e->rescale.has_value());
  std::uint32_t cfg = sdp_x_cfg(st.bn_used, e_add || both, mul, st.bn_relu,
                                e != nullptr && e->op == SdpEwOp::kPrelu);
  if (l.clamp_max) {
    cfg = C::BN_ALU_BYPASS.set(cfg, C::BN_ALU_BYPASS_NO);
    cfg = C::BN_ALU_ALGO.set(cfg, C::BN_ALU_ALGO_MIN);
  }
  mmio.write32(C::kAddr, cfg);
  using A = S::D_DP_BN_ALU_CFG;
  // A register operand without shift, or the element-wise operand shifted left.
  const unsigned alu_shift = both ? l.bn_bias_scale->alu_shift : e_add ? e->shift : 0;
  mmio.write32(A::kAddr, e_add || both ? A::BN_ALU_SRC.set(0, A::BN_ALU_SRC_MEM) |
                                             A::BN_ALU_SHIFT_VALUE.set(0, alu_shift)
                                       : 0u);
  mmio.write32(S::D_DP_BN_ALU_SRC_VALUE::kAddr,
               l.clamp_max ? static_cast<std::uint16_t>(*l.clamp_max) : 0u);
  using M = S::D_DP_BN_MUL_CFG;
  std::uint32_t mul_cfg = 0;
  std::uint32_t mul_value = 0;
  if (l.scale || both) {
    mul_cfg = M::BN_MUL_SRC.set(0, M::BN_MUL_SRC_MEM) |
              M::BN_MUL_SHIFT_VALUE.set(0, both ? l.bn_bias_scale->mul_shift : l.scale->shift);
  } else if (e_mul) {
    mul_cfg = M::BN_MUL_SRC.set(0, M::BN_MUL_SRC_MEM) | M::BN_MUL_SHIFT_VALUE.set(0, e->shift);
  } else if (e_add && e->rescale) {
    mul_cfg =
        M::BN_MUL_SRC.set(0, M::BN_MUL_SRC_REG) | M::BN_MUL_SHIFT_VALUE.set(0, e->rescale->shift);
    mul_value = static_cast<std::uint16_t>(e->rescale->value);
  }
  mmio.write32(M::kAddr, mul_cfg);
  mmio.write32(S::D_DP_BN_MUL_SRC_VALUE::kAddr, mul_value);
}

// The EW stage: bypassed, or the element-wise operand from ERDMA into the ALU (SUM) or the
// multiplier through its operand convertor (FP16: the identity, which FP16 needs not bypassed
// for a memory operand).
void write_ew_registers(Mmio& mmio, const SdpLayer& l) {
  using E = S::D_DP_EW_CFG;
  const SdpElementwise* e = sdp_ew_operand(l);
  const std::uint32_t lut =
      E::EW_LUT_BYPASS.set(0, l.lut ? E::EW_LUT_BYPASS_NO : E::EW_LUT_BYPASS_YES);
  if (e == nullptr) {
    mmio.write32(E::kAddr, E::EW_BYPASS.set(0, l.lut ? E::EW_BYPASS_NO : E::EW_BYPASS_YES) |
                               E::EW_ALU_BYPASS.set(0, E::EW_ALU_BYPASS_YES) |
                               E::EW_MUL_BYPASS.set(0, E::EW_MUL_BYPASS_YES) | lut);
    return;
  }
  const bool add = add_op(*e);
  const bool fp16 = l.precision == Precision::kFp16;
  mmio.write32(E::kAddr,
               E::EW_BYPASS.set(0, E::EW_BYPASS_NO) |
                   E::EW_ALU_BYPASS.set(0, add ? E::EW_ALU_BYPASS_NO : E::EW_ALU_BYPASS_YES) |
                   E::EW_ALU_ALGO.set(0, E::EW_ALU_ALGO_SUM) |
                   E::EW_MUL_BYPASS.set(0, add ? E::EW_MUL_BYPASS_YES : E::EW_MUL_BYPASS_NO) |
                   E::EW_MUL_PRELU.set(
                       0, e->op == SdpEwOp::kPrelu ? E::EW_MUL_PRELU_YES : E::EW_MUL_PRELU_NO) |
                   lut);
  // FP16: offset FP32 0.0, scale FP16 1.0, truncate 0.
  const std::uint32_t offset = fp16 ? 0u : static_cast<std::uint32_t>(e->cvt.offset);
  const std::uint32_t scale = fp16 ? kFp16One : static_cast<std::uint16_t>(e->cvt.scale);
  const std::uint32_t truncate = fp16 ? 0u : e->cvt.truncate;
  if (add) {
    using A = S::D_DP_EW_ALU_CFG;
    mmio.write32(A::kAddr, A::EW_ALU_SRC.set(0, A::EW_ALU_SRC_MEM) |
                               A::EW_ALU_CVT_BYPASS.set(0, A::EW_ALU_CVT_BYPASS_NO));
    mmio.write32(S::D_DP_EW_ALU_SRC_VALUE::kAddr, 0);
    mmio.write32(S::D_DP_EW_ALU_CVT_OFFSET_VALUE::kAddr, offset);
    mmio.write32(S::D_DP_EW_ALU_CVT_SCALE_VALUE::kAddr, scale);
    mmio.write32(S::D_DP_EW_ALU_CVT_TRUNCATE_VALUE::kAddr, truncate);
  } else {
    using M = S::D_DP_EW_MUL_CFG;
    mmio.write32(M::kAddr, M::EW_MUL_SRC.set(0, M::EW_MUL_SRC_MEM) |
                               M::EW_MUL_CVT_BYPASS.set(0, M::EW_MUL_CVT_BYPASS_NO));
    mmio.write32(S::D_DP_EW_MUL_SRC_VALUE::kAddr, 0);
    mmio.write32(S::D_DP_EW_MUL_CVT_OFFSET_VALUE::kAddr, offset);
    mmio.write32(S::D_DP_EW_MUL_CVT_SCALE_VALUE::kAddr, scale);
    mmio.write32(S::D_DP_EW_MUL_CVT_TRUNCATE_VALUE::kAddr, truncate);
  }
  mmio.write32(S::D_DP_EW_TRUNCATE_VALUE::kAddr, add || fp16 ? 0u : e->truncate);
}

models::ops::SdpOperandSurface model_operand(const SdpLayer& l, const SdpElementwise& e) {
  models::ops::SdpOperandSurface s;
  s.enabled = true;
  s.use = add_op(e) ? models::ops::SdpDataUse::kAlu : models::ops::SdpDataUse::kMul;
  s.bytes_per_component = two_bytes(l.precision) ? 2 : 1;
  s.mode =
      e.per_channel ? models::ops::SdpDataMode::kPerChannel : models::ops::SdpDataMode::kPerElement;
  s.base = e.surface.address;
  s.line_stride = e.surface.line_stride;
  s.surface_stride = e.surface.surface_stride;
  return s;
}

}  // namespace

void write_sdp_bn_ew(Mmio& mmio, const SdpLayer& l, const SdpStages& st) {
  write_bn_registers(mmio, l, st);
  write_ew_registers(mmio, l);
}

void set_model_sdp_ew(const SdpLayer& l, models::ops::SdpConfig& c) {
  using models::ops::SdpOperandSource;
  if (!l.ew) return;
  const SdpElementwise& e = *l.ew;
  const bool add = add_op(e);
  if (e.unit == SdpEwUnit::kBn) {
    c.nrdma = model_operand(l, e);
    c.bn.bypass = false;
    if (add) {
      c.bn.alu_bypass = false;
      c.bn.alu_algo = models::SdpAluAlgo::kSum;
      c.bn.alu_src = SdpOperandSource::kMemory;
      c.bn.alu_shift = static_cast<std::uint8_t>(e.shift);
      c.bn.mul_bypass = !e.rescale.has_value();
      c.bn.mul_src = SdpOperandSource::kRegister;
      c.bn.mul_operand = e.rescale ? e.rescale->value : 0;
      c.bn.mul_shift = static_cast<std::uint8_t>(e.rescale ? e.rescale->shift : 0);
    } else {
      c.bn.mul_bypass = false;
      c.bn.mul_prelu = e.op == SdpEwOp::kPrelu;
      c.bn.mul_src = SdpOperandSource::kMemory;
      c.bn.mul_shift = static_cast<std::uint8_t>(e.shift);
    }
    return;
  }
  c.erdma = model_operand(l, e);
  c.ew.bypass = false;
  c.ew.lut_bypass = !l.lut.has_value();
  const models::ops::SdpEwConvertor cvt =
      l.precision == Precision::kFp16
          ? models::ops::SdpEwConvertor{false, 0, static_cast<std::int16_t>(kFp16One), 0}
          : models::ops::SdpEwConvertor{false, e.cvt.offset, e.cvt.scale,
                                        static_cast<std::uint8_t>(e.cvt.truncate)};
  if (add) {
    c.ew.alu_bypass = false;
    c.ew.alu_algo = models::SdpAluAlgo::kSum;
    c.ew.alu_src = SdpOperandSource::kMemory;
    c.ew.alu_cvt = cvt;
  } else {
    c.ew.mul_bypass = false;
    c.ew.mul_prelu = e.op == SdpEwOp::kPrelu;
    c.ew.mul_src = SdpOperandSource::kMemory;
    c.ew.mul_cvt = cvt;
    c.ew.truncate = static_cast<std::uint16_t>(l.precision == Precision::kFp16 ? 0 : e.truncate);
  }
}

}  // namespace octasim::firmware::detail
