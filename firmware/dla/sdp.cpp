#include "firmware/dla/sdp.hpp"

#include <fmt/core.h>

#include "firmware/dla/sdp_ew.hpp"
#include "firmware/dla/sdp_quantize.hpp"

#include "models/numerics/float_format.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

namespace S = regs::SDP;
namespace RD = regs::SDP_RDMA;

// Precision conversion: INT16 -> FP16 or FP16 -> INT16 (NVDLA's SDP converts nothing else
// between the pipelines), memory to memory.
void check_conversion(const SdpLayer& l) {
  const Precision out = l.output_precision();
  if (out == l.precision) return;
  const bool int16_fp16 = l.precision == Precision::kInt16 && out == Precision::kFp16;
  const bool fp16_int16 = l.precision == Precision::kFp16 && out == Precision::kInt16;
  if (!int16_fp16 && !fp16_int16) {
    throw FirmwareError(fmt::format(
        "SDP: precision conversion {} -> {} is not encoded (INT16 -> FP16 and FP16 -> INT16 only)",
        precision_name(l.precision), precision_name(out)));
  }
  if (l.output_to_pdp || l.batches != 1) {
    throw FirmwareError("SDP: a precision conversion writes memory (no output to PDP, one batch)");
  }
}

void check_layer(const SdpLayer& l, unsigned group, unsigned atom_bytes) {
  if (group > 1) throw FirmwareError(fmt::format("SDP: register group {} is not 0 or 1", group));
  check_conversion(l);
  detail::check_quantize(l, atom_bytes);
  check_surface(l.src, l.precision, atom_bytes, "SDP input");
  check_surface(l.dst, l.output_precision(), atom_bytes, "SDP output");
  if (l.src.width != l.dst.width || l.src.height != l.dst.height ||
      l.src.channels != l.dst.channels) {
    throw FirmwareError(fmt::format(
        "SDP: output cube {}x{}x{} differs from the input cube {}x{}x{} (SDP keeps the shape)",
        l.dst.width, l.dst.height, l.dst.channels, l.src.width, l.src.height, l.src.channels));
  }
  check_sdp_stage(l, atom_bytes, "SDP:");
}

// Bytes of per-channel operands per C' surface (packed 1x1xC cube of INT16).
std::uint32_t operand_surface_bytes(const SdpLayer& l, unsigned atom_bytes) {
  return channels_per_atom(l.precision, atom_bytes) * 2u;
}

// BRDMA's stream: the bias alone (ALU) or bias and multiplier (BOTH).
bool brdma_used(const SdpLayer& l) {
  return l.bias.has_value() || l.bias_scale.has_value();
}

// FP16 has no operand shifts and no output convertor (the X stages compute in FP32, the output is
// rounded to FP16).
void check_fp16_stage(const SdpLayer& l, const char* who) {
  const bool shifted =
      (l.bias && l.bias->shift != 0) || (l.scale && l.scale->shift != 0) ||
      (l.bias_scale && (l.bias_scale->alu_shift != 0 || l.bias_scale->mul_shift != 0)) ||
      (l.bn_bias_scale && (l.bn_bias_scale->alu_shift != 0 || l.bn_bias_scale->mul_shift != 0)) ||
      (l.prelu && l.prelu->shift != 0);
  if (shifted) throw FirmwareError(fmt::format("{} FP16 operands take no shift (0 expected)", who));
  if (l.cvt.offset != 0 || l.cvt.scale != 1 || l.cvt.shift != 0) {
    throw FirmwareError(fmt::format(
        "{} FP16 has no output convertor: offset 0, scale 1, shift 0 expected (got {}, {}, {})",
        who, l.cvt.offset, l.cvt.scale, l.cvt.shift));
  }
}

}  // namespace

std::vector<std::uint8_t> sdp_bias_scale_table(const std::vector<std::int16_t>& alu,
                                               const std::vector<std::int16_t>& mul,
                                               Precision precision, unsigned atom_bytes) {
  if (alu.size() != mul.size()) {
    throw FirmwareError(
        fmt::format("SDP: {} bias operands for {} multipliers", alu.size(), mul.size()));
  }
  std::vector<std::int16_t> both(alu.size() * 2);
  for (std::size_t c = 0; c < alu.size(); ++c) {
    both[2 * c] = alu[c];
    both[2 * c + 1] = mul[c];
  }
  // Two INT16 components per channel: the table of 2C values padded to 2C' per surface.
  std::vector<std::uint8_t> bytes = sdp_per_channel_table(both, precision, atom_bytes);
  const unsigned cpa = channels_per_atom(precision, atom_bytes);
  if (cpa != 0) bytes.resize((alu.size() + cpa - 1) / cpa * cpa * 4, 0);
  return bytes;
}

