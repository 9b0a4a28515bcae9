// The INT8/INT16 element-wise operand of SDP (SdpStage::ew) and BN's per-channel bias/scale
// (SdpStage::bn_bias_scale) against the strict mock. Every expected value is worked by hand from
// NVDLA's register tables (opendla_small.h): D_{B,N,E}RDMA_CFG DISABLE bit 0, DATA_USE bits 1-2
// (MUL 0, ALU 1, BOTH 2), DATA_SIZE bit 3 (ONE_BYTE 0, TWO_BYTE 1), DATA_MODE bit 4 (PER_KERNEL 0,
// PER_ELEMENT 1), RAM_TYPE bit 5 (MC 1); D_DP_{BS,BN}_CFG BYPASS bit 0, ALU_BYPASS bit 1,
// ALU_ALGO bits 2-3 (MAX 0, MIN 1, SUM 2), MUL_BYPASS bit 4, MUL_PRELU bit 5, RELU_BYPASS bit 6;
// D_DP_{BS,BN}_ALU_CFG SRC bit 0 (REG 0, MEM 1), SHIFT_VALUE bits 8-13; D_DP_{BS,BN}_MUL_CFG SRC
// bit 0, SHIFT_VALUE bits 8-15; D_DP_EW_CFG as the X stages with LUT_BYPASS at bit 6 in place of
// RELU; D_DP_EW_{ALU,MUL}_CFG SRC bit 0, CVT_BYPASS bit 1; *_CVT_TRUNCATE_VALUE bits 0-5,
// D_DP_EW_TRUNCATE_VALUE bits 0-9. The order is program_sdp's (sdp_program_test.cpp).
#include <string>

#include <gtest/gtest.h>

#include "firmware/dla/conv.hpp"
#include "firmware/dla/sdp.hpp"
#include "octasim/regs/nvdla.hpp"
#include "tests/firmware/recording_mmio.hpp"
#include "tests/firmware/strict_mmio.hpp"

