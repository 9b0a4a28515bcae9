// The OCTAV unit on the cycle-level device (soc::Soc + OctavCore): its cycles against numbers
// derived by hand from the configuration (nv_small: 8-byte atoms and requests, DRAM 4 B/cycle,
// read latency 64, write latency 24, op start 8) and the octav_* keys. One SystemC elaboration
// per process: ctest runs each TEST alone.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <systemc>

#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/octav/octav_core.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "tests/octav/octav_test_util.hpp"

namespace octasim::octav {
namespace {

namespace R = octasim::regs;
constexpr std::uint64_t kSrc = 0x10000;
constexpr std::uint64_t kResult = 0x40000;
constexpr unsigned kOctavDone0 = 22;

bool already_elaborated() {
  return sc_core::sc_get_status() != sc_core::SC_ELABORATION;
}

struct LayerRun {
  std::uint64_t active = 0;  // D_PERF_CYCLES
  std::uint32_t iterations = 0;
  std::uint32_t passes = 0;
  std::vector<std::uint64_t> pass_cycles;
  std::uint64_t layer_cycles = 0;
  std::uint64_t stats_pass_cycles = 0;  // the statistics counters of the report
  std::uint64_t iteration_cycles = 0;
  std::uint64_t dma_busy = 0, datapath_busy = 0, divider_busy = 0;
};

// Programs a flat INT8 (or feature-layout, when c > 0) OCTAV operation in group 0 and waits for
// its interrupt.
LayerRun run_octav_layer(const HwConfig& hw, std::uint32_t length, std::uint32_t w = 0,
                         std::uint32_t h = 0, std::uint32_t c = 0,
                         stats::Timeline* timeline = nullptr) {
  using M = R::OCTAV::D_MISC_CFG;
  soc::Soc dev_soc("dla", hw);
  soc::HostAdapter dev(dev_soc);
  if (timeline != nullptr) dev.soc().set_timeline(timeline);
  const bool feature = c > 0;
  const std::size_t n = feature ? std::size_t{w} * h * c : length;
  const test::TypedTensor t = test::laplace_tensor(DataType::kInt8, n, 12.0, 41);
  if (feature) {
    test::write_feature(dev.memory(), kSrc, t, w, h, c, 8, w * 8, w * 8 * h);
  } else {
    dev.memory().write(kSrc, t.raw.data(), t.raw.size());
  }
  std::uint32_t misc = M::DATA_TYPE.set(0, M::DATA_TYPE_INT8);
  misc = M::LAYOUT.set(misc, feature ? M::LAYOUT_FEATURE : M::LAYOUT_FLAT);
  misc = M::GRANULARITY.set(misc, feature ? M::GRANULARITY_CHANNEL : M::GRANULARITY_TENSOR);
  dev.csb_write(M::kAddr, misc);
  dev.csb_write(R::OCTAV::D_BITS::kAddr, 4);
  dev.csb_write(R::OCTAV::D_SRC_BASE_ADDR_LOW::kAddr, static_cast<std::uint32_t>(kSrc));
  dev.csb_write(R::OCTAV::D_FLAT_LENGTH::kAddr, length);
  if (feature) {
    dev.csb_write(R::OCTAV::D_DATAIN_SIZE_0::kAddr, (w - 1) | (h - 1) << 16);
    dev.csb_write(R::OCTAV::D_DATAIN_SIZE_1::kAddr, c - 1);
    dev.csb_write(R::OCTAV::D_SRC_LINE_STRIDE::kAddr, w * 8);
    dev.csb_write(R::OCTAV::D_SRC_SURFACE_STRIDE::kAddr, w * 8 * h);
  }
  dev.csb_write(R::OCTAV::D_MAX_ITERATIONS::kAddr, 20);
  dev.csb_write(R::OCTAV::D_TOLERANCE::kAddr, test::fp32_bits(1e-4f));
  dev.csb_write(R::OCTAV::D_RESULT_ADDR_LOW::kAddr, static_cast<std::uint32_t>(kResult));
  dev.csb_write(R::OCTAV::D_OP_ENABLE::kAddr, 1);
  EXPECT_TRUE(dev.wait_interrupt(kOctavDone0, 10'000'000));
  LayerRun r;
  r.active = dev.csb_read(R::OCTAV::D_PERF_CYCLES::kAddr);
  r.iterations = dev.csb_read(R::OCTAV::D_ITERATIONS::kAddr);
  r.passes = dev.csb_read(R::OCTAV::D_PERF_PASSES::kAddr);
  std::size_t index = 0;
  while (dla::engines()[index].name != "OCTAV") ++index;
  const auto& core = dynamic_cast<const OctavCore&>(dev.soc().dla().engine(index));
  r.pass_cycles = core.last_pass_cycles();
  const auto counter = [&core](const std::string& name) {
    const stats::Group& g = core.statistics();
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (g.info(i).name == name) return g.value(i);
    }
    ADD_FAILURE() << "no counter " << name;
    return std::uint64_t{0};
  };
  r.stats_pass_cycles = counter("stats_pass_cycles");
  r.iteration_cycles = counter("iteration_cycles");
  r.dma_busy = counter("dma_busy_cycles");
  r.datapath_busy = counter("busy_cycles");
  r.divider_busy = counter("divide_cycles");
  EXPECT_EQ(dev.soc().dla().layers().size(), 1u);
  EXPECT_EQ(dev.soc().dla().layers().back().engine, "OCTAV");
  r.layer_cycles =
      dev.soc().dla().layers().back().end_cycle - dev.soc().dla().layers().back().start_cycle;
  return r;
}

HwConfig nv_small() {
  return load_hw_config("nv_small");
}

TEST(OctavTiming, BandwidthBoundFirstPassThenBufferedPasses) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  HwConfig hw = nv_small();
  hw.octav.elements_per_cycle = 8;  // one 8-byte request per cycle: faster than DRAM's 2 cycles
  hw.octav.buffer_bytes = 4096;     // the 4096-byte input fits
  hw.octav.divide_latency = 24;
  const LayerRun r = run_octav_layer(hw, 4096);
  ASSERT_GT(r.iterations, 1u);
  ASSERT_EQ(r.passes, r.iterations + 1);
  // Pass 0, 512 requests of 8 bytes at 2 DRAM cycles each: the last arrives 2*512 + 64 cycles
  // after the pass starts and takes 1 datapath cycle.
  constexpr std::uint64_t kPass0 = 2 * 512 + 64 + 1;
  // Later passes read the buffer: 4096 / 8 cycles, then the divider (24 + 1 group - 1).
  constexpr std::uint64_t kIteration = 4096 / 8 + 24;
  ASSERT_EQ(r.pass_cycles.size(), r.passes);
  EXPECT_EQ(r.pass_cycles[0], kPass0);
  for (std::size_t i = 1; i < r.pass_cycles.size(); ++i) EXPECT_EQ(r.pass_cycles[i], kIteration);
  const std::uint64_t total = 8 + kPass0 + r.iterations * kIteration;  // op start latency first
  EXPECT_EQ(r.active, total);
  EXPECT_EQ(r.layer_cycles, total);
  EXPECT_EQ(r.stats_pass_cycles, kPass0);
  EXPECT_EQ(r.iteration_cycles, r.iterations * kIteration);
}

