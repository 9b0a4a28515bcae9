// The OCTAV unit (octasim's own, not NVDLA's): computes MSE-optimal clipping scalars of a tensor
// in memory with the Newton-Raphson recursion of the OCTAV patent (models/quant/octav.hpp), and
// can program the result into the output convertor of the next SDP or CDP register group.
// CSB 0x12000-0x12fff (registers in firmware/regmap/nvdla.json, unit OCTAV), done interrupt
// GLB S_INTR_STATUS bits 22/23 (OCTAV_0, OCTAV_1).
//
// What the hardware computes, fixed so the unit and models/ agree bit for bit:
// - Input: D_MISC_CFG.DATA_TYPE INT8, INT16, INT32, FP16 or FP32, in NVDLA's feature layout
//   (W x H x C, C' = atom / element bytes channels per surface) or a flat array. The front end
//   converts every element to FP32: INT8, INT16 and FP16 exactly, INT32 rounded to nearest
//   even (as NVDLA's INT->FP convertors do). NaN and Inf elements stop the operation.
// - Groups: the tensor as a C-order array [C, H, W] (feature) or [L] (flat); per tensor, per
//   channel (feature layout only: group c holds channel c) or per vector of N (each line of W
//   elements, or the flat array, cut into runs of N; groups numbered (c, h, run)).
// - Pass 0 (statistics): per group the largest and the smallest nonzero FP32 magnitude
//   (|x|, or max(x, 0) unsigned), which give the initial guess and the degenerate cases.
// - Then one pass per Newton-Raphson iteration for all unconverged groups at once: per element
//   the magnitude's FP32 bits m are compared with the threshold t (the largest FP32 <= s, an
//   unsigned compare), and three accumulators per group take m > t: count_above += 1,
//   sum_above += m (exactly); 0 < m <= t: count_nonzero_at_or_below += 1. Widths: the counts
//   are 32 bits (a group has fewer than 2^32 elements); the sum is a fixed-point register of
//   kSumBits = 320 bits with its LSB at 2^-149 (the smallest FP32 subnormal): an FP32 magnitude
//   is below 2^128, so 2^32 of them stay below 2^160 = bit 309. Order does not matter: every
//   add is exact. The sum is rounded once, to nearest even, to FP64.
// - The update (the divider, FP64): s' = k*S / (N0 * 2^-2B + k*N1), k = 3 signed, 12
//   unsigned (models::octav_update); converged when s' == s, s' equals the iterate before s
//   (the two-value cycle: the smaller is kept) or |s' - s| <= tolerance * s'; a group stops at
//   D_MAX_ITERATIONS. A group without a nonzero element gives 0, a group with one nonzero
//   magnitude gives it, both after 0 iterations — models::octav's policies exactly.
// - Results: each group's clipping scalar rounded to FP32 (nearest even). Group 0's goes to
//   D_CLIP_RESULT; per channel/vector every group's FP32 goes to memory at D_RESULT_ADDR (group g
//   at +4g, little-endian). D_ITERATIONS is the number of iteration passes (the largest
//   iteration count of a group), D_CONVERGED says every group converged.
// - Auto-program (per tensor only): models::clip_to_convertor(FP32 clip, B, signedness) into
//   SDP D_CVT_OFFSET/SCALE/SHIFT or CDP D_DATOUT_OFFSET/SCALE/SHIFTER of the register group
//   that unit executes next (its consumer pointer when OCTAV starts). With D_MISC_CFG.AUTO_CLAMP
//   also models::clip_to_clamp into SDP D_DP_BS_ALU_SRC_VALUE (hi) and D_DP_BN_ALU_SRC_VALUE
//   (lo), for an SDP that firmware set up to clamp (BS ALU MIN, BN ALU MAX, register operands)
//   because its output is wider than B bits and would not clip by saturating.
// - AUTO_PROGRAM=FAKEQUANT (per tensor, DATA_TYPE INT8 or INT16): models::clip_to_fake_quant(FP32
//   clip, B, signedness) into the register operands of SDP's next group, for an SDP that firmware
//   set up to fake-quantize (firmware::program_fake_quant_sdp: BS ALU MIN / multiplier, BN ALU
//   MAX / multiplier, register operands): D_DP_BS_ALU_SRC_VALUE (hi), D_DP_BS_MUL_SRC_VALUE (r1),
//   D_DP_BN_ALU_CFG (register source, shift lo_shift), D_DP_BN_ALU_SRC_VALUE (lo),
//   D_DP_BN_MUL_CFG (register source, shift t2), D_DP_BN_MUL_SRC_VALUE (r2) and D_CVT_OFFSET/
//   SCALE/SHIFT. The SDP's output is the tensor in its own units on the B-bit grid of the clip.
#pragma once