std::vector<std::uint8_t> sdp_per_channel_table(const std::vector<std::int16_t>& values,
                                                Precision precision, unsigned atom_bytes) {
  const unsigned cpa = channels_per_atom(precision, atom_bytes);
  const std::size_t lanes = cpa == 0 ? values.size() : (values.size() + cpa - 1) / cpa * cpa;
  std::vector<std::uint8_t> bytes(lanes * 2, 0);
  for (std::size_t c = 0; c < values.size(); ++c) {
    const auto bits = static_cast<std::uint16_t>(values[c]);
    bytes[2 * c] = static_cast<std::uint8_t>(bits);
    bytes[2 * c + 1] = static_cast<std::uint8_t>(bits >> 8);
  }
  return bytes;
}

std::vector<std::uint8_t> sdp_fp16_table(const std::vector<float>& values, unsigned atom_bytes) {
  std::vector<std::int16_t> bits(values.size());
  for (std::size_t c = 0; c < values.size(); ++c) {
    bits[c] = static_cast<std::int16_t>(models::fp16_from_float(values[c]));
  }
  return sdp_per_channel_table(bits, Precision::kFp16, atom_bytes);
}

std::vector<std::uint8_t> sdp_fp16_bias_scale_table(const std::vector<float>& bias,
                                                    const std::vector<float>& scale,
                                                    unsigned atom_bytes) {
  std::vector<std::int16_t> alu(bias.size()), mul(scale.size());
  for (std::size_t c = 0; c < bias.size(); ++c) {
    alu[c] = static_cast<std::int16_t>(models::fp16_from_float(bias[c]));
  }
  for (std::size_t c = 0; c < scale.size(); ++c) {
    mul[c] = static_cast<std::int16_t>(models::fp16_from_float(scale[c]));
  }
  return sdp_bias_scale_table(alu, mul, Precision::kFp16, atom_bytes);
}

void check_sdp_stage(const SdpLayer& l, unsigned atom_bytes, const char* who) {
  const auto operand = [&](const std::optional<SdpPerChannel>& op, const char* what) {
    if (!op) return;
    if (op->shift > 63) {
      throw FirmwareError(fmt::format("{} {} shift {} is outside 0..63", who, what, op->shift));
    }
    if (op->address % atom_bytes != 0) {
      throw FirmwareError(
          fmt::format("{} {} table address 0x{:x} is not aligned to the {}-byte atom", who, what,
                      op->address, atom_bytes));
    }
  };
  operand(l.bias, "bias");
  operand(l.scale, "scale");
  if (l.bias_scale) {
    if (l.bias) throw FirmwareError(fmt::format("{} bias and bias_scale both given", who));
    operand(SdpPerChannel{l.bias_scale->address, l.bias_scale->alu_shift}, "bias/scale");
    if (l.bias_scale->mul_shift > 63) {
      throw FirmwareError(fmt::format("{} bias/scale multiplier shift {} is outside 0..63", who,
                                      l.bias_scale->mul_shift));
    }
  }
  if (l.clamp_min && (l.bias || l.bias_scale)) {
    throw FirmwareError(
        fmt::format("{} clamp_min and {} both need BS's ALU", who, l.bias ? "bias" : "bias_scale"));
  }
  if (l.prelu && l.bias_scale) {
    throw FirmwareError(fmt::format("{} prelu and bias_scale both need BS's multiplier", who));
  }
  if (l.prelu && l.prelu->shift > 63) {
    throw FirmwareError(fmt::format("{} PReLU shift {} is outside 0..63", who, l.prelu->shift));
  }
  if (l.clamp_max && l.scale) {
    throw FirmwareError(fmt::format("{} clamp_max and scale both need the BN stage", who));
  }
  if (l.bn_bias_scale) {
    if (l.scale || l.clamp_max) {
      throw FirmwareError(fmt::format("{} bn_bias_scale and {} both need the BN stage", who,
                                      l.scale ? "scale" : "clamp_max"));
    }
    operand(SdpPerChannel{l.bn_bias_scale->address, l.bn_bias_scale->alu_shift}, "BN bias/scale");
    if (l.bn_bias_scale->mul_shift > 63) {
      throw FirmwareError(fmt::format("{} BN bias/scale multiplier shift {} is outside 0..63", who,
                                      l.bn_bias_scale->mul_shift));
    }
  }
  if (l.cvt.shift > 63) {
    throw FirmwareError(
        fmt::format("{} output convertor shift {} is outside 0..63", who, l.cvt.shift));
  }
  if (l.precision == Precision::kFp16) check_fp16_stage(l, who);
  if (l.lut && (l.precision == Precision::kFp16 || l.quantize)) {
    throw FirmwareError(
        fmt::format("{} the LUT is encoded for the INT8/INT16 pipelines only (not FP16)", who));
  }
  detail::check_sdp_ew(l, atom_bytes, who);
}

