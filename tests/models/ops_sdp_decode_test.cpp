// SDP register decode (sim/dla/sdp_functional) and run_sdp's status registers.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/dla/sdp_functional.hpp"

namespace octasim::dla {
namespace {

namespace S = regs::SDP;
namespace RD = regs::SDP_RDMA;
using models::SdpAluAlgo;
using models::ops::SdpDataMode;
using models::ops::SdpDataUse;
using models::ops::SdpOperandSource;
using models::ops::SdpPrecision;

class NullMemory final : public models::ops::Memory {
 public:
  void read(std::uint64_t, std::uint8_t* dst, std::size_t size) const override {
    for (std::size_t i = 0; i < size; ++i) dst[i] = 0;
  }
  void write(std::uint64_t, const std::uint8_t*, std::size_t) override {}
};

// Register values by address; a 3x2x20 INT8 layer with every stage bypassed.
struct Regs {
  std::map<std::uint32_t, std::uint32_t> v;
  Regs() {
    for (const std::uint32_t a : {S::D_DATA_CUBE_WIDTH::kAddr, RD::D_DATA_CUBE_WIDTH::kAddr}) {
      v[a] = 2;
    }
    for (const std::uint32_t a : {S::D_DATA_CUBE_HEIGHT::kAddr, RD::D_DATA_CUBE_HEIGHT::kAddr}) {
      v[a] = 1;
    }
    for (const std::uint32_t a : {S::D_DATA_CUBE_CHANNEL::kAddr, RD::D_DATA_CUBE_CHANNEL::kAddr}) {
      v[a] = 19;
    }
    v[S::D_DP_BS_CFG::kAddr] = 1;
    v[S::D_DP_BN_CFG::kAddr] = 1;
    v[S::D_DP_EW_CFG::kAddr] = 1;
    v[RD::D_BRDMA_CFG::kAddr] = 1;
    v[RD::D_NRDMA_CFG::kAddr] = 1;
    v[RD::D_ERDMA_CFG::kAddr] = 1;
    v[S::D_CVT_SCALE::kAddr] = 1;
  }
  [[nodiscard]] RegRead reader() const {
    return [this](std::uint32_t a) {
      const auto it = v.find(a);
      return it == v.end() ? 0u : it->second;
    };
  }
};

HwConfig nv_small() {
  return HwConfig{};
}

HwConfig nv_small_256_full() {
  HwConfig hw;
  hw.name = "nv_small_256_full";
  hw.dla.sdp_ew = true;
  hw.dla.sdp_lut = true;
  hw.dla.mac_atomic_c = 32;
  return hw;
}

std::string error_of(const HwConfig& hw, const Regs& r) {
  try {
    (void)decode_sdp(hw, r.reader(), LutTables{});
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(SdpDecode, CubeStridesAndAddresses) {
  Regs r;
  r.v[RD::D_SRC_BASE_ADDR_HIGH::kAddr] = 0x1;
  r.v[RD::D_SRC_BASE_ADDR_LOW::kAddr] = 0x80000100;
  r.v[RD::D_SRC_LINE_STRIDE::kAddr] = 0x80;
  r.v[RD::D_SRC_SURFACE_STRIDE::kAddr] = 0x200;
  r.v[S::D_DST_BASE_ADDR_LOW::kAddr] = 0x900001c0;
  r.v[S::D_DST_LINE_STRIDE::kAddr] = 0x100;
  r.v[S::D_DST_SURFACE_STRIDE::kAddr] = 0x300;
  const auto c = decode_sdp(nv_small(), r.reader(), LutTables{});
  EXPECT_EQ(c.width, 3u);
  EXPECT_EQ(c.height, 2u);
  EXPECT_EQ(c.channels, 20u);
  EXPECT_EQ(c.surfaces(), 3u);  // 8 INT8 channels per 8-byte atom
  EXPECT_EQ(c.src_base, 0x180000100u);
  EXPECT_EQ(c.src_line_stride, 0x80u);
  EXPECT_EQ(c.src_surface_stride, 0x200u);
  EXPECT_EQ(c.dst_base, 0x900001c0u);
  EXPECT_EQ(c.dst_line_stride, 0x100u);
  EXPECT_EQ(c.dst_surface_stride, 0x300u);
  EXPECT_TRUE(c.bs.bypass && c.bn.bypass && c.ew.bypass);
  EXPECT_EQ(c.proc_precision, SdpPrecision::kInt8);
}

TEST(SdpDecode, XStageFields) {
  Regs r;
  // BS: not bypassed, ALU on, algo MIN (1), MUL on, PReLU, ReLU on.
  r.v[S::D_DP_BS_CFG::kAddr] = (1u << 2) | (1u << 5);
  r.v[S::D_DP_BS_ALU_CFG::kAddr] = 1u | (0x2au << 8);               // MEM, shift 42
  r.v[S::D_DP_BS_ALU_SRC_VALUE::kAddr] = 0xfffe;                    // -2
  r.v[S::D_DP_BS_MUL_CFG::kAddr] = 0xc5u << 8;                      // REG, shift field 0xc5
  r.v[S::D_DP_BS_MUL_SRC_VALUE::kAddr] = 0x8000;                    // -32768
  r.v[RD::D_BRDMA_CFG::kAddr] = (1u << 1) | (1u << 3) | (1u << 4);  // ALU, 2 bytes, per element
  r.v[RD::D_BS_BASE_ADDR_LOW::kAddr] = 0x4000;
  r.v[RD::D_BS_LINE_STRIDE::kAddr] = 0x60;
  r.v[RD::D_BS_SURFACE_STRIDE::kAddr] = 0x120;
  const auto c = decode_sdp(nv_small(), r.reader(), LutTables{});
  EXPECT_FALSE(c.bs.bypass);
  EXPECT_FALSE(c.bs.alu_bypass);
  EXPECT_EQ(c.bs.alu_algo, SdpAluAlgo::kMin);
  EXPECT_EQ(c.bs.alu_src, SdpOperandSource::kMemory);
  EXPECT_EQ(c.bs.alu_shift, 42);
  EXPECT_EQ(c.bs.alu_operand, -2);
  EXPECT_FALSE(c.bs.mul_bypass);
  EXPECT_TRUE(c.bs.mul_prelu);
  EXPECT_FALSE(c.bs.relu_bypass);
  EXPECT_EQ(c.bs.mul_src, SdpOperandSource::kRegister);
  EXPECT_EQ(c.bs.mul_shift, 5);  // the truncation takes the low 6 bits of the 8-bit field
  EXPECT_EQ(c.bs.mul_operand, -32768);
  EXPECT_TRUE(c.brdma.enabled);
  EXPECT_EQ(c.brdma.use, SdpDataUse::kAlu);
  EXPECT_EQ(c.brdma.bytes_per_component, 2u);
  EXPECT_EQ(c.brdma.mode, SdpDataMode::kPerElement);
  EXPECT_EQ(c.brdma.base, 0x4000u);
  EXPECT_EQ(c.brdma.line_stride, 0x60u);
  EXPECT_EQ(c.brdma.surface_stride, 0x120u);
  EXPECT_FALSE(c.nrdma.enabled);
}

TEST(SdpDecode, EwConvertorsAndLut) {
  Regs r;
  // EW on, ALU SUM from MEM via its convertor, MUL from REG, LUT on.
  r.v[S::D_DP_EW_CFG::kAddr] = (2u << 2);
  r.v[S::D_DP_EW_ALU_CFG::kAddr] = 1;                        // MEM, convertor not bypassed
  r.v[S::D_DP_EW_ALU_CVT_OFFSET_VALUE::kAddr] = 0xfffffff6;  // -10
  r.v[S::D_DP_EW_ALU_CVT_SCALE_VALUE::kAddr] = 0xff00;       // -256
  r.v[S::D_DP_EW_ALU_CVT_TRUNCATE_VALUE::kAddr] = 0x1ca;     // 6-bit field: 0x0a
  r.v[S::D_DP_EW_MUL_SRC_VALUE::kAddr] = 0x80000000;
  r.v[S::D_DP_EW_TRUNCATE_VALUE::kAddr] = 0x7ff;  // 10-bit field: 0x3ff
  r.v[RD::D_ERDMA_CFG::kAddr] = 1u << 1;          // enabled, ALU
  r.v[S::S_LUT_CFG::kAddr] = 1u | (1u << 5);      // linear, oflow priority LO
  r.v[S::S_LUT_INFO::kAddr] = 0xfe | (0x05u << 8) | (0x81u << 16);
  r.v[S::S_LUT_LE_START::kAddr] = 0xffffff00;
  r.v[S::S_LUT_LE_SLOPE_SCALE::kAddr] = 0x8000fff0;
  r.v[S::S_LUT_LE_SLOPE_SHIFT::kAddr] = 0x1f | (0x0fu << 5);
  LutTables tables;
  tables.le[3] = 0xfffd;
  tables.lo[256] = 0x1234;
  const auto c = decode_sdp(nv_small_256_full(), r.reader(), tables);
  EXPECT_FALSE(c.ew.bypass);
  EXPECT_EQ(c.ew.alu_algo, SdpAluAlgo::kSum);
  EXPECT_EQ(c.ew.alu_src, SdpOperandSource::kMemory);
  EXPECT_FALSE(c.ew.alu_cvt.bypass);
  EXPECT_EQ(c.ew.alu_cvt.offset, -10);
  EXPECT_EQ(c.ew.alu_cvt.scale, -256);
  EXPECT_EQ(c.ew.alu_cvt.truncate, 0x0a);
  EXPECT_EQ(c.ew.mul_operand, std::int32_t{-2147483647 - 1});
  EXPECT_EQ(c.ew.truncate, 0x3ff);
  EXPECT_FALSE(c.ew.lut_bypass);
  EXPECT_TRUE(c.lut.le_linear);
  EXPECT_FALSE(c.lut.uflow_priority_lo);
  EXPECT_TRUE(c.lut.oflow_priority_lo);
  EXPECT_EQ(c.lut.le_index_offset, -2);
  EXPECT_EQ(c.lut.le_index_select, 5);
  EXPECT_EQ(c.lut.lo_index_select, -127);
  EXPECT_EQ(c.lut.le_start, -256);
  EXPECT_EQ(c.lut.le_uflow_scale, -16);
  EXPECT_EQ(c.lut.le_oflow_scale, -32768);
  EXPECT_EQ(c.lut.le_uflow_shift, -1);
  EXPECT_EQ(c.lut.le_oflow_shift, 15);
  EXPECT_EQ(c.lut.le[3], -3);
  EXPECT_EQ(c.lut.lo[256], 0x1234);
}

TEST(SdpDecode, FeaturesLeftOutOfTheConfiguration) {
  Regs r;
  r.v[S::D_DP_EW_CFG::kAddr] = 1u << 6 | 1u << 1 | 1u << 4;  // EW on, everything in it off
  EXPECT_EQ(error_of(nv_small(), r), "SDP EW is not present in this configuration (nv_small)");
  EXPECT_EQ(error_of(nv_small_256_full(), r), "");
  r.v[S::D_DP_EW_CFG::kAddr] = 1;
  r.v[RD::D_ERDMA_CFG::kAddr] = 0;  // ERDMA enabled
  EXPECT_EQ(error_of(nv_small(), r), "SDP EW is not present in this configuration (nv_small)");
  r.v[RD::D_ERDMA_CFG::kAddr] = 1;
  r.v[S::D_DP_EW_CFG::kAddr] = 1u << 1 | 1u << 4;  // EW and its LUT on
  HwConfig no_lut = nv_small_256_full();
  no_lut.dla.sdp_lut = false;
  EXPECT_EQ(error_of(no_lut, r),
            "SDP LUT is not present in this configuration (nv_small_256_full)");
  r.v[S::D_DP_EW_CFG::kAddr] = 1;
  r.v[S::D_DATA_FORMAT::kAddr] = 1 | (1u << 2);  // INT16
  r.v[RD::D_FEATURE_MODE_CFG::kAddr] = (1u << 2) | (1u << 4) | (1u << 6);
  EXPECT_EQ(error_of(nv_small(), r), "INT16 data is not present in this configuration (nv_small)");
  r.v[S::D_DATA_FORMAT::kAddr] = 0;
  r.v[RD::D_FEATURE_MODE_CFG::kAddr] = 0;
  r.v[S::D_FEATURE_MODE_CFG::kAddr] = 3u << 8;  // four batches
  EXPECT_EQ(error_of(nv_small(), r),
            "SDP batch mode is not present in this configuration (nv_small)");
}

TEST(SdpDecode, InconsistentProgrammingIsReported) {
  Regs r;
  r.v[RD::D_DATA_CUBE_CHANNEL::kAddr] = 18;
  EXPECT_EQ(error_of(nv_small(), r),
            "SDP and SDP_RDMA data cubes differ: SDP 3x2x20, SDP_RDMA 3x2x19");
  r.v[RD::D_DATA_CUBE_CHANNEL::kAddr] = 19;
  r.v[S::D_DATA_FORMAT::kAddr] = 3;
  EXPECT_NE(error_of(nv_small(), r).find("PROC_PRECISION has the reserved value 3"),
            std::string::npos);
}

TEST(RunSdp, StatusRegistersFollowTheirEnables) {
  Regs r;
  NullMemory mem;
  r.v[S::D_CVT_SCALE::kAddr] = 0x7fff;
  r.v[S::D_PERF_ENABLE::kAddr] = 0;
  OpResult res = run_sdp(nv_small(), r.reader(), LutTables{}, mem);
  EXPECT_TRUE(res.status.empty());
  EXPECT_EQ(res.bytes_read, 3u * 2 * 3 * 8);
  EXPECT_EQ(res.bytes_written, 3u * 2 * 3 * 8);
  EXPECT_EQ(res.out.channels, 20u);

  r.v[S::D_PERF_ENABLE::kAddr] = 1u << 2;    // PERF_SAT_EN
  r.v[S::D_CVT_OFFSET::kAddr] = 0xfffffffe;  // (0 - (-2)) * 32767 = 65534: fits 17 bits
  res = run_sdp(nv_small(), r.reader(), LutTables{}, mem);
  ASSERT_EQ(res.status.size(), 1u);
  EXPECT_EQ(res.status[0].first, S::D_PERF_OUT_SATURATION::kAddr);
  EXPECT_EQ(res.status[0].second, 0u);
  r.v[S::D_CVT_OFFSET::kAddr] = 0xfffffffd;  // 3 * 32767 = 98301 saturates 17 bits
  res = run_sdp(nv_small(), r.reader(), LutTables{}, mem);
  EXPECT_EQ(res.status[0].second, 3u * 2 * 24);  // every element, padding included

  // LUT counters only with EW and its LUT on.
  r.v[S::D_CVT_OFFSET::kAddr] = 0;
  r.v[S::D_PERF_ENABLE::kAddr] = 1u << 1;  // PERF_LUT_EN
  res = run_sdp(nv_small_256_full(), r.reader(), LutTables{}, mem);
  EXPECT_TRUE(res.status.empty());
  r.v[S::D_DP_EW_CFG::kAddr] = 1u << 1 | 1u << 4;
  r.v[S::S_LUT_LE_START::kAddr] = 0x80000000;  // 0 > LE start: LE in range (exponent 31)
  r.v[S::S_LUT_INFO::kAddr] = 0;
  res = run_sdp(nv_small_256_full(), r.reader(), LutTables{}, mem);
  std::map<std::uint32_t, std::uint32_t> st(res.status.begin(), res.status.end());
  EXPECT_EQ(st.size(), 5u);
  EXPECT_EQ(st[S::D_PERF_LUT_LE_HIT::kAddr], 144u);
  EXPECT_EQ(st[S::D_PERF_LUT_LO_HIT::kAddr], 0u);  // 0 <= LO start 0: underflow
  EXPECT_EQ(st[S::D_PERF_LUT_HYBRID::kAddr], 144u);
  EXPECT_EQ(st[S::D_PERF_LUT_UFLOW::kAddr], 0u);
  EXPECT_EQ(st[S::D_PERF_LUT_OFLOW::kAddr], 0u);
}

// The decode the functional op ran with is the operation's descriptor (the timing plan's).
TEST(RunSdp, DescriptorHoldsTheDecodedLayer) {
  Regs r;
  NullMemory mem;
  r.v[S::D_DST_BASE_ADDR_LOW::kAddr] = 0x400;
  const OpResult res = run_sdp(nv_small(), r.reader(), LutTables{}, mem);
  const auto* d = dynamic_cast<const SdpDescriptor*>(res.descriptor.get());
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->config.width, 3u);
  EXPECT_EQ(d->config.height, 2u);
  EXPECT_EQ(d->config.channels, 20u);
  EXPECT_EQ(d->config.proc_precision, SdpPrecision::kInt8);
  EXPECT_FALSE(d->config.flying);
  EXPECT_EQ(d->config.dst_base, 0x400u);
}

TEST(RunSdp, EqlModeSetsStatusUnequal) {
  Regs r;
  NullMemory mem;
  r.v[S::D_DP_EW_CFG::kAddr] = (3u << 2) | (1u << 4) | (1u << 6);  // ALU EQL against register
  r.v[S::D_DP_EW_ALU_SRC_VALUE::kAddr] = 0;
  OpResult res = run_sdp(nv_small_256_full(), r.reader(), LutTables{}, mem);
  ASSERT_EQ(res.status.size(), 1u);
  EXPECT_EQ(res.status[0], (std::pair<std::uint32_t, std::uint32_t>{S::D_STATUS::kAddr, 0}));
  EXPECT_EQ(res.bytes_written, 0u);
  r.v[S::D_DP_EW_ALU_SRC_VALUE::kAddr] = 1;
  res = run_sdp(nv_small_256_full(), r.reader(), LutTables{}, mem);
  EXPECT_EQ(res.status[0].second, 1u);
}

}  // namespace
}  // namespace octasim::dla
