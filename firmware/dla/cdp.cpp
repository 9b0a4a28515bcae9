#include "firmware/dla/cdp.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "models/numerics/float_format.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

namespace C = regs::CDP;
namespace CR = regs::CDP_RDMA;
using models::LutTableId;

void signed_range(const char* what, std::int64_t v, unsigned bits) {
  const std::int64_t max = (std::int64_t{1} << (bits - 1)) - 1;
  if (v < -max - 1 || v > max) {
    throw FirmwareError(
        fmt::format("CDP: {} {} is outside {}..{} ({}-bit signed)", what, v, -max - 1, max, bits));
  }
}

void check_lut(const models::LutConfig& lut, Precision p) {
  const auto table = [](LutTableId id) { return id == LutTableId::kLe || id == LutTableId::kLo; };
  if (!table(lut.uflow_priority) || !table(lut.oflow_priority) || !table(lut.hybrid_priority)) {
    throw FirmwareError("CDP: a LUT priority is neither LE nor LO");
  }
  if (lut.le_function != models::LutLeFunction::kExponent &&
      lut.le_function != models::LutLeFunction::kLinear) {
    throw FirmwareError("CDP: LUT LE function is neither exponent nor linear");
  }
  // The CDP reads the index selects as 6-bit (INT8 pipe) / 7-bit (INT16 pipe) / 8-bit (FP16
  // pipe) signed values.
  const unsigned select_bits = p == Precision::kInt8 ? 6 : p == Precision::kInt16 ? 7 : 8;
  signed_range("LUT LE index offset", lut.le_index_offset, 8);
  signed_range("LUT LE index select", lut.le_index_select, select_bits);
  signed_range("LUT LO index select", lut.lo_index_select, select_bits);
  signed_range("LUT LE start", lut.le_start, 38);
  signed_range("LUT LE end", lut.le_end, 38);
  signed_range("LUT LO start", lut.lo_start, 38);
  signed_range("LUT LO end", lut.lo_end, 38);
  signed_range("LUT LE underflow slope shift", lut.le_slope_uflow_shift, 5);
  signed_range("LUT LE overflow slope shift", lut.le_slope_oflow_shift, 5);
  signed_range("LUT LO underflow slope shift", lut.lo_slope_uflow_shift, 5);
  signed_range("LUT LO overflow slope shift", lut.lo_slope_oflow_shift, 5);
}

void check_layer(const CdpLayer& l, unsigned group, unsigned atom_bytes) {
  if (l.precision != Precision::kInt8 && l.precision != Precision::kInt16 &&
      l.precision != Precision::kFp16) {
    throw FirmwareError(fmt::format("CDP: precision {} is not INT8, INT16 or FP16",
                                    static_cast<unsigned>(l.precision)));
  }
  if (group > 1) throw FirmwareError(fmt::format("CDP: register group {} is not 0 or 1", group));
  check_surface(l.src, l.precision, atom_bytes, "CDP input");
  check_surface(l.dst, l.precision, atom_bytes, "CDP output");
  if (l.src.width != l.dst.width || l.src.height != l.dst.height ||
      l.src.channels != l.dst.channels) {
    throw FirmwareError(fmt::format(
        "CDP: output cube {}x{}x{} differs from the input cube {}x{}x{} (CDP keeps the shape)",
        l.dst.width, l.dst.height, l.dst.channels, l.src.width, l.src.height, l.src.channels));
  }
  if (l.local_size != 3 && l.local_size != 5 && l.local_size != 7 && l.local_size != 9) {
    throw FirmwareError(
        fmt::format("CDP: LRN local size {} is not 3, 5, 7 or 9 channels", l.local_size));
  }
  if (l.in_cvt.shift > 31) {
    throw FirmwareError(
        fmt::format("CDP: input convertor shift {} is outside 0..31", l.in_cvt.shift));
  }
  if (l.out_cvt.shift > 63) {
    throw FirmwareError(
        fmt::format("CDP: output convertor shift {} is outside 0..63", l.out_cvt.shift));
  }
  if (l.precision == Precision::kFp16) {
    const auto identity = [](const CdpConvertor& c) {
      return c.offset == 0 && c.scale == 1 && c.shift == 0;
    };
    if (!identity(l.in_cvt) || !identity(l.out_cvt)) {
      throw FirmwareError(
          "CDP: FP16 bypasses the input and output convertors: in_cvt and out_cvt must be "
          "{offset 0, scale 1, shift 0}");
    }
  }
  const bool int8 = l.precision == Precision::kInt8;
  signed_range("input convertor offset", l.in_cvt.offset, int8 ? 8 : 16);
  signed_range("output convertor offset", l.out_cvt.offset, int8 ? 25 : 32);
  check_lut(l.lut, l.precision);
}

