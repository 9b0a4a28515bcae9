// A compiled network: the hardware layers (firmware/dla descriptors) with their surfaces in
// device memory, the constants they read (weights, SDP operand tables), and how the network's
// input and outputs are quantized — what `octasim net` runs and `octasim compile` records.
//
// The arithmetic of each layer type (quant.hpp gives the code formats):
//   CONV  acc = sum(q_x * q_w) over the kernel (INT32 in CACC, no truncation); SDP (flying):
//         BS  ((acc + (bias[k] << a)) * m[k]) >> t  — bias[k] = b[k] / (s_x s_w[k]) / 2^a,
//             m[k] = s_x s_w[k] / s_y * 2^t (INT16, one shift t for all channels, the largest
//             that keeps every m[k] in INT16), ReLU when fused;
//         BN  min(., M) when the output has fewer code bits than INT8 (4-bit codes);
//         the output convertor is the identity (INT8 saturation).
//         Weights per output channel: s_w[k] = max|w_k| / Mw (Mw 127 at 8 bits, 7 at 4) with
//         codes round(w / s_w), or the QAT-init patent's MMSE scale (models/quant/qat_init.hpp).
//         Gemm/MatMul: the kernel covers the input cube (W x H x C of the flattened tensor, in
//         ONNX's C-order) and has one output pixel.
//   PDP   pooling of the codes; the output keeps the input's quantization (average pooling:
//         PDP's rounded average of codes, padding 0).
//   CDP   LRN through the LUT (firmware/dla/cdp.hpp make_lrn_lut at the input's step), the
//         output convertor rescales to the output's step: scale round(s_x/s_y * 2^u), shift F+u.
//   CONV + Add (a residual Add fused, plan_fuse.cpp): SDP brings acc to an intermediate step
//         s_i = s_e / 2^a (BS, per-channel INT16 multipliers, one shift), adds the other addend's
//         codes e (INT8, read per element) exactly as e << a in BN (then BN's INT16 register
//         multiplier to s_y and the ReLU) or through ERDMA's operand convertor (scale 2^a) in EW
//         when no ReLU follows and the configuration has EW (then the output convertor to s_y);
//         8-bit codes; ew_fixed_point.hpp derives the shifts and the error bound.
//   SDP   a lone ReLU: max(code, 0), the input's step. An Add of two tensors: the same pipeline
//         with the input's codes as acc. BatchNormalization / a per-channel Mul/Add: BS
//         multiplies the codes exactly, BN adds the bias and scales per channel (bn_bias_scale);
//         8-bit codes. A Mul by a per-channel tensor s (squeeze-excitation): BN multiplies q_x by
//         s's codes, read per channel from s's 1x1xC surface (NRDMA PER_KERNEL, one byte), the
//         output convertor rescales: ((q_x q_s) * m) >> t, m = round(s_x s_s / s_y 2^t) in INT16
//         (ew_fixed_point.hpp channel_mul_fixed_point); 8-bit codes.
//   PPU   Softmax (FP16, configurations with a PPU): models/ops/softmax.hpp's kernel. A node the
//         DLA cannot run (--fallback ppu; FP16): models/ops/ppu_node.hpp's kNode kernel.
//   BDMA  nearest upsampling (Resize, Upsample by f_h x f_w): strided copies of the input's atoms;
//         the output keeps the input's codes and quantization (exact at every precision).
// Concat is no layer: its inputs' producers write into its surface, each at a channel offset that
// is a multiple of the atom's channels; between blocks whose counts are not, the surface has
// unused channels (NetTensor::channel_map, program_concat.cpp). A channel slice (Split, Slice) is
// no layer either: a window of its source's surface from the atom holding its first channel on,
// padded (a channel map) where that channel does not start the atom; the source's codes.
// Calibration octav-device (dynamic quantization): every CONV output is written as 8-bit codes at
// its static max-calibrated step, then two layers follow it —
//   OCTAV the MSE-optimal clip s of that tensor, computed in the device for this inference, with
//         AUTO_PROGRAM=FAKEQUANT writing SDP's operands (models::clip_to_fake_quant);
//   SDP   (memory to memory) snaps the codes to the B-bit grid of s in the same step, so the
//         consumers' static programming stays valid: A' = round(round(clamp(A) M/s) s/M).
// B is the precision's code bits for unsigned (ReLU) outputs, 8 for signed ones.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "firmware/dla/bdma.hpp"
#include "firmware/dla/cdp.hpp"
#include "firmware/dla/conv.hpp"
#include "firmware/dla/conv_pool.hpp"
#include "firmware/dla/octav.hpp"
#include "firmware/dla/pdp.hpp"
#include "firmware/dla/rubik.hpp"
#include "firmware/dla/sdp.hpp"
#include "firmware/net/fold.hpp"
#include "firmware/net/memory_layout.hpp"
#include "firmware/net/plan.hpp"
#include "firmware/net/quant.hpp"
#include "models/graph/graph.hpp"
#include "models/ops/ppu_node.hpp"

