// SDP layer programming: a memory-to-memory SDP layer described in user terms (input and output
// surfaces, per-channel bias, per-channel multiply with shift, ReLU, an element-wise operand,
// output convertor) and the function that programs it through Mmio, as NVDLA's programming
// guide describes ("SDP programming": bias addition in the BS stage, batch-norm-style multiply
// in the BN stage, element-wise in BN or EW).
//
// Encoded: the INT8/INT16 pipelines (input, processing and output precision equal), memory
// input and output, per-channel INT16 operands from memory, an element-wise operand surface
// (SdpStage::ew: per element through NRDMA into BN, or through ERDMA and its operand convertor
// into EW), the EW stage's LUT (SdpStage::lut); the same registers for the flying SDP stage of
// a convolution (firmware/dla/conv.hpp; with `ew`, NVDLA's online element-wise mode). Not
// encoded (refused or simply not expressible here): batches with an element-wise operand,
// Winograd, per-element BS operands, the LUT in the FP16 pipeline or a flying stage, INT <->
// FP16 conversion with an element-wise operand. Output to PDP (SdpStage::output_to_pdp) is
// programmed for a convolution's SDP stage by firmware/dla/conv_pool.hpp.
//
// FP16 (Precision::kFp16: FP16 in memory and out; in flying mode CACC's FP32 in): the same
// stages with FP16 operands — per-channel tables of FP16 bit patterns (sdp_fp16_table,
// sdp_fp16_bias_scale_table), clamp_max the FP16 bit pattern of the bound — computed in FP32 by
// the X stages and rounded once to FP16 at the output (models/precision/sdp_fp16_stages.hpp).
// FP16 has no operand shifts and no output convertor: every shift must be 0 and `cvt` the
// identity (offset 0, scale 1, shift 0). An element-wise FP16 operand in EW is read with the
// operand convertor not bypassed but the identity, as the programming guide requires for FP16:
// offset FP32 0, scale FP16 1.0 = 0x3c00, truncate 0.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "firmware/dla/surface.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/sdp.hpp"

namespace octasim::firmware {

// A table of one INT16 operand per channel in memory (SDP_RDMA PER_KERNEL mode), built by
// sdp_per_channel_table(), and the shift the stage applies with it.
struct SdpPerChannel {
  std::uint64_t address = 0;
  unsigned shift = 0;  // 0..63
  Ram ram = Ram::kMc;  // the table's memory (BRDMA_RAM_TYPE / NRDMA_RAM_TYPE)
};

// Bias and multiplier per channel both in the BS stage, from one BRDMA stream with
// DATA_USE=BOTH (each channel's element holds the ALU operand, then the multiplier), as NVDLA's
// programming guide programs batch normalization:
//   ((x + (alu[c] << alu_shift)) * mul[c]) >> mul_shift   (the multiplier's truncation rounds)
// The table is built by sdp_bias_scale_table().
struct SdpBiasScale {
  std::uint64_t address = 0;
  unsigned alu_shift = 0;  // 0..63
  unsigned mul_shift = 0;  // 0..63
  Ram ram = Ram::kMc;      // the table's memory (BRDMA_RAM_TYPE)
};

// The output convertor: y = saturate(round_half_away(((x - offset) * scale) >> shift)).
struct SdpConvertor {
  std::int32_t offset = 0;
  std::int16_t scale = 1;
  unsigned shift = 0;  // 0..63
};

// The operation with an element-wise operand e (after BS, and BN where e enters later): y = x + e
// (an ALU, SUM), y = x * e (a multiplier), or PReLU, y = x where x's sign bit is clear, else
// x * e (the multiplier in PReLU mode: ONNX's PRelu and LeakyRelu).
enum class SdpEwOp : std::uint8_t { kAdd, kMul, kPrelu };

// The SDP unit an element-wise operand enters (NVDLA's precision guide: element-wise runs in X or
// Y; nv_small has no Y).
enum class SdpEwUnit : std::uint8_t {
  // Y (EW), read by ERDMA. In the INT8/INT16 pipelines its operand convertor first brings e to
  // the datapath's scale, ((e - offset) * scale) >> truncate (SdpElementwise::cvt); add: EW's ALU
  // sums; mul/PReLU: EW's multiplier, then >> SdpElementwise::truncate. EW has no ReLU: a ReLU of
  // the stage comes before EW.
  kEw,
  // X2 (BN), read by NRDMA. Add: BN's ALU sums x + (e << shift), then BN's multiplier takes a
  // register operand (SdpElementwise::rescale, or is bypassed); mul/PReLU: BN's multiplier takes
  // e, then >> shift. BN's ReLU follows (the stage's `relu`). Not with `scale` or `clamp_max`
  // (they need BN too).
  kBn,
};

// An EW operand convertor (D_DP_EW_{ALU,MUL}_CVT_OFFSET/SCALE/TRUNCATE_VALUE):
// ((e - offset) * scale) >> truncate, rounded, into INT32.
struct SdpOperandConvertor {
  std::int32_t offset = 0;
  std::int16_t scale = 1;
  unsigned truncate = 0;  // 0..63
};

// A multiplier with a register operand and its truncation: round((x * value) >> shift).
struct SdpRegisterScale {
  std::int16_t value = 1;  // FP16: the FP16 bit pattern
  unsigned shift = 0;      // 0..63; FP16: 0
};

// An element-wise operand: a feature surface with the input's cube (width, height, channels;
// elements of the layer's precision in the layout of surface.hpp), read per element (the RDMA's
// RAM_TYPE: the surface's ram). FP16: the
// EW operand convertor is programmed as the FP16 identity (cvt and truncate must keep their
// defaults), BN's operand takes no shift.
// `per_channel` (DATA_MODE=PER_KERNEL): one operand per channel instead, read from a 1x1xC feature
// surface of the layer's precision (a squeeze-excitation scale the device computed). The RDMA
// reads such an operand as a linear table, channel c at byte c * DATA_SIZE (one byte at INT8, two
// at INT16/FP16) over whole C' atoms; a packed 1x1xC surface (surface stride = line stride = one
// atom, format.rst) is exactly that, which check_sdp_ew requires.
struct SdpElementwise {
  SdpElementwise() = default;
  SdpElementwise(const FeatureSurface& s, SdpEwOp o, SdpEwUnit u = SdpEwUnit::kEw)
      : surface(s), op(o), unit(u) {}

