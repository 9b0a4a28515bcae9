// FP16 CDP programming (firmware/dla/cdp, Precision::kFp16) and the FP16 LRN LUT: the registers
// an FP16 layer writes, the LUT layout worked out by hand from make_lrn_lut's rules, and the
// accuracy of LRN through the LUT (models/ops/cdp) against a double-precision LRN.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/cdp.hpp"
#include "models/numerics/float_format.hpp"
#include "models/ops/cdp.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

namespace C = regs::CDP;
namespace CR = regs::CDP_RDMA;

struct Capture final : Mmio {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> writes;
  void write32(std::uint32_t a, std::uint32_t v) override { writes.emplace_back(a, v); }
  std::uint32_t read32(std::uint32_t) override { return 0; }
  void wait_interrupt(unsigned) override {}
  [[nodiscard]] std::int64_t last(std::uint32_t addr) const {
    std::int64_t v = -1;
    for (const auto& [a, x] : writes) {
      if (a == addr) v = x;
    }
    return v;
  }
  [[nodiscard]] std::vector<std::uint32_t> all(std::uint32_t addr) const {
    std::vector<std::uint32_t> v;
    for (const auto& [a, x] : writes) {
      if (a == addr) v.push_back(x);
    }
    return v;
  }
};

// ONNX's test_lrn parameters: size 3, alpha 1e-4, beta 0.75, bias 1.
LrnParams onnx_params() {
  LrnParams p;
  p.local_size = 3;
  p.alpha = 1e-4;
  p.beta = 0.75;
  p.k = 1.0;
  return p;
}

CdpLayer fp16_layer() {
  CdpLayer l;
  l.precision = Precision::kFp16;
  l.src = packed_surface(0x80030000, 5, 5, 5, 32);
  l.dst = packed_surface(0x80040000, 5, 5, 5, 32);
  l.local_size = 3;
  const LrnLut lut = make_lrn_lut(onnx_params(), Precision::kFp16);
  l.lut = lut.config;
  l.lut_tables = lut.tables;
  return l;
}

TEST(LrnLutFp16, OnnxParametersLayout) {
  const LrnLut lut = make_lrn_lut(onnx_params(), Precision::kFp16);
  const models::LutConfig& c = lut.config;
  // a = 1e-4 / 3; the knee k / a = 30000 needs 256 * 2^7 = 32768 of LO coverage: s = 7.
  EXPECT_EQ(lut.fraction_bits, 0u);
  EXPECT_EQ(c.lo_index_select, 7);
  EXPECT_EQ(c.lo_start, 0);         // FP32 0.0
  EXPECT_EQ(c.lo_end, 0x47000000);  // FP32 32768.0
  EXPECT_EQ(c.le_function, models::LutLeFunction::kExponent);
  EXPECT_EQ(c.le_index_offset, 15);  // LE[0] samples 2^15 = the end of LO
  EXPECT_EQ(c.le_start, 0);
  EXPECT_EQ(c.le_end, 0x67000000);  // FP32 2^79 = 2^(15 + 64)
  EXPECT_EQ(c.uflow_priority, models::LutTableId::kLo);
  EXPECT_EQ(c.hybrid_priority, models::LutTableId::kLo);
  EXPECT_EQ(c.oflow_priority, models::LutTableId::kLe);
  EXPECT_EQ(c.le_slope_uflow_scale, 0);
  EXPECT_EQ(c.lo_slope_oflow_scale, 0);
  // Entries, as FP16 bit patterns computed independently (Python struct 'e' rounding):
  // f(0) = 1; f(32768) = (1 + 32768e-4/3)^-0.75 = 0.574827 -> 0x3899; f(2^79) -> 0.
  EXPECT_EQ(static_cast<std::uint16_t>(lut.tables.lo[0]), 0x3c00);
  EXPECT_EQ(static_cast<std::uint16_t>(lut.tables.lo[256]), 0x3899);
  EXPECT_EQ(static_cast<std::uint16_t>(lut.tables.le[0]), 0x3899);  // also f(2^15)
  EXPECT_EQ(static_cast<std::uint16_t>(lut.tables.le[64]), 0x0000);

  // bias 2, beta 0.5: f(0) = 2^-0.5 = 0.70710678 -> 1448 / 2048 = 0x39a8.
  LrnParams p = onnx_params();
  p.k = 2.0;
  p.beta = 0.5;
  const LrnLut lut2 = make_lrn_lut(p, Precision::kFp16);
  EXPECT_EQ(static_cast<std::uint16_t>(lut2.tables.lo[0]), 0x39a8);
  // k / a = 60000: s = 8 (65536).
  EXPECT_EQ(lut2.config.lo_index_select, 8);

  // Which table answers: S = 0 underflows both (LO's f(0)), S < 32768 hits LO only, larger S
  // hits LE only.
  const auto look = [&](float s) { return models::lut_lookup_fp16(c, lut.tables, s); };
  EXPECT_EQ(look(0.0f).outcome, models::LutOutcome::kUnderflow);
  EXPECT_EQ(look(0.0f).value, 1.0f);
  EXPECT_EQ(look(100.0f).outcome, models::LutOutcome::kLoHit);
  EXPECT_EQ(look(32767.0f).outcome, models::LutOutcome::kLoHit);
  EXPECT_EQ(look(32768.0f).outcome, models::LutOutcome::kLeHit);
  EXPECT_EQ(look(32768.0f).value, models::fp16_to_float(0x3899));
  EXPECT_EQ(look(4e9f).outcome, models::LutOutcome::kLeHit);
}

