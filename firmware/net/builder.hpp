// The network compiler's lowering state (build_program, program.hpp): one Builder walks the
// planned layers and fills the NetProgram — surfaces, constants, each layer's descriptor.
// Private to firmware/net: program.cpp holds the walk and the CONV/CDP lowering,
// program_concat.cpp the channel layouts of Concat, program_sdp.cpp the SDP and PPU layers (ReLU,
// BatchNormalization, Add/Mul, Clip, LeakyRelu, Quantize/ DequantizeLinear, a layer followed by
// an element-wise constant, Softmax), program_activation.cpp the unary activations (Sigmoid, Tanh,
// HardSigmoid, HardSwish, SiLU), program_ew.cpp the element-wise Add at INT8/INT4 (fused into a
// convolution or on SDP alone) and the affine map, winograd.cpp the choice of Winograd mode,
// groups.cpp a grouped convolution group by group, program_resize.cpp nearest upsampling on BDMA
// and DepthToSpace on Rubik, program_pool.cpp pooling on PDP (with count_include_pad=0).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "firmware/net/fold.hpp"
#include "firmware/net/memory_layout.hpp"
#include "firmware/net/plan.hpp"
#include "firmware/net/program.hpp"
#include "firmware/net/quant.hpp"
#include "firmware/net/weights.hpp"
#include "firmware/ppu/commands.hpp"
#include "models/graph/graph.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::firmware::net::detail {

using models::graph::Graph;
using models::graph::GraphError;

class Builder {
 public:
  Builder(const Graph& g, const NetPlan& plan, const CalibrationTable& table,
          const QuantOptions& options, const HwConfig& hw)
      : g_(g), plan_(plan), table_(table), options_(options), hw_(hw) {
    prog_.config = hw.name;
    prog_.hw = conv_hardware(hw);
    prog_.options = options;
    prog_.table = table;
    prog_.memory_begin = next_ = kMemoryBase;
    integer_ = integer_network(g);
  }

  NetProgram run();

  // A direct convolution at `precision` of `kernels` kernels of `a`'s shape over `src` (no
  // weights, no dst). Also fold.cpp's cost probe.
  [[nodiscard]] static ConvLayer direct_conv(const ConvAttrs& a, Precision precision,
                                             const FeatureSurface& src, std::uint32_t kernels);

 private:
  unsigned atom() const { return prog_.hw.atom_bytes; }
  // An integer network (its input is integer: ConvInteger, MatMulInteger, pools of integers)
  // holds the values themselves as INT16 codes; otherwise FP16 values or quantized INT8 codes.
  bool fp16() const { return !integer_ && fp16_values(options_.precision); }
  // The element type of every surface.
  Precision elem() const {
    return integer_ ? Precision::kInt16 : fp16() ? Precision::kFp16 : Precision::kInt8;
  }

  std::uint64_t allocate(std::uint64_t bytes);

  std::uint64_t constant(std::string what, std::vector<std::uint8_t> bytes);

  // A graph output the passes folded into a constant (a Shape of a static shape, a Dropout's
  // mask): a surface of its value among the constants, read back as the output.
  NetTensor constant_output(const std::string& name);

  // The precision of the tensor layer `l` writes: a QuantizeLinear writes integer codes (INT16),
  // a DequantizeLinear FP16 values; otherwise the network's.
  Precision output_precision(const PlannedLayer& l) const;

  // The surface of `name` (allocated on first use) with its quantization.
  const NetTensor& tensor(const std::string& name) { return tensor(name, elem()); }
  const NetTensor& tensor(const std::string& name, Precision precision);

  void lower(const PlannedLayer& l);

  // Input channel folding (fold.cpp): the fold of the graph input, when its one reader is a
  // convolution that folding makes cheaper (or options_.fold forces it), and its surface.
  [[nodiscard]] std::optional<InputFold> plan_input_fold() const;
  FeatureSurface folded_input_surface(const InputFold& f, Precision precision);

  // Appends a lowered layer; a CONV layer whose input exceeds the CBUF as its bands (split.cpp).
  void push_layer(NetLayer out);

  // OCTAV on the CONV output's surface, then the fake-quantizing SDP into a new surface that
  // takes the tensor's place for its readers.
  void add_device_clip(const PlannedLayer& l);

