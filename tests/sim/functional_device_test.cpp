// The zero-time functional device and the engine table: an engine starts when its core unit
// and (when it reads memory) its RDMA have the consumer group enabled; completion clears both
// enables, advances the consumer and raises the group's GLB interrupt bit.
#include "sim/dla/functional_device.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/dla/engines.hpp"
#include "sim_test_util.hpp"

namespace octasim::dla {
namespace {

using test::TempDir;

// opendla_small.h addresses.
constexpr std::uint32_t kIntrStatus = 0x100c;
constexpr std::uint32_t kSdpRdmaPointer = 0x8004;
constexpr std::uint32_t kSdpRdmaOpEnable = 0x8008;
constexpr std::uint32_t kSdpRdmaSrcLow = 0x8018;
constexpr std::uint32_t kSdpRdmaBrdmaCfg = 0x8028;  // BRDMA_DISABLE bit 0
constexpr std::uint32_t kSdpRdmaNrdmaCfg = 0x8040;  // NRDMA_DISABLE bit 0
constexpr std::uint32_t kSdpRdmaErdmaCfg = 0x8058;  // ERDMA_DISABLE bit 0
constexpr std::uint32_t kSdpStatus = 0x9000;
constexpr std::uint32_t kSdpPointer = 0x9004;
constexpr std::uint32_t kSdpOpEnable = 0x9038;
constexpr std::uint32_t kSdpDstLow = 0x9048;
constexpr std::uint32_t kSdpBsCfg = 0x9058;           // BS_BYPASS bit 0
constexpr std::uint32_t kSdpBnCfg = 0x906c;           // BN_BYPASS bit 0
constexpr std::uint32_t kSdpEwCfg = 0x9080;           // EW_BYPASS bit 0
constexpr std::uint32_t kSdpFeatureModeCfg = 0x90b0;  // FLYING_MODE bit 0 (1 = ON)
constexpr std::uint32_t kSdpCvtScale = 0x90c4;
constexpr std::uint32_t kPdpOpEnable = 0xb008;
constexpr std::uint32_t kPdpOperationModeCfg = 0xb024;  // FLYING_MODE bit 4 (1 = OFF_FLYING)
constexpr std::uint32_t kPdpRdmaOpEnable = 0xa008;
constexpr std::uint32_t kCdpOpEnable = 0xd048;
constexpr std::uint32_t kCdpRdmaOpEnable = 0xc008;

// A 1x1x1 INT8 SDP layer in `group` that copies one byte from `src` to `dst`: BS, BN, EW
// bypassed, every operand DMA disabled, output convertor scale 1 (offset 0, shift 0). A unit's
// registers are written before its D_OP_ENABLE: writes to an enabled group are dropped.
void program_sdp_copy(FunctionalDevice& dev, unsigned group, std::uint32_t src, std::uint32_t dst,
                      bool enable_rdma = true, bool enable_core = true) {
  dev.csb_write(kSdpPointer, group);
  dev.csb_write(kSdpRdmaPointer, group);
  dev.csb_write(kSdpRdmaSrcLow, src);
  dev.csb_write(kSdpRdmaBrdmaCfg, 1);
  dev.csb_write(kSdpRdmaNrdmaCfg, 1);
  dev.csb_write(kSdpRdmaErdmaCfg, 1);
  dev.csb_write(kSdpDstLow, dst);
  dev.csb_write(kSdpBsCfg, 1);
  dev.csb_write(kSdpBnCfg, 1);
  dev.csb_write(kSdpEwCfg, 1);
  dev.csb_write(kSdpCvtScale, 1);
  if (enable_core) dev.csb_write(kSdpOpEnable, 1);
  if (enable_rdma) dev.csb_write(kSdpRdmaOpEnable, 1);
}

std::uint8_t byte_at(FunctionalDevice& dev, std::uint64_t addr) {
  std::uint8_t b = 0;
  dev.memory().read(addr, &b, 1);
  return b;
}

constexpr std::uint32_t kCdmaOpEnable = 0x3010;
constexpr std::uint32_t kCscOpEnable = 0x4008;
constexpr std::uint32_t kCmacAOpEnable = 0x5008;
constexpr std::uint32_t kCmacBOpEnable = 0x6008;
constexpr std::uint32_t kCaccOpEnable = 0x7008;

const Engine& engine(std::string_view name) {
  for (const Engine& e : engines()) {
    if (e.name == name) return e;
  }
  throw std::logic_error("no engine");
}

std::vector<std::string> unit_names(const Engine& e, const RegisterFile& rf) {
  std::vector<std::string> out;
  for (std::string_view u : e.units(group_reader(rf, rf.consumers()))) out.emplace_back(u);
  return out;
}

std::vector<unsigned> interrupt_bits(const Engine& e) {
  std::vector<unsigned> out;
  for (std::size_t i = 0; i < e.interrupt_count; ++i) out.push_back(e.interrupts[i].status_bit0);
  return out;
}

TEST(Engines, TableNamesUnitsAndInterruptBits) {
  ASSERT_EQ(engines().size(), 7u);
  RegisterFile rf;
  // GLB S_INTR_STATUS (opendla): SDP_DONE_STATUS0 bit 0, CDP 2, PDP 4, BDMA 6, RUBIK 8,
  // CDMA_DAT 16, CDMA_WT 18, CACC 20; octasim's OCTAV 22.
  EXPECT_EQ(interrupt_bits(engine("SDP")), (std::vector<unsigned>{0}));
  EXPECT_EQ(interrupt_bits(engine("BDMA")), (std::vector<unsigned>{6}));
  EXPECT_EQ(unit_names(engine("BDMA"), rf), (std::vector<std::string>{"BDMA"}));
  EXPECT_EQ(interrupt_bits(engine("OCTAV")), (std::vector<unsigned>{22}));
  EXPECT_EQ(interrupt_bits(engine("CDP")), (std::vector<unsigned>{2}));
  EXPECT_EQ(interrupt_bits(engine("PDP")), (std::vector<unsigned>{4}));
  EXPECT_EQ(interrupt_bits(engine("RUBIK")), (std::vector<unsigned>{8}));  // RUBIK_DONE_STATUS0
  EXPECT_EQ(unit_names(engine("RUBIK"), rf), (std::vector<std::string>{"RBK"}));
  EXPECT_EQ(interrupt_bits(engine("CONV")), (std::vector<unsigned>{16, 18, 20, 0}));
  EXPECT_EQ(unit_names(engine("CDP"), rf), (std::vector<std::string>{"CDP", "CDP_RDMA"}));
  EXPECT_EQ(unit_names(engine("SDP"), rf), (std::vector<std::string>{"SDP", "SDP_RDMA"}));
  rf.csb_write(kSdpFeatureModeCfg, 1);  // flying, every operand from registers: no SDP_RDMA
  EXPECT_EQ(unit_names(engine("CONV"), rf),
            (std::vector<std::string>{"CACC", "CDMA", "CSC", "CMAC_A", "CMAC_B", "SDP"}));
}

// Each case configures the group before enabling it: writes to an enabled group are dropped.
TEST(Engines, SdpNeedsItsRdmaUnlessFlying) {
  RegisterFile rf;
  const Engine& sdp = engine("SDP");
  EXPECT_FALSE(ready_to_start(sdp, rf, rf.consumers()));
  rf.csb_write(kSdpOpEnable, 1);
  EXPECT_FALSE(ready_to_start(sdp, rf, rf.consumers()))
      << "flying mode off: input comes through SDP_RDMA";
  rf.csb_write(kSdpRdmaOpEnable, 1);
  EXPECT_TRUE(ready_to_start(sdp, rf, rf.consumers()));
  RegisterFile::Groups group1 = rf.consumers();
  for (auto& g : group1) g = 1;
  EXPECT_FALSE(ready_to_start(sdp, rf, group1)) << "group 1 was never enabled";

  RegisterFile flying;
  flying.csb_write(kSdpFeatureModeCfg, 1);  // FLYING_MODE ON: input from CACC
  flying.csb_write(kSdpOpEnable, 1);
  EXPECT_FALSE(ready_to_start(sdp, flying, flying.consumers()))
      << "a flying SDP group runs as part of the convolution";
}

TEST(Engines, ConvolutionNeedsEveryConvUnitAndAFlyingSdp) {
  RegisterFile rf;
  const Engine& conv = engine("CONV");
  for (std::uint32_t addr :
       {kCaccOpEnable, kCmacAOpEnable, kCmacBOpEnable, kCscOpEnable, kCdmaOpEnable}) {
    EXPECT_FALSE(ready_to_start(conv, rf, rf.consumers()));
    rf.csb_write(addr, 1);
  }
  EXPECT_FALSE(ready_to_start(conv, rf, rf.consumers())) << "SDP not enabled";
  rf.csb_write(kSdpFeatureModeCfg, 1);
  rf.csb_write(kSdpOpEnable, 1);
  EXPECT_TRUE(ready_to_start(conv, rf, rf.consumers()));
}

TEST(Engines, PdpNeedsItsRdmaOnlyOffFlying) {
  RegisterFile rf;
  const Engine& pdp = engine("PDP");
  rf.csb_write(kPdpOperationModeCfg, 1u << 4);  // OFF_FLYING: reads memory through PDP_RDMA
  rf.csb_write(kPdpOpEnable, 1);
  EXPECT_FALSE(ready_to_start(pdp, rf, rf.consumers()));
  rf.csb_write(kPdpRdmaOpEnable, 1);
  EXPECT_TRUE(ready_to_start(pdp, rf, rf.consumers()));

  // ON_FLYING: input from SDP, no PDP_RDMA. A flying PDP never starts on its own: it starts
  // with the SDP operation that sends it its output (engines.hpp, feeds_pdp).
  RegisterFile on_flying;
  on_flying.csb_write(kPdpOperationModeCfg, 0);
  on_flying.csb_write(kPdpOpEnable, 1);
  EXPECT_FALSE(ready_to_start(pdp, on_flying, on_flying.consumers()));
  EXPECT_TRUE(flying_pdp_ready(on_flying, on_flying.consumers()));
}

// SDP with OUTPUT_DST=PDP (bit 1) waits for a flying PDP, whichever is enabled first.
TEST(Engines, SdpToPdpWaitsForAFlyingPdp) {
  const Engine& sdp = engine("SDP");
  for (const bool pdp_first : {true, false}) {
    RegisterFile rf;
    rf.csb_write(kSdpFeatureModeCfg, 1u << 1);  // OFF flying input, output to PDP
    rf.csb_write(kPdpOperationModeCfg, 0);      // ON_FLYING
    if (pdp_first) rf.csb_write(kPdpOpEnable, 1);
    rf.csb_write(kSdpOpEnable, 1);
    rf.csb_write(kSdpRdmaOpEnable, 1);
    EXPECT_EQ(ready_to_start(sdp, rf, rf.consumers()), pdp_first);
    if (!pdp_first) rf.csb_write(kPdpOpEnable, 1);
    EXPECT_TRUE(ready_to_start(sdp, rf, rf.consumers()));
  }
  // A PDP reading memory (OFF_FLYING) does not pair with it.
  RegisterFile off;
  off.csb_write(kSdpFeatureModeCfg, 1u << 1);
  off.csb_write(kPdpOperationModeCfg, 1u << 4);
  off.csb_write(kPdpOpEnable, 1);
  off.csb_write(kSdpOpEnable, 1);
  off.csb_write(kSdpRdmaOpEnable, 1);
  EXPECT_FALSE(ready_to_start(sdp, off, off.consumers()));
}

TEST(Engines, CdpAlwaysNeedsItsRdma) {
  RegisterFile rf;
  const Engine& cdp = engine("CDP");
  rf.csb_write(kCdpOpEnable, 1);
  EXPECT_FALSE(ready_to_start(cdp, rf, rf.consumers()));
  rf.csb_write(kCdpRdmaOpEnable, 1);
  EXPECT_TRUE(ready_to_start(cdp, rf, rf.consumers()));
}

TEST(FunctionalDevice, SdpLayerStartsOnlyWhenCoreAndRdmaAreEnabled) {
  FunctionalDevice dev(load_hw_config("nv_small"));
  const std::uint8_t in = 0x5d;
  dev.memory().write(0x1000, &in, 1);
  program_sdp_copy(dev, 0, 0x1000, 0x2000, /*enable_rdma=*/false);
  EXPECT_TRUE(dev.layers().empty());
  EXPECT_FALSE(dev.wait_interrupt(0, 1000));
  EXPECT_EQ(dev.csb_read(kIntrStatus), 0u);

  dev.csb_write(kSdpRdmaOpEnable, 1);
  ASSERT_EQ(dev.layers().size(), 1u);
  EXPECT_EQ(dev.layers()[0].engine, "SDP");
  EXPECT_EQ(dev.layers()[0].group, 0u);
  EXPECT_TRUE(dev.wait_interrupt(0, 1));
  EXPECT_EQ(dev.csb_read(kIntrStatus), 1u << 0);
  EXPECT_EQ(byte_at(dev, 0x2000), 0x5d);
  // Completion: enables cleared, groups idle, consumers advanced to group 1.
  EXPECT_FALSE(dev.registers().op_enabled("SDP", 0));
  EXPECT_FALSE(dev.registers().op_enabled("SDP_RDMA", 0));
  EXPECT_EQ(dev.registers().consumer("SDP"), 1u);
  EXPECT_EQ(dev.registers().consumer("SDP_RDMA"), 1u);
  EXPECT_EQ(dev.csb_read(kSdpStatus), 0u);
  EXPECT_EQ(dev.csb_read(kSdpPointer), 0x00010000u) << "CONSUMER 1, PRODUCER 0";
}

TEST(FunctionalDevice, EnableOrderRdmaFirstAlsoStarts) {
  FunctionalDevice dev(load_hw_config("nv_small"));
  program_sdp_copy(dev, 0, 0x1000, 0x2000, /*enable_rdma=*/false, /*enable_core=*/false);
  dev.csb_write(kSdpRdmaOpEnable, 1);
  EXPECT_TRUE(dev.layers().empty());
  dev.csb_write(kSdpOpEnable, 1);
  EXPECT_EQ(dev.layers().size(), 1u);
}

TEST(FunctionalDevice, SecondLayerRunsInGroupOneAndRaisesItsBit) {
  FunctionalDevice dev(load_hw_config("nv_small"));
  const std::uint8_t a = 0x11, b = 0x7e;
  dev.memory().write(0x1000, &a, 1);
  dev.memory().write(0x1100, &b, 1);
  program_sdp_copy(dev, 0, 0x1000, 0x2000);
  dev.csb_write(kIntrStatus, 1u << 0);  // software clears SDP_DONE_STATUS0
  EXPECT_EQ(dev.csb_read(kIntrStatus), 0u);
  program_sdp_copy(dev, 1, 0x1100, 0x2100);
  ASSERT_EQ(dev.layers().size(), 2u);
  EXPECT_EQ(dev.layers()[1].group, 1u);
  EXPECT_EQ(dev.csb_read(kIntrStatus), 1u << 1) << "SDP_DONE_STATUS1";
  EXPECT_EQ(byte_at(dev, 0x2100), 0x7e);
  EXPECT_EQ(byte_at(dev, 0x2000), 0x11);
  EXPECT_EQ(dev.registers().consumer("SDP"), 0u);
}

TEST(FunctionalDevice, FeatureMissingFromConfigurationIsATraceErrorOnTheEnablingLine) {
  TempDir dir;
  FunctionalDevice dev(load_hw_config("nv_small"));
  // EW not bypassed (D_DP_EW_CFG = 0): nv_small has no SDP EW.
  const std::string path = (dir.path() / "t.cfg").string();
  const trace::Trace t = trace::parse_trace(
      "reg_write(NVDLA_SDP.D_DP_BS_CFG_0, 0x1);\n"
      "reg_write(NVDLA_SDP.D_DP_BN_CFG_0, 0x1);\n"
      "reg_write(NVDLA_SDP.D_DP_EW_CFG_0, 0x0);\n"
      "reg_write(NVDLA_SDP.D_CVT_SCALE_0, 0x1);\n"
      "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);\n"
      "reg_write(NVDLA_SDP_RDMA.D_OP_ENABLE_0, 0x1);\n"
      "intr_notify(SDP_0, s);\n",
      path);
  try {
    (void)trace::play(t, dev, {});
    FAIL() << "expected TraceError";
  } catch (const trace::TraceError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ":6: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("not present"), std::string::npos) << msg;
  }
}

TEST(FunctionalDevice, IntrNotifyWithoutAnOperationFailsWithoutHanging) {
  TempDir dir;
  FunctionalDevice dev(load_hw_config("nv_small"));
  const std::string path = (dir.path() / "t.cfg").string();
  const trace::Trace t = trace::parse_trace("intr_notify(CDP_0, s);\n", path);
  try {
    (void)trace::play(t, dev, {});
    FAIL() << "expected TraceError";
  } catch (const trace::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":1:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CDP_0"), std::string::npos) << e.what();
  }
}

