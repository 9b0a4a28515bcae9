// The first step of compiling a network: which hardware layer computes which ONNX nodes. The
// graph (after BatchNormalization folding and Identity/Dropout removal) is walked in
// topological order and cut into layers the DLA runs:
//
//   Conv [+ Relu | Clip(0, c)]                   CONV with SDP in flying mode (bias, per-channel
//   Conv + Add(tensor) [+ Relu]                  requantization, ReLU, clamp; a residual Add's
//                                                other addend read per element, plan_fuse.cpp);
//   Gemm / MatMul [+ Add bias] [+ Relu | Clip]   Gemm and MatMul as
//   ConvInteger, MatMulInteger                   (integer networks: exact INT16, zero points as
//                                                the padding value and a bias correction)
//                                                a convolution whose kernel covers the input
//                                                (NVDLA's fully-connected mapping)
//   MaxPool, AveragePool, GlobalAveragePool      PDP
//   LRN                                          CDP
//   Relu, BatchNormalization, Add, Mul,          SDP, memory to memory: per-channel multiply and
//   PRelu (not after a convolution, or an Add    add (BS; at INT8 BS and BN), an element-wise
//   the convolution cannot take)                 operand (EW or BN: another tensor, or a
//                                                constant broadcast to the output)
//   Clip (not taken by a convolution),           SDP, memory to memory: BS's ALU MAX and BN's
//   LeakyRelu                                    ALU MIN, BS's multiplier in PReLU mode (register
//                                                operands; quantized: on the input's codes)
//   Sigmoid, Tanh, HardSigmoid, HardSwish,       SDP, memory to memory (plan_activation.cpp): the
//   Mul(x, Sigmoid(x)) (SiLU)                    EW stage's LUT, or FP16 recipes
//   Mul by an N x C x 1 x 1 tensor (SE)          SDP: BN's multiplier reads it per channel
//   Softmax (configurations with a PPU)          the PPU's softmax kernel over one axis of the
//                                                FP16 surface
//   Flatten, Reshape                             nothing: a view of the producer's surface (read
//                                                by a Gemm/MatMul, or a graph output)
//   Concat (on the channel axis)                 nothing: each input's producer writes into the
//                                                output's surface at the input's channel offset
//                                                (plan_concat.cpp; program.hpp's channel map)
//   Resize, Upsample (nearest, x f on H and   BDMA: f_h x f_w strided copies of the input's
//   W, f in 1..4)                              atoms into the output (plan_resize.cpp)
//   DepthToSpace (DCR; configurations with       Rubik's contract mode: channel group
//   Rubik; C / b^2 whole atoms)                  (by b + bx) to pixel (x b + bx, y b + by)
//   Split, Slice (on the channel axis)           nothing: each output is a surface inside the
//                                                input's, from the atom holding its first
//                                                channel on (plan_slice.cpp)
//
//   anything else the registry computes        the PPU's kNode kernel (--fallback ppu, the
//   (configurations with a PPU)               default where there is a PPU; FP16): the node
//                                             as one kernel reading and writing surfaces
//
// Anything else is refused with one line naming the node and the op. Tensors are ONNX's NCHW
// with one image (N = 1), N x C x L (1-D, as H = 1), C x H x W (rank 3 without a batch, as ONNX's
// element-wise ops take them), M x K (Gemm/MatMul rows: W = 1, H = M, C = K) or a vector of K;
// the device holds each as a W x H x C feature surface. Tensors only PPU layers read and write may
// also be scalars (1 x 1 x 1) or of rank 4 with N > 1 or rank 5 and more (W the last axis, H the
// one before, C the product of the others: ONNX's C order is still the cube's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "firmware/dla/sdp_lut_tables.hpp"
#include "firmware/net/quant.hpp"
#include "models/graph/graph.hpp"

