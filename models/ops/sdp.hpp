// NVDLA's SDP (single data point processor) as a functional model: the layer configuration in
// NVDLA's own terms, the per-element datapath (BS -> BN -> EW (+LUT) -> output convertor) and a
// layer walker over NVDLA's in-memory surfaces (format.rst: 1x1xC' atoms of the memory atom
// size, line stride, surface stride).
//
// The per-element entry points (SdpDatapath::process / process_atom) take the input as it
// arrives at the datapath (MRDMA data sign-extended to INT32, or a CACC INT32 partial sum in
// flying mode) and the operands as the B/N/E RDMAs deliver them, so a cycle-level SDP can feed
// them atom by atom as data streams in; the layer walker (run_sdp_layer) is the zero-time
// memory-to-memory version of the same thing.
//
// Supported: INT8/INT16 pipelines (in == proc == out precision class), memory input or flying
// input from the convolution core (CACC INT32), memory output, per-channel/per-element
// operands, EW with convertors and the LUT, EQL compare mode; and the FP16 pipeline
// (PROC = OUT = FP16) fed either by the convolution core (flying, CACC FP32) or by MRDMA
// (FLYING_MODE=OFF, SDP_RDMA IN_PRECISION = FP16: 2-byte elements, atom/2 per atom, each widened
// exactly to FP32): BS/BN with FP16 operands from registers or memory and the EW stage
// (MUL/PReLU, ALU SUM/MAX/MIN) with FP16 operands from ERDMA or an FP32 register operand
// (sdp_fp16_stages.hpp documents the arithmetic). Precision conversion between the pipelines
// (memory input only, IN_PRECISION = PROC_PRECISION): PROC = INT16 -> OUT = FP16 through the
// output convertor, and PROC = FP16 -> OUT = INT16 (sdp_fp16_stages.hpp). Refused in the FP16
// pipeline: INT input (IN_PRECISION != FP16), FP16 -> INT8, the EW LUT, EW EQL mode, 1-byte
// operands; INT8 <-> FP16 and any conversion in flying or EQL mode.
// Refused everywhere: output to PDP (run_sdp_op in sim/dla handles it), batch and Winograd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/ops/conv.hpp"
#include "models/ops/memory.hpp"
#include "models/ops/sdp_lut.hpp"
#include "models/precision/convertor.hpp"
#include "models/precision/sdp_stages.hpp"

namespace octasim::models::ops {

// D_DATA_FORMAT / D_FEATURE_MODE_CFG precision encodings.
enum class SdpPrecision : std::uint8_t { kInt8 = 0, kInt16 = 1, kFp16 = 2 };
// *_ALU_SRC / *_MUL_SRC.
enum class SdpOperandSource : std::uint8_t { kRegister = 0, kMemory = 1 };
// *RDMA_DATA_USE: which operand(s) the RDMA stream carries.
enum class SdpDataUse : std::uint8_t { kMul = 0, kAlu = 1, kBoth = 2 };
// *RDMA_DATA_MODE: one operand per channel (NVDLA's PER_KERNEL) or per element.
enum class SdpDataMode : std::uint8_t { kPerChannel = 0, kPerElement = 1 };

// A BS or BN (X) stage: ALU -> multiplier -> truncation -> ReLU.
struct SdpXConfig {
  bool bypass = true;
  bool alu_bypass = true;
  SdpAluAlgo alu_algo = SdpAluAlgo::kMax;
  SdpOperandSource alu_src = SdpOperandSource::kRegister;
  std::int16_t alu_operand = 0;  // *_ALU_SRC_VALUE
  std::uint8_t alu_shift = 0;    // *_ALU_SHIFT_VALUE (left shift of the operand, 0..63)
  bool mul_bypass = true;
  bool mul_prelu = false;
  SdpOperandSource mul_src = SdpOperandSource::kRegister;
  std::int16_t mul_operand = 0;  // *_MUL_SRC_VALUE
  std::uint8_t mul_shift = 0;    // truncation after the multiplier (hardware uses 6 bits)
  bool relu_bypass = true;
};

// An EW operand convertor (D_DP_EW_{ALU,MUL}_CVT_*), applied to ERDMA operands only (INT
// pipelines; in the FP16 pipeline ERDMA operands are widened FP16 -> FP32 and the convertor
// registers are ignored, bypass bit included).
struct SdpEwConvertor {
  bool bypass = true;
  std::int32_t offset = 0;
  std::int16_t scale = 1;
  std::uint8_t truncate = 0;  // 6 bits
};

// The EW (Y) stage: multiplier -> truncation -> ALU -> LUT.
struct SdpYConfig {
  bool bypass = true;
  bool alu_bypass = true;
  SdpAluAlgo alu_algo = SdpAluAlgo::kMax;
  SdpOperandSource alu_src = SdpOperandSource::kRegister;
  std::int32_t alu_operand = 0;  // D_DP_EW_ALU_SRC_VALUE (32 bits; FP32 bits in FP16)
  SdpEwConvertor alu_cvt;
  bool mul_bypass = true;
  bool mul_prelu = false;
  SdpOperandSource mul_src = SdpOperandSource::kRegister;
  std::int32_t mul_operand = 0;  // D_DP_EW_MUL_SRC_VALUE (32 bits; FP32 bits in FP16)
  SdpEwConvertor mul_cvt;
  std::uint16_t truncate = 0;  // D_DP_EW_TRUNCATE_VALUE (10 bits)
  bool lut_bypass = true;

