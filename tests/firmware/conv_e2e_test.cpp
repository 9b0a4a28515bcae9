// End to end: convolution layers programmed by firmware/dla/conv (program_conv) and recorded as
// NVDLA traces whose golden CRCs and counters come from models/ (run_conv_model: run_conv_int +
// run_sdp_layer, never the simulator), then played on the functional device in this process.
// The same traces are written by ConvTraceFiles.Write (when OCTASIM_CONV_TRACE_DIR is set) for
// the ctest fixture that plays each through `octasim run` on the cycle-level device, each in
// its own process (tests/firmware/CMakeLists.txt).
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "firmware/dla/conv.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::firmware {
namespace {

using octasim::test::TempDir;

enum class Data { kRandom, kSaturating };

struct ConvCase {
  std::string name;
  std::string config = "nv_small";
  Precision precision = Precision::kInt8;
  std::uint32_t width = 8, height = 8, channels = 8;
  std::uint32_t kernels = 8, kernel_width = 3, kernel_height = 3;
  std::uint32_t stride_x = 1, stride_y = 1, dilation_x = 1, dilation_y = 1;
  std::uint32_t pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;
  std::int32_t pad_value = 0;
  unsigned clip_truncate = 0;
  bool bias = true, scale = false, relu = true;
  Data data = Data::kRandom;
  // Expected by construction (checked against the golden, so the case covers what it claims).
  bool expect_cacc_saturation = false;
};

// gtest prints a parameter in test names and failures: the case's name, not its bytes.
void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << c.name << " (" << c.config << ")";
}

// Every case the tests cover; traces are named conv_<name>.cfg.
std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> v;
  ConvCase c;
  c.name = "stride2_pad1";
  c.width = 15, c.height = 11, c.channels = 8, c.kernels = 8;
  c.stride_x = c.stride_y = 2;
  c.pad_left = c.pad_right = c.pad_top = c.pad_bottom = 1;
  c.pad_value = 5;
  v.push_back(c);

  c = ConvCase{};
  c.name = "stride3x1_c16_k12";
  c.width = 13, c.height = 9, c.channels = 16, c.kernels = 12;
  c.kernel_width = 3, c.kernel_height = 2;
  c.stride_x = 3, c.stride_y = 1;
  c.scale = true;
  v.push_back(c);

  c = ConvCase{};
  c.name = "dilation2_pads";
  c.width = 12, c.height = 12, c.channels = 8, c.kernels = 8;
  c.dilation_x = c.dilation_y = 2;
  c.pad_left = 2, c.pad_right = 1, c.pad_top = 2, c.pad_bottom = 3;
  c.pad_value = -7;
  v.push_back(c);

  c = ConvCase{};
  c.name = "dilation3x2_c5_k5";
  c.width = 17, c.height = 14, c.channels = 5, c.kernels = 5;
  c.dilation_x = 3, c.dilation_y = 2;
  c.relu = false;
  v.push_back(c);

  // Padding on all four sides with a value whose 16-bit pattern (0xff9c) differs from its low
  // byte's zero extension: the INT8 data path takes the low byte, sign-extended.
  c = ConvCase{};
  c.name = "pad4sides_c13_k11";
  c.width = 9, c.height = 7, c.channels = 13, c.kernels = 11;
  c.kernel_width = 4, c.kernel_height = 3;
  c.pad_left = 2, c.pad_right = 3, c.pad_top = 1, c.pad_bottom = 2;
  c.pad_value = -100;
  v.push_back(c);

  c = ConvCase{};
  c.name = "clip3_c24_k20";
  c.width = 10, c.height = 6, c.channels = 24, c.kernels = 20;
  c.pad_left = c.pad_right = c.pad_top = c.pad_bottom = 1;
  c.clip_truncate = 3;
  v.push_back(c);

  // INT16 on nv_full with operands of large, correlated magnitude: the accumulator exceeds
  // INT32 after CLIP_TRUNCATE 4 and CACC saturates (D_OUT_SATURATION > 0).
  c = ConvCase{};
  c.name = "nv_full_int16_clip4_saturation";
  c.config = "nv_full";
  c.precision = Precision::kInt16;
  c.width = 6, c.height = 5, c.channels = 24, c.kernels = 20;
  c.pad_left = c.pad_right = c.pad_top = c.pad_bottom = 1;
  c.pad_value = -1234;
  c.clip_truncate = 4;
  c.data = Data::kSaturating;
  c.expect_cacc_saturation = true;
  v.push_back(c);

  c = ConvCase{};
  c.name = "nv_full_int8_20x18x100_k70";
  c.config = "nv_full";
  c.width = 20, c.height = 18, c.channels = 100, c.kernels = 70;
  c.pad_left = c.pad_right = c.pad_top = c.pad_bottom = 1;
  c.pad_value = 17;
  c.clip_truncate = 2;
  c.scale = true;
  v.push_back(c);

  c = ConvCase{};
  c.name = "nv_full_int8_stride2_dil2_c70_k40";
  c.config = "nv_full";
  c.width = 23, c.height = 19, c.channels = 70, c.kernels = 40;
  c.kernel_width = 3, c.kernel_height = 5;
  c.stride_x = c.stride_y = 2;
  c.dilation_x = 2, c.dilation_y = 1;
  c.pad_left = 3, c.pad_right = 2, c.pad_top = 2, c.pad_bottom = 1;
  c.pad_value = -128;
  v.push_back(c);
  return v;
}

