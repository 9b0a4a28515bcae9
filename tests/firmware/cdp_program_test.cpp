// CDP layer programming against the strict mock, and the LRN LUT contents. LUT register values
// are those NVDLA's LRN traces program for the same settings (cdp_8x8x32_lrn5_int8_0:
// S_LUT_LE_START_LOW 0xfffffff2 / HIGH 0x3f for -14, S_LUT_LO_END_LOW 0x10000, slope scales
// 0x10001, D_LRN_CFG 0x1 for five channels); the access-port sequence is lut-programming.rst's
// (S_LUT_ACCESS_CFG with TABLE_ID and ACCESS_TYPE=WRITE, then every entry from 0).
#include <cmath>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/cdp.hpp"
#include "octasim/regs/nvdla.hpp"
#include "tests/firmware/strict_mmio.hpp"

namespace octasim::firmware {
namespace {

using testing::StrictMmio;

CdpLayer small_layer() {
  CdpLayer l;
  l.src = packed_surface(0x80030000, 4, 4, 16, 8);
  l.dst = packed_surface(0x80040000, 4, 4, 16, 8);
  l.local_size = 5;
  l.out_cvt = CdpConvertor{0, 1, 9};
  models::LutConfig& c = l.lut;
  c.le_function = models::LutLeFunction::kExponent;
  c.uflow_priority = models::LutTableId::kLo;
  c.oflow_priority = models::LutTableId::kLe;
  c.hybrid_priority = models::LutTableId::kLo;
  c.le_index_offset = -3;
  c.lo_index_select = 5;
  c.le_start = -14;
  c.le_end = 2;
  c.lo_start = 0;
  c.lo_end = 0x10000;
  c.le_slope_uflow_scale = c.le_slope_oflow_scale = 1;
  c.le_slope_uflow_shift = -1;
  c.le_slope_oflow_shift = 2;
  for (int i = 0; i < 65; ++i)
    l.lut_tables.le[static_cast<std::size_t>(i)] = static_cast<std::int16_t>(i);
  for (int i = 0; i < 257; ++i) {
    l.lut_tables.lo[static_cast<std::size_t>(i)] = static_cast<std::int16_t>(1000 + i);
  }
  l.lut_tables.lo[3] = -2;
  return l;
}

TEST(ProgramCdp, LrnWithLutGroup0) {
  StrictMmio m;
  m.write("CDP.S_POINTER", 0x0)
      .write("CDP_RDMA.S_POINTER", 0x0)
      .write("CDP_RDMA.D_DATA_CUBE_WIDTH", 0x3)
      .write("CDP_RDMA.D_DATA_CUBE_HEIGHT", 0x3)
      .write("CDP_RDMA.D_DATA_CUBE_CHANNEL", 0xf)
      .write("CDP_RDMA.D_SRC_BASE_ADDR_LOW", 0x80030000)
      .write("CDP_RDMA.D_SRC_BASE_ADDR_HIGH", 0x0)
      .write("CDP_RDMA.D_SRC_LINE_STRIDE", 0x20)
      .write("CDP_RDMA.D_SRC_SURFACE_STRIDE", 0x80)
      .write("CDP_RDMA.D_SRC_DMA_CFG", 0x1)  // MC
      .write("CDP_RDMA.D_SRC_COMPRESSION_EN", 0x0)
      .write("CDP_RDMA.D_DATA_FORMAT", 0x0)
      .write("CDP.S_LUT_ACCESS_CFG", 0x20000);  // ACCESS_TYPE WRITE (1<<17), TABLE_ID LE
  for (std::uint32_t i = 0; i < 65; ++i) m.write("CDP.S_LUT_ACCESS_DATA", i);
  m.write("CDP.S_LUT_ACCESS_CFG", 0x30000);  // WRITE, TABLE_ID LO (1<<16)
  for (std::uint32_t i = 0; i < 257; ++i) {
    m.write("CDP.S_LUT_ACCESS_DATA", i == 3 ? 0xfffe : 1000 + i);  // -2 as 16 bits
  }
  m.write("CDP.S_LUT_CFG", 0x50)  // EXPONENT, UFLOW_PRIORITY LO (1<<4), HYBRID_PRIORITY LO (1<<6)
      .write("CDP.S_LUT_INFO", 0x0500fd)  // LE_INDEX_OFFSET -3, LO_INDEX_SELECT 5 << 16
      .write("CDP.S_LUT_LE_START_LOW", 0xfffffff2)
      .write("CDP.S_LUT_LE_START_HIGH", 0x3f)
      .write("CDP.S_LUT_LE_END_LOW", 0x2)
      .write("CDP.S_LUT_LE_END_HIGH", 0x0)
      .write("CDP.S_LUT_LO_START_LOW", 0x0)
      .write("CDP.S_LUT_LO_START_HIGH", 0x0)
      .write("CDP.S_LUT_LO_END_LOW", 0x10000)
      .write("CDP.S_LUT_LO_END_HIGH", 0x0)
      .write("CDP.S_LUT_LE_SLOPE_SCALE", 0x10001)
      .write("CDP.S_LUT_LE_SLOPE_SHIFT", 0x5f)  // UFLOW -1 (0x1f), OFLOW 2 << 5
      .write("CDP.S_LUT_LO_SLOPE_SCALE", 0x0)
      .write("CDP.S_LUT_LO_SLOPE_SHIFT", 0x0)
      .write("CDP.D_DST_BASE_ADDR_LOW", 0x80040000)
      .write("CDP.D_DST_BASE_ADDR_HIGH", 0x0)
      .write("CDP.D_DST_LINE_STRIDE", 0x20)
      .write("CDP.D_DST_SURFACE_STRIDE", 0x80)
      .write("CDP.D_DST_DMA_CFG", 0x1)
      .write("CDP.D_DST_COMPRESSION_EN", 0x0)
      .write("CDP.D_DATA_FORMAT", 0x0)
      .write("CDP.D_LRN_CFG", 0x1)  // NORMALZ_LEN LEN5
      .write("CDP.D_DATIN_OFFSET", 0x0)
      .write("CDP.D_DATIN_SCALE", 0x1)
      .write("CDP.D_DATIN_SHIFTER", 0x0)
      .write("CDP.D_DATOUT_OFFSET", 0x0)
      .write("CDP.D_DATOUT_SCALE", 0x1)
      .write("CDP.D_DATOUT_SHIFTER", 0x9)
      .write("CDP.D_FUNC_BYPASS", 0x0)  // square sum and multiplier in use
      .write("CDP.D_PERF_ENABLE", 0x2)  // LUT_EN
      .write("CDP_RDMA.D_OP_ENABLE", 0x1)
      .write("CDP.D_OP_ENABLE", 0x1);
  EXPECT_EQ(program_cdp(m, small_layer(), 0, 8), 2u);  // CDP_DONE_STATUS0
}

TEST(ProgramCdp, LocalSizeAndConvertorsOfGroup1) {
  CdpLayer l = small_layer();
  l.local_size = 9;
  l.in_cvt = CdpConvertor{-100, -2, 3};
  l.out_cvt = CdpConvertor{-33, 9, 2};
  l.count_lut = false;
  // The full sequence is checked above; here the encodings that differ, with the values
  // NVDLA's cdp_8x8x64_lrn3_int8_12 programs for the same convertors: D_DATIN_OFFSET 0xff9c
  // (-100), D_DATIN_SCALE 0xfffe (-2), D_DATOUT_OFFSET 0xffffffdf (-33).
  struct Capture final : Mmio {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> writes;
    void write32(std::uint32_t a, std::uint32_t v) override { writes.emplace_back(a, v); }
    std::uint32_t read32(std::uint32_t) override { return 0; }
    void wait_interrupt(unsigned) override {}
  } cap;
  EXPECT_EQ(program_cdp(cap, l, 1, 8), 3u);  // CDP_DONE_STATUS1
  const auto value_of = [&](std::uint32_t addr) -> std::int64_t {
    std::int64_t v = -1;
    for (const auto& [a, x] : cap.writes) {
      if (a == addr) v = x;
    }
    return v;
  };
  namespace C = regs::CDP;
  EXPECT_EQ(cap.writes.front(), std::make_pair(C::S_POINTER::kAddr, 1u));
  EXPECT_EQ(value_of(C::D_LRN_CFG::kAddr), 0x3);  // LEN9
  EXPECT_EQ(value_of(C::D_DATIN_OFFSET::kAddr), 0xff9c);
  EXPECT_EQ(value_of(C::D_DATIN_SCALE::kAddr), 0xfffe);
  EXPECT_EQ(value_of(C::D_DATIN_SHIFTER::kAddr), 0x3);
  EXPECT_EQ(value_of(C::D_DATOUT_OFFSET::kAddr), 0xffffffdf);
  EXPECT_EQ(value_of(C::D_DATOUT_SCALE::kAddr), 0x9);
  EXPECT_EQ(value_of(C::D_DATOUT_SHIFTER::kAddr), 0x2);
  EXPECT_EQ(value_of(C::D_PERF_ENABLE::kAddr), 0x0);
  EXPECT_EQ(cap.writes.back(), std::make_pair(C::D_OP_ENABLE::kAddr, 1u));
  EXPECT_EQ(cap.writes[cap.writes.size() - 2],
            std::make_pair(regs::CDP_RDMA::D_OP_ENABLE::kAddr, 1u));
}

TEST(ProgramCdp, RefusesWithoutWritingAnything) {
  const auto refuses = [](const CdpLayer& l, const char* needle) {
    StrictMmio m;
    try {
      (void)program_cdp(m, l, 0, 8);
      ADD_FAILURE() << "expected FirmwareError containing '" << needle << "'";
    } catch (const FirmwareError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  CdpLayer l = small_layer();
  l.local_size = 4;
  refuses(l, "local size 4 is not 3, 5, 7 or 9");
  l = small_layer();
  l.lut.lo_index_select = 32;  // INT8 pipe: 6-bit signed
  refuses(l, "LUT LO index select 32 is outside -32..31");
  l = small_layer();
  l.lut.le_start = std::int64_t{1} << 37;
  refuses(l, "LUT LE start");
  l = small_layer();
  l.lut.le_slope_oflow_shift = 16;
  refuses(l, "LUT LE overflow slope shift 16");
  l = small_layer();
  l.in_cvt.offset = 128;  // INT8 uses the low 8 bits
  refuses(l, "input convertor offset 128");
  l = small_layer();
  l.in_cvt.shift = 32;
  refuses(l, "input convertor shift 32");
}

TEST(LrnLut, AlexNetParametersFollowTheFormula) {
  // f(S) = (2 + 1e-4/5 * S)^-0.75; f(0) * 2^15 = 2^14.25 = 19483.97, so 15 fraction bits.
  const LrnLut lut = make_lrn_lut(LrnParams{}, Precision::kInt8);
  EXPECT_EQ(lut.fraction_bits, 15u);
  EXPECT_EQ(lut.config.le_function, models::LutLeFunction::kExponent);
  EXPECT_EQ(lut.config.le_index_offset, 0);
  EXPECT_EQ(lut.config.le_start, 0);
  // The knee 1 / (1e-4 / 5) = 50000 needs 256 << 8 = 65536 of LO coverage.
  EXPECT_EQ(lut.config.lo_index_select, 8);
  EXPECT_EQ(lut.config.lo_end, 65536);
  EXPECT_EQ(lut.config.uflow_priority, models::LutTableId::kLo);
  EXPECT_EQ(lut.config.hybrid_priority, models::LutTableId::kLo);
  EXPECT_EQ(lut.config.oflow_priority, models::LutTableId::kLe);
  // LE[i] = f(2^i) * 2^15, LO[i] = f(256 i) * 2^15, values computed independently:
  EXPECT_EQ(lut.tables.le[0], 19484);   // f(1)
  EXPECT_EQ(lut.tables.le[10], 19336);  // f(1024)
  EXPECT_EQ(lut.tables.le[20], 3123);   // f(2^20)
  EXPECT_EQ(lut.tables.le[64], 0);      // f(2^64)
  EXPECT_EQ(lut.tables.lo[0], 19484);   // f(0)
  EXPECT_EQ(lut.tables.lo[1], 19447);   // f(256)
  EXPECT_EQ(lut.tables.lo[100], 16422);
  EXPECT_EQ(lut.tables.lo[256], 13351);  // f(65536)

  // Through the models' LUT: S = 0 and small S read LO, large S reads LE.
  const auto look = [&](std::int64_t s) { return models::lut_lookup(lut.config, lut.tables, s); };
  EXPECT_EQ(look(0).outcome, models::LutOutcome::kUnderflow);
  EXPECT_EQ(look(0).value, 19484);
  EXPECT_EQ(look(256).outcome, models::LutOutcome::kHybrid);
  EXPECT_EQ(look(256).value, 19447);
  EXPECT_EQ(look(1 << 20).outcome, models::LutOutcome::kLeHit);
  EXPECT_EQ(look(1 << 20).value, 3123);
}

TEST(LrnLut, RefusesMeaninglessParameters) {
  LrnParams p;
  p.k = 0;
  EXPECT_THROW((void)make_lrn_lut(p, Precision::kInt8), FirmwareError);
  p = LrnParams{};
  p.local_size = 6;
  EXPECT_THROW((void)make_lrn_lut(p, Precision::kInt8), FirmwareError);
  p = LrnParams{};
  p.alpha = std::nan("");
  EXPECT_THROW((void)make_lrn_lut(p, Precision::kInt8), FirmwareError);
}

}  // namespace
}  // namespace octasim::firmware
