// DmaClient against a tiny fixed-latency TLM target that records every b_transport: requests
// go out at the current simulation time (no future-annotated delay), pace() takes
// ceil(bytes / request_bytes) cycles, reserve() blocks while the latency buffer is full and
// returns its stall cycles, releases apply in request (FIFO) order at their time. One SystemC
// elaboration per process: ctest runs each TEST alone.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <systemc>
#include <tlm>

#include "sim/core/address_generator.hpp"
#include "sim/core/dma_client.hpp"

namespace octasim {
namespace {

const sc_core::sc_time kPeriod(1, sc_core::SC_NS);
constexpr std::uint64_t kLatency = 9;  // cycles

bool already_elaborated() {
  return sc_core::sc_get_status() != sc_core::SC_ELABORATION;
}

struct Access {
  sc_core::sc_time at;         // simulation time of the call
  sc_core::sc_time annotated;  // the delay the initiator passed in
  std::uint64_t addr;
  unsigned bytes;
  bool read;
};

// A fixed-latency target: every request completes kLatency cycles after it is made; reads
// return the low byte of each address.
struct RecordingTarget : sc_core::sc_module {
  tlm_utils::simple_target_socket<RecordingTarget> socket{"socket"};
  std::vector<Access> log;

  explicit RecordingTarget(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
    socket.register_b_transport(this, &RecordingTarget::b_transport);
  }

  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    log.push_back({sc_core::sc_time_stamp(), delay, trans.get_address(), trans.get_data_length(),
                   trans.is_read()});
    if (trans.is_read()) {
      for (unsigned i = 0; i < trans.get_data_length(); ++i) {
        trans.get_data_ptr()[i] = static_cast<std::uint8_t>(trans.get_address() + i);
      }
    }
    delay += kPeriod * static_cast<double>(kLatency);
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
  }
};

// A unit owning a DmaClient; `body` runs in its thread, `helper` (optional) in a second one.
struct Unit : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Unit> socket{"socket"};
  DmaClient dma;
  std::function<void(Unit&)> body, helper;
  bool finished = false;

  Unit(const sc_core::sc_module_name& name, const DmaClient::Params& params)
      : sc_core::sc_module(name), dma(socket, kPeriod, params) {
    SC_HAS_PROCESS(Unit);
    SC_THREAD(run);
    SC_THREAD(run_helper);
  }
  void run() {
    if (body) body(*this);
    finished = true;
  }
  void run_helper() {
    if (helper) helper(*this);
  }
  [[nodiscard]] std::uint64_t cycle() const {
    return static_cast<std::uint64_t>(sc_core::sc_time_stamp() / kPeriod + 0.5);
  }
};

struct Bench {
  RecordingTarget target{"target"};
  Unit unit;
  explicit Bench(const DmaClient::Params& params) : unit("unit", params) {
    unit.socket.bind(target.socket);
  }
  void run() {
    sc_core::sc_start();
    ASSERT_TRUE(unit.finished);
  }
};

std::uint64_t cycles(const sc_core::sc_time& t) {
  return static_cast<std::uint64_t>(t / kPeriod + 0.5);
}

TEST(DmaClient, RequestsIssueAtCurrentTimeWithoutAnnotation) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench b({8, 32, 64});
  sc_core::sc_time done_first, done_walk;
  b.unit.body = [&](Unit& u) {
    sc_core::wait(kPeriod * 5.0);
    done_first = u.dma.transfer(tlm::TLM_READ_COMMAND, 0x1000, 16);
    EXPECT_EQ(u.dma.data()[0], 0x00);
    EXPECT_EQ(u.dma.data()[15], 0x0F);
    // transfer() does not wait: the time is still cycle 5.
    EXPECT_EQ(u.cycle(), 5u);
    sc_core::wait(kPeriod * 3.0);
    // Three strided lines: three requests, all at cycle 8.
    AddressGenerator walk({SurfaceRegion{0x2000, 8, 3, 1, 0x100, 0x300}});
    done_walk = u.dma.transfer(tlm::TLM_WRITE_COMMAND, walk, 24);
  };
  b.run();
  ASSERT_EQ(b.target.log.size(), 4u);
  const std::vector<std::uint64_t> at = {5, 8, 8, 8};
  const std::vector<std::uint64_t> addr = {0x1000, 0x2000, 0x2100, 0x2200};
  const std::vector<unsigned> bytes = {16, 8, 8, 8};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(cycles(b.target.log[i].at), at[i]) << i;
    EXPECT_EQ(b.target.log[i].annotated, sc_core::SC_ZERO_TIME) << i;
    EXPECT_EQ(b.target.log[i].addr, addr[i]) << i;
    EXPECT_EQ(b.target.log[i].bytes, bytes[i]) << i;
    EXPECT_EQ(b.target.log[i].read, i == 0) << i;
  }
  EXPECT_EQ(cycles(done_first), 5 + kLatency);
  EXPECT_EQ(cycles(done_walk), 8 + kLatency);
}

