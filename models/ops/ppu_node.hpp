// One ONNX node on the PPU: the golden of the PPU's kNode kernel (firmware/ppu/commands.hpp),
// which runs any operator of the registry (models/graph/op_registry.hpp) the DLA cannot — the
// "GPU fallback" of NVIDIA's DLA, where TensorRT runs the layers the DLA lacks as GPU kernels.
// sim/ppu/node_kernel.cpp computes a launched node by calling run_node below, so the model and
// the simulator are one implementation and agree bit for bit; what the simulator adds is the
// timing (node_cost: every byte loaded and stored once, the math on the SMs' FMA lanes or, for
// matrix products, their tensor cores).
//
// The kernel image. A kNode descriptor points at a NodeImage in device memory (the kernel the
// firmware compiled for the node): the operator, its attributes and opset, and where each input
// and output lives. Its byte format (encode_node / decode_node; little-endian, no padding):
//   u32 magic 'PNOD' (0x444f4e50), u32 version 1
//   str op_type, str name, i64 opset           str: u32 length (<= 4096), bytes
//   u32 attributes (<= 64), keys unique and in ascending byte order (std::map's), each: str key,
//       u8 kind (Attribute::Kind), then
//       int i64 | float f32 | string str | ints u32 n, n x i64 | floats u32 n, n x f32 |
//       tensor u8 dtype, u32 rank, rank x i64 dims, then elements x (f32 for float types,
//       i64 otherwise)
//   u32 inputs (<= 16), each: u8 present (0: an omitted optional input), then a tensor place
//   u32 outputs (1 .. 16), each a tensor place
//   then, only for an INT8 matrix product (NodeImage::int8_matmul, below; absent: the image ends
//   here): u32 tag 'QMM8' (0x384d4d51), u32 n_a (1 .. 2^24), n_a x f64 steps of A, u32 n_b
//   (1 .. 2^24), n_b x f64 steps of B (each finite, > 0); decode_node also requires a MatMul or
//   Gemm, inputs 0 and 1 present and not INT64, an INT8 surface among them of step 1 (its codes
//   are taken as they are), and one output, an FP16 surface
//   tensor place: u8 storage (Storage), u64 address, u32 rank (<= 8), rank x i64 dims (ONNX's
//       shape; every dim 1 .. 2^24 (a dense place 0 .. 2^24: an empty constant), elements <=
//       2^26), then for a surface: u32 width, height,
//       channels, line_stride, surface_stride, atom_bytes, u8 rows, u32 map entries (0 or the
//       tensor's logical channels), that many u32 physical channels, f64 step, and for an INT16
//       surface (storage 4) also u8 dtype (graph::DType: an integer type or bool; its step is 1);
//       a typed dense place (storage 5) ends with u8 dtype (an integer type but int64, or bool)
// decode_node accepts exactly this and nothing else: a bad magic or version, a length or count
// beyond its limit or beyond the image, an unknown kind, storage or dtype, trailing bytes, a
// surface whose cube does not hold the shape — each is a NodeImageError naming the field and its
// byte offset, never a crash.
//
// A tensor place is either a feature surface (NVDLA's feature format, as softmax.hpp describes
// it: element (x, y, c) at address + (c / C') * surface_stride + y * line_stride +
// x * atom_bytes + (c % C') * element bytes, C' = atom_bytes / element bytes) holding FP16
// values, INT8 codes of step `step` or INT16 codes that are an integer network's values (exact
// integers of the place's dtype), or a dense C-order array (constants: FP32, or INT64 holding
// int64 values or, typed, values of another integer type). The
// ONNX element i (C order of `shape`) of a surface is the cube's element (c, y, x) with
//   rows = 0: i = c * H * W + y * W + x       (N x C x H x W with N = 1, N x C x L, C x H x W, K)
//   rows = 1: i = y * K + c, x = 0            (an M x K tensor held as rows: H = M, C = K)
// and logical channel c stored at physical channel map[c] when the map is not empty (the compiler's
// padded channel layouts: firmware/net/program.hpp NetTensor).
//
// Arithmetic: each input becomes an FP32 tensor of its ONNX shape — FP16 widened exactly, INT8
// codes times step (FP32 product), dense FP32 as is, INT64 as INT64 (typed: as its dtype), INT16
// codes as a tensor of
// the place's dtype holding the codes (bool: code != 0) — the registry's reference kernel runs
// the node (in FP32, or in the integer types with their ONNX semantics), and each output is
// stored as FP16 rounded to nearest even (NaN as 0x7e00), or as INT8 codes
// round-half-away(v / step) (in double; NaN as 0) saturated to [-128, 127], or as INT16 codes
// of an integer result saturated to [-32768, 32767] (a float result in an INT16 place is a
// GraphError: an integer network's PPU layers compute integers); a dense output as FP32, or as
// INT64 for an integer result (a float result in an INT64 place is a GraphError). A surface
// output is
// written atom by atom: the lanes of the last surface beyond the tensor's channels become zero
// when the output has no channel map (as the DLA writes them); stride gaps are not touched.
//
// An INT8 matrix product (int8_matmul; firmware/net's --precision mixed): the MatMul or Gemm
// multiplies signed 8-bit codes, not FP32 values. Operand X (input 0: A, input 1: B) with steps
// s_X — one (per tensor) or one per index of its output axis (A's M: MatMul's axis rank - 2,
// Gemm's 0, or 1 with transA; B's N: MatMul's last axis, Gemm's 1, or 0 with transB; a 1-D
// MatMul operand has one step) — becomes codes: a float operand (FP16 widened, dense FP32)
// q = clamp(round_half_away(x / s) (in double), -127, 127), NaN 0; an INT8 surface's codes as
// they are. The sums over K are exact in INT32 (K <= 131071, so none overflows; a larger K is a
// GraphError), then rescaled in double and rounded once to FP16 (nearest even):
// MatMul y = acc * s_A[m] * s_B[n]; Gemm y = alpha * s_A[m] * s_B[n] * acc + beta * C (C as
// read: FP16 widened or FP32, broadcast to M x N). MatMul broadcasts batch axes as numpy does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/graph/graph.hpp"
#include "models/ops/memory.hpp"