std::uint32_t priority(LutTableId id) {
  return id == LutTableId::kLo ? 1u : 0u;
}

void program_lut(Mmio& mmio, const models::LutConfig& lut, const models::LutTables& tables) {
  using A = C::S_LUT_ACCESS_CFG;
  const std::uint32_t write = A::LUT_ACCESS_TYPE.set(0, A::LUT_ACCESS_TYPE_WRITE);
  // The access port auto-increments from entry 0 (lut-programming.rst, "LUT storage
  // programming"): one S_LUT_ACCESS_CFG per table, then every entry in order.
  mmio.write32(A::kAddr, write | A::LUT_TABLE_ID.set(0, A::LUT_TABLE_ID_LE));
  for (const std::int16_t e : tables.le) {
    mmio.write32(C::S_LUT_ACCESS_DATA::kAddr, static_cast<std::uint16_t>(e));
  }
  mmio.write32(A::kAddr, write | A::LUT_TABLE_ID.set(0, A::LUT_TABLE_ID_LO));
  for (const std::int16_t e : tables.lo) {
    mmio.write32(C::S_LUT_ACCESS_DATA::kAddr, static_cast<std::uint16_t>(e));
  }

  using Cfg = C::S_LUT_CFG;
  mmio.write32(Cfg::kAddr,
               Cfg::LUT_LE_FUNCTION.set(0, lut.le_function == models::LutLeFunction::kLinear
                                               ? Cfg::LUT_LE_FUNCTION_LINEAR
                                               : Cfg::LUT_LE_FUNCTION_EXPONENT) |
                   Cfg::LUT_UFLOW_PRIORITY.set(0, priority(lut.uflow_priority)) |
                   Cfg::LUT_OFLOW_PRIORITY.set(0, priority(lut.oflow_priority)) |
                   Cfg::LUT_HYBRID_PRIORITY.set(0, priority(lut.hybrid_priority)));
  using Info = C::S_LUT_INFO;
  mmio.write32(
      Info::kAddr,
      Info::LUT_LE_INDEX_OFFSET.set(0, static_cast<std::uint32_t>(lut.le_index_offset)) |
          Info::LUT_LE_INDEX_SELECT.set(0, static_cast<std::uint32_t>(lut.le_index_select)) |
          Info::LUT_LO_INDEX_SELECT.set(0, static_cast<std::uint32_t>(lut.lo_index_select)));
  const auto start_end = [&](std::uint32_t low_addr, std::uint32_t high_addr, std::int64_t v) {
    const auto bits = static_cast<std::uint64_t>(v);
    mmio.write32(low_addr, low32(bits));
    mmio.write32(high_addr, high32(bits) & 0x3fu);  // 38-bit value: 6 high bits
  };
  start_end(C::S_LUT_LE_START_LOW::kAddr, C::S_LUT_LE_START_HIGH::kAddr, lut.le_start);
  start_end(C::S_LUT_LE_END_LOW::kAddr, C::S_LUT_LE_END_HIGH::kAddr, lut.le_end);
  start_end(C::S_LUT_LO_START_LOW::kAddr, C::S_LUT_LO_START_HIGH::kAddr, lut.lo_start);
  start_end(C::S_LUT_LO_END_LOW::kAddr, C::S_LUT_LO_END_HIGH::kAddr, lut.lo_end);
  const auto scale = [](std::int16_t uflow, std::int16_t oflow) {
    return static_cast<std::uint32_t>(static_cast<std::uint16_t>(uflow)) |
           static_cast<std::uint32_t>(static_cast<std::uint16_t>(oflow)) << 16;
  };
  const auto shift = [](std::int32_t uflow, std::int32_t oflow) {
    return (static_cast<std::uint32_t>(uflow) & 0x1fu) | (static_cast<std::uint32_t>(oflow) & 0x1fu)
                                                             << 5;
  };
  mmio.write32(C::S_LUT_LE_SLOPE_SCALE::kAddr,
               scale(lut.le_slope_uflow_scale, lut.le_slope_oflow_scale));
  mmio.write32(C::S_LUT_LE_SLOPE_SHIFT::kAddr,
               shift(lut.le_slope_uflow_shift, lut.le_slope_oflow_shift));
  mmio.write32(C::S_LUT_LO_SLOPE_SCALE::kAddr,
               scale(lut.lo_slope_uflow_scale, lut.lo_slope_oflow_scale));
  mmio.write32(C::S_LUT_LO_SLOPE_SHIFT::kAddr,
               shift(lut.lo_slope_uflow_shift, lut.lo_slope_oflow_shift));
}

