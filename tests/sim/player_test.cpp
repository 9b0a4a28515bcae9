// The trace player on a fake device whose time, registers and interrupts the test controls.
#include "sim/trace/player.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim_test_util.hpp"

namespace octasim::trace {
namespace {

using test::reference_crc32;
using test::TempDir;

constexpr std::uint32_t kIntrStatus = 0x100c;
constexpr std::uint32_t kSdpOpEnable = 0x9038;
constexpr std::uint32_t kSdpDataCubeWidth = 0x903c;
constexpr std::uint32_t kSdpStatus = 0x9000;

// Every CSB write takes one cycle. A write of `trigger_value` to `trigger_addr` raises
// interrupt `bit` `latency` cycles after the write completes (or never, when latency is 0).
class FakeDevice final : public Device {
 public:
  struct Write {
    std::uint64_t cycle;
    std::uint32_t addr;
    std::uint32_t value;
  };
  struct Trigger {
    std::uint32_t addr;
    std::uint32_t value;
    unsigned bit;
    std::uint64_t latency;
  };

  explicit FakeDevice(unsigned address_bits = 32) : memory_(address_bits) {}

  void csb_write(std::uint32_t addr, std::uint32_t value) override {
    if (addr == reject_addr) throw std::runtime_error("no register at CSB address 0x0dead");
    writes.push_back({cycle_, addr, value});
    ++cycle_;
    if (addr == kIntrStatus) {
      intr_status_ &= ~value;
      return;
    }
    regs[addr] = value;
    for (const Trigger& t : triggers) {
      if (t.addr == addr && t.value == value && t.latency != 0) {
        pending_.push_back({cycle_ + t.latency, t.bit});
      }
    }
  }
  std::uint32_t csb_read(std::uint32_t addr) override {
    ++reads;
    deliver();
    if (addr == kIntrStatus) return intr_status_;
    // A register that changes value at a given cycle.
    const auto ch = changes.find(addr);
    if (ch != changes.end() && cycle_ >= ch->second.first) return ch->second.second;
    const auto it = regs.find(addr);
    return it == regs.end() ? 0 : it->second;
  }
  MemoryImage& memory() override { return memory_; }
  bool wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) override {
    deliver();
    if ((intr_status_ >> status_bit & 1u) != 0) return true;
    for (const Pending& p : pending_) {
      if (p.bit == status_bit && p.at <= cycle_ + timeout_cycles) {
        cycle_ = p.at;
        deliver();
        return true;
      }
    }
    cycle_ += timeout_cycles;
    return false;
  }
  void wait_cycles(std::uint64_t cycles) override { cycle_ += cycles; }
  std::uint64_t cycle() const override { return cycle_; }

  void advance(std::uint64_t cycles) { cycle_ += cycles; }
  std::uint32_t intr_status() const { return intr_status_; }

  std::vector<Write> writes;
  std::vector<Trigger> triggers;
  std::map<std::uint32_t, std::uint32_t> regs;
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint32_t>> changes;
  std::uint32_t reject_addr = 0xffffffffu;
  int reads = 0;

 private:
  struct Pending {
    std::uint64_t at;
    unsigned bit;
  };
  void deliver() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->at <= cycle_) {
        intr_status_ |= 1u << it->bit;
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }

  MemoryImage memory_;
  std::uint64_t cycle_ = 0;
  std::uint32_t intr_status_ = 0;
  std::vector<Pending> pending_;
};

struct Played {
  PlayResult result;
  std::vector<std::string> report;
};

Played run(const TempDir& dir, const std::string& text, FakeDevice& dev,
           PlayerOptions options = {}) {
  Played p;
  options.report = [&p](const std::string& line) { p.report.push_back(line); };
  const Trace t = parse_trace(text, (dir.path() / "t.cfg").string());
  p.result = play(t, dev, options);
  return p;
}

// Plays and expects a TraceError "<trace>:<line>: ..." containing `fragment`.
void expect_play_error(const TempDir& dir, const std::string& text, FakeDevice& dev, int line,
                       const std::string& fragment, PlayerOptions options = {}) {
  const std::string path = (dir.path() / "t.cfg").string();
  try {
    (void)play(parse_trace(text, path), dev, options);
    ADD_FAILURE() << "no TraceError for:\n" << text;
  } catch (const TraceError& e) {
    const std::string msg = e.what();
    const std::string prefix = path + ":" + std::to_string(line) + ": ";
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "want prefix '" << prefix << "', got: " << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << "want '" << fragment << "' in: " << msg;
  }
}

