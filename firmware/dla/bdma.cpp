#include "firmware/dla/bdma.hpp"

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

namespace B = regs::BDMA;

void check(const BdmaTransfer& t) {
  const models::ops::BdmaCopy c = bdma_model_copy(t);
  const auto aligned = [](const char* what, std::uint64_t v) {
    if (v % 32 != 0)
      throw FirmwareError(fmt::format("BDMA: {} 0x{:x} is not 32-byte aligned", what, v));
  };
  aligned("source address", c.src);
  aligned("destination address", c.dst);
  aligned("line size", c.line_bytes);
  aligned("source line stride", c.src_line_stride);
  aligned("destination line stride", c.dst_line_stride);
  aligned("source surface stride", c.src_surface_stride);
  aligned("destination surface stride", c.dst_surface_stride);
  if (c.line_bytes == 0 || c.line_bytes > 8192u * 32) {
    throw FirmwareError(
        fmt::format("BDMA: line size {} is outside 32..{}", c.line_bytes, 8192 * 32));
  }
  const auto count = [](const char* what, std::uint32_t v) {
    if (v == 0 || v > (1u << 24)) {
      throw FirmwareError(fmt::format("BDMA: {} {} is outside 1..{}", what, v, 1u << 24));
    }
  };
  count("lines", c.lines);
  count("surfaces", c.surfaces);
  if (c.lines > 1 && c.dst_line_stride < c.line_bytes) {
    throw FirmwareError(fmt::format("BDMA: destination line stride {} is below the line size {}",
                                    c.dst_line_stride, c.line_bytes));
  }
  if (c.surfaces > 1 && c.dst_surface_stride < c.dst_line_stride * (c.lines - 1) + c.line_bytes) {
    throw FirmwareError(fmt::format(
        "BDMA: destination surface stride {} is below a surface ({} lines of stride {})",
        c.dst_surface_stride, c.lines, c.dst_line_stride));
  }
  for (std::uint64_t v :
       {c.src_line_stride, c.dst_line_stride, c.src_surface_stride, c.dst_surface_stride}) {
    if (v > 0xffffffe0u)
      throw FirmwareError(fmt::format("BDMA: stride {} needs more than 32 bits", v));
  }
}

std::uint32_t low(std::uint64_t v) {
  return static_cast<std::uint32_t>(v);
}
std::uint32_t high(std::uint64_t v) {
  return static_cast<std::uint32_t>(v >> 32);
}

}  // namespace

models::ops::BdmaCopy bdma_model_copy(const BdmaTransfer& t) {
  models::ops::BdmaCopy c;
  c.src = t.src;
  c.dst = t.dst;
  c.line_bytes = t.line_bytes;
  c.lines = t.lines;
  c.surfaces = t.surfaces;
  c.src_line_stride = t.src_line_stride != 0 ? t.src_line_stride : t.line_bytes;
  c.dst_line_stride = t.dst_line_stride != 0 ? t.dst_line_stride : t.line_bytes;
  c.src_surface_stride =
      t.src_surface_stride != 0 ? t.src_surface_stride : c.src_line_stride * std::uint64_t{t.lines};
  c.dst_surface_stride =
      t.dst_surface_stride != 0 ? t.dst_surface_stride : c.dst_line_stride * std::uint64_t{t.lines};
  return c;
}

void program_bdma(Mmio& mmio, const BdmaTransfer& t) {
  check(t);
  const models::ops::BdmaCopy c = bdma_model_copy(t);
  mmio.write32(B::CFG_SRC_ADDR_HIGH::kAddr, high(c.src));
  mmio.write32(B::CFG_SRC_ADDR_LOW::kAddr, low(c.src));
  mmio.write32(B::CFG_DST_ADDR_HIGH::kAddr, high(c.dst));
  mmio.write32(B::CFG_DST_ADDR_LOW::kAddr, low(c.dst));
  mmio.write32(B::CFG_LINE::kAddr, B::CFG_LINE::SIZE.set(0, low(c.line_bytes / 32 - 1)));
  mmio.write32(B::CFG_CMD::kAddr,
               B::CFG_CMD::DST_RAM_TYPE.set(
                   B::CFG_CMD::SRC_RAM_TYPE.set(0, static_cast<std::uint32_t>(t.src_ram)),
                   static_cast<std::uint32_t>(t.dst_ram)));
  mmio.write32(B::CFG_LINE_REPEAT::kAddr, B::CFG_LINE_REPEAT::NUMBER.set(0, c.lines - 1));
  mmio.write32(B::CFG_SRC_LINE::kAddr, low(c.src_line_stride));
  mmio.write32(B::CFG_DST_LINE::kAddr, low(c.dst_line_stride));
  mmio.write32(B::CFG_SURF_REPEAT::kAddr, B::CFG_SURF_REPEAT::NUMBER.set(0, c.surfaces - 1));
  mmio.write32(B::CFG_SRC_SURF::kAddr, low(c.src_surface_stride));
  mmio.write32(B::CFG_DST_SURF::kAddr, low(c.dst_surface_stride));
  mmio.write32(B::CFG_OP::kAddr, B::CFG_OP::EN.set(0, B::CFG_OP::EN_ENABLE));
}

unsigned launch_bdma(Mmio& mmio, unsigned group) {
  if (group > 1) throw FirmwareError(fmt::format("BDMA: group {} is not 0 or 1", group));
  mmio.write32(group == 0 ? B::CFG_LAUNCH0::kAddr : B::CFG_LAUNCH1::kAddr, 1);
  return regs::GLB::S_INTR_STATUS::BDMA_DONE_STATUS0.lsb + group;
}

}  // namespace octasim::firmware
