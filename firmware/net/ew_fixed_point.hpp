// The integer multipliers and shifts the network compiler gives SDP's INT32 pipeline for an
// element-wise add of two quantized tensors (a residual Add, fused into the convolution that
// computes one addend or on its own) and for a per-channel affine map (BatchNormalization, a
// per-channel Mul/Add), with the bound on what their roundings cost.
//
// The add. The main input is an integer `acc` per element with a step s_a[k] per channel k and a
// real bias b[k] (a convolution: CACC's accumulator, s_a[k] = s_x s_w[k]; an SDP layer: the input
// codes, s_a = s_x, b = 0); the operand is INT8 codes e with step s_e; the output's codes have
// step s_y. Exactly, in output steps,
//   z = (s_a[k] acc + b[k] + s_e e) / s_y,   the device's code  u = sat8(relu?(round(u*))).
// SDP computes, at an intermediate step s_i = s_e / 2^a (every right shift rounds half away):
//   BS   v  = ((acc + (B[k] << a1)) * m1[k]) >> t1          BRDMA, DATA_USE=BOTH
//   sum  w  = v + (e << a)                      BN ALU (SdpEwUnit::kBn, BN_ALU_SHIFT_VALUE = a)
//          or v + ((e - 0) * 2^a) >> 0          EW ALU after ERDMA's convertor (kEw, a <= 14)
//   out  u* = (w * m2) / 2^t2                   BN's multiplier, then BN's ReLU (kBn), or the
//                                               output convertor (kEw: no ReLU)
// The operand is exact: s_i 2^a = s_e. Write R_k = s_a[k] / s_i, m1[k] = R_k 2^t1 + r1[k] and
// m2 = (s_i / s_y) 2^t2 + r2 with |r1|, |r2| <= 1/2 (nearest INT16), B'[k] = B[k] 2^a1 with
// beta[k] = B'[k] - b[k] / s_a[k] (|beta| <= 2^(a1-1)), and d <= 1/2 BS's rounding. Then
//   v  = (acc + B') R_k + eta,           eta = (acc + B') r1[k] / 2^t1 + d
//   w  = W + eta,                        W = (acc + B') R_k + e 2^a = (z s_y + beta s_a) / s_i
//   u* = W s_i/s_y + W r2/2^t2 + eta m2/2^t2
// so, with g = m2 / 2^t2 and rho = |r2| / ((s_i / s_y) 2^t2) (m2's relative error),
//   |u* - z| <= eps = eps_b + (|z| + eps_b) rho + g/2 + g |r1[k]| / 2^t1 |acc + B'[k]|,
//   eps_b = max_k |beta[k]| s_a[k] / s_y.
// ReLU, rounding and saturation are monotone and 1-Lipschitz (and relu(round(x)) =
// round(relu(x))), so |u - sat8(relu?(z))| <= 1/2 + eps: the device's code is the exact result
// rounded, or its neighbour once eps < 1/2.
// The choice, each term made as small as the registers allow:
//   t1, t2 the largest shifts (<= 63) that keep every m1[k] and m2 in INT16, so that
//     |r1| / 2^t1 <= (R_max / 32767) / 2 and rho <= 2^-15: the multipliers keep 15 bits;
//   a1 the smallest shift that keeps every B[k] in INT16 (0 unless a bias is beyond 32767 steps);
//   a  the largest shift with (1) e << a inside INT32 (a <= 23; kEw: 2^a an INT16 scale, a <=
//      14), (2) R_max <= 32767 (t1 >= 0), (3) s_y / s_i <= 2^16, so that BS's rounding costs at
//      most g/2 ~ 2^-17 output steps while v keeps headroom in INT32 for |acc s_a| up to 2^15
//      output steps.
// eps then stays below 1/2 for every element with |acc + B'[k]| <= acc_limit[k] and |z| <= 256
// (acc_limit: EwAddFixedPoint); since |acc + B'| s_a[k] is the convolution's own output, that is
// an output of the convolution up to about 2^14 output steps of the largest-scale channel (m1
// keeps 15 bits of the largest R_k; a channel whose weights' scale is 2^p times smaller keeps
// 15 - p and so tolerates 2^p times smaller outputs, as the convolution's own requantization).
//
// The affine map (affine_fixed_point): y = x mul[k] + add[k] on INT8 codes x (step s_x), to
// step s_y; exactly z = x f[k] + add[k] / s_y with f[k] = s_x mul[k] / s_y. BS's ALU adds before
// it multiplies, and its operand is a whole number of x's steps (shifted left, never right): a
// bias there would be rounded to s_x, up to half an output step when f ~ 1. So BS multiplies
// alone and BN adds the bias at a step 2^14 times finer, then scales per channel:
//   BS  v  = x * m1[k]                                   exact (|x m1| < 2^22), BRDMA
//   BN  u* = ((v + (C[k] << a2)) * n[k]) >> T, ReLU      NRDMA, DATA_USE=BOTH
// with f[k] = F[k] 2^E[k] (1 <= F < 2), n[k] = 2^(max(E[k], E_lo) - E_lo) (exact powers of two),
// T = 14 - E_lo (capped at 63 and where a bias would leave INT32), m1[k] = round(f[k] 2^T / n[k])
// (in [2^14, 2^15) for every channel at or above E_lo: 15 bits), C[k] = round(add[k] / s_y 2^T /
// (n[k] 2^a2)), a2 the smallest shift that keeps every C in INT16. Then
//   |u* - z| <= eps(k, x) = |x| |m1[k] n[k] / 2^T - f[k]| + |C[k] 2^a2 n[k] / 2^T - add[k] / s_y|
// and the code is within 1/2 + eps of sat8(relu?(z)). A channel below E_lo keeps an absolute
// error of |x| 2^-(T+1) <= 2^(E_lo - 8) output steps; a larger n coarsens the channel's bias by n,
// so E_lo runs from max E down to max E - 14 and the choice with the smallest max_k eps(k, 128)
// wins (about 2^-8 output steps when every |f| <= 1 and every |add / s_y| <= 2^7). A channel with
// mul[k] = 0 is v = 0 and BN adds its bias, exactly as ONNX says.
//
// The per-channel product (channel_mul_fixed_point): y = x s[k] for INT8 codes x (step s_x) and a
// tensor's INT8 codes s[k], one per channel (step s_s: a squeeze-excitation scale), to step s_y;
// exactly z = q_x q_s f with f = s_x s_s / s_y. BN's multiplier takes the operand, so the
// rescale is the output convertor's:
//   BN   p  = (q_x * q_s) >> 0                  NRDMA, PER_KERNEL, one byte; exact (|p| <= 2^14)
//   out  u* = (p * m) / 2^t                     D_CVT_SCALE = m, D_CVT_SHIFT = t
// with t the largest shift <= 63 that keeps m = round(f 2^t) in INT16. Then |m - f 2^t| <= 1/2
// and, when t < 63, f 2^t >= 2^14 - 1/4 (else t + 1 would fit), so
//   |u* - z| = |p| |m - f 2^t| / 2^t <= |p| / 2^(t+1) <= |z| / (2^15 - 1/2),
// at most 2^-7 output steps for |z| <= 256 (beyond, the code saturates either way); BN's ReLU
// before the rescale commutes with it (f > 0). At t = 63 (f < 2^-49) every |z| < 2^-35.
// The code is the exact result rounded, or its neighbour when z is within 2^-7 of a half.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "firmware/dla/sdp.hpp"

