// Convolution layer programming against the strict mock. Expected writes are listed by hand:
// field positions from NVDLA's register tables, derived values (entries per slice, banks,
// weight bytes, atomics) computed by hand from the programming guide's formulas and, where an
// NVDLA trace programs the same layer geometry, compared with that trace's registers; order from
// NVDLA's firmware (kmd/firmware/conv.c: CACC, CMAC, CSC, CDMA; op enables from the end of the
// pipeline to CDMA).
#include <gtest/gtest.h>

#include "firmware/dla/conv.hpp"
#include "tests/firmware/strict_mmio.hpp"

namespace octasim::firmware {
namespace {

using testing::StrictMmio;

ConvHardware nv_small() {
  return ConvHardware{};  // 8-byte atoms, 8x8 MAC, 32 banks of 512 x 8 bytes, INT8
}

ConvHardware nv_full() {
  ConvHardware hw;
  hw.atom_bytes = 32;
  hw.mac_atomic_c = 64;
  hw.mac_atomic_k = 32;
  hw.cbuf_bank_number = 16;
  hw.cbuf_bank_width = 64;
  hw.cbuf_bank_depth = 512;
  hw.int16 = true;
  return hw;
}

// 16x16x8 INT8, 3x3x8x16 kernels, padding 1 (value -3), per-channel bias + ReLU + requantize.
ConvLayer demo_layer() {
  ConvLayer l;
  l.precision = Precision::kInt8;
  l.src = packed_surface(0x80000000, 16, 16, 8, 8);
  l.weight_address = 0x80010000;
  l.kernels = 16;
  l.kernel_width = l.kernel_height = 3;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = 1;
  l.pad_value = -3;
  l.sdp.bias = SdpPerChannel{0x80018000, 0};
  l.sdp.relu = true;
  l.sdp.cvt = SdpConvertor{0, 1, 9};
  l.dst = packed_surface(0x80020000, 16, 16, 16, 8);
  return l;
}

TEST(ProgramConv, DemoLayerInt8Group0) {
  StrictMmio m;
  m.write("SDP.S_POINTER", 0x0)
      .write("SDP_RDMA.S_POINTER", 0x0)
      .write("CACC.S_POINTER", 0x0)
      .write("CMAC_A.S_POINTER", 0x0)
      .write("CMAC_B.S_POINTER", 0x0)
      .write("CSC.S_POINTER", 0x0)
      .write("CDMA.S_POINTER", 0x0)
      // CACC: direct, INT8; 16x16x16 output
      .write("CACC.D_MISC_CFG", 0x0)
      .write("CACC.D_DATAOUT_SIZE_0", 0xf000f)
      .write("CACC.D_DATAOUT_SIZE_1", 0xf)
      .write("CACC.D_DATAOUT_ADDR", 0x80020000)
      .write("CACC.D_BATCH_NUMBER", 0x0)
      .write("CACC.D_LINE_STRIDE", 0x80)   // 16 atoms of 8 bytes
      .write("CACC.D_SURF_STRIDE", 0x800)  // 16 lines
      .write("CACC.D_DATAOUT_MAP", 0x0)    // not 1x1: neither line nor surface packed
      .write("CACC.D_CLIP_CFG", 0x0)
      .write("CMAC_A.D_MISC_CFG", 0x0)
      .write("CMAC_B.D_MISC_CFG", 0x0)
      // CSC
      .write("CSC.D_MISC_CFG", 0x0)
      .write("CSC.D_DATAIN_FORMAT", 0x0)
      .write("CSC.D_DATAIN_SIZE_EXT_0", 0xf000f)
      .write("CSC.D_DATAIN_SIZE_EXT_1", 0x7)
      .write("CSC.D_BATCH_NUMBER", 0x0)
      .write("CSC.D_POST_Y_EXTENSION", 0x0)
      .write("CSC.D_ENTRY_PER_SLICE", 0xf)  // 16 positions x one 8-byte entry
      .write("CSC.D_WEIGHT_FORMAT", 0x0)
      .write("CSC.D_WEIGHT_SIZE_EXT_0", 0x20002)
      .write("CSC.D_WEIGHT_SIZE_EXT_1", 0xf0007)
      .write("CSC.D_WEIGHT_BYTES", 0x480)  // 3*3*8*16 = 1152, a multiple of 128
      .write("CSC.D_WMB_BYTES", 0x0)
      .write("CSC.D_DATAOUT_SIZE_0", 0xf000f)
      .write("CSC.D_DATAOUT_SIZE_1", 0xf)
      .write("CSC.D_ATOMICS", 0xff)  // 256 output positions
      .write("CSC.D_RELEASE", 0xf)   // all 16 slices
      .write("CSC.D_CONV_STRIDE_EXT", 0x0)
      .write("CSC.D_DILATION_EXT", 0x0)
      .write("CSC.D_ZERO_PADDING", 0x10001)
      .write("CSC.D_ZERO_PADDING_VALUE", 0xfffd)  // -3
      .write("CSC.D_BANK", 0x0)                   // one data bank (256 entries), one weight bank
      .write("CSC.D_PRA_CFG", 0x0)
      // CDMA
      .write("CDMA.D_MISC_CFG", 0x0)
      .write("CDMA.D_DATAIN_FORMAT", 0x0)
      .write("CDMA.D_DATAIN_SIZE_0", 0xf000f)
      .write("CDMA.D_DATAIN_SIZE_1", 0x7)
      .write("CDMA.D_DATAIN_SIZE_EXT_0", 0xf000f)
      .write("CDMA.D_DAIN_RAM_TYPE", 0x1)  // MCIF
      .write("CDMA.D_DAIN_ADDR_HIGH_0", 0x0)
      .write("CDMA.D_DAIN_ADDR_LOW_0", 0x80000000)
      .write("CDMA.D_DAIN_ADDR_HIGH_1", 0x0)
      .write("CDMA.D_DAIN_ADDR_LOW_1", 0x80000000)
      .write("CDMA.D_LINE_STRIDE", 0x80)
      .write("CDMA.D_SURF_STRIDE", 0x800)
      .write("CDMA.D_LINE_UV_STRIDE", 0x0)
      .write("CDMA.D_DAIN_MAP", 0x10001)  // line and surface packed
      .write("CDMA.D_BATCH_NUMBER", 0x0)
      .write("CDMA.D_BATCH_STRIDE", 0x0)
      .write("CDMA.D_ENTRY_PER_SLICE", 0xf)
      .write("CDMA.D_FETCH_GRAIN", 0x0)
      .write("CDMA.D_WEIGHT_FORMAT", 0x0)
      .write("CDMA.D_WEIGHT_SIZE_0", 71)  // 72 bytes per kernel
      .write("CDMA.D_WEIGHT_SIZE_1", 0xf)
      .write("CDMA.D_WEIGHT_RAM_TYPE", 0x1)
      .write("CDMA.D_WEIGHT_ADDR_HIGH", 0x0)
      .write("CDMA.D_WEIGHT_ADDR_LOW", 0x80010000)
      .write("CDMA.D_WEIGHT_BYTES", 0x480)
      .write("CDMA.D_MEAN_FORMAT", 0x0)
      .write("CDMA.D_CVT_CFG", 0x0)
      .write("CDMA.D_CONV_STRIDE", 0x0)
      .write("CDMA.D_ZERO_PADDING", 0x01010101)
      .write("CDMA.D_ZERO_PADDING_VALUE", 0xfffd)
      .write("CDMA.D_BANK", 0x0)
      // SDP_RDMA: the bias table only; flying input
      .write("SDP_RDMA.D_DATA_CUBE_WIDTH", 0xf)
      .write("SDP_RDMA.D_DATA_CUBE_HEIGHT", 0xf)
      .write("SDP_RDMA.D_DATA_CUBE_CHANNEL", 0xf)
      .write("SDP_RDMA.D_BRDMA_CFG", 0x2a)
      .write("SDP_RDMA.D_BS_BASE_ADDR_LOW", 0x80018000)
      .write("SDP_RDMA.D_BS_BASE_ADDR_HIGH", 0x0)
      .write("SDP_RDMA.D_BS_LINE_STRIDE", 0x10)
      .write("SDP_RDMA.D_BS_SURFACE_STRIDE", 0x10)
      .write("SDP_RDMA.D_NRDMA_CFG", 0x1)
      .write("SDP_RDMA.D_ERDMA_CFG", 0x1)
      .write("SDP_RDMA.D_FEATURE_MODE_CFG", 0x1)  // FLYING_MODE = ON
      .write("SDP.D_DATA_CUBE_WIDTH", 0xf)
      .write("SDP.D_DATA_CUBE_HEIGHT", 0xf)
      .write("SDP.D_DATA_CUBE_CHANNEL", 0xf)
      .write("SDP.D_DST_BASE_ADDR_LOW", 0x80020000)
      .write("SDP.D_DST_BASE_ADDR_HIGH", 0x0)
      .write("SDP.D_DST_LINE_STRIDE", 0x80)
      .write("SDP.D_DST_SURFACE_STRIDE", 0x800)
      .write("SDP.D_DP_BS_CFG", 0x18)
      .write("SDP.D_DP_BS_ALU_CFG", 0x1)
      .write("SDP.D_DP_BS_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BS_MUL_CFG", 0x0)
      .write("SDP.D_DP_BS_MUL_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BN_CFG", 0x53)
      .write("SDP.D_DP_BN_ALU_CFG", 0x0)
      .write("SDP.D_DP_BN_ALU_SRC_VALUE", 0x0)
      .write("SDP.D_DP_BN_MUL_CFG", 0x0)
      .write("SDP.D_DP_BN_MUL_SRC_VALUE", 0x0)
      .write("SDP.D_DP_EW_CFG", 0x53)
      .write("SDP.D_FEATURE_MODE_CFG", 0x1)  // FLYING_MODE = ON, output to memory
      .write("SDP.D_DST_DMA_CFG", 0x1)
      .write("SDP.D_DATA_FORMAT", 0x0)
      .write("SDP.D_CVT_OFFSET", 0x0)
      .write("SDP.D_CVT_SCALE", 0x1)
      .write("SDP.D_CVT_SHIFT", 9)
      .write("SDP.D_PERF_ENABLE", 0x4)
      // enable, the end of the pipeline first
      .write("CDMA.D_PERF_ENABLE", 0x1)
      .write("SDP_RDMA.D_OP_ENABLE", 0x1)
      .write("SDP.D_OP_ENABLE", 0x1)
      .write("CACC.D_OP_ENABLE", 0x1)
      .write("CMAC_A.D_OP_ENABLE", 0x1)
      .write("CMAC_B.D_OP_ENABLE", 0x1)
      .write("CSC.D_OP_ENABLE", 0x1)
      .write("CDMA.D_OP_ENABLE", 0x1);
  EXPECT_EQ(program_conv(m, demo_layer(), 0, nv_small()), 0u);  // SDP_DONE_STATUS0
}

// Without a bias or scale table SDP_RDMA takes no part: neither programmed nor enabled.
TEST(ProgramConv, Group1WithoutSdpOperandsLeavesSdpRdmaAlone) {
  ConvLayer l = demo_layer();
  l.sdp.bias.reset();
  l.sdp.relu = false;
  struct Recorder final : Mmio {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> writes;
    void write32(std::uint32_t a, std::uint32_t v) override { writes.emplace_back(a, v); }
    std::uint32_t read32(std::uint32_t) override { return 0; }
    void wait_interrupt(unsigned) override {}
  } rec;
  EXPECT_EQ(program_conv(rec, l, 1, nv_small()), 1u);  // SDP_DONE_STATUS1
  const regs::RegisterInfo* pointer = regs::find_register("CDMA", "S_POINTER");
  ASSERT_NE(pointer, nullptr);
  bool saw_cdma_pointer = false;
  for (const auto& [addr, value] : rec.writes) {
    const regs::RegisterInfo* r = regs::find_register(addr);
    ASSERT_NE(r, nullptr);
    EXPECT_STRNE(r->unit, "SDP_RDMA") << r->name;
    if (std::string(r->name) == "S_POINTER") {
      EXPECT_EQ(value, 1u) << r->unit;
    }
    if (addr == pointer->addr) saw_cdma_pointer = true;
    if (std::string(r->unit) == "SDP" && std::string(r->name) == "D_DP_BS_CFG") {
      EXPECT_EQ(value, 0x53u);  // BS bypassed
    }
  }
  EXPECT_TRUE(saw_cdma_pointer);
  EXPECT_EQ(rec.writes.back().first, regs::find_register("CDMA", "D_OP_ENABLE")->addr);
}

// The plan of NVDLA's trace dc_24x44x14_5x3x14x41_int8_0 (nv_small): its registers say
// ENTRY_PER_SLICE 0x2f, WEIGHT_BYTES 0x2200, ATOMICS 0x491, BYTE_PER_KERNEL 0xd1, output
// 26x45 with padding left 3 / right 3 / top 1 / bottom 2.
TEST(PlanConv, MatchesAnNvdlaTraceGeometry) {
  ConvLayer l;
  l.src = packed_surface(0x80018400, 24, 44, 14, 8);
  l.weight_address = 0x90000000;
  l.kernels = 41;
  l.kernel_width = 5;
  l.kernel_height = 3;
  l.pad_left = l.pad_right = 3;
  l.pad_top = 1;
  l.pad_bottom = 2;
  l.dst = packed_surface(0xa0000020, 26, 45, 41, 8);
  const ConvPlan p = plan_conv(l, nv_small());
  EXPECT_EQ(p.entries_per_slice - 1, 0x2fu);
  EXPECT_EQ(p.weight_bytes, 0x2200u);
  EXPECT_EQ(p.atomics - 1, 0x491u);
  EXPECT_EQ(p.bytes_per_kernel - 1, 0xd1u);
  EXPECT_EQ(p.pad_right, 3u);
  EXPECT_EQ(p.pad_bottom, 2u);
  // 48 entries x 44 slices = 2112 entries: 5 banks of 512; 8704 weight bytes: 3 banks of 4096.
  EXPECT_EQ(p.data_banks, 5u);
  EXPECT_EQ(p.weight_banks, 3u);
  EXPECT_TRUE(p.full_weights);
}

TEST(PlanConv, UnusedRightAndBottomPaddingIsNotProgrammed) {
  ConvLayer l = demo_layer();
  l.stride_x = 2;
  l.stride_y = 3;
  l.dst.width = 8;   // (16 + 2 - 3) / 2 + 1
  l.dst.height = 6;  // (16 + 2 - 3) / 3 + 1
  l.dst.line_stride = 8 * 8;
  l.dst.surface_stride = 8 * 8 * 6;
  const ConvPlan p = plan_conv(l, nv_small());
  EXPECT_EQ(p.out_width, 8u);
  EXPECT_EQ(p.out_height, 6u);
  // The last output's window spans padded columns 14..16 = left pad + W: no right padding;
  // rows 15..17: one row of bottom padding.
  EXPECT_EQ(p.pad_right, 0u);
  EXPECT_EQ(p.pad_bottom, 1u);
}

TEST(PlanConv, EntriesPerSliceOnNvFull) {
  // 32-byte atoms, 64-byte entries: two atoms per entry; a trailing single atom packs two
  // width positions per entry.
  ConvLayer l;
  l.src = packed_surface(0x80000000, 7, 4, 100, 32);  // 4 atoms: 2 entries per position
  l.weight_address = 0x80100000;
  l.kernels = 40;
  l.dst = packed_surface(0x80200000, 7, 4, 40, 32);
  EXPECT_EQ(plan_conv(l, nv_full()).entries_per_slice, 14u);
  l.src = packed_surface(0x80000000, 7, 4, 70, 32);  // 3 atoms: 7 + ceil(7 / 2)
  EXPECT_EQ(plan_conv(l, nv_full()).entries_per_slice, 11u);
  l.src = packed_surface(0x80000000, 7, 4, 20, 32);  // 1 atom: ceil(7 / 2)
  EXPECT_EQ(plan_conv(l, nv_full()).entries_per_slice, 4u);
}

TEST(PlanConv, PartialWeightsWhenTheKernelsDoNotFitBesideTheInput) {
  // nv_small, 64x20x64 input: 8 atoms x 64 positions = 512 entries per slice, x 20 slices =
  // 20 banks; 3x3x64x256 kernels = 147456 bytes = 36 banks of 4096: only 12 remain, more than
  // one group of 8 kernels needs (4608 + 128 bytes: 2 banks).
  ConvLayer l;
  l.src = packed_surface(0x80000000, 64, 20, 64, 8);
  l.weight_address = 0x81000000;
  l.kernels = 256;
  l.kernel_width = l.kernel_height = 3;
  l.dst = packed_surface(0x82000000, 62, 18, 256, 8);
  const ConvPlan p = plan_conv(l, nv_small());
  EXPECT_EQ(p.data_banks, 20u);
  EXPECT_FALSE(p.full_weights);
  EXPECT_EQ(p.weight_banks, 12u);
  EXPECT_EQ(p.weight_bytes, 147456u);
}

TEST(ProgramConv, RefusesWithoutWritingAnything) {
  const auto refuses = [](const ConvLayer& l, unsigned group, const ConvHardware& hw,
                          const char* needle) {
    StrictMmio m;  // no access expected
    try {
      (void)program_conv(m, l, group, hw);
      ADD_FAILURE() << "expected FirmwareError containing '" << needle << "'";
    } catch (const FirmwareError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  ConvLayer l = demo_layer();
  refuses(l, 2, nv_small(), "register group 2");
  l.dst.channels = 15;
  refuses(l, 0, nv_small(), "output surface is 16x16x15 but the layer produces 16x16x16");
  l = demo_layer();
  l.pad_value = -129;
  refuses(l, 0, nv_small(), "padding value -129 is outside -128..127");
  l = demo_layer();
  l.pad_left = 3;
  refuses(l, 0, nv_small(), "must be smaller than the kernel's extent 3x3");
  l = demo_layer();
  l.weight_address = 0x80010010;
  refuses(l, 0, nv_small(), "weight address 0x80010010 is not aligned to 32 bytes");
  l = demo_layer();
  l.stride_x = 9;
  refuses(l, 0, nv_small(), "stride x 9 is outside 1..8");
  l = demo_layer();
  l.clip_truncate = 32;
  refuses(l, 0, nv_small(), "clip truncate 32");
  l = demo_layer();
  l.precision = Precision::kInt16;
  l.src = packed_surface(0x80000000, 16, 16, 8, 8);
  refuses(l, 0, nv_small(), "INT16 is not supported");
  l = demo_layer();
  l.sdp.bias->address = 0x80018004;
  refuses(l, 0, nv_small(), "bias table address 0x80018004 is not aligned");
  l = demo_layer();
  l.sdp.cvt.shift = 64;
  refuses(l, 0, nv_small(), "output convertor shift 64");
  // 256x128x8: 256 entries x 128 slices = 64 banks of data: more than the CBUF.
  l = demo_layer();
  l.src = packed_surface(0x80000000, 256, 128, 8, 8);
  l.dst = packed_surface(0x81000000, 256, 128, 16, 8);
  refuses(l, 0, nv_small(), "needs 64 CBUF banks");
  // A kernel larger than the padded input.
  l = demo_layer();
  l.src = packed_surface(0x80000000, 1, 16, 8, 8);
  l.pad_left = l.pad_right = 0;
  refuses(l, 0, nv_small(), "does not fit the padded 1x16 input");
}

TEST(ConvImages, WeightImageFollowsNvdlaGroupsAndIsPaddedTo128Bytes) {
  // 9 kernels 1x1x3 on nv_small: group 0 holds kernels 0..7 as 8 cubes of 3 channels, group 1
  // kernel 8; 27 bytes padded to 128.
  models::ops::ConvWeights w(9, 1, 1, 3);
  for (std::uint32_t k = 0; k < 9; ++k) {
    for (std::uint32_t c = 0; c < 3; ++c) w.at(k, 0, 0, c) = static_cast<int>(10 * k + c) - 40;
  }
  const std::vector<std::uint8_t> img = conv_weight_image(w, Precision::kInt8, nv_small());
  ASSERT_EQ(img.size(), 128u);
  for (std::uint32_t k = 0; k < 9; ++k) {
    for (std::uint32_t c = 0; c < 3; ++c) {
      EXPECT_EQ(static_cast<std::int8_t>(img[k * 3 + c]), static_cast<int>(10 * k + c) - 40);
    }
  }
  for (std::size_t i = 27; i < img.size(); ++i) EXPECT_EQ(img[i], 0u) << i;
}

TEST(ConvImages, FeatureImageIsNvdlaFeatureLayout) {
  models::ops::ConvCube cube(2, 1, 10);
  for (std::uint32_t c = 0; c < 10; ++c) {
    cube.at(0, 0, c) = static_cast<int>(c) + 1;
    cube.at(1, 0, c) = -static_cast<int>(c) - 1;
  }
  const FeatureSurface s = packed_surface(0x1000, 2, 1, 10, 8);
  const std::vector<std::uint8_t> img = conv_feature_image(cube, s, Precision::kInt8, 8);
  // surface 0: (0,0) c0..7, (1,0) c0..7; surface 1: (0,0) c8,c9 + 6 zero lanes, (1,0) likewise
  const std::vector<std::uint8_t> want = {1,    2,    3,    4,    5,    6, 7,  8, 0xff, 0xfe, 0xfd,
                                          0xfc, 0xfb, 0xfa, 0xf9, 0xf8, 9, 10, 0, 0,    0,    0,
                                          0,    0,    0xf7, 0xf6, 0,    0, 0,  0, 0,    0};
  EXPECT_EQ(img, want);
}

}  // namespace
}  // namespace octasim::firmware
