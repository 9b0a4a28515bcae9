// BDMA (NVDLA's bridge DMA) programming: strided 2-D/3-D copies between DRAM (MC) and the
// CV-SRAM, described in user terms and programmed through Mmio as NVDLA's programming guide
// describes (v1_ias_programming_guide.rst, "BDMA programming"): each copy's CFG_ registers then
// CFG_OP.EN (the hardware caches the copy in one of its 20 slots), and CFG_LAUNCH<group> after
// the last copy of a group; the group's BDMA_DONE interrupt follows its last copy.
#pragma once

#include <cstdint>

#include "firmware/driver/mmio.hpp"
#include "models/ops/bdma.hpp"

namespace octasim::firmware {

enum class BdmaRam : std::uint8_t { kCvSram = 0, kMc = 1 };  // CFG_CMD *_RAM_TYPE

struct BdmaTransfer {
  std::uint64_t src = 0, dst = 0;     // 32-byte aligned
  std::uint32_t line_bytes = 32;      // a multiple of 32, 32..262144 (CFG_LINE)
  std::uint32_t lines = 1;            // per surface, 1..2^24 (CFG_LINE_REPEAT)
  std::uint32_t surfaces = 1;         // 1..2^24 (CFG_SURF_REPEAT)
  std::uint32_t src_line_stride = 0;  // bytes, 32-byte aligned; 0: line_bytes (packed)
  std::uint32_t dst_line_stride = 0;
  std::uint32_t src_surface_stride = 0;  // 0: lines x line stride (packed)
  std::uint32_t dst_surface_stride = 0;
  BdmaRam src_ram = BdmaRam::kMc, dst_ram = BdmaRam::kMc;
};

// Copies programmed per group at most (the BDMA's slots).
inline constexpr unsigned kBdmaSlots = 20;

// Programs one copy and caches it (CFG_OP.EN). Throws FirmwareError, before any register is
// written, for a copy it cannot program (alignment, sizes, overlapping destination lines).
void program_bdma(Mmio& mmio, const BdmaTransfer& copy);

// Launches the copies cached since the last launch as group `group` (0 or 1). Returns the GLB
// S_INTR_STATUS bit of its completion (BDMA_DONE_STATUS<group>).
[[nodiscard]] unsigned launch_bdma(Mmio& mmio, unsigned group);

// The copy as models/ describes it (strides resolved).
[[nodiscard]] models::ops::BdmaCopy bdma_model_copy(const BdmaTransfer& copy);

}  // namespace octasim::firmware
