// OCTAV unit programming (octasim's unit at CSB 0x12000, sim/octav) and the layer it exists for:
// a convolution whose output is quantized with a clipping scalar the device computes.
//
// NVDLA's SDP cannot write INT32 to memory, and octasim's SDP models run INT16 -> INT16 (the
// INT16 -> INT8 offline conversion NVDLA documents is not modelled), so the layer is:
//   1. CONV (INT16: CDMA..CACC, SDP flying with the output convertor to INT16) writes the
//      tensor A that OCTAV reads;
//   2. OCTAV computes the per-tensor clipping scalar s of A for B bits and, with auto-program,
//      writes models::clip_to_convertor(s) into SDP's output convertor and
//      models::clip_to_clamp(s) into its BS/BN ALU operands, in SDP's next register group;
//   3. SDP (memory to memory, INT16) clamps A to [lo, hi] (BS ALU MIN, BN ALU MAX, register
//      operands) and scales it by the convertor: B-bit codes (|code| <= 2^(B-1)) held in INT16,
//      which stay in range without the output's saturation.
// Firmware waits for each unit's interrupt before enabling the next: OCTAV reads what CONV
// wrote, and SDP's registers are complete only once OCTAV has finished. The host never reads s.
// The same SDP stage programmed from a clipping scalar firmware computes (program_clip_sdp)
// gives max-scaling (s = max |A|) for comparison.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "firmware/dla/conv.hpp"
#include "firmware/dla/sdp.hpp"
#include "firmware/dla/surface.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/sdp.hpp"
#include "models/quant/clip_convertor.hpp"
#include "models/quant/octav.hpp"

