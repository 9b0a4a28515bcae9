// The convolution's register programming: CACC, CMAC_A/B, CSC and CDMA, SDP in flying mode
// (write_sdp_registers), and the enables (firmware/dla/conv.hpp describes the order).
#include <fmt/core.h>

#include "firmware/dla/conv.hpp"
#include "firmware/dla/conv_winograd.hpp"
#include "firmware/dla/sdp.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

namespace CD = regs::CDMA;
namespace CS = regs::CSC;
namespace MA = regs::CMAC_A;
namespace MB = regs::CMAC_B;
namespace CA = regs::CACC;
namespace S = regs::SDP;
namespace RD = regs::SDP_RDMA;

// CSC's and CDMA's D_ZERO_PADDING_VALUE: 16 bits, sign-extended from the precision (the INT8
// data path takes the low byte).
std::uint32_t pad_value_field(const ConvLayer& l) {
  return static_cast<std::uint16_t>(static_cast<std::int16_t>(l.pad_value));
}

// The input's width and height as CSC's D_DATAIN_SIZE_EXT_0 and CDMA's share them (Winograd:
// with the padding).
std::uint32_t datain_ext(const ConvLayer& l, const ConvPlan& plan) {
  const std::uint32_t w = l.winograd ? l.src.width + l.pad_left + plan.pad_right : l.src.width;
  const std::uint32_t h = l.winograd ? l.src.height + l.pad_top + plan.pad_bottom : l.src.height;
  return CS::D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.set(0, w - 1) |
         CS::D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.set(0, h - 1);
}

// CONV_MODE (the same encoding in CDMA, CSC, CMAC_A/B and CACC).
std::uint32_t conv_mode(const ConvLayer& l) {
  return l.winograd ? CS::D_MISC_CFG::CONV_MODE_WINOGRAD : CS::D_MISC_CFG::CONV_MODE_DIRECT;
}

// CDMA's and CSC's D_MISC_CFG (the same fields in both).
std::uint32_t cdma_csc_misc(const ConvLayer& l) {
  using M = CS::D_MISC_CFG;
  const auto p = static_cast<std::uint32_t>(l.precision);
  static_assert(M::WEIGHT_REUSE.lsb == CD::D_MISC_CFG::WEIGHT_REUSE.lsb &&
                M::SKIP_WEIGHT_RLS.lsb == CD::D_MISC_CFG::SKIP_WEIGHT_RLS.lsb);
  return M::CONV_MODE.set(0, conv_mode(l)) | M::IN_PRECISION.set(0, p) |
         M::PROC_PRECISION.set(0, p) | M::WEIGHT_REUSE.set(0, l.weight_reuse ? 1 : 0) |
         M::SKIP_WEIGHT_RLS.set(0, l.skip_weight_release ? 1 : 0);
}

void program_cacc(Mmio& mmio, const ConvLayer& l, const ConvPlan& plan) {
  const auto p = static_cast<std::uint32_t>(l.precision);
  mmio.write32(CA::D_MISC_CFG::kAddr, CA::D_MISC_CFG::CONV_MODE.set(0, conv_mode(l)) |
                                          CA::D_MISC_CFG::PROC_PRECISION.set(0, p));
  mmio.write32(CA::D_DATAOUT_SIZE_0::kAddr,
               CA::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.set(0, plan.out_width - 1) |
                   CA::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.set(0, plan.out_height - 1));
  mmio.write32(CA::D_DATAOUT_SIZE_1::kAddr,
               CA::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.set(0, l.kernels - 1));
  mmio.write32(CA::D_DATAOUT_ADDR::kAddr, low32(l.dst.address));
  mmio.write32(CA::D_BATCH_NUMBER::kAddr, l.batches - 1);
  mmio.write32(CA::D_LINE_STRIDE::kAddr, l.dst.line_stride);
  mmio.write32(CA::D_SURF_STRIDE::kAddr, l.dst.surface_stride);
  {
    using M = CA::D_DATAOUT_MAP;
    const bool one = plan.out_width == 1 && plan.out_height == 1;
    mmio.write32(M::kAddr,
                 M::LINE_PACKED.set(0, one ? M::LINE_PACKED_TRUE : M::LINE_PACKED_FALSE) |
                     M::SURF_PACKED.set(0, one ? M::SURF_PACKED_TRUE : M::SURF_PACKED_FALSE));
  }
  mmio.write32(CA::D_CLIP_CFG::kAddr,
               CA::D_CLIP_CFG::CLIP_TRUNCATE.set(
                   0, l.winograd ? winograd_clip_truncate(l) : l.clip_truncate));
}

