// Split-precision FP32 GEMM on low-precision tensor cores (after NVIDIA's "high-precision
// matrix multiplication for neural networks" patent): every FP32 operand is decomposed into a
// few BF16 or FP16 parts by round-and-subtract, each residual multiplied by a scale factor
// before it is rounded (so it does not sink into the subnormals), the partial products Ai x Bj
// are computed by the tensor core with FP32 accumulation and unscaled, and summed.
//
// Decomposition (exact arithmetic except the roundings named): r_0 = x;
//   part_i = round_fmt(r_i) (RNE), r_(i+1) = (r_i - part_i) * 2^s   (s = residual_scale_log2),
// so x = sum_i part_i * 2^(-i*s) + (the last residual) * 2^(-parts*s). r_i - part_i is exact
// (the residual of an FP32 value and its rounding needs at most 24 bits).
//
// Product selection, in the order (i + j ascending, then i ascending):
//   (0,0) | (0,1) (1,0) | (0,2) (1,1) (2,0) — products = 1, 3 (parts >= 2) or 6 (parts == 3).
// Each partial GEMM P_ij = A_i x B_j is gemm_reference's kBf16Fp32 / kFp16Fp32 arithmetic
// (fmaf chain over k ascending in FP32, C = 0), then multiplied by 2^-(i+j)s (exact barring
// FP32 underflow). The final sum runs in FP32 from the last selected product of the list above
// back to (0,0): D = ((P_last + P_prev) + ...) + P_00 — smallest terms first.
//
// Scale choice: a residual of a p-bit format is below 2^-p relative to its predecessor, so
// s = p (BF16 8, FP16 11) keeps every part in the exponent range of the first. For BF16 (FP32's
// exponent range) scaling only matters near FP32 underflow; for FP16 (smallest normal 2^-14) it
// is essential: without it the residuals of inputs of order 2^-10 are FP16 subnormals and most
// of their bits are lost. kRecommendedScaleLog2 gives s = p.
// FP16 parts require |x| < 65520 (larger values round to inf); scale the inputs first.
#pragma once

#include <vector>

namespace octasim::models::ops {

enum class SplitFormat { kBf16, kFp16 };

struct SplitConfig {
  SplitFormat format = SplitFormat::kBf16;
  unsigned parts = 2;           // 1..3
  unsigned products = 3;        // 1, 3 (parts >= 2), 6 (parts == 3)
  int residual_scale_log2 = 8;  // each residual multiplied by 2^this before rounding; 0 = none
};

// The significand bits of the format (BF16 8, FP16 11): the recommended residual_scale_log2.
[[nodiscard]] int recommended_residual_scale_log2(SplitFormat format);

// The parts of every element of x: result[i][e] = part_i of x[e], a value of the format held
// exactly as a float. Throws std::invalid_argument on a bad config.
[[nodiscard]] std::vector<std::vector<float>> split_fp32(const std::vector<float>& x,
                                                         const SplitConfig& config);

// D = A x B (A m x k, B k x n, row-major FP32) by split precision, as described above.
[[nodiscard]] std::vector<float> split_gemm(unsigned m, unsigned n, unsigned k,
                                            const std::vector<float>& a,
                                            const std::vector<float>& b, const SplitConfig& config);

// Plain FP32 GEMM: gemm_reference's kFp32 arithmetic (fmaf chain, k ascending, from +0).
[[nodiscard]] std::vector<float> gemm_fp32(unsigned m, unsigned n, unsigned k,
                                           const std::vector<float>& a,
                                           const std::vector<float>& b);

// ||got - ref||_F / ||ref||_F, computed in double.
[[nodiscard]] double relative_frobenius_error(const std::vector<float>& got,
                                              const std::vector<double>& ref);

}  // namespace octasim::models::ops