namespace octasim::firmware::net {

// BS as a per-channel requantization: ((acc + (alu[k] << alu_shift)) * mul[k]) >> mul_shift.
struct BsFixedPoint {
  std::vector<std::int16_t> alu, mul;
  unsigned alu_shift = 0, mul_shift = 0;
  // |mul[k] - (acc_step[k] / to) 2^mul_shift|: the multipliers' rounding (r1[k] above).
  std::vector<double> mul_error;
  double bias_error = 0.0;  // max_k |alu[k] 2^alu_shift - bias[k] / acc_step[k]| |acc_step[k]|
};

// acc_step[k] != 0 of either sign, bias[k] real, `to` > 0. Throws models::graph::GraphError
// naming `who` when a factor |acc_step / to| exceeds 32767 or a bias needs a shift beyond 31.
[[nodiscard]] BsFixedPoint bs_fixed_point(const std::vector<double>& acc_step,
                                          const std::vector<double>& bias, double to,
                                          const std::string& who);

struct EwAddFixedPoint {
  BsFixedPoint bs;                 // to the intermediate step
  unsigned operand_shift = 0;      // a
  std::int16_t out_mul = 1;        // m2
  unsigned out_shift = 0;          // t2
  double intermediate_step = 0.0;  // s_i = s_e / 2^a
  double eps_bias = 0.0;           // eps_b
  double out_relative = 0.0;       // rho
  double out_gain = 0.0;           // g
  std::vector<double> acc_gain;    // g |r1[k]| / 2^t1
  std::vector<double> acc_limit;   // where eps < 1/2 (for |z| <= 256)

