// End to end: sparse convolution layers on nv_full with their weights stored compressed (WMB,
// WGS and compressed data, models/ops/conv_compress.hpp), programmed by firmware/dla/conv
// (ConvLayer::compressed) and recorded as NVDLA traces. The golden output comes from models/:
// run_conv_model on the same layer with its weights uncompressed, which must also equal
// run_conv_model on the compressed layer. Played on the functional device in this process and
// by `octasim run --config nv_full` on the cycle-level device in its own process; the compressed
// layer must read exactly (dense weights - data - WMB - WGS) bytes less than the same layer
// uncompressed. Inconsistent WGS / WMB_BYTES and nv_small are refused with one line.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/conv.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "models/ops/conv_compress.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
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

constexpr std::uint64_t kInput = 0x80000000, kDense = 0x80100000, kData = 0x80200000,
                        kWmb = 0x80280000, kWgs = 0x802c0000, kBias = 0x802d0000,
                        kOutput = 0x80300000;

struct SparseCase {
  std::string name;
  Precision precision = Precision::kInt8;
  std::uint32_t width = 8, height = 8, channels = 8;
  std::uint32_t kernels = 8, kernel_width = 3, kernel_height = 3;
  std::uint32_t stride = 1, pad = 0;
  double zeros = 0.7;  // fraction of zero weights
};

// gtest prints a parameter in test names and failures: the case's name, not its bytes.
void PrintTo(const SparseCase& c, std::ostream* os) {
  *os << c.name;
}

// INT8: 40 kernels = a group of 32 and one of 8, 70 channels = a 64-channel block and a 6-channel
// one. INT16: 24 kernels = groups of 16 and 8, a 2x3 kernel, stride 2.
SparseCase int8_case() {
  SparseCase c;
  c.name = "int8_14x10x70_k40";
  c.width = 14, c.height = 10, c.channels = 70, c.kernels = 40, c.pad = 1;
  return c;
}
SparseCase int16_case() {
  SparseCase c;
  c.name = "int16_9x7x20_k24";
  c.precision = Precision::kInt16;
  c.width = 9, c.height = 7, c.channels = 20, c.kernels = 24;
  c.kernel_width = 3, c.kernel_height = 2, c.stride = 2, c.zeros = 0.6;
  return c;
}

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

struct Recorded {
  std::string compressed_cfg, dense_cfg;
  std::uint64_t dense_weight_bytes = 0;  // the 128-byte-aligned dense weight image
  std::uint64_t compressed_fetch = 0;    // data + WMB + WGS (4 B a group, whole 32-B atoms)
};

