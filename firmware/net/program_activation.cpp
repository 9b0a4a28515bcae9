// Lowering of the unary activations (activation.hpp says what runs where): the EW stage's LUT at
// INT8, HardSigmoid's affine map without a LUT, and the FP16 recipes.
#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "firmware/net/activation.hpp"
#include "firmware/net/builder.hpp"
#include "models/numerics/float_format.hpp"

namespace octasim::firmware::net {
namespace {

// The FP16 operands of the HardSigmoid layer: BS computes (x + b) * m.
struct HardSigmoidOperands {
  float bias = 0.0F, scale = 1.0F;  // beta / alpha and alpha, as the table rounds them to FP16
};

HardSigmoidOperands hard_sigmoid_operands(const Unary& u) {
  const auto round16 = [](double v) {
    return models::fp16_to_float(models::fp16_from_float(static_cast<float>(v)));
  };
  return {round16(u.beta / u.alpha), round16(u.alpha)};
}

double table_bound(const Unary& u) {
  static const double sigmoid = sdp_lut_int16(Unary{UnaryFunction::kSigmoid}, std::ldexp(1.0, -11),
                                              std::ldexp(1.0, -kFp16LutOutputExponent))
                                    .error_bound;
  static const double tanh = sdp_lut_int16(Unary{UnaryFunction::kTanh}, std::ldexp(1.0, -12),
                                           std::ldexp(1.0, -kFp16LutOutputExponent))
                                 .error_bound;
  static const double erf = sdp_lut_int16(Unary{UnaryFunction::kErf}, std::ldexp(1.0, -12),
                                          std::ldexp(1.0, -kFp16LutOutputExponent))
                                .error_bound;
  static const double phi = sdp_lut_int16(Unary{UnaryFunction::kNormalCdf}, std::ldexp(1.0, -12),
                                          std::ldexp(1.0, -kFp16LutOutputExponent))
                                .error_bound;
  return u.function == UnaryFunction::kTanh        ? tanh
         : u.function == UnaryFunction::kErf       ? erf
         : u.function == UnaryFunction::kNormalCdf ? phi
                                                   : sigmoid;
}

// |BS/BN's FP32 hard sigmoid - (alpha x + beta)| before the output's rounding (the clamps to
// [0, 1] only shrink it).
double hard_sigmoid_error(const Unary& u, double x) {
  const HardSigmoidOperands o = hard_sigmoid_operands(u);
  const double t = std::abs(x + double{o.bias});
  const double m = double{o.scale};
  return t * (std::abs(m - u.alpha) + std::ldexp(std::abs(m), -23)) +
         std::abs(u.alpha) * std::abs(double{o.bias} - u.beta / u.alpha);
}

}  // namespace

Unary lut_factor(const Unary& u) {
  if (u.function == UnaryFunction::kSilu) return Unary{UnaryFunction::kSigmoid};
  if (u.function == UnaryFunction::kGelu) return Unary{UnaryFunction::kNormalCdf};
  return u;
}

int fp16_lut_input_exponent(const Unary& u) {
  return u.function == UnaryFunction::kTanh || u.function == UnaryFunction::kErf ||
                 u.function == UnaryFunction::kNormalCdf
             ? 12
             : 11;
}

double activation_lipschitz(const Unary& u) {
  switch (u.function) {
    case UnaryFunction::kSigmoid:
      return 0.25;
    case UnaryFunction::kTanh:
      return 1.0;
    case UnaryFunction::kHardSigmoid:
      return std::abs(u.alpha);
    case UnaryFunction::kHardSwish:
      // 2 alpha x + beta where alpha x + beta is in [0, 1], 1 above, 0 below.
      return std::max({1.0, std::abs(u.beta), std::abs(2.0 - u.beta)});
    case UnaryFunction::kSilu:
      return 1.1;  // sup |s(x)(1 + x(1 - s(x)))| = 1.0998
    case UnaryFunction::kErf:
      return 2.0 / std::sqrt(std::acos(-1.0));
    case UnaryFunction::kGelu:
      return 1.13;  // sup |Phi(x) + x phi(x)| = 1.1289
    case UnaryFunction::kNormalCdf:
      return 1.0 / std::sqrt(2 * std::acos(-1.0));
  }
  return 1.0;
}

double fp16_activation_bound(const Unary& u, double x) {
  const double r16 = std::ldexp(1.0, -11), r32 = std::ldexp(1.0, -24);
  const double y = std::abs(u(x));
  const double ax = std::abs(x);
  switch (u.function) {
    case UnaryFunction::kSigmoid:
    case UnaryFunction::kTanh:
    case UnaryFunction::kErf:
    case UnaryFunction::kNormalCdf: {
      const int k = fp16_lut_input_exponent(u);
      const double edge = std::ldexp(1.0, 15 - k);
      // How far f is from its limit beyond the grid's edge (the clamp of |x|).
      const double tail = u.function == UnaryFunction::kTanh  ? 1.0 - std::tanh(edge)
                          : u.function == UnaryFunction::kErf ? std::erfc(edge)
                          : u.function == UnaryFunction::kNormalCdf
                              ? 0.5 * std::erfc(edge / std::sqrt(2.0))
                              : 1.0 / (1.0 + std::exp(edge));
      const double e = activation_lipschitz(u) * std::ldexp(1.0, -(k + 1)) +
                       table_bound(u) * std::ldexp(1.0, -kFp16LutOutputExponent) + tail;
      return e + r16 * (y + e);  // the code's FP16 rounding; the 2^-15 multiply is exact
    }
    case UnaryFunction::kSilu:
    case UnaryFunction::kGelu: {
      const double d = fp16_activation_bound(lut_factor(u), x);
      const double e = ax * d + r32 * ax;
      return e + r16 * (y + e);
    }
    case UnaryFunction::kHardSigmoid: {
      const double e = hard_sigmoid_error(u, x);
      return e + r16 * (y + e);
    }
    case UnaryFunction::kHardSwish: {
      const double e = ax * hard_sigmoid_error(u, x) + r32 * ax * (1.0 + hard_sigmoid_error(u, x));
      return e + r16 * (y + e);
    }
  }
  return 0.0;
}

namespace detail {

void Builder::lower_activation(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                               NetLayer& out) {
  const Unary& u = *l.sdp.unary;
  const std::string& who = out.nodes;
  if (integer_) {
    throw GraphError(
        fmt::format("{}: {} of an integer network's values is not lowered", who, u.name()));
  }
  if (!in.channel_map.empty()) {
    throw GraphError(fmt::format(
        "{}: {} of a padded channel layout (a Concat's output) is not lowered (f(0) != 0 would "
        "fill the unused channels)",
        who, u.name()));
  }
  if (fp16()) return lower_activation_fp16(l, in, dst, out);
  if (!hw_.dla.sdp_lut) {
    if (u.function != UnaryFunction::kHardSigmoid) {
      throw GraphError(fmt::format(
          "{}: {} runs on the SDP LUT, which {} does not have (nv_full and the configurations "
          "with SDP_LUT have it; HardSigmoid runs without it)",
          who, u.name(), hw_.name));
    }
    // clip(alpha x + beta, 0, 1): the affine map with ReLU; the output's clip is at most 1
    // (calibrate.cpp), so INT8 saturation at its largest code clamps at or below 1.
    PlannedLayer affine = l;
    affine.sdp.unary.reset();
    const std::uint32_t channels = in.surface.channels;
    affine.sdp.mul.assign(channels, u.alpha);
    affine.sdp.add.assign(channels, u.beta);
    affine.sdp.relu = true;
    out.hw = lower_sdp_quantized(affine, in, dst, who);
    push_layer(std::move(out));
    return;
  }
  const TensorQuant& y = dst.quant;
  SdpLayer s;
  s.precision = Precision::kInt8;
  s.src = in.surface;
  s.dst = dst.surface;
  s.cvt = SdpConvertor{0, 1, 0};
  try {
    const SdpLutTable t = sdp_lut_per_code(u, in.quant.step(), -128, 127, y.step(),
                                           y.is_unsigned ? 0 : -y.max_code(), y.max_code());
    s.lut = t.config;
  } catch (const FirmwareError& e) {
    throw GraphError(fmt::format("{}: {}", who, e.what()));
  }
  (void)sdp_model_config(s, atom());  // checks
  out.hw = s;
  push_layer(std::move(out));
}

void Builder::lower_activation_fp16(const PlannedLayer& l, const NetTensor& in,
                                    const NetTensor& dst, NetLayer& out) {
  const Unary& u = *l.sdp.unary;
  const std::string& who = out.nodes;
  if (u.function == UnaryFunction::kHardSigmoid || u.function == UnaryFunction::kHardSwish) {
    // One layer: BS (x + b) * m, ReLU, BN MIN 1.0, and for HardSwish EW's x * that.
    const HardSigmoidOperands o = hard_sigmoid_operands(u);
    if (!std::isfinite(o.bias) || o.scale == 0.0F) {
      throw GraphError(fmt::format(
          "{}: alpha {:g} and beta {:g}: alpha or beta/alpha does not fit FP16 (BS computes "
          "(x + beta/alpha) * alpha with FP16 operands)",
          who, u.alpha, u.beta));
    }
    const std::uint32_t channels = dst.surface.channels;
    SdpLayer s;
    s.precision = Precision::kFp16;
    s.src = in.surface;
    s.dst = dst.surface;
    s.bias_scale = SdpBiasScale{
        constant(who + " bias/scale",
                 sdp_fp16_bias_scale_table(std::vector<float>(channels, o.bias),
                                           std::vector<float>(channels, o.scale), atom())),
        0, 0};
    s.relu = true;
    s.clamp_max = static_cast<std::int16_t>(models::fp16_from_float(1.0F));
    if (u.function == UnaryFunction::kHardSwish) {
      s.ew = SdpElementwise(in.surface, SdpEwOp::kMul, ew_unit(false, who));
    }
    (void)sdp_model_config(s, atom());
    out.hw = s;
    push_layer(std::move(out));
    return;
  }
  if (!hw_.dla.sdp_lut) {
    throw GraphError(
        fmt::format("{}: {} runs on the SDP LUT, which {} does not have", who, u.name(), hw_.name));
  }
  // Sigmoid, Tanh, Erf, SiLU, GELU: FP16 -> INT16 codes of 2^-k, the LUT (of Sigmoid for SiLU,
  // Phi for GELU) into FP16 codes of 2^-15, times 2^-15 (and x).
  const Unary g = lut_factor(u);
  const bool times_x = g.function != u.function;  // SiLU, GELU: x * g(x)
  const int k = fp16_lut_input_exponent(g);
  const std::uint64_t bytes = surface_bytes(dst.surface, Precision::kInt16, atom());
  FeatureSurface codes = dst.surface;
  codes.address = activations_.allocate(bytes);
  FeatureSurface looked_up = dst.surface;
  looked_up.address = activations_.allocate(bytes);

  SdpLayer to_codes;
  to_codes.precision = Precision::kFp16;
  to_codes.out_precision = Precision::kInt16;
  to_codes.src = in.surface;
  to_codes.dst = codes;
  SdpQuantize q;
  q.inv_scale = models::fp16_from_double(std::ldexp(1.0, k));
  q.hi_x = models::fp16_from_double(32767.0 * std::ldexp(1.0, -k));
  q.zero_point = 0;
  q.lo = -32768.0F;
  to_codes.quantize = q;
  (void)sdp_model_config(to_codes, atom());

  SdpLayer lut;
  lut.precision = Precision::kInt16;
  lut.out_precision = Precision::kFp16;
  lut.src = codes;
  lut.dst = looked_up;
  lut.cvt = SdpConvertor{0, 1, 0};
  lut.lut = sdp_lut_int16(g, std::ldexp(1.0, -k), std::ldexp(1.0, -kFp16LutOutputExponent)).config;
  (void)sdp_model_config(lut, atom());

  SdpLayer scale;
  scale.precision = Precision::kFp16;
  scale.src = looked_up;
  scale.dst = dst.surface;
  const std::vector<float> step(dst.surface.channels,
                                static_cast<float>(std::ldexp(1.0, -kFp16LutOutputExponent)));
  scale.scale = SdpPerChannel{constant(who + " 2^-15", sdp_fp16_table(step, atom())), 0};
  if (times_x) scale.ew = SdpElementwise(in.surface, SdpEwOp::kMul, ew_unit(false, who));
  (void)sdp_model_config(scale, atom());

  NetLayer first = out;
  first.nodes = who + fmt::format(" (x 2^{} to INT16)", k);
  first.hw = to_codes;
  NetLayer second = out;
  second.nodes = who + fmt::format(" ({} LUT)", g.name());
  second.hw = lut;
  NetLayer third = out;
  third.nodes = who + (times_x ? " (x 2^-15 x x)" : " (x 2^-15)");
  third.hw = scale;
  prog_.layers.push_back(std::move(first));
  prog_.layers.push_back(std::move(second));
  prog_.layers.push_back(std::move(third));
  activations_.release(codes.address, bytes);
  activations_.release(looked_up.address, bytes);
}

}  // namespace detail
}  // namespace octasim::firmware::net
