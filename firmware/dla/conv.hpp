// Convolution layer programming: an NVDLA direct convolution of a feature surface in memory
// (CDMA -> CBUF -> CSC -> CMAC_A/B -> CACC) whose INT32 output flows straight into SDP (flying
// mode: per-channel bias, per-channel multiplier, ReLU, output convertor) and from SDP to a
// feature surface in memory — one NVDLA hardware layer, programmed as NVDLA's firmware
// (kmd/firmware/conv.c and sdp.c) does: every sub-unit's S_POINTER, the D_ registers of CACC,
// CMAC_A/B, CSC and CDMA, then SDP's, then D_OP_ENABLE from the end of the pipeline back to its
// start (SDP_RDMA when SDP reads operands, SDP, CACC, CMAC_A, CMAC_B, CSC, CDMA last).
//
// The CBUF plan ("Full input & weight", or "Full input, partial weight" when the weights do not
// fit next to the input) follows the programming guide:
//   entries per slice  one input line in CBUF entries of cbuf_bank_width bytes: C'-atom surfaces
//                      fill whole entries; a trailing part of an entry packs several width
//                      positions (NVDLA's rule for entries holding more than one memory atom)
//   data banks         ceil(entries_per_slice * H / cbuf_bank_depth)
//   weight bytes       R * S * C * bytes per element * K, rounded up to 128 bytes
//   weight banks       all weights if they fit beside the data, else at least one kernel group
//                      (atomic-K kernels at INT8, atomic-K/2 at INT16/FP16) plus 128 bytes
//   atomics            output width * height - 1; release: every input slice (H)
// A layer whose input does not fit the CBUF is refused: software splits it in H across several
// hardware layers (firmware/net/split.hpp, with conv_cbuf_budget).
//
// Compressed weights (optional, on hardware with weight compression): weight_address holds the
// compressed data and ConvLayer::compressed the WMB and WGS surfaces, as
// conv_compressed_weight_image() lays them out (models/ops/conv_compress.hpp). CDMA and CSC get
// D_WEIGHT_FORMAT=COMPRESSED, D_WEIGHT_BYTES = the compressed data surface, D_WMB_BYTES; CDMA
// the WGS and WMB addresses. The last CBUF bank is left to the WMB (programming guide).
//
// Winograd layers (ConvLayer::winograd): conv_winograd.hpp. Output to PDP on the fly:
// conv_pool.hpp. Batches: ConvLayer::batches.
//
// FP16 (ConvLayer::precision = kFp16, on hardware with FP16 such as nv_full): IN_PRECISION and
// PROC_PRECISION FP16 (2) in CDMA, CSC, CMAC_A/B and CACC; CACC hands FP32 sums to SDP, whose
// stage runs the FP16 pipeline (PROC = OUT = FP16; SdpStage at FP16, firmware/dla/sdp.hpp).
// Input, weights and output hold FP16 bit patterns (2-byte elements: C' = atom / 2 channels, a
// kernel's bytes R*S*C*2, kernel groups of atomic-K/2 as at INT16); pad_value is the padding's
// FP16 bit pattern (0..0xffff); clip_truncate must be 0 (CACC truncates INT sums only). Direct
// convolution only: Winograd, compressed weights and multi-batch are refused at FP16.
// run_conv_model computes the golden with models::ops::run_conv_fp16 (exact products and sums,
// one FP32 rounding) and the SDP model.
//
// Not encoded: image input, data reuse across layers (weight reuse: ConvLayer::weight_reuse).
// NVDLA's firmware polls CDMA S_CBUF_FLUSH_STATUS before enabling; Mmio has no poll a trace can
// record (TraceWriter::read32 returns 0), and every octasim device reports the CBUF flushed from
// reset, so the poll is not issued.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "firmware/dla/conv_hardware.hpp"
#include "firmware/dla/sdp.hpp"
#include "firmware/dla/surface.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/conv.hpp"
#include "models/ops/conv_compress.hpp"
#include "models/ops/sdp.hpp"