  // One layer of a grouped convolution run group by group (groups.cpp): layer `index` of `count`
  // computes the ONNX groups [first_group, first_group + group_count) (one group, or a block of
  // groups smaller than an atom). It reads input surface channels [in_first, in_first +
  // in_channels) — its groups' channels, from channel `offset` of that window on, widened to
  // whole atoms — and writes its kernels' output channels [out_first, out_first + out_channels).
  struct ConvGroup {
    unsigned index = 0, count = 1;
    unsigned first_group = 0, group_count = 1;
    std::uint32_t in_first = 0, in_channels = 0, offset = 0;
    std::uint32_t out_first = 0, out_channels = 0;
  };
  // The groups of conv layer `l` as layers of their own, or none: `l` runs as one dense layer
  // (see groups.cpp for when).
  [[nodiscard]] std::vector<ConvGroup> conv_groups(const PlannedLayer& l, const NetTensor& in,
                                                   const NetTensor& dst) const;
  // The MAC array's atomic operations per output pixel and kernel position of a direct
  // convolution of `kernels` kernels over `channels` channels: mac_atomic_c channels of one kernel
  // group (mac_atomic_k INT8 kernels, half as many FP16 or INT16) each.
  [[nodiscard]] std::uint64_t atomic_operations(std::uint64_t channels,
                                                std::uint64_t kernels) const;
  // Whether conv layer `l` as one dense layer fits the CBUF, whole or in bands (split.hpp).
  [[nodiscard]] bool dense_runs(const PlannedLayer& l, const NetTensor& in,
                                const NetTensor& dst) const;
  // Lowers and pushes the layer of every group of `groups`; `out` has the layer's engine, input,
  // output.
  void lower_conv_groups(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                         const NetLayer& out, const std::vector<ConvGroup>& groups);
  // The weights of `group`'s layer from `weights(g)`, ONNX group g's own (weights.hpp `group`):
  // one group's, or a block's kernels block-diagonal over the block's channels (zeros between
  // its groups).
  static QuantizedWeights group_weights(
      const ConvGroup& group,
      const std::function<QuantizedWeights(std::optional<unsigned>)>& weights);

  // The CONV layer of `l` (`group`: of that group alone, `in` and `dst` its channels' windows);
  // fills out's MACs and weight scales.
  ConvLayer lower_conv(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                       NetLayer& out, const ConvGroup* group = nullptr);
  // The direct convolution `conv` of `l` in Winograd mode when the compiler uses it there
  // (winograd.cpp); nullopt: it stays direct.
  // `dense_groups`: a grouped convolution run as one dense layer (never in Winograd mode).
  std::optional<ConvLayer> winograd_layer(const PlannedLayer& l, const NetTensor& in,
                                          const ConvLayer& conv, bool dense_groups) const;

  // `conv` with the pooling `pool` that alone reads its output, on the fly (ConvPoolLayer), or
  // the two through memory where the PDP cannot take SDP's stream. Lowers both; returns true.
  bool lower_conv_pool(const PlannedLayer& conv, const PlannedLayer& pool);

  // SDP's flying stage: bias and per-channel multiplier in BS, ReLU, the clamp of narrow codes.
  SdpStage requantization(const QuantizedWeights& w, const TensorQuant& x, const TensorQuant& y,
                          bool relu, const std::string& who);

  // The PPU's softmax kernel: its descriptor and a push buffer (LAUNCH, INTERRUPT) among the
  // constants; runtime.cpp rings channel 0.
  PpuSoftmaxLayer lower_softmax(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                                const std::string& who);

  // A node on the PPU (program_ppu.cpp): its kernel image, descriptor and push buffer among the
  // constants. FP16 networks only.
  PpuNodeLayer lower_ppu_node(const PlannedLayer& l, const std::string& who);
  // A MatMul's or Gemm's K (the length of its sums), from the inferred shapes.
  [[nodiscard]] std::int64_t matmul_k(const models::graph::Node& n) const;

  // A PPU kernel's launch (program_ppu.cpp): descriptor `d` and a push buffer (LAUNCH,
  // INTERRUPT) among the constants, on the next of the PPU's channels (ppu_layers_).
  struct PpuLaunch {
    std::uint64_t push_buffer = 0;
    std::uint32_t push_buffer_bytes = 0;
    unsigned channel = 0;
  };
  PpuLaunch ppu_launch(const std::string& what, const ppu_format::Descriptor& d);

