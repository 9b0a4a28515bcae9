// FP16 convolution layers end to end on nv_full: ConvLayer{precision = kFp16} programmed by
// firmware/dla/conv (program_conv) with its flying SDP stage (per-channel FP16 bias/multiplier
// tables from sdp_fp16_table / sdp_fp16_bias_scale_table, ReLU, clamp), recorded as traces whose
// golden output comes from models/ (run_conv_model: run_conv_fp16 + the FP16 SDP pipeline),
// played on the functional device in-process and by `octasim run --config nv_full` on the
// cycle-level device (its own process). The device must reproduce the golden bit for bit, and
// the golden must lie within NVDLA's FP16 CC threshold (v1_ias_precision.rst, check_cc_direct)
// of an independent double-precision convolution + SDP computed here.
#include <cmath>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/conv.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/float_format.hpp"
#include "models/ops/conv_fp16.hpp"
#include "models/precision/thresholds.hpp"
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

constexpr std::uint64_t kInput = 0x80000000, kWeights = 0x80100000, kBias = 0x80180000,
                        kScale = 0x80190000, kOutput = 0x80200000;

struct Fp16Case {
  std::string name;
  std::uint32_t width = 8, height = 8, channels = 16;
  std::uint32_t kernels = 16, kernel_width = 3, kernel_height = 3;
  std::uint32_t stride_x = 1, stride_y = 1, dilation_x = 1, dilation_y = 1;
  std::uint32_t pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;
  float pad_value = 0.0f;
  enum class Ops {
    kNone,
    kBiasOnly,
    kScaleOnly,
    kBiasAndScale,
    kBiasScaleTable
  } ops = Ops::kBiasOnly;
  bool relu = true;
  std::optional<float> clamp;
};

void PrintTo(const Fp16Case& c, std::ostream* os) {
  *os << c.name;
}

// nv_full: 32-byte atoms (16 FP16 channels), atomic-C 64, atomic-K 32 (FP16 kernel groups of 16).
std::vector<Fp16Case> cases() {
  std::vector<Fp16Case> v;
  Fp16Case c;
  c.name = "pad1_c80_k32_two_groups";  // 80 channels: two atomic-C blocks + 16
  c.width = 9, c.height = 7, c.channels = 80, c.kernels = 32;
  c.pad_left = c.pad_right = c.pad_top = c.pad_bottom = 1;
  c.pad_value = 0.5f;
  v.push_back(c);

  c = Fp16Case{};
  c.name = "stride2_k40_bias_scale_clamp";  // K = 40: groups of 16, 16, 8; 2.5 output atoms
  c.width = 13, c.height = 11, c.channels = 24, c.kernels = 40;
  c.stride_x = c.stride_y = 2;
  c.pad_left = 1, c.pad_right = 0, c.pad_top = 1, c.pad_bottom = 1;
  c.pad_value = -0.25f;
  c.ops = Fp16Case::Ops::kBiasScaleTable;
  c.clamp = 1.5f;
  v.push_back(c);

  c = Fp16Case{};
  c.name = "dilation2x1_c33_k17_scale";
  c.width = 10, c.height = 8, c.channels = 33, c.kernels = 17;
  c.kernel_width = 3, c.kernel_height = 2;
  c.dilation_x = 2;
  c.stride_y = 2;
  c.ops = Fp16Case::Ops::kScaleOnly;
  v.push_back(c);

  c = Fp16Case{};
  c.name = "bias_and_scale_tables_no_relu_k7_c5";
  c.width = 6, c.height = 5, c.channels = 5, c.kernels = 7;
  c.kernel_width = 2, c.kernel_height = 2;
  c.pad_right = c.pad_bottom = 1;
  c.pad_value = 1.0f;
  c.ops = Fp16Case::Ops::kBiasAndScale;
  c.relu = false;
  v.push_back(c);

  c = Fp16Case{};
  c.name = "plain_1x1_c70_k50";  // no SDP operation: CACC's FP32 rounded to FP16
  c.width = 7, c.height = 6, c.channels = 70, c.kernels = 50;
  c.kernel_width = c.kernel_height = 1;
  c.ops = Fp16Case::Ops::kNone;
  c.relu = false;
  v.push_back(c);

  c = Fp16Case{};
  c.name = "fully_connected_4x5x20_k10";  // the kernel covers the whole input: a 1x1x10 output
  c.width = 4, c.height = 5, c.channels = 20, c.kernels = 10;
  c.kernel_width = 4, c.kernel_height = 5;
  c.relu = false;
  v.push_back(c);
  return v;
}

