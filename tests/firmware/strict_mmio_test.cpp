// The strict mock itself: it must fail on every kind of deviation, or the layer tests that use
// it prove nothing.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "octasim/regs/nvdla.hpp"
#include "tests/firmware/strict_mmio.hpp"

namespace octasim::firmware::testing {
namespace {

namespace R = octasim::regs;

TEST(StrictMmio, PassesTheExactSequence) {
  StrictMmio m;
  m.write("SDP.D_CVT_SCALE", 0x8d).read("GLB.S_INTR_STATUS", 0x11).interrupt(2);
  m.write32(R::SDP::D_CVT_SCALE::kAddr, 0x8d);
  EXPECT_EQ(m.read32(R::GLB::S_INTR_STATUS::kAddr), 0x11u);
  m.wait_interrupt(2);
  EXPECT_EQ(m.accesses(), 3u);
}

TEST(StrictMmio, FailsOnAWrongValueNamingTheExpectation) {
  EXPECT_NONFATAL_FAILURE(
      {
        StrictMmio m;
        m.write("SDP.D_CVT_SCALE", 0x8d);
        m.write32(R::SDP::D_CVT_SCALE::kAddr, 0x8e);
      },
      "access #0: got write32(NVDLA_SDP.D_CVT_SCALE_0 (0x90c4), 0x8e), expected "
      "write32(NVDLA_SDP.D_CVT_SCALE_0 (0x90c4), 0x8d)");
}

TEST(StrictMmio, FailsOnAWrongRegisterOrOrder) {
  EXPECT_NONFATAL_FAILURE(
      {
        StrictMmio m;
        m.write("SDP_RDMA.D_OP_ENABLE", 1).write("SDP.D_OP_ENABLE", 1);
        m.write32(R::SDP::D_OP_ENABLE::kAddr, 1);
        m.write32(R::SDP_RDMA::D_OP_ENABLE::kAddr, 1);
      },
      "expected write32(NVDLA_SDP_RDMA.D_OP_ENABLE_0");
}

TEST(StrictMmio, FailsOnAWrongKind) {
  EXPECT_NONFATAL_FAILURE(
      {
        StrictMmio m;
        m.interrupt(0);
        m.write32(R::SDP::D_OP_ENABLE::kAddr, 1);
      },
      "expected wait_interrupt(0)");
}

TEST(StrictMmio, FailsOnAnExtraAccess) {
  EXPECT_NONFATAL_FAILURE(
      {
        StrictMmio m;
        m.wait_interrupt(4);
      },
      "expected no more accesses");
}

TEST(StrictMmio, FailsWhenAnExpectedAccessNeverCame) {
  EXPECT_NONFATAL_FAILURE(
      {
        StrictMmio m;
        m.write("PDP.D_OP_ENABLE", 1).write("CDP.D_OP_ENABLE", 1);
        m.write32(R::PDP::D_OP_ENABLE::kAddr, 1);
      },
      "still expected write32(NVDLA_CDP.D_OP_ENABLE_0");
}

}  // namespace
}  // namespace octasim::firmware::testing