namespace octasim {
struct HwConfig;
}

namespace octasim::firmware::net {

// A tensor the device holds: its surface and quantization, and its ONNX shape (N = 1).
// At FP16 the surface holds the values as FP16 (quant is unused); otherwise integer codes.
struct NetTensor {
  std::string name;
  FeatureSurface surface;
  Precision precision = Precision::kInt8;
  TensorQuant quant;
  std::vector<std::int64_t> shape;
  // The surface holds an M x K tensor as rows (plan.hpp: W = 1, H = M, C = K), so element
  // (m, k) of ONNX's C order is the cube's (0, m, k); otherwise C order is the cube's (c, y, x).
  bool rows = false;
  // A padded channel layout (a Concat of blocks whose channel counts are not multiples of the
  // atom's, a channel slice not starting on an atom, or a channel-wise layer of one): logical
  // channel c is the surface's channel channel_map[c]; the channels no entry names hold zeros (a
  // Concat's) or the sliced tensor's other channels (a slice's), which readers ignore. Empty: the
  // identity (surface.channels logical channels).
  std::vector<std::uint32_t> channel_map;
  // The graph input of a folded first convolution (fold.hpp): the surface holds the folded cube,
  // which the host lays out from the image (runtime.cpp input_image); shape stays ONNX's.
  std::optional<InputFold> fold;
  // A program of several images (NetProgram::images, batch.hpp): image b's surface is at
  // surface.address + b * batch_stride (the input and the outputs).
  std::uint64_t batch_stride = 0;

