// GEMM D = A x B + C as a tensor core (and the FP32 "CUDA core" path) computes it: the golden
// model of the PPU's matrix unit, and the tile primitive the simulator calls per tile.
//
// Shapes: A is M x K, B is K x N, C and D are M x N in the accumulator type.
// Storage (bytes, little endian), row-major, rows densely packed (row stride = cols elements):
// - FP16 / BF16: 2 bytes; INT8: 1 byte (two's complement); FP32 / INT32: 4 bytes;
// - INT4: two elements per byte, the element with an even linear index (r * cols + c) in the
//   low nibble; rows are not padded to bytes (the packing continues across rows);
// - the accumulator type of kFp16Fp16 is FP16 (C and D 2 bytes per element).
//
// The arithmetic — the reproducibility contract (any tiling gives the same bits):
// - Every product is exact. Each output element accumulates over k ascending, starting from C
//   (or +0 when there is no C).
// - FP32 accumulation (kFp16Fp32, kBf16Fp32, kFp32): acc = fmaf(a_k, b_k, acc) — the inputs
//   decoded exactly to float, one round-to-nearest-even per product-accumulate. Written as an
//   explicit std::fma on floats, so -ffp-contract cannot change it.
// - FP16 accumulation (kFp16Fp16): acc = round_fp16(a_k * b_k + acc), the exact sum rounded once
//   (RNE, overflow to +-inf). The product (22 significant bits) is exact in double, and
//   rounding the double sum to FP16 equals rounding the exact sum (proof in gemm.cpp), so there
//   is no double rounding. An accumulator that overflowed stays +-inf (or NaN).
// - INT8 / INT4 (kInt8Int32, kInt4Int32): products exact, INT32 accumulator, one MMA k-step at a
//   time: k is cut into chunks [j * mma_k, (j + 1) * mma_k) at absolute multiples of mma_k (the
//   last chunk may be short) and acc = saturate_int32(acc + exact sum of the chunk's products).
//   Every add that saturates counts one saturation (events, summed over elements and steps).
// - Special values: NaN or inf inputs propagate by IEEE rules (inf * 0 and inf - inf give NaN);
//   every NaN stored in D is the canonical quiet NaN (FP32 0x7fc00000, FP16 0x7e00). Signed
//   zeros follow IEEE RNE addition: +0 + -0 = +0, so with no C (acc starts at +0) an element
//   whose products are all -0 is +0; with C = -0 it is -0.
// - Padding: the PPU pads M, N and K to the type's shape_multiple with masked lanes that
//   contribute nothing, so a padded GEMM's results equal the unpadded one's; the model needs
//   no padding at all.
//
// Tiling: gemm_load_c, then gemm_accumulate over k ranges in ascending order, then
// gemm_store_d, reproduces gemm_reference bit for bit when every k split point is a multiple of
// the type's mma_k (any split for the float types). A split inside an INT chunk makes the two
// pieces two separate saturating adds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace octasim::models::ops {

enum class GemmType { kFp16Fp32, kFp16Fp16, kBf16Fp32, kInt8Int32, kInt4Int32, kFp32 };

struct GemmTypeInfo {
  const char* name;     // "fp16_fp32", "fp16_fp16", "bf16_fp32", "int8_int32", "int4_int32", "fp32"
  unsigned input_bits;  // 16, 16, 16, 8, 4, 32
  unsigned acc_bytes;   // 4, 2, 4, 4, 4, 4
  // Tensor-core step shape: FP16/BF16 4x4x4, INT8 8x8x16, INT4 8x8x32, FP32 1x1x1.
  unsigned mma_m, mma_n, mma_k;
  // The multiple of M, N, K the tensor-core path needs: 8 (FP16/BF16), 16 (INT8), 32 (INT4),
  // 1 (FP32).
  unsigned shape_multiple;
};

[[nodiscard]] const GemmTypeInfo& gemm_type_info(GemmType type);
// The type named `name` (GemmTypeInfo::name), or nullopt.
[[nodiscard]] std::optional<GemmType> parse_gemm_type(std::string_view name);

// Operands as raw storage bytes, laid out as above. `c` may be null (C = 0).
struct GemmOperands {
  GemmType type = GemmType::kFp32;
  unsigned m = 0, n = 0, k = 0;
  const std::uint8_t* a = nullptr;
  const std::uint8_t* b = nullptr;
  const std::uint8_t* c = nullptr;
};

// Accumulator values are held as double (exact for every FP32, FP16 and INT32 value); `acc`
// holds a tile row-major, (m1 - m0) x (n1 - n0), and must hold values of the accumulator type.

