#include "firmware/dla/conv.hpp"

#include <string>
#include <utility>

#include <fmt/core.h>

#include "firmware/dla/conv_detail.hpp"
#include "firmware/dla/conv_winograd.hpp"
#include "models/ops/conv_fp16.hpp"

namespace octasim::firmware {
namespace {

using conv_detail::ceil_div;
using conv_detail::kWeightAlign;
using conv_detail::model_precision;
using models::ops::ConvPrecision;

}  // namespace

SdpLayer conv_sdp_layer(const ConvLayer& l) {
  SdpLayer s;
  static_cast<SdpStage&>(s) = l.sdp;
  s.precision = l.precision;
  s.src = l.dst;
  s.dst = l.dst;
  s.batches = l.batches;
  s.dst_batch_stride = l.dst_batch_stride;
  return s;
}

ConvModel conv_model(const ConvLayer& l, const ConvHardware& hw) {
  (void)plan_conv(l, hw);
  ConvModel m;
  const ConvPrecision p = model_precision(l.precision);
  m.input.base = l.src.address;
  m.input.line_stride = l.src.line_stride;
  m.input.surface_stride = l.src.surface_stride;
  m.input.width = l.src.width;
  m.input.height = l.src.height;
  m.input.channels = l.src.channels;
  m.input.atom_bytes = hw.atom_bytes;
  m.weight_layout = models::ops::ConvWeightLayout{hw.mac_atomic_c, hw.mac_atomic_k, p};
  m.params.precision = p;
  m.params.stride_x = l.stride_x;
  m.params.stride_y = l.stride_y;
  m.params.dilation_x = l.dilation_x;
  m.params.dilation_y = l.dilation_y;
  m.params.pad_left = l.pad_left;
  m.params.pad_top = l.pad_top;
  const ConvCubeSize out = conv_output_cube(l);
  m.params.out_width = out.width;
  m.params.out_height = out.height;
  m.params.pad_value = l.pad_value;
  m.params.clip_truncate = l.clip_truncate;
  const unsigned epa = channels_per_atom(l.precision, hw.atom_bytes);
  m.out_channels_padded = (l.kernels + epa - 1) / epa * epa;
  m.sdp = sdp_model_config(conv_sdp_layer(l), hw.atom_bytes);
  m.sdp.flying = true;
  return m;
}

ConvGolden run_conv_model(const ConvLayer& l, const ConvHardware& hw, models::ops::Memory& mem) {
  const ConvModel m = conv_model(l, hw);
  if (l.winograd) {
    const models::ops::ConvCube in =
        models::ops::read_feature_cube(m.input, m.params.precision, mem);
    const models::ops::ConvResult conv = run_winograd_model(l, m, hw, in, mem);
    const models::ops::SdpLayerResult sdp = models::ops::run_sdp_layer(m.sdp, mem, &conv.out);
    ConvGolden g;
    g.cacc_saturation = conv.saturated;
    g.sdp_saturation = sdp.stats.out_saturation.value();
    return g;
  }
  const models::ops::ConvWeights w =
      l.compressed
          ? models::ops::read_compressed_weights(
                {l.weight_address, l.compressed->wmb_address, l.compressed->wgs_address,
                 l.compressed->data_bytes,
                 models::ops::wmb_surface_bytes(std::uint64_t{l.kernels} * l.kernel_height *
                                                l.kernel_width * l.src.channels)},
                l.kernels, l.kernel_height, l.kernel_width, l.src.channels, m.weight_layout, mem)
          : models::ops::read_weights(l.weight_address, l.kernels, l.kernel_height, l.kernel_width,
                                      l.src.channels, m.weight_layout, mem);
  ConvGolden g;
  if (l.precision == Precision::kFp16) {  // one batch (plan_conv); CACC's FP32 into SDP
    const models::ops::ConvCube in =
        models::ops::read_feature_cube(m.input, m.params.precision, mem);
    const models::ops::ConvFp16Result conv =
        models::ops::run_conv_fp16(in, w, m.params, m.out_channels_padded, false);
    const models::ops::SdpLayerResult sdp = models::ops::run_sdp_layer(m.sdp, mem, &conv.out);
    g.sdp_saturation = sdp.stats.out_saturation.value();
    return g;
  }
  std::vector<models::ops::ConvCube> outs;
  for (std::uint32_t b = 0; b < l.batches; ++b) {
    models::ops::ConvFeatureSurface input = m.input;
    input.base += std::uint64_t{b} * l.src_batch_stride;
    const models::ops::ConvCube in = models::ops::read_feature_cube(input, m.params.precision, mem);
    models::ops::ConvResult conv =
        models::ops::run_conv_int(in, w, m.params, m.out_channels_padded);
    g.cacc_saturation += conv.saturated;
    outs.push_back(std::move(conv.out));
  }
  const models::ops::SdpLayerResult sdp = models::ops::run_sdp_batches(m.sdp, mem, outs);
  g.sdp_saturation = sdp.stats.out_saturation.value();
  return g;
}

namespace {

// A Memory over a byte vector starting at `base` (bytes outside it read as 0, writes outside it
// are dropped): lets the models/ layout writers fill an image.
class VectorMemory final : public models::ops::Memory {
 public:
  VectorMemory(std::uint64_t base, std::size_t size) : base_(base), bytes_(size, 0) {}
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    for (std::size_t i = 0; i < size; ++i) {
      const std::uint64_t a = addr + i;
      dst[i] = a >= base_ && a - base_ < bytes_.size() ? bytes_[a - base_] : 0;
    }
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override {
    for (std::size_t i = 0; i < size; ++i) {
      const std::uint64_t a = addr + i;
      if (a >= base_ && a - base_ < bytes_.size()) bytes_[a - base_] = src[i];
    }
  }
  [[nodiscard]] std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::uint64_t base_;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace

std::vector<std::uint8_t> conv_weight_image(const models::ops::ConvWeights& w, Precision precision,
                                            const ConvHardware& hw) {
  const models::ops::ConvWeightLayout layout{hw.mac_atomic_c, hw.mac_atomic_k,
                                             model_precision(precision)};
  VectorMemory mem(
      0, static_cast<std::size_t>(ceil_div(layout.bytes(w), kWeightAlign) * kWeightAlign));
  (void)models::ops::write_weights(w, 0, layout, mem);
  return mem.take();
}

models::ops::CompressedWeights conv_compressed_weight_image(const models::ops::ConvWeights& w,
                                                            Precision precision,
                                                            const ConvHardware& hw) {
  const models::ops::ConvWeightLayout layout{hw.mac_atomic_c, hw.mac_atomic_k,
                                             model_precision(precision)};
  const unsigned bpe = models::ops::conv_element_bytes(layout.precision);
  return models::ops::compress_weights(
      conv_weight_image(w, precision, hw),
      models::ops::weight_group_bytes(
          layout, w.kernels, std::uint64_t{w.kernel_height} * w.kernel_width * w.channels * bpe),
      bpe);
}

std::vector<std::uint8_t> conv_feature_image(const models::ops::ConvCube& cube,
                                             const FeatureSurface& s, Precision precision,
                                             unsigned atom_bytes) {
  if (cube.width != s.width || cube.height != s.height || cube.channels != s.channels) {
    throw FirmwareError(
        fmt::format("feature image: a {}x{}x{} cube does not fill a {}x{}x{} "
                    "surface",
                    cube.width, cube.height, cube.channels, s.width, s.height, s.channels));
  }
  check_surface(s, precision, atom_bytes, "feature image");
  VectorMemory mem(s.address, static_cast<std::size_t>(surface_bytes(s, precision, atom_bytes)));
  models::ops::write_feature_cube(cube, conv_model_surface(s, atom_bytes),
                                  model_precision(precision), mem);
  return mem.take();
}

models::ops::ConvFeatureSurface conv_model_surface(const FeatureSurface& s, unsigned atom_bytes) {
  models::ops::ConvFeatureSurface f;
  f.base = s.address;
  f.line_stride = s.line_stride;
  f.surface_stride = s.surface_stride;
  f.width = s.width;
  f.height = s.height;
  f.channels = s.channels;
  f.atom_bytes = atom_bytes;
  return f;
}

}  // namespace octasim::firmware
