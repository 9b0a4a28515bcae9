// Convolution -> SDP -> PDP on the fly, end to end: layers programmed by firmware/dla/conv_pool
// (program_conv_pool) and recorded as NVDLA traces whose golden CRCs come from models/
// (run_conv_pool_model: run_conv_int + run_sdp_layer into memory, then run_pdp_layer from it;
// never the simulator), played on the functional device here; ConvPoolTraceFiles.Write writes
// them for the ctest cases that play them through `octasim run` (functional and cycle-level).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "firmware/dla/conv_pool.hpp"
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

struct PoolCase {
  std::string name;
  std::string config = "nv_small";
  std::uint32_t width = 8, height = 8, channels = 8, kernels = 16;
  PoolMethod method = PoolMethod::kMax;
  unsigned kernel = 2, stride = 2, pad = 0;
  std::int32_t pad_value = 0;
};

void PrintTo(const PoolCase& c, std::ostream* os) {
  *os << c.name << " (" << c.config << ")";
}

// The names are those tests/firmware/CMakeLists.txt plays through `octasim run`.
std::vector<PoolCase> pool_cases() {
  std::vector<PoolCase> v;
  PoolCase c;
  c.name = "max2x2_k16";
  v.push_back(c);
  c = PoolCase{};
  c.name = "ave3x3_s2_pad1_k12";
  c.width = 11, c.height = 9, c.channels = 5, c.kernels = 12;
  c.method = PoolMethod::kAverage, c.kernel = 3, c.stride = 2, c.pad = 1, c.pad_value = -3;
  v.push_back(c);
  c = PoolCase{};
  c.name = "nv_large_min3x3_s1_k40";
  c.config = "nv_large";
  c.width = 10, c.height = 7, c.channels = 20, c.kernels = 40;
  c.method = PoolMethod::kMin, c.kernel = 3, c.stride = 1;
  v.push_back(c);
  return v;
}

constexpr std::uint64_t kInput = 0x80000000, kWeights = 0x80100000, kBias = 0x80180000,
                        kConvOut = 0x80200000, kPooled = 0x80300000;

struct Recorded {
  TraceWriter trace;
  ConvPoolLayer layer;
  std::uint64_t conv_out_bytes = 0;  // the cube passed on the fly
  std::uint64_t pooled_bytes = 0;
};

