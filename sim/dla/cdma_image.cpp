#include "sim/dla/cdma_image.hpp"

#include <stdexcept>
#include <string>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/dla/conv_functional.hpp"
#include "sim/dla/sdp_functional.hpp"

namespace octasim::dla {
namespace R = octasim::regs;
namespace CD = R::CDMA;
namespace CS = R::CSC;
using models::ops::ConvPrecision;

namespace {

const char* precision_name(ConvPrecision p) {
  switch (p) {
    case ConvPrecision::kInt8:
      return "INT8";
    case ConvPrecision::kInt16:
      return "INT16";
    case ConvPrecision::kFp16:
      break;
  }
  return "FP16";
}

ConvPrecision image_precision(const HwConfig& hw, std::uint32_t field, const char* what) {
  switch (field) {
    case 0:
      if (!hw.dla.feature_int8) throw_not_present(hw, "INT8 image input");
      return ConvPrecision::kInt8;
    case 1:
      if (!hw.dla.feature_int16) throw_not_present(hw, "INT16 image input");
      return ConvPrecision::kInt16;
    case 2:
      throw std::runtime_error(fmt::format("image input: {} FP16 is not supported yet", what));
    default:
      throw std::runtime_error(fmt::format("image input: reserved {} encoding {}", what, field));
  }
}

}  // namespace

bool is_image_input(const RegRead& regs) {
  return CD::D_DATAIN_FORMAT::DATAIN_FORMAT.get(regs(CD::D_DATAIN_FORMAT::kAddr)) ==
         CD::D_DATAIN_FORMAT::DATAIN_FORMAT_PIXEL;
}

CdmaImage decode_cdma_image(const HwConfig& hw, const RegRead& regs) {
  CdmaImage img;
  const std::uint32_t misc = regs(CD::D_MISC_CFG::kAddr);
  if (CD::D_MISC_CFG::CONV_MODE.get(misc) != 0) {
    throw std::runtime_error(
        "image input needs direct convolution, but CDMA CONV_MODE is Winograd");
  }
  if (CS::D_DATAIN_FORMAT::DATAIN_FORMAT.get(regs(CS::D_DATAIN_FORMAT::kAddr)) !=
      CS::D_DATAIN_FORMAT::DATAIN_FORMAT_PIXEL) {
    throw std::runtime_error("convolution: CDMA DATAIN_FORMAT is PIXEL but CSC's is FEATURE");
  }
  if (CD::D_BATCH_NUMBER::BATCHES.get(regs(CD::D_BATCH_NUMBER::kAddr)) != 0) {
    throw std::runtime_error("image input does not support multi-batch (CDMA BATCHES != 0)");
  }

  const std::uint32_t fmt_reg = regs(CD::D_DATAIN_FORMAT::kAddr);
  const std::uint32_t encoding = CD::D_DATAIN_FORMAT::PIXEL_FORMAT.get(fmt_reg);
  const models::ops::PixelFormatInfo* info = models::ops::pixel_format_info(encoding);
  if (info == nullptr) {
    throw std::runtime_error(
        fmt::format("image input: reserved CDMA PIXEL_FORMAT encoding {}", encoding));
  }
  if (info->in_precision == ConvPrecision::kFp16) {
    throw std::runtime_error(
        fmt::format("image input: pixel format {} (FP16) is not supported yet", info->name));
  }
  if (CD::D_DATAIN_FORMAT::PIXEL_MAPPING.get(fmt_reg) !=
      CD::D_DATAIN_FORMAT::PIXEL_MAPPING_PITCH_LINEAR) {
    throw std::runtime_error(
        "image input: CDMA PIXEL_MAPPING is the reserved mapping; only "
        "pitch linear is supported");
  }
  const std::uint32_t offset = regs(CD::D_PIXEL_OFFSET::kAddr);
  if (CD::D_PIXEL_OFFSET::PIXEL_Y_OFFSET.get(offset) != 0) {
    throw std::runtime_error("image input: PIXEL_Y_OFFSET != 0 is not supported yet");
  }

  models::ops::ImageConvert& cvt = img.convert;
  cvt.in_precision =
      image_precision(hw, CD::D_MISC_CFG::IN_PRECISION.get(misc), "CDMA IN_PRECISION");
  cvt.proc_precision =
      image_precision(hw, CD::D_MISC_CFG::PROC_PRECISION.get(misc), "CDMA PROC_PRECISION");
  if (cvt.in_precision != info->in_precision) {
    throw std::runtime_error(fmt::format(
        "image input: CDMA IN_PRECISION is {} but {} pixels are {}",
        precision_name(cvt.in_precision), info->name, precision_name(info->in_precision)));
  }
  cvt.sign_override = CD::D_DATAIN_FORMAT::PIXEL_SIGN_OVERRIDE.get(fmt_reg) ==
                      CD::D_DATAIN_FORMAT::PIXEL_SIGN_OVERRIDE_SIGNED_INT;
  const std::uint32_t cvt_cfg = regs(CD::D_CVT_CFG::kAddr);
  cvt.cvt_enable = CD::D_CVT_CFG::CVT_EN.get(cvt_cfg) == CD::D_CVT_CFG::CVT_EN_ENABLE;
  cvt.cvt_truncate = CD::D_CVT_CFG::CVT_TRUNCATE.get(cvt_cfg);
  cvt.cvt_offset =
      static_cast<std::int16_t>(CD::D_CVT_OFFSET::CVT_OFFSET.get(regs(CD::D_CVT_OFFSET::kAddr)));
  cvt.cvt_scale =
      static_cast<std::int16_t>(CD::D_CVT_SCALE::CVT_SCALE.get(regs(CD::D_CVT_SCALE::kAddr)));
  if (!cvt.cvt_enable && cvt.in_precision != cvt.proc_precision) {
    throw std::runtime_error(fmt::format(
        "image input: {} pixels processed as {} need the CDMA convertor, but CVT_EN is off",
        precision_name(cvt.in_precision), precision_name(cvt.proc_precision)));
  }
  cvt.mean_enable = CD::D_MEAN_FORMAT::MEAN_FORMAT.get(regs(CD::D_MEAN_FORMAT::kAddr)) ==
                    CD::D_MEAN_FORMAT::MEAN_FORMAT_ENABLE;
  const std::uint32_t mean0 = regs(CD::D_MEAN_GLOBAL_0::kAddr);
  const std::uint32_t mean1 = regs(CD::D_MEAN_GLOBAL_1::kAddr);
  cvt.mean = {static_cast<std::int16_t>(CD::D_MEAN_GLOBAL_0::MEAN_RY.get(mean0)),
              static_cast<std::int16_t>(CD::D_MEAN_GLOBAL_0::MEAN_GU.get(mean0)),
              static_cast<std::int16_t>(CD::D_MEAN_GLOBAL_1::MEAN_BV.get(mean1)),
              static_cast<std::int16_t>(CD::D_MEAN_GLOBAL_1::MEAN_AX.get(mean1))};
  const std::uint32_t pad = regs(CD::D_ZERO_PADDING::kAddr);
  cvt.pad_left = CD::D_ZERO_PADDING::PAD_LEFT.get(pad);
  cvt.pad_right = CD::D_ZERO_PADDING::PAD_RIGHT.get(pad);
  cvt.pad_value = static_cast<std::uint16_t>(
      CD::D_ZERO_PADDING_VALUE::PAD_VALUE.get(regs(CD::D_ZERO_PADDING_VALUE::kAddr)));

  models::ops::ImageSurface& s = img.surface;
  s.format = static_cast<models::ops::PixelFormat>(encoding);
  const std::uint32_t size0 = regs(CD::D_DATAIN_SIZE_0::kAddr);
  s.width = CD::D_DATAIN_SIZE_0::DATAIN_WIDTH.get(size0) + 1;
  s.height = CD::D_DATAIN_SIZE_0::DATAIN_HEIGHT.get(size0) + 1;
  s.base0 = read_address(regs, CD::D_DAIN_ADDR_HIGH_0::kAddr, CD::D_DAIN_ADDR_LOW_0::kAddr);
  s.base1 = read_address(regs, CD::D_DAIN_ADDR_HIGH_1::kAddr, CD::D_DAIN_ADDR_LOW_1::kAddr);
  s.line_stride = regs(CD::D_LINE_STRIDE::kAddr);
  s.uv_line_stride = regs(CD::D_LINE_UV_STRIDE::kAddr);
  s.x_offset = CD::D_PIXEL_OFFSET::PIXEL_X_OFFSET.get(offset);
  s.atom_elements = hw.dla.memory_atomic_size;

  const std::uint32_t channels =
      CD::D_DATAIN_SIZE_1::DATAIN_CHANNEL.get(regs(CD::D_DATAIN_SIZE_1::kAddr)) + 1;
  if (channels != info->channels) {
    throw std::runtime_error(
        fmt::format("image input: CDMA DATAIN_CHANNEL is {} but {} pixels have {} channels",
                    channels, info->name, info->channels));
  }
  const std::uint32_t csc_channels =
      CS::D_DATAIN_SIZE_EXT_1::DATAIN_CHANNEL_EXT.get(regs(CS::D_DATAIN_SIZE_EXT_1::kAddr)) + 1;
  if (csc_channels != info->channels) {
    throw std::runtime_error(
        fmt::format("image input: CSC DATAIN_CHANNEL_EXT is {} but {} pixels have {} channels",
                    csc_channels, info->name, info->channels));
  }
  const std::uint32_t wsize0 = regs(CS::D_WEIGHT_SIZE_EXT_0::kAddr);
  if (CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.get(wsize0) != 0) {
    throw std::runtime_error(fmt::format(
        "image input: CSC WEIGHT_WIDTH_EXT is {} but a channel-pre-extended kernel is 1 wide",
        CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.get(wsize0) + 1));
  }
  img.kernel_height = CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_HEIGHT_EXT.get(wsize0) + 1;
  img.kernel_channels =
      CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_CHANNEL_EXT.get(regs(CS::D_WEIGHT_SIZE_EXT_1::kAddr)) + 1;
  if (img.kernel_channels % info->channels != 0) {
    throw std::runtime_error(fmt::format(
        "image input: CSC WEIGHT_CHANNEL_EXT is {}, not a whole number of {}-channel pixels "
        "(not supported)",
        img.kernel_channels, info->channels));
  }
  img.kernel_width = img.kernel_channels / info->channels;
  if (CS::D_POST_Y_EXTENSION::Y_EXTENSION.get(regs(CS::D_POST_Y_EXTENSION::kAddr)) != 0) {
    throw std::runtime_error(
        "image input: channel post-extension (CSC Y_EXTENSION) is not "
        "supported yet");
  }
  const std::uint32_t dil = regs(CS::D_DILATION_EXT::kAddr);
  if (CS::D_DILATION_EXT::X_DILATION_EXT.get(dil) != 0 ||
      CS::D_DILATION_EXT::Y_DILATION_EXT.get(dil) != 0) {
    throw std::runtime_error(
        "image input: NVDLA has no dilation in image mode (CSC DILATION_EXT "
        "must be 0)");
  }
  return img;
}

RegRead image_conv_view(const HwConfig& hw, const RegRead& regs) {
  const CdmaImage img = decode_cdma_image(hw, regs);
  const std::uint32_t channels = models::ops::pixel_format_info(img.surface.format).channels;
  return [regs, img, channels](std::uint32_t addr) -> std::uint32_t {
    const std::uint32_t v = regs(addr);
    switch (addr) {
      case CD::D_DATAIN_FORMAT::kAddr:
        return CD::D_DATAIN_FORMAT::DATAIN_FORMAT.set(v,
                                                      CD::D_DATAIN_FORMAT::DATAIN_FORMAT_FEATURE);
      case CD::D_MISC_CFG::kAddr:
        return CD::D_MISC_CFG::IN_PRECISION.set(v, CD::D_MISC_CFG::PROC_PRECISION.get(v));
      case CS::D_WEIGHT_SIZE_EXT_0::kAddr:
        return CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.set(v, img.kernel_width - 1);
      case CS::D_WEIGHT_SIZE_EXT_1::kAddr:
        return CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_CHANNEL_EXT.set(v, channels - 1);
      case CS::D_DATAIN_SIZE_EXT_0::kAddr:
        return CS::D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.set(v, img.surface.width - 1);
      default:
        return v;
    }
  };
}

OpResult run_conv_image(const HwConfig& hw, const RegRead& regs, const LutTables& sdp_lut,
                        models::ops::Memory& mem) {
  const CdmaImage img = decode_cdma_image(hw, regs);
  const ConvLayer l = decode_conv(hw, image_conv_view(hw, regs));
  const models::ops::SdpConfig sdp = decode_sdp(hw, regs, sdp_lut);
  if (!sdp.flying) {
    throw std::runtime_error("convolution: the SDP group is not in flying mode");
  }

  const models::ops::ConvCube in = models::ops::read_image_cube(img.surface, img.convert, mem);
  const models::ops::ConvWeightLayout layout{hw.dla.mac_atomic_c, hw.dla.mac_atomic_k, l.precision};
  const models::ops::ConvWeights extended = models::ops::read_weights(
      l.weight_base, l.kernels, l.kernel_height, 1, img.kernel_channels, layout, mem);
  const models::ops::ConvWeights w = models::ops::unfold_image_weights(extended, in.channels);
  models::ops::ConvParams p = l.params;
  p.pad_left = 0;  // the image cube holds CDMA's left/right padding
  const unsigned epa = hw.dla.memory_atomic_size / models::ops::conv_element_bytes(l.precision);
  const std::uint32_t padded = (l.kernels + epa - 1) / epa * epa;
  ConvOutput conv;
  conv.add(models::ops::run_conv_int(in, w, p, padded));

  OpResult r = finish_conv(
      hw, l, sdp, conv,
      {SurfaceRegion::linear(img.surface.base0, models::ops::image_fetch_bytes(img.surface))}, regs,
      mem);
  r.in = {img.surface.width, img.surface.height, in.channels};
  return r;
}

}  // namespace octasim::dla
