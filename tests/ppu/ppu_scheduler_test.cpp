// The CTA scheduling policies (sim/ppu/cta_scheduler.hpp): each policy's GPC per CTA on small
// grids, derived by hand from the rules in the header; an unknown policy name is an error naming
// the key, the value and the valid names; on soc_large (4 GPCs) GEMMs stay bit-exact against
// models::ops::gemm_reference under both policies and each GPC runs the CTAs its policy gave it.
// SystemC tests: one elaboration per test (ctest runs each alone).
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/ppu/cta_scheduler.hpp"
#include "tests/ppu/ppu_test_util.hpp"

namespace octasim::ppu::test {
namespace {

using Gpcs = std::vector<unsigned>;

TEST(CtaScheduler, NamesAreRoundRobinAndLocality) {
  EXPECT_EQ(cta_scheduler_names(), (std::vector<std::string>{"locality", "round_robin"}));
}

TEST(CtaScheduler, RoundRobinDealsInTurnAndCarriesTheTurnOver) {
  const auto s = make_cta_scheduler("round_robin");
  // 2 x 3 grid on 4 GPCs: CTAs 0..5 -> GPCs 0 1 2 3 0 1.
  EXPECT_EQ(s->assign({2, 3}, 4), (Gpcs{0, 1, 2, 3, 0, 1}));
  // The next kernel continues with GPC 2.
  EXPECT_EQ(s->assign({3, 1}, 4), (Gpcs{2, 3, 0}));
  EXPECT_EQ(s->assign({1, 2}, 4), (Gpcs{1, 2}));
  // One GPC: everything there.
  EXPECT_EQ(make_cta_scheduler("round_robin")->assign({2, 2}, 1), (Gpcs{0, 0, 0, 0}));
}

TEST(CtaScheduler, LocalityKeepsRowsTogetherInContiguousChunks) {
  const auto s = make_cta_scheduler("locality");
  // 5 rows x 3 cols on 4 GPCs (rows >= GPCs): row r -> floor(4r / 5) = 0 0 1 2 3.
  EXPECT_EQ(s->assign({5, 3}, 4), (Gpcs{0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}));
  // Every kernel starts over (no turn carried over).
  EXPECT_EQ(s->assign({5, 3}, 4), (Gpcs{0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}));
  // 4 rows x 2 cols on 2 GPCs: rows 0-1 -> GPC 0, rows 2-3 -> GPC 1.
  EXPECT_EQ(s->assign({4, 2}, 2), (Gpcs{0, 0, 0, 0, 1, 1, 1, 1}));
  // 2 rows x 4 cols on 4 GPCs (rows < GPCs): CTA i -> floor(4i / 8) = 0 0 1 1 2 2 3 3.
  EXPECT_EQ(s->assign({2, 4}, 4), (Gpcs{0, 0, 1, 1, 2, 2, 3, 3}));
  // 1 row x 6 cols on 4 GPCs: floor(4i / 6) = 0 0 1 2 2 3.
  EXPECT_EQ(s->assign({1, 6}, 4), (Gpcs{0, 0, 1, 2, 2, 3}));
  // A 1-D grid (streaming kernels: ctas x 1) of 6 on 4 GPCs: row r -> floor(4r / 6).
  EXPECT_EQ(s->assign({6, 1}, 4), (Gpcs{0, 0, 1, 2, 2, 3}));
  // Fewer CTAs than GPCs: one each, the last GPCs idle.
  EXPECT_EQ(s->assign({1, 1}, 4), (Gpcs{0}));
  EXPECT_EQ(s->assign({3, 2}, 1), (Gpcs{0, 0, 0, 0, 0, 0}));
}

TEST(CtaScheduler, UnknownNameNamesKeyValueAndValidNames) {
  try {
    (void)make_cta_scheduler("fifo");
    ADD_FAILURE() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    for (const char* frag : {"ppu_cta_scheduler", "\"fifo\"", "\"round_robin\"", "\"locality\""}) {
      EXPECT_NE(msg.find(frag), std::string::npos) << "'" << frag << "' not in: " << msg;
    }
  }
}

// The configuration loader accepts exactly the registered policies (its list of valid values
// is a copy: sim/core does not link the PPU).
TEST(CtaScheduler, ConfigurationAcceptsExactlyThePolicies) {
  std::string valid;
  for (const std::string& name : cta_scheduler_names()) {
    const std::string json = R"({"base": "soc_small", "ppu_cta_scheduler": ")" + name + "\"}";
    EXPECT_EQ(parse_hw_config(json, "x").ppu.cta_scheduler, name);
    valid += (valid.empty() ? "\"" : ", \"") + name + "\"";
  }
  try {
    (void)parse_hw_config(R"({"ppu_cta_scheduler": "fifo"})", "x.json");
    ADD_FAILURE() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("(valid: " + valid + ";"), std::string::npos) << e.what();
  }
}