std::vector<std::uint8_t> mem(FakeDevice& dev, std::uint64_t addr, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  dev.memory().read(addr, out.data(), n);
  return out;
}

TEST(ReferenceCrc, KnownCheckValue) {
  const std::string s = "123456789";
  EXPECT_EQ(reference_crc32(std::vector<std::uint8_t>(s.begin(), s.end())), 0xcbf43926u);
  EXPECT_EQ(reference_crc32({}), 0u);
}

TEST(Player, RegWritesReachTheDeviceInOrder) {
  TempDir dir;
  FakeDevice dev;
  const Played p = run(dir,
                       "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x7);\n"
                       "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1);\n",
                       dev);
  ASSERT_EQ(dev.writes.size(), 2u);
  EXPECT_EQ(dev.writes[0].addr, kSdpDataCubeWidth);
  EXPECT_EQ(dev.writes[0].value, 7u);
  EXPECT_EQ(dev.writes[1].addr, kSdpOpEnable);
  EXPECT_EQ(dev.writes[1].value, 1u);
  EXPECT_TRUE(p.result.checks.empty());
  EXPECT_TRUE(p.result.all_passed());
}

TEST(Player, RegReadCheckPassesAndFailsWithoutStopping) {
  TempDir dir;
  FakeDevice dev;
  dev.regs[kSdpDataCubeWidth] = 5;
  const Played p = run(dir,
                       "reg_read_check(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x5);\n"
                       "reg_read_expected(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x6);\n"
                       "reg_read_check(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 5);\n",
                       dev);
  ASSERT_EQ(p.result.checks.size(), 3u);
  EXPECT_TRUE(p.result.checks[0].pass);
  EXPECT_EQ(p.result.checks[0].line, 1);
  EXPECT_FALSE(p.result.checks[1].pass);
  EXPECT_EQ(p.result.checks[1].line, 2);
  EXPECT_NE(p.result.checks[1].detail.find("0x00000005"), std::string::npos)
      << p.result.checks[1].detail;
  EXPECT_NE(p.result.checks[1].detail.find("0x00000006"), std::string::npos);
  EXPECT_TRUE(p.result.checks[2].pass);
  EXPECT_FALSE(p.result.all_passed());
  ASSERT_EQ(p.report.size(), 3u);
  EXPECT_EQ(p.report[0].rfind("PASS line 1", 0), 0u) << p.report[0];
  EXPECT_EQ(p.report[1].rfind("FAIL line 2", 0), 0u) << p.report[1];
}

TEST(Player, RegReadReportsTheValue) {
  TempDir dir;
  FakeDevice dev;
  dev.regs[kSdpStatus] = 0x00020001;
  const Played p = run(dir, "\nreg_read(NVDLA_SDP.S_STATUS_0, v);\n", dev);
  ASSERT_EQ(p.report.size(), 1u);
  EXPECT_NE(p.report[0].find("line 2"), std::string::npos) << p.report[0];
  EXPECT_NE(p.report[0].find("0x00020001"), std::string::npos) << p.report[0];
  EXPECT_TRUE(p.result.checks.empty());
}

TEST(Player, PollWaitsUntilTheRegisterMatches) {
  TempDir dir;
  FakeDevice dev;
  dev.changes[kSdpStatus] = {1000, 0};
  dev.regs[kSdpStatus] = 1;
  PlayerOptions o;
  o.poll_interval_cycles = 10;
  (void)run(dir, "poll_reg_equal(NVDLA_SDP.S_STATUS_0, 0);\n", dev, o);
  EXPECT_GE(dev.cycle(), 1000u);
  EXPECT_LT(dev.cycle(), 1000u + 10u + 1u) << "polls every 10 cycles";
}

TEST(Player, PollFieldComparesOnlyTheField) {
  TempDir dir;
  FakeDevice dev;
  dev.regs[kSdpStatus] = 0x00020001;  // STATUS_0 RUNNING, STATUS_1 PENDING
  (void)run(dir,
            "poll_field_equal(NVDLA_SDP.S_STATUS_0, STATUS_1, 2);\n"
            "poll_field_equal(NVDLA_SDP.S_STATUS_0.STATUS_0, 1);\n",
            dev);
  EXPECT_EQ(dev.cycle(), 0u) << "both true at once: no waiting";
}

