// The PPU's front end: semaphores ordering two channels, concurrent channels sharing the SMs,
// WAIT_DLA / REG_WRITE / MEMCPY / INTERRUPT, doorbells appending to a push buffer, statistics,
// and malformed push buffers stopping their channel in the ERROR state (code, offset,
// interrupt) while the simulator and the other channel carry on.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "tests/ppu/ppu_test_util.hpp"

namespace octasim::ppu::test {
namespace {

constexpr GemmType kHalf = GemmType::kFp16Fp16;  // D is FP16: a GEMM's D can be the next's A

TEST(PpuFrontEnd, SemaphoreOrdersTwoChannels) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench bench(soc_small());
  std::mt19937 rng(3);
  const unsigned m = 64, k1 = 96, n1 = 80, n2 = 48;  // D1 = A1 x B1 (m x n1); D2 = D1 x B2
  const auto a1 = random_input(kHalf, m * k1, rng, 0.25),
             b1 = random_input(kHalf, k1 * n1, rng, 0.25);
  const auto b2 = random_input(kHalf, n1 * n2, rng, 0.25);
  const std::uint64_t d1 = bench.alloc(m * n1 * 2), d2 = bench.alloc(m * n2 * 2);
  const std::uint64_t sem = bench.alloc(4);
  const auto g1 = gemm_descriptor(kHalf, m, n1, k1, bench.put(a1), bench.put(b1), 0, d1,
                                  F::ShapePolicy::kPad, false);
  const auto g2 =
      gemm_descriptor(kHalf, m, n2, n1, d1, bench.put(b2), 0, d2, F::ShapePolicy::kPad, false);
  F::PushBuffer p0, p1;
  p0.launch(bench.put(g1.bytes()));
  p0.sem_release(sem, 1);
  p1.sem_acquire(sem, 1);
  p1.launch(bench.put(g2.bytes()));
  bench.submit(1, p1);  // channel 1 first: it must wait
  bench.submit(0, p0);
  ASSERT_TRUE(bench.run());
  print_records(bench.ppu);
  ASSERT_EQ(bench.ppu.kernels().size(), 2u);
  const KernelRecord& k0 = bench.ppu.kernels()[0];
  const KernelRecord& k1r = bench.ppu.kernels()[1];
  EXPECT_EQ(k0.channel, 0u);
  EXPECT_EQ(k1r.channel, 1u);
  EXPECT_GE(k1r.start_cycle, k0.end_cycle);
  EXPECT_EQ(bench.word(sem), 1u);
  const auto want1 = models::ops::gemm_reference({kHalf, m, n1, k1, a1.data(), b1.data(), nullptr});
  const auto got1 = bench.get(d1, want1.d.size());
  EXPECT_TRUE(got1 == want1.d);
  const auto want2 =
      models::ops::gemm_reference({kHalf, m, n2, n1, want1.d.data(), b2.data(), nullptr});
  EXPECT_TRUE(bench.get(d2, want2.d.size()) == want2.d);
  EXPECT_EQ(bench.chreg(1, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_IDLE);
  EXPECT_EQ(bench.chreg(1, P::S_CH0_GET::kAddr), p1.bytes().size());
}

TEST(PpuFrontEnd, ChannelsRunKernelsConcurrently) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench bench(soc_small());
  std::mt19937 rng(4);
  const unsigned m = 128, n = 64, k = 256;  // 2 CTAs each: both kernels fit the 4 CTA slots
  stats::Timeline timeline(stats::Detail::kTile);
  bench.ppu.set_timeline(&timeline);
  std::uint64_t d[2];
  std::vector<std::uint8_t> a[2], b[2];
  for (unsigned ch = 0; ch < 2; ++ch) {
    a[ch] = random_input(GemmType::kFp16Fp32, m * k, rng);
    b[ch] = random_input(GemmType::kFp16Fp32, k * n, rng);
    d[ch] = bench.alloc(m * n * 4);
    F::PushBuffer pb;
    pb.launch(bench.put(gemm_descriptor(GemmType::kFp16Fp32, m, n, k, bench.put(a[ch]),
                                        bench.put(b[ch]), 0, d[ch], F::ShapePolicy::kPad, false)
                            .bytes()));
    bench.submit(ch, pb);
  }
  ASSERT_TRUE(bench.run());
  print_records(bench.ppu);
  const auto& ks = bench.ppu.kernels();
  ASSERT_EQ(ks.size(), 2u);
  // Overlapping, not one after the other: they share the SMs.
  EXPECT_LT(ks[1].start_cycle, ks[0].end_cycle);
  EXPECT_LT(ks[1].end_cycle, ks[0].end_cycle + ks[0].cycles() / 2);
  for (unsigned ch = 0; ch < 2; ++ch) {
    const auto want = models::ops::gemm_reference(
        {GemmType::kFp16Fp32, m, n, k, a[ch].data(), b[ch].data(), nullptr});
    EXPECT_TRUE(bench.get(d[ch], want.d.size()) == want.d) << ch;
  }
  // Statistics: SM counters add up to the kernels.
  const auto groups = bench.ppu.statistics();
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0]->path(), "ppu.frontend");
  EXPECT_EQ(groups[1]->path(), "ppu.gpc0.sm0");
  EXPECT_EQ(groups[2]->path(), "ppu.gpc0.sm1");
  std::uint64_t macs = 0, ctas = 0, read = 0;
  for (std::size_t g = 1; g < groups.size(); ++g) {
    for (std::size_t i = 0; i < groups[g]->size(); ++i) {
      const auto& name = groups[g]->info(i).name;
      if (name == "macs") macs += groups[g]->value(i);
      if (name == "ctas") ctas += groups[g]->value(i);
      if (name == "bytes_read") read += groups[g]->value(i);
    }
  }
  EXPECT_EQ(macs, 2ull * m * n * k);
  EXPECT_EQ(ctas, ks[0].ctas + ks[1].ctas);
  EXPECT_EQ(read, ks[0].bytes_read + ks[1].bytes_read);
  // Timeline: a slice per kernel on its channel's track, one per CTA on its SM's track.
  std::size_t kernel_slices = 0, cta_slices = 0;
  for (const auto& sl : timeline.slices()) {
    const auto& tr = timeline.tracks()[sl.track];
    EXPECT_EQ(tr.process, "PPU");
    if (tr.thread == "ch0" || tr.thread == "ch1") {
      const KernelRecord& r = ks[tr.thread == "ch0" ? 0 : 1];
      EXPECT_EQ(sl.start, r.start_cycle);
      EXPECT_EQ(sl.end, r.end_cycle);
      ++kernel_slices;
    } else {
      EXPECT_TRUE(tr.thread == "gpc0.sm0" || tr.thread == "gpc0.sm1") << tr.thread;
      EXPECT_GE(sl.start, std::min(ks[0].start_cycle, ks[1].start_cycle));
      EXPECT_LE(sl.end, std::max(ks[0].end_cycle, ks[1].end_cycle));
      ++cta_slices;
    }
  }
  EXPECT_EQ(kernel_slices, 2u);
  EXPECT_EQ(cta_slices, ctas);
}