// Records the case; `pdp_first` false programs the convolution before PDP (the pairing must not
// depend on the order).
void record(const PoolCase& pc, Recorded& rec, bool pdp_first = true) {
  const HwConfig hwc = load_hw_config(pc.config);
  const ConvHardware hw = conv_hardware(hwc);
  const unsigned atom = hw.atom_bytes;
  ConvLayer& l = rec.layer.conv;
  l.src = packed_surface(kInput, pc.width, pc.height, pc.channels, atom);
  l.weight_address = kWeights;
  l.kernels = pc.kernels;
  l.kernel_width = l.kernel_height = 3;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = 1;
  l.sdp.relu = true;
  l.sdp.cvt = SdpConvertor{0, 1, 8};
  l.sdp.bias = SdpPerChannel{kBias, 2};
  const ConvCubeSize out = conv_output_cube(l);
  l.dst = packed_surface(kConvOut, out.width, out.height, out.channels, atom);
  PdpLayer& p = rec.layer.pool;
  p.method = pc.method;
  p.kernel_width = p.kernel_height = pc.kernel;
  p.stride_x = p.stride_y = pc.stride;
  p.pad_left = p.pad_right = p.pad_top = p.pad_bottom = pc.pad;
  p.pad_value = pc.pad_value;
  p.src = l.dst;
  const std::uint32_t ow = pdp_output_size(out.width, pc.kernel, pc.stride, pc.pad, pc.pad);
  const std::uint32_t oh = pdp_output_size(out.height, pc.kernel, pc.stride, pc.pad, pc.pad);
  p.dst = packed_surface(kPooled, ow, oh, out.channels, atom);

  std::mt19937 rng(static_cast<std::uint32_t>(std::hash<std::string>{}(pc.name) & 0xffffffffu));
  models::ops::ConvCube in(pc.width, pc.height, pc.channels);
  models::ops::ConvWeights w(pc.kernels, 3, 3, pc.channels);
  for (auto& v : in.data) v = static_cast<std::int8_t>(rng());
  for (auto& v : w.data) v = static_cast<std::int8_t>(rng());
  std::vector<std::int16_t> bias(pc.kernels);
  for (auto& b : bias)
    b = static_cast<std::int16_t>(static_cast<std::int32_t>(rng() % 4001) - 2000);

  HostMemory golden;
  const auto in_bytes = conv_feature_image(in, l.src, Precision::kInt8, atom);
  const auto w_bytes = conv_weight_image(w, Precision::kInt8, hw);
  const auto b_bytes = sdp_per_channel_table(bias, Precision::kInt8, atom);
  golden.write(kInput, in_bytes.data(), in_bytes.size());
  golden.write(kWeights, w_bytes.data(), w_bytes.size());
  golden.write(kBias, b_bytes.data(), b_bytes.size());
  const ConvGolden g = run_conv_pool_model(rec.layer, hw, golden);

  rec.conv_out_bytes = surface_bytes(l.dst, Precision::kInt8, atom);
  rec.pooled_bytes = surface_bytes(p.dst, Precision::kInt8, atom);
  TraceWriter& t = rec.trace;
  t.comment(fmt::format("{} ({}): conv {}x{}x{} -> {}x{}x{}, SDP -> PDP on the fly -> {}x{}x{}",
                        pc.name, pc.config, pc.width, pc.height, pc.channels, out.width, out.height,
                        out.channels, ow, oh, out.channels));
  t.mem_init_zero(kPooled, rec.pooled_bytes);
  t.mem_init_zero(kConvOut, rec.conv_out_bytes);
  t.mem_load(kInput, pc.name + "_input.dat", in_bytes);
  t.mem_load(kWeights, pc.name + "_weights.dat", w_bytes);
  t.mem_load(kBias, pc.name + "_bias.dat", b_bytes);
  ConvPoolInterrupts intr;
  if (pdp_first) {
    intr = program_conv_pool(t, rec.layer, 0, hw);
  } else {
    ConvLayer c = rec.layer.conv;
    c.sdp.output_to_pdp = true;
    PdpLayer q = rec.layer.pool;
    q.on_the_fly = true;
    intr.sdp = program_conv(t, c, 0, hw);
    intr.pdp = program_pdp(t, q, 0, atom);
  }
  t.wait_interrupt(intr.pdp);
  t.wait_interrupt(intr.sdp);
  const auto want = golden.bytes(kPooled, static_cast<std::size_t>(rec.pooled_bytes));
  t.check_crc(kPooled, rec.pooled_bytes, models::crc32(want.data(), want.size()));
  // The convolution's output never reaches memory: its surface keeps the zeros it started with.
  const std::vector<std::uint8_t> zeros(static_cast<std::size_t>(rec.conv_out_bytes), 0);
  t.check_crc(kConvOut, rec.conv_out_bytes, models::crc32(zeros.data(), zeros.size()));
  t.check_register(regs::SDP::D_PERF_OUT_SATURATION::kAddr, g.sdp_saturation);
}

trace::PlayResult play(const std::string& cfg, const std::string& config,
                       dla::FunctionalDevice& device) {
  (void)config;
  const trace::Trace t = trace::parse_trace_file(cfg);
  trace::PlayerOptions options;
  options.timeout_cycles = 100000;
  return trace::play(t, device, options);
}

class ConvPoolEndToEnd : public ::testing::TestWithParam<PoolCase> {};