constexpr std::uint64_t kInput = 0x80000000, kWeights = 0x80100000, kBias = 0x80180000,
                        kScale = 0x80190000, kOutput = 0x80200000;

struct WrittenTrace {
  std::string path;
  ConvGolden golden;
  std::size_t checks = 0;
};

// Records the case as a trace into `trace`; its data files are named after the case.
ConvGolden record_case(const ConvCase& cc, TraceWriter& trace, const std::string& prefix) {
  const HwConfig hwc = load_hw_config(cc.config);
  const ConvHardware hw = conv_hardware(hwc);
  const unsigned atom = hw.atom_bytes;
  const bool int8 = cc.precision == Precision::kInt8;
  const std::int32_t lo = int8 ? -128 : -32768, hi = int8 ? 127 : 32767;

  ConvLayer l;
  l.precision = cc.precision;
  l.src = packed_surface(kInput, cc.width, cc.height, cc.channels, atom);
  l.weight_address = kWeights;
  l.kernels = cc.kernels;
  l.kernel_width = cc.kernel_width;
  l.kernel_height = cc.kernel_height;
  l.stride_x = cc.stride_x;
  l.stride_y = cc.stride_y;
  l.dilation_x = cc.dilation_x;
  l.dilation_y = cc.dilation_y;
  l.pad_left = cc.pad_left;
  l.pad_right = cc.pad_right;
  l.pad_top = cc.pad_top;
  l.pad_bottom = cc.pad_bottom;
  l.pad_value = cc.pad_value;
  l.clip_truncate = cc.clip_truncate;
  const ConvCubeSize out = conv_output_cube(l);
  l.dst = packed_surface(kOutput, out.width, out.height, out.channels, atom);

  std::mt19937 rng(static_cast<std::uint32_t>(std::hash<std::string>{}(cc.name) & 0xffffffffu));
  const auto uniform = [&](std::int32_t a, std::int32_t b) {
    return std::uniform_int_distribution<std::int32_t>(a, b)(rng);
  };
  models::ops::ConvCube in(cc.width, cc.height, cc.channels);
  models::ops::ConvWeights w(cc.kernels, cc.kernel_height, cc.kernel_width, cc.channels);
  if (cc.data == Data::kSaturating) {
    // Inputs of magnitude >= 20000 with a sign pattern; even kernels follow the pattern (sums
    // of ~2^29 per product), odd kernels are small and random.
    for (auto& v : in.data) v = uniform(0, 1) ? uniform(20000, hi) : uniform(lo, -20000);
    for (std::uint32_t k = 0; k < cc.kernels; ++k) {
      for (std::uint32_t r = 0; r < cc.kernel_height; ++r) {
        for (std::uint32_t s = 0; s < cc.kernel_width; ++s) {
          for (std::uint32_t c = 0; c < cc.channels; ++c) {
            w.at(k, r, s, c) =
                k % 2 == 0 ? ((c + r + s) % 2 == 0 ? uniform(25000, hi) : uniform(lo, -25000))
                           : uniform(-300, 300);
          }
        }
      }
    }
    for (std::uint32_t y = 0; y < cc.height; ++y) {
      for (std::uint32_t x = 0; x < cc.width; ++x) {
        for (std::uint32_t c = 0; c < cc.channels; ++c) {
          const std::int32_t mag = std::abs(in.at(x, y, c));
          in.at(x, y, c) = (c + x + y) % 2 == 0 ? mag : -mag;
        }
      }
    }
  } else {
    for (auto& v : in.data) v = uniform(lo, hi);
    for (auto& v : w.data) v = uniform(lo, hi);
  }

  // Requantize so that typical sums land inside the output range: the standard deviation of a
  // sum of N products of uniform INT8 values is about 74^2 * sqrt(N).
  const double n = static_cast<double>(cc.kernel_width) * cc.kernel_height * cc.channels;
  const double spread = (int8 ? 74.0 * 74.0 : 18918.0 * 18918.0) * std::sqrt(n) /
                        std::ldexp(1.0, static_cast<int>(cc.clip_truncate));
  const double target = int8 ? 48.0 : 12000.0;
  const int shift = std::max(0, static_cast<int>(std::ceil(std::log2(spread / target))));
  l.sdp.cvt = SdpConvertor{0, 1, static_cast<unsigned>(std::min(shift, 63))};
  l.sdp.relu = cc.relu;

  HostMemory golden;
  const std::vector<std::uint8_t> input_bytes = conv_feature_image(in, l.src, l.precision, atom);
  const std::vector<std::uint8_t> weight_bytes = conv_weight_image(w, l.precision, hw);
  golden.write(kInput, input_bytes.data(), input_bytes.size());
  golden.write(kWeights, weight_bytes.data(), weight_bytes.size());
  std::vector<std::uint8_t> bias_bytes, scale_bytes;
  if (cc.bias) {
    std::vector<std::int16_t> bias(cc.kernels);
    for (auto& b : bias) b = static_cast<std::int16_t>(uniform(-3000, 3000));
    bias_bytes = sdp_per_channel_table(bias, l.precision, atom);
    golden.write(kBias, bias_bytes.data(), bias_bytes.size());
    l.sdp.bias = SdpPerChannel{kBias, 4};
  }
  if (cc.scale) {
    std::vector<std::int16_t> scale(cc.kernels);
    for (auto& s : scale) s = static_cast<std::int16_t>(uniform(-200, 400));
    scale_bytes = sdp_per_channel_table(scale, l.precision, atom);
    golden.write(kScale, scale_bytes.data(), scale_bytes.size());
    l.sdp.scale = SdpPerChannel{kScale, 8};
  }
  const ConvGolden g = run_conv_model(l, hw, golden);

  const std::uint64_t out_bytes = surface_bytes(l.dst, l.precision, atom);
  trace.comment(fmt::format("{} ({}): {}x{}x{} {} -> {}x{}x{}, golden from models/", cc.name,
                            cc.config, cc.width, cc.height, cc.channels,
                            precision_name(cc.precision), out.width, out.height, out.channels));
  trace.mem_init_zero(kOutput, out_bytes);
  trace.mem_load(kInput, prefix + "_input.dat", input_bytes);
  trace.mem_load(kWeights, prefix + "_weights.dat", weight_bytes);
  if (cc.bias) trace.mem_load(kBias, prefix + "_bias.dat", bias_bytes);
  if (cc.scale) trace.mem_load(kScale, prefix + "_scale.dat", scale_bytes);
  trace.wait_interrupt(program_conv(trace, l, 0, hw));
  const std::vector<std::uint8_t> want = golden.bytes(kOutput, static_cast<std::size_t>(out_bytes));
  trace.check_crc(kOutput, out_bytes, models::crc32(want.data(), want.size()));
  trace.check_register(regs::CACC::D_OUT_SATURATION::kAddr, g.cacc_saturation);
  trace.check_register(regs::SDP::D_PERF_OUT_SATURATION::kAddr, g.sdp_saturation);
  return g;
}