// Accumulates the products of rows [m0, m1), columns [n0, n1) and k in [k0, k1) into `acc`, in
// the order above. Returns the number of INT32 saturations (0 for the float types). Throws
// std::invalid_argument on ranges outside the GEMM or a wrongly sized `acc`.
[[nodiscard]] std::uint64_t gemm_accumulate(const GemmOperands& ops, unsigned m0, unsigned m1,
                                            unsigned n0, unsigned n1, unsigned k0, unsigned k1,
                                            std::vector<double>& acc);
// Loads C (or zeros) for the tile into `acc` (resized to the tile).
void gemm_load_c(const GemmOperands& ops, unsigned m0, unsigned m1, unsigned n0, unsigned n1,
                 std::vector<double>& acc);
// Encodes the tile's accumulator values into `d`, the full M x N D storage, at the tile's
// position (NaN canonical, INT32 values as held — they are always in range).
void gemm_store_d(const GemmOperands& ops, unsigned m0, unsigned m1, unsigned n0, unsigned n1,
                  const std::vector<double>& acc, std::uint8_t* d);

struct GemmResult {
  std::vector<std::uint8_t> d;  // M x N in the accumulator type's storage
  std::uint64_t saturations = 0;
};

// The whole GEMM, the golden reference.
[[nodiscard]] GemmResult gemm_reference(const GemmOperands& ops);

// Plain FP64 GEMM (k ascending, double adds) on decoded values, for error measurement.
[[nodiscard]] std::vector<double> gemm_fp64(unsigned m, unsigned n, unsigned k,
                                            const std::vector<double>& a,
                                            const std::vector<double>& b);

// Storage helpers. Float inputs and accumulators are encoded with RNE (overflow to inf); INT8,
// INT4 and INT32 values round half away from zero and saturate to the type's range.
[[nodiscard]] std::size_t gemm_input_bytes(GemmType type, std::size_t elements);  // INT4: (n+1)/2
[[nodiscard]] std::size_t gemm_acc_bytes(GemmType type, std::size_t elements);
[[nodiscard]] std::vector<std::uint8_t> encode_gemm_input(GemmType type,
                                                          const std::vector<double>& values);
[[nodiscard]] std::vector<std::uint8_t> encode_gemm_acc(GemmType type,
                                                        const std::vector<double>& values);
// Decodes the first `count` elements of `bytes` (throws if `bytes` is too short).
[[nodiscard]] std::vector<double> decode_gemm_input(GemmType type,
                                                    const std::vector<std::uint8_t>& bytes,
                                                    std::size_t count);
[[nodiscard]] std::vector<double> decode_gemm_acc(GemmType type,
                                                  const std::vector<std::uint8_t>& bytes,
                                                  std::size_t count);

// Implicit-GEMM convolution. Input NHWC (n x h x w x c), weights KRSC (k_out x r x s x c),
// output NHWC (n x out_h x out_w x k_out) in the accumulator type. It is the GEMM with
// M = n * out_h * out_w (m = (n_i * out_h + y) * out_w + x), N = k_out, K = r * s * c with the
// reduction index kk = (r_i * s + s_i) * c + c_i ascending, B[kk][k_o] = weight(k_o, r_i, s_i,
// c_i). Taps that fall into the zero padding are skipped: they do not take part in the
// accumulation at all (INT chunks still follow the absolute kk, a skipped tap adds 0 to its
// chunk). Everything else is gemm_accumulate's arithmetic for the type.
struct ConvGemmShape {
  unsigned n = 1, h = 0, w = 0, c = 0, k_out = 0, r = 0, s = 0;
  unsigned stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  [[nodiscard]] unsigned out_h() const;
  [[nodiscard]] unsigned out_w() const;
  [[nodiscard]] unsigned gemm_m() const { return n * out_h() * out_w(); }
  [[nodiscard]] unsigned gemm_k() const { return r * s * c; }
};

// `bias_c` may be null; otherwise M x N (= the NHWC output) in the accumulator type.
[[nodiscard]] GemmResult conv_implicit_gemm_reference(GemmType type, const ConvGemmShape& shape,
                                                      const std::uint8_t* input,
                                                      const std::uint8_t* weights,
                                                      const std::uint8_t* bias_c);
// Explicit lowering: the M x K A matrix (storage of the input type) with padded taps as +0.
// gemm_reference on it (B = the transposed weights) gives conv_implicit_gemm_reference's values
// except possibly the sign of a zero result (a +0 product added to an acc of -0 makes +0) —
// padding contributes there, it is skipped in the implicit reference.
[[nodiscard]] std::vector<std::uint8_t> conv_im2col(GemmType type, const ConvGemmShape& shape,
                                                    const std::uint8_t* input);

}  // namespace octasim::models::ops