TEST(Player, PollComparisonsAreTrueImmediatelyWhenTheyHold) {
  TempDir dir;
  FakeDevice dev;
  dev.regs[kSdpDataCubeWidth] = 5;
  const char* holds[] = {
      "poll_reg_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 5);",
      "poll_reg_greater(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 4);",
      "poll_reg_less(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 6);",
      "poll_reg_not_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 4);",
      "poll_reg_not_greater(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 5);",
      "poll_field_nt_greater(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, WIDTH, 5);",
      "poll_reg_not_less(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 5);",
  };
  for (const char* line : holds) {
    (void)run(dir, line, dev);
    EXPECT_EQ(dev.cycle(), 0u) << line;
  }
}

TEST(Player, PollThatNeverHoldsTimesOutWithFileLineAndLastValue) {
  TempDir dir;
  const char* never[] = {
      "poll_reg_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 4);",
      "poll_reg_greater(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 5);",
      "poll_reg_less(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 5);",
      "poll_reg_not_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 5);",
      "poll_reg_not_greater(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 4);",
      "poll_reg_not_less(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 6);",
  };
  PlayerOptions o;
  o.timeout_cycles = 1000;
  o.poll_interval_cycles = 16;
  for (const char* line : never) {
    FakeDevice dev;
    dev.regs[kSdpDataCubeWidth] = 5;
    expect_play_error(dir, std::string("// first\n") + line, dev, 2, "0x5", o);
    EXPECT_GE(dev.cycle(), 1000u) << line;
    EXPECT_LE(dev.cycle(), 1000u + 2 * 16u) << "bounded by the timeout: " << line;
  }
}

// A poll interval of 0 still lets time pass between reads, so the poll still times out.
TEST(Player, PollWithZeroIntervalStillTimesOut) {
  TempDir dir;
  PlayerOptions o;
  o.timeout_cycles = 100;
  o.poll_interval_cycles = 0;
  FakeDevice dev;
  expect_play_error(dir, "poll_reg_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 4);", dev, 1, "100 cycles",
                    o);
  EXPECT_LE(dev.reads, 102);
}

TEST(Player, IntrNotifyWaitsClearsAndRecordsCycles) {
  TempDir dir;
  FakeDevice dev;
  dev.advance(10);
  dev.triggers.push_back({kSdpOpEnable, 1, 0, 100});
  const Played p = run(dir,
                       "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x7);\n"
                       "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x8);\n"
                       "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1);\n"
                       "intr_notify(SDP_0, done);\n"
                       "check_nothing(done);\n",
                       dev);
  // Writes occupy cycles 10, 11, 12; the interrupt comes 100 cycles after the enable (113).
  EXPECT_EQ(p.result.first_write_cycle, 10u);
  EXPECT_EQ(p.result.end_cycle, 113u);
  // "the last register write before the harness starts waiting": issued at 12, done at 13.
  EXPECT_GE(p.result.compute_start_cycle, 12u);
  EXPECT_LE(p.result.compute_start_cycle, 13u);
  EXPECT_EQ(p.result.trace_cycles(), 103u);
  // The player catches and clears the interrupt (write one to clear S_INTR_STATUS).
  ASSERT_EQ(dev.writes.size(), 4u);
  EXPECT_EQ(dev.writes[3].addr, kIntrStatus);
  EXPECT_EQ(dev.writes[3].value, 1u);
  EXPECT_EQ(dev.intr_status(), 0u);
}

TEST(Player, ComputeStartIsTheLastWriteBeforeTheLastInterruptWait) {
  TempDir dir;
  FakeDevice dev;
  dev.triggers.push_back({kSdpOpEnable, 1, 0, 50});
  dev.triggers.push_back({kSdpOpEnable, 3, 1, 200});
  const Played p = run(dir,
                       "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1);\n"        // cycle 0, intr at 51
                       "intr_notify(SDP_0, l0);\n"                       // clear write at 51
                       "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 2);\n"  // cycle 52
                       "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 3);\n"        // 53, intr at 254
                       "intr_notify(SDP_1, l1);\n",
                       dev);
  EXPECT_EQ(p.result.first_write_cycle, 0u);
  EXPECT_EQ(p.result.end_cycle, 254u);
  EXPECT_GE(p.result.compute_start_cycle, 53u);
  EXPECT_LE(p.result.compute_start_cycle, 54u);
}

