// Memory-to-memory FP16 SDP layers programmed by firmware/dla/sdp (SdpLayer{precision = kFp16}):
// per-channel FP16 bias / multiplier tables, ReLU, clamp, and the EW stage with an element-wise
// FP16 operand (ERDMA per element: ONNX Add / Mul of two tensors). Each layer's golden comes from
// models/ (sdp_model_config + run_sdp_layer) and must equal, bit for bit (NVDLA's SDP rule), an
// independent reference computed here in FP32 float arithmetic (NVDLA's FP16 pipeline: FP16
// operands widened to FP32, every operation rounded to FP32, the result rounded once to FP16);
// the functional device (in-process) and the cycle-level device (`octasim run --config nv_full`)
// must reproduce the golden bit for bit.
#include <cmath>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/sdp.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/float_format.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/firmware/e2e_util.hpp"
#include "tests/firmware/recording_mmio.hpp"

#ifndef OCTASIM_BIN
#error "OCTASIM_BIN must name the octasim executable"
#endif

namespace octasim::firmware {
namespace {

using octasim::test::RecordingMmio;
using octasim::test::run_octasim;
using octasim::test::TempDir;

constexpr unsigned kAtom = 32;  // nv_full
constexpr std::uint64_t kSrc = 0x80000000, kBiasTable = 0x80100000, kScaleTable = 0x80110000,
                        kEw = 0x80200000, kDst = 0x80400000;

struct SdpCase {
  std::string name;
  std::uint32_t width = 7, height = 5, channels = 20;
  bool bias = false, scale = false, bias_scale = false, relu = false;
  std::optional<float> clamp;
  std::optional<SdpEwOp> ew;
};

void PrintTo(const SdpCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<SdpCase> cases() {
  std::vector<SdpCase> v;
  SdpCase c;
  c.name = "relu_7x5x20";  // ONNX Relu
  c.relu = true;
  v.push_back(c);
  c = SdpCase{};
  c.name = "bias_scale_tables_relu_6x6x33";
  c.width = 6, c.height = 6, c.channels = 33;
  c.bias = c.scale = c.relu = true;
  v.push_back(c);
  c = SdpCase{};
  c.name = "batchnorm_relu_clamp6_5x4x16";  // ONNX BatchNormalization + Clip(0, 6)
  c.width = 5, c.height = 4, c.channels = 16;
  c.bias_scale = c.relu = true;
  c.clamp = 6.0f;
  v.push_back(c);
  c = SdpCase{};
  c.name = "ew_add_9x4x40";  // ONNX Add of two tensors
  c.width = 9, c.height = 4, c.channels = 40;
  c.ew = SdpEwOp::kAdd;
  v.push_back(c);
  c = SdpCase{};
  c.name = "bias_ew_mul_3x8x12";  // (x + b[c]) * e
  c.width = 3, c.height = 8, c.channels = 12;
  c.bias = true;
  c.ew = SdpEwOp::kMul;
  v.push_back(c);
  return v;
}

std::uint16_t h16(float v) {
  return models::fp16_from_float(v);
}
float f16(std::uint16_t bits) {
  return models::fp16_to_float(bits);
}

std::vector<std::uint8_t> image(const std::vector<std::uint16_t>& cube, const FeatureSurface& s) {
  std::vector<std::uint8_t> out(surface_bytes(s, Precision::kFp16, kAtom), 0);
  for (std::uint32_t c = 0; c < s.channels; ++c) {
    for (std::uint32_t y = 0; y < s.height; ++y) {
      for (std::uint32_t x = 0; x < s.width; ++x) {
        const std::uint16_t v = cube[(std::size_t{c} * s.height + y) * s.width + x];
        const std::uint64_t at = element_offset(s, Precision::kFp16, kAtom, x, y, c);
        out[at] = static_cast<std::uint8_t>(v);
        out[at + 1] = static_cast<std::uint8_t>(v >> 8);
      }
    }
  }
  return out;
}

struct Built {
  SdpLayer layer;
  std::vector<std::uint16_t> x, e;  // FP16 cubes, c-major
  std::vector<float> bias, scale;   // as given to the table helpers
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> loads;
};

Built build(const SdpCase& sc) {
  Built b;
  SdpLayer& l = b.layer;
  l.precision = Precision::kFp16;
  l.src = packed_surface(kSrc, sc.width, sc.height, sc.channels, kAtom);
  l.dst = packed_surface(kDst, sc.width, sc.height, sc.channels, kAtom);
  std::mt19937 rng(static_cast<std::uint32_t>(std::hash<std::string>{}(sc.name) & 0xffffffffu));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::size_t n = std::size_t{sc.width} * sc.height * sc.channels;
  b.x.resize(n);
  for (auto& v : b.x) v = h16(4.0f * u(rng));
  b.loads.emplace_back(kSrc, image(b.x, l.src));
  b.bias.resize(sc.channels);
  b.scale.resize(sc.channels);
  for (auto& v : b.bias) v = u(rng);
  for (auto& v : b.scale) v = 2.5f * u(rng);
  if (sc.bias) {
    l.bias = SdpPerChannel{kBiasTable, 0};
    b.loads.emplace_back(kBiasTable, sdp_fp16_table(b.bias, kAtom));
  }
  if (sc.scale) {
    l.scale = SdpPerChannel{kScaleTable, 0};
    b.loads.emplace_back(kScaleTable, sdp_fp16_table(b.scale, kAtom));
  }
  if (sc.bias_scale) {
    l.bias_scale = SdpBiasScale{kBiasTable, 0, 0};
    b.loads.emplace_back(kBiasTable, sdp_fp16_bias_scale_table(b.bias, b.scale, kAtom));
  }
  l.relu = sc.relu;
  if (sc.clamp) l.clamp_max = static_cast<std::int16_t>(h16(*sc.clamp));
  if (sc.ew) {
    const FeatureSurface es = packed_surface(kEw, sc.width, sc.height, sc.channels, kAtom);
    l.ew = SdpElementwise{es, *sc.ew};
    b.e.resize(n);
    for (auto& v : b.e) v = h16(3.0f * u(rng));
    b.loads.emplace_back(kEw, image(b.e, es));
  }
  return b;
}

// NVDLA's FP16 pipeline in float: BS (ALU, multiplier, ReLU), BN, EW, one rounding to FP16.
std::uint16_t reference(const SdpCase& sc, const Built& b, std::size_t i, std::uint32_t c) {
  float v = f16(b.x[i]);
  const float bias = f16(h16(b.bias[c])), scale = f16(h16(b.scale[c]));
  if (sc.bias || sc.bias_scale) v = v + bias;
  if (sc.bias_scale) v = v * scale;
  if (sc.scale) v = v * scale;
  if (sc.relu) v = std::max(v, 0.0f);
  if (sc.clamp) v = std::min(v, f16(h16(*sc.clamp)));
  if (sc.ew == SdpEwOp::kAdd) v = v + f16(b.e[i]);
  if (sc.ew == SdpEwOp::kMul) v = v * f16(b.e[i]);
  return h16(v);
}

// The golden from models/: the output surface after run_sdp_layer.
std::vector<std::uint8_t> golden(const Built& b) {
  HostMemory mem;
  for (const auto& [addr, bytes] : b.loads) mem.write(addr, bytes.data(), bytes.size());
  (void)models::ops::run_sdp_layer(sdp_model_config(b.layer, kAtom), mem);
  return mem.bytes(kDst,
                   static_cast<std::size_t>(surface_bytes(b.layer.dst, Precision::kFp16, kAtom)));
}

std::string record(const SdpCase& sc, const Built& b, const std::vector<std::uint8_t>& want,
                   const std::string& dir) {
  TraceWriter t;
  t.mem_init_zero(kDst, want.size());
  int i = 0;
  for (const auto& [addr, bytes] : b.loads) {
    t.mem_load(addr, sc.name + "_in" + std::to_string(i++) + ".dat", bytes);
  }
  t.wait_interrupt(program_sdp(t, b.layer, 0, kAtom));
  t.check_file(kDst, sc.name + "_golden.dat", want);
  return t.save(dir, sc.name + ".cfg");
}

class Fp16Sdp : public ::testing::TestWithParam<SdpCase> {};

TEST_P(Fp16Sdp, GoldenEqualsFloatReferenceBitForBit) {
  const SdpCase& sc = GetParam();
  const Built b = build(sc);
  const std::vector<std::uint8_t> want = golden(b);
  std::size_t nonzero = 0;
  for (std::uint32_t c = 0; c < sc.channels; ++c) {
    for (std::uint32_t y = 0; y < sc.height; ++y) {
      for (std::uint32_t x = 0; x < sc.width; ++x) {
        const std::size_t i = (std::size_t{c} * sc.height + y) * sc.width + x;
        const std::uint64_t at = element_offset(b.layer.dst, Precision::kFp16, kAtom, x, y, c);
        const auto got = static_cast<std::uint16_t>(want[at] | want[at + 1] << 8);
        const std::uint16_t ref = reference(sc, b, i, c);
        EXPECT_EQ(got, ref) << sc.name << " (" << x << ", " << y << ", " << c << "): golden "
                            << f16(got) << ", reference " << f16(ref);
        nonzero += (got & 0x7fffu) != 0;
      }
    }
  }
  EXPECT_GT(nonzero, b.x.size() / 3) << "degenerate output";
}

TEST_P(Fp16Sdp, FunctionalDeviceMatchesGolden) {
  const SdpCase& sc = GetParam();
  const Built b = build(sc);
  const std::vector<std::uint8_t> want = golden(b);
  TempDir dir(sc.name + "-functional");
  const std::string cfg = record(sc, b, want, dir.str());
  dla::FunctionalDevice device(load_hw_config("nv_full"));
  const trace::PlayResult r =
      trace::play(trace::parse_trace_file(cfg), device, trace::PlayerOptions{});
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].pass) << r.checks[0].description << ": " << r.checks[0].detail;
}

TEST_P(Fp16Sdp, CycleLevelDeviceMatchesGolden) {
  const SdpCase& sc = GetParam();
  const Built b = build(sc);
  const std::vector<std::uint8_t> want = golden(b);
  TempDir dir(sc.name + "-cycle");
  const std::string cfg = record(sc, b, want, dir.str());
  std::string out;
  ASSERT_EQ(run_octasim("run " + cfg + " --config nv_full", &out), 0) << out;
  EXPECT_NE(out.find("checks: 1 passed, 0 failed"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Cases, Fp16Sdp, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<SdpCase>& p) { return p.param.name; });

// The programming guide's element-wise setup with the EW sub-unit: ERDMA per element (DATA_USE
// ALU for a sum, MUL for a product; 2-byte FP16 elements), EW not bypassed with its ALU (SUM) or
// multiplier from memory, LUT bypassed, and for PROC_PRECISION FP16 the operand convertor not
// bypassed (the FP16 identity: offset 0, scale 1.0).
TEST(Fp16SdpProgramming, ElementWiseOperandRegisters) {
  namespace RD = regs::SDP_RDMA;
  namespace S = regs::SDP;
  for (const SdpEwOp op : {SdpEwOp::kAdd, SdpEwOp::kMul}) {
    SdpLayer l;
    l.precision = Precision::kFp16;
    l.src = packed_surface(kSrc, 5, 3, 20, kAtom);
    l.dst = packed_surface(kDst, 5, 3, 20, kAtom);
    FeatureSurface e = packed_surface(kEw + 0x100000000ull, 5, 3, 20, kAtom);
    e.line_stride = 256;  // a padded layout of its own
    e.surface_stride = 1024;
    l.ew = SdpElementwise{e, op};
    RecordingMmio m;
    EXPECT_EQ(program_sdp(m, l, 1, kAtom), regs::GLB::S_INTR_STATUS::SDP_DONE_STATUS0.lsb + 1);
    const bool add = op == SdpEwOp::kAdd;
    const std::uint32_t er = m.at(RD::D_ERDMA_CFG::kAddr);
    EXPECT_EQ(RD::D_ERDMA_CFG::ERDMA_DISABLE.get(er), 0u);
    EXPECT_EQ(RD::D_ERDMA_CFG::ERDMA_DATA_USE.get(er), add ? 1u : 0u);
    EXPECT_EQ(RD::D_ERDMA_CFG::ERDMA_DATA_SIZE.get(er), 1u);
    EXPECT_EQ(RD::D_ERDMA_CFG::ERDMA_DATA_MODE.get(er), 1u);  // per element
    EXPECT_EQ(RD::D_ERDMA_CFG::ERDMA_RAM_TYPE.get(er), 1u);   // MC
    EXPECT_EQ(m.at(RD::D_EW_BASE_ADDR_LOW::kAddr), static_cast<std::uint32_t>(kEw));
    EXPECT_EQ(m.at(RD::D_EW_BASE_ADDR_HIGH::kAddr), 1u);
    EXPECT_EQ(m.at(RD::D_EW_LINE_STRIDE::kAddr), 256u);
    EXPECT_EQ(m.at(RD::D_EW_SURFACE_STRIDE::kAddr), 1024u);
    const std::uint32_t fm = m.at(RD::D_FEATURE_MODE_CFG::kAddr);
    EXPECT_EQ(RD::D_FEATURE_MODE_CFG::FLYING_MODE.get(fm), 0u);
    EXPECT_EQ(RD::D_FEATURE_MODE_CFG::IN_PRECISION.get(fm), 2u);
    EXPECT_EQ(RD::D_FEATURE_MODE_CFG::PROC_PRECISION.get(fm), 2u);
    EXPECT_EQ(RD::D_FEATURE_MODE_CFG::OUT_PRECISION.get(fm), 2u);
    const std::uint32_t ew = m.at(S::D_DP_EW_CFG::kAddr);
    EXPECT_EQ(S::D_DP_EW_CFG::EW_BYPASS.get(ew), 0u);
    EXPECT_EQ(S::D_DP_EW_CFG::EW_ALU_BYPASS.get(ew), add ? 0u : 1u);
    EXPECT_EQ(S::D_DP_EW_CFG::EW_MUL_BYPASS.get(ew), add ? 1u : 0u);
    EXPECT_EQ(S::D_DP_EW_CFG::EW_LUT_BYPASS.get(ew), 1u);
    if (add) {
      EXPECT_EQ(S::D_DP_EW_CFG::EW_ALU_ALGO.get(ew), 2u);  // SUM
      EXPECT_EQ(m.at(S::D_DP_EW_ALU_CFG::kAddr), 1u);      // SRC MEM, CVT not bypassed
      EXPECT_EQ(m.at(S::D_DP_EW_ALU_CVT_SCALE_VALUE::kAddr), 0x3c00u);
      EXPECT_EQ(m.at(S::D_DP_EW_ALU_CVT_OFFSET_VALUE::kAddr), 0u);
    } else {
      EXPECT_EQ(m.at(S::D_DP_EW_MUL_CFG::kAddr), 1u);
      EXPECT_EQ(m.at(S::D_DP_EW_MUL_CVT_SCALE_VALUE::kAddr), 0x3c00u);
      EXPECT_EQ(m.at(S::D_DP_EW_MUL_CVT_OFFSET_VALUE::kAddr), 0u);
    }
    EXPECT_EQ(S::D_DATA_FORMAT::PROC_PRECISION.get(m.at(S::D_DATA_FORMAT::kAddr)), 2u);
    EXPECT_EQ(S::D_DATA_FORMAT::OUT_PRECISION.get(m.at(S::D_DATA_FORMAT::kAddr)), 2u);
    EXPECT_EQ(m.at(RD::D_BRDMA_CFG::kAddr) & 1u, 1u);  // BRDMA, NRDMA disabled
    EXPECT_EQ(m.at(RD::D_NRDMA_CFG::kAddr) & 1u, 1u);
  }
}

TEST(Fp16SdpProgramming, ClampIsTheFp16PatternInBn) {
  namespace S = regs::SDP;
  SdpLayer l;
  l.precision = Precision::kFp16;
  l.src = packed_surface(kSrc, 4, 4, 16, kAtom);
  l.dst = packed_surface(kDst, 4, 4, 16, kAtom);
  l.relu = true;
  l.clamp_max = static_cast<std::int16_t>(h16(6.0f));
  RecordingMmio m;
  (void)program_sdp(m, l, 0, kAtom);
  EXPECT_EQ(m.at(S::D_DP_BN_ALU_SRC_VALUE::kAddr), 0x4600u);  // 6.0
  const std::uint32_t bn = m.at(S::D_DP_BN_CFG::kAddr);
  EXPECT_EQ(S::D_DP_BN_CFG::BN_BYPASS.get(bn), 0u);
  EXPECT_EQ(S::D_DP_BN_CFG::BN_ALU_BYPASS.get(bn), 0u);
  EXPECT_EQ(S::D_DP_BN_CFG::BN_ALU_ALGO.get(bn), 1u);  // MIN
  const std::uint32_t bs = m.at(S::D_DP_BS_CFG::kAddr);
  EXPECT_EQ(S::D_DP_BS_CFG::BS_RELU_BYPASS.get(bs), 0u);
  EXPECT_FALSE(m.written(regs::SDP_RDMA::D_ERDMA_CFG::kAddr) &&
               (m.at(regs::SDP_RDMA::D_ERDMA_CFG::kAddr) & 1u) == 0u);
}

// Tables: FP16 round-to-nearest-even, little endian, zero-padded to whole C' surfaces (16 FP16
// channels on a 32-byte atom).
TEST(Fp16SdpTables, PerChannelAndBiasScaleLayout) {
  // 1.0, -2.5, 0.1 -> 0x2e66 (nearest), 65520 -> ties to even -> 65536 = +inf, 1 + 2^-11 -> 1.0
  // (tie to even), 1 + 3*2^-11 -> 1 + 2^-9 (tie to even upwards).
  const std::vector<float> v = {1.0f, -2.5f, 0.1f, 65520.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f};
  const std::vector<std::uint8_t> t = sdp_fp16_table(v, kAtom);
  ASSERT_EQ(t.size(), 32u);
  const auto at = [&](const std::vector<std::uint8_t>& b, std::size_t i) {
    return static_cast<std::uint16_t>(b[2 * i] | b[2 * i + 1] << 8);
  };
  EXPECT_EQ(at(t, 0), 0x3c00u);
  EXPECT_EQ(at(t, 1), 0xc100u);
  EXPECT_EQ(at(t, 2), 0x2e66u);
  EXPECT_EQ(at(t, 3), 0x7c00u);
  EXPECT_EQ(at(t, 4), 0x3c00u);
  EXPECT_EQ(at(t, 5), 0x3c02u);
  for (std::size_t i = 6; i < 16; ++i) EXPECT_EQ(at(t, i), 0u);
  EXPECT_EQ(sdp_fp16_table(std::vector<float>(17, 1.0f), kAtom).size(), 64u);

  const std::vector<std::uint8_t> bs =
      sdp_fp16_bias_scale_table({0.5f, -1.0f}, {2.0f, 0.25f}, kAtom);
  ASSERT_EQ(bs.size(), 64u);  // 16 channels x (bias, scale) x 2 bytes
  EXPECT_EQ(at(bs, 0), 0x3800u);
  EXPECT_EQ(at(bs, 1), 0x4000u);
  EXPECT_EQ(at(bs, 2), 0xbc00u);
  EXPECT_EQ(at(bs, 3), 0x3400u);
  EXPECT_EQ(at(bs, 4), 0u);
  EXPECT_THROW((void)sdp_fp16_bias_scale_table({1.0f}, {1.0f, 2.0f}, kAtom), FirmwareError);
}

TEST(Fp16SdpProgramming, Refusals) {
  SdpLayer base;
  base.precision = Precision::kFp16;
  base.src = packed_surface(kSrc, 4, 4, 16, kAtom);
  base.dst = packed_surface(kDst, 4, 4, 16, kAtom);
  const auto refused = [](const SdpLayer& l, const std::string& what) {
    RecordingMmio m;
    try {
      (void)program_sdp(m, l, 0, kAtom);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const FirmwareError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_FALSE(m.written(regs::SDP::D_OP_ENABLE::kAddr));
    }
  };
  SdpLayer l = base;
  // FP16's EW operand convertor is the identity the firmware programs (INT8/INT16 set theirs).
  l.ew = SdpElementwise{packed_surface(kEw, 4, 4, 16, kAtom), SdpEwOp::kAdd};
  l.ew->cvt.scale = 2;
  refused(l, "SDP: FP16 element-wise operand: the EW convertor is the FP16 identity");
  l = base;
  l.ew = SdpElementwise{packed_surface(kEw, 4, 4, 16, kAtom), SdpEwOp::kAdd, SdpEwUnit::kBn};
  l.scale = SdpPerChannel{kScaleTable, 0};
  refused(l, "an element-wise operand in BN and scale both need BN's multiplier");
  l = base;
  l.ew = SdpElementwise{packed_surface(kEw, 4, 3, 16, kAtom), SdpEwOp::kMul};
  refused(l, "element-wise operand cube 4x3x16 differs from the input cube 4x4x16");
  l = base;
  l.ew = SdpElementwise{packed_surface(kEw + 2, 4, 4, 16, kAtom), SdpEwOp::kAdd};
  refused(l, "SDP element-wise operand");
  l = base;
  l.scale = SdpPerChannel{kScaleTable, 3};
  refused(l, "SDP: FP16 operands take no shift");
  l = base;
  l.cvt.scale = 2;
  refused(l, "SDP: FP16 has no output convertor");
  l = base;
  l.scale = SdpPerChannel{kScaleTable, 0};
  l.clamp_max = static_cast<std::int16_t>(h16(6.0f));
  refused(l, "clamp_max and scale both need the BN stage");
}

}  // namespace
}  // namespace octasim::firmware
