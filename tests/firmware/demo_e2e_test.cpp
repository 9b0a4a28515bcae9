// End to end: the firmware demo (CONV+SDP -> PDP -> CDP, golden output from models/ reference
// ops) written as a trace, parsed by sim/trace and played on the functional DLA device; every
// check must pass, and a corrupted input must make them fail.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "firmware/demo/demo.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::firmware {
namespace {

using octasim::test::TempDir;

trace::PlayResult play(const std::string& cfg, std::vector<std::string>* engines = nullptr) {
  dla::FunctionalDevice device(load_hw_config("nv_small"));
  const trace::Trace t = trace::parse_trace_file(cfg);
  trace::PlayerOptions po;
  trace::PlayResult r = trace::play(t, device, po);
  if (engines != nullptr) {
    for (const auto& l : device.layers()) engines->push_back(l.engine);
  }
  return r;
}

// The demo's options for nv_small, the configuration it is played on.
DemoOptions nv_small_options() {
  const HwConfig hw = load_hw_config("nv_small");
  DemoOptions o;
  o.hw.atom_bytes = hw.dla.memory_atomic_size;
  o.hw.mac_atomic_c = hw.dla.mac_atomic_c;
  o.hw.mac_atomic_k = hw.dla.mac_atomic_k;
  o.hw.cbuf_bank_number = hw.dla.cbuf_bank_number;
  o.hw.cbuf_bank_width = hw.dla.cbuf_bank_width;
  o.hw.cbuf_bank_depth = hw.dla.cbuf_bank_depth;
  o.hw.int8 = hw.dla.feature_int8;
  o.hw.int16 = hw.dla.feature_int16;
  return o;
}

void expect_demo_passes(PoolMethod pool, const std::string& tag) {
  TempDir dir(tag);
  DemoOptions options = nv_small_options();
  options.pool = pool;
  const DemoFiles files = write_demo(dir.str() + "/nested/out", options);  // directories created
  EXPECT_EQ(files.trace_path, dir.str() + "/nested/out/demo.cfg");
  // CONV, SDP (flying), PDP, CDP, OCTAV, SDP (OCTAV's clip, then max-scaling).
  ASSERT_EQ(files.summary.layers.size(), 6u);

  std::vector<std::string> engines;
  const trace::PlayResult r = play(files.trace_path, &engines);
  // Five CRC checks (CONV, PDP, CDP, the two requantizing SDPs), seven statistics checks (CACC
  // and SDP saturation, CDP saturation and four LUT counters) and OCTAV's clip and iterations.
  ASSERT_EQ(r.checks.size(), 14u);
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.pass) << "line " << c.line << ": " << c.description << ": " << c.detail;
  }
  EXPECT_EQ(engines, (std::vector<std::string>{"CONV", "PDP", "CDP", "OCTAV", "SDP", "SDP"}));
}

TEST(DemoEndToEnd, MaxPoolingDemoPassesOnTheFunctionalDevice) {
  expect_demo_passes(PoolMethod::kMax, "max");
}

TEST(DemoEndToEnd, AveragePoolingDemoPassesOnTheFunctionalDevice) {
  expect_demo_passes(PoolMethod::kAverage, "average");
}

TEST(DemoEndToEnd, CorruptedInputFailsTheChecks) {
  TempDir dir("corrupt");
  const DemoFiles files = write_demo(dir.str(), nv_small_options());
  // Replace the first input packet's first byte (0x.. after "payload:").
  const std::string input = dir.str() + "/input.dat";
  std::stringstream s;
  s << std::ifstream(input).rdbuf();
  std::string text = s.str();
  const auto pos = text.find("payload:0x");
  ASSERT_NE(pos, std::string::npos);
  const std::string old_byte = text.substr(pos + 10, 2);
  text.replace(pos + 10, 2, old_byte == "7f" ? "80" : "7f");
  std::ofstream(input, std::ios::trunc) << text;

  const trace::PlayResult r = play(files.trace_path);
  EXPECT_FALSE(r.all_passed());
  EXPECT_FALSE(r.checks.at(0).pass);  // the CONV -> SDP output CRC
}

TEST(DemoEndToEnd, TheDemoIsDeterministic) {
  TraceWriter a, b;
  (void)build_demo(a, DemoOptions{});
  (void)build_demo(b, DemoOptions{});
  EXPECT_EQ(a.text(), b.text());
  DemoOptions other;
  other.seed = 7;
  TraceWriter c;
  (void)build_demo(c, other);
  EXPECT_NE(a.text(), c.text());  // the golden CRCs follow the data
}

TEST(DemoEndToEnd, UnwritableDirectoryIsOneLineError) {
  TempDir dir("file");
  const std::string file = dir.str() + "/file";
  std::ofstream(file) << "a file, not a directory";
  try {
    (void)write_demo(file, DemoOptions{});
    FAIL() << "expected FirmwareError";
  } catch (const FirmwareError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("cannot create directory '" + file + "'", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace octasim::firmware