// The FP16 LRN LUT (cdp.hpp): LO linear from 0 to 2^(s+8), LE exponent from there on.
template <typename F>
LrnLut make_lrn_lut_fp16(const LrnParams& p, double a, const F& f) {
  if (!(f(0) <= models::max_finite(models::kFp16))) {
    throw FirmwareError(fmt::format("LRN: k^-beta = {} does not fit the FP16 LUT", f(0)));
  }
  const auto entry = [&](double s) {
    return static_cast<std::int16_t>(models::fp16_from_double(f(s)));
  };
  const auto fp32 = [](double v) {
    return static_cast<std::int64_t>(models::fp32_bits_from_double(v));
  };
  // The LO table reaches inputs of 4 in every channel and the knee k / a, within the largest
  // square sum FP16 inputs can make.
  const double max_sqsum = p.local_size * 65504.0 * 65504.0;
  double cover = 16.0 * p.local_size;
  if (a > 0) cover = std::max(cover, std::min(p.k / a, max_sqsum));
  int s = -8;
  while (std::ldexp(256.0, s) < cover) ++s;

  LrnLut out;
  models::LutConfig& c = out.config;
  c.le_function = models::LutLeFunction::kExponent;
  c.uflow_priority = LutTableId::kLo;
  c.oflow_priority = LutTableId::kLe;
  c.hybrid_priority = LutTableId::kLo;
  c.le_index_offset = s + 8;
  c.le_start = fp32(0.0);
  c.le_end = fp32(std::ldexp(1.0, s + 8 + 64));
  c.lo_index_select = s;
  c.lo_start = fp32(0.0);
  c.lo_end = fp32(std::ldexp(1.0, s + 8));
  for (unsigned i = 0; i < models::kLutLeEntries; ++i) {
    out.tables.le[i] = entry(std::ldexp(1.0, s + 8 + static_cast<int>(i)));
  }
  for (unsigned i = 0; i < models::kLutLoEntries; ++i) {
    out.tables.lo[i] = entry(std::ldexp(static_cast<double>(i), s));
  }
  return out;
}

}  // namespace

