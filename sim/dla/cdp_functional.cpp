// CDP + CDP_RDMA register decode and the zero-time LRN layer (models/ops/cdp).
#include "sim/dla/cdp_functional.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/ops/cdp.hpp"
#include "models/precision/int_width.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::dla {

namespace {

namespace C = regs::CDP;
namespace CR = regs::CDP_RDMA;
using models::LutTableId;
using models::ops::CdpPrecision;

[[noreturn]] void cdp_fail(const std::string& what) {
  throw std::runtime_error("CDP: " + what);
}

CdpPrecision decode_cdp_precision(const HwConfig& hw, std::uint32_t format) {
  switch (format) {
    case C::D_DATA_FORMAT::INPUT_DATA_TYPE_INT8:
      if (!hw.dla.feature_int8) throw_not_present(hw, "CDP INT8");
      return CdpPrecision::kInt8;
    case C::D_DATA_FORMAT::INPUT_DATA_TYPE_INT16:
      if (!hw.dla.feature_int16) throw_not_present(hw, "CDP INT16");
      return CdpPrecision::kInt16;
    case C::D_DATA_FORMAT::INPUT_DATA_TYPE_FP16:
      if (!hw.dla.feature_fp16) throw_not_present(hw, "CDP FP16");
      return CdpPrecision::kFp16;
    default:
      cdp_fail("D_DATA_FORMAT.INPUT_DATA_TYPE " + std::to_string(format) +
               " is not INT8, INT16 or FP16");
  }
}

LutTableId priority(std::uint32_t bit) {
  return bit != 0 ? LutTableId::kLo : LutTableId::kLe;
}

models::LutConfig decode_lut(const RegRead& regs, CdpPrecision precision) {
  models::LutConfig lut;
  const std::uint32_t cfg = regs(C::S_LUT_CFG::kAddr);
  lut.le_function = C::S_LUT_CFG::LUT_LE_FUNCTION.get(cfg) == C::S_LUT_CFG::LUT_LE_FUNCTION_LINEAR
                        ? models::LutLeFunction::kLinear
                        : models::LutLeFunction::kExponent;
  lut.uflow_priority = priority(C::S_LUT_CFG::LUT_UFLOW_PRIORITY.get(cfg));
  lut.oflow_priority = priority(C::S_LUT_CFG::LUT_OFLOW_PRIORITY.get(cfg));
  lut.hybrid_priority = priority(C::S_LUT_CFG::LUT_HYBRID_PRIORITY.get(cfg));

  // NVDLA's CDP reads the index selects as 6-bit (INT8 pipe) / 7-bit (INT16 pipe) / 8-bit (FP16
  // pipe) signed values and the LE index offset as INT8.
  const unsigned select_bits = precision == CdpPrecision::kInt8    ? 6
                               : precision == CdpPrecision::kInt16 ? 7
                                                                   : 8;
  const std::uint32_t info = regs(C::S_LUT_INFO::kAddr);
  lut.le_index_offset = static_cast<std::int32_t>(
      models::sign_extend(C::S_LUT_INFO::LUT_LE_INDEX_OFFSET.get(info), 8));
  lut.le_index_select = static_cast<std::int32_t>(
      models::sign_extend(C::S_LUT_INFO::LUT_LE_INDEX_SELECT.get(info), select_bits));
  lut.lo_index_select = static_cast<std::int32_t>(
      models::sign_extend(C::S_LUT_INFO::LUT_LO_INDEX_SELECT.get(info), select_bits));

  lut.le_start = models::lut_start_end(regs(C::S_LUT_LE_START_LOW::kAddr),
                                       regs(C::S_LUT_LE_START_HIGH::kAddr));
  lut.le_end =
      models::lut_start_end(regs(C::S_LUT_LE_END_LOW::kAddr), regs(C::S_LUT_LE_END_HIGH::kAddr));
  lut.lo_start = models::lut_start_end(regs(C::S_LUT_LO_START_LOW::kAddr),
                                       regs(C::S_LUT_LO_START_HIGH::kAddr));
  lut.lo_end =
      models::lut_start_end(regs(C::S_LUT_LO_END_LOW::kAddr), regs(C::S_LUT_LO_END_HIGH::kAddr));

  const auto scale = [](std::uint32_t v) { return static_cast<std::int16_t>(v & 0xffffu); };
  const auto shift = [](std::uint32_t v) {
    return static_cast<std::int32_t>(models::sign_extend(v, 5));
  };
  const std::uint32_t le_scale = regs(C::S_LUT_LE_SLOPE_SCALE::kAddr);
  const std::uint32_t le_shift = regs(C::S_LUT_LE_SLOPE_SHIFT::kAddr);
  const std::uint32_t lo_scale = regs(C::S_LUT_LO_SLOPE_SCALE::kAddr);
  const std::uint32_t lo_shift = regs(C::S_LUT_LO_SLOPE_SHIFT::kAddr);
  lut.le_slope_uflow_scale = scale(C::S_LUT_LE_SLOPE_SCALE::LUT_LE_SLOPE_UFLOW_SCALE.get(le_scale));
  lut.le_slope_oflow_scale = scale(C::S_LUT_LE_SLOPE_SCALE::LUT_LE_SLOPE_OFLOW_SCALE.get(le_scale));
  lut.lo_slope_uflow_scale = scale(C::S_LUT_LO_SLOPE_SCALE::LUT_LO_SLOPE_UFLOW_SCALE.get(lo_scale));
  lut.lo_slope_oflow_scale = scale(C::S_LUT_LO_SLOPE_SCALE::LUT_LO_SLOPE_OFLOW_SCALE.get(lo_scale));
  lut.le_slope_uflow_shift = shift(C::S_LUT_LE_SLOPE_SHIFT::LUT_LE_SLOPE_UFLOW_SHIFT.get(le_shift));
  lut.le_slope_oflow_shift = shift(C::S_LUT_LE_SLOPE_SHIFT::LUT_LE_SLOPE_OFLOW_SHIFT.get(le_shift));
  lut.lo_slope_uflow_shift = shift(C::S_LUT_LO_SLOPE_SHIFT::LUT_LO_SLOPE_UFLOW_SHIFT.get(lo_shift));
  lut.lo_slope_oflow_shift = shift(C::S_LUT_LO_SLOPE_SHIFT::LUT_LO_SLOPE_OFLOW_SHIFT.get(lo_shift));
  return lut;
}

// CDP + CDP_RDMA registers -> the LRN layer, checked.
models::ops::CdpLayerParams decode_cdp(const HwConfig& hw, const RegRead& regs) {
  if (!hw.dla.cdp) throw_not_present(hw, "CDP");
  const auto field = [&](std::uint32_t addr, regs::Field f) { return f.get(regs(addr)); };
  const std::uint32_t format = field(C::D_DATA_FORMAT::kAddr, C::D_DATA_FORMAT::INPUT_DATA_TYPE);
  const std::uint32_t rdma_format = field(CR::D_DATA_FORMAT::kAddr, CR::D_DATA_FORMAT::INPUT_DATA);
  if (format != rdma_format) {
    cdp_fail("D_DATA_FORMAT differs between CDP (" + std::to_string(format) + ") and CDP_RDMA (" +
             std::to_string(rdma_format) + ")");
  }

  models::ops::CdpLayerParams layer;
  models::ops::CdpConfig& cfg = layer.cfg;
  cfg.precision = decode_cdp_precision(hw, format);
  cfg.local_size = 3 + 2 * field(C::D_LRN_CFG::kAddr, C::D_LRN_CFG::NORMALZ_LEN);
  const std::uint32_t bypass = regs(C::D_FUNC_BYPASS::kAddr);
  cfg.sqsum_bypass = C::D_FUNC_BYPASS::SQSUM_BYPASS.get(bypass) != 0;
  cfg.mul_bypass = C::D_FUNC_BYPASS::MUL_BYPASS.get(bypass) != 0;
  cfg.datin_offset = static_cast<std::int32_t>(
      models::sign_extend(field(C::D_DATIN_OFFSET::kAddr, C::D_DATIN_OFFSET::DATIN_OFFSET), 16));
  cfg.datin_scale = static_cast<std::int16_t>(
      field(C::D_DATIN_SCALE::kAddr, C::D_DATIN_SCALE::DATIN_SCALE) & 0xffffu);
  cfg.datin_shifter = static_cast<std::uint8_t>(
      field(C::D_DATIN_SHIFTER::kAddr, C::D_DATIN_SHIFTER::DATIN_SHIFTER));
  cfg.datout_offset = static_cast<std::int32_t>(
      field(C::D_DATOUT_OFFSET::kAddr, C::D_DATOUT_OFFSET::DATOUT_OFFSET));
  cfg.datout_scale = static_cast<std::int16_t>(
      field(C::D_DATOUT_SCALE::kAddr, C::D_DATOUT_SCALE::DATOUT_SCALE) & 0xffffu);
  cfg.datout_shifter = static_cast<std::uint8_t>(
      field(C::D_DATOUT_SHIFTER::kAddr, C::D_DATOUT_SHIFTER::DATOUT_SHIFTER));
  cfg.lut = decode_lut(regs, cfg.precision);
  cfg.nan_to_zero = field(C::D_NAN_FLUSH_TO_ZERO::kAddr, C::D_NAN_FLUSH_TO_ZERO::NAN_TO_ZERO) != 0;

  if (field(CR::D_SRC_COMPRESSION_EN::kAddr, CR::D_SRC_COMPRESSION_EN::SRC_COMPRESSION_EN) != 0 ||
      field(C::D_DST_COMPRESSION_EN::kAddr, C::D_DST_COMPRESSION_EN::DST_COMPRESSION_EN) != 0) {
    cdp_fail(
        "compressed surfaces (D_SRC/DST_COMPRESSION_EN) are not supported (NVDLA v1 has none)");
  }
  if (field(CR::D_SRC_DMA_CFG::kAddr, CR::D_SRC_DMA_CFG::SRC_RAM_TYPE) ==
          CR::D_SRC_DMA_CFG::SRC_RAM_TYPE_CV &&
      !hw.dla.secondary_memif) {
    throw_not_present(hw, "CDP_RDMA CV-SRAM source (D_SRC_DMA_CFG.SRC_RAM_TYPE=CV)");
  }
  if (field(C::D_DST_DMA_CFG::kAddr, C::D_DST_DMA_CFG::DST_RAM_TYPE) ==
          C::D_DST_DMA_CFG::DST_RAM_TYPE_CV &&
      !hw.dla.secondary_memif) {
    throw_not_present(hw, "CDP CV-SRAM destination (D_DST_DMA_CFG.DST_RAM_TYPE=CV)");
  }

  layer.width = field(CR::D_DATA_CUBE_WIDTH::kAddr, CR::D_DATA_CUBE_WIDTH::WIDTH) + 1;
  layer.height = field(CR::D_DATA_CUBE_HEIGHT::kAddr, CR::D_DATA_CUBE_HEIGHT::HEIGHT) + 1;
  layer.channels = field(CR::D_DATA_CUBE_CHANNEL::kAddr, CR::D_DATA_CUBE_CHANNEL::CHANNEL) + 1;
  layer.atom_bytes = hw.dla.memory_atomic_size;
  layer.src =
      read_address(hw, regs, CR::D_SRC_BASE_ADDR_HIGH::kAddr, CR::D_SRC_BASE_ADDR_LOW::kAddr,
                   field(CR::D_SRC_DMA_CFG::kAddr, CR::D_SRC_DMA_CFG::SRC_RAM_TYPE));
  layer.src_line_stride = regs(CR::D_SRC_LINE_STRIDE::kAddr);
  layer.src_surface_stride = regs(CR::D_SRC_SURFACE_STRIDE::kAddr);
  layer.dst = read_address(hw, regs, C::D_DST_BASE_ADDR_HIGH::kAddr, C::D_DST_BASE_ADDR_LOW::kAddr,
                           field(C::D_DST_DMA_CFG::kAddr, C::D_DST_DMA_CFG::DST_RAM_TYPE));
  layer.dst_line_stride = regs(C::D_DST_LINE_STRIDE::kAddr);
  layer.dst_surface_stride = regs(C::D_DST_SURFACE_STRIDE::kAddr);
  return layer;
}

}  // namespace

