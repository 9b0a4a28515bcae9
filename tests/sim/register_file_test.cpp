// RegisterFile against NVDLA's documented CSB behaviour (hwarch.rst "Ping-pong Synchronization
// Mechanism", "Host interrupt"; lut-programming.rst "LUT storage programming"). Addresses and
// field layouts are NVDLA's (opendla_small.h), written here by hand.
#include "sim/core/register_file.hpp"

#include <gtest/gtest.h>

#include "sim_test_util.hpp"

#include <string>
#include <utility>
#include <vector>

namespace octasim {
namespace {

// opendla_small.h addresses.
constexpr std::uint32_t kCfgromHwVersion = 0x0000;
constexpr std::uint32_t kGlbHwVersion = 0x1000;
constexpr std::uint32_t kGlbIntrMask = 0x1004;
constexpr std::uint32_t kGlbIntrSet = 0x1008;
constexpr std::uint32_t kGlbIntrStatus = 0x100c;
constexpr std::uint32_t kSdpRdmaPointer = 0x8004;
constexpr std::uint32_t kSdpRdmaOpEnable = 0x8008;
constexpr std::uint32_t kSdpRdmaDataCubeWidth = 0x800c;
constexpr std::uint32_t kSdpStatus = 0x9000;
constexpr std::uint32_t kSdpPointer = 0x9004;
constexpr std::uint32_t kSdpLutAccessCfg = 0x9008;
constexpr std::uint32_t kSdpLutAccessData = 0x900c;
constexpr std::uint32_t kSdpLutInfo = 0x9014;
constexpr std::uint32_t kSdpOpEnable = 0x9038;
constexpr std::uint32_t kSdpDataCubeWidth = 0x903c;  // WIDTH: bits 12:0
constexpr std::uint32_t kSdpDstBaseAddrLow = 0x9048;
constexpr std::uint32_t kSdpDStatus = 0x90cc;  // read-only, per group
constexpr std::uint32_t kCdpLutAccessCfg = 0xd008;
constexpr std::uint32_t kCdpLutAccessData = 0xd00c;

// S_LUT_ACCESS_CFG: LUT_ADDR 9:0, LUT_TABLE_ID bit 16 (0 LE, 1 LO), LUT_ACCESS_TYPE bit 17
// (0 READ, 1 WRITE).
constexpr std::uint32_t lut_cfg(std::uint32_t addr, bool lo, bool write) {
  return addr | (lo ? 1u << 16 : 0u) | (write ? 1u << 17 : 0u);
}

// S_STATUS: STATUS_0 bits 1:0, STATUS_1 bits 17:16; 0 IDLE, 1 RUNNING, 2 PENDING.
constexpr std::uint32_t status(std::uint32_t g0, std::uint32_t g1) {
  return g0 | (g1 << 16);
}
constexpr std::uint32_t kIdle = 0, kRunning = 1, kPending = 2;

// GLB interrupt bits that exist: 0..9 (SDP, CDP, PDP, BDMA, RUBIK), 16..21 (CDMA_DAT,
// CDMA_WT, CACC) and octasim's 22..23 (OCTAV).
// NVDLA's bits (0-9, 16-21), OCTAV's (22-23) and the PPU channels' (24-27).
constexpr std::uint32_t kAllInterrupts = 0x000003ffu | 0x003f0000u | 0x00c00000u | 0x0f000000u;

TEST(RegisterFile, ResetStateIsAllZeroBothPointersGroupZero) {
  RegisterFile rf;
  EXPECT_EQ(rf.csb_read(kSdpPointer), 0u);
  EXPECT_EQ(rf.csb_read(kSdpStatus), status(kIdle, kIdle));
  EXPECT_EQ(rf.csb_read(kSdpDataCubeWidth), 0u);
  EXPECT_EQ(rf.value(kSdpDataCubeWidth, 1), 0u);
  EXPECT_EQ(rf.csb_read(kGlbIntrStatus), 0u);
  EXPECT_EQ(rf.interrupt_status(), 0u);
  EXPECT_EQ(rf.consumer("SDP"), 0u);
  EXPECT_FALSE(rf.op_enabled("SDP", 0));
  EXPECT_FALSE(rf.op_enabled("SDP", 1));
}

TEST(RegisterFile, AccessWhereNoRegisterLivesThrowsCsbError) {
  RegisterFile rf;
  // 0x1010: after GLB's last register; 0x903e: not word aligned; 0x3fffc: past every unit.
  for (const std::uint32_t addr : {0x1010u, 0x903eu, 0x3fffcu, 0xfffffffcu}) {
    EXPECT_THROW(rf.csb_write(addr, 1), CsbError) << std::hex << addr;
    EXPECT_THROW((void)rf.csb_read(addr), CsbError) << std::hex << addr;
  }
  try {
    rf.csb_write(0x1010, 1);
  } catch (const CsbError& e) {
    EXPECT_NE(std::string(e.what()).find("1010"), std::string::npos) << e.what();
  }
}

TEST(RegisterFile, ProducerPointerSelectsTheGroupSoftwareAccesses) {
  RegisterFile rf;
  rf.csb_write(kSdpDataCubeWidth, 5);  // PRODUCER = 0 after reset
  rf.csb_write(kSdpPointer, 1);        // PRODUCER = GROUP_1
  EXPECT_EQ(rf.csb_read(kSdpDataCubeWidth), 0u) << "group 1 was never written";
  rf.csb_write(kSdpDataCubeWidth, 7);
  EXPECT_EQ(rf.csb_read(kSdpDataCubeWidth), 7u);
  rf.csb_write(kSdpPointer, 0);
  EXPECT_EQ(rf.csb_read(kSdpDataCubeWidth), 5u);
  // The hardware side sees each group's own copy, whatever the producer.
  EXPECT_EQ(rf.value(kSdpDataCubeWidth, 0), 5u);
  EXPECT_EQ(rf.value(kSdpDataCubeWidth, 1), 7u);
}

TEST(RegisterFile, SingleGroupRegistersHaveOneCopy) {
  RegisterFile rf;
  rf.csb_write(kSdpLutInfo, 0x00030201);
  rf.csb_write(kSdpPointer, 1);
  EXPECT_EQ(rf.csb_read(kSdpLutInfo), 0x00030201u);
  EXPECT_EQ(rf.value(kSdpLutInfo, 0), 0x00030201u);
  EXPECT_EQ(rf.value(kSdpLutInfo, 1), 0x00030201u);
}

TEST(RegisterFile, PointerIsPerUnit) {
  RegisterFile rf;
  rf.csb_write(kSdpPointer, 1);
  rf.csb_write(kSdpRdmaDataCubeWidth, 3);  // SDP_RDMA's PRODUCER is still 0
  EXPECT_EQ(rf.value(kSdpRdmaDataCubeWidth, 0), 3u);
  EXPECT_EQ(rf.value(kSdpRdmaDataCubeWidth, 1), 0u);
  EXPECT_EQ(rf.csb_read(kSdpRdmaPointer), 0u);
}

TEST(RegisterFile, ConsumerFieldOfPointerIsReadOnly) {
  RegisterFile rf;
  rf.csb_write(kSdpPointer, 0x00010001);  // PRODUCER = 1, try CONSUMER = 1
  EXPECT_EQ(rf.csb_read(kSdpPointer), 0x00000001u);
  EXPECT_EQ(rf.consumer("SDP"), 0u);
}

TEST(RegisterFile, BitsOutsideFieldsAreNotStored) {
  RegisterFile rf;
  rf.csb_write(kSdpDataCubeWidth, 0xffffffffu);  // WIDTH is 13 bits
  EXPECT_EQ(rf.csb_read(kSdpDataCubeWidth), 0x1fffu);
  rf.csb_write(kSdpDstBaseAddrLow, 0xdeadbeefu);  // a full 32-bit field
  EXPECT_EQ(rf.csb_read(kSdpDstBaseAddrLow), 0xdeadbeefu);
}

TEST(RegisterFile, ReadOnlyRegistersIgnoreCsbWritesButHardwareSetsThem) {
  RegisterFile rf;
  rf.csb_write(kSdpDStatus, 1);
  EXPECT_EQ(rf.csb_read(kSdpDStatus), 0u);
  rf.csb_write(kSdpStatus, 0x00010001);
  EXPECT_EQ(rf.csb_read(kSdpStatus), status(kIdle, kIdle));
  rf.csb_write(kGlbHwVersion, 0x1234);
  EXPECT_EQ(rf.csb_read(kGlbHwVersion), 0u);

  rf.set_value(kSdpDStatus, 1, 1);  // hardware: group 1 saw unequal data
  EXPECT_EQ(rf.csb_read(kSdpDStatus), 0u) << "software reads group 0 (PRODUCER 0)";
  rf.csb_write(kSdpPointer, 1);
  EXPECT_EQ(rf.csb_read(kSdpDStatus), 1u);
}

// CFGROM has neither S_POINTER nor S_STATUS. Address 0 is CFGROM_HW_VERSION, a read-only
// register, not a stand-in for the missing S_POINTER (as it once was: a write set PRODUCER and
// a read returned the composed pointer value).
TEST(RegisterFile, CfgromHwVersionAtAddressZeroIsReadOnly) {
  RegisterFile rf;
  const std::uint32_t before = rf.csb_read(kCfgromHwVersion);
  rf.csb_write(kCfgromHwVersion, 0xffffffffu);
  EXPECT_EQ(rf.csb_read(kCfgromHwVersion), before);
}

TEST(RegisterFile, OpEnableOnConsumerGroupRunsAndNotifies) {
  RegisterFile rf;
  std::vector<std::pair<std::string, unsigned>> calls;
  rf.on_op_enable = [&](std::string_view unit, unsigned group) {
    calls.emplace_back(std::string(unit), group);
  };
  rf.csb_write(kSdpOpEnable, 1);
  EXPECT_TRUE(rf.op_enabled("SDP", 0));
  EXPECT_FALSE(rf.op_enabled("SDP", 1));
  EXPECT_FALSE(rf.op_enabled("SDP_RDMA", 0));
  EXPECT_EQ(rf.csb_read(kSdpStatus), status(kRunning, kIdle));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].first, "SDP");
  EXPECT_EQ(calls[0].second, 0u);

