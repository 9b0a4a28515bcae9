// Winograd convolution end to end on nv_full: layers programmed by firmware/dla/conv
// (ConvLayer::winograd, firmware/dla/conv_winograd.hpp) and recorded as traces whose golden CRC
// and CACC/SDP saturation counts come from models/ (run_conv_model -> run_conv_winograd), played
// on the functional device in-process and by `octasim run --config nv_full` on the cycle-level
// device (its own process). Where Winograd is exact (PRA_TRUNCATE 0, no PRA saturation) the
// golden equals the same layer's direct-convolution golden byte for byte. nv_small refuses it.
// NVDLA publishes no Winograd trace; what is checked rests on the documentation only.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/conv.hpp"
#include "firmware/dla/conv_winograd.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/conv_winograd.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/firmware/e2e_util.hpp"

#ifndef OCTASIM_BIN
#error "OCTASIM_BIN must name the octasim executable"
#endif

namespace octasim::firmware {
namespace {

using octasim::test::run_octasim;
using octasim::test::TempDir;

constexpr std::uint64_t kInput = 0x80000000, kWeights = 0x80100000, kBias = 0x80180000,
                        kOutput = 0x80200000;

struct WinoCase {
  std::string name;
  Precision precision = Precision::kInt8;
  std::uint32_t width = 16, height = 16, channels = 64, kernels = 40;
  std::uint32_t pad = 1;     // on every side
  std::int32_t in_max = 31;  // inputs in -in_max..in_max
  std::int32_t wt_max = 7;   // 3x3 weights in -wt_max..wt_max (4U fits)
  std::int32_t pad_value = 3;
  unsigned clip_truncate = 1;
  bool expect_exact = true;  // the PRA truncation chosen is 0: Winograd equals direct
  // Compute-bound (the MAC array, not the DMA, limits the direct layer): Winograd is faster.
  bool expect_faster = false;
};

void PrintTo(const WinoCase& c, std::ostream* os) {
  *os << c.name;
}

// INT8: 40 kernels = groups of 32 and 8; 64 channels = 16 small-cube blocks. INT16: inputs of
// the full range need PRA_TRUNCATE 2; 20 channels padded to 32 bytes (16 elements) -> 32.
std::vector<WinoCase> cases() {
  std::vector<WinoCase> v;
  WinoCase c;
  c.name = "int8_16x16x64_k40";
  v.push_back(c);
  c = WinoCase{};
  c.name = "int8_32x32x32_k64_compute_bound";
  c.width = 32, c.height = 32, c.channels = 32, c.kernels = 64;
  c.expect_faster = true;
  v.push_back(c);
  c = WinoCase{};
  c.name = "int16_12x8x20_k12_pra2";
  c.precision = Precision::kInt16;
  c.width = 12, c.height = 8, c.channels = 20, c.kernels = 12;
  c.in_max = 32767, c.wt_max = 2000, c.pad_value = -300, c.clip_truncate = 6;
  c.expect_exact = false;
  v.push_back(c);
  c = WinoCase{};
  c.name = "int8_8x12x24_k8_pra2";
  c.width = 8, c.height = 12, c.channels = 24, c.kernels = 8;
  c.in_max = 127, c.pad_value = -128, c.clip_truncate = 0;
  c.expect_exact = false;
  v.push_back(c);
  return v;
}

struct Recorded {
  std::string winograd_cfg, direct_cfg;
  std::vector<std::uint8_t> winograd_out, direct_out;  // the two goldens
  std::uint64_t useful_out_bytes = 0;                  // output elements, without padding lanes
  std::uint64_t winograd_weight_bytes = 0, direct_weight_bytes = 0;
  unsigned pra = 0;
};

using Overrides = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

// Forwards to `to`, replacing the values of the writes to the registers in `overrides`.
class OverrideMmio final : public Mmio {
 public:
  OverrideMmio(Mmio& to, Overrides overrides) : to_(to), overrides_(std::move(overrides)) {}
  void write32(std::uint32_t addr, std::uint32_t value) override {
    for (const auto& [a, v] : overrides_) {
      if (a == addr) value = v;
    }
    to_.write32(addr, value);
  }
  [[nodiscard]] std::uint32_t read32(std::uint32_t addr) override { return to_.read32(addr); }
  void wait_interrupt(unsigned status_bit) override { to_.wait_interrupt(status_bit); }