TEST(LrnLutFp16, RefusesAnOutOfRangeFirstEntry) {
  LrnParams p = onnx_params();
  p.k = 1e-7;  // k^-0.75 = 1.8e5 > 65504
  EXPECT_THROW((void)make_lrn_lut(p, Precision::kFp16), FirmwareError);
}

TEST(ProgramCdpFp16, WritesFp16FormatNanFlushAndFp32LutRegisters) {
  CdpLayer l = fp16_layer();
  l.nan_to_zero = true;
  Capture cap;
  EXPECT_EQ(program_cdp(cap, l, 1, 32), 3u);         // CDP_DONE_STATUS1
  EXPECT_EQ(cap.last(CR::D_DATA_FORMAT::kAddr), 2);  // INPUT_DATA FP16
  EXPECT_EQ(cap.last(C::D_DATA_FORMAT::kAddr), 2);
  EXPECT_EQ(cap.last(C::D_NAN_FLUSH_TO_ZERO::kAddr), 1);
  EXPECT_EQ(cap.last(C::D_LRN_CFG::kAddr), 0);                  // LEN3
  EXPECT_EQ(cap.last(C::S_LUT_INFO::kAddr), 0x07000f);          // LE offset 15, LO select 7
  EXPECT_EQ(cap.last(C::S_LUT_LO_END_LOW::kAddr), 0x47000000);  // 32768.0f
  EXPECT_EQ(cap.last(C::S_LUT_LO_END_HIGH::kAddr), 0);
  EXPECT_EQ(cap.last(C::S_LUT_LE_END_LOW::kAddr), 0x67000000);  // 2^79
  EXPECT_EQ(cap.last(C::S_LUT_LE_START_LOW::kAddr), 0);
  EXPECT_EQ(cap.last(C::S_LUT_CFG::kAddr), 0x50);  // EXPONENT, UFLOW LO, HYBRID LO, OFLOW LE
  // The tables: 65 LE then 257 LO entries, the FP16 patterns.
  const std::vector<std::uint32_t> data = cap.all(C::S_LUT_ACCESS_DATA::kAddr);
  ASSERT_EQ(data.size(), 65u + 257u);
  EXPECT_EQ(data[0], 0x3899u);   // LE[0] = f(2^15)
  EXPECT_EQ(data[65], 0x3c00u);  // LO[0] = f(0)
  EXPECT_EQ(data[65 + 256], 0x3899u);
  // Without the flush the register is written as 0.
  l.nan_to_zero = false;
  Capture cap2;
  (void)program_cdp(cap2, l, 0, 32);
  EXPECT_EQ(cap2.last(C::D_NAN_FLUSH_TO_ZERO::kAddr), 0);
  // Integer layers do not write it at all (their sequence is unchanged).
  CdpLayer i8 = l;
  i8.precision = Precision::kInt8;
  Capture cap3;
  (void)program_cdp(cap3, i8, 0, 32);
  EXPECT_EQ(cap3.last(C::D_NAN_FLUSH_TO_ZERO::kAddr), -1);
}

