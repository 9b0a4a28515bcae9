// Rubik (RBK) register decode into the models/ reshape (models/ops/rubik.hpp), and the slices its
// DMAs move: run_rubik is decode + check + models::ops::run_rubik; the cycle-level RubikCore times
// the same decoded operation (RubikDescriptor).
#pragma once

#include <cstdint>
#include <vector>

#include "models/ops/rubik.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::dla {

// D_DAIN_RAM_TYPE / D_DAOUT_RAM_TYPE: the CV-SRAM (CVIF) or DRAM (MCIF).
enum class RubikRam : std::uint8_t { kCv = 0, kMc = 1 };

struct RubikOp {
  models::ops::RubikParams params;
  RubikRam in_ram = RubikRam::kMc, out_ram = RubikRam::kMc;
};

// The RBK register group decoded and checked; std::runtime_error with one line for programming
// octasim does not execute: Rubik absent from the configuration, a reserved mode or precision,
// an address or stride off the 32-byte (planar: 64-byte) alignment, contract channels that do
// not make x_stride * y_stride whole-atom groups of DATAOUT_CHANNEL + 1, deconv_x_stride *
// width over 8192, a split of more planes than channels, a merge changing the channel count.
[[nodiscard]] RubikOp decode_rubik(const HwConfig& hw, const RegRead& regs);

// The memory a Rubik surface is in. MCIF: `mc` (the DRAM image). CVIF (the CV-SRAM) is refused
// with one line until octasim models the CV-SRAM: this is the one place to route it. `which`
// names the register (D_DAIN_RAM_TYPE, D_DAOUT_RAM_TYPE).
[[nodiscard]] models::ops::Memory& rubik_memory(const HwConfig& hw, RubikRam ram,
                                                models::ops::Memory& mc, const char* which);

// One DMA line: a run of bytes inside one line of a surface.
struct RubikLine {
  std::uint64_t addr = 0;
  std::uint32_t bytes = 0;
};
// What Rubik moves for one input line h ("slice by slice: it takes one W x 1 x C input slice"):
// the input lines it reads and the output lines it writes, in the order the DMAs walk them.
struct RubikSlice {
  std::vector<RubikLine> reads, writes;
};
[[nodiscard]] RubikSlice rubik_slice(const models::ops::RubikParams& p, std::uint32_t h);
// Bytes read and written by the whole operation (every slice).
[[nodiscard]] std::uint64_t rubik_bytes_read(const models::ops::RubikParams& p);
[[nodiscard]] std::uint64_t rubik_bytes_written(const models::ops::RubikParams& p);

// A Rubik operation decoded (OpResult::descriptor).
struct RubikDescriptor final : OperationDescriptor {
  explicit RubikDescriptor(const RubikOp& o) : op(o) {}
  RubikOp op;
};

// The engine's functional operation (sim/dla/engines.cpp "RUBIK").
OpResult run_rubik(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
                   models::ops::Memory& mem);

}  // namespace octasim::dla