// A configuration made in code is not checked by the loader: the PPU refuses it.
TEST(CtaScheduler, PpuWithAnUnknownPolicyIsAnError) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  HwConfig hw = soc_small();
  hw.ppu.cta_scheduler = "Round_Robin";
  try {
    Bench bench(hw);
    ADD_FAILURE() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"Round_Robin\""), std::string::npos) << e.what();
  }
}

// GEMMs on soc_large under `policy`, bit-exact against the reference; returns the CTAs each GPC
// ran (the SMs' "ctas" counters summed per GPC).
Gpcs gemms_on_soc_large(const std::string& policy) {
  HwConfig hw = load_hw_config("soc_large");
  EXPECT_EQ(hw.ppu.cta_scheduler, "round_robin");  // the default
  hw.ppu.cta_scheduler = policy;
  Bench bench(hw);
  std::mt19937 rng(77);
  struct Launch {
    GemmType type;
    unsigned m, n, k;
    std::vector<std::uint8_t> a, b;
    std::uint64_t d;
  };
  // 5 x 3 tiles of 64 x 64, then 2 x 4 tiles, then one of 13 x 7 (padded).
  std::vector<Launch> launches{{GemmType::kFp16Fp32, 320, 192, 96, {}, {}, 0},
                               {GemmType::kInt8Int32, 128, 256, 64, {}, {}, 0},
                               {GemmType::kBf16Fp32, 13, 7, 29, {}, {}, 0}};
  F::PushBuffer pb;
  for (Launch& l : launches) {
    l.a = random_input(l.type, std::size_t{l.m} * l.k, rng);
    l.b = random_input(l.type, std::size_t{l.k} * l.n, rng);
    l.d = bench.alloc(models::ops::gemm_acc_bytes(l.type, std::size_t{l.m} * l.n));
    pb.launch(bench.put(gemm_descriptor(l.type, l.m, l.n, l.k, bench.put(l.a), bench.put(l.b), 0,
                                        l.d, F::ShapePolicy::kPad, false)
                            .bytes()));
  }
  bench.submit(0, pb);
  EXPECT_TRUE(bench.run());
  print_records(bench.ppu);
  EXPECT_EQ(bench.ppu.kernels().size(), launches.size());
  for (const Launch& l : launches) {
    const auto want =
        models::ops::gemm_reference({l.type, l.m, l.n, l.k, l.a.data(), l.b.data(), nullptr});
    EXPECT_TRUE(bench.get(l.d, want.d.size()) == want.d)
        << policy << " " << l.m << "x" << l.n << "x" << l.k << ": D differs from gemm_reference";
  }
  Gpcs per_gpc(hw.ppu.gpcs, 0);
  const auto groups = bench.ppu.statistics();  // frontend, then gpc<g>.sm<s> GPC-major
  EXPECT_EQ(groups.size(), 1 + std::size_t{hw.ppu.gpcs} * hw.ppu.sms_per_gpc);
  for (std::size_t i = 1; i < groups.size(); ++i) {
    const stats::Group& g = *groups[i];
    for (std::size_t c = 0; c < g.size(); ++c) {
      if (g.full_name(c) == g.path() + ".ctas") {
        per_gpc[(i - 1) / hw.ppu.sms_per_gpc] += static_cast<unsigned>(g.value(c));
      }
    }
  }
  return per_gpc;
}

TEST(CtaSchedulerGemm, RoundRobinBitExactOnSocLarge) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  // 15 CTAs from GPC 0: 4 4 4 3; 8 from GPC 3: 2 2 2 2 -> 6 6 6 5; 1 on GPC 3 -> 6 6 6 6.
  EXPECT_EQ(gemms_on_soc_large("round_robin"), (Gpcs{6, 6, 6, 6}));
}

TEST(CtaSchedulerGemm, LocalityBitExactOnSocLarge) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  // 5 rows x 3: 6 3 3 3; 2 rows x 4 (rows < GPCs): 2 2 2 2; 1 CTA on GPC 0 -> 9 5 5 5.
  EXPECT_EQ(gemms_on_soc_large("locality"), (Gpcs{9, 5, 5, 5}));
}

}  // namespace
}  // namespace octasim::ppu::test

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
