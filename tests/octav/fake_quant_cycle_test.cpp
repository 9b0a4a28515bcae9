// OCTAV AUTO_PROGRAM=FAKEQUANT -> SDP on the cycle-level device (soc::Soc): the firmware traces
// of the functional test (tests/octav/fake_quant_case.hpp) pass every models/ check (output CRC,
// OCTAV's clip and iteration count), the output equals the golden byte for byte, and SDP starts
// only after OCTAV has finished (firmware waits for OCTAV's interrupt before enabling it). One
// SystemC elaboration per process: each TEST is its own ctest entry.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <systemc>

#include <unistd.h>

#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/octav/fake_quant_case.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::test {
namespace {

void run_case(const FakeQuantCase& k) {
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION) {
    GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  }
  const HwConfig hw = load_hw_config(k.config);
  firmware::TraceWriter writer;
  const FakeQuantRecord r = record_fake_quant(hw, k, writer);
  const TempDir dir("fake-quant-cycle");
  const std::string path = writer.save(dir.str(), "fake_quant.cfg");
  soc::Soc device_soc("dla", hw);
  soc::HostAdapter device(device_soc);
  const trace::PlayResult play = trace::play(trace::parse_trace_file(path), device, {});
  ASSERT_EQ(play.checks.size(), 3u);
  for (const auto& c : play.checks) EXPECT_TRUE(c.pass) << c.description << ": " << c.detail;
  std::vector<std::uint8_t> got(r.out_bytes);
  device.memory().read(FakeQuantRecord::kOut, got.data(), got.size());
  EXPECT_EQ(got, r.want_out);

  const auto& layers = device.soc().dla().layers();
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].engine, "OCTAV");
  EXPECT_EQ(layers[1].engine, "SDP");
  EXPECT_GT(layers[0].end_cycle, layers[0].start_cycle);
  EXPECT_GE(layers[1].start_cycle, layers[0].end_cycle);
}

TEST(OctavFakeQuantCycle, Int8SignedFourBitsOnNvSmall) {
  run_case(int8_signed_case());
}

TEST(OctavFakeQuantCycle, Int8UnsignedThreeBitsOnNvSmall) {
  run_case(int8_unsigned_case());
}

TEST(OctavFakeQuantCycle, Int16SignedEightBitsOnNvFull) {
  run_case(int16_signed_case());
}

}  // namespace
}  // namespace octasim::test

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
