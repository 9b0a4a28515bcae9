// conv -> OCTAV -> auto-programmed SDP on the cycle-level device (soc::Soc, nv_full): the same
// firmware trace as the functional test passes every models/ check, the device's codes equal the
// golden, and the OCTAV layer's time is what its passes and divisions add up to. One SystemC
// elaboration per process.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <systemc>

#include <unistd.h>

#include "sim/octav/octav_core.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/octav/quantized_conv_case.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::test {
namespace {

TEST(QuantizedConvCycle, SocMatchesModels) {
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION) {
    GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  }
  const HwConfig hw = load_hw_config("nv_full");
  firmware::TraceWriter writer;
  const QuantizedConvCase q = record_quantized_conv(hw, writer);
  const TempDir dir("octav-cycle");
  const std::string path = writer.save(dir.str(), "quantized_conv.cfg");
  soc::Soc device_soc("dla", hw);
  soc::HostAdapter device(device_soc);
  const trace::PlayResult r = trace::play(trace::parse_trace_file(path), device, {});
  ASSERT_EQ(r.checks.size(), 6u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.pass) << c.description << ": " << c.detail;
  EXPECT_EQ(read_int16_surface(device.memory(), q.layer.sdp_out, hw.dla.memory_atomic_size),
            q.octav_codes);

  ASSERT_EQ(device.soc().dla().layers().size(), 4u);
  const soc::LayerTiming& l = device.soc().dla().layers()[1];
  ASSERT_EQ(l.engine, "OCTAV");
  // A = 12 x 10 x 16 INT16 on 32-byte atoms: one surface, 120 atoms of 16 elements, 3840 bytes,
  // which fits the 16 KiB buffer: pass 0 from DRAM, the iterations from the buffer at 8
  // elements per cycle (2 cycles per atom), each then the divider (24 cycles, one group).
  std::size_t index = 0;
  while (dla::engines()[index].name != "OCTAV") ++index;
  const auto& core = dynamic_cast<const octav::OctavCore&>(device.soc().dla().engine(index));
  ASSERT_EQ(core.last_pass_cycles().size(), static_cast<std::size_t>(q.octav.iterations) + 1);
  for (std::size_t i = 1; i < core.last_pass_cycles().size(); ++i) {
    EXPECT_EQ(core.last_pass_cycles()[i], 120u * 2 + 24);
  }
  std::uint64_t passes = hw.dla.op_start_latency;
  for (std::uint64_t c : core.last_pass_cycles()) passes += c;
  EXPECT_EQ(l.end_cycle - l.start_cycle, passes);
}

}  // namespace
}  // namespace octasim::test

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
