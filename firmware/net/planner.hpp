// The network planner's state (plan_network, plan.hpp): one Planner walks the graph's nodes and
// cuts them into hardware layers. Private to firmware/net: plan.cpp holds the walk and the
// CONV/PDP/CDP layers and views, plan_fuse.cpp the residual Add fused into a CONV, plan_sdp.cpp
// the SDP and PPU layers (ReLU, BatchNormalization, Add/Mul, Clip, LeakyRelu,
// QuantizeLinear/DequantizeLinear, Softmax), plan_activation.cpp
// Sigmoid/Tanh/HardSigmoid/HardSwish/SiLU, plan_concat.cpp Concat, plan_slice.cpp Split and Slice,
// plan_resize.cpp Resize/Upsample (BDMA) and DepthToSpace (Rubik).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "firmware/net/plan.hpp"
#include "models/graph/graph.hpp"
#include "models/graph/op_registry.hpp"

namespace octasim::firmware::net::detail {

using models::graph::Graph;
using models::graph::GraphError;
using models::graph::Node;

class Planner {
 public:
  Planner(const Graph& g, std::string config, bool has_ppu, Fallback fallback,
          std::map<std::size_t, std::string> refused = {})
      : g_(g),
        config_(std::move(config)),
        has_ppu_(has_ppu),
        fallback_(fallback),
        refused_(std::move(refused)) {}

  NetPlan run();

 private:
  // The only node reading `tensor`, when exactly one does and it is not a graph output.
  const Node* sole_consumer(const std::string& tensor, std::size_t* index) const;

  const models::graph::Tensor& constant(const Node& n, std::size_t k, const char* what) const;

  // The device cube of a tensor (plan.hpp): 1 x C x H x W, 1 x C x L, C x H x W, M x K, K; with
  // `ppu`, also the shapes only PPU layers take (scalars, N > 1, rank 5 and more), which DLA
  // layers then refuse to read (ppu_only_).
  void set_cube(const std::string& tensor, const Node* n, bool ppu = false);

  // The spatial size (H, W) of a layer's input as ONNX sees it (1-D: H = 1).
  std::pair<std::int64_t, std::int64_t> spatial_size(const Node& n) const;

  // The data input of a layer: must be a tensor the device holds (not a view, unless `view_ok`).
  std::string data_input(const Node& n, bool view_ok);

  // Fuses a Relu or (`take_clip`) a Clip(0, c) reading `layer.output` into the layer.
  void fuse_activation(PlannedLayer& layer, bool take_clip = true);
  // A Clip's bounds (attributes before opset 11, constant inputs after); none: unbounded.
  [[nodiscard]] std::pair<std::optional<double>, std::optional<double>> clip_bounds(
      const Node& n) const;

  void plan_conv(std::size_t i);

  // Fuses an Add of the CONV's output and a tensor computed before (and a Relu after it) into
  // the CONV (plan_fuse.cpp).
  void fuse_residual(PlannedLayer& layer);

  // ConvInteger / MatMulInteger: the zero points (inputs 2 and 3) must be constants; the weight
  // zero point one value or one per output.
  void integer_operands(const Node& n, ConvAttrs& a);

  // Gemm (transA 0, constant B and C) or MatMul with a constant B and an optional Add of a
  // constant bias after it.
  void plan_fc(std::size_t i);

  void plan_pool(std::size_t i);

  void plan_lrn(std::size_t i);

  // Relu, BatchNormalization (constant statistics), Add or Mul: one SDP layer.
  void plan_sdp(std::size_t i);

  void plan_batch_norm(const Node& n, PlannedLayer& l);

  // Add or Mul of the data input and a second operand: a per-channel constant (BS), or an
  // element-wise one (EW: a tensor on the device, or a constant broadcast to the output).
  void plan_binary(const Node& n, PlannedLayer& l);

  // Whether device tensor `s` is a per-channel operand for an output of shape `out`
  // (N x C x H x W): s is N x C x 1 x 1 or C x 1 x 1 and the device holds it as a 1x1xC cube
  // (otherwise, with that shape, refused naming `n`).
  bool channel_operand(const Node& n, const std::string& s,
                       const std::vector<std::int64_t>& out) const;

  // QuantizeLinear / DequantizeLinear: scale and zero point constants, per tensor or per
  // channel (ONNX's axis must be the device's channel axis).
  void plan_convert(const Node& n, PlannedLayer& l);

  // Whether constant `t` broadcast to `out` varies along the channel axis only.
  bool per_channel(const models::graph::Tensor& t, const std::vector<std::int64_t>& out) const;

  // Softmax over one ONNX axis: the device cube's C, H or W (plan.hpp's tensor mapping). Before
  // opset 13 ONNX flattens from the axis on, which is one axis only when it is the last non-1.
  void plan_softmax(std::size_t i);

  // Sigmoid, Tanh, Erf, HardSigmoid, HardSwish, Gelu, Mul(x, Sigmoid(x)) as SiLU and PyTorch's
  // GELU pattern from its Div: one SDP layer (plan_activation.cpp).
  void plan_activation(std::size_t i);
  // The Erf, Add, Mul, Mul after Div node `div` when they compute GELU, or none.
  std::vector<std::size_t> gelu_pattern(std::size_t div) const;

  void plan_view(std::size_t i);

  // Concat on the channel axis (plan_concat.cpp): records the concatenation; refuses other axes,
  // constants, views, transposed inputs and a tensor concatenated twice.
  void plan_concat(std::size_t i);

  // Split, or Slice on the channel axis (plan_slice.cpp): records each output as a channel
  // window of the input; refuses other axes, steps other than 1, views, constants and
  // transposed inputs.
  void plan_channel_slice(std::size_t i);
  // Resize/Upsample, nearest, by integer factors of H and W (plan_resize.cpp): a BDMA layer.
  // Refuses other factors and coordinate modes that do not repeat each pixel f times.
  void plan_resize(std::size_t i);
  // DepthToSpace, DCR mode (plan_resize.cpp): a Rubik contract layer. Refuses CRD, which Rubik's
  // channel grouping cannot express.
  void plan_depth_to_space(std::size_t i);

  // Node `i` through the first of its registry lowerings (models/graph/op_registry.hpp) this
  // configuration has; otherwise the refusal — or, with Fallback::kPpu on a configuration with a
  // PPU, the node on the PPU (plan_ppu), the plan as it was before the DLA planner tried.
  void plan_node(std::size_t i);
  void plan_on_dla(std::size_t i);
  // Node `i` as a kPpu layer (plan_ppu.cpp): `reason` is why the DLA does not run it. Refuses an
  // operator the registry does not compute, a node whose reference kernel refuses it, outputs that
  // are not floating point (in an integer network: that are), integer inputs that are not
  // constants (except in an integer network, whose INT16 surfaces hold integers), and more than
  // one output.
  void plan_ppu(std::size_t i, const std::string& reason);
  [[nodiscard]] std::string refusal(const Node& n, const models::graph::OpSchema* op) const;

  const Graph& g_;
  std::string config_;
  bool has_ppu_ = false;
  Fallback fallback_ = Fallback::kNone;
  NetPlan plan_;
  std::map<std::size_t, std::string> refused_;  // nodes the lowering refused on the DLA: why
  std::set<std::string> ppu_only_;              // tensors of a shape only PPU layers take
  std::vector<bool> used_;
};

}  // namespace octasim::firmware::net::detail