WrittenTrace write_case(const ConvCase& cc, const std::string& dir) {
  TraceWriter trace;
  WrittenTrace t;
  t.golden = record_case(cc, trace, "conv_" + cc.name);
  t.path = trace.save(dir, "conv_" + cc.name + ".cfg");
  t.checks = 3;
  return t;
}

trace::PlayResult play_functional(const std::string& cfg, const std::string& config) {
  dla::FunctionalDevice device(load_hw_config(config));
  const trace::Trace t = trace::parse_trace_file(cfg);
  return trace::play(t, device, trace::PlayerOptions{});
}

class ConvEndToEnd : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvEndToEnd, PassesOnTheFunctionalDevice) {
  const ConvCase& cc = GetParam();
  TempDir dir(cc.name);
  const WrittenTrace t = write_case(cc, dir.str());
  EXPECT_EQ(t.golden.cacc_saturation > 0, cc.expect_cacc_saturation) << t.golden.cacc_saturation;
  const trace::PlayResult r = play_functional(t.path, cc.config);
  ASSERT_EQ(r.checks.size(), t.checks);
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.pass) << "line " << c.line << ": " << c.description << ": " << c.detail;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvEndToEnd, ::testing::ValuesIn(conv_cases()),
                         [](const ::testing::TestParamInfo<ConvCase>& p) { return p.param.name; });

