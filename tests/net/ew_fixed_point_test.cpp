// firmware/net/ew_fixed_point.hpp: the multipliers and shifts of an element-wise Add on SDP's
// INT32 pipeline (and of the per-channel affine map), run through models/'s SDP datapath (the
// device's arithmetic, bit for bit) on random steps, biases, accumulators and operands. The
// exact result z = (s_a[k] acc + b[k] + s_e e) / s_y is computed here in long double; the
// device's code must lie within 1/2 + eps of sat8(relu?(z)), eps the derivation's bound, and
// eps < 1/2 wherever the header says (|acc + B'| <= acc_limit, |z| <= 256), so that the code is
// the exact result rounded or its neighbour. Nearly every code must be the exact one rounded.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/sdp.hpp"
#include "firmware/net/ew_fixed_point.hpp"
#include "models/graph/graph.hpp"
#include "models/ops/sdp.hpp"

namespace octasim::firmware::net {
namespace {

constexpr unsigned kAtom = 8;
constexpr std::uint32_t kChannels = 8;

long double sat8(long double v) {
  return std::clamp(v, -128.0L, 127.0L);
}
long double round_away(long double v) {
  return v < 0 ? -std::floor(-v + 0.5L) : std::floor(v + 0.5L);
}

// The SDP layer the compiler programs for the add (program_ew.cpp's choice of registers), as
// models/ runs it.
models::ops::SdpConfig add_layer(const EwAddFixedPoint& f, SdpEwUnit unit, bool relu) {
  SdpLayer l;
  l.precision = Precision::kInt8;
  l.src = packed_surface(0x80000000, 2, 2, kChannels, kAtom);
  l.dst = packed_surface(0x80010000, 2, 2, kChannels, kAtom);
  l.bias_scale = SdpBiasScale{0x80020000, f.bs.alu_shift, f.bs.mul_shift};
  l.relu = relu;
  SdpElementwise e(packed_surface(0x80030000, 2, 2, kChannels, kAtom), SdpEwOp::kAdd, unit);
  if (unit == SdpEwUnit::kBn) {
    e.shift = f.operand_shift;
    e.rescale = SdpRegisterScale{f.out_mul, f.out_shift};
  } else {
    e.cvt = SdpOperandConvertor{0, static_cast<std::int16_t>(1 << f.operand_shift), 0};
    l.cvt = SdpConvertor{0, f.out_mul, f.out_shift};
  }
  l.ew = e;
  return sdp_model_config(l, kAtom);
}

struct Steps {
  std::vector<double> acc_step, bias;
  double s_e = 0, s_y = 0;
};

Steps random_steps(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Steps s;
  const double s_x = 0.004 + 0.05 * u(rng);
  const double w = 0.001 + 0.02 * u(rng);
  for (std::uint32_t k = 0; k < kChannels; ++k) {
    // Channel scales up to 40 times apart, as a convolution's per-channel weight scales are.
    s.acc_step.push_back(s_x * w * std::pow(40.0, -u(rng)));
    s.bias.push_back((u(rng) - 0.5) * 4.0);
  }
  s.s_e = 0.005 + 0.1 * u(rng);
  s.s_y = 0.005 + 0.1 * u(rng);
  return s;
}

void check_add(SdpEwUnit unit, bool relu, unsigned seed) {
  std::mt19937 rng(seed);
  std::size_t samples = 0, exact = 0;
  for (int set = 0; set < 40; ++set) {
    const Steps s = random_steps(rng);
    const EwAddFixedPoint f = ew_add_fixed_point(s.acc_step, s.bias, s.s_e, s.s_y, unit, "t");
    // s_i 2^a = s_e: the operand is exact.
    EXPECT_DOUBLE_EQ(std::ldexp(f.intermediate_step, static_cast<int>(f.operand_shift)), s.s_e);
    const double acc_max = *std::max_element(s.acc_step.begin(), s.acc_step.end());
    for (std::uint32_t k = 0; k < kChannels; ++k) {
      // The header's claim: eps < 1/2 for accumulators worth 2^13 output steps at the largest
      // channel's step.
      EXPECT_GE(f.acc_limit[k] * acc_max, std::ldexp(s.s_y, 13)) << "set " << set << " k " << k;
    }
    const models::ops::SdpConfig cfg = add_layer(f, unit, relu);
    const models::ops::SdpDatapath dp(cfg);
    std::uniform_int_distribution<int> pick_k(0, kChannels - 1), pick_e(-128, 127);
    std::uniform_real_distribution<double> pick_z(-300.0, 300.0);
    for (int n = 0; n < 2000; ++n) {
      const auto k = static_cast<std::size_t>(pick_k(rng));
      const int e = pick_e(rng);
      const double target = pick_z(rng);
      const auto acc = static_cast<std::int32_t>(
          std::llround((target * s.s_y - s.bias[k] - s.s_e * e) / s.acc_step[k]));
      const long double z =
          (static_cast<long double>(s.acc_step[k]) * acc + s.bias[k] + s.s_e * e) / s.s_y;
      const long double ideal = sat8(relu ? std::max(z, 0.0L) : z);
      models::ops::SdpOperands ops;
      ops.bs_alu = f.bs.alu[k];
      ops.bs_mul = f.bs.mul[k];
      (unit == SdpEwUnit::kBn ? ops.bn_alu : ops.ew_alu) = static_cast<std::int16_t>(e);
      models::ops::SdpStats stats;
      const std::int32_t u = dp.process(acc, ops, stats);
      const double eps = f.bound(k, acc, static_cast<double>(z));
      ASSERT_LE(std::abs(static_cast<long double>(u) - ideal), 0.5L + eps + 1e-9L)
          << "set " << set << " k " << k << " acc " << acc << " e " << e << " z " << double(z);
      const double b = acc + std::ldexp(double(f.bs.alu[k]), static_cast<int>(f.bs.alu_shift));
      if (std::abs(b) <= f.acc_limit[k] && std::abs(z) <= 256.0L) {
        ASSERT_LT(eps, 0.5) << "set " << set << " k " << k << " acc " << acc;
      }
      ++samples;
      exact += static_cast<long double>(u) == round_away(ideal) ? 1 : 0;
    }
  }
  // Not merely within a code: the roundings inside cost far less than the output's.
  EXPECT_GE(static_cast<double>(exact), 0.99 * static_cast<double>(samples));
}

TEST(EwAddFixedPoint, BnUnitWithReluWithinBound) {
  check_add(SdpEwUnit::kBn, true, 1);
}

TEST(EwAddFixedPoint, BnUnitWithoutReluWithinBound) {
  check_add(SdpEwUnit::kBn, false, 2);
}

TEST(EwAddFixedPoint, EwUnitConvertorWithinBound) {
  check_add(SdpEwUnit::kEw, false, 3);
}

TEST(EwAddFixedPoint, ShiftsAsTheHeaderChooses) {
  // s_e = s_y = 1/16, one channel at acc step 2^-12: (3) allows a <= 16, (2) a <= 22, BN's
  // operand a <= 23 -> a = 16, s_i = 2^-20; R = 2^-12 / 2^-20 = 256 -> t1 = 6 (256 * 2^6 =
  // 16384, 2^7 would be 32768); s_i / s_y = 2^-16 -> m2 = 2^14 at t2 = 30.
  const EwAddFixedPoint f =
      ew_add_fixed_point({std::ldexp(1.0, -12)}, {0.0}, 0.0625, 0.0625, SdpEwUnit::kBn, "t");
  EXPECT_EQ(f.operand_shift, 16U);
  EXPECT_EQ(f.bs.mul_shift, 6U);
  EXPECT_EQ(f.bs.mul[0], 16384);
  EXPECT_EQ(f.out_mul, 16384);
  EXPECT_EQ(f.out_shift, 30U);
  EXPECT_EQ(f.bs.mul_error[0], 0.0);
  EXPECT_EQ(f.out_relative, 0.0);
  // EW's convertor scale is INT16: a <= 14.
  const EwAddFixedPoint g =
      ew_add_fixed_point({std::ldexp(1.0, -12)}, {0.0}, 0.0625, 0.0625, SdpEwUnit::kEw, "t");
  EXPECT_EQ(g.operand_shift, 14U);
}

TEST(EwAddFixedPoint, RefusesAnOperandFinerThanTheDatapath) {
  try {
    (void)ew_add_fixed_point({0.01}, {0.0}, 1e-9, 1.0, SdpEwUnit::kBn, "Add 'a'");
    ADD_FAILURE() << "accepted";
  } catch (const models::graph::GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("Add 'a': no intermediate step"), std::string::npos)
        << e.what();
  }
}

// The affine map's SDP layer as program_ew.cpp programs it: BS multiplies (ALU operand 0), BN
// adds and scales per channel, ReLU after.
models::ops::SdpConfig affine_layer(const AffineFixedPoint& f, bool relu) {
  SdpLayer l;
  l.precision = Precision::kInt8;
  l.src = packed_surface(0x80000000, 2, 2, kChannels, kAtom);
  l.dst = packed_surface(0x80010000, 2, 2, kChannels, kAtom);
  l.bias_scale = SdpBiasScale{0x80020000, 0, 0};
  l.bn_bias_scale = SdpBiasScale{0x80030000, f.bn_alu_shift, f.bn_mul_shift};
  l.relu = relu;
  return sdp_model_config(l, kAtom);
}

TEST(AffineFixedPoint, EveryCodeWithinBound) {
  // y = x mul[k] + add[k] on INT8 codes x (BatchNormalization not after a convolution): every
  // code of every channel; multipliers of both signs, up to 2^20 apart, one of them 0.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::size_t samples = 0, exact = 0, smalls = 0;
  for (int set = 0; set < 40; ++set) {
    const bool relu = set % 2 == 1;
    const double s_x = 0.01 + 0.04 * (u(rng) + 1.0), s_y = 0.01 + 0.1 * (u(rng) + 1.0);
    std::vector<double> mul(kChannels), add(kChannels);
    for (std::uint32_t k = 0; k < kChannels; ++k) {
      mul[k] = 3.0 * u(rng) * std::pow(2.0, -20.0 * (u(rng) + 1.0) / 2.0);
      add[k] = 2.0 * u(rng);
    }
    mul[set % kChannels] = 0.0;
    if (set % 3 == 0) {  // every |f| <= 1 and |add / s_y| <= 2^7: the header's "about 2^-8"
      for (std::uint32_t k = 0; k < kChannels; ++k) {
        mul[k] *= s_y / (3.0 * s_x);
        add[k] *= std::min(1.0, 64.0 * s_y);
      }
    }
    bool small = true;
    for (std::uint32_t k = 0; k < kChannels; ++k) {
      small = small && std::abs(s_x * mul[k] / s_y) <= 1.0 && std::abs(add[k] / s_y) <= 128.0;
    }
    smalls += small ? 1 : 0;
    const AffineFixedPoint f = affine_fixed_point(s_x, mul, add, s_y, "t");
    const models::ops::SdpDatapath dp(affine_layer(f, relu));
    for (std::uint32_t k = 0; k < kChannels; ++k) {
      for (int x = -128; x <= 127; ++x) {
        const long double z = (static_cast<long double>(s_x) * mul[k] * x + add[k]) / s_y;
        const long double ideal = sat8(relu ? std::max(z, 0.0L) : z);
        models::ops::SdpOperands ops;
        ops.bs_mul = f.bs_mul[k];
        ops.bn_alu = f.bn_alu[k];
        ops.bn_mul = f.bn_mul[k];
        models::ops::SdpStats stats;
        const std::int32_t got = dp.process(x, ops, stats);
        const double eps = f.bound(k, x);
        ASSERT_LT(eps, 0.5) << "set " << set << " k " << k << " x " << x;
        // The header: about 2^-8 output steps when every |f| <= 1 and |add / s_y| <= 2^7.
        if (small) {
          EXPECT_LT(eps, 1.0 / 128) << "set " << set << " k " << k << " x " << x;
        }
        ASSERT_LE(std::abs(got - ideal), 0.5L + eps + 1e-9L)
            << "set " << set << " k " << k << " x " << x;
        ++samples;
        exact += static_cast<long double>(got) == round_away(ideal) ? 1 : 0;
      }
    }
  }
  EXPECT_GE(smalls, 10U);
  EXPECT_GE(static_cast<double>(exact), 0.99 * static_cast<double>(samples));
}

TEST(AffineFixedPoint, ShiftsAsTheHeaderChooses) {
  // s_x = s_y: f = mul = {1.5, 0.3}, no bias: E = {0, -2}; the candidates E_lo = 0, -1, -2 give
  // T = 14, 15, 16 and n = {1, 1}, {2, 1}, {4, 1}; m1[1] = 0.3 * 2^T = 4915.2, 9830.4, 19660.8,
  // rounded: errors 0.2 / 2^14, 0.4 / 2^15, 0.2 / 2^16 (m1[0] = 24576 is exact in each), so
  // E_lo = -2 has the smallest bound: m1 = {1.5 * 2^16 / 4, 19661}.
  const AffineFixedPoint f = affine_fixed_point(0.5, {1.5, 0.3}, {0.0, 0.0}, 0.5, "t");
  EXPECT_EQ(f.bn_mul_shift, 16U);
  EXPECT_EQ(f.bn_alu_shift, 0U);
  EXPECT_EQ(f.bs_mul, (std::vector<std::int16_t>{24576, 19661}));
  EXPECT_EQ(f.bn_mul, (std::vector<std::int16_t>{4, 1}));
  EXPECT_EQ(f.bn_alu, (std::vector<std::int16_t>{0, 0}));
  // With biases {2, -1} (output steps) and exact multipliers {1.5, 0.375} every candidate is exact;
  // the first, E_lo = 0, stays: T = 14, n = 1, and the bias 2 * 2^14 = 32768 needs a2 = 1.
  const AffineFixedPoint g = affine_fixed_point(0.5, {1.5, 0.375}, {1.0, -0.5}, 0.5, "t");
  EXPECT_EQ(g.bn_mul_shift, 14U);
  EXPECT_EQ(g.bn_alu_shift, 1U);
  EXPECT_EQ(g.bs_mul, (std::vector<std::int16_t>{24576, 6144}));
  EXPECT_EQ(g.bn_mul, (std::vector<std::int16_t>{1, 1}));
  EXPECT_EQ(g.bn_alu, (std::vector<std::int16_t>{16384, -8192}));
}

}  // namespace
}  // namespace octasim::firmware::net