#include <cstdint>
#include <vector>

#include "models/ops/memory.hpp"
#include "models/quant/grouping.hpp"
#include "models/quant/octav.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::octav {

inline constexpr unsigned kSumBits = 320;   // the exact sum accumulator
inline constexpr unsigned kCountBits = 32;  // count_above, count_nonzero_at_or_below
inline constexpr int kSumLsbExponent = -149;

enum class DataType : std::uint8_t { kInt8 = 0, kInt16 = 1, kInt32 = 2, kFp16 = 3, kFp32 = 4 };
enum class AutoProgram : std::uint8_t { kNone = 0, kSdp = 1, kCdp = 2, kFakeQuant = 3 };

[[nodiscard]] unsigned element_bytes(DataType t);
[[nodiscard]] const char* data_type_name(DataType t);

// The programming of one OCTAV operation, decoded from its register group.
struct OctavOp {
  DataType type = DataType::kInt8;
  models::Signedness sign = models::Signedness::kSigned;
  bool flat = false;
  std::uint64_t src = 0;
  std::uint32_t width = 1, height = 1, channels = 1;  // feature layout
  std::uint32_t line_stride = 0, surface_stride = 0;
  std::uint32_t length = 0;  // flat layout: elements
  models::Grouping grouping;
  models::OctavOptions options;  // bits, sign, init, initial value, tolerance, max iterations
  std::uint64_t result_addr = 0;
  AutoProgram auto_program = AutoProgram::kNone;
  bool auto_clamp = false;  // also SDP D_DP_BS/BN_ALU_SRC_VALUE = +-models::clip_to_clamp

  [[nodiscard]] std::uint64_t elements() const {
    return flat ? length : std::uint64_t{width} * height * channels;
  }
  [[nodiscard]] std::vector<std::size_t> shape() const;
};

// Throws std::runtime_error (one line) for programming the unit refuses.
[[nodiscard]] OctavOp decode_octav(const dla::RegRead& regs, unsigned atom_bytes);

// The elements as the front end converts them, in C order of shape(). Throws for a surface
// outside memory or a NaN/Inf element (naming its position).
[[nodiscard]] std::vector<float> read_octav_input(const OctavOp& op, const models::ops::Memory& mem,
                                                  unsigned atom_bytes);
// Bytes the unit's DMA reads for one pass over the input (whole atoms).
[[nodiscard]] std::uint64_t octav_pass_bytes(const OctavOp& op, unsigned atom_bytes);

// The unit's sequencer over the converted input: pass 0, then iterations, as described above.
struct OctavOutcome {
  std::vector<models::ClipResult> groups;  // the FP64 iterates
  std::vector<float> clips;                // what the unit reports: each clip rounded to FP32
  unsigned iterations = 0;                 // iteration passes
  bool converged = true;
  std::uint32_t unconverged_groups = 0;
};
[[nodiscard]] OctavOutcome octav_sequence(const std::vector<float>& x, const OctavOp& op);

// Timing-relevant totals of one operation (both devices report them in the perf registers).
struct OctavTraffic {
  unsigned passes = 0;           // pass 0 + iteration passes
  std::uint64_t elements = 0;    // elements streamed through the datapath, all passes
  std::uint64_t dram_bytes = 0;  // bytes read from DRAM (once when the input fits the buffer)
  bool buffered = false;         // the input fits octav_buffer_bytes
};
[[nodiscard]] OctavTraffic octav_traffic(const HwConfig& hw, const OctavOp& op, unsigned passes);

// An OCTAV operation decoded (OpResult::descriptor): its programming and how many passes over
// the input and result groups the sequencer made — what the timing model (OctavCore) needs.
struct OctavDescriptor final : dla::OperationDescriptor {
  OctavDescriptor(const OctavOp& o, unsigned p, std::uint32_t g) : op(o), passes(p), groups(g) {}
  OctavOp op;
  unsigned passes;
  std::uint32_t groups;
};

// The engine's functional operation (sim/dla/engines.cpp "OCTAV").
dla::OpResult run_octav(const HwConfig& hw, const dla::RegRead& regs, const LutTables& lut,
                        models::ops::Memory& mem);

}  // namespace octasim::octav