// The checks can fail: a flipped weight byte changes the output CRC.
TEST(ConvEndToEndFailure, CorruptedWeightsFailTheCrc) {
  const ConvCase cc = conv_cases().at(4);  // pad4sides_c13_k11
  TempDir dir("corrupt");
  const WrittenTrace t = write_case(cc, dir.str());
  const std::string weights = dir.str() + "/conv_" + cc.name + "_weights.dat";
  std::stringstream s;
  s << std::ifstream(weights).rdbuf();
  std::string text = s.str();
  const auto pos = text.find("payload:0x");
  ASSERT_NE(pos, std::string::npos);
  const std::string old_byte = text.substr(pos + 10, 2);
  text.replace(pos + 10, 2, old_byte == "7f" ? "80" : "7f");
  std::ofstream(weights, std::ios::trunc) << text;
  const trace::PlayResult r = play_functional(t.path, cc.config);
  ASSERT_EQ(r.checks.size(), 3u);
  EXPECT_FALSE(r.checks.at(0).pass);
}

// Two layers in one trace on alternating register groups: the second convolves the first's
// output (its golden computed from the first's golden output).
TEST(ConvEndToEndChain, TwoLayersOnGroups0And1) {
  const HwConfig hwc = load_hw_config("nv_small");
  const ConvHardware hw = conv_hardware(hwc);
  std::mt19937 rng(99);
  ConvLayer a;
  a.src = packed_surface(kInput, 9, 9, 8, 8);
  a.weight_address = kWeights;
  a.kernels = 10;
  a.kernel_width = a.kernel_height = 3;
  a.pad_left = a.pad_right = a.pad_top = a.pad_bottom = 1;
  a.sdp.relu = true;
  a.sdp.cvt = SdpConvertor{0, 1, 9};
  a.dst = packed_surface(kOutput, 9, 9, 10, 8);
  ConvLayer b = a;
  b.src = a.dst;
  b.weight_address = kWeights + 0x1000;
  b.kernels = 6;
  b.kernel_width = b.kernel_height = 2;
  b.stride_x = b.stride_y = 2;
  b.pad_left = b.pad_right = b.pad_top = b.pad_bottom = 0;
  b.sdp.relu = false;
  b.sdp.cvt = SdpConvertor{0, 1, 6};
  b.dst = packed_surface(kOutput + 0x10000, 4, 4, 6, 8);

  models::ops::ConvCube in(9, 9, 8);
  for (auto& v : in.data) v = static_cast<std::int8_t>(rng());
  models::ops::ConvWeights wa(10, 3, 3, 8), wb(6, 2, 2, 10);
  for (auto& v : wa.data) v = static_cast<std::int8_t>(rng());
  for (auto& v : wb.data) v = static_cast<std::int8_t>(rng());
  HostMemory golden;
  const auto in_bytes = conv_feature_image(in, a.src, Precision::kInt8, 8);
  const auto wa_bytes = conv_weight_image(wa, Precision::kInt8, hw);
  const auto wb_bytes = conv_weight_image(wb, Precision::kInt8, hw);
  golden.write(kInput, in_bytes.data(), in_bytes.size());
  golden.write(a.weight_address, wa_bytes.data(), wa_bytes.size());
  golden.write(b.weight_address, wb_bytes.data(), wb_bytes.size());
  (void)run_conv_model(a, hw, golden);
  (void)run_conv_model(b, hw, golden);

  TraceWriter trace;
  trace.mem_load(kInput, "in.dat", in_bytes);
  trace.mem_load(a.weight_address, "wa.dat", wa_bytes);
  trace.mem_load(b.weight_address, "wb.dat", wb_bytes);
  for (const auto* l : {&a, &b}) {
    trace.wait_interrupt(program_conv(trace, *l, l == &a ? 0 : 1, hw));
    const std::uint64_t n = surface_bytes(l->dst, Precision::kInt8, 8);
    const auto want = golden.bytes(l->dst.address, static_cast<std::size_t>(n));
    trace.check_crc(l->dst.address, n, models::crc32(want.data(), want.size()));
  }
  TempDir dir("chain");
  const trace::PlayResult r = play_functional(trace.save(dir.str(), "chain.cfg"), "nv_small");
  ASSERT_EQ(r.checks.size(), 2u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.pass) << c.description << ": " << c.detail;
}

// Producer for the cycle-level fixture: writes every case's trace into OCTASIM_CONV_TRACE_DIR.
TEST(ConvTraceFiles, Write) {
  const char* dir = std::getenv("OCTASIM_CONV_TRACE_DIR");
  if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "OCTASIM_CONV_TRACE_DIR is not set";
  std::filesystem::create_directories(dir);
  for (const ConvCase& cc : conv_cases()) {
    const WrittenTrace t = write_case(cc, dir);
    EXPECT_TRUE(std::filesystem::exists(t.path)) << t.path;
  }
}

}  // namespace
}  // namespace octasim::firmware