void program_cmac(Mmio& mmio, const ConvLayer& l) {
  const auto p = static_cast<std::uint32_t>(l.precision);
  const std::uint32_t cmac =
      MA::D_MISC_CFG::CONV_MODE.set(0, conv_mode(l)) | MA::D_MISC_CFG::PROC_PRECISION.set(0, p);
  mmio.write32(MA::D_MISC_CFG::kAddr, cmac);
  mmio.write32(MB::D_MISC_CFG::kAddr, cmac);
}

void program_csc(Mmio& mmio, const ConvLayer& l, const ConvPlan& plan) {
  mmio.write32(CS::D_MISC_CFG::kAddr, cdma_csc_misc(l));
  mmio.write32(CS::D_DATAIN_FORMAT::kAddr, CS::D_DATAIN_FORMAT::DATAIN_FORMAT.set(
                                               0, CS::D_DATAIN_FORMAT::DATAIN_FORMAT_FEATURE));
  mmio.write32(CS::D_DATAIN_SIZE_EXT_0::kAddr, datain_ext(l, plan));
  mmio.write32(CS::D_DATAIN_SIZE_EXT_1::kAddr,
               CS::D_DATAIN_SIZE_EXT_1::DATAIN_CHANNEL_EXT.set(0, l.src.channels - 1));
  mmio.write32(CS::D_BATCH_NUMBER::kAddr, l.batches - 1);
  mmio.write32(CS::D_POST_Y_EXTENSION::kAddr, 0);
  mmio.write32(CS::D_ENTRY_PER_SLICE::kAddr,
               CS::D_ENTRY_PER_SLICE::ENTRIES.set(0, plan.entries_per_slice - 1));
  {
    using F = CS::D_WEIGHT_FORMAT;
    mmio.write32(F::kAddr, F::WEIGHT_FORMAT.set(0, l.compressed ? F::WEIGHT_FORMAT_COMPRESSED
                                                                : F::WEIGHT_FORMAT_UNCOMPRESSED));
  }
  // Winograd: the transformed 4x4 kernels of C' channels (BYTE_PER_KERNEL / 16 elements).
  const std::uint32_t kw = l.winograd ? 4 : l.kernel_width, kh = l.winograd ? 4 : l.kernel_height;
  const std::uint32_t kc =
      l.winograd ? plan.bytes_per_kernel / 16 / element_bytes(l.precision) : l.src.channels;
  mmio.write32(CS::D_WEIGHT_SIZE_EXT_0::kAddr,
               CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.set(0, kw - 1) |
                   CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_HEIGHT_EXT.set(0, kh - 1));
  mmio.write32(CS::D_WEIGHT_SIZE_EXT_1::kAddr,
               CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_CHANNEL_EXT.set(0, kc - 1) |
                   CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_KERNEL.set(0, l.kernels - 1));
  mmio.write32(CS::D_WEIGHT_BYTES::kAddr, plan.weight_bytes);
  mmio.write32(CS::D_WMB_BYTES::kAddr, plan.wmb_bytes);
  mmio.write32(CS::D_DATAOUT_SIZE_0::kAddr,
               CS::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.set(0, plan.out_width - 1) |
                   CS::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.set(0, plan.out_height - 1));
  mmio.write32(CS::D_DATAOUT_SIZE_1::kAddr,
               CS::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.set(0, l.kernels - 1));
  mmio.write32(CS::D_ATOMICS::kAddr, CS::D_ATOMICS::ATOMICS.set(0, plan.atomics - 1));
  mmio.write32(CS::D_RELEASE::kAddr, CS::D_RELEASE::RLS_SLICES.set(0, plan.release - 1));
  mmio.write32(CS::D_CONV_STRIDE_EXT::kAddr,
               CS::D_CONV_STRIDE_EXT::CONV_X_STRIDE_EXT.set(0, l.stride_x - 1) |
                   CS::D_CONV_STRIDE_EXT::CONV_Y_STRIDE_EXT.set(0, l.stride_y - 1));
  mmio.write32(CS::D_DILATION_EXT::kAddr,
               CS::D_DILATION_EXT::X_DILATION_EXT.set(0, l.dilation_x - 1) |
                   CS::D_DILATION_EXT::Y_DILATION_EXT.set(0, l.dilation_y - 1));
  mmio.write32(CS::D_ZERO_PADDING::kAddr, CS::D_ZERO_PADDING::PAD_LEFT.set(0, l.pad_left) |
                                              CS::D_ZERO_PADDING::PAD_TOP.set(0, l.pad_top));
  mmio.write32(CS::D_ZERO_PADDING_VALUE::kAddr,
               CS::D_ZERO_PADDING_VALUE::PAD_VALUE.set(0, pad_value_field(l)));
  const std::uint32_t bank = CS::D_BANK::DATA_BANK.set(0, plan.data_banks - 1) |
                             CS::D_BANK::WEIGHT_BANK.set(0, plan.weight_banks - 1);
  mmio.write32(CS::D_BANK::kAddr, bank);
  mmio.write32(CS::D_PRA_CFG::kAddr,
               CS::D_PRA_CFG::PRA_TRUNCATE.set(0, l.winograd ? l.pra_truncate : 0));
}