  rf.csb_write(kSdpRdmaOpEnable, 1);
  EXPECT_TRUE(rf.op_enabled("SDP_RDMA", 0));
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].first, "SDP_RDMA");
}

TEST(RegisterFile, OpEnableWithZeroDoesNotStartAnything) {
  RegisterFile rf;
  int calls = 0;
  rf.on_op_enable = [&](std::string_view, unsigned) { ++calls; };
  rf.csb_write(kSdpOpEnable, 0);
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(rf.op_enabled("SDP", 0));
  EXPECT_EQ(rf.csb_read(kSdpStatus), status(kIdle, kIdle));
}

TEST(RegisterFile, SecondGroupEnabledWhileFirstRunsIsPending) {
  RegisterFile rf;
  rf.csb_write(kSdpOpEnable, 1);
  rf.csb_write(kSdpPointer, 1);
  rf.csb_write(kSdpOpEnable, 1);
  EXPECT_EQ(rf.csb_read(kSdpStatus), status(kRunning, kPending));
  EXPECT_TRUE(rf.op_enabled("SDP", 0));
  EXPECT_TRUE(rf.op_enabled("SDP", 1));
}

TEST(RegisterFile, GroupEnabledAheadOfTheConsumerIsPending) {
  RegisterFile rf;
  rf.csb_write(kSdpPointer, 1);
  rf.csb_write(kSdpOpEnable, 1);  // CONSUMER is 0: hardware waits for group 0
  EXPECT_EQ(rf.csb_read(kSdpStatus), status(kIdle, kPending));
}

