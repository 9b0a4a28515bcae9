// SDP layer programming against the strict mock. Expected writes are listed by hand: field
// positions from NVDLA's register tables (opendla_small.h), values cross-checked against NVDLA's
// nv_small traces where they program the same thing (e.g. D_DP_BN_CFG 0x18 = SUM bias + ReLU in
// sdp_3x3x33_bn_int8_mem_0), order from the programming guide and NVDLA's firmware (producer
// pointer first, RDMA D_OP_ENABLE before the core's).
#include <gtest/gtest.h>

#include "firmware/dla/sdp.hpp"
#include "tests/firmware/strict_mmio.hpp"

namespace octasim::firmware {
namespace {

using testing::StrictMmio;

SdpLayer bias_relu_layer() {
  SdpLayer l;
  l.precision = Precision::kInt8;
  l.src = packed_surface(0x80000000, 8, 8, 16, 8);
  l.dst = packed_surface(0x80020000, 8, 8, 16, 8);
  l.bias = SdpPerChannel{0x80010000, 0};
  l.relu = true;
  l.cvt = SdpConvertor{0, 141, 7};
  return l;
}

TEST(ProgramSdp, BiasReluRequantizeInt8Group0) {
  StrictMmio m;
  m.write("SDP.S_POINTER", 0x0)
      .write("SDP_RDMA.S_POINTER", 0x0)
      .write("SDP_RDMA.D_DATA_CUBE_WIDTH", 0x7)
      .write("SDP_RDMA.D_DATA_CUBE_HEIGHT", 0x7)
      .write("SDP_RDMA.D_DATA_CUBE_CHANNEL", 0xf)
      .write("SDP_RDMA.D_SRC_BASE_ADDR_LOW", 0x80000000)
      .write("SDP_RDMA.D_SRC_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_SRC_LINE_STRIDE", 0x40)      // 8 atoms of 8 bytes
      .write("SDP_RDMA.D_SRC_SURFACE_STRIDE", 0x200)  // 8 lines
      .write("SDP_RDMA.D_SRC_DMA_CFG", 0x1)           // SRC_RAM_TYPE = MC
      // BRDMA: DISABLE=NO, DATA_USE=ALU (1<<1), DATA_SIZE=TWO_BYTE (1<<3), PER_KERNEL, MC (1<<5)
      .write("SDP_RDMA.D_BRDMA_CFG", 0x2a)
      .write("SDP_RDMA.D_BS_BASE_ADDR_LOW", 0x80010000)
      .write("SDP_RDMA.D_BS_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_BS_LINE_STRIDE", 0x10)  // 8 INT16 operands per C' surface
      .write("SDP_RDMA.D_BS_SURFACE_STRIDE", 0x10)
      .write("SDP_RDMA.D_NRDMA_CFG", 0x1)         // NRDMA_DISABLE = YES
      .write("SDP_RDMA.D_ERDMA_CFG", 0x1)         // ERDMA_DISABLE = YES (nv_small has no EW)
      .write("SDP_RDMA.D_FEATURE_MODE_CFG", 0x0)  // memory input, INT8 in/proc/out
      .write("SDP.D_DATA_CUBE_WIDTH", 0x7)
      .write("SDP.D_DATA_CUBE_HEIGHT", 0x7)
      .write("SDP.D_DATA_CUBE_CHANNEL", 0xf)
      .write("SDP.D_DST_BASE_ADDR_LOW", 0x80020000)
      .write("SDP.D_DST_BASE_ADDR_HIGH", 0x0)
      .write("SDP.D_DST_LINE_STRIDE", 0x40)
      .write("SDP.D_DST_SURFACE_STRIDE", 0x200)
      // BS: BYPASS=NO, ALU_BYPASS=NO, ALU_ALGO=SUM (2<<2), MUL_BYPASS=YES (1<<4), ReLU on
      .write("SDP.D_DP_BS_CFG", 0x18)
      .write("SDP.D_DP_BS_ALU_CFG", 0x1)  // BS_ALU_SRC = MEM, shift 0
      .write("SDP.D_DP_BS_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BS_MUL_CFG", 0x0)
      .write("SDP.D_DP_BS_MUL_SRC_VALUE", 0x0)
      // BN bypassed: BYPASS (1), ALU_BYPASS (1<<1), MUL_BYPASS (1<<4), RELU_BYPASS (1<<6)
      .write("SDP.D_DP_BN_CFG", 0x53)
      .write("SDP.D_DP_BN_ALU_CFG", 0x0)
      .write("SDP.D_DP_BN_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BN_MUL_CFG", 0x0)
      .write("SDP.D_DP_BN_MUL_SRC_VALUE", 0x0)
      .write("SDP.D_DP_EW_CFG", 0x53)  // EW, its ALU, MUL and LUT bypassed
      .write("SDP.D_FEATURE_MODE_CFG", 0x0)
      .write("SDP.D_DST_DMA_CFG", 0x1)
      .write("SDP.D_DATA_FORMAT", 0x0)
      .write("SDP.D_CVT_OFFSET", 0x0)
      .write("SDP.D_CVT_SCALE", 141)
      .write("SDP.D_CVT_SHIFT", 7)
      .write("SDP.D_PERF_ENABLE", 0x4)  // PERF_SAT_EN
      .write("SDP_RDMA.D_OP_ENABLE", 0x1)
      .write("SDP.D_OP_ENABLE", 0x1);
  EXPECT_EQ(program_sdp(m, bias_relu_layer(), 0, 8), 0u);  // SDP_DONE_STATUS0
}

TEST(ProgramSdp, BiasScaleReluInt16Group1HighAddresses) {
  SdpLayer l;
  l.precision = Precision::kInt16;
  l.src = packed_surface(0x1'0000'0000, 2, 1, 4, 8);  // 4 INT16 channels: one C' surface
  l.dst = packed_surface(0x1'0000'1000, 2, 1, 4, 8);
  l.bias = SdpPerChannel{0x2000, 3};
  l.scale = SdpPerChannel{0x3000, 10};
  l.relu = true;
  l.cvt = SdpConvertor{-5, -2, 1};
  l.count_saturation = false;

  StrictMmio m;
  m.write("SDP.S_POINTER", 0x1)
      .write("SDP_RDMA.S_POINTER", 0x1)
      .write("SDP_RDMA.D_DATA_CUBE_WIDTH", 0x1)
      .write("SDP_RDMA.D_DATA_CUBE_HEIGHT", 0x0)
      .write("SDP_RDMA.D_DATA_CUBE_CHANNEL", 0x3)
      .write("SDP_RDMA.D_SRC_BASE_ADDR_LOW", 0x0)
      .write("SDP_RDMA.D_SRC_BASE_ADDR_HIGH", 0x1)
      .write("SDP_RDMA.D_SRC_LINE_STRIDE", 0x10)
      .write("SDP_RDMA.D_SRC_SURFACE_STRIDE", 0x10)
      .write("SDP_RDMA.D_SRC_DMA_CFG", 0x1)
      .write("SDP_RDMA.D_BRDMA_CFG", 0x2a)
      .write("SDP_RDMA.D_BS_BASE_ADDR_LOW", 0x2000)
      .write("SDP_RDMA.D_BS_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_BS_LINE_STRIDE", 0x8)  // 4 INT16 operands per C' surface
      .write("SDP_RDMA.D_BS_SURFACE_STRIDE", 0x8)
      // NRDMA: DISABLE=NO, DATA_USE=MUL (0), TWO_BYTE (1<<3), PER_KERNEL, MC (1<<5)
      .write("SDP_RDMA.D_NRDMA_CFG", 0x28)
      .write("SDP_RDMA.D_BN_BASE_ADDR_LOW", 0x3000)
      .write("SDP_RDMA.D_BN_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_BN_LINE_STRIDE", 0x8)
      .write("SDP_RDMA.D_BN_SURFACE_STRIDE", 0x8)
      .write("SDP_RDMA.D_ERDMA_CFG", 0x1)
      // IN_PRECISION (1<<2), PROC_PRECISION (1<<4), OUT_PRECISION (1<<6) = INT16
      .write("SDP_RDMA.D_FEATURE_MODE_CFG", 0x54)
      .write("SDP.D_DATA_CUBE_WIDTH", 0x1)
      .write("SDP.D_DATA_CUBE_HEIGHT", 0x0)
      .write("SDP.D_DATA_CUBE_CHANNEL", 0x3)
      .write("SDP.D_DST_BASE_ADDR_LOW", 0x1000)
      .write("SDP.D_DST_BASE_ADDR_HIGH", 0x1)
      .write("SDP.D_DST_LINE_STRIDE", 0x10)
      .write("SDP.D_DST_SURFACE_STRIDE", 0x10)
      // BS: bias (SUM) without ReLU: ALGO SUM (2<<2), MUL_BYPASS (1<<4), RELU_BYPASS (1<<6)
      .write("SDP.D_DP_BS_CFG", 0x58)
      .write("SDP.D_DP_BS_ALU_CFG", 0x301)  // MEM, BS_ALU_SHIFT_VALUE 3 << 8
      .write("SDP.D_DP_BS_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BS_MUL_CFG", 0x0)
      .write("SDP.D_DP_BS_MUL_SRC_VALUE", 0x0)
      // BN: multiplier with ReLU: ALU_BYPASS (1<<1) only
      .write("SDP.D_DP_BN_CFG", 0x2)
      .write("SDP.D_DP_BN_ALU_CFG", 0x0)
      .write("SDP.D_DP_BN_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BN_MUL_CFG", 0xa01)  // MEM, BN_MUL_SHIFT_VALUE 10 << 8
      .write("SDP.D_DP_BN_MUL_SRC_VALUE", 0x0)
      .write("SDP.D_DP_EW_CFG", 0x53)
      .write("SDP.D_FEATURE_MODE_CFG", 0x0)
      .write("SDP.D_DST_DMA_CFG", 0x1)
      .write("SDP.D_DATA_FORMAT", 0x5)  // PROC and OUT precision INT16
      .write("SDP.D_CVT_OFFSET", 0xfffffffb)
      .write("SDP.D_CVT_SCALE", 0xfffe)
      .write("SDP.D_CVT_SHIFT", 1)
      .write("SDP.D_PERF_ENABLE", 0x0)
      .write("SDP_RDMA.D_OP_ENABLE", 0x1)
      .write("SDP.D_OP_ENABLE", 0x1);
  EXPECT_EQ(program_sdp(m, l, 1, 8), 1u);  // SDP_DONE_STATUS1
}

TEST(ProgramSdp, ReluAloneUsesTheBsStage) {
  SdpLayer l = bias_relu_layer();
  l.bias.reset();
  const models::ops::SdpConfig c = sdp_model_config(l, 8);
  EXPECT_FALSE(c.bs.bypass);
  EXPECT_TRUE(c.bs.alu_bypass);
  EXPECT_FALSE(c.bs.relu_bypass);
  EXPECT_TRUE(c.bn.bypass);
  EXPECT_FALSE(c.brdma.enabled);
}

TEST(ProgramSdp, PerChannelTableIsInt16PaddedToWholeSurfaces) {
  const auto t = sdp_per_channel_table({1, -2, 0x1234}, Precision::kInt8, 8);
  const std::vector<std::uint8_t> want = {0x01, 0x00, 0xfe, 0xff, 0x34, 0x12, 0, 0,
                                          0,    0,    0,    0,    0,    0,    0, 0};
  EXPECT_EQ(t, want);
}

TEST(ProgramSdp, RefusesWithoutWritingAnything) {
  const auto refuses = [](const SdpLayer& l, unsigned group, const char* needle) {
    StrictMmio m;  // no access expected
    try {
      (void)program_sdp(m, l, group, 8);
      ADD_FAILURE() << "expected FirmwareError containing '" << needle << "'";
    } catch (const FirmwareError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  SdpLayer l = bias_relu_layer();
  refuses(l, 2, "register group 2");
  l.dst.channels = 15;
  refuses(l, 0, "differs from the input cube");
  l = bias_relu_layer();
  l.cvt.shift = 64;
  refuses(l, 0, "shift 64");
  l = bias_relu_layer();
  l.bias->shift = 64;
  refuses(l, 0, "bias shift 64");
  l = bias_relu_layer();
  l.bias->address = 0x80010004;
  refuses(l, 0, "not aligned");
  l = bias_relu_layer();
  l.src.width = 0;
  refuses(l, 0, "SDP input: width 0");
  l = bias_relu_layer();
  l.src.line_stride = 8;
  refuses(l, 0, "line stride 8");
}

}  // namespace
}  // namespace octasim::firmware