namespace octasim::firmware {

enum class OctavDataType : std::uint8_t { kInt8 = 0, kInt16 = 1, kInt32 = 2, kFp16 = 3, kFp32 = 4 };
enum class OctavGranularity : std::uint8_t { kTensor = 0, kChannel = 1, kVector = 2 };
// The initial guess s_0, as models/ names it; the unit has no random guess (kRandom is refused).
using models::OctavInit;
enum class OctavAutoProgram : std::uint8_t { kNone = 0, kSdp = 1, kCdp = 2, kFakeQuant = 3 };

struct OctavLayer {
  OctavDataType type = OctavDataType::kInt16;
  bool is_unsigned = false;
  // Feature layout (src) unless flat_length > 0: then flat_length elements at src.address.
  FeatureSurface src;
  std::uint32_t flat_length = 0;
  OctavGranularity granularity = OctavGranularity::kTensor;
  std::uint32_t vector_size = 0;  // kVector
  int bits = 4;                   // 2..16
  int max_iterations = 20;        // 1..255
  float tolerance = 1e-4f;
  OctavInit init = OctavInit::kHalfMax;
  float initial_value = 0.0f;
  std::uint64_t result_address = 0;  // per channel/vector: FP32 per group
  // kFakeQuant (INT8/INT16 data): models::clip_to_fake_quant's operands into the next SDP group
  // (program_fake_quant_sdp's layer).
  OctavAutoProgram auto_program = OctavAutoProgram::kNone;
  bool auto_clamp = false;  // with kSdp: also SDP's BS/BN ALU operands (clip_to_clamp)
};

// Programs `layer` into OCTAV register group `group` and enables it. Returns the GLB
// S_INTR_STATUS bit of its completion (OCTAV_DONE_STATUS<group>, bit 22 + group). Throws
// FirmwareError, before any register is written, for a layer it cannot program.
[[nodiscard]] unsigned program_octav(Mmio& mmio, const OctavLayer& layer, unsigned group);

// The SDP fields that quantize with clipping scalar s to B bits: the convertor with the least
// error (models::clip_to_convertor) and the clamp bounds (models::clip_to_clamp).
struct SdpClip {
  SdpConvertor cvt;
  std::int16_t clamp_lo = 0, clamp_hi = 0;
};
[[nodiscard]] SdpClip sdp_clip_fields(double s, int bits, bool is_unsigned);
// Mean squared error against `reference` of B-bit codes dequantized with the convertor's
// multiplier (code / (scale * 2^-shift)): how well a clip served, for the demo and tests.
[[nodiscard]] double dequantized_mse(const std::vector<double>& codes, const SdpConvertor& cvt,
                                     const std::vector<double>& reference);

// SDP (memory to memory, INT16) clamping `src` to [lo, hi] and converting it to `dst`: the
// fields from `clip`, or, without it, left to OCTAV's auto-program (the convertor and the
// operands are then not written). SDP in register group `group`, SDP_RDMA in `rdma_group` (each
// unit's own next group: they differ after a convolution whose SDP read no operands).
// D_OP_ENABLE (SDP_RDMA, then SDP) is written only when `enable`; otherwise call enable_sdp
// later. Returns SDP_DONE_STATUS<group>'s bit.
struct ClipSdpLayer {
  Precision precision = Precision::kInt16;  // input = output (octasim's SDP converts neither)
  FeatureSurface src, dst;
  std::optional<SdpClip> clip;
  bool count_saturation = true;
};
[[nodiscard]] unsigned program_clip_sdp(Mmio& mmio, const ClipSdpLayer& layer, unsigned group,
                                        unsigned rdma_group, unsigned atom_bytes,
                                        bool enable = true);
// D_OP_ENABLE of SDP_RDMA, then SDP, in the groups their producer pointers select.
void enable_sdp(Mmio& mmio);
// The models/ description of that SDP layer once `clip` is known (for golden output).
[[nodiscard]] models::ops::SdpConfig clip_sdp_model_config(const ClipSdpLayer& layer,
                                                           const SdpClip& clip,
                                                           unsigned atom_bytes);

// OCTAV (`octav`, which must auto-program SDP) and then the SDP it programs (`sdp`, without
// clip): OCTAV in octav_group, SDP in sdp_group and SDP_RDMA in sdp_rdma_group (each unit's
// next group). Waits for OCTAV before enabling SDP, then for SDP. Returns their interrupt bits.
struct OctavSdpBits {
  unsigned octav = 0, sdp = 0;
};
OctavSdpBits program_octav_sdp(Mmio& mmio, const OctavLayer& octav, const ClipSdpLayer& sdp,
                               unsigned octav_group, unsigned sdp_group, unsigned sdp_rdma_group,
                               unsigned atom_bytes);

// Fake quantization (OCTAV AUTO_PROGRAM=FAKEQUANT, models::clip_to_fake_quant): an SDP layer
// (memory to memory, INT8 or INT16) whose output is its input in the same units, snapped to the
// B-bit grid of a clip s: A' = round(round(clamp(A, lo, s) * M/s) * s/M). A following layer's
// static programming stays valid, and the error is B-bit clipped quantization at the clip the
// device chose, per inference. The static part, written by program_fake_quant_sdp: BS ALU MIN
// and multiplier (shift 0) from registers, ReLU for unsigned data; BN ALU MAX and multiplier
// from registers; EW bypassed. The operands (hi, r1, lo and its shift, r2 and its shift, the
// output convertor) come from `params` or, without, from OCTAV (program_octav_fake_quant).
struct FakeQuantSdpLayer {
  Precision precision = Precision::kInt8;  // input = output
  FeatureSurface src, dst;
  int bits = 4;  // B, 2..16
  bool is_unsigned = false;
  std::optional<models::FakeQuantParams> params;  // host-programmed operands
  bool count_saturation = true;
};
// models::clip_to_fake_quant(s, bits, sign), FirmwareError for a bad s or B.
[[nodiscard]] models::FakeQuantParams fake_quant_fields(double s, int bits, bool is_unsigned);
// SDP in group `group`, SDP_RDMA in `rdma_group`; D_OP_ENABLE only when `enable` (else call
// enable_sdp later). Returns SDP_DONE_STATUS<group>'s bit. FirmwareError before any write.
[[nodiscard]] unsigned program_fake_quant_sdp(Mmio& mmio, const FakeQuantSdpLayer& layer,
                                              unsigned group, unsigned rdma_group,
                                              unsigned atom_bytes, bool enable = true);
// The models/ description of that SDP layer with the operands of clip s (or of `params`), for
// golden output: what OCTAV's auto-program at clip s makes the device compute.
[[nodiscard]] models::ops::SdpConfig fake_quant_sdp_model_config(const FakeQuantSdpLayer& layer,
                                                                 double s, unsigned atom_bytes);
[[nodiscard]] models::ops::SdpConfig fake_quant_sdp_model_config(
    const FakeQuantSdpLayer& layer, const models::FakeQuantParams& params, unsigned atom_bytes);
// OCTAV (`octav`: AUTO_PROGRAM=FAKEQUANT, its data type, B and signedness those of `sdp`) and
// then the SDP it programs (`sdp`, without params): OCTAV in octav_group, SDP in sdp_group,
// SDP_RDMA in sdp_rdma_group. Waits for OCTAV before enabling SDP, then for SDP.
OctavSdpBits program_octav_fake_quant(Mmio& mmio, const OctavLayer& octav,
                                      const FakeQuantSdpLayer& sdp, unsigned octav_group,
                                      unsigned sdp_group, unsigned sdp_rdma_group,
                                      unsigned atom_bytes);

// conv -> OCTAV -> SDP. conv must be INT16 (its SDP writes A = conv.dst); sdp_out receives the
// codes. Groups, as the units' consumer pointers stand: the convolution (CDMA..SDP, SDP_RDMA)
// in conv_group, OCTAV in octav_group; SDP then runs in the group after the convolution's
// (SDP's next group when OCTAV runs, which OCTAV's auto-program writes).
struct QuantizedConvLayer {
  ConvLayer conv;
  int bits = 4;
  int max_iterations = 20;
  float tolerance = 1e-4f;
  FeatureSurface sdp_out;
};
struct QuantizedConvBits {
  unsigned conv = 0, octav = 0, sdp = 0;  // their GLB S_INTR_STATUS bits
};
// Emits the whole sequence, waiting for each interrupt (Mmio::wait_interrupt).
QuantizedConvBits program_quantized_conv(Mmio& mmio, const QuantizedConvLayer& layer,
                                         const ConvHardware& hw, unsigned conv_group = 0,
                                         unsigned octav_group = 0);

}  // namespace octasim::firmware
