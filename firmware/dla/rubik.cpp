#include "firmware/dla/rubik.hpp"

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

namespace RBK = regs::RBK;
using models::ops::RubikMode;
using models::ops::RubikParams;

[[noreturn]] void fail(const std::string& what) {
  throw FirmwareError("Rubik: " + what);
}

void check_group(unsigned group) {
  if (group > 1) fail(fmt::format("register group {} is not 0 or 1", group));
}

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) {
  return (v + to - 1) / to * to;
}

void check_planar(const PlanarSurface& s, Precision p, const char* what) {
  require_integer(p, "RUBIK");
  const auto dim = [&](const char* name, std::uint32_t v) {
    if (v < 1 || v > 8192) fail(fmt::format("{} {} {} is outside 1..8192", what, name, v));
  };
  dim("width", s.width);
  dim("height", s.height);
  dim("planes", s.planes);
  if (s.address % 64 != 0 || s.line_stride % 64 != 0 || s.planar_stride % 64 != 0) {
    fail(
        fmt::format("{}: address 0x{:x}, line stride {} and planar stride {} must be multiples "
                    "of 64 bytes",
                    what, s.address, s.line_stride, s.planar_stride));
  }
  const std::uint64_t line = std::uint64_t{s.width} * element_bytes(p);
  if (s.line_stride < line ||
      (s.planes > 1 && s.planar_stride < std::uint64_t{s.line_stride} * s.height)) {
    fail(fmt::format("{}: line stride {} or planar stride {} overlaps a {}-byte line of {} lines",
                     what, s.line_stride, s.planar_stride, line, s.height));
  }
}

std::uint32_t misc_cfg(RubikMode mode, Precision p) {
  using M = RBK::D_MISC_CFG;
  return M::RUBIK_MODE.set(0, static_cast<std::uint32_t>(mode)) |
         M::IN_PRECISION.set(0,
                             p == Precision::kInt8 ? M::IN_PRECISION_INT8 : M::IN_PRECISION_INT16);
}

