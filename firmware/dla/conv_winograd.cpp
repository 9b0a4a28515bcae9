#include "firmware/dla/conv_winograd.hpp"

#include <stdexcept>

#include <fmt/core.h>

#include "firmware/dla/conv_detail.hpp"
#include "models/ops/conv_winograd.hpp"

namespace octasim::firmware {
namespace {

using conv_detail::model_precision;

// Bytes from `base`: lets models::ops::write_winograd_weights fill an image.
class ImageMemory final : public models::ops::Memory {
 public:
  explicit ImageMemory(std::size_t size) : bytes_(size, 0) {}
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    for (std::size_t i = 0; i < size; ++i) dst[i] = addr + i < bytes_.size() ? bytes_[addr + i] : 0;
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override {
    for (std::size_t i = 0; i < size; ++i) {
      if (addr + i < bytes_.size()) bytes_[addr + i] = src[i];
    }
  }
  [[nodiscard]] std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

}  // namespace

void check_winograd_layer(const ConvLayer& l, const ConvHardware& hw, const ConvCubeSize& out) {
  if (!hw.winograd) {
    throw FirmwareError("convolution: Winograd needs hardware with Winograd convolution");
  }
  if (l.kernel_width != 3 || l.kernel_height != 3) {
    throw FirmwareError(fmt::format("convolution: Winograd needs 3x3 kernels, not {}x{}",
                                    l.kernel_width, l.kernel_height));
  }
  if (l.stride_x != 1 || l.stride_y != 1 || l.dilation_x != 1 || l.dilation_y != 1) {
    throw FirmwareError(
        "convolution: Winograd needs stride 1 and no dilation (the stride channel extension is "
        "not supported)");
  }
  if (l.compressed) {
    throw FirmwareError("convolution: compressed weights with Winograd are not supported");
  }
  if (l.batches != 1) {
    throw FirmwareError("convolution: multi-batch Winograd is not supported");
  }
  if (l.pra_truncate > 2) {
    throw FirmwareError(
        fmt::format("convolution: PRA truncate {} is outside 0..2", l.pra_truncate));
  }
  if (out.width % 4 != 0 || out.height % 4 != 0 || out.width < 8 || out.height < 8) {
    throw FirmwareError(fmt::format(
        "convolution: a Winograd output must be a multiple of 4 and at least 8 in width and "
        "height, not {}x{}",
        out.width, out.height));
  }
  if (winograd_clip_truncate(l) > 31) {
    throw FirmwareError(fmt::format(
        "convolution: CACC CLIP_TRUNCATE {} (clip truncate + 2 - PRA truncate) is above 31",
        winograd_clip_truncate(l)));
  }
}

std::uint64_t winograd_kernel_bytes(const ConvLayer& l) {
  const models::ops::ConvPrecision p = model_precision(l.precision);
  return std::uint64_t{16} * models::ops::winograd_channels(l.src.channels, p) *
         models::ops::conv_element_bytes(p);
}

unsigned winograd_clip_truncate(const ConvLayer& l) {
  return l.clip_truncate + 2 - std::min(l.pra_truncate, 2u);
}

unsigned choose_pra_truncate(std::uint32_t max_abs_input, Precision precision) {
  const std::uint64_t limit = precision == Precision::kInt8 ? 127 : 32767;
  const std::uint64_t worst = std::uint64_t{4} * max_abs_input;
  for (unsigned t = 0; t < 2; ++t) {
    // The rounding shift of `worst` (half away from zero) must stay within the limit.
    if ((worst + (t == 0 ? 0 : (std::uint64_t{1} << (t - 1)))) >> t <= limit) return t;
  }
  return 2;
}

std::vector<std::uint8_t> conv_winograd_weight_image(const models::ops::ConvWeights& w,
                                                     Precision precision, const ConvHardware& hw) {
  models::ops::ConvWeights u;
  try {
    u = models::ops::winograd_transform_weights(w, model_precision(precision));
  } catch (const std::runtime_error& e) {
    throw FirmwareError(std::string("convolution: ") + e.what());
  }
  return winograd_weight_image(u, precision, hw);
}

std::vector<std::uint8_t> winograd_weight_image(const models::ops::ConvWeights& u,
                                                Precision precision, const ConvHardware& hw) {
  const models::ops::ConvPrecision p = model_precision(precision);
  const std::uint32_t channels = models::ops::winograd_channels(u.channels, p);
  if (u.kernel_width != 4 || u.kernel_height != 4) {
    throw FirmwareError(
        fmt::format("convolution: transformed Winograd weights are 4x4 per channel, not {}x{}",
                    u.kernel_width, u.kernel_height));
  }
  const std::int32_t limit = precision == Precision::kInt8 ? 127 : 32767;
  models::ops::ConvWeights padded(u.kernels, 4, 4, channels);  // zeros beyond u's channels
  for (std::uint32_t k = 0; k < u.kernels; ++k)
    for (std::uint32_t y = 0; y < 4; ++y)
      for (std::uint32_t x = 0; x < 4; ++x)
        for (std::uint32_t c = 0; c < u.channels; ++c) {
          const std::int32_t v = u.at(k, y, x, c);
          if (v < -limit - 1 || v > limit) {
            throw FirmwareError(fmt::format(
                "convolution: transformed Winograd weight {} of kernel {} channel {} does not "
                "fit {}",
                v, k, c, precision == Precision::kInt8 ? "INT8" : "INT16"));
          }
          padded.at(k, y, x, c) = v;
        }
  const models::ops::ConvWeightLayout layout{hw.mac_atomic_c, hw.mac_atomic_k, p};
  ImageMemory mem(static_cast<std::size_t>(
      conv_detail::ceil_div(models::ops::winograd_weight_bytes(padded, layout),
                            conv_detail::kWeightAlign) *
      conv_detail::kWeightAlign));
  (void)models::ops::write_winograd_weights(padded, 0, layout, mem);
  return mem.take();
}

models::ops::ConvResult run_winograd_model(const ConvLayer& l, const ConvModel& m,
                                           const ConvHardware& hw, const models::ops::ConvCube& in,
                                           const models::ops::Memory& mem) {
  const models::ops::ConvPrecision p = model_precision(l.precision);
  const models::ops::ConvWeightLayout layout{hw.mac_atomic_c, hw.mac_atomic_k, p};
  const models::ops::ConvWeights u = models::ops::read_winograd_weights(
      l.weight_address, l.kernels, models::ops::winograd_channels(l.src.channels, p), layout, mem);
  models::ops::ConvParams params = m.params;
  params.clip_truncate = winograd_clip_truncate(l);
  return models::ops::run_conv_winograd(in, u, params, l.pra_truncate, m.out_channels_padded);
}

}  // namespace octasim::firmware