std::uint16_t h16(double v) {
  return models::fp16_from_double(v);
}
double value(std::uint16_t bits) {
  return models::decode_float(bits, models::kFp16);
}

struct Recorded {
  std::string cfg;
  ConvLayer layer;
  std::vector<std::uint8_t> golden;  // the output surface from run_conv_model
  models::ops::ConvCube in;
  models::ops::ConvWeights w{1, 1, 1, 1};
  std::vector<float> bias, scale;
};

// Builds the layer, its data and golden, and records it as a trace in `dir`.
Recorded record(const Fp16Case& fc, const std::string& dir) {
  const ConvHardware hw = conv_hardware(load_hw_config("nv_full"));
  const unsigned atom = hw.atom_bytes;
  Recorded r;
  ConvLayer& l = r.layer;
  l.precision = Precision::kFp16;
  l.src = packed_surface(kInput, fc.width, fc.height, fc.channels, atom);
  l.weight_address = kWeights;
  l.kernels = fc.kernels;
  l.kernel_width = fc.kernel_width;
  l.kernel_height = fc.kernel_height;
  l.stride_x = fc.stride_x;
  l.stride_y = fc.stride_y;
  l.dilation_x = fc.dilation_x;
  l.dilation_y = fc.dilation_y;
  l.pad_left = fc.pad_left;
  l.pad_right = fc.pad_right;
  l.pad_top = fc.pad_top;
  l.pad_bottom = fc.pad_bottom;
  l.pad_value = models::fp16_from_float(fc.pad_value);
  const ConvCubeSize out = conv_output_cube(l);
  l.dst = packed_surface(kOutput, out.width, out.height, out.channels, atom);

  std::mt19937 rng(static_cast<std::uint32_t>(std::hash<std::string>{}(fc.name) & 0xffffffffu));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  r.in = models::ops::ConvCube(fc.width, fc.height, fc.channels);
  r.w = models::ops::ConvWeights(fc.kernels, fc.kernel_height, fc.kernel_width, fc.channels);
  for (auto& v : r.in.data) v = static_cast<std::int16_t>(h16(2.0 * u(rng)));
  const double wt_range =
      1.5 / std::sqrt(static_cast<double>(fc.kernel_width * fc.kernel_height * fc.channels));
  for (auto& v : r.w.data) v = static_cast<std::int16_t>(h16(wt_range * u(rng)));
  r.bias.resize(fc.kernels);
  r.scale.resize(fc.kernels);
  for (auto& b : r.bias) b = static_cast<float>(0.5 * u(rng));
  for (auto& m : r.scale)
    m = static_cast<float>((u(rng) < 0 ? -1.0 : 1.0) * (0.5 + std::abs(u(rng))));

  using Ops = Fp16Case::Ops;
  std::vector<std::uint8_t> bias_bytes, scale_bytes;
  switch (fc.ops) {
    case Ops::kNone:
      break;
    case Ops::kBiasOnly:
      l.sdp.bias = SdpPerChannel{kBias, 0};
      bias_bytes = sdp_fp16_table(r.bias, atom);
      break;
    case Ops::kScaleOnly:
      l.sdp.scale = SdpPerChannel{kScale, 0};
      scale_bytes = sdp_fp16_table(r.scale, atom);
      break;
    case Ops::kBiasAndScale:
      l.sdp.bias = SdpPerChannel{kBias, 0};
      l.sdp.scale = SdpPerChannel{kScale, 0};
      bias_bytes = sdp_fp16_table(r.bias, atom);
      scale_bytes = sdp_fp16_table(r.scale, atom);
      break;
    case Ops::kBiasScaleTable:
      l.sdp.bias_scale = SdpBiasScale{kBias, 0, 0};
      bias_bytes = sdp_fp16_bias_scale_table(r.bias, r.scale, atom);
      break;
  }
  if (fc.ops == Ops::kNone || fc.ops == Ops::kBiasOnly)
    std::fill(r.scale.begin(), r.scale.end(), 1.0f);
  if (fc.ops == Ops::kNone || fc.ops == Ops::kScaleOnly)
    std::fill(r.bias.begin(), r.bias.end(), 0.0f);
  l.sdp.relu = fc.relu;
  if (fc.clamp) l.sdp.clamp_max = static_cast<std::int16_t>(models::fp16_from_float(*fc.clamp));

  const std::vector<std::uint8_t> input = conv_feature_image(r.in, l.src, l.precision, atom);
  const std::vector<std::uint8_t> weights = conv_weight_image(r.w, l.precision, hw);
  const std::uint64_t out_bytes = surface_bytes(l.dst, l.precision, atom);
  HostMemory golden;
  golden.write(kInput, input.data(), input.size());
  golden.write(kWeights, weights.data(), weights.size());
  if (!bias_bytes.empty()) golden.write(kBias, bias_bytes.data(), bias_bytes.size());
  if (!scale_bytes.empty()) golden.write(kScale, scale_bytes.data(), scale_bytes.size());
  const ConvGolden g = run_conv_model(l, hw, golden);
  r.golden = golden.bytes(kOutput, static_cast<std::size_t>(out_bytes));

  TraceWriter t;
  t.mem_init_zero(kOutput, out_bytes);
  t.mem_load(kInput, fc.name + "_input.dat", input);
  t.mem_load(kWeights, fc.name + "_weights.dat", weights);
  if (!bias_bytes.empty()) t.mem_load(kBias, fc.name + "_bias.dat", bias_bytes);
  if (!scale_bytes.empty()) t.mem_load(kScale, fc.name + "_scale.dat", scale_bytes);
  t.wait_interrupt(program_conv(t, l, 0, hw));
  t.check_file(kOutput, fc.name + "_golden.dat", r.golden);
  t.check_register(regs::SDP::D_PERF_OUT_SATURATION::kAddr, g.sdp_saturation);
  r.cfg = t.save(dir, fc.name + ".cfg");
  return r;
}

