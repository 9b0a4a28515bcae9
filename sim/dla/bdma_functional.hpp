// BDMA (NVDLA's bridge DMA) register decode and its zero-time copy (models/ops/bdma). One
// operation is one cached slot of the BDMA command queue (sim/core/register_file.hpp): the
// CFG_ registers the hardware reads from the slot at the head of the queue.
#pragma once

#include <cstdint>

#include "models/ops/bdma.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::dla {

// CFG_CMD.SRC_RAM_TYPE / DST_RAM_TYPE: the CV-SRAM (secondary memory interface) or DRAM (MC).
enum class BdmaRam : std::uint8_t { kCvSram = 0, kMc = 1 };

struct BdmaOperation {
  models::ops::BdmaCopy copy;
  BdmaRam src_ram = BdmaRam::kMc, dst_ram = BdmaRam::kMc;
};

// The decoded copy the timing model reads (OpResult::descriptor): which memory each of its DMAs
// talks to.
struct BdmaDescriptor final : OperationDescriptor {
  BdmaOperation op;
};

// Decodes the operation `regs` reads. Throws std::runtime_error with one line for BDMA absent
// from `hw` (throw_not_present) or a copy octasim cannot execute.
[[nodiscard]] BdmaOperation decode_bdma(const HwConfig& hw, const RegRead& regs);

// The engine's functional operation: decode, copy, and the surfaces its DMAs move.
OpResult run_bdma(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
                  models::ops::Memory& mem);

}  // namespace octasim::dla
