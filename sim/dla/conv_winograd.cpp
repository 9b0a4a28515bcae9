#include "sim/dla/conv_winograd.hpp"

#include <stdexcept>
#include <string>

#include <fmt/core.h>

#include "models/ops/conv_winograd.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/dla/sdp_functional.hpp"

namespace octasim::dla {
namespace R = octasim::regs;
namespace CD = R::CDMA;
namespace CS = R::CSC;
namespace CA = R::CACC;
using models::ops::ConvPrecision;

namespace {

void expect(std::uint32_t got, std::uint32_t want, const char* what, const char* rule) {
  if (got != want) {
    throw std::runtime_error(
        fmt::format("Winograd convolution: {} is {} but {} requires {}", what, got, rule, want));
  }
}

// CDMA's DATAIN_SIZE (the cube in memory) and the extended (padded) size CDMA and CSC see.
void decode_winograd_input(const HwConfig& hw, const RegRead& regs, ConvLayer& l) {
  const std::uint32_t size0 = regs(CD::D_DATAIN_SIZE_0::kAddr);
  l.input.width = CD::D_DATAIN_SIZE_0::DATAIN_WIDTH.get(size0) + 1;
  l.input.height = CD::D_DATAIN_SIZE_0::DATAIN_HEIGHT.get(size0) + 1;
  l.input.channels = CD::D_DATAIN_SIZE_1::DATAIN_CHANNEL.get(regs(CD::D_DATAIN_SIZE_1::kAddr)) + 1;
  l.input.base =
      read_address(hw, regs, CD::D_DAIN_ADDR_HIGH_0::kAddr, CD::D_DAIN_ADDR_LOW_0::kAddr,
                   CD::D_DAIN_RAM_TYPE::DATAIN_RAM_TYPE.get(regs(CD::D_DAIN_RAM_TYPE::kAddr)));
  l.input.line_stride = regs(CD::D_LINE_STRIDE::kAddr);
  l.input.surface_stride = regs(CD::D_SURF_STRIDE::kAddr);
  l.input.atom_bytes = hw.dla.memory_atomic_size;
  const std::uint32_t wext = l.input.width + l.params.pad_left + l.pad_right;
  const std::uint32_t hext = l.input.height + l.params.pad_top + l.pad_bottom;
  const std::uint32_t cdma_ext = regs(CD::D_DATAIN_SIZE_EXT_0::kAddr);
  expect(CD::D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.get(cdma_ext) + 1, wext, "CDMA DATAIN_WIDTH_EXT",
         "DATAIN_WIDTH + PAD_LEFT + PAD_RIGHT");
  expect(CD::D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.get(cdma_ext) + 1, hext,
         "CDMA DATAIN_HEIGHT_EXT", "DATAIN_HEIGHT + PAD_TOP + PAD_BOTTOM");
  const std::uint32_t csc_ext = regs(CS::D_DATAIN_SIZE_EXT_0::kAddr);
  expect(CS::D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.get(csc_ext) + 1, wext, "CSC DATAIN_WIDTH_EXT",
         "DATAIN_WIDTH + PAD_LEFT + PAD_RIGHT");
  expect(CS::D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.get(csc_ext) + 1, hext, "CSC DATAIN_HEIGHT_EXT",
         "DATAIN_HEIGHT + PAD_TOP + PAD_BOTTOM");
  expect(CS::D_DATAIN_SIZE_EXT_1::DATAIN_CHANNEL_EXT.get(regs(CS::D_DATAIN_SIZE_EXT_1::kAddr)) + 1,
         l.input.channels, "CSC DATAIN_CHANNEL_EXT", "CDMA DATAIN_CHANNEL (stride 1)");
}

// The transformed kernels: 4 x 4 x C' in CSC, BYTE_PER_KERNEL and WEIGHT_KERNEL in CDMA.
void decode_winograd_weights(const HwConfig& hw, const RegRead& regs, ConvLayer& l) {
  if (l.weight_compressed) {
    throw std::runtime_error("compressed weights with Winograd convolution are not supported yet");
  }
  const std::uint32_t wsize0 = regs(CS::D_WEIGHT_SIZE_EXT_0::kAddr);
  const std::uint32_t wsize1 = regs(CS::D_WEIGHT_SIZE_EXT_1::kAddr);
  expect(CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.get(wsize0) + 1, 4, "CSC WEIGHT_WIDTH_EXT",
         "a 3x3 kernel transformed to 4x4");
  expect(CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_HEIGHT_EXT.get(wsize0) + 1, 4, "CSC WEIGHT_HEIGHT_EXT",
         "a 3x3 kernel transformed to 4x4");
  l.kernel_width = 3;
  l.kernel_height = 3;
  l.kernels = CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_KERNEL.get(wsize1) + 1;
  l.weight_channels = models::ops::winograd_channels(l.input.channels, l.precision);
  expect(CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_CHANNEL_EXT.get(wsize1) + 1, l.weight_channels,
         "CSC WEIGHT_CHANNEL_EXT", "the input channels rounded up to 32 bytes");
  const unsigned bpe = models::ops::conv_element_bytes(l.precision);
  expect(CD::D_WEIGHT_SIZE_0::BYTE_PER_KERNEL.get(regs(CD::D_WEIGHT_SIZE_0::kAddr)) + 1,
         16 * l.weight_channels * bpe, "CDMA BYTE_PER_KERNEL", "4 x 4 x WEIGHT_CHANNEL_EXT");
  expect(CD::D_WEIGHT_SIZE_1::WEIGHT_KERNEL.get(regs(CD::D_WEIGHT_SIZE_1::kAddr)) + 1, l.kernels,
         "CDMA WEIGHT_KERNEL", "CSC WEIGHT_KERNEL");
  l.weight_base =
      read_address(hw, regs, CD::D_WEIGHT_ADDR_HIGH::kAddr, CD::D_WEIGHT_ADDR_LOW::kAddr,
                   CD::D_WEIGHT_RAM_TYPE::WEIGHT_RAM_TYPE.get(regs(CD::D_WEIGHT_RAM_TYPE::kAddr)));
  l.weight_bytes = regs(CD::D_WEIGHT_BYTES::kAddr);
  const std::uint64_t packed = std::uint64_t{l.kernels} * 16 * l.weight_channels * bpe;
  if (l.weight_bytes < packed) {
    throw std::runtime_error(fmt::format(
        "Winograd convolution: CDMA WEIGHT_BYTES is {} but {} transformed kernels of 4x4x{} need "
        "{}",
        l.weight_bytes, l.kernels, l.weight_channels, packed));
  }
}

// Stride and dilation 1; DATAOUT = DATAIN_SIZE_EXT - 4, a multiple of 4 and at least 8.
void decode_winograd_output(const RegRead& regs, ConvLayer& l) {
  models::ops::ConvParams& p = l.params;
  if (p.stride_x != 1 || p.stride_y != 1) {
    throw std::runtime_error(fmt::format(
        "Winograd convolution: stride {}x{} needs the stride channel extension, which is not "
        "supported (stride 1 only)",
        p.stride_x, p.stride_y));
  }
  expect(p.dilation_x, 1, "CSC X_DILATION_EXT + 1", "Winograd (no dilation)");
  expect(p.dilation_y, 1, "CSC Y_DILATION_EXT + 1", "Winograd (no dilation)");
  const std::uint32_t out0 = regs(CS::D_DATAOUT_SIZE_0::kAddr);
  p.out_width = CS::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.get(out0) + 1;
  p.out_height = CS::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.get(out0) + 1;
  const std::uint32_t wext = l.input.width + p.pad_left + l.pad_right;
  const std::uint32_t hext = l.input.height + p.pad_top + l.pad_bottom;
  expect(p.out_width + 4, wext, "CSC DATAOUT_WIDTH + 4", "DATAIN_WIDTH_EXT");
  expect(p.out_height + 4, hext, "CSC DATAOUT_HEIGHT + 4", "DATAIN_HEIGHT_EXT");
  if (p.out_width % 4 != 0 || p.out_height % 4 != 0 || p.out_width < 8 || p.out_height < 8) {
    throw std::runtime_error(fmt::format(
        "Winograd convolution: the output {}x{} must be a multiple of 4 and at least 8 in width "
        "and height",
        p.out_width, p.out_height));
  }
  expect(CS::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.get(regs(CS::D_DATAOUT_SIZE_1::kAddr)) + 1,
         l.kernels, "CSC DATAOUT_CHANNEL", "CSC WEIGHT_KERNEL");
  const std::uint32_t cacc0 = regs(CA::D_DATAOUT_SIZE_0::kAddr);
  expect(CA::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.get(cacc0) + 1, p.out_width, "CACC DATAOUT_WIDTH",
         "CSC");
  expect(CA::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.get(cacc0) + 1, p.out_height, "CACC DATAOUT_HEIGHT",
         "CSC");
  expect(CA::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.get(regs(CA::D_DATAOUT_SIZE_1::kAddr)) + 1,
         l.kernels, "CACC DATAOUT_CHANNEL", "CSC");
  p.clip_truncate = CA::D_CLIP_CFG::CLIP_TRUNCATE.get(regs(CA::D_CLIP_CFG::kAddr));
}

}  // namespace

bool is_winograd(const RegRead& regs) {
  return CD::D_MISC_CFG::CONV_MODE.get(regs(CD::D_MISC_CFG::kAddr)) ==
         CD::D_MISC_CFG::CONV_MODE_WINOGRAD;
}

void decode_winograd(const HwConfig& hw, const RegRead& regs, ConvLayer& l) {
  for (std::uint32_t misc :
       {regs(R::CMAC_A::D_MISC_CFG::kAddr), regs(R::CMAC_B::D_MISC_CFG::kAddr)}) {
    if (R::CMAC_A::D_MISC_CFG::CONV_MODE.get(misc) != R::CMAC_A::D_MISC_CFG::CONV_MODE_WINOGRAD) {
      throw std::runtime_error(
          "Winograd convolution: CMAC_A/CMAC_B CONV_MODE is direct but CDMA's is Winograd");
    }
  }
  if (l.batches > 1) {
    throw std::runtime_error("multi-batch Winograd convolution is not supported yet");
  }
  if (l.precision == ConvPrecision::kFp16) {
    throw std::runtime_error("FP16 Winograd convolution is not supported yet (INT8/INT16 only)");
  }
  decode_winograd_input(hw, regs, l);
  decode_winograd_weights(hw, regs, l);
  decode_winograd_output(regs, l);
  const std::uint32_t pra = CS::D_PRA_CFG::PRA_TRUNCATE.get(regs(CS::D_PRA_CFG::kAddr));
  if (pra > 2) {
    throw std::runtime_error(
        fmt::format("Winograd convolution: CSC PRA_TRUNCATE is {} (range 0..2)", pra));
  }
  l.pra_truncate = pra;
}

WinogradSchedule winograd_schedule(const ConvLayer& l) {
  WinogradSchedule s;
  s.kernel_bytes =
      std::uint64_t{16} * l.weight_channels * models::ops::conv_element_bytes(l.precision);
  s.atomics = l.params.out_width * l.params.out_height / 4;
  s.packages = (l.weight_channels + 3) / 4;
  return s;
}

OpResult run_conv_winograd_layer(const HwConfig& hw, const RegRead& regs, const LutTables& sdp_lut,
                                 models::ops::Memory& mem) {
  const ConvLayer l = decode_conv(hw, regs);
  const models::ops::SdpConfig sdp = decode_sdp(hw, regs, sdp_lut);
  if (!sdp.flying) throw std::runtime_error("convolution: the SDP group is not in flying mode");
  if (sdp.proc_precision == models::ops::SdpPrecision::kFp16) {
    throw std::runtime_error(
        "Winograd convolution: SDP PROC_PRECISION must be INT8/INT16 (CACC delivers INT32)");
  }
  const models::ops::ConvCube in = models::ops::read_feature_cube(l.input, l.precision, mem);
  const models::ops::ConvWeightLayout layout{hw.dla.mac_atomic_c, hw.dla.mac_atomic_k, l.precision};
  const models::ops::ConvWeights u =
      models::ops::read_winograd_weights(l.weight_base, l.kernels, l.weight_channels, layout, mem);
  const unsigned epa = hw.dla.memory_atomic_size / models::ops::conv_element_bytes(l.precision);
  const std::uint32_t padded = (l.kernels + epa - 1) / epa * epa;
  ConvOutput conv;
  conv.add(models::ops::run_conv_winograd(in, u, l.params, l.pra_truncate, padded));
  const std::uint32_t in_surfaces = (l.input.channels + epa - 1) / epa;
  return finish_conv(
      hw, l, sdp, conv,
      {feature_region(l.input.base, std::uint64_t{l.input.width} * hw.dla.memory_atomic_size,
                      l.input.height, in_surfaces, l.input.line_stride, l.input.surface_stride)},
      regs, mem);
}

}  // namespace octasim::dla