OpResult run_cdp(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
                 models::ops::Memory& mem) {
  auto decoded = std::make_shared<const CdpDescriptor>(decode_cdp(hw, regs));
  const models::ops::CdpLayerParams& layer = decoded->layer;
  const models::ops::CdpConfig& cfg = layer.cfg;
  // The LUT RAM holds raw 16-bit entries; CDP's integer pipelines read them as INT16, the FP16
  // pipeline as FP16 bit patterns (models/precision/lut.hpp).
  models::LutTables tables;
  for (std::size_t i = 0; i < tables.le.size(); ++i) {
    tables.le[i] = static_cast<std::int16_t>(lut.le[i]);
  }
  for (std::size_t i = 0; i < tables.lo.size(); ++i) {
    tables.lo[i] = static_cast<std::int16_t>(lut.lo[i]);
  }

  const models::ops::CdpLayerResult run = models::ops::run_cdp_layer(layer, tables, mem);
  const models::ops::CdpStats& st = run.stats;

  // The LUT statistics count while D_PERF_ENABLE.LUT_EN is set; the saturation counter always.
  const bool lut_en = C::D_PERF_ENABLE::LUT_EN.get(regs(C::D_PERF_ENABLE::kAddr)) != 0;
  const auto lut_stat = [&](const models::SaturationCounter& c) { return lut_en ? c.value() : 0u; };
  OpResult result;
  result.status = {
      {C::D_OUT_SATURATION::kAddr, st.out_saturation.value()},
      {C::D_PERF_LUT_UFLOW::kAddr, lut_stat(st.lut.uflow)},
      {C::D_PERF_LUT_OFLOW::kAddr, lut_stat(st.lut.oflow)},
      {C::D_PERF_LUT_HYBRID::kAddr, lut_stat(st.lut.hybrid)},
      {C::D_PERF_LUT_LE_HIT::kAddr, lut_stat(st.lut.le_hit)},
      {C::D_PERF_LUT_LO_HIT::kAddr, lut_stat(st.lut.lo_hit)},
      {C::D_NAN_INPUT_NUM::kAddr, st.nan_input.value()},
      {C::D_INF_INPUT_NUM::kAddr, st.inf_input.value()},
      {C::D_NAN_OUTPUT_NUM::kAddr, st.nan_output.value()},
  };
  result.in = {layer.width, layer.height, layer.channels};
  result.out = result.in;
  result.lrn_size = cfg.local_size;
  result.bytes_read = run.bytes_read;
  result.bytes_written = run.bytes_written;
  // Line by line, each line across the surfaces (LRN needs every channel of a pixel): a region
  // per line whose "lines" are the surfaces.
  const unsigned epa = layer.atom_bytes / models::ops::cdp_element_bytes(cfg.precision);
  const std::uint32_t surfaces = (layer.channels + epa - 1) / epa;
  const std::uint64_t line_bytes = std::uint64_t{layer.width} * layer.atom_bytes;
  for (std::uint32_t h = 0; h < layer.height; ++h) {
    result.dma.input.push_back(feature_region(layer.src + h * layer.src_line_stride, line_bytes,
                                              surfaces, 1, layer.src_surface_stride, 0));
    result.dma.output.push_back(feature_region(layer.dst + h * layer.dst_line_stride, line_bytes,
                                               surfaces, 1, layer.dst_surface_stride, 0));
  }
  result.descriptor = std::move(decoded);
  return result;
}

}  // namespace octasim::dla