  // EQL compare mode: the ALU compares, nothing is written, D_STATUS records a mismatch.
  [[nodiscard]] bool eql_mode() const {
    return !bypass && !alu_bypass && alu_algo == SdpAluAlgo::kEql;
  }
};

// One operand stream (BRDMA, NRDMA or ERDMA) and its surface in memory.
struct SdpOperandSurface {
  bool enabled = false;
  SdpDataUse use = SdpDataUse::kAlu;
  unsigned bytes_per_component = 1;  // *_DATA_SIZE: one or two bytes
  SdpDataMode mode = SdpDataMode::kPerChannel;
  std::uint64_t base = 0;
  std::uint32_t line_stride = 0;
  std::uint32_t surface_stride = 0;

  [[nodiscard]] unsigned components() const { return use == SdpDataUse::kBoth ? 2 : 1; }
  [[nodiscard]] unsigned bytes_per_element() const { return components() * bytes_per_component; }
};

struct SdpConfig {
  // Data cube (D_DATA_CUBE_*, as counts, not NVDLA's minus-one encoding).
  std::uint32_t width = 1, height = 1, channels = 1;
  SdpPrecision in_precision = SdpPrecision::kInt8;    // SDP_RDMA IN_PRECISION (memory input)
  SdpPrecision proc_precision = SdpPrecision::kInt8;  // D_DATA_FORMAT.PROC_PRECISION
  SdpPrecision out_precision = SdpPrecision::kInt8;   // D_DATA_FORMAT.OUT_PRECISION
  unsigned atom_bytes = 8;                            // the configuration's memory atom

  bool flying = false;         // input from CACC instead of MRDMA
  bool output_to_pdp = false;  // D_FEATURE_MODE_CFG.OUTPUT_DST
  bool nan_to_zero = false;
  std::uint32_t batches = 1;
  bool winograd = false;

  // Input surface (MRDMA).
  std::uint64_t src_base = 0;
  std::uint32_t src_line_stride = 0, src_surface_stride = 0;
  // Operand surfaces.
  SdpOperandSurface brdma, nrdma, erdma;

  SdpXConfig bs, bn;
  SdpYConfig ew;
  SdpLutConfig lut;
  ConvertorParams cvt;  // D_CVT_OFFSET / D_CVT_SCALE / D_CVT_SHIFT (6 bits)

  // Output surface (WDMA).
  std::uint64_t dst_base = 0;
  std::uint32_t dst_line_stride = 0, dst_surface_stride = 0, dst_batch_stride = 0;

  // Elements in one 1x1xC' atom at a precision (memory atom / bytes per element).
  [[nodiscard]] unsigned elements_per_atom(SdpPrecision p) const {
    return p == SdpPrecision::kInt8 ? atom_bytes : atom_bytes / 2;
  }
  // Surfaces (C' groups) the cube spans at the processing precision.
  [[nodiscard]] std::uint32_t surfaces() const {
    const unsigned epa = elements_per_atom(proc_precision);
    return (channels + epa - 1) / epa;
  }
};

// Whether any BS/BN/EW stage takes an operand from memory (a B/N/E RDMA stream).
[[nodiscard]] bool sdp_operands_from_memory(const SdpConfig& cfg);

// One element's memory operands as the B/N/E RDMAs deliver them (sign-extended). The datapath
// uses each only when the stage takes that operand from memory.
struct SdpOperands {
  std::int16_t bs_alu = 0, bs_mul = 0;
  std::int16_t bn_alu = 0, bn_mul = 0;
  std::int16_t ew_alu = 0, ew_mul = 0;
};

// Per-layer statistics, as NVDLA's status/perf registers count them.
struct SdpStats {
  SaturationCounter out_saturation;  // D_PERF_OUT_SATURATION
  SaturationCounter lut_uflow, lut_oflow, lut_hybrid, lut_le_hit, lut_lo_hit;
  SaturationCounter out_nan;  // D_STATUS_NAN_OUTPUT_NUM (FP16 output)
  // SDP_RDMA D_STATUS_NAN_INPUT_NUM / D_STATUS_INF_INPUT_NUM: NaN and +-Inf FP16 elements MRDMA
  // read (every element of every atom, padding channels included).
  SaturationCounter in_nan, in_inf;
  bool unequal = false;  // D_STATUS.STATUS_UNEQUAL (EQL mode)
};

// The SDP datapath for one layer configuration. Per element: no allocation, no virtual call.
class SdpDatapath {
 public:
  explicit SdpDatapath(const SdpConfig& cfg);