TEST(RegisterFile, OpDoneClearsEnableIdlesGroupAndAdvancesConsumer) {
  RegisterFile rf;
  rf.csb_write(kSdpOpEnable, 1);
  rf.csb_write(kSdpPointer, 1);
  rf.csb_write(kSdpOpEnable, 1);
  rf.op_done("SDP", 0);
  EXPECT_FALSE(rf.op_enabled("SDP", 0));
  EXPECT_TRUE(rf.op_enabled("SDP", 1));
  EXPECT_EQ(rf.consumer("SDP"), 1u);
  EXPECT_EQ(rf.csb_read(kSdpPointer), 0x00010001u);  // CONSUMER 1, PRODUCER 1
  EXPECT_EQ(rf.value(kSdpOpEnable, 0), 0u);
  EXPECT_EQ(rf.csb_read(kSdpStatus) & 0x3u, kIdle);
  rf.set_running("SDP", 1);
  EXPECT_EQ(rf.csb_read(kSdpStatus), status(kIdle, kRunning));
  rf.op_done("SDP", 1);
  EXPECT_EQ(rf.consumer("SDP"), 0u);
  EXPECT_EQ(rf.csb_read(kSdpStatus), status(kIdle, kIdle));
  EXPECT_EQ(rf.csb_read(kSdpOpEnable), 0u);
}

