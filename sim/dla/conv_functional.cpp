#include "sim/dla/conv_functional.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/core.h>

#include "models/ops/conv_compress.hpp"
#include "models/ops/conv_fp16.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/dla/cdma_image.hpp"
#include "sim/dla/conv_winograd.hpp"
#include "sim/dla/sdp_functional.hpp"

namespace octasim::dla {
namespace R = octasim::regs;
namespace CD = R::CDMA;
namespace CS = R::CSC;
namespace CA = R::CACC;
using models::ops::ConvPrecision;

namespace {

ConvPrecision decode_precision(const HwConfig& hw, std::uint32_t field, const char* what) {
  switch (field) {
    case 0:
      if (!hw.dla.feature_int8) throw_not_present(hw, "INT8 convolution");
      return ConvPrecision::kInt8;
    case 1:
      if (!hw.dla.feature_int16) throw_not_present(hw, "INT16 convolution");
      return ConvPrecision::kInt16;
    case 2:
      if (!hw.dla.feature_fp16) throw_not_present(hw, "FP16 convolution");
      return ConvPrecision::kFp16;
    default:
      throw std::runtime_error(fmt::format("{}: reserved precision encoding {}", what, field));
  }
}

void expect_equal(std::uint32_t got, std::uint32_t want, const char* what, const char* against) {
  if (got != want) {
    throw std::runtime_error(
        fmt::format("convolution: {} is {} but {} says {}", what, got, against, want));
  }
}

std::uint32_t weight_ram_type(const RegRead& regs) {
  return CD::D_WEIGHT_RAM_TYPE::WEIGHT_RAM_TYPE.get(regs(CD::D_WEIGHT_RAM_TYPE::kAddr));
}

// Compressed weights (models/ops/conv_compress.hpp): CSC agrees with CDMA on the format and
// WMB_BYTES; WMB_BYTES is the 128-byte-aligned mask of `elements` weights; WEIGHT_BYTES is the
// compressed data surface (128-byte aligned; the WGS are checked against it when read);
// the WMB takes the last CBUF bank. `l.weight_bytes` becomes everything the weight DMA reads.
void decode_compressed_weights(const HwConfig& hw, const RegRead& regs, std::uint64_t elements,
                               ConvLayer& l) {
  expect_equal(CS::D_WEIGHT_FORMAT::WEIGHT_FORMAT.get(regs(CS::D_WEIGHT_FORMAT::kAddr)), 1,
               "CSC WEIGHT_FORMAT", "CDMA (COMPRESSED)");
  // WGS and WMB come through the weight DMA: its RAM type.
  const std::uint32_t ram = weight_ram_type(regs);
  l.wgs_base = read_address(hw, regs, CD::D_WGS_ADDR_HIGH::kAddr, CD::D_WGS_ADDR_LOW::kAddr, ram);
  l.wmb_base = read_address(hw, regs, CD::D_WMB_ADDR_HIGH::kAddr, CD::D_WMB_ADDR_LOW::kAddr, ram);
  l.wmb_bytes = regs(CD::D_WMB_BYTES::kAddr);
  expect_equal(CS::D_WMB_BYTES::WMB_BYTES.get(regs(CS::D_WMB_BYTES::kAddr)), l.wmb_bytes,
               "CSC WMB_BYTES", "CDMA");
  const std::uint64_t wmb = models::ops::wmb_surface_bytes(elements);
  if (l.wmb_bytes != wmb) {
    throw std::runtime_error(fmt::format(
        "convolution: CDMA WMB_BYTES is {} but the mask bits of {} weights take {} (128-byte "
        "aligned)",
        l.wmb_bytes, elements, wmb));
  }
  l.compressed_bytes = static_cast<std::uint32_t>(l.weight_bytes);
  if (l.compressed_bytes % models::ops::kWeightSurfaceAlign != 0) {
    throw std::runtime_error(fmt::format(
        "convolution: CDMA WEIGHT_BYTES {} of compressed weights is not a multiple of 128",
        l.compressed_bytes));
  }
  const unsigned per_group =
      models::ops::ConvWeightLayout{hw.dla.mac_atomic_c, hw.dla.mac_atomic_k, l.precision}
          .group_kernels();
  const std::uint32_t groups = (l.kernels + per_group - 1) / per_group;
  l.wgs_bytes =
      static_cast<std::uint32_t>(models::ops::wgs_fetch_bytes(groups, hw.dla.memory_atomic_size));
  l.weight_bytes = std::uint64_t{l.compressed_bytes} + l.wmb_bytes + l.wgs_bytes;
  const std::uint32_t bank = regs(CD::D_BANK::kAddr);
  if (CD::D_BANK::DATA_BANK.get(bank) + CD::D_BANK::WEIGHT_BANK.get(bank) + 2 >=
      hw.dla.cbuf_bank_number) {
    throw std::runtime_error(fmt::format(
        "convolution: with compressed weights the data and weight banks must leave the last of "
        "the {} CBUF banks to the WMB",
        hw.dla.cbuf_bank_number));
  }
}

// CDMA D_MISC_CFG (direct convolution, one precision agreed by CDMA, CSC and CACC), the batch
// count and the weight format.
void decode_conv_mode(const HwConfig& hw, const RegRead& regs, ConvLayer& l) {
  const std::uint32_t misc = regs(CD::D_MISC_CFG::kAddr);
  if (CD::D_MISC_CFG::CONV_MODE.get(misc) != 0) {
    if (!hw.dla.winograd) throw_not_present(hw, "Winograd convolution");
    l.winograd = true;
  }
  l.precision =
      decode_precision(hw, CD::D_MISC_CFG::PROC_PRECISION.get(misc), "CDMA PROC_PRECISION");
  if (decode_precision(hw, CD::D_MISC_CFG::IN_PRECISION.get(misc), "CDMA IN_PRECISION") !=
      l.precision) {
    throw std::runtime_error(
        "convolution: CDMA IN_PRECISION differs from PROC_PRECISION "
        "(precision conversion in CDMA is not supported)");
  }
  const std::uint32_t csc_misc = regs(CS::D_MISC_CFG::kAddr);
  const std::uint32_t cacc_misc = regs(CA::D_MISC_CFG::kAddr);
  expect_equal(CS::D_MISC_CFG::PROC_PRECISION.get(csc_misc),
               CD::D_MISC_CFG::PROC_PRECISION.get(misc), "CSC PROC_PRECISION", "CDMA");
  expect_equal(CA::D_MISC_CFG::PROC_PRECISION.get(cacc_misc),
               CD::D_MISC_CFG::PROC_PRECISION.get(misc), "CACC PROC_PRECISION", "CDMA");
  for (std::uint32_t m : {csc_misc, cacc_misc}) {
    if ((CS::D_MISC_CFG::CONV_MODE.get(m) != 0) != l.winograd) {
      throw std::runtime_error(
          fmt::format("convolution: CSC/CACC CONV_MODE differs from CDMA's ({})",
                      l.winograd ? "Winograd" : "direct"));
    }
  }

  l.batches = CD::D_BATCH_NUMBER::BATCHES.get(regs(CD::D_BATCH_NUMBER::kAddr)) + 1;
  if (l.batches > 1) {
    if (!hw.dla.batch) throw_not_present(hw, "multi-batch convolution");
    expect_equal(CS::D_BATCH_NUMBER::BATCHES.get(regs(CS::D_BATCH_NUMBER::kAddr)) + 1, l.batches,
                 "CSC BATCH_NUMBER + 1", "CDMA");
    expect_equal(CA::D_BATCH_NUMBER::BATCHES.get(regs(CA::D_BATCH_NUMBER::kAddr)) + 1, l.batches,
                 "CACC BATCH_NUMBER + 1", "CDMA");
    l.batch_stride = regs(CD::D_BATCH_STRIDE::kAddr);
  }
  l.weight_compressed =
      CD::D_WEIGHT_FORMAT::WEIGHT_FORMAT.get(regs(CD::D_WEIGHT_FORMAT::kAddr)) != 0;
  if (l.weight_compressed && !hw.dla.weight_compression)
    throw_not_present(hw, "compressed weights");
}

// The CDMA input surface (DATAIN_SIZE, address, strides), which CSC's DATAIN_SIZE_EXT repeats.
void decode_input_surface(const HwConfig& hw, const RegRead& regs, ConvLayer& l) {
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

  const std::uint32_t csc_in0 = regs(CS::D_DATAIN_SIZE_EXT_0::kAddr);
  expect_equal(CS::D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.get(csc_in0) + 1, l.input.width,
               "CSC DATAIN_WIDTH_EXT", "CDMA DATAIN_WIDTH");
  expect_equal(CS::D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.get(csc_in0) + 1, l.input.height,
               "CSC DATAIN_HEIGHT_EXT", "CDMA DATAIN_HEIGHT");
  expect_equal(
      CS::D_DATAIN_SIZE_EXT_1::DATAIN_CHANNEL_EXT.get(regs(CS::D_DATAIN_SIZE_EXT_1::kAddr)) + 1,
      l.input.channels, "CSC DATAIN_CHANNEL_EXT", "CDMA DATAIN_CHANNEL");
}

// The kernels (CSC WEIGHT_SIZE_EXT, which CDMA's WEIGHT_SIZE repeats) and the weight surface
// CDMA fetches, plain or compressed.
void decode_weights(const HwConfig& hw, const RegRead& regs, ConvLayer& l) {
  const std::uint32_t wsize0 = regs(CS::D_WEIGHT_SIZE_EXT_0::kAddr);
  const std::uint32_t wsize1 = regs(CS::D_WEIGHT_SIZE_EXT_1::kAddr);
  l.kernel_width = CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.get(wsize0) + 1;
  l.kernel_height = CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_HEIGHT_EXT.get(wsize0) + 1;
  l.kernels = CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_KERNEL.get(wsize1) + 1;
  expect_equal(CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_CHANNEL_EXT.get(wsize1) + 1, l.input.channels,
               "CSC WEIGHT_CHANNEL_EXT", "the input channel count");
  const unsigned bpe = models::ops::conv_element_bytes(l.precision);
  expect_equal(CD::D_WEIGHT_SIZE_0::BYTE_PER_KERNEL.get(regs(CD::D_WEIGHT_SIZE_0::kAddr)) + 1,
               l.kernel_width * l.kernel_height * l.input.channels * bpe, "CDMA BYTE_PER_KERNEL",
               "CSC's kernel size");
  expect_equal(CD::D_WEIGHT_SIZE_1::WEIGHT_KERNEL.get(regs(CD::D_WEIGHT_SIZE_1::kAddr)) + 1,
               l.kernels, "CDMA WEIGHT_KERNEL", "CSC WEIGHT_KERNEL");
  l.weight_base = read_address(hw, regs, CD::D_WEIGHT_ADDR_HIGH::kAddr,
                               CD::D_WEIGHT_ADDR_LOW::kAddr, weight_ram_type(regs));
  l.weight_bytes = regs(CD::D_WEIGHT_BYTES::kAddr);
  const std::uint64_t packed =
      std::uint64_t{l.kernels} * l.kernel_width * l.kernel_height * l.input.channels * bpe;
  if (l.weight_compressed) decode_compressed_weights(hw, regs, packed / bpe, l);
  if (!l.weight_compressed && l.weight_bytes < packed) {
    throw std::runtime_error(fmt::format(
        "convolution: CDMA WEIGHT_BYTES is {} but {} kernels of {}x{}x{} need {}", l.weight_bytes,
        l.kernels, l.kernel_width, l.kernel_height, l.input.channels, packed));
  }
}

// Stride, dilation and padding: CSC sequences the convolution, CDMA repeats its stride and
// left/top padding; CDMA's right/bottom padding bounds the output.
void decode_geometry(const RegRead& regs, ConvLayer& l) {
  models::ops::ConvParams& p = l.params;
  p.precision = l.precision;
  const std::uint32_t stride = regs(CS::D_CONV_STRIDE_EXT::kAddr);
  p.stride_x = CS::D_CONV_STRIDE_EXT::CONV_X_STRIDE_EXT.get(stride) + 1;
  p.stride_y = CS::D_CONV_STRIDE_EXT::CONV_Y_STRIDE_EXT.get(stride) + 1;
  const std::uint32_t cdma_stride = regs(CD::D_CONV_STRIDE::kAddr);
  expect_equal(CD::D_CONV_STRIDE::CONV_X_STRIDE.get(cdma_stride) + 1, p.stride_x,
               "CDMA CONV_X_STRIDE", "CSC");
  expect_equal(CD::D_CONV_STRIDE::CONV_Y_STRIDE.get(cdma_stride) + 1, p.stride_y,
               "CDMA CONV_Y_STRIDE", "CSC");
  const std::uint32_t dil = regs(CS::D_DILATION_EXT::kAddr);
  p.dilation_x = CS::D_DILATION_EXT::X_DILATION_EXT.get(dil) + 1;
  p.dilation_y = CS::D_DILATION_EXT::Y_DILATION_EXT.get(dil) + 1;
  const std::uint32_t pad = regs(CS::D_ZERO_PADDING::kAddr);
  p.pad_left = CS::D_ZERO_PADDING::PAD_LEFT.get(pad);
  p.pad_top = CS::D_ZERO_PADDING::PAD_TOP.get(pad);
  const std::uint32_t cdma_pad = regs(CD::D_ZERO_PADDING::kAddr);
  expect_equal(CD::D_ZERO_PADDING::PAD_LEFT.get(cdma_pad), p.pad_left, "CDMA PAD_LEFT", "CSC");
  expect_equal(CD::D_ZERO_PADDING::PAD_TOP.get(cdma_pad), p.pad_top, "CDMA PAD_TOP", "CSC");
  l.pad_right = CD::D_ZERO_PADDING::PAD_RIGHT.get(cdma_pad);
  l.pad_bottom = CD::D_ZERO_PADDING::PAD_BOTTOM.get(cdma_pad);
  // PADDING_VALUE is 16 bits; the data path takes the element's width of it (INT8: the low
  // byte, sign-extended) — what NVDLA's dc traces' CRCs require; FP16: the 16 bits as FP16.
  const std::uint32_t pad_value =
      CS::D_ZERO_PADDING_VALUE::PAD_VALUE.get(regs(CS::D_ZERO_PADDING_VALUE::kAddr));
  p.pad_value = l.precision == ConvPrecision::kInt8
                    ? std::int32_t{static_cast<std::int8_t>(pad_value & 0xffu)}
                    : std::int32_t{static_cast<std::int16_t>(pad_value)};
}

// The output cube: CSC DATAOUT_SIZE, consistent with the geometry and repeated by CACC; CACC's
// truncation.
void decode_output(const RegRead& regs, ConvLayer& l) {
  models::ops::ConvParams& p = l.params;
  const std::uint32_t out0 = regs(CS::D_DATAOUT_SIZE_0::kAddr);
  p.out_width = CS::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.get(out0) + 1;
  p.out_height = CS::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.get(out0) + 1;
  expect_equal(p.out_width,
               models::ops::conv_output_size(l.input.width, p.pad_left, l.pad_right, l.kernel_width,
                                             p.dilation_x, p.stride_x),
               "CSC DATAOUT_WIDTH", "the input, padding, kernel and stride");
  expect_equal(p.out_height,
               models::ops::conv_output_size(l.input.height, p.pad_top, l.pad_bottom,
                                             l.kernel_height, p.dilation_y, p.stride_y),
               "CSC DATAOUT_HEIGHT", "the input, padding, kernel and stride");
  expect_equal(CS::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.get(regs(CS::D_DATAOUT_SIZE_1::kAddr)) + 1,
               l.kernels, "CSC DATAOUT_CHANNEL", "CSC WEIGHT_KERNEL");
  const std::uint32_t cacc0 = regs(CA::D_DATAOUT_SIZE_0::kAddr);
  expect_equal(CA::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.get(cacc0) + 1, p.out_width,
               "CACC DATAOUT_WIDTH", "CSC");
  expect_equal(CA::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.get(cacc0) + 1, p.out_height,
               "CACC DATAOUT_HEIGHT", "CSC");
  expect_equal(CA::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.get(regs(CA::D_DATAOUT_SIZE_1::kAddr)) + 1,
               l.kernels, "CACC DATAOUT_CHANNEL", "CSC");
  p.clip_truncate = CA::D_CLIP_CFG::CLIP_TRUNCATE.get(regs(CA::D_CLIP_CFG::kAddr));
}

// The convolution buffer: the data/weight bank split, and that the whole input and one kernel
// group's weights fit in it; then CSC's D_ATOMICS and D_RELEASE.
void decode_cbuf(const HwConfig& hw, const RegRead& regs, ConvLayer& l) {
  const std::uint32_t bank = regs(CD::D_BANK::kAddr);
  l.data_banks = CD::D_BANK::DATA_BANK.get(bank) + 1;
  l.weight_banks = CD::D_BANK::WEIGHT_BANK.get(bank) + 1;
  if (l.data_banks + l.weight_banks > hw.dla.cbuf_bank_number) {
    throw std::runtime_error(
        fmt::format("convolution: {} data banks + {} weight banks exceed the {} CBUF banks of {}",
                    l.data_banks, l.weight_banks, hw.dla.cbuf_bank_number, hw.name));
  }
  l.entries_per_slice = CD::D_ENTRY_PER_SLICE::ENTRIES.get(regs(CD::D_ENTRY_PER_SLICE::kAddr)) + 1;
  // The whole input must sit in the data banks (partial-input convolution, where CSC releases
  // slices while CDMA refills them, is not modelled), and one kernel group's weights in the
  // weight banks.
  // Multi-batch: every batch's input (programming guide: ceil(BATCH_NUMBER * entry_per_slice * H
  // / depth) <= BANKS_FOR_DATA).
  const std::uint64_t data_entries =
      std::uint64_t{l.entries_per_slice} * l.input.height * l.batches;
  if (data_entries > std::uint64_t{l.data_banks} * hw.dla.cbuf_bank_depth) {
    throw std::runtime_error(fmt::format(
        "convolution: the input needs {} CBUF entries ({} per line x {} lines x {} batches) but "
        "{} data banks hold {} (partial-input convolution is not supported)",
        data_entries, l.entries_per_slice, l.input.height, l.batches, l.data_banks,
        l.data_banks * hw.dla.cbuf_bank_depth));
  }
  const unsigned bpe = models::ops::conv_element_bytes(l.precision);
  const std::uint64_t group_bytes =
      std::uint64_t{std::min(
          l.kernels,
          models::ops::ConvWeightLayout{hw.dla.mac_atomic_c, hw.dla.mac_atomic_k, l.precision}
              .group_kernels())} *
      (l.winograd ? 16 * l.weight_channels : l.kernel_width * l.kernel_height * l.input.channels) *
      bpe;
  const std::uint64_t weight_space =
      std::uint64_t{l.weight_banks} * hw.dla.cbuf_bank_depth * hw.dla.cbuf_bank_width;
  if (group_bytes > weight_space) {
    throw std::runtime_error(fmt::format(
        "convolution: one kernel group's weights take {} bytes but {} weight banks hold {}",
        group_bytes, l.weight_banks, weight_space));
  }
  l.atomics = CS::D_ATOMICS::ATOMICS.get(regs(CS::D_ATOMICS::kAddr)) + 1;
  l.release_slices = CS::D_RELEASE::RLS_SLICES.get(regs(CS::D_RELEASE::kAddr)) + 1;
}

}  // namespace

ConvLayer decode_conv(const HwConfig& hw, const RegRead& regs) {
  // Image input: the same decode over the registers seen as the equivalent R x S x C direct
  // convolution (cdma_image.hpp validates the image fields and presents that view).
  if (is_image_input(regs)) {
    if (hw.dla.weight_compression &&
        CD::D_WEIGHT_FORMAT::WEIGHT_FORMAT.get(regs(CD::D_WEIGHT_FORMAT::kAddr)) != 0) {
      throw std::runtime_error("compressed weights with image input are not supported yet");
    }
    return decode_conv(hw, image_conv_view(hw, regs));
  }
  // In this order, which fixes which error a badly programmed layer reports first.
  ConvLayer l;
  decode_conv_mode(hw, regs, l);
  if (l.winograd) {  // conv_winograd.cpp: the input, weights and output differ
    decode_geometry(regs, l);
    decode_winograd(hw, regs, l);
    decode_cbuf(hw, regs, l);
    return l;
  }
  decode_input_surface(hw, regs, l);
  decode_weights(hw, regs, l);
  decode_geometry(regs, l);
  decode_output(regs, l);
  decode_cbuf(hw, regs, l);
  return l;
}

OpResult finish_conv(const HwConfig& hw, const ConvLayer& l, const models::ops::SdpConfig& sdp,
                     const ConvOutput& conv, const std::vector<SurfaceRegion>& inputs,
                     const RegRead& regs, models::ops::Memory& mem) {
  if (sdp.batches != l.batches) {
    throw std::runtime_error(
        fmt::format("convolution: SDP BATCH_NUMBER + 1 is {} but the convolution runs {} batches",
                    sdp.batches, l.batches));
  }
  // SDP's output to PDP on the fly: one cube (run_sdp_op refuses more batches).
  OpResult r = sdp.output_to_pdp
                   ? run_sdp_op(sdp, mem, &conv.batches.front(), regs)
                   : sdp_result(sdp, models::ops::run_sdp_batches(sdp, mem, conv.batches), regs);
  r.status.emplace_back(R::CACC::D_OUT_SATURATION::kAddr, conv.saturated);
  r.in = {l.input.width, l.input.height, l.input.channels};
  r.out = {l.params.out_width, l.params.out_height, l.kernels};
  r.kernel_width = l.kernel_width;
  r.kernel_height = l.kernel_height;
  r.stride_width = l.params.stride_x;
  r.stride_height = l.params.stride_y;
  r.weight_bytes = l.weight_bytes;
  r.bytes_read += l.weight_bytes;
  for (const SurfaceRegion& input : inputs) r.bytes_read += input.bytes();
  r.dma.input = inputs;
  r.dma.weights = {SurfaceRegion::linear(l.weight_base, l.weight_bytes)};
  // The flying SDP's operand streams (bias tables, an element-wise operand such as a residual).
  r.dma.operands = sdp_surfaces(sdp).operands;
  for (std::uint32_t b = 0; b < l.batches; ++b) {
    for (const SurfaceRegion& out : sdp_surfaces(models::ops::sdp_batch(sdp, b)).output) {
      r.dma.output.push_back(out);
    }
  }
  r.descriptor = std::make_shared<ConvDescriptor>(l);
  r.macs = conv.macs;
  r.macs_per_cycle =
      hw.dla.mac_atomic_c *
      models::ops::ConvWeightLayout{hw.dla.mac_atomic_c, hw.dla.mac_atomic_k, l.precision}
          .group_kernels();
  return r;
}

OpResult run_conv(const HwConfig& hw, const RegRead& regs, const LutTables& sdp_lut,
                  models::ops::Memory& mem) {
  if (is_image_input(regs)) return run_conv_image(hw, regs, sdp_lut, mem);
  if (is_winograd(regs)) return run_conv_winograd_layer(hw, regs, sdp_lut, mem);
  const ConvLayer l = decode_conv(hw, regs);
  const models::ops::SdpConfig sdp = decode_sdp(hw, regs, sdp_lut);
  if (!sdp.flying) {
    throw std::runtime_error("convolution: the SDP group is not in flying mode");
  }

  const models::ops::ConvWeightLayout layout{hw.dla.mac_atomic_c, hw.dla.mac_atomic_k, l.precision};
  const models::ops::ConvWeights w =
      l.weight_compressed
          ? models::ops::read_compressed_weights(
                {l.weight_base, l.wmb_base, l.wgs_base, l.compressed_bytes, l.wmb_bytes}, l.kernels,
                l.kernel_height, l.kernel_width, l.input.channels, layout, mem)
          : models::ops::read_weights(l.weight_base, l.kernels, l.kernel_height, l.kernel_width,
                                      l.input.channels, layout, mem);
  const unsigned epa = hw.dla.memory_atomic_size / models::ops::conv_element_bytes(l.precision);
  const std::uint32_t padded = (l.kernels + epa - 1) / epa * epa;
  const bool fp16 = l.precision == ConvPrecision::kFp16;
  if (fp16 != (sdp.proc_precision == models::ops::SdpPrecision::kFp16)) {
    throw std::runtime_error(fmt::format(
        "convolution: SDP PROC_PRECISION must be FP16 exactly when the convolution is FP16 "
        "(CACC delivers {} to SDP)",
        fp16 ? "FP32" : "INT32"));
  }
  ConvOutput conv;
  models::ops::ConvFp16Stats fp16_stats;
  std::vector<SurfaceRegion> inputs;
  const std::uint32_t in_surfaces = (l.input.channels + epa - 1) / epa;
  for (std::uint32_t b = 0; b < l.batches; ++b) {
    const models::ops::ConvFeatureSurface surface = l.batch_input(b);
    const models::ops::ConvCube in = models::ops::read_feature_cube(surface, l.precision, mem);
    if (fp16) {
      const bool nan_to_zero =
          CD::D_NAN_FLUSH_TO_ZERO::NAN_TO_ZERO.get(regs(CD::D_NAN_FLUSH_TO_ZERO::kAddr)) != 0;
      models::ops::ConvFp16Result f =
          models::ops::run_conv_fp16(in, w, l.params, padded, nan_to_zero);
      conv.add({std::move(f.out), 0, f.macs});
      fp16_stats.nan_data += f.stats.nan_data;
      fp16_stats.inf_data += f.stats.inf_data;
      // The weights are read once for every batch.
      fp16_stats.nan_weight = f.stats.nan_weight;
      fp16_stats.inf_weight = f.stats.inf_weight;
    } else {
      conv.add(models::ops::run_conv_int(in, w, l.params, padded));
    }
    inputs.push_back(
        feature_region(surface.base, std::uint64_t{l.input.width} * hw.dla.memory_atomic_size,
                       l.input.height, in_surfaces, l.input.line_stride, l.input.surface_stride));
  }
  OpResult r = finish_conv(hw, l, sdp, conv, inputs, regs, mem);
  if (fp16) {
    r.status.emplace_back(R::CDMA::D_NAN_INPUT_DATA_NUM::kAddr, fp16_stats.nan_data);
    r.status.emplace_back(R::CDMA::D_INF_INPUT_DATA_NUM::kAddr, fp16_stats.inf_data);
    r.status.emplace_back(R::CDMA::D_NAN_INPUT_WEIGHT_NUM::kAddr, fp16_stats.nan_weight);
    r.status.emplace_back(R::CDMA::D_INF_INPUT_WEIGHT_NUM::kAddr, fp16_stats.inf_weight);
  }
  return r;
}

}  // namespace octasim::dla