// Records the case twice (compressed and dense weights) into `dir`. `corrupt_wgs` adds one
// element to kernel group 0's WGS; `overrides` replace register values of the compressed layer.
Recorded record(const SparseCase& sc, const std::string& dir, bool corrupt_wgs = false,
                const Overrides& overrides = {}) {
  const ConvHardware hw = conv_hardware(load_hw_config("nv_full"));
  const unsigned atom = hw.atom_bytes;
  const bool int8 = sc.precision == Precision::kInt8;
  const std::int32_t lo = int8 ? -128 : -32768, hi = int8 ? 127 : 32767;

  ConvLayer l;
  l.precision = sc.precision;
  l.src = packed_surface(kInput, sc.width, sc.height, sc.channels, atom);
  l.weight_address = kDense;
  l.kernels = sc.kernels;
  l.kernel_width = sc.kernel_width;
  l.kernel_height = sc.kernel_height;
  l.stride_x = l.stride_y = sc.stride;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = sc.pad;
  l.pad_value = int8 ? 3 : -300;
  const ConvCubeSize out = conv_output_cube(l);
  l.dst = packed_surface(kOutput, out.width, out.height, out.channels, atom);

  std::mt19937 rng(static_cast<std::uint32_t>(std::hash<std::string>{}(sc.name) & 0xffffffffu));
  const auto uniform = [&](std::int32_t a, std::int32_t b) {
    return std::uniform_int_distribution<std::int32_t>(a, b)(rng);
  };
  std::bernoulli_distribution zero(sc.zeros);
  models::ops::ConvCube in(sc.width, sc.height, sc.channels);
  models::ops::ConvWeights w(sc.kernels, sc.kernel_height, sc.kernel_width, sc.channels);
  for (auto& v : in.data) v = uniform(lo, hi);
  for (auto& v : w.data) v = zero(rng) ? 0 : uniform(lo, hi);
  const double n = (1.0 - sc.zeros) * sc.kernel_width * sc.kernel_height * sc.channels;
  const double spread = (int8 ? 74.0 * 74.0 : 18918.0 * 18918.0) * std::sqrt(n);
  const int shift =
      std::max(0, static_cast<int>(std::ceil(std::log2(spread / (int8 ? 48.0 : 12000.0)))));
  l.sdp.cvt = SdpConvertor{0, 1, static_cast<unsigned>(std::min(shift, 63))};
  l.sdp.relu = true;

  const std::vector<std::uint8_t> input = conv_feature_image(in, l.src, l.precision, atom);
  const std::vector<std::uint8_t> dense = conv_weight_image(w, l.precision, hw);
  models::ops::CompressedWeights c = conv_compressed_weight_image(w, l.precision, hw);
  std::vector<std::int16_t> bias(sc.kernels);
  for (auto& b : bias) b = static_cast<std::int16_t>(uniform(-3000, 3000));
  const std::vector<std::uint8_t> bias_bytes = sdp_per_channel_table(bias, l.precision, atom);
  l.sdp.bias = SdpPerChannel{kBias, 4};

  ConvLayer lc = l;
  lc.weight_address = kData;
  lc.compressed = ConvCompressedWeights{kWmb, kWgs, static_cast<std::uint32_t>(c.data.size())};

  // Golden from models/: the dense layer; the compressed layer must give the same bytes.
  HostMemory golden, golden_c;
  for (HostMemory* m : {&golden, &golden_c}) {
    m->write(kInput, input.data(), input.size());
    m->write(kBias, bias_bytes.data(), bias_bytes.size());
  }
  golden.write(kDense, dense.data(), dense.size());
  golden_c.write(kData, c.data.data(), c.data.size());
  golden_c.write(kWmb, c.wmb.data(), c.wmb.size());
  golden_c.write(kWgs, c.wgs.data(), c.wgs.size());
  const ConvGolden g = run_conv_model(l, hw, golden);
  const ConvGolden gc = run_conv_model(lc, hw, golden_c);
  const std::uint64_t out_bytes = surface_bytes(l.dst, l.precision, atom);
  const std::vector<std::uint8_t> want = golden.bytes(kOutput, static_cast<std::size_t>(out_bytes));
  EXPECT_EQ(golden_c.bytes(kOutput, want.size()), want) << sc.name;
  EXPECT_EQ(gc.cacc_saturation, g.cacc_saturation);
  std::size_t nonzero = 0;
  for (std::uint8_t b : want) nonzero += b != 0;
  EXPECT_GT(nonzero, want.size() / 4) << "degenerate golden output";

  if (corrupt_wgs) c.wgs[0] = static_cast<std::uint8_t>(c.wgs[0] + (int8 ? 1 : 2));
  Recorded r;
  r.dense_weight_bytes = dense.size();
  const std::uint64_t groups = (sc.kernels + (int8 ? 32 : 16) - 1) / (int8 ? 32 : 16);
  r.compressed_fetch = c.data.size() + c.wmb.size() + (4 * groups + 31) / 32 * 32;
  for (const bool compressed : {true, false}) {
    TraceWriter t;
    const std::string tag = sc.name + (compressed ? "_compressed" : "_dense");
    t.mem_init_zero(kOutput, out_bytes);
    t.mem_load(kInput, tag + "_input.dat", input);
    t.mem_load(kBias, tag + "_bias.dat", bias_bytes);
    if (compressed) {
      t.mem_load(kData, tag + "_data.dat", c.data);
      t.mem_load(kWmb, tag + "_wmb.dat", c.wmb);
      t.mem_load(kWgs, tag + "_wgs.dat", c.wgs);
      OverrideMmio m(t, overrides);
      t.wait_interrupt(program_conv(m, lc, 0, hw));
    } else {
      t.mem_load(kDense, tag + "_weights.dat", dense);
      t.wait_interrupt(program_conv(t, l, 0, hw));
    }
    t.check_crc(kOutput, out_bytes, models::crc32(want.data(), want.size()));
    t.check_register(regs::CACC::D_OUT_SATURATION::kAddr, g.cacc_saturation);
    (compressed ? r.compressed_cfg : r.dense_cfg) = t.save(dir, tag + ".cfg");
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

// A number after `pattern` (a regex with one group) in `text`, or -1.
long long number(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return -1;
  return std::stoll(m[1].str());
}

class CompressedConv : public ::testing::TestWithParam<SparseCase> {};

TEST_P(CompressedConv, PassesOnTheFunctionalDevice) {
  const SparseCase& sc = GetParam();
  TempDir dir(sc.name + "-functional");
  const Recorded r = record(sc, dir.str());
  EXPECT_LT(r.compressed_fetch, r.dense_weight_bytes);
  expect_all_pass(play_functional(r.compressed_cfg, "nv_full"), r.compressed_cfg);
  expect_all_pass(play_functional(r.dense_cfg, "nv_full"), r.dense_cfg);
}

// `octasim run --config nv_full` on the cycle-level device (its own process): the checks pass
// and the layer reads exactly the weight bytes saved by the compression less.
TEST_P(CompressedConv, CycleLevelReadsFewerWeightBytes) {
  const SparseCase& sc = GetParam();
  TempDir dir(sc.name + "-cycle");
  const Recorded r = record(sc, dir.str());
  std::string out_c, out_d;
  ASSERT_EQ(run_octasim("run " + r.compressed_cfg + " --config nv_full", &out_c), 0) << out_c;
  ASSERT_EQ(run_octasim("run " + r.dense_cfg + " --config nv_full", &out_d), 0) << out_d;
  EXPECT_NE(out_c.find("checks: 2 passed, 0 failed"), std::string::npos) << out_c;
  EXPECT_NE(out_d.find("checks: 2 passed, 0 failed"), std::string::npos) << out_d;
  const std::string layer_read = R"(CONV group 0: [^\n]* read (\d+) B)";
  const std::string weights = R"(weights (\d+) B)";
  EXPECT_EQ(number(out_c, weights), static_cast<long long>(r.compressed_fetch)) << out_c;
  EXPECT_EQ(number(out_d, weights), static_cast<long long>(r.dense_weight_bytes)) << out_d;
  const long long read_c = number(out_c, layer_read), read_d = number(out_d, layer_read);
  ASSERT_GT(read_c, 0) << out_c;
  EXPECT_EQ(read_d - read_c, static_cast<long long>(r.dense_weight_bytes) -
                                 static_cast<long long>(r.compressed_fetch));
  // What the DRAM served: the same saving (the cycle-level weight DMA read WGS, data and WMB).
  const std::string dram = R"(DRAM: read (\d+) B)";
  EXPECT_EQ(
      number(out_d, dram) - number(out_c, dram),
      static_cast<long long>(r.dense_weight_bytes) - static_cast<long long>(r.compressed_fetch))
      << out_c << out_d;
}

INSTANTIATE_TEST_SUITE_P(Cases, CompressedConv, ::testing::Values(int8_case(), int16_case()),
                         [](const ::testing::TestParamInfo<SparseCase>& p) {
                           return p.param.name;
                         });

// Refusals on the functional device: one line naming the problem.
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

TEST(CompressedConvRefusals, WgsDisagreeingWithTheMask) {
  TempDir dir("wgs");
  const Recorded r = record(int8_case(), dir.str(), /*corrupt_wgs=*/true);
  expect_refused(r.compressed_cfg, "nv_full", "WGS of kernel group 0");
}

TEST(CompressedConvRefusals, WmbBytes) {
  namespace CD = regs::CDMA;
  namespace CS = regs::CSC;
  {
    TempDir dir("wmb-csc");
    const Recorded r = record(int8_case(), dir.str(), false, {{CS::D_WMB_BYTES::kAddr, 128}});
    expect_refused(r.compressed_cfg, "nv_full", "CSC WMB_BYTES is 128 but CDMA says 3200");
  }
  {
    // 40 kernels x 3x3x70 = 25200 mask bits = 3150 bytes, padded to 3200.
    TempDir dir("wmb-both");
    const Recorded r = record(int8_case(), dir.str(), false,
                              {{CD::D_WMB_BYTES::kAddr, 3072}, {CS::D_WMB_BYTES::kAddr, 3072}});
    expect_refused(r.compressed_cfg, "nv_full",
                   "CDMA WMB_BYTES is 3072 but the mask bits of 25200 weights take 3200");
  }
  {
    TempDir dir("csc-format");
    const Recorded r = record(int8_case(), dir.str(), false, {{CS::D_WEIGHT_FORMAT::kAddr, 0}});
    expect_refused(r.compressed_cfg, "nv_full", "CSC WEIGHT_FORMAT");
  }
}

TEST(CompressedConvRefusals, NotPresentOnNvSmall) {
  TempDir dir("small");
  const Recorded r = record(int8_case(), dir.str());
  expect_refused(r.compressed_cfg, "nv_small", "compressed weights");
}

TEST(CompressedConvFirmware, RefusesWhatTheHardwareCannotDo) {
  ConvHardware hw = conv_hardware(load_hw_config("nv_full"));
  ConvLayer l;
  l.src = packed_surface(kInput, 8, 8, 16, hw.atom_bytes);
  l.weight_address = kData;
  l.kernels = 8;
  l.kernel_width = l.kernel_height = 3;
  l.dst = packed_surface(kOutput, 6, 6, 8, hw.atom_bytes);
  l.compressed = ConvCompressedWeights{kWmb, kWgs, 256};
  const ConvPlan p = plan_conv(l, hw);
  EXPECT_EQ(p.weight_bytes, 256u);
  EXPECT_EQ(p.wmb_bytes, 256u);  // 8 x 3x3x16 = 1152 mask bits = 144 bytes, padded
  l.compressed->data_bytes = 200;
  EXPECT_THROW((void)plan_conv(l, hw), FirmwareError);
  l.compressed->data_bytes = 256;
  l.compressed->wmb_address = kWmb + 16;
  EXPECT_THROW((void)plan_conv(l, hw), FirmwareError);
  l.compressed->wmb_address = kWmb;
  hw.weight_compression = false;
  EXPECT_THROW((void)plan_conv(l, hw), FirmwareError);
}

}  // namespace
}  // namespace octasim::firmware