  // eps above for channel k, the main input `acc` and the exact result z (output steps).
  [[nodiscard]] double bound(std::size_t k, double acc, double z) const;
};

struct AffineFixedPoint {
  std::vector<std::int16_t> bs_mul;             // m1[k] (BS's ALU operand 0, shifts 0)
  std::vector<std::int16_t> bn_alu, bn_mul;     // C[k], n[k]
  unsigned bn_alu_shift = 0, bn_mul_shift = 0;  // a2, T
  std::vector<double> x_gain, bias_error;       // eps(k, x) = x_gain[k] |x| + bias_error[k]

  [[nodiscard]] double bound(std::size_t k, double x) const {
    return x_gain.at(k) * (x < 0 ? -x : x) + bias_error.at(k);
  }
};

// x_step = s_x > 0, mul and add per channel (add may be empty: 0), out_step = s_y > 0. Throws
// models::graph::GraphError naming `who` when the output step is 2^15 times finer than a
// channel's x_step * mul or a bias is beyond 2^31 output steps.
[[nodiscard]] AffineFixedPoint affine_fixed_point(double x_step, const std::vector<double>& mul,
                                                  const std::vector<double>& add, double out_step,
                                                  const std::string& who);

struct ChannelMulFixedPoint {
  std::int16_t out_mul = 1;  // m (D_CVT_SCALE)
  unsigned out_shift = 0;    // t (D_CVT_SHIFT)
  double relative = 0.0;     // |m - f 2^t| / (f 2^t): |u* - z| <= relative |z|

  [[nodiscard]] double bound(double z) const { return relative * (z < 0 ? -z : z); }
};

// x_step = s_x > 0, operand_step = s_s > 0, out_step = s_y > 0. Throws models::graph::GraphError
// naming `who` when f = s_x s_s / s_y exceeds SDP's INT16 output scale (32767).
[[nodiscard]] ChannelMulFixedPoint channel_mul_fixed_point(double x_step, double operand_step,
                                                           double out_step, const std::string& who);

// The add's pipeline for `unit` (kBn or kEw). Throws models::graph::GraphError naming `who` when
// no shift satisfies the constraints (an operand step finer than 2^-16 output steps, or an
// accumulator step beyond 32767 operand steps).
[[nodiscard]] EwAddFixedPoint ew_add_fixed_point(const std::vector<double>& acc_step,
                                                 const std::vector<double>& bias,
                                                 double operand_step, double out_step,
                                                 SdpEwUnit unit, const std::string& who);

}  // namespace octasim::firmware::net