TEST(ProgramCdpFp16, RefusesConvertorsAndWideSelects) {
  const auto refuses = [](const CdpLayer& l, const std::string& needle) {
    Capture cap;
    try {
      (void)program_cdp(cap, l, 0, 32);
      ADD_FAILURE() << "expected FirmwareError containing '" << needle << "'";
    } catch (const FirmwareError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_TRUE(cap.writes.empty());
  };
  CdpLayer l = fp16_layer();
  l.out_cvt.shift = 3;
  refuses(l, "FP16 bypasses the input and output convertors");
  l = fp16_layer();
  l.in_cvt.scale = 2;
  refuses(l, "FP16 bypasses the input and output convertors");
  l = fp16_layer();
  l.lut.lo_index_select = 128;  // FP16 pipe: 8-bit signed
  refuses(l, "LUT LO index select 128 is outside -128..127");
  l = fp16_layer();
  l.lut.lo_index_select = 100;  // fine at FP16 (INT16 would refuse: 7 bits)
  Capture ok;
  EXPECT_NO_THROW((void)program_cdp(ok, l, 0, 32));
}

TEST(ProgramCdpFp16, ModelParamsCarryPrecisionAndFlush) {
  CdpLayer l = fp16_layer();
  l.nan_to_zero = true;
  const models::ops::CdpLayerParams m = cdp_model_params(l, 32);
  EXPECT_EQ(m.cfg.precision, models::ops::CdpPrecision::kFp16);
  EXPECT_TRUE(m.cfg.nan_to_zero);
  EXPECT_EQ(m.cfg.local_size, 3u);
  EXPECT_EQ(m.channels, 5u);
}

// ONNX's LRN in double: x / (bias + alpha / size * sum of x^2 over the window)^beta.
double exact_lrn(const std::vector<double>& x, unsigned c, const LrnParams& p) {
  const long half = static_cast<long>(p.local_size / 2);
  double sum = 0;
  for (long j = static_cast<long>(c) - half; j <= static_cast<long>(c) + half; ++j) {
    if (j >= 0 && j < static_cast<long>(x.size())) sum += x[j] * x[j];
  }
  return x[c] / std::pow(p.k + p.alpha / p.local_size * sum, p.beta);
}

// Worst relative error of LRN through the FP16 LUT over `pixels` random pixels of 16 channels
// with inputs scale * N(0, 1), asserting 1e-3 relative + 2^-24 absolute on every element.
double worst_lrn_error(const LrnParams& p, double scale, unsigned pixels, std::uint32_t seed) {
  const LrnLut lut = make_lrn_lut(p, Precision::kFp16);
  models::ops::CdpConfig cfg;
  cfg.precision = models::ops::CdpPrecision::kFp16;
  cfg.local_size = p.local_size;
  cfg.lut = lut.config;
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0.0, scale);
  constexpr unsigned kLanes = 16;
  double worst = 0;
  for (unsigned px = 0; px < pixels; ++px) {
    std::vector<std::uint16_t> raw(kLanes), out(kLanes);
    std::vector<double> x(kLanes);
    for (unsigned c = 0; c < kLanes; ++c) {
      raw[c] = models::fp16_from_double(n(rng));
      x[c] = models::decode_float(raw[c], models::kFp16);
    }
    std::vector<float> scratch(kLanes);
    models::ops::CdpStats st;
    models::ops::cdp_pixel_fp16(cfg, lut.tables, raw.data(), kLanes, kLanes, out.data(),
                                scratch.data(), st);
    for (unsigned c = 0; c < kLanes; ++c) {
      const double want = exact_lrn(x, c, p);
      const double got = models::decode_float(out[c], models::kFp16);
      const double err = std::fabs(got - want);
      EXPECT_LE(err, 1e-3 * std::fabs(want) + std::ldexp(1.0, -24))
          << "x " << x[c] << " got " << got << " want " << want;
      if (std::fabs(want) > std::ldexp(1.0, -14)) worst = std::max(worst, err / std::fabs(want));
    }
  }
  return worst;
}

