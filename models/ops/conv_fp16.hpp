// NVDLA's FP16 direct convolution (CDMA -> CSC -> CMAC -> CACC, PROC_PRECISION=FP16) as a
// functional model. The cube, weight and surface layouts are conv.hpp's (FP16 values held as
// their 16-bit patterns, kernel groups of atomic-K/2); this file is the FP16 arithmetic.
//
// What NVDLA does (v1_ias_precision.rst, NVDLA C-model cmod/cacc): CMAC multiplies FP16 data
// by FP16 weights and sums one atomic-C block (one kernel position, up to atomic-C channels)
// per cycle into an internal float ("FP44": 6-bit exponent, 38-bit mantissa); CACC adds each
// partial sum into an assembly-buffer float ("FP48": 8-bit exponent, 40-bit two's complement
// mantissa, rounded at each add) and converts the finished sum to FP32 for SDP
// (cacc_fp48_to_fp32). The hardware's FP16 golden rule is not bit-exactness but the CC
// threshold (check_cc_direct, thresholds.hpp): |a-b| <= 2^(max_exp-20)*R*S*C*2*scale +
// 2^(exp(a)-10) element by element.
//
// octasim's defined order, which that threshold admits:
// - every product is exact (an FP16 x FP16 product needs 22 significant bits);
// - the per-cycle atomic-C sum and the CACC accumulation are exact: every product is an integer
//   multiple of 2^-48 below 2^33 in magnitude, so the whole R*S*C sum of one output element is
//   held exactly in a 128-bit fixed-point accumulator (2^23 products of 2^81 at most) —
//   standing in for NVDLA's FP44/FP48, whose mantissas are narrower;
// - the finished sum is rounded once to FP32, to nearest even, when CACC delivers it to SDP.
// Why: with exact accumulation the result does not depend on the order of the adds, so any
// split of the channels (CBUF stripes, atomic-C blocks, kernel groups) and the functional and
// cycle-level devices give the same bits, and the only error against the exact convolution is
// the one FP32 rounding — well inside the CC bound, which is what NVDLA's own tests require.
//
// Special values: a NaN operand, or an infinity times zero, makes the element NaN (FP32 quiet
// NaN 0x7fc00000); infinities of one sign give that infinity, of both signs NaN. NaN inputs are
// counted per element as CDMA reads them (D_NAN_INPUT_DATA_NUM / _WEIGHT_NUM, infinities in
// D_INF_INPUT_*), and with CDMA D_NAN_FLUSH_TO_ZERO set become +0 before they reach CMAC (data
// and weights alike; padding is not read, so not counted). The padding value is PADDING_VALUE's
// 16 bits as an FP16 number (NVDLA's precision guide asks software for 0 in FP16).
#pragma once

#include <cstdint>
#include <vector>

#include "models/ops/conv.hpp"

namespace octasim::models::ops {

// The CDMA FP16 input statistics of one layer.
struct ConvFp16Stats {
  std::uint32_t nan_data = 0, inf_data = 0;      // D_NAN_INPUT_DATA_NUM, D_INF_INPUT_DATA_NUM
  std::uint32_t nan_weight = 0, inf_weight = 0;  // D_NAN_INPUT_WEIGHT_NUM, D_INF_INPUT_WEIGHT_NUM
};

struct ConvFp16Result {
  // out_width x out_height x (kernels rounded up) FP32 bit patterns (as int32), the order CACC
  // delivers them to SDP; lanes beyond the kernel count are +0.
  ConvCube out;
  ConvFp16Stats stats;
  std::uint64_t macs = 0;  // as ConvResult::macs
};

// The exact sum of `n` FP16 products data[i] * wt[i] rounded once to FP32 (RNE); NaN/Inf as
// above. The building block of run_conv_fp16, exposed for tests.
[[nodiscard]] std::uint32_t fp16_dot_fp32(const std::uint16_t* data, const std::uint16_t* wt,
                                          std::size_t n);

// FP16 direct convolution of `in` with `w` (both FP16 bit patterns). `p.pad_value` holds the
// 16-bit PADDING_VALUE; `p.clip_truncate` is unused (CACC truncation is INT-only).
// `nan_to_zero` is CDMA D_NAN_FLUSH_TO_ZERO.
[[nodiscard]] ConvFp16Result run_conv_fp16(const ConvCube& in, const ConvWeights& w,
                                           const ConvParams& p, std::uint32_t out_channels_padded,
                                           bool nan_to_zero);

// max_exp of every output element for the CC threshold rule: cc_max_exp over the element's
// R*S*C window (padded positions take the padding value), in the order of ConvCube::index
// with kernels as channels (out_width x out_height x kernels).
[[nodiscard]] std::vector<int> conv_fp16_max_exp(const ConvCube& in, const ConvWeights& w,
                                                 const ConvParams& p);

}  // namespace octasim::models::ops