namespace octasim::firmware::net {

enum class LayerKind : std::uint8_t { kConv, kPool, kLrn, kSdp, kSoftmax, kBdma, kRubik, kPpu };

[[nodiscard]] const char* layer_engine(LayerKind k);  // "CONV", "PDP", "CDP", "SDP", "PPU", "BDMA",
                                                      // "RUBIK"

struct ConvAttrs {
  std::string weight, bias;  // initializer names (bias may be empty)
  bool fully_connected = false;
  // Grouped convolution (ONNX `group`): the DLA runs it group by group or in blocks of groups
  // (groups.cpp), else as one dense convolution whose weights are zero between groups
  // (weights.hpp).
  unsigned groups = 1;
  // Gemm/MatMul on M x K rows (the input is not a flattened cube): a 1x1 kernel over the
  // W = 1, H = M, C = K cube; otherwise the kernel covers the whole (flattened) input cube.
  bool rows = false;
  bool transpose_b = false;        // Gemm transB / MatMul (B is K x N: false)
  double alpha = 1.0, beta = 1.0;  // Gemm's factors
  unsigned kernel_w = 1, kernel_h = 1;
  unsigned stride_x = 1, stride_y = 1, dilation_x = 1, dilation_y = 1;
  unsigned pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;
  bool relu = false;
  double clip_max = 0.0;  // Clip(0, clip_max) fused: > 0
  // ConvInteger / MatMulInteger: integer values, the zero points' initializers (may be empty).
  bool integer = false;
  std::string input_zero_point, weight_zero_point;
  // Gemm's C when it is not one value per output (e.g. M x N): added, times beta, by an SDP
  // layer after the CONV (an element-wise constant operand, FP16).
  std::string matrix_bias;
  // A residual Add fused into the CONV (plan_fuse.cpp): the other addend, a tensor an earlier
  // layer computed, which the flying SDP reads per element; `relu` is then the ReLU after the
  // sum (the convolution itself has none).
  std::string residual;
};

enum class PoolKind : std::uint8_t { kMax, kAverage };

struct PoolAttrs {
  PoolKind kind = PoolKind::kMax;
  unsigned kernel_w = 1, kernel_h = 1, stride_x = 1, stride_y = 1;
  unsigned pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;
  // Average over the real elements of each window only (ONNX's count_include_pad=0 where a
  // window covers padding): PDP sums, SDP multiplies by each output's 1 / count (FP16).
  bool exclude_pad = false;
};

// A memory-to-memory SDP layer: y = relu?((x * mul[c] + add[c]) (+|*) e), each part optional.
enum class EwOp : std::uint8_t { kNone, kAdd, kMul, kPrelu };
struct SdpAttrs {
  std::vector<double> mul, add;  // per channel (BatchNormalization folded; a per-channel Add/Mul)
  EwOp ew = EwOp::kNone;
  // The element-wise operand: a tensor the device computes, or an initializer broadcast to the
  // output's shape.
  std::string operand;
  // A Mul by a device tensor of one value per channel (N x C x 1 x 1: a squeeze-excitation scale,
  // s = Sigmoid(Conv(GlobalAveragePool(x)))): the operand is read per channel (SDP's PER_KERNEL
  // operand mode) from that tensor's 1x1xC surface; `operand` names the tensor views resolved.
  bool operand_per_channel = false;
  bool relu = false;
  // Clip that no convolution takes: min(max(x, clip_lo), clip_hi), either bound absent (BS's ALU
  // MAX and BN's ALU MIN with register operands; INT8/INT16 on the input's codes, which the
  // output keeps). LeakyRelu: x where x >= 0, else leaky_slope x (BS's multiplier in PReLU mode,
  // a register operand). Nothing else of the layer is used with either.
  std::optional<double> clip_lo, clip_hi, leaky_slope;
  // QuantizeLinear (FP16 -> integer codes in INT16 elements, saturated to [lo, hi]) or
  // DequantizeLinear (INT16 codes -> FP16): a scale and a zero point, one or one per channel.
  enum class Convert : std::uint8_t { kNone, kQuantize, kDequantize } convert = Convert::kNone;
  std::vector<double> scale, zero_point;
  std::int32_t lo = 0, hi = 0;
  // A unary activation (plan_activation.cpp): Sigmoid, Tanh, HardSigmoid, HardSwish, or SiLU
  // (Mul(x, Sigmoid(x))); nothing else of the layer is used. Lowered through the EW stage's LUT
  // (INT8) or the FP16 recipes of program_activation.cpp.
  std::optional<Unary> unary;
};

// Softmax on the PPU (soc_* configurations): over one axis of the device cube.
enum class CubeAxis : std::uint8_t { kC = 0, kH = 1, kW = 2 };
struct SoftmaxAttrs {
  CubeAxis axis = CubeAxis::kC;
};

// Nearest upsampling (Resize, Upsample) by integer factors: output (x, y) is input
// (x / scale_w, y / scale_h). BDMA copies each input atom scale_w x scale_h times (program.hpp).
inline constexpr unsigned kMaxResizeFactor = 4;
struct ResizeAttrs {
  unsigned scale_h = 1, scale_w = 1;
};

// DepthToSpace in DCR mode on Rubik's contract (program_resize.cpp): output (x b + bx, y b + by, c)
// is input (x, y, (by b + bx) C + c), the deconvolution's reshuffle.
struct DepthToSpaceAttrs {
  unsigned block = 2;
};

// A node the DLA cannot run, on the PPU (--fallback ppu, configurations with a PPU): its kNode
// kernel runs the registry's reference kernel in FP32 on FP16 tensors, or in an integer network
// on its INT16 integers (models/ops/ppu_node.hpp).
struct PpuAttrs {
  std::string reason;              // the DLA planner's refusal: why the node fell back
  std::vector<std::string> reads;  // the device tensors it reads (views followed), in input order
};

struct LrnAttrs {
  unsigned size = 5;
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
};

struct PlannedLayer {
  LayerKind kind = LayerKind::kConv;
  std::vector<std::size_t> nodes;  // indices into Graph::nodes, in order
  std::string input;               // the tensor whose surface the layer reads
  std::string output;              // the tensor it writes (the last fused node's output)
  ConvAttrs conv;
  PoolAttrs pool;
  LrnAttrs lrn;
  SdpAttrs sdp;
  SoftmaxAttrs softmax;
  ResizeAttrs resize;
  DepthToSpaceAttrs depth_to_space;
  PpuAttrs ppu;
};

// A tensor's cube as the device holds it.
struct Cube {
  std::uint32_t width = 1, height = 1, channels = 1;
};

// A Concat on the device's channel axis: no layer. Its inputs live inside its surface, each
// block at a channel offset the lowering chooses (program.hpp: NetTensor::channel_map).
struct PlannedConcat {
  std::size_t node = 0;             // index into Graph::nodes
  std::vector<std::string> inputs;  // in the node's order
};

// A Split output or a Slice on the channel axis: no layer. The tensor is channels
// [first, first + its channels) of `source` (a tensor a layer writes, a Concat or the graph
// input), a surface inside source's (program_concat.cpp: from the atom holding channel `first` on;
// a padded channel layout when `first` does not start an atom).
struct PlannedSlice {
  std::size_t node = 0;  // index into Graph::nodes
  std::string source;
  std::uint32_t first = 0;
};

struct NetPlan {
  std::string input;                      // the graph's (one) data input
  std::vector<std::int64_t> input_shape;  // NCHW or N x F, N = 1
  std::vector<std::string> outputs;       // the graph's outputs
  std::vector<PlannedLayer> layers;
  std::map<std::string, Cube> cubes;  // every tensor a layer reads or writes, and the input
  // Tensors that are views of another (Flatten/Reshape outputs): name -> the viewed tensor.
  std::map<std::string, std::string> views;
  std::map<std::string, std::vector<std::int64_t>> shapes;  // ONNX shapes (N = 1)
  // ONNX element types, in an integer network only (program.hpp integer_network: its PPU layers
  // read and write INT16 surfaces of these types).
  std::map<std::string, models::graph::DType> dtypes;
  // 2-D tensors held transposed: K x M as the rows cube of M x K (the graph input A of a Gemm
  // with transA=1, which the host lays out), so their C order is the cube's.
  std::set<std::string> transposed;
  // Concat outputs (name -> the Concat), and each concatenated tensor -> the Concat output that
  // holds it (a tensor is concatenated once).
  std::map<std::string, PlannedConcat> concats;
  std::map<std::string, std::string> concat_parent;
  // Channel slices (Split outputs, Slice on the channel axis): name -> where it lives.
  std::map<std::string, PlannedSlice> slices;