TEST(LrnLutFp16, LrnWithinOneThousandthOfTheExactLrn) {
  double worst = 0;
  std::uint32_t seed = 1;
  for (const unsigned size : {3u, 5u, 9u}) {
    for (const double alpha : {1e-4, 2e-4, 1e-2}) {
      for (const double beta : {0.75, 0.5}) {
        for (const double bias : {1.0, 2.0}) {
          LrnParams p;
          p.local_size = size;
          p.alpha = alpha;
          p.beta = beta;
          p.k = bias;
          for (const double scale : {1.0, 2.0}) {
            SCOPED_TRACE("size " + std::to_string(size) + " alpha " + std::to_string(alpha) +
                         " beta " + std::to_string(beta) + " bias " + std::to_string(bias) +
                         " scale " + std::to_string(scale));
            worst = std::max(worst, worst_lrn_error(p, scale, 300, seed++));
          }
        }
      }
    }
  }
  std::cout << "worst relative error of FP16 LRN vs exact LRN: " << worst << "\n";
  EXPECT_LT(worst, 1e-3);
}

// The LUT alone over the LO range against f(S): FP16 entry rounding (2^-11 relative at most)
// plus the interpolation error; above LO the exponent table's octave interpolation.
TEST(LrnLutFp16, LutAccuracyInsideAndBeyondTheDensityTable) {
  for (const double beta : {0.75, 0.5}) {
    LrnParams p = onnx_params();
    p.beta = beta;
    const LrnLut lut = make_lrn_lut(p, Precision::kFp16);
    const double a = p.alpha / p.local_size;
    const auto f = [&](double s) { return std::pow(p.k + a * s, -p.beta); };
    const double lo_end = 32768.0;  // s = 7, worked out in OnnxParametersLayout
    double worst_lo = 0, worst_le = 0;
    for (double s = 0; s < lo_end; s += 0.37) {
      const float got =
          models::lut_lookup_fp16(lut.config, lut.tables, static_cast<float>(s)).value;
      const double sf = static_cast<float>(s);
      worst_lo = std::max(worst_lo, std::fabs(static_cast<double>(got) - f(sf)) / f(sf));
    }
    // Beyond: up to the largest square sum of three FP16 inputs, 3 * 65504^2.
    for (double s = lo_end; s < 3 * 65504.0 * 65504.0; s *= 1.01) {
      const float got =
          models::lut_lookup_fp16(lut.config, lut.tables, static_cast<float>(s)).value;
      const double sf = static_cast<float>(s);
      worst_le = std::max(worst_le, std::fabs(static_cast<double>(got) - f(sf)) / f(sf));
    }
    std::cout << "beta " << beta << ": LUT worst relative error, S < 32768: " << worst_lo
              << ", S >= 32768: " << worst_le << "\n";
    EXPECT_LT(worst_lo, std::ldexp(1.0, -11) + 2e-5);
    // An octave chord of S^-beta: at most (1 + 2^-beta) / 2 / 1.5^-beta - 1 near the middle
    // (8.1% for beta 0.75, 4.5% for 0.5); FP16 subnormal entries add a little at the far end.
    const double chord = (1 + std::pow(2.0, -beta)) / 2 / std::pow(1.5, -beta) - 1;
    EXPECT_LT(worst_le, chord * 1.1 + 0.01);
  }
}

}  // namespace
}  // namespace octasim::firmware