TEST(Player, InterruptClearWriteIsNotTheComputeStart) {
  TempDir dir;
  FakeDevice dev;
  dev.triggers.push_back({kSdpOpEnable, 1, 0, 50});
  dev.triggers.push_back({kSdpOpEnable, 1, 1, 80});
  const Played p = run(dir,
                       "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1);\n"  // 0; bit0 at 51, bit1 at 81
                       "intr_notify(SDP_0, a);\n"                  // clear write at 51
                       "intr_notify(SDP_1, b);\n",
                       dev);
  EXPECT_EQ(p.result.end_cycle, 81u);
  EXPECT_LE(p.result.compute_start_cycle, 1u);
}

TEST(Player, InterruptThatNeverComesIsABoundedError) {
  TempDir dir;
  FakeDevice dev;
  PlayerOptions o;
  o.timeout_cycles = 5000;
  expect_play_error(dir,
                    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1);\n"
                    "intr_notify(PDP_1, done);\n"
                    "check_nothing(done);\n",
                    dev, 2, "PDP_1", o);
  EXPECT_EQ(dev.cycle(), 1u + 5000u);
}

TEST(Player, InterruptTimeoutMessageGivesTheCycles) {
  TempDir dir;
  FakeDevice dev;
  PlayerOptions o;
  o.timeout_cycles = 1234;
  expect_play_error(dir, "intr_notify(SDP_0, s);", dev, 1, "1234", o);
}

TEST(Player, SyncIdsMustBeNotifiedFirst) {
  TempDir dir;
  {
    FakeDevice dev;
    expect_play_error(dir, "sync_wait(CACC, s1);", dev, 1, "s1");
  }
  {
    FakeDevice dev;
    expect_play_error(dir, "sync_notify(CACC, s1);\ncheck_nothing(s2);", dev, 2, "s2");
  }
  {
    FakeDevice dev;
    expect_play_error(dir, "\n\ncheck_crc(never, 1, 0x0, 0x4, 0x0);", dev, 3, "never");
  }
  {
    FakeDevice dev;
    const Played p = run(dir, "sync_notify(CACC, s1);\nsync_wait(CMAC_A, s1);\n", dev);
    EXPECT_TRUE(p.result.checks.empty());
  }
}

