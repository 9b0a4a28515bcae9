// The SDP and PPU layers of the network compiler (builder.hpp): a memory-to-memory SDP layer
// (ReLU, BatchNormalization, Add/Mul, Clip, LeakyRelu), QuantizeLinear and DequantizeLinear, the
// flying FP16 stage of a convolution, a layer followed by an element-wise constant (a matrix Gemm
// C, FP16 average pooling that excludes padding), constants as FP16 surfaces, and Softmax on the
// PPU.
#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "firmware/dla/sdp_quantize.hpp"
#include "firmware/net/builder.hpp"
#include "firmware/ppu/commands.hpp"
#include "models/numerics/float_format.hpp"

namespace octasim::firmware::net::detail {

PpuSoftmaxLayer Builder::lower_softmax(const PlannedLayer& l, const NetTensor& in,
                                       const NetTensor& dst, const std::string& who) {
  if (!fp16()) {
    throw GraphError(
        fmt::format("{}: the PPU's softmax runs on FP16 tensors (--precision fp16)", who));
  }
  namespace F = ppu_format;
  PpuSoftmaxLayer p;
  p.src = in.surface;
  p.dst = dst.surface;
  p.axis = l.softmax.axis;
  const F::Descriptor d = F::softmax_descriptor(
      F::SurfacePlace{in.surface.address, in.surface.line_stride, in.surface.surface_stride},
      F::SurfacePlace{dst.surface.address, dst.surface.line_stride, dst.surface.surface_stride},
      in.surface.width, in.surface.height, in.surface.channels, atom(),
      static_cast<F::SoftmaxAxis>(l.softmax.axis));
  const PpuLaunch launch = ppu_launch(who + " softmax", d);
  p.push_buffer = launch.push_buffer;
  p.push_buffer_bytes = launch.push_buffer_bytes;
  p.channel = launch.channel;
  return p;
}

SdpStage Builder::fp16_stage(const std::vector<double>& bias, const ConvAttrs& a,
                             const std::string& who) {
  SdpStage s;
  if (std::any_of(bias.begin(), bias.end(), [](double b) { return b != 0.0; })) {
    const std::vector<float> b(bias.begin(), bias.end());
    s.bias = SdpPerChannel{constant(who + " bias", sdp_fp16_table(b, atom())), 0};
  }
  s.relu = a.relu;
  if (a.clip_max > 0.0) {
    s.clamp_max =
        static_cast<std::int16_t>(models::fp16_from_float(static_cast<float>(a.clip_max)));
  }
  return s;
}

SdpLayer Builder::lower_sdp(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                            const std::string& who) {
  const SdpAttrs& a = l.sdp;
  if (a.convert == SdpAttrs::Convert::kQuantize) return lower_quantize(l, in, dst, who);
  if (a.clip_lo || a.clip_hi || a.leaky_slope) return lower_clip_leaky(l, in, dst, who);
  SdpLayer s;
  s.precision = elem();
  s.src = in.surface;
  s.dst = dst.surface;
  s.relu = a.relu;
  if (integer_ && (!a.mul.empty() || !a.add.empty() || a.ew != EwOp::kNone)) {
    throw GraphError(fmt::format(
        "{}: integer Add/Mul are not lowered (ONNX's uint8/int8 arithmetic wraps modulo 256, "
        "SDP saturates)",
        who));
  }
  if (!fp16() && (!a.mul.empty() || !a.add.empty() || a.ew != EwOp::kNone)) {
    return lower_sdp_quantized(l, in, dst, who);
  }
  if (!a.mul.empty() || !a.add.empty()) {
    // BS computes (x + b) * m: x * mul + add = (x + add / mul) * mul. A padded layout's unused
    // channels: x * 1 + 0.
    const std::size_t logical = std::max(a.mul.size(), a.add.size());
    const std::vector<double> mul_c =
        spread(a.mul.empty() ? std::vector<double>(logical, 1.0) : a.mul, dst, 1.0);
    const std::vector<double> add_c =
        spread(a.add.empty() ? std::vector<double>(logical, 0.0) : a.add, dst, 0.0);
    const std::size_t k = mul_c.size();
    std::vector<float> m(k, 1.0F), b(k, 0.0F);
    for (std::size_t c = 0; c < k; ++c) {
      const double mul = mul_c[c];
      const double add = add_c[c];
      if (mul == 0.0 && add != 0.0) {
        throw GraphError(
            fmt::format("{}: channel {} multiplies by 0 and adds {} (SDP adds "
                        "before it multiplies)",
                        who, c, add));
      }
      m[c] = static_cast<float>(mul);
      b[c] = mul == 0.0 ? 0.0F : static_cast<float>(add / mul);
    }
    s.bias_scale =
        SdpBiasScale{constant(who + " bias/scale", sdp_fp16_bias_scale_table(b, m, atom())), 0, 0};
  }
  if (a.ew != EwOp::kNone) {
    SdpElementwise e;
    e.op = a.ew == EwOp::kAdd   ? SdpEwOp::kAdd
           : a.ew == EwOp::kMul ? SdpEwOp::kMul
                                : SdpEwOp::kPrelu;
    e.unit = ew_unit(a.relu, who);  // a ReLU after the operation: BN's
    if (a.operand_per_channel) {
      // BN's multiplier takes the scale from NRDMA, one FP16 value per channel (PER_KERNEL).
      e.unit = channel_operand_unit(who);
      e.per_channel = true;
      e.surface = tensor(a.operand).surface;
    } else {
      e.surface = g_.is_constant(a.operand) ? constant_surface(a.operand, dst, who)
                                            : tensor(a.operand).surface;
    }
    s.ew = e;
  }
  (void)sdp_model_config(s, atom());  // checks
  return s;
}

SdpLayer Builder::lower_clip_leaky(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                                   const std::string& who) {
  const SdpAttrs& a = l.sdp;
  SdpLayer s;
  s.precision = elem();
  s.src = in.surface;
  s.dst = dst.surface;
  s.relu = a.relu;
  const bool codes = !fp16();
  if (codes && dst.quant.step() != in.quant.step()) {
    throw GraphError(
        fmt::format("{}: the output's step {:g} differs from the input's {:g} (a Clip "
                    "or LeakyRelu keeps the input's codes)",
                    who, dst.quant.step(), in.quant.step()));
  }
  // A bound as the register operand: FP16, its FP16 bit pattern (FP16 rounding is monotone, so
  // max(x, fp16(lo)) = fp16(max(x, lo)) for every FP16 x); codes, round(bound / step), which is
  // exact on codes q: round(max(q step, lo) / step) = max(q, round(lo / step)). INT16's range
  // holds every code.
  const auto bound = [&](double v) {
    if (!codes) return static_cast<std::int16_t>(models::fp16_from_float(static_cast<float>(v)));
    return static_cast<std::int16_t>(
        std::clamp(std::round(v / in.quant.step()), -32768.0, 32767.0));
  };
  if (a.clip_lo) s.clamp_min = bound(*a.clip_lo);
  if (a.clip_hi) {
    if (!hw_.dla.sdp_bn) {
      throw GraphError(fmt::format(
          "{}: {} SDP has no BN unit for the Clip's upper bound (BN's ALU MIN)", who, hw_.name));
    }
    s.clamp_max = bound(*a.clip_hi);
  }
  if (a.leaky_slope) {
    const double slope = *a.leaky_slope;
    if (!codes) {
      s.prelu = SdpRegisterScale{
          static_cast<std::int16_t>(models::fp16_from_float(static_cast<float>(slope))), 0};
    } else {
      // The slope as value / 2^shift with the most fraction bits INT16 holds: the output, the
      // input's codes, is round(q value / 2^shift) for q < 0, off from round(q slope) only where
      // q slope is within |q| 2^-(shift+1) of a half.
      if (!(std::abs(slope) <= 1.0)) {
        throw GraphError(fmt::format(
            "{}: LeakyRelu alpha {:g}: quantized, its output keeps the input's codes, so |alpha| "
            "must be at most 1 (--precision fp16 runs it)",
            who, slope));
      }
      unsigned shift = 0;
      while (shift < 30 && std::abs(std::round(slope * std::ldexp(1.0, shift + 1))) <= 32767.0) {
        ++shift;
      }
      s.prelu = SdpRegisterScale{
          static_cast<std::int16_t>(std::round(slope * std::ldexp(1.0, shift))), shift};
    }
  }
  (void)sdp_model_config(s, atom());  // checks
  return s;
}

void Builder::lower_conv_matrix_bias(const PlannedLayer& l, const NetTensor& in,
                                     const NetTensor& dst, NetLayer& out) {
  if (!fp16()) {
    throw GraphError(
        fmt::format("{}: a Gemm C that is not one value per output runs at fp16 "
                    "only",
                    out.nodes));
  }
  const std::uint64_t bytes = surface_bytes(dst.surface, elem(), atom());
  NetTensor scratch = dst;
  scratch.surface.address = activations_.allocate(bytes);
  NetLayer conv = out;
  conv.hw = lower_conv(l, in, scratch, conv);
  std::vector<float> c = broadcast(g_.initializers.at(l.conv.matrix_bias), dst.shape, out.nodes);
  for (float& v : c) v = static_cast<float>(l.conv.beta * double{v});
  push_with_operand(std::move(conv), scratch.surface, dst, c, dst, SdpEwOp::kAdd, " (+ beta C)");
}

void Builder::push_with_operand(NetLayer first, const FeatureSurface& scratch, const NetTensor& dst,
                                const std::vector<float>& values, const NetTensor& like, SdpEwOp op,
                                const std::string& suffix) {
  SdpLayer s;
  s.precision = elem();
  s.src = scratch;
  s.dst = dst.surface;
  SdpElementwise e;
  e.op = op;
  e.surface = values_surface(values, like, first.nodes + suffix);
  s.ew = e;
  (void)sdp_model_config(s, atom());
  NetLayer second = first;
  second.engine = "SDP";
  second.nodes = first.nodes + suffix;
  second.input = second.output = dst.name;
  second.hw = s;
  second.macs = 0;
  push_layer(std::move(first));
  prog_.layers.push_back(std::move(second));
  activations_.release(scratch.address, surface_bytes(dst.surface, elem(), atom()));
}

SdpLayer Builder::lower_quantize(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                                 const std::string& who) {
  if (!fp16()) {
    throw GraphError(fmt::format("{}: QuantizeLinear runs on FP16 input (--precision fp16)", who));
  }
  const SdpAttrs& a = l.sdp;
  SdpLayer s;
  s.precision = Precision::kFp16;
  s.out_precision = Precision::kInt16;
  s.src = in.surface;
  s.dst = dst.surface;
  try {
    if (a.scale.size() == 1) {
      s.quantize = sdp_quantize_per_tensor(static_cast<float>(a.scale[0]),
                                           static_cast<float>(a.zero_point[0]), a.lo, a.hi);
    } else {
      const std::vector<double> scale = spread(a.scale, in, 1.0);
      const std::vector<double> zero_point = spread(a.zero_point, in, 0.0);
      const std::vector<float> sc(scale.begin(), scale.end());
      const std::vector<float> zp(zero_point.begin(), zero_point.end());
      const SdpQuantizeTables t = sdp_quantize_tables(sc, zp, a.lo, a.hi, atom());
      s.quantize = sdp_quantize_per_channel(constant(who + " 1/scale", t.bs),
                                            constant(who + " zero points", t.zero_point), a.lo);
    }
  } catch (const FirmwareError& e) {
    throw GraphError(fmt::format("{}: {}", who, e.what()));
  }
  (void)sdp_model_config(s, atom());
  return s;
}

void Builder::lower_dequantize(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                               NetLayer& out) {
  if (!integer_) {
    throw GraphError(
        fmt::format("{}: DequantizeLinear of a tensor the network computes is not "
                    "supported (its input must be the integer graph input)",
                    out.nodes));
  }
  const SdpAttrs& a = l.sdp;
  const std::uint64_t bytes = surface_bytes(dst.surface, Precision::kFp16, atom());
  FeatureSurface scratch = dst.surface;
  scratch.address = activations_.allocate(bytes);
  const bool per_tensor = a.zero_point.size() == 1;
  SdpLayer shift = sdp_dequantize_layer(
      in.surface, scratch, per_tensor ? static_cast<std::int32_t>(a.zero_point[0]) : 0, 1, 0);
  if (!per_tensor) {
    std::vector<std::int16_t> alu, mul(a.zero_point.size(), 1);
    for (double z : a.zero_point) alu.push_back(static_cast<std::int16_t>(-z));
    shift.bias_scale =
        SdpBiasScale{constant(out.nodes + " zero points",
                              sdp_bias_scale_table(alu, mul, Precision::kInt16, atom())),
                     0, 0};
  }
  (void)sdp_model_config(shift, atom());
  SdpLayer scale;
  scale.precision = Precision::kFp16;
  scale.src = scratch;
  scale.dst = dst.surface;
  const std::uint32_t channels = dst.surface.channels;
  std::vector<float> s(channels);
  for (std::uint32_t c = 0; c < channels; ++c) {
    s[c] = static_cast<float>(a.scale[a.scale.size() == 1 ? 0 : c]);
  }
  scale.scale = SdpPerChannel{constant(out.nodes + " scales", sdp_fp16_table(s, atom())), 0};
  (void)sdp_model_config(scale, atom());
  NetLayer first = out;
  first.nodes = out.nodes + " (q - zero point)";
  first.hw = shift;
  NetLayer second = out;
  second.nodes = out.nodes + " (x scale)";
  second.hw = scale;
  prog_.layers.push_back(std::move(first));
  prog_.layers.push_back(std::move(second));
  activations_.release(scratch.address, bytes);
}

FeatureSurface Builder::constant_surface(const std::string& name, const NetTensor& like,
                                         const std::string& who) {
  return values_surface(broadcast(g_.initializers.at(name), like.shape, who), like,
                        who + " operand '" + name + "'");
}

FeatureSurface Builder::values_surface(const std::vector<float>& v, const NetTensor& like,
                                       const std::string& what) {
  FeatureSurface s = like.surface;
  models::ops::ConvCube cube(s.width, s.height, s.channels);
  for (std::size_t i = 0; i < v.size(); ++i) {
    cube.data[tensor_cube_index(like, cube, i)] = models::fp16_from_float(v[i]);
  }
  s.address = constant(what, conv_feature_image(cube, s, Precision::kFp16, atom()));
  return s;
}

}  // namespace octasim::firmware::net::detail