TEST(RegisterFile, UnknownUnitNameThrows) {
  RegisterFile rf;
  EXPECT_THROW((void)rf.consumer("NOPE"), CsbError);
  EXPECT_THROW((void)rf.op_enabled("NOPE", 0), CsbError);
}

// hwarch.rst, Ping-pong Synchronization Mechanism: "when the enable bit is set, the hardware
// layer is ready to execute. At this point, any writes to register groups that have the enable
// bit set will be dropped silently until the hardware layer completes execution" and "the CPU
// cannot clear the enable field".
TEST(RegisterFile, WritesToAnEnabledGroupAreDropped) {
  RegisterFile rf;
  rf.csb_write(kSdpDataCubeWidth, 4);
  rf.csb_write(kSdpOpEnable, 1);
  rf.csb_write(kSdpDataCubeWidth, 9);
  EXPECT_EQ(rf.value(kSdpDataCubeWidth, 0), 4u);
  rf.csb_write(kSdpOpEnable, 0);
  EXPECT_TRUE(rf.op_enabled("SDP", 0));
}

// Only the enabled group of the enabled unit is locked: the other group (its D_OP_ENABLE
// included), S_ registers, the LUT port and other units' groups stay writable; op_done unlocks.
TEST(RegisterFile, OnlyTheEnabledGroupOfThatUnitIsLocked) {
  RegisterFile rf;
  rf.csb_write(kSdpOpEnable, 1);  // group 0 of SDP enabled
  rf.csb_write(kSdpPointer, 1);
  EXPECT_EQ(rf.csb_read(kSdpPointer), 0x00000001u) << "S_POINTER stays writable";
  rf.csb_write(kSdpDataCubeWidth, 7);
  EXPECT_EQ(rf.value(kSdpDataCubeWidth, 1), 7u);
  rf.csb_write(kSdpOpEnable, 1);
  EXPECT_TRUE(rf.op_enabled("SDP", 1)) << "the other group's D_OP_ENABLE stays writable";
  rf.csb_write(kSdpLutInfo, 0x00030201);
  EXPECT_EQ(rf.csb_read(kSdpLutInfo), 0x00030201u);
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(0, false, true));
  rf.csb_write(kSdpLutAccessData, 0x1234);
  EXPECT_EQ(rf.lut("SDP").le[0], 0x1234);
  rf.csb_write(kSdpRdmaDataCubeWidth, 5);
  EXPECT_EQ(rf.value(kSdpRdmaDataCubeWidth, 0), 5u) << "SDP_RDMA has its own enable";

  rf.csb_write(kSdpPointer, 0);
  rf.csb_write(kSdpDataCubeWidth, 9);
  EXPECT_EQ(rf.value(kSdpDataCubeWidth, 0), 0u);
  rf.op_done("SDP", 0);
  rf.csb_write(kSdpDataCubeWidth, 9);
  EXPECT_EQ(rf.value(kSdpDataCubeWidth, 0), 9u) << "writable again once the group completed";
}