bool sdp_rdma_used(const SdpLayer& l, SdpInput input) {
  return input == SdpInput::kMemory || brdma_used(l) || l.scale.has_value() ||
         l.bn_bias_scale.has_value() || l.ew.has_value();
}

namespace {

void write_operand_rdma_registers(Mmio& mmio, const SdpLayer& l, std::uint32_t op_stride);

// SDP_RDMA's D_ registers: the input surface (memory input only), the operand tables and the
// data path's mode.
void write_sdp_rdma_registers(Mmio& mmio, const SdpLayer& l, SdpInput input, unsigned atom_bytes) {
  const auto p = static_cast<std::uint32_t>(l.precision);
  const std::uint32_t op_stride = operand_surface_bytes(l, atom_bytes);
  mmio.write32(RD::D_DATA_CUBE_WIDTH::kAddr, l.src.width - 1);
  mmio.write32(RD::D_DATA_CUBE_HEIGHT::kAddr, l.src.height - 1);
  mmio.write32(RD::D_DATA_CUBE_CHANNEL::kAddr, l.src.channels - 1);
  if (input == SdpInput::kMemory) {
    mmio.write32(RD::D_SRC_BASE_ADDR_LOW::kAddr, low32(l.src.address));
    mmio.write32(RD::D_SRC_BASE_ADDR_HIGH::kAddr, high32(l.src.address));
    mmio.write32(RD::D_SRC_LINE_STRIDE::kAddr, l.src.line_stride);
    mmio.write32(RD::D_SRC_SURFACE_STRIDE::kAddr, l.src.surface_stride);
    mmio.write32(RD::D_SRC_DMA_CFG::kAddr, RD::D_SRC_DMA_CFG::SRC_RAM_TYPE.set(0, ram_type(l.src)));
  }
  if (l.quantize) {
    detail::write_quantize_rdma(mmio, *l.quantize, op_stride);
  } else {
    write_operand_rdma_registers(mmio, l, op_stride);
  }
  using M = RD::D_FEATURE_MODE_CFG;
  std::uint32_t v =
      M::FLYING_MODE.set(0, input == SdpInput::kFlying ? M::FLYING_MODE_ON : M::FLYING_MODE_OFF);
  v = M::IN_PRECISION.set(v, p);
  v = M::PROC_PRECISION.set(v, p);
  mmio.write32(M::kAddr, M::OUT_PRECISION.set(v, static_cast<std::uint32_t>(l.output_precision())));
}

// BRDMA, NRDMA and ERDMA for the layer's bias / scale tables and element-wise operand.
void write_operand_rdma_registers(Mmio& mmio, const SdpLayer& l, std::uint32_t op_stride) {
  const Ram bs_ram = l.bias ? l.bias->ram : l.bias_scale ? l.bias_scale->ram : Ram::kMc;
  mmio.write32(RD::D_BRDMA_CFG::kAddr,
               detail::sdp_rdma_cfg(brdma_used(l),
                                    l.bias_scale ? RD::D_BRDMA_CFG::BRDMA_DATA_USE_BOTH
                                                 : RD::D_BRDMA_CFG::BRDMA_DATA_USE_ALU,
                                    true, false, bs_ram));
  if (brdma_used(l)) {
    const std::uint64_t base = l.bias ? l.bias->address : l.bias_scale->address;
    const std::uint32_t stride = l.bias_scale ? 2 * op_stride : op_stride;
    mmio.write32(RD::D_BS_BASE_ADDR_LOW::kAddr, low32(base));
    mmio.write32(RD::D_BS_BASE_ADDR_HIGH::kAddr, high32(base));
    mmio.write32(RD::D_BS_LINE_STRIDE::kAddr, stride);
    mmio.write32(RD::D_BS_SURFACE_STRIDE::kAddr, stride);
  }
  detail::write_sdp_nrdma_erdma(mmio, l, op_stride);
}

// BS, BN and EW for the layer's bias, scale, clamp, ReLU and element-wise operand.
void write_stage_registers(Mmio& mmio, const SdpLayer& l, const detail::SdpStages& st) {
  using C = S::D_DP_BS_CFG;
  const unsigned alu_shift = l.bias ? l.bias->shift : l.bias_scale ? l.bias_scale->alu_shift : 0;
  std::uint32_t cfg = detail::sdp_x_cfg(st.bs_used, st.bs_alu, st.bs_mul || l.prelu.has_value(),
                                        st.bs_relu, l.prelu.has_value());
  if (l.clamp_min) {
    cfg = C::BS_ALU_BYPASS.set(cfg, C::BS_ALU_BYPASS_NO);
    cfg = C::BS_ALU_ALGO.set(cfg, C::BS_ALU_ALGO_MAX);
  }
  mmio.write32(C::kAddr, cfg);
  // A memory operand, or the register operand of the clamp (BS_ALU_SRC=REG, the reset value).
  mmio.write32(S::D_DP_BS_ALU_CFG::kAddr,
               st.bs_alu
                   ? S::D_DP_BS_ALU_CFG::BS_ALU_SRC.set(0, S::D_DP_BS_ALU_CFG::BS_ALU_SRC_MEM) |
                         S::D_DP_BS_ALU_CFG::BS_ALU_SHIFT_VALUE.set(0, alu_shift)
                   : 0u);
  mmio.write32(S::D_DP_BS_ALU_SRC_VALUE::kAddr,
               l.clamp_min ? static_cast<std::uint16_t>(*l.clamp_min) : 0u);
  using M = S::D_DP_BS_MUL_CFG;
  mmio.write32(M::kAddr, st.bs_mul ? M::BS_MUL_SRC.set(0, M::BS_MUL_SRC_MEM) |
                                         M::BS_MUL_SHIFT_VALUE.set(0, l.bias_scale->mul_shift)
                         : l.prelu ? M::BS_MUL_SRC.set(0, M::BS_MUL_SRC_REG) |
                                         M::BS_MUL_SHIFT_VALUE.set(0, l.prelu->shift)
                                   : 0u);
  mmio.write32(S::D_DP_BS_MUL_SRC_VALUE::kAddr,
               l.prelu ? static_cast<std::uint16_t>(l.prelu->value) : 0u);

  detail::write_sdp_bn_ew(mmio, l, st);
}

// SDP's D_ registers: the cube, the output surface, the BS, BN and EW stages, the mode and the
// output convertor.
void write_sdp_core_registers(Mmio& mmio, const SdpLayer& l, SdpInput input) {
  const detail::SdpStages st = detail::sdp_stages(l);
  const auto p = static_cast<std::uint32_t>(l.precision);
  mmio.write32(S::D_DATA_CUBE_WIDTH::kAddr, l.src.width - 1);
  mmio.write32(S::D_DATA_CUBE_HEIGHT::kAddr, l.src.height - 1);
  mmio.write32(S::D_DATA_CUBE_CHANNEL::kAddr, l.src.channels - 1);
  mmio.write32(S::D_DST_BASE_ADDR_LOW::kAddr, low32(l.dst.address));
  mmio.write32(S::D_DST_BASE_ADDR_HIGH::kAddr, high32(l.dst.address));
  mmio.write32(S::D_DST_LINE_STRIDE::kAddr, l.dst.line_stride);
  mmio.write32(S::D_DST_SURFACE_STRIDE::kAddr, l.dst.surface_stride);

  if (l.quantize) {
    detail::write_quantize_stages(mmio, *l.quantize);
  } else {
    write_stage_registers(mmio, l, st);
  }
  {
    using M = S::D_FEATURE_MODE_CFG;
    mmio.write32(
        M::kAddr,
        M::FLYING_MODE.set(0, input == SdpInput::kFlying ? M::FLYING_MODE_ON : M::FLYING_MODE_OFF) |
            M::OUTPUT_DST.set(0, l.output_to_pdp ? M::OUTPUT_DST_PDP : M::OUTPUT_DST_MEM) |
            M::WINOGRAD.set(0, M::WINOGRAD_OFF) | M::NAN_TO_ZERO.set(0, M::NAN_TO_ZERO_DISABLE) |
            M::BATCH_NUMBER.set(0, l.batches - 1));
  }
  if (l.batches > 1) mmio.write32(S::D_DST_BATCH_STRIDE::kAddr, l.dst_batch_stride);
  mmio.write32(S::D_DST_DMA_CFG::kAddr, S::D_DST_DMA_CFG::DST_RAM_TYPE.set(0, ram_type(l.dst)));
  mmio.write32(
      S::D_DATA_FORMAT::kAddr,
      S::D_DATA_FORMAT::PROC_PRECISION.set(0, p) |
          S::D_DATA_FORMAT::OUT_PRECISION.set(0, static_cast<std::uint32_t>(l.output_precision())));
  mmio.write32(S::D_CVT_OFFSET::kAddr, static_cast<std::uint32_t>(l.cvt.offset));
  mmio.write32(S::D_CVT_SCALE::kAddr, static_cast<std::uint16_t>(l.cvt.scale));
  mmio.write32(S::D_CVT_SHIFT::kAddr, l.cvt.shift);
  mmio.write32(S::D_PERF_ENABLE::kAddr,
               S::D_PERF_ENABLE::PERF_SAT_EN.set(0, l.count_saturation ? 1 : 0) |
                   S::D_PERF_ENABLE::PERF_LUT_EN.set(0, l.lut && l.count_lut ? 1 : 0));
}

// The shared LUT: both tables through the auto-incrementing access port from entry 0
// (lut-programming.rst, "LUT storage programming"), LE then LO, then the S_LUT_* registers.
void write_sdp_lut(Mmio& mmio, const models::ops::SdpLutConfig& lut) {
  using A = S::S_LUT_ACCESS_CFG;
  const std::uint32_t write = A::LUT_ACCESS_TYPE.set(0, A::LUT_ACCESS_TYPE_WRITE);
  mmio.write32(A::kAddr, write | A::LUT_TABLE_ID.set(0, A::LUT_TABLE_ID_LE));
  for (const std::int16_t e : lut.le) {
    mmio.write32(S::S_LUT_ACCESS_DATA::kAddr, static_cast<std::uint16_t>(e));
  }
  mmio.write32(A::kAddr, write | A::LUT_TABLE_ID.set(0, A::LUT_TABLE_ID_LO));
  for (const std::int16_t e : lut.lo) {
    mmio.write32(S::S_LUT_ACCESS_DATA::kAddr, static_cast<std::uint16_t>(e));
  }
  using Cfg = S::S_LUT_CFG;
  mmio.write32(
      Cfg::kAddr,
      Cfg::LUT_LE_FUNCTION.set(
          0, lut.le_linear ? Cfg::LUT_LE_FUNCTION_LINEAR : Cfg::LUT_LE_FUNCTION_EXPONENT) |
          Cfg::LUT_UFLOW_PRIORITY.set(
              0, lut.uflow_priority_lo ? Cfg::LUT_UFLOW_PRIORITY_LO : Cfg::LUT_UFLOW_PRIORITY_LE) |
          Cfg::LUT_OFLOW_PRIORITY.set(
              0, lut.oflow_priority_lo ? Cfg::LUT_OFLOW_PRIORITY_LO : Cfg::LUT_OFLOW_PRIORITY_LE) |
          Cfg::LUT_HYBRID_PRIORITY.set(0, lut.hybrid_priority_lo ? Cfg::LUT_HYBRID_PRIORITY_LO
                                                                 : Cfg::LUT_HYBRID_PRIORITY_LE));
  using Info = S::S_LUT_INFO;
  const auto byte = [](std::int8_t v) {
    return static_cast<std::uint32_t>(static_cast<std::uint8_t>(v));
  };
  mmio.write32(Info::kAddr, Info::LUT_LE_INDEX_OFFSET.set(0, byte(lut.le_index_offset)) |
                                Info::LUT_LE_INDEX_SELECT.set(0, byte(lut.le_index_select)) |
                                Info::LUT_LO_INDEX_SELECT.set(0, byte(lut.lo_index_select)));
  mmio.write32(S::S_LUT_LE_START::kAddr, static_cast<std::uint32_t>(lut.le_start));
  mmio.write32(S::S_LUT_LE_END::kAddr, static_cast<std::uint32_t>(lut.le_end));
  mmio.write32(S::S_LUT_LO_START::kAddr, static_cast<std::uint32_t>(lut.lo_start));
  mmio.write32(S::S_LUT_LO_END::kAddr, static_cast<std::uint32_t>(lut.lo_end));
  const auto scale = [](std::int16_t uflow, std::int16_t oflow) {
    return static_cast<std::uint32_t>(static_cast<std::uint16_t>(uflow)) |
           static_cast<std::uint32_t>(static_cast<std::uint16_t>(oflow)) << 16;
  };
  const auto shift = [](std::int8_t uflow, std::int8_t oflow) {
    return (static_cast<std::uint32_t>(uflow) & 0x1fu) | (static_cast<std::uint32_t>(oflow) & 0x1fu)
                                                             << 5;
  };
  mmio.write32(S::S_LUT_LE_SLOPE_SCALE::kAddr, scale(lut.le_uflow_scale, lut.le_oflow_scale));
  mmio.write32(S::S_LUT_LE_SLOPE_SHIFT::kAddr, shift(lut.le_uflow_shift, lut.le_oflow_shift));
  mmio.write32(S::S_LUT_LO_SLOPE_SCALE::kAddr, scale(lut.lo_uflow_scale, lut.lo_oflow_scale));
  mmio.write32(S::S_LUT_LO_SLOPE_SHIFT::kAddr, shift(lut.lo_uflow_shift, lut.lo_oflow_shift));
}

}  // namespace