TEST(Player, CheckCrcPassAndFail) {
  TempDir dir;
  dir.write("in.dat",
            "{\n{offset:0x0, size:4, payload:0x31 0x32 0x33 0x34} ,\n"
            "{offset:0x4, size:5, payload:0x35 0x36 0x37 0x38 0x39}\n}\n");
  const std::vector<std::uint8_t> bytes{'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  const std::uint32_t crc = reference_crc32(bytes);
  ASSERT_EQ(crc, 0xcbf43926u);
  const std::vector<std::uint8_t> with_zero{'1', '2', '3', '4', '5', '6', '7', '8', '9', 0};
  const std::uint32_t crc10 = reference_crc32(with_zero);
  FakeDevice dev;
  char text[512];
  std::snprintf(text, sizeof text,
                "mem_load(pri_mem, 0x80000100, \"in.dat\");\n"
                "sync_notify(x, s);\n"
                "check_crc(s, pri_mem, 0x80000100, 9, 0x%08x);\n"
                "check_crc(s, 1, 0x80000100, 10, 0x%08x);\n"
                "check_crc(s, 1, 0x80000100, 9, 0x%08x);\n",
                crc, crc10, crc ^ 1u);
  const Played p = run(dir, text, dev);
  ASSERT_EQ(p.result.checks.size(), 3u);
  EXPECT_TRUE(p.result.checks[0].pass) << p.result.checks[0].detail;
  EXPECT_TRUE(p.result.checks[1].pass) << p.result.checks[1].detail;
  EXPECT_FALSE(p.result.checks[2].pass);
  EXPECT_EQ(p.result.checks[2].line, 5);
  EXPECT_NE(p.result.checks[2].detail.find("cbf43926"), std::string::npos)
      << p.result.checks[2].detail;
  EXPECT_FALSE(p.result.all_passed());
}

TEST(Player, CheckFilePassFailAndFirstMismatch) {
  TempDir dir;
  dir.write("in.dat", "{offset:0x0, size:4, payload:0x01 0x02 0x03 0x04}\n");
  dir.write("good.dat", "{offset:0x0, size:4, payload:0x01 0x02 0x03 0x04}\n");
  dir.write("bad.dat", "{offset:0x0, size:4, payload:0x01 0x02 0x0f 0x04}\n");
  dir.write("outside.dat", "{offset:0x4, size:1, payload:0x00}\n");
  FakeDevice dev;
  const Played p = run(dir,
                       "mem_load(pri_mem, 0x2000, \"in.dat\");\n"
                       "sync_notify(x, s);\n"
                       "check_file(s, pri_mem, 0x2000, 4, \"good.dat\");\n"
                       "check_file(s, pri_mem, 0x2000, 4, \"bad.dat\");\n",
                       dev);
  ASSERT_EQ(p.result.checks.size(), 2u);
  EXPECT_TRUE(p.result.checks[0].pass) << p.result.checks[0].detail;
  EXPECT_FALSE(p.result.checks[1].pass);
  EXPECT_NE(p.result.checks[1].detail.find("0x2002"), std::string::npos)
      << p.result.checks[1].detail;

  FakeDevice dev2;
  expect_play_error(dir,
                    "sync_notify(x, s);\n"
                    "check_file(s, pri_mem, 0x2000, 4, \"outside.dat\");\n",
                    dev2, 2, "outside");
}

TEST(Player, PpuSubmitLoadsThePushBufferAndRingsTheDoorbell) {
  TempDir dir;
  dir.write("pb.dat",
            "{offset:0x0, size:4, payload:0x00 0x00 0x00 0x07} ,\n"
            "{offset:0x4, size:4, payload:0x00 0x00 0x00 0x00}\n");
  FakeDevice dev;
  (void)run(dir, "ppu_submit(2, pri_mem, 0x80000100, \"pb.dat\");", dev);
  EXPECT_EQ(mem(dev, 0x80000100, 8), (std::vector<std::uint8_t>{0, 0, 0, 7, 0, 0, 0, 0}));
  // Channel 2's registers: PB_BASE_LOW/HIGH, PB_SIZE, then PUT (the doorbell) last.
  ASSERT_EQ(dev.writes.size(), 4u);
  const std::uint32_t ch2 = 0x13000 + 2 * 0x40;
  EXPECT_EQ(dev.writes[0].addr, ch2 + 0x0);
  EXPECT_EQ(dev.writes[0].value, 0x80000100u);
  EXPECT_EQ(dev.writes[1].addr, ch2 + 0x4);
  EXPECT_EQ(dev.writes[1].value, 0u);
  EXPECT_EQ(dev.writes[2].addr, ch2 + 0x8);
  EXPECT_EQ(dev.writes[2].value, 8u);
  EXPECT_EQ(dev.writes[3].addr, ch2 + 0xc);
  EXPECT_EQ(dev.writes[3].value, 8u);
}

TEST(Player, PpuSubmitOfAPartialWordIsAnError) {
  TempDir dir;
  dir.write("pb.dat", "{offset:0x0, size:3, payload:0x00 0x00 0x00}\n");
  FakeDevice dev;
  expect_play_error(dir, "ppu_submit(0, pri_mem, 0x1000, \"pb.dat\");", dev, 1,
                    "expected whole 32-bit words");
}

TEST(Player, CheckFileFp32ToleranceBoundsEachElement) {
  TempDir dir;
  // Device memory: 1.0f, 2.0f, NaN. Golden: 1.0f + 1 ulp (0x3f800001), 2.001f, NaN.
  dir.write("in.dat",
            "{offset:0x0, size:12, payload:0x00 0x00 0x80 0x3f 0x00 0x00 0x00 0x40 "
            "0x00 0x00 0xc0 0x7f}\n");
  dir.write("want.dat",
            "{offset:0x0, size:12, payload:0x01 0x00 0x80 0x3f 0x62 0x10 0x00 0x40 "
            "0x00 0x00 0xc0 0x7f}\n");
  dir.write("want0.dat", "{offset:0x0, size:4, payload:0x01 0x00 0x80 0x3f}\n");
  FakeDevice dev;
  const Played p = run(dir,
                       "mem_load(pri_mem, 0x2000, \"in.dat\");\n"
                       "sync_notify(x, s);\n"
                       // 2.001 - 2 = 1e-3 > 1e-4 + 1e-4 * 2.001: fails on element 1 only.
                       "check_file(s, pri_mem, 0x2000, 12, \"want.dat\", FP32_TOL, 1e-4, 1e-4);\n"
                       // 1e-3 <= 0 + 1e-3 * 2.001: passes, and 1 ulp of 1.0 too.
                       "check_file(s, pri_mem, 0x2000, 12, \"want.dat\", FP32_TOL, 0, 1e-3);\n"
                       // Exact comparison fails on the one-ulp element first.
                       "check_file(s, pri_mem, 0x2000, 4, \"want0.dat\", FP32_TOL, 0, 0);\n",
                       dev);
  ASSERT_EQ(p.result.checks.size(), 3u);
  EXPECT_FALSE(p.result.checks[0].pass);
  EXPECT_NE(p.result.checks[0].detail.find("1 of 3 FP32 elements fail"), std::string::npos)
      << p.result.checks[0].detail;
  EXPECT_NE(p.result.checks[0].detail.find("element 1"), std::string::npos)
      << p.result.checks[0].detail;
  EXPECT_TRUE(p.result.checks[1].pass) << p.result.checks[1].detail;
  EXPECT_FALSE(p.result.checks[2].pass);
}

TEST(Player, CheckFileFp16ToleranceTreatsInfinitiesExactly) {
  TempDir dir;
  // Device: +inf, 1.0. Golden: -inf, 1.0.
  dir.write("in.dat", "{offset:0x0, size:4, payload:0x00 0x7c 0x00 0x3c}\n");
  dir.write("want.dat", "{offset:0x0, size:4, payload:0x00 0xfc 0x00 0x3c}\n");
  dir.write("inf.dat", "{offset:0x0, size:2, payload:0x00 0x7c}\n");
  FakeDevice dev;
  const Played p = run(dir,
                       "mem_load(pri_mem, 0x2000, \"in.dat\");\n"
                       "sync_notify(x, s);\n"
                       "check_file(s, pri_mem, 0x2000, 4, \"want.dat\", FP16_TOL, 1000, 1);\n"
                       "check_file(s, pri_mem, 0x2002, 2, \"inf.dat\", FP16_TOL, 0, 0);\n",
                       dev);
  ASSERT_EQ(p.result.checks.size(), 2u);
  EXPECT_FALSE(p.result.checks[0].pass);
  EXPECT_NE(p.result.checks[0].detail.find("element 0"), std::string::npos);
  // 0x2002 holds 1.0 (0x3c00); the golden is +inf (0x7c00): a mismatch.
  EXPECT_FALSE(p.result.checks[1].pass);
}

TEST(Player, MemLoadPlacesPacketsAtBasePlusOffset) {
  TempDir dir;
  dir.write("in.dat",
            "{offset:0x20, size:4, payload:0x00 0x10 0x20 0x30} ,\n"
            "{offset:0x60, size:4, payload:0x00 0x10 0x20 0x30}\n");
  FakeDevice dev;
  (void)run(dir, "mem_load(pri_mem, 0x80000000, \"in.dat\");", dev);
  EXPECT_EQ(mem(dev, 0x80000020, 4), (std::vector<std::uint8_t>{0x00, 0x10, 0x20, 0x30}));
  EXPECT_EQ(mem(dev, 0x80000060, 4), (std::vector<std::uint8_t>{0x00, 0x10, 0x20, 0x30}));
  EXPECT_EQ(mem(dev, 0x80000024, 0x3c), std::vector<std::uint8_t>(0x3c, 0));
}

TEST(Player, MemInitPatterns) {
  TempDir dir;
  FakeDevice dev;
  (void)run(dir,
            "mem_init(pri_mem, 0x1000, 0x20, ALL_ONE);\n"
            "mem_init(pri_mem, 0x1008, 0x8, ALL_ZERO);\n",
            dev);
  EXPECT_EQ(mem(dev, 0x0fff, 1), std::vector<std::uint8_t>{0});
  EXPECT_EQ(mem(dev, 0x1000, 8), std::vector<std::uint8_t>(8, 0xff));
  EXPECT_EQ(mem(dev, 0x1008, 8), std::vector<std::uint8_t>(8, 0));
  EXPECT_EQ(mem(dev, 0x1010, 16), std::vector<std::uint8_t>(16, 0xff));
  EXPECT_EQ(mem(dev, 0x1020, 1), std::vector<std::uint8_t>{0});
}

TEST(Player, MemInitRandomIsDeterministicPerSeedAndStaysInRange) {
  TempDir dir;
  FakeDevice a, b, c;
  (void)run(dir, "mem_init(pri_mem, 0x100, 0x100, RANDOM, 7);", a);
  (void)run(dir, "mem_init(pri_mem, 0x100, 0x100, RANDOM, 7);", b);
  (void)run(dir, "mem_init(pri_mem, 0x100, 0x100, RANDOM, 8);", c);
  const auto ra = mem(a, 0x100, 0x100);
  EXPECT_EQ(ra, mem(b, 0x100, 0x100));
  EXPECT_NE(ra, mem(c, 0x100, 0x100));
  std::set<std::uint8_t> distinct(ra.begin(), ra.end());
  EXPECT_GT(distinct.size(), 64u) << "256 random bytes should not look constant";
  EXPECT_EQ(mem(a, 0xff, 1), std::vector<std::uint8_t>{0});
  EXPECT_EQ(mem(a, 0x200, 1), std::vector<std::uint8_t>{0});
}

TEST(Player, MemoryOutsideTheAddressSpaceIsATraceError) {
  TempDir dir;
  dir.write("in.dat", "{offset:0x10, size:2, payload:0x01 0x02}\n");
  {
    FakeDevice dev(32);
    expect_play_error(dir, "mem_init(pri_mem, 0xfffffff0, 0x20, ALL_ZERO);", dev, 1,
                      "address space");
  }
  {
    FakeDevice dev(32);
    expect_play_error(dir, "mem_init(pri_mem, 0x100000000, 0x1, RANDOM);", dev, 1, "address space");
  }
  {
    FakeDevice dev(32);
    expect_play_error(dir, "\nmem_load(pri_mem, 0xffffffff, \"in.dat\");", dev, 2, "address space");
  }
  {
    FakeDevice dev(32);
    expect_play_error(dir, "sync_notify(x, s);\ncheck_crc(s, 1, 0xfffffffc, 0x8, 0x0);", dev, 2,
                      "address space");
  }
}

// mem_load base + packet offset past 2^64 is an address-space error, not a wrap-around to a
// small, valid address.
TEST(Player, MemLoadAddressWrapAroundIsAnError) {
  TempDir dir;
  dir.write("in.dat", "{offset:0x100, size:1, payload:0x55}\n");
  FakeDevice dev(32);
  expect_play_error(dir, "mem_load(pri_mem, 0xffffffffffffff00, \"in.dat\");", dev, 1,
                    "address space");
  EXPECT_EQ(mem(dev, 0, 1), std::vector<std::uint8_t>{0});
}

// check_crc checks the range before touching memory: a size outside the address space (1 TiB
// under a 32-bit space) is a range error, not a host allocation of that size (which used to
// raise std::bad_alloc, or abort under AddressSanitizer).
TEST(Player, HugeCheckSizeIsARangeErrorNotAnAllocation) {
  TempDir dir;
  FakeDevice dev(32);
  expect_play_error(dir, "sync_notify(x, s);\ncheck_crc(s, 1, 0x0, 0x10000000000, 0x0);", dev, 2,
                    "address space");
}

TEST(Player, HugeCheckFileOrMemInitSizeIsARangeError) {
  TempDir dir;
  dir.write("golden.dat", "{offset:0x0, size:1, payload:0x00}\n");
  FakeDevice dev(32);
  expect_play_error(dir,
                    "sync_notify(x, s);\ncheck_file(s, 1, 0x0, 0x10000000000, \"golden.dat\");",
                    dev, 2, "address space");
  expect_play_error(dir, "mem_init(pri_mem, 0x0, 0x10000000000, RANDOM, 1);", dev, 1,
                    "address space");
  EXPECT_EQ(dev.memory().mapped_bytes(), 0u);
}

// Regions larger than the player's internal chunk (1 MiB) are generated, hashed and compared
// piecewise; the results are those of the whole region at once.
TEST(Player, LargeRegionsAcrossChunkBoundaries) {
  TempDir dir;
  constexpr std::uint64_t kBase = 0x10000000;
  constexpr std::size_t kSize = 0x280000;  // 2.5 MiB
  {
    FakeDevice dev;
    (void)run(dir, "mem_init(pri_mem, 0x10000000, 0x280000, RANDOM, 5);", dev);
    std::mt19937 rng(5);
    std::vector<std::uint8_t> want(kSize);
    for (auto& b : want) b = static_cast<std::uint8_t>(rng());
    const std::vector<std::uint8_t> got = mem(dev, kBase, kSize);
    ASSERT_EQ(got, want);
    char text[256];
    std::snprintf(text, sizeof text, "sync_notify(x, s);\ncheck_crc(s, 1, 0x%llx, 0x%zx, 0x%08x);",
                  static_cast<unsigned long long>(kBase), kSize, reference_crc32(want));
    const Played p = run(dir, text, dev);
    ASSERT_EQ(p.result.checks.size(), 1u);
    EXPECT_TRUE(p.result.checks[0].pass) << p.result.checks[0].detail;
  }
  // Packets straddling the 1 MiB boundary; a later packet overwrites an earlier one.
  dir.write("in.dat",
            "{offset:0xffffe, size:4, payload:0x01 0x02 0x03 0x04}\n"
            "{offset:0x100000, size:1, payload:0x09}\n"
            "{offset:0x27ffff, size:1, payload:0x0a}\n");
  dir.write("reversed.dat",
            "{offset:0x100000, size:1, payload:0x09}\n"
            "{offset:0xffffe, size:4, payload:0x01 0x02 0x03 0x04}\n"
            "{offset:0x27ffff, size:1, payload:0x0a}\n");
  dir.write("last.dat",
            "{offset:0xffffe, size:4, payload:0x01 0x02 0x09 0x04}\n"
            "{offset:0x27ffff, size:1, payload:0x0b}\n");
  FakeDevice dev;
  const Played p = run(dir,
                       "mem_load(pri_mem, 0x10000000, \"in.dat\");\n"
                       "sync_notify(x, s);\n"
                       "check_file(s, 1, 0x10000000, 0x280000, \"in.dat\");\n"
                       "check_file(s, 1, 0x10000000, 0x280000, \"reversed.dat\");\n"
                       "check_file(s, 1, 0x10000000, 0x280000, \"last.dat\");\n",
                       dev);
  EXPECT_EQ(mem(dev, kBase + 0xffffe, 4), (std::vector<std::uint8_t>{0x01, 0x02, 0x09, 0x04}));
  ASSERT_EQ(p.result.checks.size(), 3u);
  EXPECT_TRUE(p.result.checks[0].pass) << p.result.checks[0].detail;
  EXPECT_FALSE(p.result.checks[1].pass);
  EXPECT_NE(p.result.checks[1].detail.find("offset 0x100000)"), std::string::npos)
      << p.result.checks[1].detail;
  EXPECT_FALSE(p.result.checks[2].pass);
  EXPECT_NE(p.result.checks[2].detail.find("offset 0x27ffff)"), std::string::npos)
      << p.result.checks[2].detail;
  EXPECT_NE(p.result.checks[2].detail.find("got 0x0a, want 0x0b"), std::string::npos)
      << p.result.checks[2].detail;
}

TEST(Player, DeviceErrorsBecomeTraceErrorsNamingTheLine) {
  TempDir dir;
  FakeDevice dev;
  dev.reject_addr = kSdpOpEnable;
  expect_play_error(dir,
                    "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 1);\n"
                    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1);\n"
                    "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 2);\n",
                    dev, 2, "0x0dead");
  EXPECT_EQ(dev.writes.size(), 1u) << "nothing after the failing line runs";
}

TEST(Player, MalformedDatFileAtPlayTimeNamesTheDatFileAndLine) {
  TempDir dir;
  const std::string dat = dir.write("in.dat", "{offset:0x0, size:1, payload:0x01}\n");
  const Trace t =
      parse_trace("mem_load(pri_mem, 0x0, \"in.dat\");", (dir.path() / "t.cfg").string());
  dir.write("in.dat", "{offset:0x0, size:1, payload:0x01}\n{offset:0x1, size:1, payload:0xzz}\n");
  FakeDevice dev;
  try {
    (void)play(t, dev, {});
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(dat + ":2:"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace octasim::trace
