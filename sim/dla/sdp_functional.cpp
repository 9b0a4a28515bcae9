#include "sim/dla/sdp_functional.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "octasim/regs/nvdla.hpp"

namespace octasim::dla {
namespace {

namespace R = octasim::regs;
using Field = R::Field;
using models::SdpAluAlgo;
using models::ops::SdpConfig;
using models::ops::SdpDataMode;
using models::ops::SdpDataUse;
using models::ops::SdpEwConvertor;
using models::ops::SdpOperandSource;
using models::ops::SdpOperandSurface;
using models::ops::SdpPrecision;
using models::ops::SdpXConfig;

SdpPrecision decode_precision(std::uint32_t value, const char* what) {
  if (value > 2) {
    throw std::runtime_error(std::string("SDP ") + what + " has the reserved value " +
                             std::to_string(value) + " (expected 0 INT8, 1 INT16 or 2 FP16)");
  }
  return static_cast<SdpPrecision>(value);
}

SdpOperandSource source(std::uint32_t bit) {
  return bit != 0 ? SdpOperandSource::kMemory : SdpOperandSource::kRegister;
}

SdpXConfig decode_x(const RegRead& regs, std::uint32_t cfg_addr, std::uint32_t alu_cfg_addr,
                    std::uint32_t alu_value_addr, std::uint32_t mul_cfg_addr,
                    std::uint32_t mul_value_addr, const Field& bypass, const Field& alu_bypass,
                    const Field& alu_algo, const Field& mul_bypass, const Field& mul_prelu,
                    const Field& relu_bypass, const Field& alu_src, const Field& alu_shift,
                    const Field& mul_src, const Field& mul_shift) {
  const std::uint32_t cfg = regs(cfg_addr);
  const std::uint32_t alu_cfg = regs(alu_cfg_addr);
  const std::uint32_t mul_cfg = regs(mul_cfg_addr);
  SdpXConfig x;
  x.bypass = bypass.get(cfg) != 0;
  x.alu_bypass = alu_bypass.get(cfg) != 0;
  x.alu_algo = static_cast<SdpAluAlgo>(alu_algo.get(cfg));
  x.mul_bypass = mul_bypass.get(cfg) != 0;
  x.mul_prelu = mul_prelu.get(cfg) != 0;
  x.relu_bypass = relu_bypass.get(cfg) != 0;
  x.alu_src = source(alu_src.get(alu_cfg));
  x.alu_shift = static_cast<std::uint8_t>(alu_shift.get(alu_cfg));
  x.alu_operand = static_cast<std::int16_t>(static_cast<std::uint16_t>(regs(alu_value_addr)));
  x.mul_src = source(mul_src.get(mul_cfg));
  // The register field is 8 bits; the truncation hardware takes its low 6 bits.
  x.mul_shift = static_cast<std::uint8_t>(mul_shift.get(mul_cfg) & 0x3f);
  x.mul_operand = static_cast<std::int16_t>(static_cast<std::uint16_t>(regs(mul_value_addr)));
  return x;
}

SdpXConfig decode_bs(const RegRead& regs) {
  using C = R::SDP::D_DP_BS_CFG;
  using A = R::SDP::D_DP_BS_ALU_CFG;
  using M = R::SDP::D_DP_BS_MUL_CFG;
  return decode_x(regs, C::kAddr, A::kAddr, R::SDP::D_DP_BS_ALU_SRC_VALUE::kAddr, M::kAddr,
                  R::SDP::D_DP_BS_MUL_SRC_VALUE::kAddr, C::BS_BYPASS, C::BS_ALU_BYPASS,
                  C::BS_ALU_ALGO, C::BS_MUL_BYPASS, C::BS_MUL_PRELU, C::BS_RELU_BYPASS,
                  A::BS_ALU_SRC, A::BS_ALU_SHIFT_VALUE, M::BS_MUL_SRC, M::BS_MUL_SHIFT_VALUE);
}

SdpXConfig decode_bn(const RegRead& regs) {
  using C = R::SDP::D_DP_BN_CFG;
  using A = R::SDP::D_DP_BN_ALU_CFG;
  using M = R::SDP::D_DP_BN_MUL_CFG;
  return decode_x(regs, C::kAddr, A::kAddr, R::SDP::D_DP_BN_ALU_SRC_VALUE::kAddr, M::kAddr,
                  R::SDP::D_DP_BN_MUL_SRC_VALUE::kAddr, C::BN_BYPASS, C::BN_ALU_BYPASS,
                  C::BN_ALU_ALGO, C::BN_MUL_BYPASS, C::BN_MUL_PRELU, C::BN_RELU_BYPASS,
                  A::BN_ALU_SRC, A::BN_ALU_SHIFT_VALUE, M::BN_MUL_SRC, M::BN_MUL_SHIFT_VALUE);
}

SdpOperandSurface decode_surface(const HwConfig& hw, const RegRead& regs, std::uint32_t cfg_addr,
                                 std::uint32_t high_addr, std::uint32_t low_addr,
                                 std::uint32_t line_addr, std::uint32_t surface_addr,
                                 const Field& disable, const Field& use, const Field& size,
                                 const Field& mode, const Field& ram_type, const char* name) {
  const std::uint32_t cfg = regs(cfg_addr);
  SdpOperandSurface s;
  s.enabled = disable.get(cfg) == 0;
  const std::uint32_t use_value = use.get(cfg);
  if (s.enabled && use_value > 2) {
    throw std::runtime_error(std::string("SDP_RDMA ") + name +
                             " DATA_USE has the reserved value 3 (expected MUL, ALU or BOTH)");
  }
  s.use = static_cast<SdpDataUse>(use_value > 2 ? 0 : use_value);
  s.bytes_per_component = size.get(cfg) != 0 ? 2 : 1;
  s.mode = mode.get(cfg) != 0 ? SdpDataMode::kPerElement : SdpDataMode::kPerChannel;
  s.base = read_address(hw, regs, high_addr, low_addr, ram_type.get(cfg));
  s.line_stride = regs(line_addr);
  s.surface_stride = regs(surface_addr);
  return s;
}

SdpEwConvertor decode_ew_cvt(const RegRead& regs, bool bypass, std::uint32_t offset_addr,
                             std::uint32_t scale_addr, std::uint32_t truncate_addr,
                             const Field& truncate) {
  SdpEwConvertor c;
  c.bypass = bypass;
  c.offset = static_cast<std::int32_t>(regs(offset_addr));
  c.scale = static_cast<std::int16_t>(static_cast<std::uint16_t>(regs(scale_addr)));
  c.truncate = static_cast<std::uint8_t>(truncate.get(regs(truncate_addr)));
  return c;
}

// Sign-extends a `bits`-wide register field.
std::int32_t sign_extend(std::uint32_t value, unsigned bits) {
  const std::uint32_t sign = 1u << (bits - 1);
  const std::uint32_t masked = value & ((sign << 1) - 1);
  return static_cast<std::int32_t>(masked ^ sign) - static_cast<std::int32_t>(sign);
}

void decode_lut(const RegRead& regs, const LutTables& tables, models::ops::SdpLutConfig& lut) {
  using Cfg = R::SDP::S_LUT_CFG;
  using Info = R::SDP::S_LUT_INFO;
  using LeScale = R::SDP::S_LUT_LE_SLOPE_SCALE;
  using LeShift = R::SDP::S_LUT_LE_SLOPE_SHIFT;
  using LoScale = R::SDP::S_LUT_LO_SLOPE_SCALE;
  using LoShift = R::SDP::S_LUT_LO_SLOPE_SHIFT;
  const std::uint32_t cfg = regs(Cfg::kAddr);
  lut.le_linear = Cfg::LUT_LE_FUNCTION.get(cfg) == Cfg::LUT_LE_FUNCTION_LINEAR;
  lut.uflow_priority_lo = Cfg::LUT_UFLOW_PRIORITY.get(cfg) == Cfg::LUT_UFLOW_PRIORITY_LO;
  lut.oflow_priority_lo = Cfg::LUT_OFLOW_PRIORITY.get(cfg) == Cfg::LUT_OFLOW_PRIORITY_LO;
  lut.hybrid_priority_lo = Cfg::LUT_HYBRID_PRIORITY.get(cfg) == Cfg::LUT_HYBRID_PRIORITY_LO;
  const std::uint32_t info = regs(Info::kAddr);
  lut.le_index_offset =
      static_cast<std::int8_t>(sign_extend(Info::LUT_LE_INDEX_OFFSET.get(info), 8));
  lut.le_index_select =
      static_cast<std::int8_t>(sign_extend(Info::LUT_LE_INDEX_SELECT.get(info), 8));
  lut.lo_index_select =
      static_cast<std::int8_t>(sign_extend(Info::LUT_LO_INDEX_SELECT.get(info), 8));
  lut.le_start = static_cast<std::int32_t>(regs(R::SDP::S_LUT_LE_START::kAddr));
  lut.le_end = static_cast<std::int32_t>(regs(R::SDP::S_LUT_LE_END::kAddr));
  lut.lo_start = static_cast<std::int32_t>(regs(R::SDP::S_LUT_LO_START::kAddr));
  lut.lo_end = static_cast<std::int32_t>(regs(R::SDP::S_LUT_LO_END::kAddr));
  const std::uint32_t le_scale = regs(LeScale::kAddr);
  const std::uint32_t lo_scale = regs(LoScale::kAddr);
  lut.le_uflow_scale = static_cast<std::int16_t>(LeScale::LUT_LE_SLOPE_UFLOW_SCALE.get(le_scale));
  lut.le_oflow_scale = static_cast<std::int16_t>(LeScale::LUT_LE_SLOPE_OFLOW_SCALE.get(le_scale));
  lut.lo_uflow_scale = static_cast<std::int16_t>(LoScale::LUT_LO_SLOPE_UFLOW_SCALE.get(lo_scale));
  lut.lo_oflow_scale = static_cast<std::int16_t>(LoScale::LUT_LO_SLOPE_OFLOW_SCALE.get(lo_scale));
  const std::uint32_t le_shift = regs(LeShift::kAddr);
  const std::uint32_t lo_shift = regs(LoShift::kAddr);
  lut.le_uflow_shift =
      static_cast<std::int8_t>(sign_extend(LeShift::LUT_LE_SLOPE_UFLOW_SHIFT.get(le_shift), 5));
  lut.le_oflow_shift =
      static_cast<std::int8_t>(sign_extend(LeShift::LUT_LE_SLOPE_OFLOW_SHIFT.get(le_shift), 5));
  lut.lo_uflow_shift =
      static_cast<std::int8_t>(sign_extend(LoShift::LUT_LO_SLOPE_UFLOW_SHIFT.get(lo_shift), 5));
  lut.lo_oflow_shift =
      static_cast<std::int8_t>(sign_extend(LoShift::LUT_LO_SLOPE_OFLOW_SHIFT.get(lo_shift), 5));
  for (std::size_t i = 0; i < lut.le.size(); ++i) {
    lut.le[i] = static_cast<std::int16_t>(tables.le[i]);
  }
  for (std::size_t i = 0; i < lut.lo.size(); ++i) {
    lut.lo[i] = static_cast<std::int16_t>(tables.lo[i]);
  }
}

models::ops::SdpYConfig decode_ew(const RegRead& regs) {
  namespace S = R::SDP;
  models::ops::SdpYConfig ew;
  using EwCfg = S::D_DP_EW_CFG;
  const std::uint32_t ew_cfg = regs(EwCfg::kAddr);
  const std::uint32_t ew_alu_cfg = regs(S::D_DP_EW_ALU_CFG::kAddr);
  const std::uint32_t ew_mul_cfg = regs(S::D_DP_EW_MUL_CFG::kAddr);
  ew.bypass = EwCfg::EW_BYPASS.get(ew_cfg) != 0;
  ew.alu_bypass = EwCfg::EW_ALU_BYPASS.get(ew_cfg) != 0;
  ew.alu_algo = static_cast<SdpAluAlgo>(EwCfg::EW_ALU_ALGO.get(ew_cfg));
  ew.mul_bypass = EwCfg::EW_MUL_BYPASS.get(ew_cfg) != 0;
  ew.mul_prelu = EwCfg::EW_MUL_PRELU.get(ew_cfg) != 0;
  ew.lut_bypass = EwCfg::EW_LUT_BYPASS.get(ew_cfg) != 0;
  ew.alu_src = source(S::D_DP_EW_ALU_CFG::EW_ALU_SRC.get(ew_alu_cfg));
  ew.alu_operand = static_cast<std::int32_t>(regs(S::D_DP_EW_ALU_SRC_VALUE::kAddr));
  ew.alu_cvt =
      decode_ew_cvt(regs, S::D_DP_EW_ALU_CFG::EW_ALU_CVT_BYPASS.get(ew_alu_cfg) != 0,
                    S::D_DP_EW_ALU_CVT_OFFSET_VALUE::kAddr, S::D_DP_EW_ALU_CVT_SCALE_VALUE::kAddr,
                    S::D_DP_EW_ALU_CVT_TRUNCATE_VALUE::kAddr,
                    S::D_DP_EW_ALU_CVT_TRUNCATE_VALUE::EW_ALU_CVT_TRUNCATE);
  ew.mul_src = source(S::D_DP_EW_MUL_CFG::EW_MUL_SRC.get(ew_mul_cfg));
  ew.mul_operand = static_cast<std::int32_t>(regs(S::D_DP_EW_MUL_SRC_VALUE::kAddr));
  ew.mul_cvt =
      decode_ew_cvt(regs, S::D_DP_EW_MUL_CFG::EW_MUL_CVT_BYPASS.get(ew_mul_cfg) != 0,
                    S::D_DP_EW_MUL_CVT_OFFSET_VALUE::kAddr, S::D_DP_EW_MUL_CVT_SCALE_VALUE::kAddr,
                    S::D_DP_EW_MUL_CVT_TRUNCATE_VALUE::kAddr,
                    S::D_DP_EW_MUL_CVT_TRUNCATE_VALUE::EW_MUL_CVT_TRUNCATE);
  ew.truncate = static_cast<std::uint16_t>(
      S::D_DP_EW_TRUNCATE_VALUE::EW_TRUNCATE.get(regs(S::D_DP_EW_TRUNCATE_VALUE::kAddr)));

  return ew;
}

}  // namespace

SdpConfig decode_sdp(const HwConfig& hw, const RegRead& regs, const LutTables& lut) {
  namespace S = R::SDP;
  namespace RD = R::SDP_RDMA;
  SdpConfig c;
  c.atom_bytes = hw.dla.memory_atomic_size;

  c.width = S::D_DATA_CUBE_WIDTH::WIDTH.get(regs(S::D_DATA_CUBE_WIDTH::kAddr)) + 1;
  c.height = S::D_DATA_CUBE_HEIGHT::HEIGHT.get(regs(S::D_DATA_CUBE_HEIGHT::kAddr)) + 1;
  c.channels = S::D_DATA_CUBE_CHANNEL::CHANNEL.get(regs(S::D_DATA_CUBE_CHANNEL::kAddr)) + 1;

  const std::uint32_t format = regs(S::D_DATA_FORMAT::kAddr);
  c.proc_precision =
      decode_precision(S::D_DATA_FORMAT::PROC_PRECISION.get(format), "PROC_PRECISION");
  c.out_precision = decode_precision(S::D_DATA_FORMAT::OUT_PRECISION.get(format), "OUT_PRECISION");

  const std::uint32_t mode = regs(S::D_FEATURE_MODE_CFG::kAddr);
  c.flying = S::D_FEATURE_MODE_CFG::FLYING_MODE.get(mode) != 0;
  c.output_to_pdp = S::D_FEATURE_MODE_CFG::OUTPUT_DST.get(mode) != 0;
  c.winograd = S::D_FEATURE_MODE_CFG::WINOGRAD.get(mode) != 0;
  c.nan_to_zero = S::D_FEATURE_MODE_CFG::NAN_TO_ZERO.get(mode) != 0;
  c.batches = S::D_FEATURE_MODE_CFG::BATCH_NUMBER.get(mode) + 1;

  const std::uint32_t rdma_mode = regs(RD::D_FEATURE_MODE_CFG::kAddr);
  c.in_precision =
      decode_precision(RD::D_FEATURE_MODE_CFG::IN_PRECISION.get(rdma_mode), "IN_PRECISION");

  c.src_base =
      read_address(hw, regs, RD::D_SRC_BASE_ADDR_HIGH::kAddr, RD::D_SRC_BASE_ADDR_LOW::kAddr,
                   RD::D_SRC_DMA_CFG::SRC_RAM_TYPE.get(regs(RD::D_SRC_DMA_CFG::kAddr)));
  c.src_line_stride = regs(RD::D_SRC_LINE_STRIDE::kAddr);
  c.src_surface_stride = regs(RD::D_SRC_SURFACE_STRIDE::kAddr);

  c.brdma =
      decode_surface(hw, regs, RD::D_BRDMA_CFG::kAddr, RD::D_BS_BASE_ADDR_HIGH::kAddr,
                     RD::D_BS_BASE_ADDR_LOW::kAddr, RD::D_BS_LINE_STRIDE::kAddr,
                     RD::D_BS_SURFACE_STRIDE::kAddr, RD::D_BRDMA_CFG::BRDMA_DISABLE,
                     RD::D_BRDMA_CFG::BRDMA_DATA_USE, RD::D_BRDMA_CFG::BRDMA_DATA_SIZE,
                     RD::D_BRDMA_CFG::BRDMA_DATA_MODE, RD::D_BRDMA_CFG::BRDMA_RAM_TYPE, "BRDMA");
  c.nrdma =
      decode_surface(hw, regs, RD::D_NRDMA_CFG::kAddr, RD::D_BN_BASE_ADDR_HIGH::kAddr,
                     RD::D_BN_BASE_ADDR_LOW::kAddr, RD::D_BN_LINE_STRIDE::kAddr,
                     RD::D_BN_SURFACE_STRIDE::kAddr, RD::D_NRDMA_CFG::NRDMA_DISABLE,
                     RD::D_NRDMA_CFG::NRDMA_DATA_USE, RD::D_NRDMA_CFG::NRDMA_DATA_SIZE,
                     RD::D_NRDMA_CFG::NRDMA_DATA_MODE, RD::D_NRDMA_CFG::NRDMA_RAM_TYPE, "NRDMA");
  c.erdma =
      decode_surface(hw, regs, RD::D_ERDMA_CFG::kAddr, RD::D_EW_BASE_ADDR_HIGH::kAddr,
                     RD::D_EW_BASE_ADDR_LOW::kAddr, RD::D_EW_LINE_STRIDE::kAddr,
                     RD::D_EW_SURFACE_STRIDE::kAddr, RD::D_ERDMA_CFG::ERDMA_DISABLE,
                     RD::D_ERDMA_CFG::ERDMA_DATA_USE, RD::D_ERDMA_CFG::ERDMA_DATA_SIZE,
                     RD::D_ERDMA_CFG::ERDMA_DATA_MODE, RD::D_ERDMA_CFG::ERDMA_RAM_TYPE, "ERDMA");

  c.bs = decode_bs(regs);
  c.bn = decode_bn(regs);

  c.ew = decode_ew(regs);
  // In flying mode SDP_RDMA runs only when a stage takes an operand from memory; its operand
  // DMAs stay idle otherwise, whatever their DISABLE bits say.
  if (c.flying && !models::ops::sdp_operands_from_memory(c)) {
    c.brdma.enabled = c.nrdma.enabled = c.erdma.enabled = false;
  }

  c.cvt.offset = static_cast<std::int32_t>(regs(S::D_CVT_OFFSET::kAddr));
  c.cvt.scale = static_cast<std::int16_t>(
      static_cast<std::uint16_t>(S::D_CVT_SCALE::CVT_SCALE.get(regs(S::D_CVT_SCALE::kAddr))));
  c.cvt.shift =
      static_cast<std::uint8_t>(S::D_CVT_SHIFT::CVT_SHIFT.get(regs(S::D_CVT_SHIFT::kAddr)));

  c.dst_base = read_address(hw, regs, S::D_DST_BASE_ADDR_HIGH::kAddr, S::D_DST_BASE_ADDR_LOW::kAddr,
                            S::D_DST_DMA_CFG::DST_RAM_TYPE.get(regs(S::D_DST_DMA_CFG::kAddr)));
  c.dst_line_stride = regs(S::D_DST_LINE_STRIDE::kAddr);
  c.dst_surface_stride = regs(S::D_DST_SURFACE_STRIDE::kAddr);
  c.dst_batch_stride = regs(S::D_DST_BATCH_STRIDE::kAddr);

  // What the configuration leaves out.
  if (!hw.dla.sdp_bs && !c.bs.bypass) throw_not_present(hw, "SDP BS");
  if (!hw.dla.sdp_bn && !c.bn.bypass) throw_not_present(hw, "SDP BN");
  if (!hw.dla.sdp_ew && (!c.ew.bypass || c.erdma.enabled)) throw_not_present(hw, "SDP EW");
  if (!hw.dla.sdp_lut && !c.ew.bypass && !c.ew.lut_bypass) throw_not_present(hw, "SDP LUT");
  const auto needs = [&](SdpPrecision p) {
    if (p == SdpPrecision::kInt8 && !hw.dla.feature_int8) throw_not_present(hw, "INT8 data");
    if (p == SdpPrecision::kInt16 && !hw.dla.feature_int16) throw_not_present(hw, "INT16 data");
    if (p == SdpPrecision::kFp16 && !hw.dla.feature_fp16) throw_not_present(hw, "FP16 data");
  };
  needs(c.proc_precision);
  needs(c.out_precision);
  if (!c.flying) needs(c.in_precision);
  if (c.batches > 1 && !hw.dla.batch) throw_not_present(hw, "SDP batch mode");
  if (c.winograd && !hw.dla.winograd) throw_not_present(hw, "SDP Winograd mode");

  // The SDP and its RDMA must agree on the layer they run together.
  if (!c.flying) {
    const std::uint32_t rw =
        RD::D_DATA_CUBE_WIDTH::WIDTH.get(regs(RD::D_DATA_CUBE_WIDTH::kAddr)) + 1;
    const std::uint32_t rh =
        RD::D_DATA_CUBE_HEIGHT::HEIGHT.get(regs(RD::D_DATA_CUBE_HEIGHT::kAddr)) + 1;
    const std::uint32_t rc =
        RD::D_DATA_CUBE_CHANNEL::CHANNEL.get(regs(RD::D_DATA_CUBE_CHANNEL::kAddr)) + 1;
    if (rw != c.width || rh != c.height || rc != c.channels) {
      throw std::runtime_error("SDP and SDP_RDMA data cubes differ: SDP " +
                               std::to_string(c.width) + "x" + std::to_string(c.height) + "x" +
                               std::to_string(c.channels) + ", SDP_RDMA " + std::to_string(rw) +
                               "x" + std::to_string(rh) + "x" + std::to_string(rc));
    }
    const SdpPrecision rdma_proc = decode_precision(
        RD::D_FEATURE_MODE_CFG::PROC_PRECISION.get(rdma_mode), "SDP_RDMA PROC_PRECISION");
    if (rdma_proc != c.proc_precision) {
      throw std::runtime_error("SDP PROC_PRECISION and SDP_RDMA PROC_PRECISION differ");
    }
  }

  if (!c.ew.bypass && !c.ew.lut_bypass) decode_lut(regs, lut, c.lut);
  return c;
}

OpResult sdp_result(const SdpConfig& cfg, const models::ops::SdpLayerResult& layer,
                    const RegRead& regs) {
  namespace S = R::SDP;
  namespace RD = R::SDP_RDMA;
  OpResult r;
  r.in = {cfg.width, cfg.height, cfg.channels};
  r.out = r.in;
  r.bytes_read = layer.bytes_read;
  r.bytes_written = layer.bytes_written;

  const std::uint32_t perf = regs(S::D_PERF_ENABLE::kAddr);
  const std::uint32_t rdma_perf = regs(RD::D_PERF_ENABLE::kAddr);
  const models::ops::SdpStats& st = layer.stats;
  if (S::D_PERF_ENABLE::PERF_SAT_EN.get(perf) != 0) {
    r.status.emplace_back(S::D_PERF_OUT_SATURATION::kAddr, st.out_saturation.value());
  }
  if (S::D_PERF_ENABLE::PERF_LUT_EN.get(perf) != 0 && !cfg.ew.bypass && !cfg.ew.lut_bypass) {
    r.status.emplace_back(S::D_PERF_LUT_UFLOW::kAddr, st.lut_uflow.value());
    r.status.emplace_back(S::D_PERF_LUT_OFLOW::kAddr, st.lut_oflow.value());
    r.status.emplace_back(S::D_PERF_LUT_HYBRID::kAddr, st.lut_hybrid.value());
    r.status.emplace_back(S::D_PERF_LUT_LE_HIT::kAddr, st.lut_le_hit.value());
    r.status.emplace_back(S::D_PERF_LUT_LO_HIT::kAddr, st.lut_lo_hit.value());
  }
  // NaN/Inf counters exist for FP16 data only (unit description, "Result Statistics"); SDP_RDMA's
  // input counters count MRDMA's FP16 data (zero in flying mode: MRDMA reads nothing).
  if (S::D_PERF_ENABLE::PERF_NAN_INF_COUNT_EN.get(perf) != 0 &&
      cfg.out_precision == SdpPrecision::kFp16) {
    r.status.emplace_back(S::D_STATUS_NAN_OUTPUT_NUM::kAddr, st.out_nan.value());
  }
  if (RD::D_PERF_ENABLE::PERF_NAN_INF_COUNT_EN.get(rdma_perf) != 0 &&
      cfg.in_precision == SdpPrecision::kFp16) {
    r.status.emplace_back(RD::D_STATUS_NAN_INPUT_NUM::kAddr, st.in_nan.value());
    r.status.emplace_back(RD::D_STATUS_INF_INPUT_NUM::kAddr, st.in_inf.value());
  }
  if (cfg.ew.eql_mode()) {
    r.status.emplace_back(S::D_STATUS::kAddr, st.unequal ? 1u : 0u);
  }
  return r;
}

bool sdp_rdma_takes_part(const RegRead& regs) {
  using Mode = R::SDP::D_FEATURE_MODE_CFG;
  if (Mode::FLYING_MODE.get(regs(Mode::kAddr)) == Mode::FLYING_MODE_OFF) return true;
  SdpConfig c;
  c.bs = decode_bs(regs);
  c.bn = decode_bn(regs);
  c.ew = decode_ew(regs);
  return models::ops::sdp_operands_from_memory(c);
}

DmaSurfaces sdp_surfaces(const SdpConfig& cfg) {
  DmaSurfaces d;
  const unsigned epa = cfg.elements_per_atom(cfg.proc_precision);
  const unsigned in_bytes = cfg.in_precision == SdpPrecision::kInt8 ? 1 : 2;
  const unsigned out_bytes = cfg.out_precision == SdpPrecision::kInt8 ? 1 : 2;
  const std::uint32_t surfaces = cfg.surfaces();
  // A 1x1xC cube is read and written as packed atoms (models::ops::run_sdp_layer).
  const bool packed_1x1 = cfg.width == 1 && cfg.height == 1;
  const std::uint64_t in_line = std::uint64_t{cfg.width} * epa * in_bytes;
  const std::uint64_t out_line = std::uint64_t{cfg.width} * epa * out_bytes;
  if (!cfg.flying) {
    d.input.push_back(packed_1x1 ? SurfaceRegion::linear(cfg.src_base, in_line * surfaces)
                                 : feature_region(cfg.src_base, in_line, cfg.height, surfaces,
                                                  cfg.src_line_stride, cfg.src_surface_stride));
  }
  const std::uint64_t elements_padded = std::uint64_t{surfaces} * epa;
  for (const models::ops::SdpOperandSurface* s : {&cfg.brdma, &cfg.nrdma, &cfg.erdma}) {
    if (!s->enabled) continue;
    const unsigned bpe = s->bytes_per_element();
    d.operands.push_back(s->mode == models::ops::SdpDataMode::kPerChannel
                             ? SurfaceRegion::linear(s->base, elements_padded * bpe)
                             : feature_region(s->base, std::uint64_t{cfg.width} * epa * bpe,
                                              cfg.height, surfaces, s->line_stride,
                                              s->surface_stride));
  }
  if (!cfg.ew.eql_mode() && !cfg.output_to_pdp) {
    d.output.push_back(packed_1x1 ? SurfaceRegion::linear(cfg.dst_base, out_line * surfaces)
                                  : feature_region(cfg.dst_base, out_line, cfg.height, surfaces,
                                                   cfg.dst_line_stride, cfg.dst_surface_stride));
  }
  return d;
}

namespace {

// SDP's view of memory when its output goes to PDP: operands (and input) are read from memory,
// the output lands in the flying cube (addresses are offsets into it).
class FlyingOutput final : public models::ops::Memory {
 public:
  FlyingOutput(const models::ops::Memory& mem, std::vector<std::uint8_t>& out)
      : mem_(mem), out_(out) {}
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    mem_.read(addr, dst, size);
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override {
    if (addr > out_.size() || size > out_.size() - addr) {
      throw std::logic_error("SDP wrote outside its flying output cube");
    }
    std::copy(src, src + size, out_.begin() + static_cast<std::ptrdiff_t>(addr));
  }