void write_sdp_registers(Mmio& mmio, const SdpLayer& l, SdpInput input, unsigned atom_bytes) {
  if (sdp_rdma_used(l, input)) write_sdp_rdma_registers(mmio, l, input, atom_bytes);
  write_sdp_core_registers(mmio, l, input);
}

unsigned program_sdp(Mmio& mmio, const SdpLayer& l, unsigned group, unsigned atom_bytes,
                     int rdma_group) {
  check_layer(l, group, atom_bytes);
  const unsigned rg = rdma_group < 0 ? group : static_cast<unsigned>(rdma_group);
  if (rg > 1) throw FirmwareError(fmt::format("SDP_RDMA: register group {} is not 0 or 1", rg));
  mmio.write32(S::S_POINTER::kAddr, S::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(RD::S_POINTER::kAddr, RD::S_POINTER::PRODUCER.set(0, rg));
  if (l.lut) write_sdp_lut(mmio, *l.lut);
  write_sdp_registers(mmio, l, SdpInput::kMemory, atom_bytes);
  mmio.write32(RD::D_OP_ENABLE::kAddr, RD::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(S::D_OP_ENABLE::kAddr, S::D_OP_ENABLE::OP_EN_ENABLE);
  return regs::GLB::S_INTR_STATUS::SDP_DONE_STATUS0.lsb + group;
}

models::ops::SdpConfig sdp_model_config(const SdpLayer& l, unsigned atom_bytes) {
  check_layer(l, 0, atom_bytes);
  using models::ops::SdpDataMode;
  using models::ops::SdpDataUse;
  using models::ops::SdpOperandSource;
  using models::ops::SdpPrecision;
  const detail::SdpStages st = detail::sdp_stages(l);
  const auto prec = static_cast<SdpPrecision>(l.precision);
  const std::uint32_t op_stride = operand_surface_bytes(l, atom_bytes);

  models::ops::SdpConfig c;
  c.width = l.src.width;
  c.height = l.src.height;
  c.channels = l.src.channels;
  c.in_precision = c.proc_precision = prec;
  c.out_precision = static_cast<SdpPrecision>(l.output_precision());
  c.atom_bytes = atom_bytes;
  c.src_base = l.src.address;
  c.src_line_stride = l.src.line_stride;
  c.src_surface_stride = l.src.surface_stride;
  c.dst_base = l.dst.address;
  c.dst_line_stride = l.dst.line_stride;
  c.dst_surface_stride = l.dst.surface_stride;
  c.batches = l.batches;
  c.dst_batch_stride = l.dst_batch_stride;

  const auto operand = [&](const SdpPerChannel& op, SdpDataUse use) {
    models::ops::SdpOperandSurface s;
    s.enabled = true;
    s.use = use;
    s.bytes_per_component = 2;
    s.mode = SdpDataMode::kPerChannel;
    s.base = op.address;
    s.line_stride = op_stride;
    s.surface_stride = op_stride;
    return s;
  };

  c.bs.bypass = !st.bs_used;
  c.bs.relu_bypass = !st.bs_relu;
  if (l.bias) {
    c.brdma = operand(*l.bias, SdpDataUse::kAlu);
    c.bs.alu_bypass = false;
    c.bs.alu_algo = models::SdpAluAlgo::kSum;
    c.bs.alu_src = SdpOperandSource::kMemory;
    c.bs.alu_shift = static_cast<std::uint8_t>(l.bias->shift);
  }
  if (l.bias_scale) {
    c.brdma = operand(SdpPerChannel{l.bias_scale->address, 0}, SdpDataUse::kBoth);
    c.brdma.line_stride = c.brdma.surface_stride = 2 * op_stride;
    c.bs.alu_bypass = false;
    c.bs.alu_algo = models::SdpAluAlgo::kSum;
    c.bs.alu_src = SdpOperandSource::kMemory;
    c.bs.alu_shift = static_cast<std::uint8_t>(l.bias_scale->alu_shift);
    c.bs.mul_bypass = false;
    c.bs.mul_src = SdpOperandSource::kMemory;
    c.bs.mul_shift = static_cast<std::uint8_t>(l.bias_scale->mul_shift);
  }
  // A clamp: the X ALU's MAX or MIN with a register operand.
  const auto clamp = [](models::ops::SdpXConfig& x, models::SdpAluAlgo algo, std::int16_t bound) {
    x.alu_bypass = false;
    x.alu_algo = algo;
    x.alu_src = SdpOperandSource::kRegister;
    x.alu_operand = bound;
  };
  if (l.clamp_min) clamp(c.bs, models::SdpAluAlgo::kMax, *l.clamp_min);
  if (l.prelu) {
    c.bs.mul_bypass = false;
    c.bs.mul_prelu = true;
    c.bs.mul_src = SdpOperandSource::kRegister;
    c.bs.mul_operand = l.prelu->value;
    c.bs.mul_shift = static_cast<std::uint8_t>(l.prelu->shift);
  }
  c.bn.bypass = !st.bn_used;
  c.bn.relu_bypass = !st.bn_relu;
  if (l.bn_bias_scale) {
    c.nrdma = operand(SdpPerChannel{l.bn_bias_scale->address, 0}, SdpDataUse::kBoth);
    c.nrdma.line_stride = c.nrdma.surface_stride = 2 * op_stride;
    c.bn.alu_bypass = c.bn.mul_bypass = false;
    c.bn.alu_algo = models::SdpAluAlgo::kSum;
    c.bn.alu_src = c.bn.mul_src = SdpOperandSource::kMemory;
    c.bn.alu_shift = static_cast<std::uint8_t>(l.bn_bias_scale->alu_shift);
    c.bn.mul_shift = static_cast<std::uint8_t>(l.bn_bias_scale->mul_shift);
  }
  if (l.clamp_max) clamp(c.bn, models::SdpAluAlgo::kMin, *l.clamp_max);
  if (l.scale) {
    c.nrdma = operand(*l.scale, SdpDataUse::kMul);
    c.bn.mul_bypass = false;
    c.bn.mul_src = SdpOperandSource::kMemory;
    c.bn.mul_shift = static_cast<std::uint8_t>(l.scale->shift);
  }
  detail::set_model_sdp_ew(l, c);
  if (l.lut) {
    c.ew.bypass = false;
    c.ew.lut_bypass = false;
    c.lut = *l.lut;
  }
  if (l.quantize) detail::set_model_quantize(*l.quantize, op_stride, c);
  c.cvt.offset = l.cvt.offset;
  c.cvt.scale = l.cvt.scale;
  c.cvt.shift = static_cast<std::uint8_t>(l.cvt.shift);
  return c;
}

}  // namespace octasim::firmware