  [[nodiscard]] std::uint32_t channels() const {
    return channel_map.empty() ? surface.channels : static_cast<std::uint32_t>(channel_map.size());
  }
};

// The index into a models::ops::ConvCube (the surface's cube) of element `i` of `t` in ONNX's C
// order.
[[nodiscard]] inline std::size_t tensor_cube_index(const NetTensor& t,
                                                   const models::ops::ConvCube& cube,
                                                   std::size_t i) {
  const auto physical = [&](std::size_t c) {
    return t.channel_map.empty() ? static_cast<std::uint32_t>(c) : t.channel_map[c];
  };
  if (!t.rows) {
    if (t.channel_map.empty()) return i;
    const std::size_t plane = std::size_t{cube.width} * cube.height;
    return std::size_t{physical(i / plane)} * plane + i % plane;
  }
  const std::size_t k = i % t.channels(), m = i / t.channels();
  return cube.index(0, static_cast<std::uint32_t>(m), physical(k));
}

// The number of elements of `t` in ONNX's C order (its logical channels).
[[nodiscard]] inline std::size_t tensor_elements(const NetTensor& t) {
  return std::size_t{t.surface.width} * t.surface.height * t.channels();
}

// Softmax on the PPU: the kSoftmax kernel (firmware/ppu/commands.hpp) over one axis of an FP16
// surface, launched from a push buffer among the constants (LAUNCH, INTERRUPT) on `channel`.
struct PpuSoftmaxLayer {
  FeatureSurface src, dst;
  CubeAxis axis = CubeAxis::kC;
  std::uint64_t push_buffer = 0;
  std::uint32_t push_buffer_bytes = 0;
  unsigned channel = 0;
};

// A node on the PPU (--fallback ppu): the kNode kernel (firmware/ppu/commands.hpp) runs the
// image's node (models/ops/ppu_node.hpp: the registry's FP32 reference kernel on the values of
// its input surfaces — FP16, or INT8 codes times their step — and constants, its output stored
// the same way: FP16, or INT8 codes of the output's calibrated clip; in an integer network INT16
// surfaces of exact integers of the tensors' ONNX types), launched from a push buffer
// among the constants (LAUNCH, INTERRUPT) on `channel`. The image names the surfaces' addresses:
// they stay in DRAM (placement.hpp), and the layer is not batched.
struct PpuNodeLayer {
  std::vector<FeatureSurface> srcs;  // the device tensors it reads, in the node's input order
  FeatureSurface dst;
  Precision precision = Precision::kFp16;  // of every surface: FP16, INT8 codes or INT16 integers
  models::ops::NodeImage image;
  std::uint64_t image_address = 0;
  std::uint32_t image_bytes = 0;
  std::uint64_t push_buffer = 0;
  std::uint32_t push_buffer_bytes = 0;
  unsigned channel = 0;
};

// Nearest upsampling on BDMA (program_resize.cpp): the copies, launched as one group, that
// write each atom of `src` scale_w x scale_h times into `dst`. The elements move unchanged (codes
// keep their quantization; FP16 values are exact).
// The copies come from the surfaces when the layer is programmed (bdma_copies), so placement and
// batching, which move surfaces, move them too.
struct BdmaLayer {
  FeatureSurface src, dst;
  Precision precision = Precision::kInt8;
  unsigned scale_h = 1, scale_w = 1;
  unsigned atom_bytes = 32;  // the configuration's (a pixel of a C' surface)
};

// The BDMA copies of `l` (at most kBdmaSlots: one launch): for each (dy, dx) in
// scale_h x scale_w, lines of one atom from src's consecutive atoms to every scale_w-th atom of
// dst, surfaces stepping one src line and scale_h dst lines — all C' surfaces in one copy where
// both surfaces are packed (surface stride = height x line stride), else one copy per C' surface.
// Throws FirmwareError for what BDMA cannot copy (an atom that is not a multiple of 32 bytes,
// more copies than slots).
[[nodiscard]] std::vector<BdmaTransfer> bdma_copies(const BdmaLayer& l);

// ConvPoolLayer: a convolution whose SDP output streams into PDP (flying mode): the pooling
// right after a convolution that nothing else reads, fused by the compiler. RubikContract:
// DepthToSpace (DCR) as Rubik's contract mode.
using HwLayer =
    std::variant<ConvLayer, PdpLayer, CdpLayer, SdpLayer, OctavLayer, FakeQuantSdpLayer,
                 PpuSoftmaxLayer, ConvPoolLayer, BdmaLayer, RubikContract, PpuNodeLayer>;

struct NetLayer {
  std::string engine;  // CONV, PDP, CDP, SDP, OCTAV
  std::string nodes;   // the ONNX nodes it computes: "Conv 'conv1' + Relu 'relu1'"
  std::string input, output;
  HwLayer hw;
  std::uint64_t macs = 0;  // multiply-accumulates the device performs per inference (CONV)
  // A node on the PPU because the DLA refuses it (--fallback ppu): the refusal; otherwise empty.
  std::string fallback;
  // ... of which the network's own (ONNX's): fewer where a grouped convolution runs dense, or a
  // group's layer reads more channels than its group's.
  std::uint64_t network_macs = 0;
  // Weight quantization of a CONV layer: the smallest and largest per-channel scale.
  double weight_scale_min = 0.0, weight_scale_max = 0.0;
  // --winograd auto: what Winograd mode was measured to cost for this convolution (winograd.hpp).
  std::optional<WinogradMeasure> winograd_measure;
  // Split H (split.hpp): a CONV layer that is band `band` of the `bands` consecutive layers
  // computing one convolution (same nodes; their MACs add up to its), each writing a band of
  // rows of the one output surface `whole_output` (bands > 1).
  unsigned band = 0, bands = 1;
  FeatureSurface whole_output;
  // A grouped convolution run group by group (builder.hpp Builder::conv_groups): a CONV layer
  // computing group `group` of `groups` (groups > 1; its bands, if split, say so too). It writes
  // the group's output channels, a channel range of the output surface, and reads the channels
  // of the input surface the group's do (an atom-aligned window around them).
  unsigned group = 0, groups = 1;
};

// The convolution of a CONV layer (ConvLayer, or the convolution of a ConvPoolLayer); nullptr
// for the other engines.
[[nodiscard]] const ConvLayer* layer_conv(const NetLayer& l);

// Bytes the program places in memory before it runs.
struct ConstantBlob {
  std::uint64_t address = 0;
  std::string what;  // "conv1 weights"
  std::vector<std::uint8_t> bytes;
  Ram ram = Ram::kMc;  // the CV-SRAM when placement moved it there (placement.hpp)
};

struct NetProgram {
  std::string config;  // the hardware configuration's name
  ConvHardware hw;
  QuantOptions options;
  NetTensor input;
  std::vector<NetTensor> outputs;  // in the graph's output order
  std::vector<NetLayer> layers;
  std::vector<ConstantBlob> constants;
  CalibrationTable table;  // every quantized tensor's clip
  // DRAM the program uses: constants in [memory_begin, constants_end), feature surfaces from
  // 0xC000_0000 to memory_end (a dead tensor's buffer is reused by later layers).
  std::uint64_t memory_begin = 0, constants_end = 0, memory_end = 0;
  MemoryPlacement placement;  // what place_in_cvsram (placement.hpp) moved to the CV-SRAM
  // The images one run of the program computes (QuantOptions::fc_batch, batch.hpp); the layers'
  // MACs are those of all of them.
  unsigned images = 1;