  // Integers: SDP adds the zero-point correction (BS, INT16 operands, multiplier 1), exactly.
  SdpStage integer_stage(const std::vector<double>& bias, const ConvAttrs& a,
                         const std::string& who);

  // FP16: SDP adds the bias (BS ALU, an FP16 table), then ReLU and the Clip bound.
  SdpStage fp16_stage(const std::vector<double>& bias, const ConvAttrs& a, const std::string& who);

  // A memory-to-memory SDP layer: ReLU (INT8 codes keep their step), the per-channel
  // multiply-add of BatchNormalization, an element-wise Add (at FP16 also Mul, PRelu, constants).
  SdpLayer lower_sdp(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                     const std::string& who);

  // A Clip (SDP's BS ALU MAX and BN ALU MIN, register operands) or LeakyRelu (BS's multiplier in
  // PReLU mode, a register operand); quantized on the input's codes, which the output keeps.
  SdpLayer lower_clip_leaky(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                            const std::string& who);

  // program_ew.cpp: the unit an element-wise operand enters (EW when the configuration has it and
  // no ReLU follows, EW having none after its ALU; else BN), a convolution's flying stage with a
  // fused residual Add, and INT8/INT4 memory-to-memory SDP layers (affine map, Add of a tensor),
  // each with the fixed point of ew_fixed_point.hpp.
  SdpEwUnit ew_unit(bool relu, const std::string& who) const;
  // The unit a per-channel operand read from a tensor's surface multiplies in: BN (NRDMA,
  // PER_KERNEL), whose ReLU follows it.
  SdpEwUnit channel_operand_unit(const std::string& who) const;
  SdpStage residual_stage(const QuantizedWeights& w, const PlannedLayer& l, const NetTensor& in,
                          const NetTensor& dst, const std::string& who);
  SdpLayer lower_sdp_quantized(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                               const std::string& who);

  // Gemm with a C that is not per output: the CONV writes a scratch surface, SDP adds beta * C
  // broadcast to the output (an FP16 constant surface).
  void lower_conv_matrix_bias(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                              NetLayer& out);

  // `first` (writing `scratch`), then an SDP layer from `scratch` into `dst` that adds or
  // multiplies `values` (C order of `like`) as an FP16 constant surface; frees `scratch`.
  void push_with_operand(NetLayer first, const FeatureSurface& scratch, const NetTensor& dst,
                         const std::vector<float>& values, const NetTensor& like, SdpEwOp op,
                         const std::string& suffix);

  // program_pool.cpp: average pooling over the real elements of each window. FP16: PDP sums into
  // a scratch surface, SDP multiplies each sum by 1 / (the window's real elements), an FP16
  // constant per output. INT8/INT16 (lower_pool_bands): the outputs cut into bands of rows and of
  // columns whose windows cover the same padding (the borders and the interior), each band pair a
  // PDP layer of its own whose reciprocals divide by its windows' real columns and rows: NVDLA's
  // INT8/INT16 average, round(round(sum * RECIP_W / 2^16) * RECIP_H / 2^16) with RECIP =
  // 2^16 / real (truncated), exactly as over a full window.
  void lower_pool_exclude_pad(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                              NetLayer& out);
  void lower_pool_bands(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                        const NetLayer& out);

  // QuantizeLinear: one SDP layer, FP16 in, INT16 codes out (firmware/dla/sdp_quantize.hpp):
  // q = int16(fp16(max(min(x, hi_x) * fp16(1/s) + fp16(zp), lo))), NVDLA rounding halves away
  // from zero where ONNX rounds them to even.
  SdpLayer lower_quantize(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                          const std::string& who);

  // DequantizeLinear: SDP converts q - zp to FP16 exactly (INT16 -> FP16, the zero point per
  // tensor in the output convertor or per channel in BS), then an FP16 SDP layer multiplies by
  // the scale: fp16(fp16(s) (q - zp)), one rounding.
  void lower_dequantize(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                        NetLayer& out);

