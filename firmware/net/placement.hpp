// Placing a compiled network's data in the CV-SRAM behind the DLA's secondary memory interface
// (configurations with secondary_memif): the last step of compiling, after build_program laid
// everything out in DRAM (memory_layout.hpp).
//
// Policy: activations first — every layer's input and output surfaces, read and written every
// inference; with the activation pool's reuse their footprint is small — then constants (conv
// weights, SDP bias/scale tables, element-wise constant operands) one by one in program order,
// each where it fits in the space left (one that does not fit stays in DRAM and a later, smaller
// one may still go). Everything else stays in DRAM.
//
// Activations move as a part of the activation region: offset o of [0xC000_0000, memory_end) goes
// to cvsram_base + o for the offsets in a set M that starts as [0, cvsram capacity) and loses
//   - every surface a unit without a secondary interface reads or writes (the OCTAV unit's input,
//     the PPU's softmax surfaces): those buffers stay in DRAM, and so does whatever reuses them;
//   - every surface M holds only in part (a buffer straddling the capacity), repeatedly, until
//     each surface of the program is wholly inside M (it moves) or wholly outside (it stays).
// So a buffer reused by several tensors, and a layer's view of part of a tensor, move together.
// Constants then take CV-SRAM addresses from the end of the activations' part, aligned to 256.
// A constant some unit reads from DRAM only (a PPU push buffer, SDP quantize tables) stays, and
// so does one no layer's address field names (the PPU's softmax descriptor, which only its push
// buffer's bytes point to).
//
// The usable CV-SRAM is [cvsram_base, cvsram_base + cvsram_bytes) less any part overlapping the
// DRAM regions the compiler uses, [0x8000_0000, 2^32), so that one address names one memory in a
// program (PlacedMemory, memory_layout.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "firmware/net/program.hpp"

namespace octasim {
struct HwConfig;
}

namespace octasim::firmware::net {

struct PlacementOptions {
  // Use the CV-SRAM when the configuration has one (`octasim net --no-cvsram`: false).
  bool cvsram = true;
};

// Moves `p`'s data to the CV-SRAM as the policy says (nothing when `options.cvsram` is false or
// `hw` has no secondary memory interface) and fills p.placement, which also counts what stayed in
// DRAM. Surfaces and constants that move get Ram::kCv and CV-SRAM addresses.
void place_in_cvsram(NetProgram& p, const HwConfig& hw, const PlacementOptions& options);

// One line: "memory: activations N B CV-SRAM, N B DRAM; constants N B CV-SRAM, N B DRAM".
[[nodiscard]] std::string placement_summary(const MemoryPlacement& m);

// The usable CV-SRAM of `hw` for a compiled program, [first, second) (empty: none).
[[nodiscard]] std::pair<std::uint64_t, std::uint64_t> usable_cvsram(const HwConfig& hw);

}  // namespace octasim::firmware::net
