// Tensor-core GEMM on the PPU, bit for bit against models::ops::gemm_reference for every GEMM
// type, on shapes that are and are not multiples of the tensor-core rules, with both shape
// policies, with and without C, and with the default and a descriptor-given tiling. One
// SystemC elaboration per test (ctest runs each alone).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/ppu/ppu_test_util.hpp"

namespace octasim::ppu::test {
namespace {

struct Shape {
  unsigned m, n, k;
};

class PpuGemm : public ::testing::TestWithParam<int> {};

TEST_P(PpuGemm, BitExactAgainstModelsForEveryShapeAndPolicy) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  const auto type = static_cast<GemmType>(GetParam());
  const auto& info = models::ops::gemm_type_info(type);
  Bench bench(soc_small());
  std::mt19937 rng(1234 + GetParam());
  const Shape shapes[] = {{13, 7, 29}, {70, 33, 100}, {64, 64, 64}, {1, 1, 1}, {96, 160, 192}};
  struct Launch {
    Shape s;
    bool has_c;
    F::ShapePolicy policy;
    bool custom_tiles;
    std::vector<std::uint8_t> a, b, c;
    std::uint64_t d;
  };
  std::vector<Launch> launches;
  F::PushBuffer pb;
  int i = 0;
  for (const Shape& s : shapes) {
    for (const auto policy : {F::ShapePolicy::kPad, F::ShapePolicy::kFallback}) {
      Launch l{s, (i % 2) == 0, policy, (i % 3) == 2, {}, {}, {}, 0};
      l.a = random_input(type, std::size_t{s.m} * s.k, rng);
      l.b = random_input(type, std::size_t{s.k} * s.n, rng);
      if (l.has_c) l.c = random_acc(type, std::size_t{s.m} * s.n, rng);
      const std::uint64_t a = bench.put(l.a), b = bench.put(l.b);
      const std::uint64_t c = l.has_c ? bench.put(l.c) : 0;
      l.d = bench.alloc(models::ops::gemm_acc_bytes(type, std::size_t{s.m} * s.n));
      F::Descriptor desc = gemm_descriptor(type, s.m, s.n, s.k, a, b, c, l.d, policy, l.has_c);
      if (l.custom_tiles) {
        const unsigned q = std::max(info.shape_multiple, info.mma_k);
        desc.set(F::gemm::kTileM, 2 * info.shape_multiple);
        desc.set(F::gemm::kTileN, 4 * info.shape_multiple);
        desc.set(F::gemm::kTileK, 2 * q);
      }
      pb.launch(bench.put(desc.bytes()));
      launches.push_back(std::move(l));
      ++i;
    }
  }
  bench.submit(0, pb);
  ASSERT_TRUE(bench.run());
  print_records(bench.ppu);
  EXPECT_EQ(bench.chreg(0, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_IDLE);
  EXPECT_EQ(bench.chreg(0, P::S_CH0_GET::kAddr), pb.bytes().size());
  ASSERT_EQ(bench.ppu.kernels().size(), launches.size());
  for (std::size_t j = 0; j < launches.size(); ++j) {
    const Launch& l = launches[j];
    SCOPED_TRACE(::testing::Message()
                 << info.name << " " << l.s.m << "x" << l.s.n << "x" << l.s.k << " C " << l.has_c
                 << " policy " << static_cast<int>(l.policy) << " tiles " << l.custom_tiles);
    const models::ops::GemmOperands ops{
        type, l.s.m, l.s.n, l.s.k, l.a.data(), l.b.data(), l.has_c ? l.c.data() : nullptr};
    const auto want = models::ops::gemm_reference(ops);
    const auto got = bench.get(l.d, want.d.size());
    EXPECT_TRUE(got == want.d) << "D differs from gemm_reference";
    const KernelRecord& r = bench.ppu.kernels()[j];
    EXPECT_EQ(r.kind, "gemm");
    EXPECT_EQ(r.type, info.name);
    EXPECT_EQ(r.macs, std::uint64_t{l.s.m} * l.s.n * l.s.k);
    EXPECT_EQ(r.saturations, want.saturations);
    EXPECT_GT(r.end_cycle, r.start_cycle);
    const unsigned mult = info.shape_multiple;
    const bool multiples = l.s.m % mult == 0 && l.s.n % mult == 0 && l.s.k % mult == 0;
    if (type == GemmType::kFp32) {
      EXPECT_EQ(r.path.rfind("fma (fp32", 0), 0u) << r.path;
    } else if (multiples) {
      EXPECT_EQ(r.path, "tensor");
    } else if (l.policy == F::ShapePolicy::kPad) {
      EXPECT_EQ(r.path.rfind("tensor (padded ", 0), 0u) << r.path;
      EXPECT_NE(r.path.find("not multiples of " + std::to_string(mult)), std::string::npos);
      if (l.s.m == 13 && mult == 8) {
        EXPECT_EQ(r.path, "tensor (padded M 13->16, N 7->8, K 29->32: not multiples of 8)");
      }
    } else {
      EXPECT_EQ(r.path.rfind("fma (policy fallback: ", 0), 0u) << r.path;
    }
  }
}

std::string type_name(const ::testing::TestParamInfo<int>& p) {
  return models::ops::gemm_type_info(static_cast<GemmType>(p.param)).name;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, PpuGemm, ::testing::Range(0, 6), type_name);

}  // namespace
}  // namespace octasim::ppu::test

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
