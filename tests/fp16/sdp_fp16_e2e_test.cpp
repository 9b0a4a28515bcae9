// An nv_full FP16 memory-to-memory SDP layer (sdp_fp16_layer.hpp) end to end on the functional
// device: programmed from registers, recorded as a trace, played; the output equals the models/
// golden byte for byte and an independent float reference, and SDP_RDMA's NaN/Inf counters
// count MRDMA's FP16 input.
#include <gtest/gtest.h>

#include <string>

#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/fp16/sdp_fp16_layer.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::test {
namespace {

trace::PlayResult play_on_nv_full(const std::string& cfg) {
  dla::FunctionalDevice dev(load_hw_config("nv_full"));
  return trace::play(trace::parse_trace_file(cfg), dev, trace::PlayerOptions{});
}

void expect_all_pass(const trace::PlayResult& r) {
  ASSERT_EQ(r.checks.size(), 5u);
  for (const trace::CheckOutcome& c : r.checks) {
    EXPECT_TRUE(c.pass) << "line " << c.line << ": " << c.description << ": " << c.detail;
  }
}

TEST(SdpFp16EndToEnd, BsPerChannelMultiplyAddThenEwPerElementAdd) {
  TempDir dir;
  Fp16SdpLayer layer;
  layer.fill(11);
  expect_all_pass(play_on_nv_full(write_sdp_fp16_trace(layer, dir.path().string(), "a.cfg")));
}

TEST(SdpFp16EndToEnd, EwPerChannelMultiplyAndFp32RegisterAdd) {
  TempDir dir;
  Fp16SdpLayer layer;
  layer.width = 3;
  layer.height = 4;
  layer.channels = 17;
  layer.ew_mul_per_channel = true;
  layer.ew_add = -0.3f;  // not an FP16 value: the register holds FP32
  layer.fill(12);
  expect_all_pass(play_on_nv_full(write_sdp_fp16_trace(layer, dir.path().string(), "b.cfg")));
}

TEST(SdpFp16EndToEnd, CountsNanAndInfInputAndFlushesNan) {
  TempDir dir;
  Fp16SdpLayer layer;
  layer.nan_to_zero = true;
  layer.fill(13);
  layer.input[layer.index(2, 1, 5)] = 0x7e00;   // NaN -> 0 (counted)
  layer.input[layer.index(6, 4, 33)] = 0xfd01;  // NaN
  layer.input[layer.index(0, 0, 20)] = 0x7c00;  // +inf -> FP32 max: the output saturates
  expect_all_pass(play_on_nv_full(write_sdp_fp16_trace(layer, dir.path().string(), "c.cfg", 2, 1)));
}

TEST(SdpFp16EndToEnd, AWrongGoldenFails) {
  TempDir dir;
  Fp16SdpLayer layer;
  layer.fill(14);
  const std::string cfg = write_sdp_fp16_trace(layer, dir.path().string(), "d.cfg");
  std::vector<std::uint8_t> bad = layer.golden();
  bad[6] ^= 1;  // one ulp off at element 3
  firmware::write_text_file(dir.path().string() + "/golden.dat", firmware::format_dat(bad));
  const trace::PlayResult r = play_on_nv_full(cfg);
  ASSERT_EQ(r.checks.size(), 5u);
  EXPECT_FALSE(r.checks[2].pass);
  EXPECT_FALSE(r.checks[3].pass);
  EXPECT_TRUE(r.checks[4].pass) << r.checks[4].detail;
}

}  // namespace
}  // namespace octasim::test
