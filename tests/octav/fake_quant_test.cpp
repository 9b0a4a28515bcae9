// models::clip_to_fake_quant: an SDP (models::ops::SdpDatapath) programmed with its registers
// snaps integer data to the B-bit grid of the clip s. The ideal (tests/octav/fake_quant_ideal.hpp)
// is computed independently, in exact rational arithmetic on s's binary value:
//   q* = round(clamp(x, lo, s) * M / s),  A* = round(q* * s / M)  (round half away from zero),
// saturated to the output precision. Checked for every input of INT8 data and the interesting
// range of INT16 data, over random, integer, near-tie and tiny clips: the codes after BN equal
// q*, the outputs are within 1 of A*, and they take at most 2M + 1 (signed) / M + 1 values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "models/numerics/int_range.hpp"
#include "models/ops/sdp.hpp"
#include "models/quant/clip_convertor.hpp"
#include "tests/octav/fake_quant_ideal.hpp"

namespace octasim::models {
namespace {

using test::Ideal;
using test::ideal;

ops::SdpConfig sdp_config(const FakeQuantParams& p, Signedness sign, IntPrecision out) {
  ops::SdpConfig c;
  const ops::SdpPrecision prec =
      out == IntPrecision::kInt8 ? ops::SdpPrecision::kInt8 : ops::SdpPrecision::kInt16;
  c.in_precision = c.proc_precision = c.out_precision = prec;
  const FakeQuantStages st = fake_quant_stages(p, sign);
  c.bs = st.bs;
  c.bn = st.bn;
  c.cvt = st.cvt;
  return c;
}

struct Tally {
  long points = 0, exact = 0, clips = 0, code_misses = 0;
};

// Every check for one clip over the inputs `xs`. With `exact_codes`, the code after BN (before
// the convertor) must be the ideal code wherever the clamp at s does not decide it (x <= s) and
// the output within 1 of the ideal; without, a code may be the ideal's neighbour (counted), the
// output then within 1 + s/M.
void check_clip(double s, int bits, Signedness sign, IntPrecision out,
                const std::vector<std::int64_t>& xs, Tally& tally, bool exact_codes = true) {
  const FakeQuantParams p = clip_to_fake_quant(s, bits, sign);
  const int m = fake_quant_max_code(bits, sign);
  const ops::SdpConfig cfg = sdp_config(p, sign, out);
  const ops::SdpDatapath dp(cfg);
  ops::SdpStats stats;
  std::set<std::int32_t> levels;
  const double step = std::ceil(s / m);
  for (std::int64_t x : xs) {
    const auto in = static_cast<std::int32_t>(x);
    const Ideal want = ideal(x, s, m, sign, out);
    const std::int32_t got = dp.process(in, ops::SdpOperands{}, stats);
    levels.insert(got);
    const std::int32_t code =
        ops::SdpDatapath::x_stage(cfg.bn, ops::SdpDatapath::x_stage(cfg.bs, in, 0, 0), 0, 0);
    const bool code_miss = static_cast<double>(x) <= s && code != want.code;
    const auto err = static_cast<double>(std::abs(static_cast<std::int64_t>(got) - want.value));
    ASSERT_LE(err, code_miss && !exact_codes ? 1.0 + step : 1.0)
        << "s " << s << " (" << std::hexfloat << s << std::defaultfloat << ") B " << bits
        << (sign == Signedness::kSigned ? " signed" : " unsigned") << " x " << x << ": got " << got
        << ", ideal " << want.value;
    if (code_miss) {
      ASSERT_FALSE(exact_codes) << "s " << s << " B " << bits << " x " << x << ": code " << code
                                << ", ideal " << static_cast<std::int64_t>(want.code);
      ASSERT_LE(std::abs(code - static_cast<std::int64_t>(want.code)), 1);
      ++tally.code_misses;
    }
    tally.exact += got == want.value ? 1 : 0;
    ++tally.points;
  }
  const std::size_t max_levels = sign == Signedness::kSigned ? 2u * m + 1 : m + 1u;
  ASSERT_LE(levels.size(), max_levels) << "s " << s << " B " << bits;
  ++tally.clips;
}

std::vector<std::int64_t> int8_inputs() {
  std::vector<std::int64_t> xs;
  for (std::int64_t x = -128; x <= 127; ++x) xs.push_back(x);
  return xs;
}

// Every INT16 input within 2 of [-s, s], plus the extremes and a random sample.
std::vector<std::int64_t> int16_inputs(double s, std::mt19937& rng) {
  std::vector<std::int64_t> xs;
  const auto reach = static_cast<std::int64_t>(std::fmin(std::ceil(s) + 2.0, 32768.0));
  for (std::int64_t x = -reach; x <= std::min<std::int64_t>(reach, 32767); ++x) xs.push_back(x);
  std::uniform_int_distribution<std::int64_t> any(-32768, 32767);
  for (int i = 0; i < 200; ++i) xs.push_back(any(rng));
  xs.push_back(-32768);
  xs.push_back(32767);
  return xs;
}

constexpr Signedness kSigns[] = {Signedness::kSigned, Signedness::kUnsigned};

TEST(FakeQuant, Int8DataRandomClips) {
  std::mt19937 rng(15);
  std::uniform_real_distribution<double> log_s(std::log(0.3), std::log(200.0));
  const std::vector<std::int64_t> xs = int8_inputs();
  Tally t;
  for (int i = 0; i < 3000; ++i) {
    const double s = static_cast<float>(std::exp(log_s(rng)));  // OCTAV reports FP32
    for (int bits : {2, 3, 4, 5, 6, 8}) {
      for (Signedness sign : kSigns) {
        check_clip(s, bits, sign, IntPrecision::kInt8, xs, t);
        if (HasFatalFailure()) return;
      }
    }
  }
  EXPECT_EQ(t.clips, 3000 * 6 * 2);
  // Within one unit everywhere; exact almost everywhere (only the convertor's last place).
  EXPECT_GT(static_cast<double>(t.exact), 0.999 * static_cast<double>(t.points));
}

// Clips where x * M / s is exactly k + 1/2 for some input (a tie, which the ideal rounds away
// from zero) or a few FP32 steps either side of it: what one INT16 multiplier gets wrong.
TEST(FakeQuant, Int8DataNearTies) {
  const std::vector<std::int64_t> xs = int8_inputs();
  Tally t;
  for (int bits : {2, 3, 4, 8}) {
    for (Signedness sign : kSigns) {
      const int m = fake_quant_max_code(bits, sign);
      for (int x = 1; x <= 127; x += 3) {
        for (int k = 0; k < m; k += std::max(1, m / 7)) {
          const auto tie = static_cast<float>(x * static_cast<double>(m) / (k + 0.5));
          if (!(tie > 0.25f && tie < 200.0f)) continue;
          float s = tie;
          for (int step = 0; step < 3; ++step) s = std::nextafter(s, 0.0f);
          for (int step = 0; step < 7; ++step, s = std::nextafter(s, 1e9f)) {
            check_clip(s, bits, sign, IntPrecision::kInt8, xs, t);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
  EXPECT_GT(t.clips, 3000);
  EXPECT_GT(static_cast<double>(t.exact), 0.999 * static_cast<double>(t.points));
}

// The checker above catches what it should: the same stages with the code from ONE INT16
// multiplier (BN's, the best 15-bit approximation of M/s; BS passes x) miss the ideal by a whole
// code step (s/M, more than one unit) at near-tie clips, which clip_to_fake_quant's two
// multipliers get right (Int8DataNearTies).
TEST(FakeQuant, OneMultiplierMissesNearTies) {
  const int bits = 4, m = 7;
  long worse_than_one = 0;
  for (int x = 1; x <= 127; x += 2) {
    for (int k = 0; k < m; ++k) {
      float s = static_cast<float>(x * static_cast<double>(m) / (k + 0.5));
      if (!(s > 8.0f && s < 128.0f)) continue;
      for (int step = 0; step < 4; ++step, s = std::nextafter(s, 0.0f)) {
        FakeQuantParams p = clip_to_fake_quant(s, bits, Signedness::kSigned);
        const double rate = m / static_cast<double>(s);
        double best = rate;
        for (int t = 0; t <= 63; ++t) {
          const double r2 = std::fmin(std::round(std::ldexp(rate, t)), 32767.0);
          const double err = std::fabs(std::ldexp(r2, -t) - rate);
          if (err < best) {
            best = err;
            p.r2 = static_cast<std::int16_t>(r2);
            p.t2 = static_cast<std::uint8_t>(t);
          }
        }
        p.r1 = 1;
        p.lo = -m;
        p.lo_shift = 0;
        const ops::SdpDatapath dp(sdp_config(p, Signedness::kSigned, IntPrecision::kInt8));
        ops::SdpStats st;
        for (std::int64_t v = -128; v <= 127; ++v) {
          const Ideal want = ideal(v, s, m, Signedness::kSigned, IntPrecision::kInt8);
          const std::int32_t got = dp.process(static_cast<std::int32_t>(v), {}, st);
          worse_than_one += std::abs(got - want.value) > 1 ? 1 : 0;
        }
      }
    }
  }
  EXPECT_GT(worse_than_one, 10);
}

TEST(FakeQuant, Int8DataIntegerHalfAndTinyClips) {
  const std::vector<std::int64_t> xs = int8_inputs();
  Tally t;
  std::vector<double> clips = {0.01, 0.3, 0.5, 0.7, 0.999, 1.0, 1.5, 2.5};
  for (int v = 1; v <= 130; ++v) {
    clips.push_back(v);
    clips.push_back(v + 0.5);
  }
  for (double s : clips) {
    for (int bits : {2, 3, 4, 7, 8}) {
      for (Signedness sign : kSigns) {
        check_clip(s, bits, sign, IntPrecision::kInt8, xs, t);
        if (HasFatalFailure()) return;
      }
    }
  }
  EXPECT_EQ(t.clips, static_cast<long>(clips.size()) * 5 * 2);
}

TEST(FakeQuant, Int16DataRandomClips) {
  std::mt19937 rng(16);
  std::uniform_real_distribution<double> log_s(std::log(0.5), std::log(40000.0));
  Tally t;
  for (int i = 0; i < 60; ++i) {
    const double s = static_cast<float>(std::exp(log_s(rng)));
    const std::vector<std::int64_t> xs = int16_inputs(s, rng);
    for (int bits : {2, 4, 8, 10}) {
      for (Signedness sign : kSigns) {
        check_clip(s, bits, sign, IntPrecision::kInt16, xs, t);
        if (HasFatalFailure()) return;
      }
    }
  }
  // The convertor's INT16 scale carries s/M to 2^-15: with codes in the hundreds and s in the
  // thousands, q * s/M lands within that of a rounding boundary often enough that about 6% of
  // the outputs are 1 off (never more).
  EXPECT_GT(static_cast<double>(t.exact), 0.9 * static_cast<double>(t.points));
}

// B >= 12 on INT16 data: thousands of inputs below s and M in the thousands narrow the window of
// products that give every input its exact code below what two INT16 multipliers resolve, so
// now and then an input next to a rounding boundary gets the neighbouring code (an error of
// one code step, s/M units). Counted, and rare.
TEST(FakeQuant, Int16DataWideCodes) {
  std::mt19937 rng(18);
  std::uniform_real_distribution<double> log_s(std::log(0.5), std::log(40000.0));
  Tally t;
  for (int i = 0; i < 40; ++i) {
    const double s = static_cast<float>(std::exp(log_s(rng)));
    const std::vector<std::int64_t> xs = int16_inputs(s, rng);
    for (int bits : {12, 16}) {
      for (Signedness sign : kSigns) {
        check_clip(s, bits, sign, IntPrecision::kInt16, xs, t, false);
        if (HasFatalFailure()) return;
      }
    }
  }
  EXPECT_LT(static_cast<double>(t.code_misses), 1e-3 * static_cast<double>(t.points));
  EXPECT_GT(static_cast<double>(t.exact), 0.9 * static_cast<double>(t.points));
}

TEST(FakeQuant, ZeroAndHugeClipsGiveZero) {
  // s == 0: a tensor without a nonzero element; s > 65536 M: no INT16 input reaches code 1.
  for (double s : {0.0, 65536.0 * 7 + 1, 1e30}) {
    const FakeQuantParams p = clip_to_fake_quant(s, 4, Signedness::kSigned);
    const ops::SdpDatapath dp(sdp_config(p, Signedness::kSigned, IntPrecision::kInt16));
    ops::SdpStats st;
    for (std::int32_t x : {-32768, -5, 0, 1, 32767}) {
      EXPECT_EQ(dp.process(x, ops::SdpOperands{}, st), 0) << s;
    }
  }
}

TEST(FakeQuant, RegisterFieldsInRange) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> log_s(std::log(0.01), std::log(1e6));
  for (int i = 0; i < 300; ++i) {
    const double s = std::exp(log_s(rng));
    for (int bits = 2; bits <= 16; ++bits) {
      for (Signedness sign : kSigns) {
        const FakeQuantParams p = clip_to_fake_quant(s, bits, sign);
        if (s > 65536.0 * fake_quant_max_code(bits, sign)) {
          EXPECT_EQ(p.r1, 0);  // every output 0
          EXPECT_EQ(p.cvt.scale, 0);
          continue;
        }
        EXPECT_GT(p.r1, 0);
        EXPECT_GT(p.r2, 0);
        EXPECT_LE(p.t2, 63);
        EXPECT_LE(p.lo_shift, 63);
        EXPECT_LE(p.lo, 0);
        EXPECT_GE(p.hi, 0);
        EXPECT_EQ(p.cvt.offset, 0);
        EXPECT_GE(p.cvt.scale, 0);
        EXPECT_LE(p.cvt.shift, 63);
        if (sign == Signedness::kUnsigned) {
          EXPECT_EQ(p.lo, 0);
        }
      }
    }
  }
}

TEST(FakeQuant, MaxCodeAndRefusals) {
  EXPECT_EQ(fake_quant_max_code(4, Signedness::kSigned), 7);
  EXPECT_EQ(fake_quant_max_code(4, Signedness::kUnsigned), 15);
  EXPECT_EQ(fake_quant_max_code(16, Signedness::kSigned), 32767);
  EXPECT_THROW((void)clip_to_fake_quant(-1.0, 4, Signedness::kSigned), std::invalid_argument);
  EXPECT_THROW((void)clip_to_fake_quant(std::nan(""), 4, Signedness::kSigned),
               std::invalid_argument);
  EXPECT_THROW((void)clip_to_fake_quant(3.0, 17, Signedness::kSigned), std::invalid_argument);
}

}  // namespace
}  // namespace octasim::models
