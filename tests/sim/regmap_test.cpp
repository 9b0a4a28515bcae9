// The generated NVDLA register map against opendla_small.h (addresses written here by hand).
#include "firmware/regmap/regmap.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "firmware/ppu/commands.hpp"
#include "sim_test_util.hpp"

namespace octasim::regs {
namespace {

TEST(Regmap, FindsRegisterByTraceNameWithAndWithoutSuffix) {
  const RegisterInfo* with = find_register("SDP", "D_OP_ENABLE_0");
  const RegisterInfo* without = find_register("SDP", "D_OP_ENABLE");
  ASSERT_NE(with, nullptr);
  EXPECT_EQ(with, without);
  EXPECT_EQ(with->addr, 0x9038u);
  EXPECT_STREQ(with->unit, "SDP");
  EXPECT_STREQ(with->name, "D_OP_ENABLE");
  EXPECT_TRUE(with->is_dual());

  const RegisterInfo* rdma = find_register("SDP_RDMA", "D_OP_ENABLE_0");
  ASSERT_NE(rdma, nullptr);
  EXPECT_EQ(rdma->addr, 0x8008u);
  const RegisterInfo* mask = find_register("GLB", "S_INTR_MASK_0");
  ASSERT_NE(mask, nullptr);
  EXPECT_EQ(mask->addr, 0x1004u);
  EXPECT_FALSE(mask->is_dual());
}

TEST(Regmap, RegisterWhoseOwnNameEndsInZeroTakesTheTraceSuffix) {
  // NVDLA names CDMA_D_DATAIN_SIZE_0_0 (register D_DATAIN_SIZE_0 plus the "_0" suffix).
  const RegisterInfo* r = find_register("CDMA", "D_DATAIN_SIZE_0_0");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->addr, 0x301cu);
  const RegisterInfo* r1 = find_register("CDMA", "D_DATAIN_SIZE_1_0");
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r1->addr, 0x3020u);
}

// regmap.hpp says `name` "may carry" the "_0" suffix, i.e. the bare name works too — also for
// registers whose own name ends in "_0" (the exact name is tried before stripping the suffix).
TEST(Regmap, BareNameEndingInZeroIsFound) {
  const RegisterInfo* r = find_register("CDMA", "D_DATAIN_SIZE_0");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->addr, 0x301cu);
}

TEST(Regmap, UnknownNamesAndUnitsAreNull) {
  EXPECT_EQ(find_register("SDP", "D_NO_SUCH_REGISTER_0"), nullptr);
  EXPECT_EQ(find_register("NOPE", "D_OP_ENABLE_0"), nullptr);
  EXPECT_EQ(find_register("SDP", "D_OP_ENABLE_1"), nullptr);
  EXPECT_EQ(find_register("sdp", "D_OP_ENABLE_0"), nullptr) << "names are case-sensitive";
  EXPECT_EQ(find_register("SDP", ""), nullptr);
}

TEST(Regmap, FindsRegisterByAddress) {
  const RegisterInfo* r = find_register(0x9004u);
  ASSERT_NE(r, nullptr);
  EXPECT_STREQ(r->unit, "SDP");
  EXPECT_STREQ(r->name, "S_POINTER");
  EXPECT_EQ(find_register(0x100cu), find_register("GLB", "S_INTR_STATUS"));
  EXPECT_EQ(find_register(0x1010u), nullptr);
  EXPECT_EQ(find_register(0x9006u), nullptr);
  EXPECT_EQ(find_register(0xfffffffcu), nullptr);
}

TEST(Regmap, TableIsSortedWithUniqueAddressesAndNames) {
  const RegisterTable t = nvdla_registers();
  ASSERT_GT(t.size(), 100u);
  std::set<std::string> names;
  std::uint32_t prev = 0;
  bool first = true;
  for (const RegisterInfo& r : t) {
    if (!first) {
      EXPECT_LT(prev, r.addr) << r.unit << "." << r.name;
    }
    EXPECT_EQ(r.addr % 4, 0u) << r.unit << "." << r.name;
    EXPECT_TRUE(names.insert(std::string(r.unit) + "." + r.name).second) << r.name;
    EXPECT_EQ(find_register(r.addr), &r);
    prev = r.addr;
    first = false;
  }
}