TEST(PpuFrontEnd, WaitDlaRegWriteMemcpyInterruptAndAppendedCommands) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench bench(soc_small());
  std::vector<std::uint8_t> src(10000);
  std::iota(src.begin(), src.end(), 0);
  const std::uint64_t s = bench.put(src), dst = bench.alloc(src.size() + 64) + 3;
  const std::uint64_t sem = bench.alloc(4);
  F::PushBuffer pb;
  pb.reg_write(kFakeOpEnable, 1);
  pb.wait_dla(1u << kFakeDoneBit);
  pb.sem_release(sem, 7);
  const std::size_t first_part = pb.bytes().size();
  pb.memcpy(dst, s, static_cast<std::uint32_t>(src.size()));
  pb.interrupt();
  const auto all = pb.bytes();
  // Ring the doorbell for the first three commands only.
  const std::uint64_t base = bench.submit(0, pb, 4096);
  bench.set_channel(0, base, 4096, static_cast<std::uint32_t>(first_part));
  ASSERT_TRUE(bench.run());
  EXPECT_EQ(bench.word(sem), 7u);
  EXPECT_GE(bench.now(), bench.host.fake_op_done_cycle);
  EXPECT_GT(bench.host.fake_op_done_cycle, 0u);
  EXPECT_EQ(bench.host.intr & (1u << kFakeDoneBit), 0u) << "WAIT_DLA clears the bits it waited for";
  EXPECT_EQ(bench.chreg(0, P::S_CH0_GET::kAddr), first_part);
  EXPECT_EQ(bench.host.intr & (1u << kInterruptBit0), 0u);
  EXPECT_EQ(bench.get(dst, 4), std::vector<std::uint8_t>(4, 0));  // not copied yet
  // Append: PUT moves on, the channel runs only the new commands.
  bench.set_channel(0, base, 4096, static_cast<std::uint32_t>(all.size()));
  ASSERT_TRUE(bench.run());
  EXPECT_EQ(bench.chreg(0, P::S_CH0_GET::kAddr), all.size());
  EXPECT_TRUE(bench.get(dst, src.size()) == src);
  EXPECT_NE(bench.host.intr & (1u << kInterruptBit0), 0u);
  EXPECT_EQ(bench.host.csb_log.size(), 1u);  // the REG_WRITE ran once
  EXPECT_EQ(bench.chreg(0, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_IDLE);
  EXPECT_EQ(bench.chreg(0, P::S_CH0_ERROR::kAddr), 0u);
}