TEST_P(ConvPoolEndToEnd, PoolsOnTheFlyOnTheFunctionalDevice) {
  const PoolCase& pc = GetParam();
  for (const bool pdp_first : {true, false}) {
    Recorded rec;
    record(pc, rec, pdp_first);
    TempDir dir(pc.name + (pdp_first ? "-pdp-first" : "-conv-first"));
    dla::FunctionalDevice device(load_hw_config(pc.config));
    const trace::PlayResult r = play(rec.trace.save(dir.str(), "t.cfg"), pc.config, device);
    ASSERT_EQ(r.checks.size(), 3u);
    for (const auto& c : r.checks) {
      EXPECT_TRUE(c.pass) << "line " << c.line << ": " << c.description << ": " << c.detail;
    }
    // Two layers: the convolution handed its whole output cube to PDP, PDP took exactly that
    // and read nothing from memory.
    ASSERT_EQ(device.layers().size(), 2u);
    const dla::OpResult& conv = device.layers()[0].result;
    const dla::OpResult& pool = device.layers()[1].result;
    EXPECT_EQ(device.layers()[0].engine, "CONV");
    EXPECT_EQ(device.layers()[1].engine, "PDP");
    EXPECT_EQ(conv.bytes_written, 0u);
    EXPECT_EQ(conv.bytes_on_the_fly, rec.conv_out_bytes);
    EXPECT_EQ(pool.bytes_on_the_fly, rec.conv_out_bytes);
    EXPECT_EQ(pool.bytes_read, 0u);
    EXPECT_TRUE(conv.dma.output.empty());
    EXPECT_TRUE(pool.dma.input.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvPoolEndToEnd, ::testing::ValuesIn(pool_cases()),
                         [](const ::testing::TestParamInfo<PoolCase>& p) { return p.param.name; });

// Replaces the value of the first `reg_write(<reg>, ...)` in a trace file.
void rewrite_register(const std::string& path, const std::string& reg, const std::string& value,
                      bool drop = false) {
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  std::string text = s.str();
  const std::regex line("reg_write\\(" + std::regex_replace(reg, std::regex("\\."), "\\.") +
                        ", *0x[0-9a-fA-F]+\\);\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, line)) << reg;
  text.replace(static_cast<std::size_t>(m.position(0)), static_cast<std::size_t>(m.length(0)),
               drop ? std::string() : "reg_write(" + reg + ", " + value + ");\n");
  std::ofstream(path, std::ios::trunc) << text;
}

// The checks can fail: SDP sending its output to memory instead leaves nothing to pool (PDP's
// flying group never starts, so its interrupt wait fails; the output surface is not pooled).
TEST(ConvPoolFailure, WithoutAFlyingPdpNothingIsPooledAndTheWaitFailsWithoutHanging) {
  const PoolCase pc = pool_cases().at(0);
  Recorded rec;
  record(pc, rec);
  TempDir dir("no-pdp");
  const std::string path = rec.trace.save(dir.str(), "t.cfg");
  // PDP is never enabled: SDP (OUTPUT_DST=PDP) waits for it, nothing runs.
  rewrite_register(path, "NVDLA_PDP.D_OP_ENABLE_0", "", true);
  dla::FunctionalDevice device(load_hw_config(pc.config));
  try {
    (void)play(path, pc.config, device);
    ADD_FAILURE() << "the interrupt wait succeeded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("PDP_0"), std::string::npos) << e.what();
    std::cerr << "refusal: " << e.what() << "\n";
  }
  EXPECT_TRUE(device.layers().empty());
}

// NVDLA pools SDP's output in one pass: a flying PDP programmed with split widths is refused
// with one clear error (SPLIT_NUM=1 in bits 15:8).
TEST(ConvPoolFailure, SplitWidthOnTheFlyIsRefused) {
  const PoolCase pc = pool_cases().at(0);
  Recorded rec;
  record(pc, rec);
  TempDir dir("split");
  const std::string path = rec.trace.save(dir.str(), "t.cfg");
  // POOLING_METHOD MAX (1), FLYING_MODE ON_FLYING (0), SPLIT_NUM 1.
  rewrite_register(path, "NVDLA_PDP.D_OPERATION_MODE_CFG_0", "0x101");
  dla::FunctionalDevice device(load_hw_config(pc.config));
  try {
    (void)play(path, pc.config, device);
    ADD_FAILURE() << "a split-width flying PDP ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("SPLIT_NUM 1 with FLYING_MODE=ON_FLYING"),
              std::string::npos)
        << e.what();
  }
}

// Producer for the `octasim run` cases: every case's trace into OCTASIM_CONV_POOL_TRACE_DIR.
TEST(ConvPoolTraceFiles, Write) {
  const char* dir = std::getenv("OCTASIM_CONV_POOL_TRACE_DIR");
  if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "OCTASIM_CONV_POOL_TRACE_DIR is not set";
  std::filesystem::create_directories(dir);
  for (const PoolCase& pc : pool_cases()) {
    Recorded rec;
    record(pc, rec);
    const std::string path = rec.trace.save(dir, "conv_pool_" + pc.name + ".cfg");
    EXPECT_TRUE(std::filesystem::exists(path)) << path;
  }
}

}  // namespace
}  // namespace octasim::firmware