namespace octasim::firmware {
namespace {

using testing::StrictMmio;

// 8x8x16 INT8 on nv_small (8-byte atoms): lines of 8 atoms (0x40 bytes), surfaces of 8 lines.
SdpLayer bn_add_layer() {
  SdpLayer l;
  l.precision = Precision::kInt8;
  l.src = packed_surface(0x80000000, 8, 8, 16, 8);
  l.dst = packed_surface(0x80020000, 8, 8, 16, 8);
  l.bias_scale = SdpBiasScale{0x80010000, 2, 9};
  l.relu = true;
  SdpElementwise e(packed_surface(0x80040000, 8, 8, 16, 8), SdpEwOp::kAdd, SdpEwUnit::kBn);
  e.shift = 5;
  e.rescale = SdpRegisterScale{20000, 30};
  l.ew = e;
  return l;
}

TEST(ProgramSdpEw, Int8AddInBnWithRescaleAndRelu) {
  StrictMmio m;
  m.write("SDP.S_POINTER", 0x0)
      .write("SDP_RDMA.S_POINTER", 0x0)
      .write("SDP_RDMA.D_DATA_CUBE_WIDTH", 0x7)
      .write("SDP_RDMA.D_DATA_CUBE_HEIGHT", 0x7)
      .write("SDP_RDMA.D_DATA_CUBE_CHANNEL", 0xf)
      .write("SDP_RDMA.D_SRC_BASE_ADDR_LOW", 0x80000000)
      .write("SDP_RDMA.D_SRC_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_SRC_LINE_STRIDE", 0x40)
      .write("SDP_RDMA.D_SRC_SURFACE_STRIDE", 0x200)
      .write("SDP_RDMA.D_SRC_DMA_CFG", 0x1)
      // BRDMA: DATA_USE=BOTH (2<<1), TWO_BYTE (1<<3), PER_KERNEL, MC (1<<5)
      .write("SDP_RDMA.D_BRDMA_CFG", 0x2c)
      .write("SDP_RDMA.D_BS_BASE_ADDR_LOW", 0x80010000)
      .write("SDP_RDMA.D_BS_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_BS_LINE_STRIDE", 0x20)  // 8 channels x 2 INT16 operands per C' surface
      .write("SDP_RDMA.D_BS_SURFACE_STRIDE", 0x20)
      // NRDMA: the operand surface, DATA_USE=ALU (1<<1), ONE_BYTE, PER_ELEMENT (1<<4), MC (1<<5)
      .write("SDP_RDMA.D_NRDMA_CFG", 0x32)
      .write("SDP_RDMA.D_BN_BASE_ADDR_LOW", 0x80040000)
      .write("SDP_RDMA.D_BN_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_BN_LINE_STRIDE", 0x40)  // the operand's own strides
      .write("SDP_RDMA.D_BN_SURFACE_STRIDE", 0x200)
      .write("SDP_RDMA.D_ERDMA_CFG", 0x1)
      .write("SDP_RDMA.D_FEATURE_MODE_CFG", 0x0)
      .write("SDP.D_DATA_CUBE_WIDTH", 0x7)
      .write("SDP.D_DATA_CUBE_HEIGHT", 0x7)
      .write("SDP.D_DATA_CUBE_CHANNEL", 0xf)
      .write("SDP.D_DST_BASE_ADDR_LOW", 0x80020000)
      .write("SDP.D_DST_BASE_ADDR_HIGH", 0x0)
      .write("SDP.D_DST_LINE_STRIDE", 0x40)
      .write("SDP.D_DST_SURFACE_STRIDE", 0x200)
      // BS: ALU SUM (2<<2), multiplier on, ReLU bypassed (1<<6): the ReLU follows the sum in BN
      .write("SDP.D_DP_BS_CFG", 0x48)
      .write("SDP.D_DP_BS_ALU_CFG", 0x201)  // MEM, shift 2 << 8
      .write("SDP.D_DP_BS_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BS_MUL_CFG", 0x901)  // MEM, shift 9 << 8
      .write("SDP.D_DP_BS_MUL_SRC_VALUE", 0x0)
      // BN: ALU SUM (2<<2), multiplier on, ReLU on
      .write("SDP.D_DP_BN_CFG", 0x8)
      .write("SDP.D_DP_BN_ALU_CFG", 0x501)  // the operand from MEM, shifted left by 5 (5 << 8)
      .write("SDP.D_DP_BN_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BN_MUL_CFG", 0x1e00)  // REG, truncation 30 << 8
      .write("SDP.D_DP_BN_MUL_SRC_VALUE", 20000)
      .write("SDP.D_DP_EW_CFG", 0x53)  // EW bypassed
      .write("SDP.D_FEATURE_MODE_CFG", 0x0)
      .write("SDP.D_DST_DMA_CFG", 0x1)
      .write("SDP.D_DATA_FORMAT", 0x0)
      .write("SDP.D_CVT_OFFSET", 0x0)
      .write("SDP.D_CVT_SCALE", 0x1)
      .write("SDP.D_CVT_SHIFT", 0x0)
      .write("SDP.D_PERF_ENABLE", 0x4)
      .write("SDP_RDMA.D_OP_ENABLE", 0x1)
      .write("SDP.D_OP_ENABLE", 0x1);
  EXPECT_EQ(program_sdp(m, bn_add_layer(), 0, 8), 0u);
}

TEST(ProgramSdpEw, Int8AddInEwThroughTheOperandConvertor) {
  // 4x2x40 on nv_full (32-byte atoms): two C' surfaces; lines of 4 atoms (0x80), surfaces 0x100.
  SdpLayer l;
  l.precision = Precision::kInt8;
  l.src = packed_surface(0x80000000, 4, 2, 40, 32);
  l.dst = packed_surface(0x80020000, 4, 2, 40, 32);
  l.bias_scale = SdpBiasScale{0x80010000, 0, 12};
  SdpElementwise e(packed_surface(0x80100000, 4, 2, 40, 32), SdpEwOp::kAdd);
  e.cvt = SdpOperandConvertor{-3, 1024, 2};
  l.ew = e;
  l.cvt = SdpConvertor{0, 16384, 20};
  StrictMmio m;
  m.write("SDP.S_POINTER", 0x1)
      .write("SDP_RDMA.S_POINTER", 0x1)
      .write("SDP_RDMA.D_DATA_CUBE_WIDTH", 0x3)
      .write("SDP_RDMA.D_DATA_CUBE_HEIGHT", 0x1)
      .write("SDP_RDMA.D_DATA_CUBE_CHANNEL", 0x27)
      .write("SDP_RDMA.D_SRC_BASE_ADDR_LOW", 0x80000000)
      .write("SDP_RDMA.D_SRC_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_SRC_LINE_STRIDE", 0x80)
      .write("SDP_RDMA.D_SRC_SURFACE_STRIDE", 0x100)
      .write("SDP_RDMA.D_SRC_DMA_CFG", 0x1)
      .write("SDP_RDMA.D_BRDMA_CFG", 0x2c)
      .write("SDP_RDMA.D_BS_BASE_ADDR_LOW", 0x80010000)
      .write("SDP_RDMA.D_BS_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_BS_LINE_STRIDE", 0x80)  // 32 channels x 2 INT16 operands
      .write("SDP_RDMA.D_BS_SURFACE_STRIDE", 0x80)
      .write("SDP_RDMA.D_NRDMA_CFG", 0x1)
      // ERDMA: DATA_USE=ALU (1<<1), ONE_BYTE, PER_ELEMENT (1<<4), MC (1<<5)
      .write("SDP_RDMA.D_ERDMA_CFG", 0x32)
      .write("SDP_RDMA.D_EW_BASE_ADDR_LOW", 0x80100000)
      .write("SDP_RDMA.D_EW_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_EW_LINE_STRIDE", 0x80)
      .write("SDP_RDMA.D_EW_SURFACE_STRIDE", 0x100)
      .write("SDP_RDMA.D_FEATURE_MODE_CFG", 0x0)
      .write("SDP.D_DATA_CUBE_WIDTH", 0x3)
      .write("SDP.D_DATA_CUBE_HEIGHT", 0x1)
      .write("SDP.D_DATA_CUBE_CHANNEL", 0x27)
      .write("SDP.D_DST_BASE_ADDR_LOW", 0x80020000)
      .write("SDP.D_DST_BASE_ADDR_HIGH", 0x0)
      .write("SDP.D_DST_LINE_STRIDE", 0x80)
      .write("SDP.D_DST_SURFACE_STRIDE", 0x100)
      .write("SDP.D_DP_BS_CFG", 0x48)
      .write("SDP.D_DP_BS_ALU_CFG", 0x1)
      .write("SDP.D_DP_BS_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BS_MUL_CFG", 0xc01)  // MEM, shift 12 << 8
      .write("SDP.D_DP_BS_MUL_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BN_CFG", 0x53)
      .write("SDP.D_DP_BN_ALU_CFG", 0x0)
      .write("SDP.D_DP_BN_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BN_MUL_CFG", 0x0)
      .write("SDP.D_DP_BN_MUL_SRC_VALUE", 0x0)
      // EW: ALU SUM (2<<2), multiplier bypassed (1<<4), LUT bypassed (1<<6)
      .write("SDP.D_DP_EW_CFG", 0x58)
      .write("SDP.D_DP_EW_ALU_CFG", 0x1)  // MEM, convertor not bypassed
      .write("SDP.D_DP_EW_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_EW_ALU_CVT_OFFSET_VALUE", 0xfffffffd)  // -3
      .write("SDP.D_DP_EW_ALU_CVT_SCALE_VALUE", 0x400)
      .write("SDP.D_DP_EW_ALU_CVT_TRUNCATE_VALUE", 0x2)
      .write("SDP.D_DP_EW_TRUNCATE_VALUE", 0x0)
      .write("SDP.D_FEATURE_MODE_CFG", 0x0)
      .write("SDP.D_DST_DMA_CFG", 0x1)
      .write("SDP.D_DATA_FORMAT", 0x0)
      .write("SDP.D_CVT_OFFSET", 0x0)
      .write("SDP.D_CVT_SCALE", 0x4000)
      .write("SDP.D_CVT_SHIFT", 20)
      .write("SDP.D_PERF_ENABLE", 0x4)
      .write("SDP_RDMA.D_OP_ENABLE", 0x1)
      .write("SDP.D_OP_ENABLE", 0x1);
  EXPECT_EQ(program_sdp(m, l, 1, 32), 1u);  // SDP_DONE_STATUS1
}

TEST(ProgramSdpEw, MulAndPreluOperands) {
  using octasim::test::RecordingMmio;
  namespace S = regs::SDP;
  namespace RD = regs::SDP_RDMA;
  SdpLayer l;
  l.precision = Precision::kInt16;
  l.src = packed_surface(0x80000000, 4, 4, 8, 8);
  l.dst = packed_surface(0x80010000, 4, 4, 8, 8);
  // EW's multiplier, INT16 operands through its MUL convertor, then >> 7.
  SdpElementwise e(packed_surface(0x80020000, 4, 4, 8, 8), SdpEwOp::kMul);
  e.cvt = SdpOperandConvertor{0, 3, 1};
  e.truncate = 7;
  l.ew = e;
  RecordingMmio m;
  (void)program_sdp(m, l, 0, 8);
  // ERDMA: DATA_USE=MUL (0), TWO_BYTE (1<<3), PER_ELEMENT (1<<4), MC (1<<5)
  EXPECT_EQ(m.at(RD::D_ERDMA_CFG::kAddr), 0x38u);
  // EW: ALU bypassed (1<<1), ALGO SUM (2<<2), multiplier on, LUT bypassed (1<<6)
  EXPECT_EQ(m.at(S::D_DP_EW_CFG::kAddr), 0x4au);
  EXPECT_EQ(m.at(S::D_DP_EW_MUL_CFG::kAddr), 0x1u);
  EXPECT_EQ(m.at(S::D_DP_EW_MUL_CVT_SCALE_VALUE::kAddr), 3u);
  EXPECT_EQ(m.at(S::D_DP_EW_MUL_CVT_TRUNCATE_VALUE::kAddr), 1u);
  EXPECT_EQ(m.at(S::D_DP_EW_TRUNCATE_VALUE::kAddr), 7u);
  EXPECT_FALSE(m.written(S::D_DP_EW_ALU_CFG::kAddr));

  // BN's multiplier in PReLU mode on the operand (NRDMA), >> 4; ALU bypassed.
  l.precision = Precision::kInt8;
  SdpElementwise p(packed_surface(0x80020000, 4, 4, 8, 8), SdpEwOp::kPrelu, SdpEwUnit::kBn);
  p.shift = 4;
  l.ew = p;
  RecordingMmio n;
  (void)program_sdp(n, l, 0, 8);
  EXPECT_EQ(n.at(RD::D_NRDMA_CFG::kAddr), 0x30u);  // MUL, ONE_BYTE, PER_ELEMENT, MC
  EXPECT_EQ(n.at(RD::D_ERDMA_CFG::kAddr), 0x1u);
  // BN: ALU bypassed (1<<1), multiplier on in PReLU mode (1<<5), ReLU bypassed (1<<6)
  EXPECT_EQ(n.at(S::D_DP_BN_CFG::kAddr), 0x62u);
  EXPECT_EQ(n.at(S::D_DP_BN_ALU_CFG::kAddr), 0x0u);
  EXPECT_EQ(n.at(S::D_DP_BN_MUL_CFG::kAddr), 0x401u);  // MEM, shift 4 << 8
  EXPECT_EQ(n.at(S::D_DP_EW_CFG::kAddr), 0x53u);
}

TEST(ProgramSdpEw, BnBiasScalePerChannel) {
  using octasim::test::RecordingMmio;
  namespace S = regs::SDP;
  namespace RD = regs::SDP_RDMA;
  SdpLayer l;
  l.precision = Precision::kInt8;
  l.src = packed_surface(0x80000000, 4, 4, 16, 8);
  l.dst = packed_surface(0x80010000, 4, 4, 16, 8);
  l.bias_scale = SdpBiasScale{0x80020000, 0, 0};
  l.bn_bias_scale = SdpBiasScale{0x80030000, 3, 17};
  l.relu = true;
  RecordingMmio m;
  (void)program_sdp(m, l, 0, 8);
  // NRDMA: DATA_USE=BOTH (2<<1), TWO_BYTE (1<<3), PER_KERNEL, MC (1<<5); 8 channels x 2 x 2 bytes
  EXPECT_EQ(m.at(RD::D_NRDMA_CFG::kAddr), 0x2cu);
  EXPECT_EQ(m.at(RD::D_BN_BASE_ADDR_LOW::kAddr), 0x80030000u);
  EXPECT_EQ(m.at(RD::D_BN_LINE_STRIDE::kAddr), 0x20u);
  EXPECT_EQ(m.at(RD::D_BN_SURFACE_STRIDE::kAddr), 0x20u);
  EXPECT_EQ(m.at(S::D_DP_BS_CFG::kAddr), 0x48u);  // SUM, multiplier, no ReLU
  EXPECT_EQ(m.at(S::D_DP_BN_CFG::kAddr), 0x8u);   // SUM, multiplier, ReLU
  EXPECT_EQ(m.at(S::D_DP_BN_ALU_CFG::kAddr), 0x301u);
  EXPECT_EQ(m.at(S::D_DP_BN_MUL_CFG::kAddr), 0x1101u);  // MEM, shift 17 << 8
}

TEST(ProgramSdpEw, ConvolutionFlyingStageReadsTheOperand) {
  using octasim::test::RecordingMmio;
  namespace S = regs::SDP;
  namespace RD = regs::SDP_RDMA;
  // nv_small's demo convolution (conv_program_test.cpp) with a residual added in BN.
  ConvLayer l;
  l.precision = Precision::kInt8;
  l.src = packed_surface(0x80000000, 16, 16, 8, 8);
  l.weight_address = 0x80010000;
  l.kernels = 16;
  l.kernel_width = l.kernel_height = 3;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = 1;
  l.dst = packed_surface(0x80020000, 16, 16, 16, 8);
  l.sdp.bias_scale = SdpBiasScale{0x80018000, 0, 10};
  l.sdp.relu = true;
  SdpElementwise e(packed_surface(0x80040000, 16, 16, 16, 8), SdpEwOp::kAdd, SdpEwUnit::kBn);
  e.shift = 7;
  e.rescale = SdpRegisterScale{-300, 22};
  l.sdp.ew = e;
  RecordingMmio m;
  (void)program_conv(m, l, 0, ConvHardware{});
  EXPECT_EQ(m.at(RD::D_FEATURE_MODE_CFG::kAddr), 0x1u);  // FLYING_MODE on, INT8
  EXPECT_EQ(m.at(S::D_FEATURE_MODE_CFG::kAddr), 0x1u);
  EXPECT_FALSE(m.written(RD::D_SRC_BASE_ADDR_LOW::kAddr));  // no MRDMA in flying mode
  EXPECT_EQ(m.at(RD::D_NRDMA_CFG::kAddr), 0x32u);
  EXPECT_EQ(m.at(RD::D_BN_BASE_ADDR_LOW::kAddr), 0x80040000u);
  EXPECT_EQ(m.at(RD::D_BN_LINE_STRIDE::kAddr), 0x80u);      // 16 atoms of 8 bytes
  EXPECT_EQ(m.at(RD::D_BN_SURFACE_STRIDE::kAddr), 0x800u);  // 16 lines
  EXPECT_EQ(m.at(S::D_DP_BN_CFG::kAddr), 0x8u);
  EXPECT_EQ(m.at(S::D_DP_BN_ALU_CFG::kAddr), 0x701u);
  EXPECT_EQ(m.at(S::D_DP_BN_MUL_CFG::kAddr), 0x1600u);        // REG, 22 << 8
  EXPECT_EQ(m.at(S::D_DP_BN_MUL_SRC_VALUE::kAddr), 0xfed4u);  // -300 in 16 bits
  EXPECT_EQ(m.at(RD::D_OP_ENABLE::kAddr), 0x1u);
}

TEST(ProgramSdpEw, ModelConfigMatchesTheRegisters) {
  // sdp_model_config: what models/ runs for the golden is what the registers say.
  const models::ops::SdpConfig c = sdp_model_config(bn_add_layer(), 8);
  EXPECT_TRUE(c.nrdma.enabled);
  EXPECT_EQ(c.nrdma.use, models::ops::SdpDataUse::kAlu);
  EXPECT_EQ(c.nrdma.bytes_per_component, 1u);
  EXPECT_EQ(c.nrdma.mode, models::ops::SdpDataMode::kPerElement);
  EXPECT_EQ(c.nrdma.base, 0x80040000u);
  EXPECT_EQ(c.nrdma.line_stride, 0x40u);
  EXPECT_EQ(c.nrdma.surface_stride, 0x200u);
  EXPECT_FALSE(c.bn.bypass);
  EXPECT_FALSE(c.bn.alu_bypass);
  EXPECT_EQ(c.bn.alu_src, models::ops::SdpOperandSource::kMemory);
  EXPECT_EQ(c.bn.alu_shift, 5);
  EXPECT_FALSE(c.bn.mul_bypass);
  EXPECT_EQ(c.bn.mul_src, models::ops::SdpOperandSource::kRegister);
  EXPECT_EQ(c.bn.mul_operand, 20000);
  EXPECT_EQ(c.bn.mul_shift, 30);
  EXPECT_FALSE(c.bn.relu_bypass);
  EXPECT_TRUE(c.bs.relu_bypass);
  EXPECT_TRUE(c.ew.bypass);
  EXPECT_FALSE(c.erdma.enabled);
}

TEST(ProgramSdpEw, Refusals) {
  using octasim::test::RecordingMmio;
  const auto refused = [](const SdpLayer& l, const std::string& what) {
    RecordingMmio m;
    try {
      (void)program_sdp(m, l, 0, 8);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const FirmwareError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_FALSE(m.written(regs::SDP::D_OP_ENABLE::kAddr));
    }
  };
  SdpLayer l = bn_add_layer();
  l.scale = SdpPerChannel{0x80050000, 0};
  refused(l, "SDP: an element-wise operand in BN and scale both need BN's multiplier");
  l = bn_add_layer();
  l.clamp_max = 15;
  refused(l, "an element-wise operand in BN and clamp_max both need BN's ALU");
  l = bn_add_layer();
  l.ew->cvt.scale = 2;
  refused(l, "an element-wise operand in BN has no operand convertor");
  l = bn_add_layer();
  l.ew->shift = 64;
  refused(l, "element-wise BN shift 64 is outside 0..63");
  l = bn_add_layer();
  l.ew->unit = SdpEwUnit::kEw;
  refused(l, "an element-wise operand in EW takes no BN shift or rescale");
  l = bn_add_layer();
  l.ew->unit = SdpEwUnit::kEw;
  l.ew->shift = 0;
  l.ew->rescale.reset();
  l.ew->cvt.truncate = 64;
  refused(l, "element-wise operand convertor truncate 64 is outside 0..63");
  l = bn_add_layer();
  l.ew->surface.width = 7;
  refused(l, "element-wise operand cube 7x8x16 differs from the input cube 8x8x16");
  l = bn_add_layer();
  l.ew->surface.address += 4;
  refused(l, "SDP element-wise operand");
  l = bn_add_layer();
  l.ew.reset();
  l.bn_bias_scale = SdpBiasScale{0x80050000, 0, 0};
  l.clamp_max = 15;
  refused(l, "bn_bias_scale and clamp_max both need the BN stage");
}

}  // namespace
}  // namespace octasim::firmware