void program_cdma(Mmio& mmio, const ConvLayer& l, const ConvPlan& plan, unsigned atom_bytes) {
  mmio.write32(CD::D_MISC_CFG::kAddr, cdma_csc_misc(l));
  mmio.write32(CD::D_DATAIN_FORMAT::kAddr, CD::D_DATAIN_FORMAT::DATAIN_FORMAT.set(
                                               0, CD::D_DATAIN_FORMAT::DATAIN_FORMAT_FEATURE));
  mmio.write32(CD::D_DATAIN_SIZE_0::kAddr,
               CD::D_DATAIN_SIZE_0::DATAIN_WIDTH.set(0, l.src.width - 1) |
                   CD::D_DATAIN_SIZE_0::DATAIN_HEIGHT.set(0, l.src.height - 1));
  mmio.write32(CD::D_DATAIN_SIZE_1::kAddr,
               CD::D_DATAIN_SIZE_1::DATAIN_CHANNEL.set(0, l.src.channels - 1));
  mmio.write32(CD::D_DATAIN_SIZE_EXT_0::kAddr, datain_ext(l, plan));
  mmio.write32(CD::D_DAIN_RAM_TYPE::kAddr,
               CD::D_DAIN_RAM_TYPE::DATAIN_RAM_TYPE.set(0, ram_type(l.src)));
  mmio.write32(CD::D_DAIN_ADDR_HIGH_0::kAddr, high32(l.src.address));
  mmio.write32(CD::D_DAIN_ADDR_LOW_0::kAddr, low32(l.src.address));
  mmio.write32(CD::D_DAIN_ADDR_HIGH_1::kAddr, high32(l.src.address));
  mmio.write32(CD::D_DAIN_ADDR_LOW_1::kAddr, low32(l.src.address));
  mmio.write32(CD::D_LINE_STRIDE::kAddr, l.src.line_stride);
  mmio.write32(CD::D_SURF_STRIDE::kAddr, l.src.surface_stride);
  mmio.write32(CD::D_LINE_UV_STRIDE::kAddr, 0);
  {
    using M = CD::D_DAIN_MAP;
    const std::uint64_t line = std::uint64_t{l.src.width} * atom_bytes;
    const bool line_packed = l.src.line_stride == line;
    const bool surf_packed = l.src.surface_stride == line * l.src.height;
    mmio.write32(M::kAddr, M::LINE_PACKED.set(0, line_packed ? 1 : 0) |
                               M::SURF_PACKED.set(0, surf_packed ? 1 : 0));
  }
  mmio.write32(CD::D_BATCH_NUMBER::kAddr, l.batches - 1);
  mmio.write32(CD::D_BATCH_STRIDE::kAddr, l.src_batch_stride);
  mmio.write32(CD::D_ENTRY_PER_SLICE::kAddr,
               CD::D_ENTRY_PER_SLICE::ENTRIES.set(0, plan.entries_per_slice - 1));
  mmio.write32(CD::D_FETCH_GRAIN::kAddr, 0);  // fetch as soon as one slice fits
  {
    using F = CD::D_WEIGHT_FORMAT;
    mmio.write32(F::kAddr, F::WEIGHT_FORMAT.set(0, l.compressed ? F::WEIGHT_FORMAT_COMPRESSED
                                                                : F::WEIGHT_FORMAT_UNCOMPRESSED));
  }
  mmio.write32(CD::D_WEIGHT_SIZE_0::kAddr,
               CD::D_WEIGHT_SIZE_0::BYTE_PER_KERNEL.set(0, plan.bytes_per_kernel - 1));
  mmio.write32(CD::D_WEIGHT_SIZE_1::kAddr,
               CD::D_WEIGHT_SIZE_1::WEIGHT_KERNEL.set(0, l.kernels - 1));
  static_assert(
      static_cast<std::uint32_t>(Ram::kCv) == CD::D_WEIGHT_RAM_TYPE::WEIGHT_RAM_TYPE_CVIF &&
      static_cast<std::uint32_t>(Ram::kMc) == CD::D_WEIGHT_RAM_TYPE::WEIGHT_RAM_TYPE_MCIF);
  mmio.write32(CD::D_WEIGHT_RAM_TYPE::kAddr, CD::D_WEIGHT_RAM_TYPE::WEIGHT_RAM_TYPE.set(
                                                 0, static_cast<std::uint32_t>(l.weight_ram)));
  mmio.write32(CD::D_WEIGHT_ADDR_HIGH::kAddr, high32(l.weight_address));
  mmio.write32(CD::D_WEIGHT_ADDR_LOW::kAddr, low32(l.weight_address));
  mmio.write32(CD::D_WEIGHT_BYTES::kAddr, plan.weight_bytes);
  if (l.compressed) {
    mmio.write32(CD::D_WGS_ADDR_HIGH::kAddr, high32(l.compressed->wgs_address));
    mmio.write32(CD::D_WGS_ADDR_LOW::kAddr, low32(l.compressed->wgs_address));
    mmio.write32(CD::D_WMB_ADDR_HIGH::kAddr, high32(l.compressed->wmb_address));
    mmio.write32(CD::D_WMB_ADDR_LOW::kAddr, low32(l.compressed->wmb_address));
    mmio.write32(CD::D_WMB_BYTES::kAddr, plan.wmb_bytes);
  }
  mmio.write32(CD::D_MEAN_FORMAT::kAddr, 0);
  mmio.write32(CD::D_CVT_CFG::kAddr, CD::D_CVT_CFG::CVT_EN.set(0, CD::D_CVT_CFG::CVT_EN_DISABLE));
  mmio.write32(CD::D_CONV_STRIDE::kAddr,
               CD::D_CONV_STRIDE::CONV_X_STRIDE.set(0, l.stride_x - 1) |
                   CD::D_CONV_STRIDE::CONV_Y_STRIDE.set(0, l.stride_y - 1));
  mmio.write32(CD::D_ZERO_PADDING::kAddr,
               CD::D_ZERO_PADDING::PAD_LEFT.set(0, l.pad_left) |
                   CD::D_ZERO_PADDING::PAD_RIGHT.set(0, plan.pad_right) |
                   CD::D_ZERO_PADDING::PAD_TOP.set(0, l.pad_top) |
                   CD::D_ZERO_PADDING::PAD_BOTTOM.set(0, plan.pad_bottom));
  mmio.write32(CD::D_ZERO_PADDING_VALUE::kAddr,
               CD::D_ZERO_PADDING_VALUE::PAD_VALUE.set(0, pad_value_field(l)));
  mmio.write32(CD::D_BANK::kAddr, CD::D_BANK::DATA_BANK.set(0, plan.data_banks - 1) |
                                      CD::D_BANK::WEIGHT_BANK.set(0, plan.weight_banks - 1));
}

}  // namespace