  [[nodiscard]] std::uint64_t macs() const;
  [[nodiscard]] std::uint64_t network_macs() const;
};

// Which engines a program's layers run on, and the nodes that fell back to the PPU
// (--fallback ppu): `octasim net`'s fallback summary and its report's network.fallback.
struct FallbackSummary {
  std::size_t dla_layers = 0;              // layers on the DLA's units (CONV, SDP, PDP, ...)
  std::size_t ppu_layers = 0;              // on the PPU: Softmax and fallback nodes
  std::map<std::string, std::size_t> ops;  // fallback nodes by operator
  std::vector<std::pair<std::string, std::string>> nodes;  // fallback node label, why
};
[[nodiscard]] FallbackSummary fallback_summary(const NetProgram& p);

// The PPU channel a layer runs on (Softmax and node layers), or nothing: a DLA layer.
[[nodiscard]] inline std::optional<unsigned> ppu_channel(const HwLayer& hw) {
  if (const auto* sm = std::get_if<PpuSoftmaxLayer>(&hw)) return sm->channel;
  if (const auto* node = std::get_if<PpuNodeLayer>(&hw)) return node->channel;
  return std::nullopt;
}

// Lowers the planned graph: quantizes the weights, lays out every surface and table, and fills
// each layer's registers' worth of fields from `table`. Throws models::graph::GraphError naming
// the node when a layer cannot be programmed on `hw` (a kernel larger than the CBUF, a pool
// kernel above 8, ...).
// Whether `g` is an integer network: its (data) input is integer (ConvInteger, MatMulInteger,
// DequantizeLinear, integer pools). Such a network holds its values as INT16 codes, exactly, and
// is not calibrated.
[[nodiscard]] bool integer_network(const models::graph::Graph& g);

// build_program's refusal of one planned layer: the GraphError, with the graph nodes of the DLA
// layer that refused (empty for a PPU layer), which the compiler may re-plan on the PPU.
class LayerRefusal : public models::graph::GraphError {
 public:
  LayerRefusal(const std::string& what, std::vector<std::size_t> layer_nodes)
      : GraphError(what), nodes(std::move(layer_nodes)) {}
  std::vector<std::size_t> nodes;
};

[[nodiscard]] NetProgram build_program(const models::graph::Graph& g, const NetPlan& plan,
                                       const CalibrationTable& table, const QuantOptions& options,
                                       const HwConfig& hw);

}  // namespace octasim::firmware::net