TEST(DmaClient, PaceTakesCeilBytesOverRequestBytesCycles) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench b({8, 32, 64});
  b.unit.body = [](Unit& u) {
    const std::vector<std::uint64_t> sizes = {0, 1, 31, 32, 33, 64, 65, 1000};
    const std::vector<std::uint64_t> want = {0, 1, 1, 1, 2, 2, 3, 32};
    std::uint64_t expected_cycle = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_EQ(u.dma.pace(sizes[i]), want[i]) << sizes[i] << " bytes";
      expected_cycle += want[i];
      EXPECT_EQ(u.cycle(), expected_cycle) << sizes[i] << " bytes";
    }
  };
  b.run();
  EXPECT_TRUE(b.target.log.empty());
}

TEST(DmaClient, AtomsRoundUp) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench b({32, 64, 8});
  EXPECT_EQ(b.unit.dma.atoms(0), 0u);
  EXPECT_EQ(b.unit.dma.atoms(1), 1u);
  EXPECT_EQ(b.unit.dma.atoms(32), 1u);
  EXPECT_EQ(b.unit.dma.atoms(33), 2u);
}

TEST(DmaClient, ReserveBlocksUntilScheduledRelease) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench b({8, 8, 4});
  b.unit.body = [](Unit& u) {
    EXPECT_EQ(u.dma.reserve(3), 0u);
    EXPECT_EQ(u.dma.reserve(1), 0u);  // exactly full
    EXPECT_EQ(u.dma.held(), 4u);
    EXPECT_EQ(u.cycle(), 0u);
    sc_core::wait(kPeriod * 2.0);
    u.dma.release_at(2, sc_core::sc_time_stamp() + kPeriod * 10.0);  // frees at cycle 12
    EXPECT_EQ(u.dma.held(), 4u);                                     // scheduled, not yet applied
    EXPECT_EQ(u.dma.reserve(2), 10u);
    EXPECT_EQ(u.cycle(), 12u);
    EXPECT_EQ(u.dma.held(), 4u);
  };
  b.run();
}

TEST(DmaClient, ReserveBlocksUntilAnotherThreadReleases) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench b({8, 8, 4});
  b.unit.body = [](Unit& u) {
    EXPECT_EQ(u.dma.reserve(4), 0u);
    // Full and nothing scheduled: waits for the helper's release at cycle 7.
    EXPECT_EQ(u.dma.reserve(3), 7u);
    EXPECT_EQ(u.cycle(), 7u);
    EXPECT_EQ(u.dma.held(), 4u);  // 4 - 3 released + 3 reserved
  };
  b.unit.helper = [](Unit& u) {
    sc_core::wait(kPeriod * 7.0);
    u.dma.release(3);
  };
  b.run();
}

TEST(DmaClient, ReserveWakesForALaterReleaseScheduledByAnotherThread) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench b({8, 8, 4});
  b.unit.body = [](Unit& u) {
    EXPECT_EQ(u.dma.reserve(4), 0u);
    // Full and nothing scheduled; at cycle 2 the helper schedules a release for cycle 9.
    EXPECT_EQ(u.dma.reserve(3), 9u);
    EXPECT_EQ(u.cycle(), 9u);
    EXPECT_EQ(u.dma.held(), 4u);
  };
  b.unit.helper = [](Unit& u) {
    sc_core::wait(kPeriod * 2.0);
    u.dma.release_at(3, sc_core::sc_time_stamp() + kPeriod * 7.0);
  };
  b.run();
}

TEST(DmaClient, EmptyBufferTakesAnyRequestSize) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench b({8, 8, 4});
  b.unit.body = [](Unit& u) {
    EXPECT_EQ(u.dma.reserve(100), 0u);  // larger than the buffer, but it is empty
    EXPECT_EQ(u.dma.held(), 100u);
    u.dma.release_at(100, sc_core::sc_time_stamp() + kPeriod * 5.0);
    EXPECT_EQ(u.dma.reserve(1), 5u);
    EXPECT_EQ(u.dma.held(), 1u);
  };
  b.run();
}

TEST(DmaClient, ReleasesApplyInFifoOrder) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench b({8, 8, 4});
  b.unit.body = [](Unit& u) {
    EXPECT_EQ(u.dma.reserve(2), 0u);
    EXPECT_EQ(u.dma.reserve(2), 0u);
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    // The older entry frees at cycle 20, the younger one at cycle 5: as in a hardware FIFO the
    // younger one's release waits for the older one, so nothing frees before cycle 20.
    u.dma.release_at(2, now + kPeriod * 20.0);
    u.dma.release_at(2, now + kPeriod * 5.0);
    EXPECT_EQ(u.dma.reserve(1), 20u);
    EXPECT_EQ(u.cycle(), 20u);
    EXPECT_EQ(u.dma.held(), 1u);  // both releases applied at cycle 20
  };
  b.run();
}

TEST(DmaClient, ReleaseNowAppliesImmediately) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench b({8, 8, 4});
  b.unit.body = [](Unit& u) {
    EXPECT_EQ(u.dma.reserve(4), 0u);
    u.dma.release(3);
    EXPECT_EQ(u.dma.held(), 1u);
    EXPECT_EQ(u.dma.reserve(3), 0u);
    EXPECT_EQ(u.dma.held(), 4u);
    u.dma.reset();
    EXPECT_EQ(u.dma.held(), 0u);
  };
  b.run();
}

}  // namespace
}  // namespace octasim