// player.cpp's poll() bounds its loop by device cycles: the functional device's wait_cycles
// advances its cycle count, so a poll that never holds fails after --timeout-cycles instead of
// looping forever (it used to: wait_cycles did nothing and cycle() stayed 0).
TEST(FunctionalDevice, PollThatNeverHoldsFailsInsteadOfHanging) {
  TempDir dir;
  FunctionalDevice dev(load_hw_config("nv_small"));
  const std::string path = (dir.path() / "t.cfg").string();
  const trace::Trace t = trace::parse_trace("poll_reg_equal(NVDLA_SDP.S_STATUS_0, 0x5);\n", path);
  trace::PlayerOptions o;
  o.timeout_cycles = 1000;
  EXPECT_THROW((void)trace::play(t, dev, o), trace::TraceError);
}

// Operations and CSB accesses take no time; waiting does, so waits are bounded.
TEST(FunctionalDevice, OnlyWaitingAdvancesTheCycleCount) {
  FunctionalDevice dev(load_hw_config("nv_small"));
  const std::uint8_t in = 0x33;
  dev.memory().write(0x1000, &in, 1);
  program_sdp_copy(dev, 0, 0x1000, 0x2000);
  EXPECT_EQ(dev.cycle(), 0u);
  EXPECT_TRUE(dev.wait_interrupt(0, 1000));
  EXPECT_EQ(dev.cycle(), 0u) << "the interrupt is already there";
  EXPECT_FALSE(dev.wait_interrupt(2, 1000));
  EXPECT_EQ(dev.cycle(), 1000u) << "a wait that cannot succeed uses up its timeout";
  dev.wait_cycles(16);
  EXPECT_EQ(dev.cycle(), 1016u);
  dev.wait_cycles(~std::uint64_t{0});
  EXPECT_EQ(dev.cycle(), ~std::uint64_t{0}) << "saturates";
}

TEST(FunctionalDevice, MemorySpaceFollowsTheConfiguration) {
  EXPECT_EQ(FunctionalDevice(load_hw_config("nv_small")).memory().address_space_size(),
            std::uint64_t{1} << 32);
  EXPECT_EQ(FunctionalDevice(load_hw_config("nv_large")).memory().address_space_size(),
            ~std::uint64_t{0});
}

}  // namespace
}  // namespace octasim::dla