 private:
  Mmio& to_;
  Overrides overrides_;
};

// Records the case as a Winograd layer and as the same layer in direct mode.
Recorded record(const WinoCase& wc, const std::string& dir, const Overrides& overrides = {}) {
  const ConvHardware hw = conv_hardware(load_hw_config("nv_full"));
  const unsigned atom = hw.atom_bytes;
  ConvLayer l;
  l.precision = wc.precision;
  l.src = packed_surface(kInput, wc.width, wc.height, wc.channels, atom);
  l.weight_address = kWeights;
  l.kernels = wc.kernels;
  l.kernel_width = l.kernel_height = 3;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = wc.pad;
  l.pad_value = wc.pad_value;
  l.clip_truncate = wc.clip_truncate;
  const ConvCubeSize out = conv_output_cube(l);
  l.dst = packed_surface(kOutput, out.width, out.height, out.channels, atom);

  std::mt19937 rng(static_cast<std::uint32_t>(std::hash<std::string>{}(wc.name) & 0xffffffffu));
  const auto uniform = [&](std::int32_t a, std::int32_t b) {
    return std::uniform_int_distribution<std::int32_t>(a, b)(rng);
  };
  models::ops::ConvCube in(wc.width, wc.height, wc.channels);
  models::ops::ConvWeights w(wc.kernels, 3, 3, wc.channels);
  for (auto& v : in.data) v = uniform(-wc.in_max, wc.in_max);
  for (auto& v : w.data) v = uniform(-wc.wt_max, wc.wt_max);
  const std::uint32_t max_abs =
      std::max<std::uint32_t>(wc.in_max, static_cast<std::uint32_t>(std::abs(wc.pad_value)));
  l.pra_truncate = choose_pra_truncate(max_abs, wc.precision);
  // Requantize: sums of 9 C products of uniform values, after CLIP_TRUNCATE.
  const double sd_in = wc.in_max / std::sqrt(3.0), sd_wt = wc.wt_max / std::sqrt(3.0);
  const double spread = sd_in * sd_wt * std::sqrt(9.0 * wc.channels) /
                        std::ldexp(1.0, static_cast<int>(wc.clip_truncate));
  const double target = wc.precision == Precision::kInt8 ? 48.0 : 12000.0;
  l.sdp.cvt = SdpConvertor{
      0, 1,
      static_cast<unsigned>(std::max(0, static_cast<int>(std::ceil(std::log2(spread / target)))))};
  l.sdp.relu = true;
  std::vector<std::int16_t> bias(wc.kernels);
  for (auto& b : bias) b = static_cast<std::int16_t>(uniform(-300, 300));
  const std::vector<std::uint8_t> bias_bytes = sdp_per_channel_table(bias, l.precision, atom);
  l.sdp.bias = SdpPerChannel{kBias, 0};

  const std::vector<std::uint8_t> input = conv_feature_image(in, l.src, l.precision, atom);
  ConvLayer lw = l;
  lw.winograd = true;
  const std::vector<std::uint8_t> wino_weights = conv_winograd_weight_image(w, l.precision, hw);
  const std::vector<std::uint8_t> direct_weights = conv_weight_image(w, l.precision, hw);
  const std::uint64_t out_bytes = surface_bytes(l.dst, l.precision, atom);

  Recorded r;
  r.pra = lw.pra_truncate;
  r.useful_out_bytes =
      std::uint64_t{out.width} * out.height * out.channels * element_bytes(l.precision);
  r.winograd_weight_bytes = wino_weights.size();
  r.direct_weight_bytes = direct_weights.size();
  for (const bool winograd : {true, false}) {
    HostMemory golden;
    golden.write(kInput, input.data(), input.size());
    golden.write(kBias, bias_bytes.data(), bias_bytes.size());
    const std::vector<std::uint8_t>& weights = winograd ? wino_weights : direct_weights;
    golden.write(kWeights, weights.data(), weights.size());
    const ConvGolden g = run_conv_model(winograd ? lw : l, hw, golden);
    const std::vector<std::uint8_t> want =
        golden.bytes(kOutput, static_cast<std::size_t>(out_bytes));
    (winograd ? r.winograd_out : r.direct_out) = want;

    TraceWriter t;
    const std::string tag = wc.name + (winograd ? "_winograd" : "_direct");
    t.mem_init_zero(kOutput, out_bytes);
    t.mem_load(kInput, tag + "_input.dat", input);
    t.mem_load(kBias, tag + "_bias.dat", bias_bytes);
    t.mem_load(kWeights, tag + "_weights.dat", weights);
    OverrideMmio m(t, winograd ? overrides : Overrides{});
    t.wait_interrupt(program_conv(m, winograd ? lw : l, 0, hw));
    t.check_crc(kOutput, out_bytes, models::crc32(want.data(), want.size()));
    t.check_register(regs::CACC::D_OUT_SATURATION::kAddr, g.cacc_saturation);
    (winograd ? r.winograd_cfg : r.direct_cfg) = t.save(dir, tag + ".cfg");
  }
  return r;
}

trace::PlayResult play_functional(const std::string& cfg, const std::string& config) {
  dla::FunctionalDevice device(load_hw_config(config));
  return trace::play(trace::parse_trace_file(cfg), device, trace::PlayerOptions{});
}

void expect_all_pass(const trace::PlayResult& r, const std::string& what) {
  ASSERT_EQ(r.checks.size(), 2u) << what;
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.pass) << what << " line " << c.line << ": " << c.description << ": " << c.detail;
  }
}

