#include "sim/dla/bdma_functional.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/core/device_memory.hpp"

namespace octasim::dla {

namespace {

namespace B = regs::BDMA;

// A 32-byte-aligned address or stride field (bits 31:5 of the register).
std::uint64_t aligned(const RegRead& regs, std::uint32_t addr) {
  return regs(addr) & ~std::uint64_t{31};
}

}  // namespace

BdmaOperation decode_bdma(const HwConfig& hw, const RegRead& regs) {
  if (!hw.dla.bdma) throw_not_present(hw, "BDMA");
  BdmaOperation op;
  models::ops::BdmaCopy& c = op.copy;
  const std::uint32_t cmd = regs(B::CFG_CMD::kAddr);
  op.src_ram = static_cast<BdmaRam>(B::CFG_CMD::SRC_RAM_TYPE.get(cmd));
  op.dst_ram = static_cast<BdmaRam>(B::CFG_CMD::DST_RAM_TYPE.get(cmd));
  c.src = (std::uint64_t{regs(B::CFG_SRC_ADDR_HIGH::kAddr)} << 32) |
          aligned(regs, B::CFG_SRC_ADDR_LOW::kAddr);
  c.dst = (std::uint64_t{regs(B::CFG_DST_ADDR_HIGH::kAddr)} << 32) |
          aligned(regs, B::CFG_DST_ADDR_LOW::kAddr);
  // CFG_CMD's RAM types pick DRAM or the CV-SRAM (DMA addresses, sim/core/device_memory.hpp);
  // without a secondary memory interface every copy is DRAM's, as for the other DMAs.
  if (hw.dla.secondary_memif) {
    c.src = dma_address(ram_type_space(B::CFG_CMD::SRC_RAM_TYPE.get(cmd)), c.src);
    c.dst = dma_address(ram_type_space(B::CFG_CMD::DST_RAM_TYPE.get(cmd)), c.dst);
  }
  // CFG_LINE: line size in 32-byte units minus one; the repeats are counts minus one.
  c.line_bytes = (std::uint64_t{B::CFG_LINE::SIZE.get(regs(B::CFG_LINE::kAddr))} + 1) * 32;
  c.lines = B::CFG_LINE_REPEAT::NUMBER.get(regs(B::CFG_LINE_REPEAT::kAddr)) + 1;
  c.surfaces = B::CFG_SURF_REPEAT::NUMBER.get(regs(B::CFG_SURF_REPEAT::kAddr)) + 1;
  c.src_line_stride = aligned(regs, B::CFG_SRC_LINE::kAddr);
  c.dst_line_stride = aligned(regs, B::CFG_DST_LINE::kAddr);
  c.src_surface_stride = aligned(regs, B::CFG_SRC_SURF::kAddr);
  c.dst_surface_stride = aligned(regs, B::CFG_DST_SURF::kAddr);
  // Lines must not overlap within a surface, nor surfaces within the copy (a stride shorter
  // than what it steps over would make the destination depend on the copy order).
  if (c.lines > 1 && c.dst_line_stride < c.line_bytes) {
    throw std::runtime_error(
        fmt::format("BDMA: CFG_DST_LINE stride {} is shorter than the line ({} bytes: CFG_LINE {})",
                    c.dst_line_stride, c.line_bytes, c.line_bytes / 32 - 1));
  }
  if (c.surfaces > 1 && c.dst_surface_stride < c.dst_line_stride * (c.lines - 1) + c.line_bytes) {
    throw std::runtime_error(fmt::format(
        "BDMA: CFG_DST_SURF stride {} is shorter than a surface ({} lines of stride {})",
        c.dst_surface_stride, c.lines, c.dst_line_stride));
  }
  return op;
}

OpResult run_bdma(const HwConfig& hw, const RegRead& regs, const LutTables& /*lut*/,
                  models::ops::Memory& mem) {
  const BdmaOperation op = decode_bdma(hw, regs);
  const models::ops::BdmaCopy& c = op.copy;
  models::ops::run_bdma_copy(c, mem, mem);  // `mem` routes DMA addresses to their memory
  OpResult r;
  // The copied cube: width in 32-byte units (CFG_LINE + 1), lines, surfaces.
  r.in = {static_cast<std::uint32_t>(c.line_bytes / 32), c.lines, c.surfaces};
  r.out = r.in;
  r.bytes_read = c.bytes();
  r.bytes_written = c.bytes();
  r.dma.input.push_back(feature_region(c.src, c.line_bytes, c.lines, c.surfaces, c.src_line_stride,
                                       c.src_surface_stride));
  auto descriptor = std::make_shared<BdmaDescriptor>();
  descriptor->op = op;
  r.descriptor = std::move(descriptor);
  r.dma.output.push_back(feature_region(c.dst, c.line_bytes, c.lines, c.surfaces, c.dst_line_stride,
                                        c.dst_surface_stride));
  return r;
}

}  // namespace octasim::dla