TEST(Regmap, WritableAndDefinedMasks) {
  const RegisterInfo* pointer = find_register("SDP", "S_POINTER");
  ASSERT_NE(pointer, nullptr);
  EXPECT_EQ(pointer->defined_mask(), 0x00010001u);
  EXPECT_EQ(pointer->writable_mask(), 0x00000001u) << "CONSUMER is read-only";

  const RegisterInfo* width = find_register("SDP", "D_DATA_CUBE_WIDTH");
  ASSERT_NE(width, nullptr);
  EXPECT_EQ(width->defined_mask(), 0x1fffu);
  EXPECT_EQ(width->writable_mask(), 0x1fffu);

  const RegisterInfo* lut_cfg = find_register("SDP", "S_LUT_ACCESS_CFG");
  ASSERT_NE(lut_cfg, nullptr);
  EXPECT_EQ(lut_cfg->defined_mask(), 0x000303ffu);

  const RegisterInfo* status = find_register("SDP", "S_STATUS");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->access, Access::kRo);
  EXPECT_EQ(status->defined_mask(), 0x00030003u);
  EXPECT_EQ(status->writable_mask(), 0u);

  const RegisterInfo* intr = find_register("GLB", "S_INTR_STATUS");
  ASSERT_NE(intr, nullptr);
  EXPECT_EQ(intr->access, Access::kW1c);
  EXPECT_EQ(intr->defined_mask(), 0x0fff03ffu);  // NVDLA's bits, OCTAV's 22..23, PPU 24..27
  EXPECT_EQ(find_register("GLB", "S_INTR_SET")->access, Access::kWo);
}

// The PPU's format header (firmware/ppu/commands.hpp) names the front end's registers by offset:
// they must be where the register map puts them.
TEST(Regmap, PpuFormatOffsetsMatchTheRegisterMap) {
  using namespace ppu_format;
  for (unsigned ch = 0; ch < kChannels; ++ch) {
    const std::uint32_t base = kCsbBase + ch * kChannelStride;
    const std::string prefix = "S_CH" + std::to_string(ch) + "_";
    const std::pair<const char*, std::uint32_t> regs[] = {{"PB_BASE_LOW", kPbBaseLow},
                                                          {"PB_BASE_HIGH", kPbBaseHigh},
                                                          {"PB_SIZE", kPbSize},
                                                          {"PUT", kPut},
                                                          {"GET", kGet},
                                                          {"STATUS", kStatus},
                                                          {"ERROR", kError},
                                                          {"ERROR_OFFSET", kErrorOffset}};
    for (const auto& [name, offset] : regs) {
      const RegisterInfo* r = find_register("PPU", prefix + name);
      ASSERT_NE(r, nullptr) << prefix << name;
      EXPECT_EQ(r->addr, base + offset) << prefix << name;
    }
    EXPECT_EQ(doorbell_channel(base + kPut), static_cast<int>(ch));
    EXPECT_EQ(doorbell_channel(base + kGet), -1);
  }
  for (unsigned b = 0; b < kSyncpoints; ++b) {
    const RegisterInfo* r = find_register("PPU", "S_SYNCPT" + std::to_string(b));
    ASSERT_NE(r, nullptr) << b;
    EXPECT_EQ(r->addr, kSyncptBase + 4 * b);
    EXPECT_EQ(channel_register(r->addr).channel, -1) << "not a channel's register";
  }
  EXPECT_EQ(find_register("PPU", "S_SYNCPT" + std::to_string(kSyncpoints)), nullptr);
  EXPECT_EQ(doorbell_channel(kCsbBase - 4), -1);
  EXPECT_EQ(doorbell_channel(kCsbBase + kChannels * kChannelStride + kPut), -1);
}

TEST(Regmap, FieldHelpers) {
  constexpr Field f{16, 2};
  EXPECT_EQ(f.mask(), 0x00030000u);
  EXPECT_EQ(f.get(0xffffffffu), 3u);
  EXPECT_EQ(f.set(0xffffffffu, 0), 0xfffcffffu);
  EXPECT_EQ(f.set(0, 5), 0x00010000u) << "values wider than the field are cut";
  constexpr Field whole{0, 32};
  EXPECT_EQ(whole.mask(), 0xffffffffu);
  EXPECT_EQ(whole.get(0x89abcdefu), 0x89abcdefu);
}

}  // namespace
}  // namespace octasim::regs