LrnLut make_lrn_lut(const LrnParams& p, Precision precision) {
  if (p.local_size != 3 && p.local_size != 5 && p.local_size != 7 && p.local_size != 9) {
    throw FirmwareError(
        fmt::format("LRN: local size {} is not 3, 5, 7 or 9 channels", p.local_size));
  }
  if (!(p.k > 0) || !(p.alpha >= 0) || !(p.beta >= 0) || !(p.input_scale > 0) ||
      !std::isfinite(p.k) || !std::isfinite(p.alpha) || !std::isfinite(p.beta) ||
      !std::isfinite(p.input_scale)) {
    throw FirmwareError(fmt::format(
        "LRN: needs k > 0, alpha >= 0, beta >= 0 and input scale > 0 (got k={}, alpha={}, "
        "beta={}, input scale={})",
        p.k, p.alpha, p.beta, p.input_scale));
  }
  const double a = p.alpha / p.local_size * p.input_scale * p.input_scale;
  const auto f = [&](double s) { return std::pow(p.k + a * s, -p.beta); };
  if (precision == Precision::kFp16) return make_lrn_lut_fp16(p, a, f);

  LrnLut out;
  // The largest F <= 30 with round(f(0) * 2^F) <= INT16 max; f is largest at S = 0.
  unsigned frac = 0;
  while (frac < 30 && std::round(f(0) * std::ldexp(1.0, static_cast<int>(frac) + 1)) <= 32767) {
    ++frac;
  }
  if (std::round(f(0) * std::ldexp(1.0, static_cast<int>(frac))) > 32767) {
    throw FirmwareError(fmt::format("LRN: k^-beta = {} does not fit the INT16 LUT", f(0)));
  }
  out.fraction_bits = frac;
  const auto entry = [&](double s) {
    return static_cast<std::int16_t>(std::lround(f(s) * std::ldexp(1.0, static_cast<int>(frac))));
  };

  // Largest square sum: 9 channels of the converted input (INT8 pipe 9 bits, INT16 17 bits).
  const double max_sqsum =
      9.0 * (precision == Precision::kInt8 ? 256.0 * 256.0 : 65536.0 * 65536.0);
  const double knee = a > 0 ? std::min(1.0 / a, max_sqsum) : 1.0;
  int select = 0;
  while (select < 30 && std::ldexp(256.0, select) < knee) ++select;

  models::LutConfig& c = out.config;
  c.le_function = models::LutLeFunction::kExponent;
  c.uflow_priority = LutTableId::kLo;
  c.oflow_priority = LutTableId::kLe;
  c.hybrid_priority = LutTableId::kLo;
  c.le_index_offset = 0;
  c.le_start = 0;
  // Exponent mode reaches 2^64, beyond the 38-bit END register; no square sum gets near it,
  // so END only bounds the (zero-slope) overflow extrapolation.
  c.le_end = (std::int64_t{1} << 37) - 1;
  c.lo_index_select = select;
  c.lo_start = 0;
  c.lo_end = std::int64_t{256} << select;
  for (unsigned i = 0; i < models::kLutLeEntries; ++i)
    out.tables.le[i] = entry(std::ldexp(1.0, static_cast<int>(i)));
  for (unsigned i = 0; i < models::kLutLoEntries; ++i) {
    out.tables.lo[i] = entry(std::ldexp(static_cast<double>(i), select));
  }
  return out;
}