TEST(RegisterFile, IntrSetSetsOnlyDefinedStatusBitsAndReadsZero) {
  RegisterFile rf;
  rf.csb_write(kGlbIntrSet, 0xffffffffu);
  EXPECT_EQ(rf.csb_read(kGlbIntrStatus), kAllInterrupts);
  EXPECT_EQ(rf.interrupt_status(), kAllInterrupts);
  EXPECT_EQ(rf.csb_read(kGlbIntrSet), 0u) << "S_INTR_SET is write-only";
}

TEST(RegisterFile, IntrStatusIsWriteOneToClear) {
  RegisterFile rf;
  rf.csb_write(kGlbIntrSet, 0x00000035u);  // bits 0, 2, 4, 5
  rf.csb_write(kGlbIntrStatus, 0);
  EXPECT_EQ(rf.csb_read(kGlbIntrStatus), 0x35u) << "writing zeros clears nothing";
  rf.csb_write(kGlbIntrStatus, 0x00000011u);  // clear bits 0 and 4
  EXPECT_EQ(rf.csb_read(kGlbIntrStatus), 0x24u);
  rf.csb_write(kGlbIntrStatus, 0xffffffffu);
  EXPECT_EQ(rf.csb_read(kGlbIntrStatus), 0u);
}

TEST(RegisterFile, RaiseInterruptSetsTheStatusBit) {
  RegisterFile rf;
  rf.raise_interrupt(4);   // PDP_DONE_STATUS0
  rf.raise_interrupt(17);  // CDMA_DAT_DONE_STATUS1
  EXPECT_EQ(rf.csb_read(kGlbIntrStatus), (1u << 4) | (1u << 17));
}

// The syncpoints (PPU S_SYNCPT<b>, octasim's, 0x13100 + 4 b): each raise of bit b counts, a
// raise of a bit already set too, and clearing the bit keeps the count; S_INTR_SET counts each
// bit it sets; read-only to software.
TEST(RegisterFile, SyncpointsCountRaisesOfEachStatusBit) {
  constexpr std::uint32_t kSyncpt0 = 0x13100;
  RegisterFile rf;
  rf.raise_interrupt(0);
  rf.raise_interrupt(0);  // not yet cleared: the level bit merges them, the count does not
  rf.csb_write(kGlbIntrStatus, 1u);
  rf.raise_interrupt(0);
  rf.raise_interrupt(25);  // PPU channel 1
  EXPECT_EQ(rf.csb_read(kSyncpt0), 3u);
  EXPECT_EQ(rf.csb_read(kSyncpt0 + 4 * 25), 1u);
  EXPECT_EQ(rf.csb_read(kSyncpt0 + 4 * 1), 0u);
  rf.csb_write(kGlbIntrSet, (1u << 1) | (1u << 25));
  EXPECT_EQ(rf.csb_read(kSyncpt0 + 4 * 1), 1u);
  EXPECT_EQ(rf.csb_read(kSyncpt0 + 4 * 25), 2u);
  rf.csb_write(kSyncpt0, 0);
  EXPECT_EQ(rf.csb_read(kSyncpt0), 3u) << "read-only";
  EXPECT_THROW((void)rf.csb_read(kSyncpt0 + 4 * 28), CsbError) << "bits 28..31 have none";
}

TEST(RegisterFile, IntrMaskReadsBackDefinedBitsAndDoesNotHideStatus) {
  RegisterFile rf;
  rf.csb_write(kGlbIntrMask, 0xffffffffu);
  EXPECT_EQ(rf.csb_read(kGlbIntrMask), kAllInterrupts);
  // hwarch.rst, Host interrupt: the mask gates the interrupt pin; INTR_STATUS still records.
  rf.raise_interrupt(0);
  EXPECT_EQ(rf.csb_read(kGlbIntrStatus), 1u);
}