long long number(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return -1;
  return std::stoll(m[1].str());
}

class WinogradConv : public ::testing::TestWithParam<WinoCase> {};

TEST_P(WinogradConv, PassesOnTheFunctionalDevice) {
  const WinoCase& wc = GetParam();
  TempDir dir(wc.name + "-functional");
  const Recorded r = record(wc, dir.str());
  EXPECT_EQ(r.pra == 0, wc.expect_exact) << "PRA truncation " << r.pra;
  std::size_t nonzero = 0;
  for (std::uint8_t b : r.winograd_out) nonzero += b != 0;
  EXPECT_GT(nonzero, r.useful_out_bytes / 4) << "degenerate golden output";
  if (wc.expect_exact) {
    EXPECT_EQ(r.winograd_out, r.direct_out);
  } else {
    EXPECT_NE(r.winograd_out, r.direct_out);  // PRA truncation changes results
  }
  expect_all_pass(play_functional(r.winograd_cfg, "nv_full"), r.winograd_cfg);
  expect_all_pass(play_functional(r.direct_cfg, "nv_full"), r.direct_cfg);
}

// `octasim run --config nv_full`: the checks pass on the cycle-level device; the Winograd layer
// fetches its transformed weights (16 C' instead of 9 C elements a kernel: 4x4x4 small cubes,
// channels padded to 32 bytes, 128-byte aligned) and, where the MAC array limits the direct
// layer, takes fewer cycles. (Where the DMA limits it, the larger weights can make Winograd
// slower; those cases only print the two counts.)
TEST_P(WinogradConv, CycleLevelAgainstDirect) {
  const WinoCase& wc = GetParam();
  TempDir dir(wc.name + "-cycle");
  const Recorded r = record(wc, dir.str());
  std::string out_w, out_d;
  ASSERT_EQ(run_octasim("run " + r.winograd_cfg + " --config nv_full", &out_w), 0) << out_w;
  ASSERT_EQ(run_octasim("run " + r.direct_cfg + " --config nv_full", &out_d), 0) << out_d;
  EXPECT_NE(out_w.find("checks: 2 passed, 0 failed"), std::string::npos) << out_w;
  EXPECT_NE(out_d.find("checks: 2 passed, 0 failed"), std::string::npos) << out_d;
  const std::string cycles = R"(cycles: trace=(\d+))";
  const long long cw = number(out_w, cycles), cd = number(out_d, cycles);
  ASSERT_GT(cw, 0) << out_w;
  ASSERT_GT(cd, 0) << out_d;
  const std::string weights = R"(weights (\d+) B)";
  // format.rst: C' = C rounded up to 32 bytes; 4x4xC' a kernel; the surface 128-byte aligned.
  const std::uint64_t bpe = wc.precision == Precision::kInt8 ? 1 : 2;
  const std::uint64_t c_ext = (wc.channels * bpe + 31) / 32 * 32 / bpe;
  const std::uint64_t wino_bytes = (wc.kernels * 16 * c_ext * bpe + 127) / 128 * 128;
  EXPECT_EQ(r.winograd_weight_bytes, wino_bytes);
  EXPECT_EQ(number(out_w, weights), static_cast<long long>(wino_bytes)) << out_w;
  EXPECT_EQ(number(out_d, weights), static_cast<long long>(r.direct_weight_bytes)) << out_d;
  if (wc.expect_faster) {
    EXPECT_LT(cw, cd) << "Winograd " << cw << " cycles, direct " << cd;
  }
  std::cout << wc.name << ": Winograd " << cw << " cycles, direct " << cd << " ("
            << static_cast<double>(cd) / static_cast<double>(cw) << "x)\n";
}