  FeatureSurface surface;
  SdpEwOp op = SdpEwOp::kAdd;
  SdpEwUnit unit = SdpEwUnit::kEw;
  bool per_channel = false;
  SdpOperandConvertor cvt;                  // kEw, INT8/INT16
  unsigned truncate = 0;                    // kEw mul/PReLU, INT8/INT16: D_DP_EW_TRUNCATE_VALUE
  unsigned shift = 0;                       // kBn: BN_ALU_SHIFT_VALUE (add), BN_MUL_SHIFT_VALUE
  std::optional<SdpRegisterScale> rescale;  // kBn add: BN's multiplier after the sum
};

// What SDP does to each element, shared by an SDP layer and a convolution's flying SDP stage
// (ConvLayer::sdp).
struct SdpStage {
  // x + (bias[c] << bias->shift): the BS ALU (SUM), INT16 operands from memory through BRDMA.
  std::optional<SdpPerChannel> bias;
  // round((x * scale[c]) >> scale->shift): the BN multiplier, INT16 operands through NRDMA.
  std::optional<SdpPerChannel> scale;
  // Bias and multiplier in BS (instead of `bias` and `scale`).
  std::optional<SdpBiasScale> bias_scale;
  // Bias and multiplier per channel in BN, from one NRDMA stream (DATA_USE=BOTH, the table of
  // sdp_bias_scale_table): ((x + (alu[c] << alu_shift)) * mul[c]) >> mul_shift after BS, with the
  // ReLU after it (NRDMA_RAM_TYPE: its ram). Not with `scale`, `clamp_max` or an element-wise
  // operand in BN.
  std::optional<SdpBiasScale> bn_bias_scale;
  // max(x, 0) after the bias and the multiplier (the ReLU of the last X stage used: after an
  // element-wise operand in BN, before one in EW).
  bool relu = false;
  // min(x, clamp_max) in the BN stage's ALU (register operand) after BS and its ReLU: the upper
  // bound of codes narrower than the output precision (4-bit codes in INT8), or of ONNX's Clip.
  // Not with `scale`.
  // FP16: the bound's FP16 bit pattern (static_cast<std::int16_t>(models::fp16_from_float(v))).
  std::optional<std::int16_t> clamp_max;
  // max(x, clamp_min) in the BS stage's ALU (BS_ALU_ALGO=MAX, register operand, no shift): the
  // lower bound of ONNX's Clip. Not with `bias` or `bias_scale` (they need BS's ALU). FP16: the
  // bound's FP16 bit pattern.
  std::optional<std::int16_t> clamp_min;
  // BS's multiplier in PReLU mode with a register operand (BS_MUL_PRELU=YES, BS_MUL_SRC=REG):
  // x where x >= 0, else round((x * value) >> shift) (FP16: x * value in FP32, value the FP16 bit
  // pattern, shift 0): ONNX's LeakyRelu, one slope everywhere. Not with `bias_scale`.
  std::optional<SdpRegisterScale> prelu;
  SdpConvertor cvt;  // requantization to the output precision
  // D_PERF_ENABLE.PERF_SAT_EN: count output saturations into D_PERF_OUT_SATURATION.
  bool count_saturation = true;
  // D_FEATURE_MODE_CFG.OUTPUT_DST=PDP: the output streams into a flying PDP (firmware/dla/
  // conv_pool.hpp) instead of SDP's WDMA writing `dst`.
  bool output_to_pdp = false;
  // An element-wise operand (a convolution's flying stage: NVDLA's online element-wise mode).
  std::optional<SdpElementwise> ew;
  // The EW stage's LUT, last in the datapath (after EW's multiplier and ALU): the S_LUT_*
  // registers and both tables (firmware/dla/sdp_lut_tables.hpp builds them), written through
  // S_LUT_ACCESS_CFG/DATA by program_sdp. INT8/INT16 memory-to-memory layers only (the FP16
  // pipeline has none here, nor does a convolution's flying stage). The LUT is one storage
  // shared by both register groups: do not program a layer with a different LUT while one is
  // pending (firmware/net/schedule.hpp orders them).
  std::optional<models::ops::SdpLutConfig> lut;
  // D_PERF_ENABLE.PERF_LUT_EN: count LUT under/overflows and hits into D_PERF_LUT_*.
  bool count_lut = true;
};

// QuantizeLinear on the FP16 pipeline (SdpLayer with precision kFp16 and out_precision kInt16):
//   q = int16(fp16(max(min(x, hi_x) * inv_scale + zero_point, lo)))
// BS: ALU MIN hi_x then MUL inv_scale; BN: ALU SUM zero_point (FP16 operands, computed in FP32);
// EW: ALU MAX lo (an FP32 register operand); the FP32 result rounded to FP16, then to INT16 with
// halves away from zero. hi_x is the upper output bound in the input's domain ((hi - zero point)
// * scale): the output's upper bound, clamped before the multiply. Per tensor the operands are
// registers; per channel they come from memory: `bs_table` (BRDMA, DATA_USE=BOTH: per channel
// the FP16 hi_x then the FP16 inv_scale) and `zero_point_table` (NRDMA, ALU: FP16 zero points).
// sdp_quantize.hpp builds these from ONNX's scale and zero point.
struct SdpQuantize {
  std::uint16_t hi_x = 0x7bff;       // FP16 bits (per tensor, when bs_table is absent)
  std::uint16_t inv_scale = 0x3c00;  // FP16 bits (per tensor, when bs_table is absent)
  std::uint16_t zero_point = 0;      // FP16 bits (per tensor, when zero_point_table is absent)
  float lo = -32768.0f;              // the lower output bound (D_DP_EW_ALU_SRC_VALUE, FP32)
  std::optional<std::uint64_t> bs_table;
  std::optional<std::uint64_t> zero_point_table;
};

// An SDP layer between two memory surfaces.
struct SdpLayer : SdpStage {
  Precision precision = Precision::kInt8;
  // The output's precision when it differs from `precision` (the input's and the pipeline's):
  // kFp16 for an INT16 layer, kInt16 for an FP16 layer. `dst` is laid out at this precision.
  std::optional<Precision> out_precision;
  // QuantizeLinear (precision kFp16, out_precision kInt16; no bias, scale, clamp, ReLU or ew).
  std::optional<SdpQuantize> quantize;
  FeatureSurface src;  // read by SDP_RDMA (MRDMA)
  FeatureSurface dst;  // written by SDP's WDMA; same width, height and channels as src
  // A multi-batch convolution's SDP stage (flying only): batch b's output at dst.address +
  // b * dst_batch_stride.
  std::uint32_t batches = 1;
  std::uint32_t dst_batch_stride = 0;

