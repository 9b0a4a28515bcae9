// An nv_full FP16 convolution layer end to end on the functional device: the register
// programming of conv_fp16_layer.hpp recorded as a trace, played by the trace player, output
// checked byte-exact against the models/ golden and with the FP16 CC rule against an
// independent double-precision reference; and the player's FP16 check_file rules themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <fmt/core.h>

#include "firmware/driver/trace_writer.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/fp16/conv_fp16_trace.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::test {
namespace {

trace::PlayResult play_on_nv_full(const std::string& cfg) {
  dla::FunctionalDevice dev(load_hw_config("nv_full"));
  return trace::play(trace::parse_trace_file(cfg), dev, trace::PlayerOptions{});
}

void expect_all_pass(const trace::PlayResult& r, std::size_t checks) {
  ASSERT_EQ(r.checks.size(), checks);
  for (const trace::CheckOutcome& c : r.checks) {
    EXPECT_TRUE(c.pass) << "line " << c.line << ": " << c.description << ": " << c.detail;
  }
}

TEST(ConvFp16EndToEnd, NvFullLayerMatchesGoldenAndReference) {
  TempDir dir;
  Fp16ConvLayer layer;
  layer.fill(20240607);
  expect_all_pass(play_on_nv_full(write_conv_fp16_trace(layer, dir.path().string())), 5);
}

TEST(ConvFp16EndToEnd, StridedWithoutReluAndCountsNanInfWithFlush) {
  TempDir dir;
  Fp16ConvLayer layer;
  layer.width = 11;
  layer.height = 6;
  layer.channels = 16;
  layer.kernels = 48;
  layer.kernel_w = 2;
  layer.kernel_h = 3;
  layer.stride_x = 2;
  layer.pad_right = 0;
  layer.relu = false;
  layer.bs_mul = models::fp16_from_double(-0.75);
  layer.nan_to_zero = true;
  layer.fill(99);
  layer.input.at(3, 2, 5) = 0x7e00;    // NaN: counted, flushed to +0
  layer.input.at(10, 5, 15) = 0x7d01;  // NaN
  layer.input.at(0, 0, 0) = 0x7c00;    // +inf: counted; its outputs saturate to +-65504
  expect_all_pass(play_on_nv_full(write_conv_fp16_trace(layer, dir.path().string(), 2, 1)), 5);
}

TEST(ConvFp16EndToEnd, CcRuleFailsOnAPerturbedResultNamingTheWorstElement) {
  TempDir dir;
  Fp16ConvLayer layer;
  layer.width = 4;
  layer.height = 3;
  layer.channels = 24;
  layer.kernels = 16;
  layer.fill(5);
  const std::string cfg = write_conv_fp16_trace(layer, dir.path().string());
  // Perturb the reference by 1.0 at output (1, 1) of kernel 3 and by 0.25 at (0, 0) of kernel 0.
  std::vector<std::uint8_t> ref = layer.reference();
  const auto bump = [&](std::size_t at, double by) {
    const auto h = static_cast<std::uint16_t>(ref[at] | ref[at + 1] << 8);
    const std::uint16_t p = models::fp16_from_double(models::decode_float(h, models::kFp16) + by);
    ref[at] = static_cast<std::uint8_t>(p);
    ref[at + 1] = static_cast<std::uint8_t>(p >> 8);
  };
  const std::size_t worst = std::size_t{1} * layer.out_line_stride() + 1 * kAtom + 3 * 2;
  bump(worst, 1.0);
  bump(0, 0.25);
  firmware::write_text_file(dir.path().string() + "/reference.dat", firmware::format_dat(ref));
  const trace::PlayResult r = play_on_nv_full(cfg);
  ASSERT_EQ(r.checks.size(), 5u);
  const trace::CheckOutcome& cc = r.checks.back();
  EXPECT_FALSE(cc.pass);
  EXPECT_NE(cc.description.find("check_file FP16_CC_DIRECT"), std::string::npos);
  EXPECT_NE(cc.detail.find(cfg + ":" + std::to_string(cc.line) + ": 2 of "), std::string::npos)
      << cc.detail;
  EXPECT_NE(cc.detail.find(fmt::format("worst at 0x{:x}", layer.out_addr + worst)),
            std::string::npos)
      << cc.detail;
  EXPECT_NE(cc.detail.find("R*S*C 216"), std::string::npos) << cc.detail;
  // The byte-exact and FP16_SDP checks against the models/ golden still pass.
  EXPECT_TRUE(r.checks[2].pass);
  EXPECT_TRUE(r.checks[3].pass);
}

TEST(Fp16CheckFile, SdpRuleIsBitExactAndCcRuleAdmitsItsBound) {
  TempDir dir;
  // Memory holds 1.0 and 2.0; the golden says 1.0 and 2.0 + one ulp (2^-9).
  dir.write("got.dat", "{\n{offset:0x0, size:4, payload:0x00 0x3c 0x00 0x40} ,\n}\n");
  dir.write("want.dat", "{\n{offset:0x0, size:4, payload:0x00 0x3c 0x01 0x40} ,\n}\n");
  // With max_exp -30 the CC slack is negligible; the bound is one ulp of the value under test.
  const std::string cfg =
      dir.write("t.cfg",
                "mem_load(pri_mem, 0x100, \"got.dat\");\n"
                "sync_notify(x, s);\n"
                "check_file(s, pri_mem, 0x100, 4, \"want.dat\", FP16_SDP);\n"
                "check_file(s, pri_mem, 0x100, 4, \"want.dat\", FP16_CC_DIRECT, 9, 1.0, -30);\n"
                "check_file(s, pri_mem, 0x100, 4, \"want.dat\");\n");
  const trace::PlayResult r = play_on_nv_full(cfg);
  ASSERT_EQ(r.checks.size(), 3u);
  EXPECT_FALSE(r.checks[0].pass);
  EXPECT_NE(r.checks[0].detail.find("1 of 2 FP16 elements fail; worst at 0x102 (element 1): got "
                                    "0x4000 (2), want 0x4001 (2.00195"),
            std::string::npos)
      << r.checks[0].detail;
  EXPECT_TRUE(r.checks[1].pass) << r.checks[1].detail;
  EXPECT_FALSE(r.checks[2].pass);
}

// FP16_CC_WINOGRAD: v1_ias_precision.rst's "CC Winograd" threshold, |a-b| <= 2^(max_exp-20) *
// 18 * C * 2 * scale + 2^(exp(a)-10), computed here independently. a = 2^-10 (0x1400, exp -10,
// one ulp 2^-20); C 1, scale 0.26, max_exp 0: bound = 2^-20 (36 * 0.26 + 1) = 10.36 ulp, so a
// golden 10 ulp away passes and one 11 ulp away fails.
TEST(Fp16CheckFile, CcWinogradRuleAdmitsItsBoundAndNoMore) {
  const int exp_a = ((0x1400 >> 10) & 0x1f) - 15;
  const double bound = std::ldexp(18.0 * 1 * 2 * 0.26, 0 - 20) + std::ldexp(1.0, exp_a - 10);
  const int inside = static_cast<int>(std::floor(bound / std::ldexp(1.0, -20)));
  ASSERT_EQ(inside, 10);
  const auto dat = [](int bits) {
    return fmt::format("{{\n{{offset:0x0, size:2, payload:0x{:02x} 0x{:02x}}} ,\n}}\n", bits & 0xff,
                       bits >> 8);
  };
  TempDir dir;
  dir.write("got.dat", dat(0x1400));
  dir.write("in.dat", dat(0x1400 + inside));
  dir.write("out.dat", dat(0x1400 + inside + 1));
  const std::string cfg =
      dir.write("t.cfg",
                "mem_load(pri_mem, 0x100, \"got.dat\");\n"
                "sync_notify(x, s);\n"
                "check_file(s, pri_mem, 0x100, 2, \"in.dat\", FP16_CC_WINOGRAD, 1, 0.26, 0);\n"
                "check_file(s, pri_mem, 0x100, 2, \"out.dat\", FP16_CC_WINOGRAD, 1, 0.26, 0);\n"
                "check_file(s, pri_mem, 0x100, 2, \"in.dat\", FP16_CC_DIRECT, 1, 0.26, 0);\n");
  const trace::PlayResult r = play_on_nv_full(cfg);
  ASSERT_EQ(r.checks.size(), 3u);
  EXPECT_TRUE(r.checks[0].pass) << r.checks[0].detail;
  EXPECT_FALSE(r.checks[1].pass);
  EXPECT_NE(r.checks[1].description.find("check_file FP16_CC_WINOGRAD"), std::string::npos);
  EXPECT_NE(r.checks[1].detail.find("(max_exp 0, C 1, scale 0.26)"), std::string::npos)
      << r.checks[1].detail;
  // The direct rule with R*S*C = 1 (bound 2^-20 (2 * 0.26 + 1) = 1.52 ulp) rejects the same pair.
  EXPECT_FALSE(r.checks[2].pass);
}

TEST(Fp16CheckFile, MalformedArgumentsAreOneLineErrors) {
  TempDir dir;
  dir.write("g.dat", "{\n}\n");
  const auto error = [&](const std::string& line) {
    try {
      (void)trace::parse_trace(line, (dir.path() / "t.cfg").string());
    } catch (const trace::TraceError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("check_file(s, 1, 0x0, 4, \"g.dat\", FP16_CC);")
                .find("unknown check_file comparison 'FP16_CC'"),
            std::string::npos);
  EXPECT_NE(error("check_file(s, 1, 0x0, 4, \"g.dat\", FP16_CC_DIRECT, 9, 0, 3);")
                .find("expected scale (a positive number), got '0'"),
            std::string::npos);
  EXPECT_NE(error("check_file(s, 1, 0x0, 4, \"g.dat\", FP16_CC_WINOGRAD, 0, 1.0, 3);")
                .find("C of FP16_CC_WINOGRAD must be positive"),
            std::string::npos);
  EXPECT_NE(error("check_file(s, 1, 0x0, 3, \"g.dat\", FP16_SDP);").find("must be even"),
            std::string::npos);
  EXPECT_NE(error("check_file(s, 1, 0x0, 4, \"g.dat\", FP16_CC_DIRECT, 9, 1.0, x);")
                .find("expected max_exp"),
            std::string::npos);
  EXPECT_NE(error("check_file(s, 1, 0x0, 4, \"g.dat\", FP16_CC_DIRECT, 9, 1.0, \"no.dat\");")
                .find("not found"),
            std::string::npos);
}

}  // namespace
}  // namespace octasim::test