namespace octasim::firmware {

// Where a layer's compressed weights are: the WMB and WGS surfaces (32-byte aligned) and the size
// of the compressed data surface at ConvLayer::weight_address (a multiple of 128).
struct ConvCompressedWeights {
  std::uint64_t wmb_address = 0, wgs_address = 0;
  std::uint32_t data_bytes = 0;
};

struct ConvLayer {
  Precision precision = Precision::kInt8;  // input, weights, SDP processing and output
  FeatureSurface src;                      // the input cube W x H x C, read by CDMA
  // Weights as conv_weight_image() lays them out (NVDLA's direct-convolution format), 32-byte
  // aligned.
  std::uint64_t weight_address = 0;
  Ram weight_ram = Ram::kMc;  // D_WEIGHT_RAM_TYPE: the weights' memory (and the WMB's and WGS's)
  std::optional<ConvCompressedWeights> compressed;    // weights stored compressed
  std::uint32_t kernels = 1;                          // K: output channels, 1..8192
  std::uint32_t kernel_width = 1, kernel_height = 1;  // S x R, 1..32
  std::uint32_t stride_x = 1, stride_y = 1;           // 1..8
  std::uint32_t dilation_x = 1, dilation_y = 1;       // 1..32
  // Padding of the input on each side (left/top 0..31, right/bottom 0..63), each smaller than
  // the dilated kernel extent; right/bottom padding no output uses is not programmed.
  std::uint32_t pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;
  // The value padded positions take, in the precision's range (INT8: -128..127, INT16:
  // -32768..32767); FP16: the FP16 bit pattern, 0..0xffff.
  std::int32_t pad_value = 0;
  unsigned clip_truncate = 0;  // CACC CLIP_TRUNCATE: rounding right shift of the sums, 0..31
  SdpStage sdp;                // the SDP stage fed by CACC in flying mode
  FeatureSurface dst;          // written by SDP: conv_output_cube() x kernels
  // Multi-batch mode (configurations with BATCH; 1..32): batch b reads its input at
  // src.address + b * src_batch_stride and writes its output at dst.address +
  // b * dst_batch_stride; the batches share the weights (fetched once). The output's address and
  // strides must then be 64-byte aligned (NVDLA's programming guide).
  std::uint32_t batches = 1;
  std::uint32_t src_batch_stride = 0, dst_batch_stride = 0;
  // Winograd mode (firmware/dla/conv_winograd.hpp): 3x3 kernels, stride 1, one batch;
  // weight_address holds conv_winograd_weight_image(); clip_truncate keeps its
  // direct-convolution meaning.
  bool winograd = false;
  unsigned pra_truncate = 0;  // CSC PRA_TRUNCATE, 0..2 (choose_pra_truncate)
  // Consecutive layers sharing the weights (Split H, firmware/net/split.hpp), all kernels in
  // CBUF: skip_weight_release keeps them there when the layer ends (CDMA/CSC SKIP_WEIGHT_RLS),
  // weight_reuse takes them from the previous layer, which kept them, instead of fetching
  // (WEIGHT_REUSE). The weights' place in CBUF must not move: data_banks, when non-zero, is
  // the DATA_BANK to program (at least what the input needs), the same for every such layer.
  bool skip_weight_release = false, weight_reuse = false;
  unsigned data_banks = 0;
};

struct ConvCubeSize {
  std::uint32_t width = 0, height = 0, channels = 0;
};

// The output cube of the layer: (in + pads - dilated kernel) / stride + 1 in each direction
// (0 when the kernel does not fit), K channels.
[[nodiscard]] ConvCubeSize conv_output_cube(const ConvLayer& layer);

// The CBUF plan and derived register values for a layer (what program_conv writes).
struct ConvPlan {
  std::uint32_t out_width = 0, out_height = 0;
  std::uint32_t pad_right = 0, pad_bottom = 0;  // as programmed (only what outputs use)
  std::uint32_t entries_per_slice = 0;
  unsigned data_banks = 0, weight_banks = 0;
  std::uint32_t bytes_per_kernel = 0;
  std::uint32_t weight_bytes = 0;  // 128-byte aligned (compressed: the compressed data)
  std::uint32_t wmb_bytes = 0;     // compressed: the WMB surface (128-byte aligned), else 0
  std::uint32_t atomics = 0;       // output positions (the register holds this - 1)
  std::uint32_t release = 0;       // input slices released (the register holds this - 1)
  bool full_weights = true;        // all kernels stay in CBUF
};

// Checks the layer against the hardware and computes its plan; throws FirmwareError naming the
// first problem.
[[nodiscard]] ConvPlan plan_conv(const ConvLayer& layer, const ConvHardware& hw);

// plan_conv's checks of the layer against the hardware and NVDLA's register ranges, all but the
// CBUF's (FirmwareError); returns the output cube.
ConvCubeSize check_conv_layer(const ConvLayer& layer, const ConvHardware& hw);

// The CBUF arithmetic of plan_conv for software that splits a layer whose input does not fit
// (Split H, firmware/net/split.hpp): one input line's entries and the banks the data and the
// weights may take. The layer's weights are checked as plan_conv checks them (FirmwareError).
struct ConvCbufBudget {
  std::uint32_t entries_per_slice = 0;  // CBUF entries of one input line (every C' surface)
  unsigned bank_entries = 0;            // entries of one bank (cbuf_bank_depth)
  unsigned banks = 0;             // banks for data and weights (D_BANK: 32 at most; less the WMB's)
  unsigned min_weight_banks = 0;  // one kernel group plus 128 bytes
  unsigned all_weight_banks = 0;  // every kernel (at least min_weight_banks)
  std::uint64_t weight_bytes = 0;  // what CDMA fetches (128-byte aligned; compressed: the data)
  // ceil(entries_per_slice * lines / bank_entries): the data banks of `lines` input lines.
  [[nodiscard]] std::uint64_t data_banks(std::uint64_t lines) const {
    return (std::uint64_t{entries_per_slice} * lines + bank_entries - 1) / bank_entries;
  }
};
[[nodiscard]] ConvCbufBudget conv_cbuf_budget(const ConvLayer& layer, const ConvHardware& hw);

// The layer's flying SDP stage as an SdpLayer (for check_sdp_stage, write_sdp_registers and
// sdp_model_config): SDP's cube is the output cube; src is a stand-in equal to dst (flying SDP
// reads no input surface).
[[nodiscard]] SdpLayer conv_sdp_layer(const ConvLayer& layer);

// Programs `layer` into register group `group` (0 or 1) of CDMA, CSC, CMAC_A, CMAC_B, CACC,
// SDP (and SDP_RDMA when SDP reads a bias or scale table) and enables it. Returns the GLB
// S_INTR_STATUS bit that signals completion (SDP_DONE_STATUS<group>), for Mmio::wait_interrupt.
// Throws FirmwareError, before any register is written, for a layer it cannot program.
// `sdp_group` (0 or 1), when given, is SDP's and SDP_RDMA's group where it differs from the
// convolution units' (after memory-to-memory SDP layers); it then names the interrupt.
// `rdma_group`, when given, is SDP_RDMA's own group: its consumer pointer advances only with the
// layers that use it, so after an SDP layer without operands it differs from SDP's.
[[nodiscard]] unsigned program_conv(Mmio& mmio, const ConvLayer& layer, unsigned group,
                                    const ConvHardware& hw, int sdp_group = -1,
                                    int rdma_group = -1);

// The same layer as models/ describes it.
struct ConvModel {
  models::ops::ConvFeatureSurface input;
  models::ops::ConvWeightLayout weight_layout;
  models::ops::ConvParams params;
  std::uint32_t out_channels_padded = 0;  // K rounded up to whole output atoms
  models::ops::SdpConfig sdp;             // flying
};
[[nodiscard]] ConvModel conv_model(const ConvLayer& layer, const ConvHardware& hw);

struct ConvGolden {
  std::uint32_t cacc_saturation = 0;  // CACC D_OUT_SATURATION
  std::uint32_t sdp_saturation = 0;   // SDP D_PERF_OUT_SATURATION
};
// Golden output of the layer: reads input and weights from `mem` (as laid out for the device;
// compressed weights through models::ops::read_compressed_weights), runs models::ops::run_conv_int
// (FP16: run_conv_fp16, without NaN flush) and models::ops::run_sdp_layer on its INT32 (FP16:
// FP32) output, and writes the output surface into `mem`. At FP16 cacc_saturation is 0.
// Throws FirmwareError like plan_conv.
ConvGolden run_conv_model(const ConvLayer& layer, const ConvHardware& hw, models::ops::Memory& mem);

// The bytes of `weights` in NVDLA's direct-convolution weight format for this hardware (groups
// of atomic-K kernels at INT8, atomic-K/2 at INT16 and FP16; atomic-C channel blocks), zero-padded
// to a multiple of 128 bytes: what the layer's weight_address must hold. At FP16 the values of
// `weights` are FP16 bit patterns (static_cast<std::int16_t>(models::fp16_from_float(v))).
[[nodiscard]] std::vector<std::uint8_t> conv_weight_image(const models::ops::ConvWeights& weights,
                                                          Precision precision,
                                                          const ConvHardware& hw);
// `weights` compressed (models/ops/conv_compress.hpp): the compressed data for weight_address
// (its size is ConvCompressedWeights::data_bytes), the WMB and the WGS surfaces, each padded to a
// multiple of 128 bytes.
[[nodiscard]] models::ops::CompressedWeights conv_compressed_weight_image(
    const models::ops::ConvWeights& weights, Precision precision, const ConvHardware& hw);
// `s` as models/ describes a feature surface (for read_feature_cube / write_feature_cube).
[[nodiscard]] models::ops::ConvFeatureSurface conv_model_surface(const FeatureSurface& s,
                                                                 unsigned atom_bytes);
// The bytes of `cube` (FP16: bit patterns) as the feature surface `s` (from s.address to the end of
// its last atom; gaps between lines/surfaces and padding lanes are 0).
[[nodiscard]] std::vector<std::uint8_t> conv_feature_image(const models::ops::ConvCube& cube,
                                                           const FeatureSurface& s,
                                                           Precision precision,
                                                           unsigned atom_bytes);

}  // namespace octasim::firmware