// SYNCPT_WAIT: a channel waits for the k-th raise of a GLB bit (the syncpoint counts raises, so
// a bit the host or WAIT_DLA cleared in between still counts), and only then runs what follows.
TEST(PpuFrontEnd, SyncpointWaitBlocksUntilTheCountIsReached) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench bench(soc_small());
  const std::uint64_t sem1 = bench.alloc(4), sem2 = bench.alloc(4);
  F::PushBuffer waits, op;
  waits.syncpt_wait(kFakeDoneBit, 1);
  waits.sem_release(sem1, 1);
  waits.syncpt_wait(kFakeDoneBit, 2);  // the second completion
  waits.sem_release(sem2, 1);
  op.reg_write(kFakeOpEnable, 1);
  op.wait_dla(1u << kFakeDoneBit);  // clears the level bit: the count stays
  bench.submit(1, waits);
  ASSERT_FALSE(bench.run(20'000)) << "nothing has been raised: channel 1 waits";
  EXPECT_EQ(bench.chreg(1, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_WAITING);
  EXPECT_EQ(bench.word(sem1), 0u);
  bench.submit(0, op);
  ASSERT_FALSE(bench.run(20'000)) << "channel 1 waits for a second completion";
  EXPECT_EQ(bench.word(sem1), 1u);
  EXPECT_EQ(bench.word(sem2), 0u);
  EXPECT_EQ(bench.chreg(1, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_WAITING);
  EXPECT_EQ(bench.host.reg(F::kSyncptBase + 4 * kFakeDoneBit), 1u);
  EXPECT_EQ(bench.host.intr & (1u << kFakeDoneBit), 0u);
  const std::uint64_t first_done = bench.host.fake_op_done_cycle;
  bench.ppu.rebase(0);  // a new buffer: the channel starts over at GET = 0
  bench.submit(0, op);
  ASSERT_TRUE(bench.run());
  EXPECT_GT(bench.host.fake_op_done_cycle, first_done);
  EXPECT_EQ(bench.word(sem2), 1u);
  EXPECT_EQ(bench.host.reg(F::kSyncptBase + 4 * kFakeDoneBit), 2u);
  EXPECT_EQ(bench.chreg(1, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_IDLE);
  EXPECT_EQ(bench.chreg(1, P::S_CH0_ERROR::kAddr), 0u);
  EXPECT_EQ(bench.chreg(1, P::S_CH0_GET::kAddr), waits.bytes().size());
}

// ---- Malformed push buffers --------------------------------------------------------------------
struct BadCase {
  const char* name;
  F::ErrorCode code;
};
const BadCase kBad[] = {
    {"unknown_opcode", F::ErrorCode::kUnknownCommand},
    {"bad_length", F::ErrorCode::kBadLength},
    {"put_beyond_size", F::ErrorCode::kPbOutOfRange},
    {"put_unaligned", F::ErrorCode::kPbOutOfRange},
    {"command_past_put", F::ErrorCode::kPbOutOfRange},
    {"bad_kernel_kind", F::ErrorCode::kBadKernel},
    {"tile_too_big", F::ErrorCode::kBadKernel},
    {"bad_gemm_type", F::ErrorCode::kBadKernel},
    {"descriptor_outside_memory", F::ErrorCode::kBadAddress},
    {"operand_outside_memory", F::ErrorCode::kBadAddress},
    {"memcpy_outside_memory", F::ErrorCode::kBadAddress},
    {"bad_register", F::ErrorCode::kBadRegister},
    {"bad_syncpoint", F::ErrorCode::kBadSyncpoint},
    {"syncpt_wait_bad_length", F::ErrorCode::kBadLength},
};

class PpuMalformed : public ::testing::TestWithParam<int> {};

TEST_P(PpuMalformed, StopsTheChannelWithCodeOffsetAndInterrupt) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  const BadCase& bc = kBad[GetParam()];
  const std::string name = bc.name;
  Bench bench(soc_small());
  const std::uint64_t beyond = bench.image.address_space_size();
  F::PushBuffer pb;
  pb.nop();  // the bad command is at byte offset 4
  std::vector<std::uint32_t> words;
  auto gemm = gemm_descriptor(GemmType::kFp16Fp32, 16, 16, 16, bench.alloc(512), bench.alloc(512),
                              0, bench.alloc(1024), F::ShapePolicy::kPad, false);
  std::uint32_t put_override = 0, size_override = 0;
  if (name == "unknown_opcode") {
    words = {0x7f000000u};
  } else if (name == "bad_length") {
    words = {static_cast<std::uint32_t>(F::Opcode::kRegWrite) << 24 | 1u, 0x5008};
  } else if (name == "put_beyond_size") {
    pb.nop();
    size_override = 4;
  } else if (name == "put_unaligned") {
    pb.nop();
    put_override = 6;
  } else if (name == "command_past_put") {
    pb.launch(0x1000);
    put_override = 12;  // cuts the LAUNCH's payload
  } else if (name == "bad_kernel_kind") {
    gemm.set(0, 9);
    pb.launch(bench.put(gemm.bytes()));
  } else if (name == "tile_too_big") {
    gemm.set(F::gemm::kTileM, 256), gemm.set(F::gemm::kTileN, 256), gemm.set(F::gemm::kTileK, 64);
    pb.launch(bench.put(gemm.bytes()));
  } else if (name == "bad_gemm_type") {
    gemm.set(F::gemm::kType, 6);
    pb.launch(bench.put(gemm.bytes()));
  } else if (name == "descriptor_outside_memory") {
    pb.launch(beyond - 64);
  } else if (name == "operand_outside_memory") {
    gemm.set_address(F::gemm::kB, beyond - 100);
    pb.launch(bench.put(gemm.bytes()));
  } else if (name == "memcpy_outside_memory") {
    pb.memcpy(beyond - 16, 0x100000, 64);
  } else if (name == "bad_register") {
    pb.reg_write(0x12345678, 1);
  } else if (name == "bad_syncpoint") {
    pb.syncpt_wait(F::kSyncpoints, 0);  // would pass at once if it were accepted
  } else if (name == "syncpt_wait_bad_length") {
    words = {static_cast<std::uint32_t>(F::Opcode::kSyncptWait) << 24 | 1u, 0};
  }
  auto all = pb.words();
  all.insert(all.end(), words.begin(), words.end());
  all.push_back(F::header(F::Opcode::kInterrupt));  // never reached
  const auto bytes = F::PushBuffer::to_bytes(all);
  const std::uint64_t base = bench.put(bytes);
  const auto size = static_cast<std::uint32_t>(bytes.size());
  // Channel 1 keeps working: an interrupt after the error.
  F::PushBuffer ok;
  ok.nop();
  ok.interrupt();
  bench.submit(1, ok);
  bench.set_channel(0, base, size_override ? size_override : size,
                    put_override ? put_override : size);
  ASSERT_TRUE(bench.run());
  const std::uint32_t offset = 4;
  EXPECT_EQ(bench.chreg(0, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_ERROR);
  EXPECT_EQ(bench.chreg(0, P::S_CH0_ERROR::kAddr), static_cast<std::uint32_t>(bc.code));
  const bool stops_at_start = name == "put_beyond_size" || name == "put_unaligned";
  EXPECT_EQ(bench.chreg(0, P::S_CH0_ERROR_OFFSET::kAddr), stops_at_start ? 0u : offset);
  EXPECT_EQ(bench.chreg(0, P::S_CH0_GET::kAddr), stops_at_start ? 0u : offset);
  EXPECT_NE(bench.host.intr & (1u << kInterruptBit0), 0u);
  EXPECT_EQ(std::count(bench.host.raised.begin(), bench.host.raised.end(), kInterruptBit0), 1)
      << "the error's interrupt only: the INTERRUPT after it never ran";
  EXPECT_NE(bench.host.intr & (1u << (kInterruptBit0 + 1)), 0u);
  EXPECT_EQ(bench.chreg(1, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_IDLE);
  EXPECT_TRUE(bench.ppu.kernels().empty());
  // A later doorbell does not restart a channel in ERROR.
  bench.ppu.doorbell(0);
  ASSERT_TRUE(bench.run());
  EXPECT_EQ(bench.chreg(0, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_ERROR);
}

INSTANTIATE_TEST_SUITE_P(Cases, PpuMalformed,
                         ::testing::Range(0, static_cast<int>(std::size(kBad))),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(kBad[p.param].name);
                         });

}  // namespace
}  // namespace octasim::ppu::test

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
