// sim/core/stop_request and trace::StoppableDevice: a stop signal sets a flag (the process goes
// on), the device throws Interrupted at its next safe point, and slicing an interrupt wait
// changes neither when it ends nor what it returns.
#include "sim/core/stop_request.hpp"

#include <csignal>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "sim/trace/stoppable_device.hpp"

namespace octasim {
namespace {

// A device whose interrupt arrives at a given cycle; each wait lets time pass up to the
// interrupt or the slice's end, recording the slices it was asked for.
class FakeDevice final : public trace::Device {
 public:
  explicit FakeDevice(std::uint64_t interrupt_at) : interrupt_at_(interrupt_at) {}
  void csb_write(std::uint32_t, std::uint32_t) override { ++writes; }
  [[nodiscard]] std::uint32_t csb_read(std::uint32_t) override { return 0; }
  [[nodiscard]] MemoryImage& memory() override { return memory_; }
  [[nodiscard]] bool wait_interrupt(unsigned, std::uint64_t timeout_cycles) override {
    slices.push_back(timeout_cycles);
    if (cycle_ >= interrupt_at_) return true;
    const std::uint64_t left = interrupt_at_ - cycle_;
    cycle_ += std::min(left, timeout_cycles);
    if (raise_after_slices != 0 && slices.size() == raise_after_slices) std::raise(SIGINT);
    return cycle_ >= interrupt_at_;
  }
  void wait_cycles(std::uint64_t cycles) override { cycle_ += cycles; }
  [[nodiscard]] std::uint64_t cycle() const override { return cycle_; }

  std::vector<std::uint64_t> slices;
  std::size_t raise_after_slices = 0;  // SIGINT after this many slices (0: never)
  int writes = 0;

 private:
  MemoryImage memory_;
  std::uint64_t interrupt_at_;
  std::uint64_t cycle_ = 0;
};

// Each test starts from the default dispositions (ctest may have been started with SIGINT
// ignored, as a background job of a shell is).
class StopSignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
};

struct sigaction current_action(int sig) {
  struct sigaction a {};
  sigaction(sig, nullptr, &a);
  return a;
}

TEST_F(StopSignalsTest, ASignalSetsTheFlagInsteadOfEndingTheProcess) {
  {
    const StopSignals stop;
    EXPECT_EQ(stop_signal(), 0);
    EXPECT_NO_THROW(throw_if_stop_requested(7));
    std::raise(SIGINT);
    EXPECT_EQ(stop_signal(), SIGINT);
    try {
      throw_if_stop_requested(42);
      FAIL() << "expected Interrupted";
    } catch (const Interrupted& e) {
      EXPECT_EQ(e.signal, SIGINT);
      EXPECT_EQ(e.cycle, 42U);
    }
  }
  // The previous handlers are back.
  EXPECT_EQ(current_action(SIGINT).sa_handler, SIG_DFL);
  EXPECT_EQ(current_action(SIGTERM).sa_handler, SIG_DFL);
  // A new run starts with no signal pending.
  const StopSignals again;
  EXPECT_EQ(stop_signal(), 0);
}

TEST_F(StopSignalsTest, SigtermToo) {
  const StopSignals stop;
  std::raise(SIGTERM);
  EXPECT_EQ(stop_signal(), SIGTERM);
}

TEST_F(StopSignalsTest, AnIgnoredSignalStaysIgnored) {
  std::signal(SIGTERM, SIG_IGN);
  {
    const StopSignals stop;
    EXPECT_EQ(current_action(SIGTERM).sa_handler, SIG_IGN);
    std::raise(SIGTERM);
    EXPECT_EQ(stop_signal(), 0);
  }
  EXPECT_EQ(current_action(SIGTERM).sa_handler, SIG_IGN);
  std::signal(SIGTERM, SIG_DFL);
}

TEST_F(StopSignalsTest, StoppableDeviceSlicesEndAWaitWhenTheUnslicedWaitWould) {
  const StopSignals stop;
  FakeDevice inner(250'123);
  trace::StoppableDevice device(inner);
  EXPECT_TRUE(device.wait_interrupt(0, 1'000'000));
  EXPECT_EQ(device.cycle(), 250'123U);
  EXPECT_EQ(inner.slices, (std::vector<std::uint64_t>{100'000, 100'000, 100'000}));
  // A wait that times out ends at its deadline, as an unsliced one does.
  FakeDevice never(std::numeric_limits<std::uint64_t>::max());
  trace::StoppableDevice d2(never);
  EXPECT_FALSE(d2.wait_interrupt(0, 250'000));
  EXPECT_EQ(d2.cycle(), 250'000U);
  EXPECT_EQ(never.slices, (std::vector<std::uint64_t>{100'000, 100'000, 50'000}));
}

TEST_F(StopSignalsTest, StoppableDeviceAHugeTimeoutDoesNotWrapAround) {
  const StopSignals stop;
  FakeDevice inner(300'000);
  inner.wait_cycles(1'000);
  trace::StoppableDevice device(inner);
  EXPECT_TRUE(device.wait_interrupt(0, std::numeric_limits<std::uint64_t>::max()));
  EXPECT_EQ(device.cycle(), 300'000U);
}

TEST_F(StopSignalsTest, StoppableDeviceUnslicedForAFunctionalDevice) {
  const StopSignals stop;
  FakeDevice inner(std::numeric_limits<std::uint64_t>::max());
  trace::StoppableDevice device(inner, 0);
  EXPECT_FALSE(device.wait_interrupt(0, 5'000'000));
  EXPECT_EQ(inner.slices, (std::vector<std::uint64_t>{5'000'000}));
}

TEST_F(StopSignalsTest, StoppableDeviceAStopSignalEndsAWaitAtTheNextSlice) {
  const StopSignals stop;
  FakeDevice inner(10'000'000);
  inner.raise_after_slices = 2;
  trace::StoppableDevice device(inner);
  try {
    (void)device.wait_interrupt(0, 50'000'000);
    FAIL() << "expected Interrupted";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.signal, SIGINT);
    EXPECT_EQ(e.cycle, 200'000U);  // after the second slice, not at the wait's end
  }
  EXPECT_EQ(inner.slices.size(), 2U);
  // Register accesses are safe points too.
  EXPECT_THROW(device.csb_write(0, 0), Interrupted);
  EXPECT_EQ(inner.writes, 0);
}

}  // namespace
}  // namespace octasim