TEST(OctavTiming, ComputeBoundPassesEachReadDram) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  HwConfig hw = nv_small();
  hw.octav.elements_per_cycle = 1;  // 8 cycles per 8-byte request: slower than DRAM
  hw.octav.buffer_bytes = 1024;     // the 4096-byte input does not fit: every pass reads DRAM
  hw.octav.divide_latency = 30;
  const LayerRun r = run_octav_layer(hw, 4096);
  ASSERT_GT(r.iterations, 1u);
  // The first request arrives after 2 + 64 cycles; then the datapath is the bottleneck:
  // 512 requests of 8 cycles.
  constexpr std::uint64_t kPass = 2 + 64 + 512 * 8;
  EXPECT_EQ(r.pass_cycles[0], kPass);
  for (std::size_t i = 1; i < r.pass_cycles.size(); ++i) EXPECT_EQ(r.pass_cycles[i], kPass + 30);
  EXPECT_EQ(r.active, 8 + kPass + r.iterations * (kPass + 30));
}

TEST(OctavTiming, PerChannelDividesEveryGroupAndWritesResults) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  HwConfig hw = nv_small();
  hw.octav.elements_per_cycle = 8;
  hw.octav.divide_latency = 24;
  // 16 x 4 x 16 INT8: two surfaces of 4 lines of 16 atoms = 128 requests, 8 elements each.
  const LayerRun r = run_octav_layer(hw, 0, 16, 4, 16);
  ASSERT_GT(r.iterations, 1u);
  constexpr std::uint64_t kPass0 = 2 * 128 + 64 + 1;
  constexpr std::uint64_t kIteration = 128 + 24 + 16 - 1;  // divider: one group per cycle
  constexpr std::uint64_t kWrite = 64 / 4 + 24;            // 16 FP32 results, write ack
  EXPECT_EQ(r.pass_cycles[0], kPass0);
  for (std::size_t i = 1; i < r.pass_cycles.size(); ++i) EXPECT_EQ(r.pass_cycles[i], kIteration);
  EXPECT_EQ(r.active, 8 + kPass0 + r.iterations * kIteration + kWrite);
}

TEST(OctavTiming, TimelineTracksAddUpToTheUnitsBusyCycles) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  HwConfig hw = nv_small();
  hw.octav.buffer_bytes = 1024;  // every pass from DRAM: DMA slices in every pass
  stats::Timeline timeline(stats::Detail::kTile);
  const LayerRun r = run_octav_layer(hw, 2048, 0, 0, 0, &timeline);
  std::uint64_t dma = 0, datapath = 0, divider = 0;
  for (const auto& s : timeline.slices()) {
    const auto& t = timeline.tracks()[s.track];
    if (t.process != "OCTAV" || t.thread == "layers") continue;
    const std::uint64_t d = s.end - s.start;
    (t.thread == "DMA" ? dma : t.thread == "datapath" ? datapath : divider) += d;
  }
  EXPECT_EQ(dma, r.dma_busy);
  EXPECT_EQ(dma, 256u * r.passes);  // one 8-byte request per cycle, 256 per pass
  EXPECT_EQ(datapath, r.datapath_busy);
  EXPECT_EQ(divider, r.divider_busy);
  EXPECT_EQ(divider, 24u * r.iterations);
}

}  // namespace
}  // namespace octasim::octav

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