  // One data point: `in` is the input at the datapath (INT8/INT16 from memory sign-extended, or
  // INT32 from CACC; in the FP16 pipeline an FP32 bit pattern: CACC's, or an MRDMA FP16 element
  // widened by fp16_input). Returns the output lane value: INT8/INT16 result (sign-extended,
  // also for FP16 -> INT16), the FP16 bit pattern (FP16 output, also INT16 -> FP16), or in EQL
  // mode the compare result (0 equal, 1 different). Counts events into `stats`. Operands are
  // the RDMA's 16-bit elements (FP16 bit patterns in the FP16 pipeline).
  [[nodiscard]] std::int32_t process(std::int32_t in, const SdpOperands& ops,
                                     SdpStats& stats) const;

  // `n` data points (e.g. one atom): out[i] = process(in[i], ops[i]).
  void process_atom(const std::int32_t* in, const SdpOperands* ops, std::size_t n,
                    std::int32_t* out, SdpStats& stats) const;

  // The X stage alone on one value (exposed for tests and the cycle model's pipeline split).
  [[nodiscard]] static std::int32_t x_stage(const SdpXConfig& x, std::int32_t in,
                                            std::int16_t alu_op, std::int16_t mul_op);
  // The X stage of the FP16 pipeline on one FP32 value (bit patterns; operands FP16).
  [[nodiscard]] static std::uint32_t x_stage_fp16(const SdpXConfig& x, std::uint32_t in,
                                                  std::uint16_t alu_op, std::uint16_t mul_op,
                                                  bool nan_to_zero);
  // The Y stage of the FP16 pipeline (no LUT) on one FP32 value: memory operands are FP16
  // (ERDMA), register operands FP32 bit patterns (D_DP_EW_*_SRC_VALUE).
  [[nodiscard]] static std::uint32_t y_stage_fp16(const SdpYConfig& y, std::uint32_t in,
                                                  std::uint16_t alu_op, std::uint16_t mul_op,
                                                  bool nan_to_zero);
  // An MRDMA FP16 element as it enters the FP16 pipeline (FP32 bits, exact; an infinity becomes
  // FP32's largest value), counting NaN/Inf elements into `stats` (in_nan, in_inf).
  [[nodiscard]] static std::int32_t fp16_input(std::uint16_t h, SdpStats& stats);
  // The Y stage without the LUT.
  [[nodiscard]] static std::int32_t y_core(const SdpYConfig& y, std::int32_t in,
                                           std::int16_t alu_op, std::int16_t mul_op);

 private:
  SdpXConfig bs_, bn_;
  SdpYConfig ew_;
  const SdpLutConfig* lut_;
  ConvertorParams cvt_;
  IntPrecision out_;
  bool eql_;
  bool fp16_;         // PROC_PRECISION = FP16
  bool fp16_out_;     // OUT_PRECISION = FP16
  bool nan_to_zero_;  // D_FEATURE_MODE_CFG.NAN_TO_ZERO (FP16 operands)

  [[nodiscard]] std::int32_t process_fp16(std::int32_t in, const SdpOperands& ops,
                                          SdpStats& stats) const;
};

// What a layer did.
struct SdpLayerResult {
  SdpStats stats;
  std::uint64_t bytes_read = 0;     // MRDMA + B/N/E RDMA bytes
  std::uint64_t bytes_written = 0;  // WDMA bytes (0 in EQL mode)
};

// Byte address of the 1x1xC' atom (w, h, surface) of a feature surface: NVDLA's pitch-linear
// layout (atoms of a line packed, lines `line_stride` apart, surfaces `surface_stride` apart).
[[nodiscard]] constexpr std::uint64_t sdp_atom_address(std::uint64_t base,
                                                       std::uint32_t line_stride,
                                                       std::uint32_t surface_stride,
                                                       unsigned atom_bytes, std::uint32_t w,
                                                       std::uint32_t h, std::uint32_t surface) {
  return base + std::uint64_t{surface} * surface_stride + std::uint64_t{h} * line_stride +
         std::uint64_t{w} * atom_bytes;
}

// Runs one SDP layer: reads the input (MRDMA, or in flying mode the convolution core's INT32
// output `flying`) and operand surfaces, writes the output surface (every element of every
// atom, padding channels included, as the hardware does). Throws std::runtime_error for
// configurations outside the supported set above.
[[nodiscard]] SdpLayerResult run_sdp_layer(const SdpConfig& cfg, Memory& mem,
                                           const ConvCube* flying = nullptr);

// Multi-batch mode (D_FEATURE_MODE_CFG.BATCH_NUMBER; flying from the convolution core only):
// `flying` holds cfg.batches cubes; batch b is written at dst_base + b * D_DST_BATCH_STRIDE
// (sdp_batch). Per-channel operands (bias, batch-norm) are shared by every batch and read once
// per batch; a per-element operand from memory is refused. Counters add up over the batches.
[[nodiscard]] SdpLayerResult run_sdp_batches(const SdpConfig& cfg, Memory& mem,
                                             const std::vector<ConvCube>& flying);
// The single-cube layer of batch `b`.
[[nodiscard]] SdpConfig sdp_batch(const SdpConfig& cfg, std::uint32_t b);

}  // namespace octasim::models::ops