  // The output's precision (out_precision, or `precision`).
  [[nodiscard]] Precision output_precision() const { return out_precision.value_or(precision); }
};

// The bytes of a per-channel operand table for `channels` = values.size() channels: INT16
// little-endian, channel c at offset 2c, zero-padded to whole C' surfaces (the SDP reads every
// lane of an atom).
[[nodiscard]] std::vector<std::uint8_t> sdp_per_channel_table(
    const std::vector<std::int16_t>& values, Precision precision, unsigned atom_bytes);

// The BRDMA table of SdpBiasScale for channels = alu.size() = mul.size(): per channel the INT16
// ALU operand then the INT16 multiplier (little-endian), zero-padded to whole C' surfaces.
[[nodiscard]] std::vector<std::uint8_t> sdp_bias_scale_table(const std::vector<std::int16_t>& alu,
                                                             const std::vector<std::int16_t>& mul,
                                                             Precision precision,
                                                             unsigned atom_bytes);

// FP16 per-channel tables (Precision::kFp16): each value rounded to FP16 (nearest even; beyond
// 65504 it becomes infinity, which the SDP's FP32 units take as FP32's largest value), little
// endian, channel c at offset 2c, zero-padded to whole C' surfaces (atom_bytes / 2 channels):
// the table of SdpStage::bias or ::scale.
[[nodiscard]] std::vector<std::uint8_t> sdp_fp16_table(const std::vector<float>& values,
                                                       unsigned atom_bytes);
// The BRDMA table of SdpStage::bias_scale at FP16: per channel the FP16 bias then the FP16
// multiplier (4 bytes a channel), zero-padded to whole C' surfaces.
[[nodiscard]] std::vector<std::uint8_t> sdp_fp16_bias_scale_table(const std::vector<float>& bias,
                                                                  const std::vector<float>& scale,
                                                                  unsigned atom_bytes);

// Where SDP's input comes from: SDP_RDMA reading `src` from memory, or CACC in flying mode (a
// convolution's SDP stage; `src` then only gives the cube, which equals `dst`'s).
enum class SdpInput : std::uint8_t { kMemory, kFlying };

// Checks the layer's bias and scale tables and output convertor; the messages start with `who`
// ("SDP:" for an SDP layer, "convolution: SDP" for a convolution's stage).
void check_sdp_stage(const SdpLayer& layer, unsigned atom_bytes, const char* who);

// Whether the layer uses SDP_RDMA: always for memory input; in flying mode only to read a bias or
// scale table.
[[nodiscard]] bool sdp_rdma_used(const SdpLayer& layer, SdpInput input);

// Writes the D_ registers of SDP_RDMA (when sdp_rdma_used) and then SDP for the layer: no
// S_POINTER, no D_OP_ENABLE, no checks (the callers order those with their other units).
void write_sdp_registers(Mmio& mmio, const SdpLayer& layer, SdpInput input, unsigned atom_bytes);

// Programs `layer` into register group `group` (0 or 1) of SDP and SDP_RDMA and enables it:
// S_POINTER first (SDP, then SDP_RDMA), the LUT when the layer has one (LE then LO through the
// access port, then the S_LUT_* registers), the SDP_RDMA then SDP D_ registers, then D_OP_ENABLE of
// SDP_RDMA before SDP's (the order of NVDLA's firmware). Returns the GLB S_INTR_STATUS bit that
// signals completion (SDP_DONE_STATUS<group>), for Mmio::wait_interrupt. Throws FirmwareError,
// before any register is written, for a layer it cannot program. `rdma_group`, when given, is
// SDP_RDMA's own group (its consumer pointer advances only with the layers that use it).
[[nodiscard]] unsigned program_sdp(Mmio& mmio, const SdpLayer& layer, unsigned group,
                                   unsigned atom_bytes, int rdma_group = -1);

// The same layer as models/ describes it, for computing golden output with
// models::ops::run_sdp_layer. Throws FirmwareError like program_sdp.
[[nodiscard]] models::ops::SdpConfig sdp_model_config(const SdpLayer& layer, unsigned atom_bytes);

}  // namespace octasim::firmware