// The golden against an independent double-precision convolution and SDP stage, with NVDLA's CC
// threshold (scale: the channel's multiplier, whose product scales the convolution's error).
void expect_within_cc_threshold(const Fp16Case& fc, const Recorded& r) {
  const ConvLayer& l = r.layer;
  const unsigned atom = 32;
  const ConvCubeSize out = conv_output_cube(l);
  models::ops::ConvParams p;
  p.precision = models::ops::ConvPrecision::kFp16;
  p.stride_x = l.stride_x, p.stride_y = l.stride_y;
  p.dilation_x = l.dilation_x, p.dilation_y = l.dilation_y;
  p.pad_left = l.pad_left, p.pad_top = l.pad_top;
  p.out_width = out.width, p.out_height = out.height;
  p.pad_value = l.pad_value;
  const std::vector<int> max_exp = models::ops::conv_fp16_max_exp(r.in, r.w, p);
  const double pad = value(static_cast<std::uint16_t>(l.pad_value));
  std::size_t nonzero = 0, checked = 0;
  for (std::uint32_t k = 0; k < l.kernels; ++k) {
    for (std::uint32_t oy = 0; oy < out.height; ++oy) {
      for (std::uint32_t ox = 0; ox < out.width; ++ox) {
        double acc = 0.0;
        for (std::uint32_t rr = 0; rr < l.kernel_height; ++rr) {
          for (std::uint32_t s = 0; s < l.kernel_width; ++s) {
            const long y = long(oy * l.stride_y) - long(l.pad_top) + long(rr * l.dilation_y);
            const long x = long(ox * l.stride_x) - long(l.pad_left) + long(s * l.dilation_x);
            const bool inside = y >= 0 && y < long(fc.height) && x >= 0 && x < long(fc.width);
            for (std::uint32_t c = 0; c < fc.channels; ++c) {
              const double d = inside ? value(static_cast<std::uint16_t>(
                                            r.in.at(std::uint32_t(x), std::uint32_t(y), c)))
                                      : pad;
              acc += d * value(static_cast<std::uint16_t>(r.w.at(k, rr, s, c)));
            }
          }
        }
        // The tables hold the FP16 roundings of the float values.
        double v = (acc + value(h16(r.bias[k]))) * value(h16(r.scale[k]));
        if (fc.relu && v < 0) v = 0;
        if (fc.clamp && v > value(h16(*fc.clamp))) v = value(h16(*fc.clamp));
        const std::uint16_t want = static_cast<std::uint16_t>(
            models::encode_float(v, models::kFp16, models::Overflow::kSaturate));
        const std::uint64_t at = element_offset(l.dst, l.precision, atom, ox, oy, k);
        const auto got = static_cast<std::uint16_t>(r.golden[at] | r.golden[at + 1] << 8);
        const int me = max_exp[(std::size_t{k} * out.height + oy) * out.width + ox];
        const models::ThresholdResult t = models::check_cc_direct(
            got, want, me, static_cast<int>(l.kernel_height), static_cast<int>(l.kernel_width),
            static_cast<int>(fc.channels), std::abs(value(h16(r.scale[k]))));
        EXPECT_TRUE(t.pass) << fc.name << " k " << k << " (" << ox << ", " << oy << "): golden "
                            << value(got) << ", double " << v << ", |diff| " << t.diff
                            << " > bound " << t.bound;
        nonzero += (got & 0x7fffu) != 0;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, std::size_t{out.width} * out.height * l.kernels);
  EXPECT_GT(nonzero, checked / 3) << "degenerate golden output";
}

trace::PlayResult play_functional(const std::string& cfg, const std::string& config) {
  dla::FunctionalDevice device(load_hw_config(config));
  return trace::play(trace::parse_trace_file(cfg), device, trace::PlayerOptions{});
}

class Fp16Conv : public ::testing::TestWithParam<Fp16Case> {};

TEST_P(Fp16Conv, GoldenWithinCcThresholdOfDoubleReference) {
  TempDir dir(GetParam().name + "-cc");
  expect_within_cc_threshold(GetParam(), record(GetParam(), dir.str()));
}

TEST_P(Fp16Conv, FunctionalDeviceMatchesGoldenBitForBit) {
  TempDir dir(GetParam().name + "-functional");
  const Recorded r = record(GetParam(), dir.str());
  const trace::PlayResult res = play_functional(r.cfg, "nv_full");
  ASSERT_EQ(res.checks.size(), 2u);
  for (const auto& c : res.checks) {
    EXPECT_TRUE(c.pass) << "line " << c.line << ": " << c.description << ": " << c.detail;
  }
}

TEST_P(Fp16Conv, CycleLevelDeviceMatchesGoldenBitForBit) {
  TempDir dir(GetParam().name + "-cycle");
  const Recorded r = record(GetParam(), dir.str());
  std::string out;
  ASSERT_EQ(run_octasim("run " + r.cfg + " --config nv_full", &out), 0) << out;
  EXPECT_NE(out.find("checks: 2 passed, 0 failed"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Cases, Fp16Conv, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Fp16Case>& p) { return p.param.name; });

// The FP16 encodings of NVDLA's register tables: IN/PROC_PRECISION FP16 (2) in CDMA, CSC,
// CMAC_A/B, CACC and SDP; PADDING_VALUE the FP16 pattern; BYTE_PER_KERNEL 2 bytes an element;
// the weight banks hold at least one kernel group of atomic-K/2 kernels.
TEST(Fp16ConvProgramming, EncodesFp16Precision) {
  const ConvHardware hw = conv_hardware(load_hw_config("nv_full"));
  ConvLayer l;
  l.precision = Precision::kFp16;
  l.src = packed_surface(kInput, 6, 6, 24, hw.atom_bytes);
  l.weight_address = kWeights;
  l.kernels = 20;
  l.kernel_width = l.kernel_height = 3;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = 1;
  l.pad_value = 0xbc00;  // -1.0
  l.dst = packed_surface(kOutput, 6, 6, 20, hw.atom_bytes);
  l.sdp.bias = SdpPerChannel{kBias, 0};
  RecordingMmio m;
  (void)program_conv(m, l, 0, hw);
  namespace CD = regs::CDMA;
  namespace CS = regs::CSC;
  EXPECT_EQ(CD::D_MISC_CFG::IN_PRECISION.get(m.at(CD::D_MISC_CFG::kAddr)), 2u);
  EXPECT_EQ(CD::D_MISC_CFG::PROC_PRECISION.get(m.at(CD::D_MISC_CFG::kAddr)), 2u);
  EXPECT_EQ(CS::D_MISC_CFG::IN_PRECISION.get(m.at(CS::D_MISC_CFG::kAddr)), 2u);
  EXPECT_EQ(CS::D_MISC_CFG::PROC_PRECISION.get(m.at(CS::D_MISC_CFG::kAddr)), 2u);
  EXPECT_EQ(regs::CMAC_A::D_MISC_CFG::PROC_PRECISION.get(m.at(regs::CMAC_A::D_MISC_CFG::kAddr)),
            2u);
  EXPECT_EQ(regs::CMAC_B::D_MISC_CFG::PROC_PRECISION.get(m.at(regs::CMAC_B::D_MISC_CFG::kAddr)),
            2u);
  EXPECT_EQ(regs::CACC::D_MISC_CFG::PROC_PRECISION.get(m.at(regs::CACC::D_MISC_CFG::kAddr)), 2u);
  EXPECT_EQ(regs::SDP::D_DATA_FORMAT::PROC_PRECISION.get(m.at(regs::SDP::D_DATA_FORMAT::kAddr)),
            2u);
  EXPECT_EQ(regs::SDP::D_DATA_FORMAT::OUT_PRECISION.get(m.at(regs::SDP::D_DATA_FORMAT::kAddr)), 2u);
  EXPECT_EQ(CD::D_ZERO_PADDING_VALUE::PAD_VALUE.get(m.at(CD::D_ZERO_PADDING_VALUE::kAddr)),
            0xbc00u);
  EXPECT_EQ(CS::D_ZERO_PADDING_VALUE::PAD_VALUE.get(m.at(CS::D_ZERO_PADDING_VALUE::kAddr)),
            0xbc00u);
  EXPECT_EQ(CD::D_WEIGHT_SIZE_0::BYTE_PER_KERNEL.get(m.at(CD::D_WEIGHT_SIZE_0::kAddr)) + 1,
            3u * 3 * 24 * 2);
  // 20 kernels of 432 bytes = 8640 -> 8704 (128-byte multiple).
  EXPECT_EQ(m.at(CD::D_WEIGHT_BYTES::kAddr), 8704u);
  const ConvPlan plan = plan_conv(l, hw);
  EXPECT_EQ(plan.bytes_per_kernel, 432u);
  // The whole-weights plan holds every kernel; a kernel group is 16 FP16 kernels.
  EXPECT_TRUE(plan.full_weights);
}

TEST(Fp16ConvProgramming, WeightImageGroupsAtomicKHalfKernels) {
  // nv_full: atomic-C 64, atomic-K 32 -> FP16 groups of 16 kernels. Kernel 16 (group 1) starts
  // after group 0's 16 kernels x (1x1x4 channels x 2 bytes).
  const ConvHardware hw = conv_hardware(load_hw_config("nv_full"));
  models::ops::ConvWeights w(20, 1, 1, 4);
  for (std::uint32_t k = 0; k < 20; ++k) {
    for (std::uint32_t c = 0; c < 4; ++c) {
      w.at(k, 0, 0, c) = static_cast<std::int16_t>(h16(k + c / 8.0));
    }
  }
  const std::vector<std::uint8_t> img = conv_weight_image(w, Precision::kFp16, hw);
  ASSERT_EQ(img.size(), 256u);  // 20 x 4 x 2 = 160 bytes -> 256
  const auto at = [&](std::size_t i) {
    return static_cast<std::uint16_t>(img[2 * i] | img[2 * i + 1] << 8);
  };
  // Group 0: kernel k's 4 channels at k*4 (within an atomic-C block, a kernel's channels are
  // contiguous, kernels one after the other).
  EXPECT_EQ(at(0), h16(0.0));
  EXPECT_EQ(at(3), h16(3 / 8.0));
  EXPECT_EQ(at(4), h16(1.0));
  EXPECT_EQ(at(15 * 4 + 1), h16(15.125));
  EXPECT_EQ(at(16 * 4), h16(16.0));  // group 1 follows group 0
  EXPECT_EQ(at(19 * 4 + 3), h16(19.375));
  EXPECT_EQ(at(80), 0u);  // zero padding
}

TEST(Fp16ConvProgramming, RefusesFp16WithoutTheHardwareAndWhatFp16DoesNotEncode) {
  const HwConfig small_cfg = load_hw_config("nv_small");
  const ConvHardware small = conv_hardware(small_cfg);
  ConvLayer l;
  l.precision = Precision::kFp16;
  l.src = packed_surface(kInput, 4, 4, 8, small.atom_bytes);
  l.weight_address = kWeights;
  l.kernels = 4;
  l.dst = packed_surface(kOutput, 4, 4, 4, small.atom_bytes);
  try {
    (void)plan_conv(l, small);
    FAIL() << "FP16 on nv_small was accepted";
  } catch (const FirmwareError& e) {
    EXPECT_STREQ(e.what(), "convolution: FP16 is not supported by this configuration");
  }
  RecordingMmio m;
  EXPECT_THROW((void)program_conv(m, l, 0, small), FirmwareError);
  EXPECT_EQ(m.at(regs::CDMA::D_OP_ENABLE::kAddr), 0xdeadbeefu);  // nothing written
  HostMemory mem;
  EXPECT_THROW((void)run_conv_model(l, small, mem), FirmwareError);

  const ConvHardware full = conv_hardware(load_hw_config("nv_full"));
  l.src = packed_surface(kInput, 4, 4, 8, full.atom_bytes);
  l.dst = packed_surface(kOutput, 4, 4, 4, full.atom_bytes);
  (void)plan_conv(l, full);
  const auto refused = [&](ConvLayer bad, const std::string& what) {
    try {
      (void)plan_conv(bad, full);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const FirmwareError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  ConvLayer b = l;
  b.clip_truncate = 2;
  refused(b, "CACC clip truncate 2 at FP16");
  b = l;
  b.pad_value = 0x10000;
  refused(b, "padding value 65536 is outside 0..65535 (FP16)");
  b = l;
  b.sdp.cvt.shift = 3;
  refused(b, "FP16 has no output convertor");
  b = l;
  b.sdp.bias = SdpPerChannel{kBias, 4};
  refused(b, "FP16 operands take no shift");
}

}  // namespace
}  // namespace octasim::firmware