 private:
  const models::ops::Memory& mem_;
  std::vector<std::uint8_t>& out_;
};

}  // namespace

OpResult run_sdp_op(const SdpConfig& cfg, models::ops::Memory& mem,
                    const models::ops::ConvCube* flying, const RegRead& regs) {
  if (!cfg.output_to_pdp) {
    return sdp_result(cfg, models::ops::run_sdp_layer(cfg, mem, flying), regs);
  }
  if (cfg.batches != 1) {
    throw std::runtime_error("SDP OUTPUT_DST=PDP with " + std::to_string(cfg.batches) +
                             " batches: PDP pools one cube on the fly (BATCH_NUMBER must be 0)");
  }
  if (cfg.ew.eql_mode()) {
    throw std::runtime_error(
        "SDP OUTPUT_DST=PDP with EW in EQL mode: an EQL comparison has no output to pool");
  }
  const unsigned out_bytes = cfg.out_precision == SdpPrecision::kInt8 ? 1 : 2;
  const unsigned epa = cfg.elements_per_atom(cfg.proc_precision);
  if (epa * out_bytes != cfg.atom_bytes) {
    throw std::runtime_error(
        "SDP OUTPUT_DST=PDP needs PROC_PRECISION and OUT_PRECISION of one element size (PDP "
        "pools whole memory atoms; an INT16/FP16 -> INT8 output fills half an atom)");
  }
  auto cube = std::make_shared<FlyingCube>();
  cube->width = cfg.width;
  cube->height = cfg.height;
  cube->channels = cfg.channels;
  cube->element_bytes = out_bytes;
  cube->atom_bytes = cfg.atom_bytes;
  const std::uint64_t line = std::uint64_t{cfg.width} * cfg.atom_bytes;
  cube->data.assign(line * cfg.height * cfg.surfaces(), 0);
  SdpConfig to_cube = cfg;
  to_cube.output_to_pdp = false;
  to_cube.dst_base = 0;
  to_cube.dst_line_stride = static_cast<std::uint32_t>(line);
  to_cube.dst_surface_stride = static_cast<std::uint32_t>(line * cfg.height);
  FlyingOutput out(mem, cube->data);
  OpResult r = sdp_result(cfg, models::ops::run_sdp_layer(to_cube, out, flying), regs);
  r.bytes_on_the_fly = r.bytes_written;
  r.bytes_written = 0;
  r.to_pdp = std::move(cube);
  return r;
}

OpResult run_sdp(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
                 models::ops::Memory& mem) {
  auto decoded = std::make_shared<const SdpDescriptor>(decode_sdp(hw, regs, lut));
  const SdpConfig& cfg = decoded->config;
  OpResult r = run_sdp_op(cfg, mem, nullptr, regs);
  r.dma = sdp_surfaces(cfg);
  r.descriptor = std::move(decoded);
  return r;
}

}  // namespace octasim::dla
