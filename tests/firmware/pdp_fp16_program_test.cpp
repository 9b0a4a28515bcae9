// FP16 PDP layer programming against the strict mock: the registers an FP16 layer writes
// (D_DATA_FORMAT 2 on PDP and PDP_RDMA, FP17 reciprocals, zero padding values, the NaN flush),
// the model parameters of the same layer, and what FP16 refuses.
#include <gtest/gtest.h>

#include "firmware/dla/pdp.hpp"
#include "tests/firmware/strict_mmio.hpp"

namespace octasim::firmware {
namespace {

using testing::StrictMmio;

// A 3x3 stride-2 average with padding 1 of an 8x6x20 FP16 cube (32-byte atoms: 16 lanes).
PdpLayer average3x3() {
  PdpLayer l;
  l.precision = Precision::kFp16;
  l.src = packed_surface(0x80000000, 8, 6, 20, 32);
  l.dst = packed_surface(0x80100000, 4, 3, 20, 32);
  l.method = PoolMethod::kAverage;
  l.kernel_width = l.kernel_height = 3;
  l.stride_x = l.stride_y = 2;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = 1;
  l.nan_to_zero = true;
  return l;
}

TEST(ProgramPdpFp16, Average3x3WritesFp17ReciprocalsAndNoPadValues) {
  StrictMmio m;
  m.write("PDP.S_POINTER", 0x1)
      .write("PDP_RDMA.S_POINTER", 0x1)
      .write("PDP_RDMA.D_DATA_CUBE_IN_WIDTH", 0x7)
      .write("PDP_RDMA.D_DATA_CUBE_IN_HEIGHT", 0x5)
      .write("PDP_RDMA.D_DATA_CUBE_IN_CHANNEL", 0x13)
      .write("PDP_RDMA.D_FLYING_MODE", 0x1)
      .write("PDP_RDMA.D_SRC_BASE_ADDR_LOW", 0x80000000)
      .write("PDP_RDMA.D_SRC_BASE_ADDR_HIGH", 0x0)
      .write("PDP_RDMA.D_SRC_LINE_STRIDE", 0x100)     // 8 atoms of 32 B
      .write("PDP_RDMA.D_SRC_SURFACE_STRIDE", 0x600)  // 6 lines
      .write("PDP_RDMA.D_SRC_RAM_CFG", 0x1)
      .write("PDP_RDMA.D_DATA_FORMAT", 0x2)  // FP16
      .write("PDP_RDMA.D_OPERATION_MODE_CFG", 0x0)
      .write("PDP_RDMA.D_POOLING_KERNEL_CFG", 0x12)  // width 3-1, stride (2-1)<<4
      .write("PDP_RDMA.D_POOLING_PADDING_CFG", 0x1)
      .write("PDP_RDMA.D_PARTIAL_WIDTH_IN", 0x7)
      .write("PDP.D_DATA_CUBE_IN_WIDTH", 0x7)
      .write("PDP.D_DATA_CUBE_IN_HEIGHT", 0x5)
      .write("PDP.D_DATA_CUBE_IN_CHANNEL", 0x13)
      .write("PDP.D_DATA_CUBE_OUT_WIDTH", 0x3)
      .write("PDP.D_DATA_CUBE_OUT_HEIGHT", 0x2)
      .write("PDP.D_DATA_CUBE_OUT_CHANNEL", 0x13)
      .write("PDP.D_OPERATION_MODE_CFG", 0x10)  // AVERAGE (0), OFF_FLYING (1<<4)
      .write("PDP.D_PARTIAL_WIDTH_IN", 0x7)
      .write("PDP.D_PARTIAL_WIDTH_OUT", 0x3)
      .write("PDP.D_POOLING_KERNEL_CFG", 0x110202)
      // 1/3 as FP17: 1.0101010101b x 2^-2 (exponent 29 = 0x1d, mantissa 0x155).
      .write("PDP.D_RECIP_KERNEL_WIDTH", 0x7555)
      .write("PDP.D_RECIP_KERNEL_HEIGHT", 0x7555)
      .write("PDP.D_POOLING_PADDING_CFG", 0x1111);  // left, top<<4, right<<8, bottom<<12
  for (int n = 1; n <= 7; ++n) {
    m.write("PDP.D_POOLING_PADDING_VALUE_" + std::to_string(n) + "_CFG", 0x0);
  }
  m.write("PDP.D_SRC_LINE_STRIDE", 0x100)
      .write("PDP.D_SRC_SURFACE_STRIDE", 0x600)
      .write("PDP.D_DST_BASE_ADDR_LOW", 0x80100000)
      .write("PDP.D_DST_BASE_ADDR_HIGH", 0x0)
      .write("PDP.D_DST_LINE_STRIDE", 0x80)
      .write("PDP.D_DST_SURFACE_STRIDE", 0x180)
      .write("PDP.D_DST_RAM_CFG", 0x1)
      .write("PDP.D_DATA_FORMAT", 0x2)
      .write("PDP.D_NAN_FLUSH_TO_ZERO", 0x1)
      .write("PDP_RDMA.D_OP_ENABLE", 0x1)
      .write("PDP.D_OP_ENABLE", 0x1);
  EXPECT_EQ(program_pdp(m, average3x3(), 1, 32), 5u);  // PDP_DONE_STATUS1
}

TEST(ProgramPdpFp16, ModelParams) {
  const models::ops::PdpLayerParams p = pdp_model_params(average3x3(), 32);
  EXPECT_EQ(p.cfg.precision, models::ops::PdpPrecision::kFp16);
  EXPECT_EQ(p.cfg.recip_kernel_width, 0x7555u);
  EXPECT_EQ(p.cfg.recip_kernel_height, 0x7555u);
  EXPECT_TRUE(p.cfg.nan_to_zero);
  for (const std::int32_t v : p.cfg.pad_value) EXPECT_EQ(v, 0);
  EXPECT_EQ(p.out_width, 4u);
  EXPECT_EQ(p.out_height, 3u);
  EXPECT_EQ(p.src_surface_stride, 0x600u);
}

TEST(ProgramPdpFp16, RefusesPadValuesAndIntegerNanFlush) {
  PdpLayer l = average3x3();
  l.pad_value = 1;
  StrictMmio m;
  try {
    (void)program_pdp(m, l, 0, 32);
    ADD_FAILURE() << "expected FirmwareError";
  } catch (const FirmwareError& e) {
    EXPECT_NE(std::string(e.what()).find("NVDLA's FP16 average ignores the padding values"),
              std::string::npos)
        << e.what();
  }
  l = average3x3();
  l.precision = Precision::kInt16;
  try {
    (void)program_pdp(m, l, 0, 32);
    ADD_FAILURE() << "expected FirmwareError";
  } catch (const FirmwareError& e) {
    EXPECT_EQ(std::string(e.what()), "PDP: NaN flush to zero is for FP16 layers only");
  }
}

}  // namespace
}  // namespace octasim::firmware