unsigned program_conv(Mmio& mmio, const ConvLayer& l, unsigned group, const ConvHardware& hw,
                      int sdp_group, int rdma_group) {
  const unsigned sg = sdp_group < 0 ? group : static_cast<unsigned>(sdp_group);
  const unsigned rg = rdma_group < 0 ? sg : static_cast<unsigned>(rdma_group);
  if (group > 1 || sg > 1 || rg > 1) {
    throw FirmwareError(fmt::format("convolution: register group {} is not 0 or 1", group > 1
                                                                                        ? group
                                                                                    : sg > 1 ? sg
                                                                                             : rg));
  }
  const ConvPlan plan = plan_conv(l, hw);
  const SdpLayer sdp = conv_sdp_layer(l);
  const bool sdp_rdma = sdp_rdma_used(sdp, SdpInput::kFlying);

  // Producer pointers, from the end of the pipeline to its start.
  mmio.write32(S::S_POINTER::kAddr, S::S_POINTER::PRODUCER.set(0, sg));
  if (sdp_rdma) mmio.write32(RD::S_POINTER::kAddr, RD::S_POINTER::PRODUCER.set(0, rg));
  mmio.write32(CA::S_POINTER::kAddr, CA::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(MA::S_POINTER::kAddr, MA::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(MB::S_POINTER::kAddr, MB::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(CS::S_POINTER::kAddr, CS::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(CD::S_POINTER::kAddr, CD::S_POINTER::PRODUCER.set(0, group));

  program_cacc(mmio, l, plan);
  program_cmac(mmio, l);
  program_csc(mmio, l, plan);
  program_cdma(mmio, l, plan, hw.atom_bytes);
  write_sdp_registers(mmio, sdp, SdpInput::kFlying, hw.atom_bytes);

  // Enable: the consumers first, CDMA (which starts fetching) last.
  mmio.write32(CD::D_PERF_ENABLE::kAddr, CD::D_PERF_ENABLE::DMA_EN.set(0, 1));
  if (sdp_rdma) mmio.write32(RD::D_OP_ENABLE::kAddr, RD::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(S::D_OP_ENABLE::kAddr, S::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(CA::D_OP_ENABLE::kAddr, CA::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(MA::D_OP_ENABLE::kAddr, MA::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(MB::D_OP_ENABLE::kAddr, MB::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(CS::D_OP_ENABLE::kAddr, CS::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(CD::D_OP_ENABLE::kAddr, CD::D_OP_ENABLE::OP_EN_ENABLE);
  return regs::GLB::S_INTR_STATUS::SDP_DONE_STATUS0.lsb + sg;
}

}  // namespace octasim::firmware