  // The tensor a name stands for once views are followed.
  [[nodiscard]] const std::string& resolve(const std::string& tensor) const;
};

// Plans `g`, which must have had simplify_graph (models/graph/passes.hpp) and the device's
// rewrites (rewrite.hpp) applied. Throws
// models::graph::GraphError naming the node: an op the DLA lacks ("Softmax 'prob': not supported
// on the DLA of nv_small (no PPU in this configuration)"), an attribute it cannot honour, more
// than one data input.
// `has_ppu`: the configuration has a PPU, which runs what the DLA lacks (Softmax, and with
// Fallback::kPpu every node the DLA planners refuse whose operator the registry can compute: a
// kPpu layer, the refusal kept as its reason).
// `refused`: nodes (by index) whose DLA layer the lowering refused (program.hpp LayerRefusal)
// with why; with Fallback::kPpu on a configuration with a PPU they go to the PPU directly.
[[nodiscard]] NetPlan plan_network(const models::graph::Graph& g, const std::string& config_name,
                                   bool has_ppu = false, Fallback fallback = Fallback::kNone,
                                   const std::map<std::size_t, std::string>& refused = {});

// The device tensors layer `l` reads: its input, and the element-wise operand of a fused residual
// Add or of an SDP layer when that is a tensor (not a constant).
[[nodiscard]] std::vector<std::string> layer_reads(const models::graph::Graph& g,
                                                   const PlannedLayer& l);

// "Conv 'conv1' + Relu 'relu1'" for the layer's nodes.
[[nodiscard]] std::string layer_nodes_label(const models::graph::Graph& g, const PlannedLayer& l);

}  // namespace octasim::firmware::net