TEST(RegisterFile, LutWriteThenReadBackWithAutoIncrement) {
  RegisterFile rf;
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(0, false, true));
  for (std::uint32_t v : {0x1111u, 0x2222u, 0x3333u}) rf.csb_write(kSdpLutAccessData, v);
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(0, true, true));
  for (std::uint32_t v : {0xaaaau, 0xbbbbu}) rf.csb_write(kSdpLutAccessData, v);

  const LutTables& t = rf.lut("SDP");
  EXPECT_EQ(t.le[0], 0x1111);
  EXPECT_EQ(t.le[1], 0x2222);
  EXPECT_EQ(t.le[2], 0x3333);
  EXPECT_EQ(t.le[3], 0);
  EXPECT_EQ(t.lo[0], 0xaaaa);
  EXPECT_EQ(t.lo[1], 0xbbbb);

  // "NVDLA supports read back the programmed LUT entries from arbitrary entry."
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(1, false, false));
  EXPECT_EQ(rf.csb_read(kSdpLutAccessData), 0x2222u);
  EXPECT_EQ(rf.csb_read(kSdpLutAccessData), 0x3333u);
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(1, true, false));
  EXPECT_EQ(rf.csb_read(kSdpLutAccessData), 0xbbbbu);
}

TEST(RegisterFile, LutDataIsSixteenBits) {
  RegisterFile rf;
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(0, false, true));
  rf.csb_write(kSdpLutAccessData, 0x0001fffeu);
  EXPECT_EQ(rf.lut("SDP").le[0], 0xfffe);
}

TEST(RegisterFile, LutDataWriteInReadModeDoesNotModifyTheTable) {
  RegisterFile rf;
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(0, false, true));
  rf.csb_write(kSdpLutAccessData, 0x1234);
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(0, false, false));
  rf.csb_write(kSdpLutAccessData, 0x5678);
  EXPECT_EQ(rf.lut("SDP").le[0], 0x1234);
}

TEST(RegisterFile, LutTablesHave65And257EntriesAndIgnoreWritesBeyond) {
  RegisterFile rf;
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(0, false, true));
  for (std::uint32_t i = 0; i < 70; ++i) rf.csb_write(kSdpLutAccessData, 100 + i);
  EXPECT_EQ(rf.lut("SDP").le[64], 164);
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(0, true, true));
  for (std::uint32_t i = 0; i < 260; ++i) rf.csb_write(kSdpLutAccessData, 1000 + i);
  EXPECT_EQ(rf.lut("SDP").lo[0], 1000);
  EXPECT_EQ(rf.lut("SDP").lo[256], 1256);
  EXPECT_EQ(rf.lut("SDP").le[0], 100) << "LO writes must not spill into LE";
}

TEST(RegisterFile, SdpAndCdpLutPortsAreIndependent) {
  RegisterFile rf;
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(5, false, true));
  rf.csb_write(kCdpLutAccessCfg, lut_cfg(7, true, true));
  rf.csb_write(kSdpLutAccessData, 0x00aa);
  rf.csb_write(kCdpLutAccessData, 0x00bb);
  EXPECT_EQ(rf.lut("SDP").le[5], 0x00aa);
  EXPECT_EQ(rf.lut("SDP").lo[7], 0);
  EXPECT_EQ(rf.lut("CDP").lo[7], 0x00bb);
  EXPECT_EQ(rf.lut("CDP").le[5], 0);
}

TEST(RegisterFile, LutIsSharedByBothRegisterGroups) {
  RegisterFile rf;
  rf.csb_write(kSdpPointer, 1);
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(0, false, true));
  rf.csb_write(kSdpLutAccessData, 0x4321);
  rf.csb_write(kSdpPointer, 0);
  rf.csb_write(kSdpLutAccessCfg, lut_cfg(0, false, false));
  EXPECT_EQ(rf.csb_read(kSdpLutAccessData), 0x4321u);
}

}  // namespace
}  // namespace octasim
