#include "sim/dla/rubik_functional.hpp"

#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"

namespace octasim::dla {
namespace {

namespace RBK = regs::RBK;
using models::ops::RubikMode;
using models::ops::RubikParams;

[[noreturn]] void rbk_fail(const std::string& what) {
  throw std::runtime_error("RBK: " + what);
}

unsigned decode_element_bytes(const HwConfig& hw, std::uint32_t misc) {
  switch (RBK::D_MISC_CFG::IN_PRECISION.get(misc)) {
    case RBK::D_MISC_CFG::IN_PRECISION_INT8:
      if (!hw.dla.feature_int8) throw_not_present(hw, "Rubik INT8 data");
      return 1;
    case RBK::D_MISC_CFG::IN_PRECISION_INT16:
      if (!hw.dla.feature_int16) throw_not_present(hw, "Rubik INT16 data");
      return 2;
    case RBK::D_MISC_CFG::IN_PRECISION_FP16:
      if (!hw.dla.feature_fp16) throw_not_present(hw, "Rubik FP16 data");
      return 2;
    default:
      rbk_fail(
          fmt::format("D_MISC_CFG.IN_PRECISION {} is reserved (expected INT8 0, INT16 1, FP16 2)",
                      RBK::D_MISC_CFG::IN_PRECISION.get(misc)));
  }
}

RubikMode decode_mode(std::uint32_t misc) {
  const std::uint32_t mode = RBK::D_MISC_CFG::RUBIK_MODE.get(misc);
  if (mode > RBK::D_MISC_CFG::RUBIK_MODE_MERGE) {
    rbk_fail(fmt::format(
        "D_MISC_CFG.RUBIK_MODE {} is reserved (expected CONTRACT 0, SPLIT 1, MERGE 2)", mode));
  }
  return static_cast<RubikMode>(mode);
}

void require_aligned(const char* reg, std::uint64_t value, unsigned alignment, const char* why) {
  if (value % alignment != 0) {
    rbk_fail(
        fmt::format("{} 0x{:x} is not a multiple of {} bytes ({})", reg, value, alignment, why));
  }
}

// The alignment rules of v1_ias_programming_guide.rst "Rubik": 32 bytes for feature surfaces
// (and contract strides), 64 bytes for planar data (split output, merge input).
void check_alignment(const RubikParams& p) {
  const bool planar_in = p.mode == RubikMode::kMerge;
  const bool planar_out = p.mode == RubikMode::kSplit;
  const unsigned in_align = planar_in ? 64 : 32, out_align = planar_out ? 64 : 32;
  const char* in_why = planar_in ? "planar input" : "feature input";
  const char* out_why = planar_out ? "planar output" : "feature output";
  require_aligned("D_DAIN_ADDR", p.in_base, in_align, in_why);
  require_aligned("D_DAIN_LINE_STRIDE", p.in_line_stride, in_align, in_why);
  if (planar_in) {
    require_aligned("D_DAIN_PLANAR_STRIDE", p.in_planar_stride, 64, in_why);
  } else {
    require_aligned("D_DAIN_SURF_STRIDE", p.in_surface_stride, 32, in_why);
  }
  require_aligned("D_DAOUT_ADDR", p.out_base, out_align, out_why);
  require_aligned("D_DAOUT_LINE_STRIDE", p.out_line_stride, out_align, out_why);
  if (planar_out) {
    require_aligned("D_DAOUT_PLANAR_STRIDE", p.out_planar_stride, 64, out_why);
  } else {
    require_aligned("D_DAOUT_SURF_STRIDE", p.out_surface_stride, 32, out_why);
  }
  if (p.mode == RubikMode::kContract) {
    require_aligned("D_CONTRACT_STRIDE_0", p.contract_stride_0, 32, "contract");
    require_aligned("D_CONTRACT_STRIDE_1", p.contract_stride_1, 32, "contract");
  }
}

void decode_surfaces(const RegRead& regs, RubikParams& p) {
  p.in_base = read_address(regs, RBK::D_DAIN_ADDR_HIGH::kAddr, RBK::D_DAIN_ADDR_LOW::kAddr);
  p.in_line_stride = regs(RBK::D_DAIN_LINE_STRIDE::kAddr);
  p.in_surface_stride = regs(RBK::D_DAIN_SURF_STRIDE::kAddr);
  p.in_planar_stride = regs(RBK::D_DAIN_PLANAR_STRIDE::kAddr);
  p.out_base = read_address(regs, RBK::D_DAOUT_ADDR_HIGH::kAddr, RBK::D_DAOUT_ADDR_LOW::kAddr);
  p.out_line_stride = regs(RBK::D_DAOUT_LINE_STRIDE::kAddr);
  p.out_surface_stride = regs(RBK::D_DAOUT_SURF_STRIDE::kAddr);
  p.out_planar_stride = regs(RBK::D_DAOUT_PLANAR_STRIDE::kAddr);
  p.contract_stride_0 = regs(RBK::D_CONTRACT_STRIDE_0::kAddr);
  p.contract_stride_1 = regs(RBK::D_CONTRACT_STRIDE_1::kAddr);
}

std::uint32_t surfaces(std::uint32_t channels, const RubikParams& p) {
  const unsigned lanes = p.atom_bytes / p.element_bytes;
  return (channels + lanes - 1) / lanes;
}

}  // namespace

RubikOp decode_rubik(const HwConfig& hw, const RegRead& regs) {
  if (!hw.dla.rubik) throw_not_present(hw, "Rubik (RBK)");
  RubikOp op;
  RubikParams& p = op.params;
  const std::uint32_t misc = regs(RBK::D_MISC_CFG::kAddr);
  p.mode = decode_mode(misc);
  p.element_bytes = decode_element_bytes(hw, misc);
  p.atom_bytes = hw.dla.memory_atomic_size;
  op.in_ram = static_cast<RubikRam>(
      RBK::D_DAIN_RAM_TYPE::DATAIN_RAM_TYPE.get(regs(RBK::D_DAIN_RAM_TYPE::kAddr)));
  op.out_ram = static_cast<RubikRam>(
      RBK::D_DAOUT_RAM_TYPE::DATAOUT_RAM_TYPE.get(regs(RBK::D_DAOUT_RAM_TYPE::kAddr)));
  const std::uint32_t size0 = regs(RBK::D_DATAIN_SIZE_0::kAddr);
  p.width = RBK::D_DATAIN_SIZE_0::DATAIN_WIDTH.get(size0) + 1;
  p.height = RBK::D_DATAIN_SIZE_0::DATAIN_HEIGHT.get(size0) + 1;
  p.in_channels = RBK::D_DATAIN_SIZE_1::DATAIN_CHANNEL.get(regs(RBK::D_DATAIN_SIZE_1::kAddr)) + 1;
  p.out_channels =
      RBK::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.get(regs(RBK::D_DATAOUT_SIZE_1::kAddr)) + 1;
  if (p.mode == RubikMode::kContract) {
    const std::uint32_t strides = regs(RBK::D_DECONV_STRIDE::kAddr);
    p.x_stride = RBK::D_DECONV_STRIDE::DECONV_X_STRIDE.get(strides) + 1;
    p.y_stride = RBK::D_DECONV_STRIDE::DECONV_Y_STRIDE.get(strides) + 1;
    if (std::uint64_t{p.width} * p.x_stride > 8192 || std::uint64_t{p.height} * p.y_stride > 8192) {
      rbk_fail(fmt::format("contract output {}x{} exceeds 8192 (input {}x{}, deconv strides {}x{})",
                           std::uint64_t{p.width} * p.x_stride,
                           std::uint64_t{p.height} * p.y_stride, p.width, p.height, p.x_stride,
                           p.y_stride));
    }
  }
  decode_surfaces(regs, p);
  check_alignment(p);
  try {
    models::ops::check_rubik(p);
  } catch (const std::invalid_argument& e) {
    rbk_fail(
        fmt::format("{} (D_DATAIN_SIZE_1.DATAIN_CHANNEL {}, D_DATAOUT_SIZE_1.DATAOUT_CHANNEL {})",
                    e.what(), p.in_channels - 1, p.out_channels - 1));
  }
  return op;
}

models::ops::Memory& rubik_memory(const HwConfig& hw, RubikRam ram, models::ops::Memory& mc,
                                  const char* which) {
  if (ram == RubikRam::kMc) return mc;
  if (!hw.dla.secondary_memif) {
    throw_not_present(hw, fmt::format("Rubik CV-SRAM surface (RBK {}=CVIF)", which));
  }
  rbk_fail(fmt::format(
      "{}=CVIF: CV-SRAM surfaces are not supported by octasim yet (program MCIF, 1)", which));
}

RubikSlice rubik_slice(const RubikParams& p, std::uint32_t h) {
  RubikSlice s;
  const auto line = [](std::uint64_t addr, std::uint64_t bytes) {
    return RubikLine{addr, static_cast<std::uint32_t>(bytes)};
  };
  const std::uint64_t feature_line = std::uint64_t{p.width} * p.atom_bytes;
  const std::uint64_t planar_line = std::uint64_t{p.width} * p.element_bytes;
  switch (p.mode) {
    case RubikMode::kContract: {
      const std::uint32_t group_surfaces = surfaces(p.out_channels, p);
      for (std::uint64_t g = 0; g < std::uint64_t{p.x_stride} * p.y_stride; ++g) {
        for (std::uint32_t k = 0; k < group_surfaces; ++k) {
          s.reads.push_back(line(
              p.in_base + g * p.contract_stride_0 + k * p.in_surface_stride + h * p.in_line_stride,
              feature_line));
        }
      }
      for (std::uint64_t gy = 0; gy < p.y_stride; ++gy) {
        for (std::uint32_t k = 0; k < group_surfaces; ++k) {
          s.writes.push_back(line(p.out_base + h * p.contract_stride_1 + gy * p.out_line_stride +
                                      k * p.out_surface_stride,
                                  feature_line * p.x_stride));
        }
      }
      break;
    }
    case RubikMode::kSplit:
      for (std::uint32_t k = 0; k < surfaces(p.out_channels, p); ++k) {
        s.reads.push_back(
            line(p.in_base + k * p.in_surface_stride + h * p.in_line_stride, feature_line));
      }
      for (std::uint64_t c = 0; c < p.out_channels; ++c) {
        s.writes.push_back(
            line(p.out_base + c * p.out_planar_stride + h * p.out_line_stride, planar_line));
      }
      break;
    case RubikMode::kMerge:
      for (std::uint64_t c = 0; c < p.in_channels; ++c) {
        s.reads.push_back(
            line(p.in_base + c * p.in_planar_stride + h * p.in_line_stride, planar_line));
      }
      for (std::uint32_t k = 0; k < surfaces(p.out_channels, p); ++k) {
        s.writes.push_back(
            line(p.out_base + k * p.out_surface_stride + h * p.out_line_stride, feature_line));
      }
      break;
  }
  return s;
}

namespace {
std::uint64_t sum(const std::vector<RubikLine>& lines) {
  std::uint64_t total = 0;
  for (const RubikLine& l : lines) total += l.bytes;
  return total;
}
}  // namespace

std::uint64_t rubik_bytes_read(const RubikParams& p) {
  return sum(rubik_slice(p, 0).reads) * p.height;
}

std::uint64_t rubik_bytes_written(const RubikParams& p) {
  return sum(rubik_slice(p, 0).writes) * p.height;
}

OpResult run_rubik(const HwConfig& hw, const RegRead& regs, const LutTables& /*lut*/,
                   models::ops::Memory& mem) {
  const RubikOp op = decode_rubik(hw, regs);
  const models::ops::Memory& src = rubik_memory(hw, op.in_ram, mem, "D_DAIN_RAM_TYPE");
  models::ops::Memory& dst = rubik_memory(hw, op.out_ram, mem, "D_DAOUT_RAM_TYPE");
  models::ops::run_rubik(op.params, src, dst);
  OpResult r;
  const RubikParams& p = op.params;
  r.in = {p.width, p.height, p.in_channels};
  const models::ops::RubikCube out = models::ops::rubik_output_cube(p);
  r.out = {out.width, out.height, out.channels};
  r.bytes_read = rubik_bytes_read(p);
  r.bytes_written = rubik_bytes_written(p);
  r.descriptor = std::make_shared<RubikDescriptor>(op);
  return r;
}

}  // namespace octasim::dla
