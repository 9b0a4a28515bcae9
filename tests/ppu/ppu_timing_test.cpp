// Timing sanity of the PPU on soc_small with the shared memory system: a large compute-bound
// FP16 GEMM reaches the configured tensor-core peak (SMs x tensor cores x 64 MACs / step
// cycles) within a stated margin, and a large element-wise add reaches the DRAM bandwidth bound
// (mem_partitions x dram_bytes_per_cycle) within a stated margin. Values are checked too.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tests/ppu/ppu_test_util.hpp"

namespace octasim::ppu::test {
namespace {

void gemm_peak(const char* config, unsigned m, unsigned n, unsigned k, double peak_want) {
  const HwConfig hw = load_hw_config(config);
  Bench bench(hw);
  std::mt19937 rng(11);
  const auto a = random_input(GemmType::kFp16Fp32, std::size_t{m} * k, rng);
  const auto b = random_input(GemmType::kFp16Fp32, std::size_t{k} * n, rng);
  const std::uint64_t d = bench.alloc(std::size_t{m} * n * 4);
  F::PushBuffer pb;
  pb.launch(bench.put(gemm_descriptor(GemmType::kFp16Fp32, m, n, k, bench.put(a), bench.put(b), 0,
                                      d, F::ShapePolicy::kPad, false)
                          .bytes()));
  bench.submit(0, pb);
  ASSERT_TRUE(bench.run());
  print_records(bench.ppu);
  const KernelRecord& r = bench.ppu.kernels().at(0);
  // Peak from the configuration, derived here: SMs x tensor cores x (4x4x4 MACs / step cycles).
  const double peak = static_cast<double>(hw.ppu.gpcs) * hw.ppu.sms_per_gpc *
                      hw.ppu.tensor_cores_per_sm * 64.0 / hw.ppu.tc_fp16_step_cycles;
  ASSERT_EQ(peak, peak_want);
  const double achieved = static_cast<double>(r.macs) / static_cast<double>(r.cycles());
  ::testing::Test::RecordProperty("macs_per_cycle", std::to_string(achieved));
  // Margin 85%: the start (first loads: DRAM latency before the first MMA) and the tail (the
  // last wave's stores) are not overlapped.
  EXPECT_GE(achieved, 0.85 * peak) << achieved << " MACs/cycle";
  EXPECT_LE(achieved, peak);
  EXPECT_NEAR(r.tensor_utilization, achieved / peak, 1e-9);
  EXPECT_EQ(r.bound, "compute");
  const auto want =
      models::ops::gemm_reference({GemmType::kFp16Fp32, m, n, k, a.data(), b.data(), nullptr});
  EXPECT_TRUE(bench.get(d, want.d.size()) == want.d);
}

TEST(PpuTiming, LargeFp16GemmReachesTensorCorePeak) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  gemm_peak("soc_small", 512, 512, 512, 512.0);  // 2 SMs x 4 tensor cores x 64 / 1
}

TEST(PpuTiming, LargeFp16GemmReachesTensorCorePeakOnSocLarge) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  gemm_peak("soc_large", 1024, 1024, 256, 4096.0);  // 16 SMs x 4 tensor cores x 64 / 1
}

TEST(PpuTiming, LargeElementwiseAddReachesDramBandwidth) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  const HwConfig hw = soc_small();
  Bench bench(hw);
  const unsigned count = 1u << 20;  // 4 MiB per operand, 12 MiB moved: far beyond the L2
  std::vector<float> a(count), b(count);
  for (unsigned i = 0; i < count; ++i) {
    a[i] = static_cast<float>(i) * 0.5f;
    b[i] = 1.0f - static_cast<float>(i % 1000);
  }
  std::vector<std::uint8_t> ab(count * 4), bb(count * 4);
  std::memcpy(ab.data(), a.data(), ab.size());
  std::memcpy(bb.data(), b.data(), bb.size());
  const std::uint64_t pa = bench.put(ab), pbv = bench.put(bb), pd = bench.alloc(count * 4);
  namespace E = F::elementwise;
  F::Descriptor desc;
  desc.set(E::kKind, static_cast<std::uint32_t>(F::KernelKind::kElementwise));
  desc.set(E::kOp, 0);
  desc.set(E::kCount, count);
  desc.set_address(E::kA, pa);
  desc.set_address(E::kB, pbv);
  desc.set_address(E::kD, pd);
  F::PushBuffer pb;
  pb.launch(bench.put(desc.bytes()));
  bench.submit(0, pb);
  const std::uint64_t dram_before = bench.mem.bytes_read() + bench.mem.bytes_written();
  ASSERT_TRUE(bench.run());
  print_records(bench.ppu);
  const KernelRecord& r = bench.ppu.kernels().at(0);
  const double bound = static_cast<double>(hw.mem.partitions) * hw.dram_bandwidth();
  ASSERT_EQ(bound, 64.0);
  const double moved = static_cast<double>(r.bytes_read + r.bytes_written);
  EXPECT_EQ(moved, 12.0 * count);
  const double achieved = moved / static_cast<double>(r.cycles());
  const double dram =
      static_cast<double>(bench.mem.bytes_read() + bench.mem.bytes_written() - dram_before) /
      static_cast<double>(r.cycles());
  RecordProperty("bytes_per_cycle", std::to_string(achieved));
  RecordProperty("dram_bytes_per_cycle", std::to_string(dram));
  if (std::getenv("OCTASIM_PPU_VERBOSE") != nullptr) {
    std::printf("kernel %.2f B/cycle, DRAM %.2f B/cycle, bound %.0f\n", achieved, dram, bound);
    print_groups(bench.mem.statistics());
    print_groups(bench.ppu.statistics());
  }
  // Margin 70%: row-buffer misses and read/write turnaround cost DRAM cycles; the L2 keeps
  // the last dirty lines (write-back), so DRAM traffic is a little below the kernel's.
  EXPECT_GE(achieved, 0.70 * bound) << achieved << " B/cycle";
  EXPECT_LE(dram, bound * 1.0001);
  EXPECT_EQ(r.bound, "memory");
  std::vector<std::uint8_t> got = bench.get(pd, count * 4);
  for (unsigned i = 0; i < count; i += 997) {
    float v = 0.0f;
    std::memcpy(&v, got.data() + std::size_t{i} * 4, 4);
    ASSERT_EQ(v, a[i] + b[i]) << i;
  }
}

}  // namespace
}  // namespace octasim::ppu::test

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
