// PDP layer programming against the strict mock. The second layer is the layer of NVDLA's trace
// pdp_8x9x19_3x3_ave_int8_0 (8x9x19, 3x3 average, stride 2, pad left 1 / top 2, pad value 85):
// its kernel, padding, reciprocal and PAD_VALUE_<n>X writes are the values that trace programs.
#include <gtest/gtest.h>

#include "firmware/dla/pdp.hpp"
#include "tests/firmware/strict_mmio.hpp"

namespace octasim::firmware {
namespace {

using testing::StrictMmio;

TEST(ProgramPdp, MaxPooling2x2Stride2Group0) {
  PdpLayer l;
  l.src = packed_surface(0x80020000, 8, 8, 16, 8);
  l.dst = packed_surface(0x80030000, 4, 4, 16, 8);
  l.method = PoolMethod::kMax;
  l.kernel_width = l.kernel_height = 2;
  l.stride_x = l.stride_y = 2;

  StrictMmio m;
  m.write("PDP.S_POINTER", 0x0)
      .write("PDP_RDMA.S_POINTER", 0x0)
      .write("PDP_RDMA.D_DATA_CUBE_IN_WIDTH", 0x7)
      .write("PDP_RDMA.D_DATA_CUBE_IN_HEIGHT", 0x7)
      .write("PDP_RDMA.D_DATA_CUBE_IN_CHANNEL", 0xf)
      .write("PDP_RDMA.D_FLYING_MODE", 0x1)  // OFF_FLYING (NVDLA traces write 0x1)
      .write("PDP_RDMA.D_SRC_BASE_ADDR_LOW", 0x80020000)
      .write("PDP_RDMA.D_SRC_BASE_ADDR_HIGH", 0x0)
      .write("PDP_RDMA.D_SRC_LINE_STRIDE", 0x40)
      .write("PDP_RDMA.D_SRC_SURFACE_STRIDE", 0x200)
      .write("PDP_RDMA.D_SRC_RAM_CFG", 0x1)  // MC
      .write("PDP_RDMA.D_DATA_FORMAT", 0x0)
      .write("PDP_RDMA.D_OPERATION_MODE_CFG", 0x0)   // SPLIT_NUM 0
      .write("PDP_RDMA.D_POOLING_KERNEL_CFG", 0x11)  // KERNEL_WIDTH 2-1, STRIDE_WIDTH (2-1)<<4
      .write("PDP_RDMA.D_POOLING_PADDING_CFG", 0x0)
      .write("PDP_RDMA.D_PARTIAL_WIDTH_IN", 0x7)  // PARTIAL_WIDTH_IN_FIRST = width - 1
      .write("PDP.D_DATA_CUBE_IN_WIDTH", 0x7)
      .write("PDP.D_DATA_CUBE_IN_HEIGHT", 0x7)
      .write("PDP.D_DATA_CUBE_IN_CHANNEL", 0xf)
      .write("PDP.D_DATA_CUBE_OUT_WIDTH", 0x3)
      .write("PDP.D_DATA_CUBE_OUT_HEIGHT", 0x3)
      .write("PDP.D_DATA_CUBE_OUT_CHANNEL", 0xf)
      .write("PDP.D_OPERATION_MODE_CFG", 0x11)  // POOLING_METHOD_MAX (1), OFF_FLYING (1<<4)
      .write("PDP.D_PARTIAL_WIDTH_IN", 0x7)
      .write("PDP.D_PARTIAL_WIDTH_OUT", 0x3)
      // KERNEL_WIDTH 1, KERNEL_HEIGHT 1<<8, STRIDE_WIDTH 1<<16, STRIDE_HEIGHT 1<<20
      .write("PDP.D_POOLING_KERNEL_CFG", 0x110101)
      .write("PDP.D_RECIP_KERNEL_WIDTH", 0x8000)  // 1/2 in 1.16 (pdp_8x8x64_2x2_ave: 0x8000)
      .write("PDP.D_RECIP_KERNEL_HEIGHT", 0x8000)
      .write("PDP.D_POOLING_PADDING_CFG", 0x0);
  for (int n = 1; n <= 7; ++n) {
    m.write("PDP.D_POOLING_PADDING_VALUE_" + std::to_string(n) + "_CFG", 0x0);
  }
  m.write("PDP.D_SRC_LINE_STRIDE", 0x40)
      .write("PDP.D_SRC_SURFACE_STRIDE", 0x200)
      .write("PDP.D_DST_BASE_ADDR_LOW", 0x80030000)
      .write("PDP.D_DST_BASE_ADDR_HIGH", 0x0)
      .write("PDP.D_DST_LINE_STRIDE", 0x20)
      .write("PDP.D_DST_SURFACE_STRIDE", 0x80)
      .write("PDP.D_DST_RAM_CFG", 0x1)
      .write("PDP.D_DATA_FORMAT", 0x0)
      .write("PDP_RDMA.D_OP_ENABLE", 0x1)
      .write("PDP.D_OP_ENABLE", 0x1);
  EXPECT_EQ(program_pdp(m, l, 0, 8), 4u);  // PDP_DONE_STATUS0
}

TEST(ProgramPdp, AveragePoolingWithPaddingAsNvdlaTraceProgramsIt) {
  PdpLayer l;
  l.src = packed_surface(0x80000000, 8, 9, 19, 8);
  l.dst = packed_surface(0x80100000, 4, 5, 19, 8);
  l.method = PoolMethod::kAverage;
  l.kernel_width = l.kernel_height = 3;
  l.stride_x = l.stride_y = 2;
  l.pad_left = 1;
  l.pad_top = 2;
  l.pad_value = 85;

  StrictMmio m;
  m.write("PDP.S_POINTER", 0x1)
      .write("PDP_RDMA.S_POINTER", 0x1)
      .write("PDP_RDMA.D_DATA_CUBE_IN_WIDTH", 0x7)
      .write("PDP_RDMA.D_DATA_CUBE_IN_HEIGHT", 0x8)
      .write("PDP_RDMA.D_DATA_CUBE_IN_CHANNEL", 0x12)
      .write("PDP_RDMA.D_FLYING_MODE", 0x1)
      .write("PDP_RDMA.D_SRC_BASE_ADDR_LOW", 0x80000000)
      .write("PDP_RDMA.D_SRC_BASE_ADDR_HIGH", 0x0)
      .write("PDP_RDMA.D_SRC_LINE_STRIDE", 0x40)
      .write("PDP_RDMA.D_SRC_SURFACE_STRIDE", 0x240)
      .write("PDP_RDMA.D_SRC_RAM_CFG", 0x1)
      .write("PDP_RDMA.D_DATA_FORMAT", 0x0)
      .write("PDP_RDMA.D_OPERATION_MODE_CFG", 0x0)
      .write("PDP_RDMA.D_POOLING_KERNEL_CFG", 0x12)  // as in the trace
      .write("PDP_RDMA.D_POOLING_PADDING_CFG", 0x1)  // PAD_WIDTH = left padding
      .write("PDP_RDMA.D_PARTIAL_WIDTH_IN", 0x7)
      .write("PDP.D_DATA_CUBE_IN_WIDTH", 0x7)
      .write("PDP.D_DATA_CUBE_IN_HEIGHT", 0x8)
      .write("PDP.D_DATA_CUBE_IN_CHANNEL", 0x12)
      .write("PDP.D_DATA_CUBE_OUT_WIDTH", 0x3)
      .write("PDP.D_DATA_CUBE_OUT_HEIGHT", 0x4)
      .write("PDP.D_DATA_CUBE_OUT_CHANNEL", 0x12)
      .write("PDP.D_OPERATION_MODE_CFG", 0x10)  // AVERAGE, OFF_FLYING (as in the trace)
      .write("PDP.D_PARTIAL_WIDTH_IN", 0x7)
      .write("PDP.D_PARTIAL_WIDTH_OUT", 0x3)
      .write("PDP.D_POOLING_KERNEL_CFG", 0x110202)  // as in the trace
      .write("PDP.D_RECIP_KERNEL_WIDTH", 0x5555)    // as in the trace
      .write("PDP.D_RECIP_KERNEL_HEIGHT", 0x5555)
      .write("PDP.D_POOLING_PADDING_CFG", 0x21)  // PAD_LEFT 1, PAD_TOP 2<<4 (as in the trace)
      .write("PDP.D_POOLING_PADDING_VALUE_1_CFG", 0x55)  // n * 85, as in the trace
      .write("PDP.D_POOLING_PADDING_VALUE_2_CFG", 0xaa)
      .write("PDP.D_POOLING_PADDING_VALUE_3_CFG", 0xff)
      .write("PDP.D_POOLING_PADDING_VALUE_4_CFG", 0x154)
      .write("PDP.D_POOLING_PADDING_VALUE_5_CFG", 0x1a9)
      .write("PDP.D_POOLING_PADDING_VALUE_6_CFG", 0x1fe)
      .write("PDP.D_POOLING_PADDING_VALUE_7_CFG", 0x253)
      .write("PDP.D_SRC_LINE_STRIDE", 0x40)
      .write("PDP.D_SRC_SURFACE_STRIDE", 0x240)
      .write("PDP.D_DST_BASE_ADDR_LOW", 0x80100000)
      .write("PDP.D_DST_BASE_ADDR_HIGH", 0x0)
      .write("PDP.D_DST_LINE_STRIDE", 0x20)
      .write("PDP.D_DST_SURFACE_STRIDE", 0xa0)
      .write("PDP.D_DST_RAM_CFG", 0x1)
      .write("PDP.D_DATA_FORMAT", 0x0)
      .write("PDP_RDMA.D_OP_ENABLE", 0x1)
      .write("PDP.D_OP_ENABLE", 0x1);
  EXPECT_EQ(program_pdp(m, l, 1, 8), 5u);  // PDP_DONE_STATUS1
}

TEST(ProgramPdp, NegativePadValuesUseTheRegisters19Bits) {
  PdpLayer l;
  l.src = packed_surface(0x0, 4, 4, 8, 8);
  l.dst = packed_surface(0x1000, 4, 4, 8, 8);
  l.method = PoolMethod::kAverage;
  l.kernel_width = l.kernel_height = 3;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = 1;
  l.pad_value = -5;
  const models::ops::PdpLayerParams m = pdp_model_params(l, 8);
  EXPECT_EQ(m.cfg.pad_value[0], -5);
  EXPECT_EQ(m.cfg.pad_value[6], -35);
  EXPECT_EQ(m.cfg.recip_kernel_width, 0x5555u);
  // PAD_VALUE_1X = 2^19 - 5, PAD_VALUE_7X = 2^19 - 35, decoded back by the model's rule.
  EXPECT_EQ(models::ops::pdp_pad_value(0x7fffb, 1, models::ops::PdpPrecision::kInt8), -5);
  EXPECT_EQ(models::ops::pdp_pad_value(0x7ffdd, 7, models::ops::PdpPrecision::kInt8), -35);
}

TEST(ProgramPdp, OutputSize) {
  EXPECT_EQ(pdp_output_size(8, 2, 2, 0, 0), 4u);
  EXPECT_EQ(pdp_output_size(8, 3, 2, 1, 0), 4u);
  EXPECT_EQ(pdp_output_size(9, 3, 2, 2, 0), 5u);
  EXPECT_EQ(pdp_output_size(2, 3, 1, 0, 0), 0u);
}

TEST(ProgramPdp, RefusesWithoutWritingAnything) {
  PdpLayer good;
  good.src = packed_surface(0x0, 8, 8, 8, 8);
  good.dst = packed_surface(0x1000, 4, 4, 8, 8);
  good.kernel_width = good.kernel_height = 2;
  good.stride_x = good.stride_y = 2;
  const auto refuses = [](const PdpLayer& l, const char* needle) {
    StrictMmio m;
    try {
      (void)program_pdp(m, l, 0, 8);
      ADD_FAILURE() << "expected FirmwareError containing '" << needle << "'";
    } catch (const FirmwareError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  PdpLayer l = good;
  l.kernel_width = 9;
  refuses(l, "kernel width 9 is outside 1..8");
  l = good;
  l.stride_y = 17;
  refuses(l, "stride y 17 is outside 1..16");
  l = good;
  l.pad_left = 2;  // not below the 2-wide kernel
  refuses(l, "left padding 2 is outside 0..1");
  l = good;
  l.dst = packed_surface(0x1000, 3, 4, 8, 8);
  refuses(l, "gives 4x4x8");
  l = good;
  l.pad_value = 128;
  refuses(l, "pad value 128 is outside the INT8 range");
}

}  // namespace
}  // namespace octasim::firmware