namespace octasim::models::ops {

inline constexpr std::uint32_t kNodeImageMagic = 0x444f4e50;  // "PNOD"
inline constexpr std::uint32_t kNodeImageVersion = 1;

// A malformed kernel image, with the byte offset of the field that is wrong.
class NodeImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Storage : std::uint8_t {
  kSurfaceFp16 = 0,  // a feature surface of FP16 values
  kSurfaceInt8 = 1,  // a feature surface of INT8 codes (value = code * step)
  kDenseFp32 = 2,    // a C-order array of FP32 (constants)
  kDenseInt64 = 3,   // a C-order array of INT64 (constants: indices, shapes, axes)
  // A feature surface of INT16 codes that are the values themselves (an integer network's:
  // step 1), read as a tensor of the place's `dtype` (an integer type or bool).
  kSurfaceInt16 = 4,
  // A C-order array of INT64 holding values of the place's `dtype`, an integer type other than
  // int64 or bool (constants: uint8 weights, zero points, int32 operands).
  kDenseTyped = 5,
};

struct TensorPlace {
  Storage storage = Storage::kSurfaceFp16;
  std::uint64_t address = 0;
  std::vector<std::int64_t> shape;  // ONNX's, as the node sees the tensor
  // Surfaces only.
  std::uint32_t width = 1, height = 1, channels = 1;
  std::uint32_t line_stride = 0, surface_stride = 0, atom_bytes = 32;
  bool rows = false;
  std::vector<std::uint32_t> channel_map;  // empty: identity
  double step = 1.0;                       // INT8 surfaces: the code step
  // INT16 surfaces, typed dense arrays: the ONNX element type of the values (integer or bool).
  graph::DType dtype = graph::DType::kInt32;
  bool present = true;  // inputs: false for an omitted optional input

  [[nodiscard]] bool surface() const {
    return storage == Storage::kSurfaceFp16 || storage == Storage::kSurfaceInt8 ||
           storage == Storage::kSurfaceInt16;
  }
};

// An INT8 matrix product's code steps (above): one per tensor or one per output-axis index.
struct MatmulQuant {
  std::vector<double> a_steps{1.0}, b_steps{1.0};
  bool operator==(const MatmulQuant& o) const {
    return a_steps == o.a_steps && b_steps == o.b_steps;
  }
};

struct NodeImage {
  std::string op_type, name;
  std::int64_t opset = 13;
  std::map<std::string, graph::Attribute> attributes;
  std::vector<TensorPlace> inputs, outputs;
  std::optional<MatmulQuant> int8_matmul;  // absent: the node computes in FP32
};

[[nodiscard]] std::vector<std::uint8_t> encode_node(const NodeImage& image);
// Throws NodeImageError (above) for anything but a well-formed image.
[[nodiscard]] NodeImage decode_node(const std::uint8_t* bytes, std::size_t size);

// The bytes a tensor place spans in memory: a surface's whole C' surfaces (line and surface
// strides included, from its address), a dense array's elements.
[[nodiscard]] std::uint64_t place_bytes(const TensorPlace& p);

// Runs the node on `mem`: reads the inputs, runs the registry's reference kernel, writes the
// outputs (arithmetic above). Throws graph::GraphError for an operator the registry does not know
// or a node its kernel refuses (attributes, shapes that do not match the image's outputs).
void run_node(const NodeImage& image, Memory& mem);

// What the node costs the PPU (sim/ppu/node_kernel.cpp's timing). ops_per_element, by operator
// (a table in ppu_node.cpp, FMA-lane operations of a polynomial or iteration; the SFU is not
// modelled): 1 for Add, Sub, Mul, Max, Relu, Neg, Abs and copies (Transpose, Reshape, Concat,
// Gather, ... and every operator not listed); 2-4 for Clip, LeakyRelu, PRelu, HardSigmoid,
// HardSwish, BatchNormalization, (De)QuantizeLinear; 4 for Div, Reciprocal, Sqrt; 6 Exp, Log;
// 8 Sigmoid; 10 Tanh, Erf; 12 Pow; 14 Gelu; 9 Softmax (as the kSoftmax kernel). Reductions
// (Reduce*, GlobalAveragePool, GlobalMaxPool) count their input elements: input elements per
// output element + 1; MaxPool/AveragePool the kernel window + 1; LRN its size + 14.
struct NodeCost {
  std::uint64_t output_elements = 0;  // of all outputs
  std::uint64_t macs = 0;             // the registry's multiply-accumulates (matrix products)
  // FP32 operations per output element besides the MACs (the table above): 1 for an add, a
  // compare or a copy, more for a transcendental function.
  std::uint64_t ops_per_element = 1;
  std::uint64_t bytes_read = 0, bytes_written = 0;  // place_bytes of inputs, outputs
  // An INT8 matrix product: the MACs at the tensor cores' INT8 rate; ops_per_element then counts
  // the rescale and rounding of each output (2, 3 with Gemm's C) and the quantization of the
  // float operands (3 FMA-lane ops per element: multiply by 1/s, round, clamp), spread over the
  // output elements.
  bool int8_macs = false;
};
[[nodiscard]] NodeCost node_cost(const NodeImage& image);

}  // namespace octasim::models::ops