INSTANTIATE_TEST_SUITE_P(Cases, WinogradConv, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<WinoCase>& p) { return p.param.name; });

void expect_refused(const std::string& cfg, const std::string& config, const std::string& what) {
  try {
    (void)play_functional(cfg, config);
    FAIL() << "expected a refusal mentioning '" << what << "'";
  } catch (const trace::TraceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(WinogradRefusals, NotPresentOnNvSmall) {
  TempDir dir("small");
  const Recorded r = record(cases().at(0), dir.str());
  expect_refused(r.winograd_cfg, "nv_small",
                 "Winograd convolution is not present in this configuration (nv_small)");
}

TEST(WinogradRefusals, BadProgramming) {
  namespace CS = regs::CSC;
  namespace CD = regs::CDMA;
  namespace CA = regs::CACC;
  const WinoCase wc = cases().at(0);  // 16x16x64, pad 1: ext 20x20, output 16x16
  struct Bad {
    Overrides o;
    std::string what;
  };
  const std::vector<Bad> bad = {
      {{{CS::D_PRA_CFG::kAddr, 3}}, "CSC PRA_TRUNCATE is 3 (range 0..2)"},
      {{{CS::D_WEIGHT_SIZE_EXT_0::kAddr, 0x00020002}}, "CSC WEIGHT_WIDTH_EXT is 3"},
      {{{CS::D_CONV_STRIDE_EXT::kAddr, 0x00010001}, {CD::D_CONV_STRIDE::kAddr, 0x00010001}},
       "stride 2x2"},
      {{{CS::D_DATAOUT_SIZE_0::kAddr, 0x000d000d}, {CA::D_DATAOUT_SIZE_0::kAddr, 0x000d000d}},
       "CSC DATAOUT_WIDTH + 4 is 18 but DATAIN_WIDTH_EXT requires 20"},
      {{{CD::D_DATAIN_SIZE_EXT_0::kAddr, 0x000f000f}}, "CDMA DATAIN_WIDTH_EXT is 16"},
      {{{regs::CMAC_B::D_MISC_CFG::kAddr, 0}}, "CMAC_A/CMAC_B CONV_MODE is direct"},
      {{{CA::D_MISC_CFG::kAddr, 0}}, "CSC/CACC CONV_MODE differs from CDMA's (Winograd)"},
  };
  for (const Bad& b : bad) {
    TempDir dir("bad");
    const Recorded r = record(wc, dir.str(), b.o);
    expect_refused(r.winograd_cfg, "nv_full", b.what);
  }
}

TEST(WinogradFirmware, RefusesWhatWinogradCannotDo) {
  const ConvHardware hw = conv_hardware(load_hw_config("nv_full"));
  ConvLayer l;
  l.src = packed_surface(kInput, 8, 8, 16, hw.atom_bytes);
  l.weight_address = kWeights;
  l.kernels = 8;
  l.kernel_width = l.kernel_height = 3;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = 1;
  l.dst = packed_surface(kOutput, 8, 8, 8, hw.atom_bytes);
  l.winograd = true;
  const ConvPlan p = plan_conv(l, hw);
  EXPECT_EQ(p.pad_right, 3u);               // DATAIN_SIZE_EXT 8 + 1 + 3 = output 8 + 4
  EXPECT_EQ(p.bytes_per_kernel, 16u * 32);  // 16 channels padded to 32 (INT8)
  ConvHardware small = conv_hardware(load_hw_config("nv_small"));
  small.int8 = true;
  EXPECT_THROW((void)plan_conv(l, small), FirmwareError);
  ConvLayer s = l;
  s.stride_x = 2;
  s.dst = packed_surface(kOutput, conv_output_cube(s).width, 8, 8, hw.atom_bytes);
  EXPECT_THROW((void)plan_conv(s, hw), FirmwareError);
  ConvLayer k = l;
  k.kernel_width = 2;
  k.dst = packed_surface(kOutput, 9, 8, 8, hw.atom_bytes);
  EXPECT_THROW((void)plan_conv(k, hw), FirmwareError);
  ConvLayer o = l;  // 6x6 output: not a multiple of 4
  o.pad_left = o.pad_right = o.pad_top = o.pad_bottom = 0;
  o.dst = packed_surface(kOutput, 6, 6, 8, hw.atom_bytes);
  EXPECT_THROW((void)plan_conv(o, hw), FirmwareError);
  ConvLayer t = l;
  t.pra_truncate = 3;
  EXPECT_THROW((void)plan_conv(t, hw), FirmwareError);
}

// The CSC's Winograd work (v1_ias_unit_description.rst, "Parameters of operation modes"):
// one atomic per 2x2 output tile, one block operation per 4 channels, 4x4xC' weights a kernel.
TEST(WinogradSchedule, FollowsTheOperationModeTable) {
  dla::ConvLayer l;
  l.winograd = true;
  l.params.out_width = 16;
  l.params.out_height = 8;
  l.weight_channels = 64;
  dla::WinogradSchedule s = dla::winograd_schedule(l);
  EXPECT_EQ(s.atomics, 32u);
  EXPECT_EQ(s.packages, 16u);
  EXPECT_EQ(s.kernel_bytes, 1024u);
  EXPECT_EQ(s.outputs_per_atomic, 4u);
  l.precision = models::ops::ConvPrecision::kInt16;
  l.weight_channels = 16;
  s = dla::winograd_schedule(l);
  EXPECT_EQ(s.packages, 4u);
  EXPECT_EQ(s.kernel_bytes, 512u);
}

// The PRA truncation choice: |V| <= 4 max|d| must fit after the rounding shift.
TEST(WinogradFirmware, PraTruncateChoice) {
  EXPECT_EQ(choose_pra_truncate(31, Precision::kInt8), 0u);   // 124
  EXPECT_EQ(choose_pra_truncate(32, Precision::kInt8), 1u);   // 128 -> 64
  EXPECT_EQ(choose_pra_truncate(63, Precision::kInt8), 1u);   // 252 -> 126
  EXPECT_EQ(choose_pra_truncate(64, Precision::kInt8), 2u);   // 256 -> 128 at 1
  EXPECT_EQ(choose_pra_truncate(128, Precision::kInt8), 2u);  // saturation possible even at 2
  EXPECT_EQ(choose_pra_truncate(8191, Precision::kInt16), 0u);
  EXPECT_EQ(choose_pra_truncate(8192, Precision::kInt16), 1u);
}

}  // namespace
}  // namespace octasim::firmware