unsigned program_cdp(Mmio& mmio, const CdpLayer& l, unsigned group, unsigned atom_bytes) {
  check_layer(l, group, atom_bytes);
  const auto p = static_cast<std::uint32_t>(l.precision);

  mmio.write32(C::S_POINTER::kAddr, C::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(CR::S_POINTER::kAddr, CR::S_POINTER::PRODUCER.set(0, group));

  mmio.write32(CR::D_DATA_CUBE_WIDTH::kAddr, l.src.width - 1);
  mmio.write32(CR::D_DATA_CUBE_HEIGHT::kAddr, l.src.height - 1);
  mmio.write32(CR::D_DATA_CUBE_CHANNEL::kAddr, l.src.channels - 1);
  mmio.write32(CR::D_SRC_BASE_ADDR_LOW::kAddr, low32(l.src.address));
  mmio.write32(CR::D_SRC_BASE_ADDR_HIGH::kAddr, high32(l.src.address));
  mmio.write32(CR::D_SRC_LINE_STRIDE::kAddr, l.src.line_stride);
  mmio.write32(CR::D_SRC_SURFACE_STRIDE::kAddr, l.src.surface_stride);
  mmio.write32(CR::D_SRC_DMA_CFG::kAddr, CR::D_SRC_DMA_CFG::SRC_RAM_TYPE.set(0, ram_type(l.src)));
  mmio.write32(CR::D_SRC_COMPRESSION_EN::kAddr, 0);
  mmio.write32(CR::D_DATA_FORMAT::kAddr, CR::D_DATA_FORMAT::INPUT_DATA.set(0, p));

  program_lut(mmio, l.lut, l.lut_tables);

  mmio.write32(C::D_DST_BASE_ADDR_LOW::kAddr, low32(l.dst.address));
  mmio.write32(C::D_DST_BASE_ADDR_HIGH::kAddr, high32(l.dst.address));
  mmio.write32(C::D_DST_LINE_STRIDE::kAddr, l.dst.line_stride);
  mmio.write32(C::D_DST_SURFACE_STRIDE::kAddr, l.dst.surface_stride);
  mmio.write32(C::D_DST_DMA_CFG::kAddr, C::D_DST_DMA_CFG::DST_RAM_TYPE.set(0, ram_type(l.dst)));
  mmio.write32(C::D_DST_COMPRESSION_EN::kAddr, 0);
  mmio.write32(C::D_DATA_FORMAT::kAddr, C::D_DATA_FORMAT::INPUT_DATA_TYPE.set(0, p));
  if (l.precision == Precision::kFp16) {
    mmio.write32(C::D_NAN_FLUSH_TO_ZERO::kAddr,
                 C::D_NAN_FLUSH_TO_ZERO::NAN_TO_ZERO.set(0, l.nan_to_zero ? 1 : 0));
  }
  mmio.write32(C::D_LRN_CFG::kAddr, C::D_LRN_CFG::NORMALZ_LEN.set(0, (l.local_size - 3) / 2));
  mmio.write32(C::D_DATIN_OFFSET::kAddr,
               C::D_DATIN_OFFSET::DATIN_OFFSET.set(0, static_cast<std::uint32_t>(l.in_cvt.offset)));
  mmio.write32(C::D_DATIN_SCALE::kAddr, static_cast<std::uint16_t>(l.in_cvt.scale));
  mmio.write32(C::D_DATIN_SHIFTER::kAddr, l.in_cvt.shift);
  mmio.write32(C::D_DATOUT_OFFSET::kAddr, static_cast<std::uint32_t>(l.out_cvt.offset));
  mmio.write32(C::D_DATOUT_SCALE::kAddr, static_cast<std::uint16_t>(l.out_cvt.scale));
  mmio.write32(C::D_DATOUT_SHIFTER::kAddr, l.out_cvt.shift);
  mmio.write32(C::D_FUNC_BYPASS::kAddr,
               C::D_FUNC_BYPASS::SQSUM_BYPASS.set(0, C::D_FUNC_BYPASS::SQSUM_BYPASS_DISABLE) |
                   C::D_FUNC_BYPASS::MUL_BYPASS.set(0, C::D_FUNC_BYPASS::MUL_BYPASS_DISABLE));
  mmio.write32(C::D_PERF_ENABLE::kAddr, C::D_PERF_ENABLE::LUT_EN.set(0, l.count_lut ? 1 : 0));

  mmio.write32(CR::D_OP_ENABLE::kAddr, CR::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(C::D_OP_ENABLE::kAddr, C::D_OP_ENABLE::OP_EN_ENABLE);
  return regs::GLB::S_INTR_STATUS::CDP_DONE_STATUS0.lsb + group;
}

models::ops::CdpLayerParams cdp_model_params(const CdpLayer& l, unsigned atom_bytes) {
  check_layer(l, 0, atom_bytes);
  models::ops::CdpLayerParams m;
  models::ops::CdpConfig& c = m.cfg;
  c.precision = static_cast<models::ops::CdpPrecision>(l.precision);
  c.local_size = l.local_size;
  c.datin_offset = l.in_cvt.offset;
  c.datin_scale = l.in_cvt.scale;
  c.datin_shifter = static_cast<std::uint8_t>(l.in_cvt.shift);
  c.datout_offset = l.out_cvt.offset;
  c.datout_scale = l.out_cvt.scale;
  c.datout_shifter = static_cast<std::uint8_t>(l.out_cvt.shift);
  c.lut = l.lut;
  c.nan_to_zero = l.precision == Precision::kFp16 && l.nan_to_zero;
  m.width = l.src.width;
  m.height = l.src.height;
  m.channels = l.src.channels;
  m.atom_bytes = atom_bytes;
  m.src = l.src.address;
  m.src_line_stride = l.src.line_stride;
  m.src_surface_stride = l.src.surface_stride;
  m.dst = l.dst.address;
  m.dst_line_stride = l.dst.line_stride;
  m.dst_surface_stride = l.dst.surface_stride;
  return m;
}

}  // namespace octasim::firmware