// The registers every mode programs, from the model's view of the operation (the fields a mode
// does not use are written as the model holds them: 0 or 1).
unsigned write_registers(Mmio& mmio, const RubikParams& q, Precision p, unsigned group) {
  mmio.write32(RBK::S_POINTER::kAddr, RBK::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(RBK::D_MISC_CFG::kAddr, misc_cfg(q.mode, p));
  mmio.write32(RBK::D_DAIN_RAM_TYPE::kAddr, RBK::D_DAIN_RAM_TYPE::DATAIN_RAM_TYPE_MCIF);
  mmio.write32(RBK::D_DATAIN_SIZE_0::kAddr,
               RBK::D_DATAIN_SIZE_0::DATAIN_WIDTH.set(0, q.width - 1) |
                   RBK::D_DATAIN_SIZE_0::DATAIN_HEIGHT.set(0, q.height - 1));
  mmio.write32(RBK::D_DATAIN_SIZE_1::kAddr, q.in_channels - 1);
  mmio.write32(RBK::D_DAIN_ADDR_HIGH::kAddr, high32(q.in_base));
  mmio.write32(RBK::D_DAIN_ADDR_LOW::kAddr, low32(q.in_base));
  mmio.write32(RBK::D_DAIN_LINE_STRIDE::kAddr, low32(q.in_line_stride));
  mmio.write32(RBK::D_DAIN_SURF_STRIDE::kAddr, low32(q.in_surface_stride));
  mmio.write32(RBK::D_DAIN_PLANAR_STRIDE::kAddr, low32(q.in_planar_stride));
  mmio.write32(RBK::D_DAOUT_RAM_TYPE::kAddr, RBK::D_DAOUT_RAM_TYPE::DATAOUT_RAM_TYPE_MCIF);
  mmio.write32(RBK::D_DATAOUT_SIZE_1::kAddr, q.out_channels - 1);
  mmio.write32(RBK::D_DAOUT_ADDR_HIGH::kAddr, high32(q.out_base));
  mmio.write32(RBK::D_DAOUT_ADDR_LOW::kAddr, low32(q.out_base));
  mmio.write32(RBK::D_DAOUT_LINE_STRIDE::kAddr, low32(q.out_line_stride));
  mmio.write32(RBK::D_DAOUT_SURF_STRIDE::kAddr, low32(q.out_surface_stride));
  mmio.write32(RBK::D_DAOUT_PLANAR_STRIDE::kAddr, low32(q.out_planar_stride));
  mmio.write32(RBK::D_CONTRACT_STRIDE_0::kAddr, low32(q.contract_stride_0));
  mmio.write32(RBK::D_CONTRACT_STRIDE_1::kAddr, low32(q.contract_stride_1));
  mmio.write32(RBK::D_DECONV_STRIDE::kAddr,
               RBK::D_DECONV_STRIDE::DECONV_X_STRIDE.set(0, q.x_stride - 1) |
                   RBK::D_DECONV_STRIDE::DECONV_Y_STRIDE.set(0, q.y_stride - 1));
  mmio.write32(RBK::D_PERF_ENABLE::kAddr, 1);
  mmio.write32(RBK::D_OP_ENABLE::kAddr, RBK::D_OP_ENABLE::OP_EN_ENABLE);
  return 8 + group;  // GLB S_INTR_STATUS RUBIK_DONE_STATUS0/1
}

void check_contract(const RubikContract& op, unsigned atom_bytes) {
  if (op.x_stride < 1 || op.x_stride > 32 || op.y_stride < 1 || op.y_stride > 32) {
    fail(fmt::format("deconvolution strides {}x{} are outside 1..32", op.x_stride, op.y_stride));
  }
  check_surface(op.src, op.precision, atom_bytes, "Rubik contract input");
  check_surface(op.dst, op.precision, atom_bytes, "Rubik contract output");
  const std::uint64_t groups = std::uint64_t{op.x_stride} * op.y_stride;
  if (op.src.channels != groups * op.dst.channels ||
      op.dst.width != std::uint64_t{op.src.width} * op.x_stride ||
      op.dst.height != std::uint64_t{op.src.height} * op.y_stride) {
    fail(fmt::format("contract of {}x{}x{} by {}x{} gives {}x{}x{}, not {}x{}x{}", op.src.width,
                     op.src.height, op.src.channels, op.x_stride, op.y_stride,
                     std::uint64_t{op.src.width} * op.x_stride,
                     std::uint64_t{op.src.height} * op.y_stride, op.src.channels / groups,
                     op.dst.width, op.dst.height, op.dst.channels));
  }
  if (std::uint64_t{op.dst.channels} * element_bytes(op.precision) % atom_bytes != 0) {
    fail(fmt::format("contract output channels {} ({}) do not fill whole {}-byte atoms",
                     op.dst.channels, precision_name(op.precision), atom_bytes));
  }
}

}  // namespace

PlanarSurface packed_planar(std::uint64_t address, std::uint32_t width, std::uint32_t height,
                            std::uint32_t planes, Precision p) {
  PlanarSurface s;
  s.address = address;
  s.width = width, s.height = height, s.planes = planes;
  s.line_stride = static_cast<std::uint32_t>(round_up(std::uint64_t{width} * element_bytes(p), 64));
  s.planar_stride = s.line_stride * height;
  return s;
}

std::uint64_t planar_bytes(const PlanarSurface& s, Precision p) {
  return std::uint64_t{s.planes - 1} * s.planar_stride +
         std::uint64_t{s.height - 1} * s.line_stride + std::uint64_t{s.width} * element_bytes(p);
}