  // program_activation.cpp: Sigmoid, Tanh, HardSigmoid, HardSwish, SiLU (activation.hpp): one
  // INT8 LUT layer (or HardSigmoid's affine map without a LUT), or the FP16 recipes; pushes the
  // layers.
  void lower_activation(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                        NetLayer& out);
  void lower_activation_fp16(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                             NetLayer& out);

  // An initializer broadcast to the shape of `like` as an FP16 surface among the constants.
  FeatureSurface constant_surface(const std::string& name, const NetTensor& like,
                                  const std::string& who);

  // `v` (C order of `like`) as an FP16 surface of like's cube among the constants.
  FeatureSurface values_surface(const std::vector<float>& v, const NetTensor& like,
                                const std::string& what);

  PdpLayer lower_pool(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst);

  // Nearest upsampling on BDMA (program_resize.cpp); refuses a configuration without BDMA.
  BdmaLayer lower_resize(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst);
  // DepthToSpace (DCR) as Rubik's contract (program_resize.cpp); refuses a configuration without
  // Rubik and output channels that do not fill whole atoms.
  RubikContract lower_depth_to_space(const PlannedLayer& l, const NetTensor& in,
                                     const NetTensor& dst);

  // FP16: the LUT of f(S) = (k + alpha/n S)^-beta at the values themselves (input scale 1);
  // CDP's convertors are bypassed.
  CdpLayer lower_lrn_fp16(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst);

  CdpLayer lower_lrn(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst);

  // Concat (program_concat.cpp). A tensor's channels on its surface: `physical` channels, logical
  // channel c at map[c] (empty: the identity).
  struct ChannelLayout {
    std::uint32_t physical = 0;
    std::vector<std::uint32_t> map;
  };
  // Every tensor's layout, before anything is lowered: a Concat places each input at the next
  // channel offset that is a multiple of the atom's channels (so its producer can write there),
  // its map says where each logical channel went; a channel-wise layer (PDP, SDP) keeps its
  // input's layout, a CONV writes a dense one. Refuses what cannot read a padded layout (CDP,
  // the PPU's softmax, an SDP operand laid out differently) naming the node.
  void plan_layouts();
  // Places every Concat whose inputs all have a layout; returns whether it placed one.
  bool place_concats();
  // The tensor whose buffer holds `name`: the outermost Concat containing it, or itself.
  [[nodiscard]] const std::string& storage(const std::string& name) const;
  // The surface of `name` with `physical` channels: inside its Concat's surface (allocated first)
  // at its channel offset, or a buffer of its own.
  FeatureSurface placed_surface(const std::string& name, std::uint32_t physical,
                                Precision precision);
  // A channel slice (plan.hpp PlannedSlice): its source's surface from the atom holding its
  // first channel on, with the source's quantization. Where that channel starts the atom (and
  // the source is dense) the slice is dense; otherwise its channels sit at an offset in the
  // window, a padded layout (channel_map) whose unused channels hold the source's neighbouring
  // channels — which readers ignore as they ignore a Concat's unused ones (zero weight rows,
  // channel-wise SDP/PDP). slice_layout: the window's first atom and the slice's layout.
  const NetTensor& slice_tensor(const std::string& name, const PlannedSlice& slice);
  [[nodiscard]] std::pair<std::uint32_t, ChannelLayout> slice_layout(
      const std::string& name, const PlannedSlice& slice) const;
  // `v` (one value per logical channel of `t`) spread over t's surface channels, `hole` between.
  [[nodiscard]] std::vector<double> spread(const std::vector<double>& v, const NetTensor& t,
                                           double hole) const;

  const Graph& g_;
  const NetPlan& plan_;
  const CalibrationTable& table_;
  const QuantOptions& options_;
  const HwConfig& hw_;
  NetProgram prog_;
  std::map<std::string, NetTensor> tensors_;
  std::uint64_t next_ = 0;  // the constants' bump pointer
  ActivationPool activations_;
  std::set<std::string> released_;
  std::map<std::string, ChannelLayout> layouts_;
  // A concatenated tensor's first channel in its Concat's surface (a multiple of the atom's).
  std::map<std::string, std::uint32_t> offsets_;
  bool integer_ = false;
  // PPU layers so far: each takes the next of the PPU's channels in turn, so independent PPU
  // layers overlap (schedule.hpp: a channel runs one push buffer at a time).
  unsigned ppu_layers_ = 0;
};

}  // namespace octasim::firmware::net::detail