RubikParams rubik_model_params(const RubikContract& op, unsigned atom_bytes) {
  RubikParams q;
  q.mode = RubikMode::kContract;
  q.element_bytes = element_bytes(op.precision);
  q.atom_bytes = atom_bytes;
  q.width = op.src.width, q.height = op.src.height;
  q.in_channels = op.src.channels, q.out_channels = op.dst.channels;
  q.x_stride = op.x_stride, q.y_stride = op.y_stride;
  q.in_base = op.src.address, q.in_line_stride = op.src.line_stride;
  q.in_surface_stride = op.src.surface_stride;
  q.out_base = op.dst.address, q.out_line_stride = op.dst.line_stride;
  q.out_surface_stride = op.dst.surface_stride;
  // Programming guide: Ceil(C' * BPE / 32) * DAIN_SURF_STRIDE and y_stride * DAOUT_LINE_STRIDE.
  q.contract_stride_0 = (std::uint64_t{op.dst.channels} * q.element_bytes + atom_bytes - 1) /
                        atom_bytes * op.src.surface_stride;
  q.contract_stride_1 = std::uint64_t{op.y_stride} * op.dst.line_stride;
  return q;
}

RubikParams rubik_model_params(const RubikSplit& op, unsigned atom_bytes) {
  RubikParams q;
  q.mode = RubikMode::kSplit;
  q.element_bytes = element_bytes(op.precision);
  q.atom_bytes = atom_bytes;
  q.width = op.src.width, q.height = op.src.height;
  q.in_channels = op.src.channels, q.out_channels = op.dst.planes;
  q.in_base = op.src.address, q.in_line_stride = op.src.line_stride;
  q.in_surface_stride = op.src.surface_stride;
  q.out_base = op.dst.address, q.out_line_stride = op.dst.line_stride;
  q.out_planar_stride = op.dst.planar_stride;
  return q;
}

RubikParams rubik_model_params(const RubikMerge& op, unsigned atom_bytes) {
  RubikParams q;
  q.mode = RubikMode::kMerge;
  q.element_bytes = element_bytes(op.precision);
  q.atom_bytes = atom_bytes;
  q.width = op.src.width, q.height = op.src.height;
  q.in_channels = op.src.planes, q.out_channels = op.dst.channels;
  q.in_base = op.src.address, q.in_line_stride = op.src.line_stride;
  q.in_planar_stride = op.src.planar_stride;
  q.out_base = op.dst.address, q.out_line_stride = op.dst.line_stride;
  q.out_surface_stride = op.dst.surface_stride;
  return q;
}

unsigned program_rubik(Mmio& mmio, const RubikContract& op, unsigned group, unsigned atom_bytes) {
  check_group(group);
  check_contract(op, atom_bytes);
  return write_registers(mmio, rubik_model_params(op, atom_bytes), op.precision, group);
}

unsigned program_rubik(Mmio& mmio, const RubikSplit& op, unsigned group, unsigned atom_bytes) {
  check_group(group);
  check_surface(op.src, op.precision, atom_bytes, "Rubik split input");
  check_planar(op.dst, op.precision, "Rubik split output");
  if (op.dst.width != op.src.width || op.dst.height != op.src.height ||
      op.dst.planes > op.src.channels) {
    fail(fmt::format("split of {}x{}x{} into {} planes of {}x{}", op.src.width, op.src.height,
                     op.src.channels, op.dst.planes, op.dst.width, op.dst.height));
  }
  return write_registers(mmio, rubik_model_params(op, atom_bytes), op.precision, group);
}

unsigned program_rubik(Mmio& mmio, const RubikMerge& op, unsigned group, unsigned atom_bytes) {
  check_group(group);
  check_planar(op.src, op.precision, "Rubik merge input");
  check_surface(op.dst, op.precision, atom_bytes, "Rubik merge output");
  if (op.dst.width != op.src.width || op.dst.height != op.src.height ||
      op.dst.channels != op.src.planes) {
    fail(fmt::format("merge of {} planes of {}x{} into {}x{}x{}", op.src.planes, op.src.width,
                     op.src.height, op.dst.width, op.dst.height, op.dst.channels));
  }
  return write_registers(mmio, rubik_model_params(op, atom_bytes), op.precision, group);
}

}  // namespace octasim::firmware
