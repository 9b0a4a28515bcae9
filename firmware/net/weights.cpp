#include "firmware/net/weights.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/core.h>

#include "models/numerics/float_format.hpp"
#include "models/quant/octav.hpp"
#include "models/quant/qat_init.hpp"

namespace octasim::firmware::net {

using models::graph::GraphError;

namespace {

// The float weights as K x R x S x C (models' order), and the bias.
struct FloatWeights {
  std::uint32_t k = 0, r = 0, s = 0, c = 0;
  std::uint32_t first_kernel = 0;  // the layer's kernel that is kernel 0 here (one group)
  std::vector<float> w;            // (k, r, s, c)
  std::vector<double> bias;
};

// An initializer's values as floats (integer weights are exact in float up to 2^24).
models::graph::Tensor as_float(const models::graph::Tensor& t) {
  if (models::graph::is_float(t.dtype)) return t;
  return models::graph::Tensor::floats(t.shape, std::vector<float>(t.i.begin(), t.i.end()));
}

// All of a Conv's weights (group nullopt: a grouped convolution's kernels read the channels of
// their group, the others get zero weights), or group `group`'s kernels over its channels only.
FloatWeights conv_weights(const models::graph::Graph& g, const PlannedLayer& l, const Cube& in,
                          std::optional<unsigned> group) {
  const auto t = as_float(g.initializers.at(l.conv.weight));
  const auto kernels = static_cast<std::uint32_t>(t.shape[0]);
  const auto per_group = static_cast<std::uint32_t>(t.shape[1]);  // input channels of a group
  const std::uint32_t groups = l.conv.groups;
  FloatWeights f;
  f.r = static_cast<std::uint32_t>(t.shape[2]);
  f.s = static_cast<std::uint32_t>(t.shape[3]);
  if (per_group * groups != in.channels) {
    throw GraphError(fmt::format("weights '{}' have {} input channels, the input has {}",
                                 l.conv.weight, per_group * groups, in.channels));
  }
  const std::uint32_t kernels_per_group = kernels / groups;
  if (group && *group >= groups) {
    throw GraphError(fmt::format("weights '{}': group {} of a convolution of {}", l.conv.weight,
                                 *group, groups));
  }
  f.k = group ? kernels_per_group : kernels;
  f.c = group ? per_group : per_group * groups;
  f.first_kernel = group ? *group * kernels_per_group : 0;
  f.w.assign(std::size_t{f.k} * f.r * f.s * f.c, 0.0F);
  for (std::uint32_t k = 0; k < f.k; ++k) {
    const std::uint32_t kernel = f.first_kernel + k;
    // Dense: kernel k reads the channels of its group; one group: its channels are all there is.
    const std::uint32_t first = group ? 0 : kernel / kernels_per_group * per_group;
    for (std::uint32_t c = 0; c < per_group; ++c)
      for (std::uint32_t r = 0; r < f.r; ++r)
        for (std::uint32_t s = 0; s < f.s; ++s)
          f.w[((std::size_t{k} * f.r + r) * f.s + s) * f.c + first + c] =
              t.f[((std::size_t{kernel} * per_group + c) * f.r + r) * f.s + s];
  }
  return f;
}

FloatWeights fc_weights(const models::graph::Graph& g, const PlannedLayer& l, const Cube& in) {
  const auto b = as_float(g.initializers.at(l.conv.weight));
  const auto rows = static_cast<std::size_t>(b.shape[0]),
             cols = static_cast<std::size_t>(b.shape[1]);
  const std::size_t features = l.conv.transpose_b ? cols : rows;
  const std::size_t outputs = l.conv.transpose_b ? rows : cols;
  // Rows (plan.hpp): a 1x1 kernel over the K channels of each row; else the whole cube.
  const std::uint32_t r = l.conv.rows ? 1 : in.height, s = l.conv.rows ? 1 : in.width;
  const std::size_t expected = std::size_t{in.channels} * r * s;
  if (features != expected) {
    throw GraphError(fmt::format("B '{}' has {} input features, the input has {}", l.conv.weight,
                                 features, expected));
  }
  FloatWeights f;
  f.k = static_cast<std::uint32_t>(outputs);
  f.r = r;
  f.s = s;
  f.c = in.channels;
  f.w.resize(outputs * features);
  for (std::size_t n = 0; n < outputs; ++n)
    for (std::uint32_t c = 0; c < f.c; ++c)
      for (std::uint32_t y = 0; y < f.r; ++y)
        for (std::uint32_t x = 0; x < f.s; ++x) {
          const std::size_t feat = (std::size_t{c} * f.r + y) * f.s + x;
          const float v = l.conv.transpose_b ? b.f[n * cols + feat] : b.f[feat * cols + n];
          f.w[((n * f.r + y) * f.s + x) * f.c + c] = static_cast<float>(l.conv.alpha * double{v});
        }
  return f;
}

// The weights in (k, r, s, c) order and the bias (beta applied for Gemm); `group`: one group's.
FloatWeights float_weights(const models::graph::Graph& g, const PlannedLayer& l, const Cube& in,
                           std::optional<unsigned> group) {
  if (group && l.conv.fully_connected) {
    throw GraphError(fmt::format("B '{}': a fully-connected layer has no groups", l.conv.weight));
  }
  FloatWeights f = l.conv.fully_connected ? fc_weights(g, l, in) : conv_weights(g, l, in, group);
  f.bias.assign(f.k, 0.0);
  if (!l.conv.bias.empty()) {
    const auto& b = g.initializers.at(l.conv.bias);
    const double factor = l.conv.fully_connected ? l.conv.beta : 1.0;
    const std::size_t outputs = group ? std::size_t{f.k} * l.conv.groups : f.k;
    if (b.f.size() != outputs && b.f.size() != 1) {
      throw GraphError(
          fmt::format("bias '{}' has {} values for {} outputs (a per-output bias or one value)",
                      l.conv.bias, b.f.size(), outputs));
    }
    for (std::uint32_t k = 0; k < f.k; ++k)
      f.bias[k] = factor * double{b.f[b.f.size() == 1 ? 0 : f.first_kernel + k]};
  }
  return f;
}

}  // namespace

QuantizedWeights integer_conv_weights(const models::graph::Graph& g, const PlannedLayer& l,
                                      const Cube& in, std::optional<unsigned> group) {
  const FloatWeights f = float_weights(g, l, in, group);
  QuantizedWeights q;
  q.codes = models::ops::ConvWeights(f.k, f.r, f.s, f.c);
  q.scales.assign(f.k, 1.0);
  q.bias.assign(f.k, 0.0);
  std::vector<double> wz(f.k, 0.0);
  if (!l.conv.weight_zero_point.empty()) {
    const auto& z = g.initializers.at(l.conv.weight_zero_point);
    const std::size_t outputs = group ? std::size_t{f.k} * l.conv.groups : f.k;
    if (z.elements() != 1 && z.elements() != outputs) {
      throw GraphError(fmt::format("weight zero point '{}' has {} values for {} outputs",
                                   l.conv.weight_zero_point, z.elements(), outputs));
    }
    for (std::uint32_t k = 0; k < f.k; ++k)
      wz[k] = z.at(z.elements() == 1 ? 0 : f.first_kernel + k);
  }
  const double xz =
      l.conv.input_zero_point.empty() ? 0.0 : g.initializers.at(l.conv.input_zero_point).at(0);
  const std::size_t per = std::size_t{f.r} * f.s * f.c;
  for (std::uint32_t k = 0; k < f.k; ++k) {
    double sum = 0.0;
    for (std::size_t i = 0; i < per; ++i) {
      const double w = double{f.w[k * per + i]} - wz[k];
      q.codes.data[k * per + i] = static_cast<std::int32_t>(w);
      sum += w;
    }
    q.bias[k] = -xz * sum;  // sum((x - xz) w) = sum(x w) - xz sum(w)
  }
  return q;
}

QuantizedWeights fp16_conv_weights(const models::graph::Graph& g, const PlannedLayer& l,
                                   const Cube& in, std::optional<unsigned> group) {
  const FloatWeights f = float_weights(g, l, in, group);
  QuantizedWeights q;
  q.codes = models::ops::ConvWeights(f.k, f.r, f.s, f.c);
  for (std::size_t i = 0; i < f.w.size(); ++i) q.codes.data[i] = models::fp16_from_float(f.w[i]);
  q.scales.assign(f.k, 1.0);
  q.bias = f.bias;
  return q;
}

double quantize_weight_channel(const float* w, std::size_t n, int bits, WeightQuantizer quantizer,
                               std::int32_t* out) {
  const int max_code = (1 << (bits - 1)) - 1;
  double m = 0.0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::abs(double{w[i]}));
  if (m == 0.0) return 1.0;
  if (quantizer == WeightQuantizer::kMmse) {
    const models::MmseWeights mm = models::mmse_weight_quantization(w, n, bits);
    if (!(mm.scale > 0.0)) return 1.0;
    std::copy(mm.codes.begin(), mm.codes.end(), out);
    return mm.scale;
  }
  // kOctav: the MSE-optimal clip of the channel (the patent's signed B-bit quantizer) in
  // place of max|w|; codes then saturate at +-max_code.
  double clip = m;
  if (quantizer == WeightQuantizer::kOctav) {
    models::OctavOptions oo;
    oo.bits = bits;
    oo.sign = models::Signedness::kSigned;
    oo.max_iterations = 50;
    const double s = models::octav(w, n, oo).clip;
    if (s > 0.0) clip = s;
  }
  const double scale = clip / max_code;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = double{w[i]} / scale;
    const double r = v < 0 ? -std::floor(-v + 0.5) : std::floor(v + 0.5);
    out[i] = static_cast<std::int32_t>(std::clamp(r, -double(max_code), double(max_code)));
  }
  return scale;
}

namespace {

// (2G) of F(2x2, 3x3), models/ops/conv_winograd.hpp: 4U = (2G) g (2G)^T.
constexpr double kG2[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};

}  // namespace

QuantizedWeights quantize_conv_weights(const models::graph::Graph& g, const PlannedLayer& l,
                                       const Cube& in, int bits, WeightQuantizer quantizer,
                                       std::optional<unsigned> group) {
  const FloatWeights f = float_weights(g, l, in, group);
  QuantizedWeights q;
  q.codes = models::ops::ConvWeights(f.k, f.r, f.s, f.c);
  q.scales.assign(f.k, 1.0);
  q.bias = f.bias;
  const std::size_t per = std::size_t{f.r} * f.s * f.c;
  for (std::uint32_t k = 0; k < f.k; ++k)
    q.scales[k] =
        quantize_weight_channel(&f.w[k * per], per, bits, quantizer, &q.codes.data[k * per]);
  return q;
}

QuantizedWeights winograd_conv_weights(const models::graph::Graph& g, const PlannedLayer& l,
                                       const Cube& in, int bits, WeightQuantizer quantizer,
                                       std::optional<unsigned> group) {
  const FloatWeights f = float_weights(g, l, in, group);
  if (f.r != 3 || f.s != 3) {
    throw GraphError(
        fmt::format("weights '{}' are {}x{}, Winograd needs 3x3", l.conv.weight, f.s, f.r));
  }
  constexpr std::uint32_t kTile = 4;
  QuantizedWeights q;
  q.codes = models::ops::ConvWeights(f.k, kTile, kTile, f.c);
  q.scales.assign(f.k, 1.0);
  q.bias = f.bias;
  const std::size_t per = std::size_t{kTile} * kTile * f.c;
  std::vector<float> u(per);
  for (std::uint32_t k = 0; k < f.k; ++k) {
    for (std::uint32_t y = 0; y < kTile; ++y)
      for (std::uint32_t x = 0; x < kTile; ++x)
        for (std::uint32_t c = 0; c < f.c; ++c) {
          double v = 0.0;
          for (std::uint32_t r = 0; r < 3; ++r)
            for (std::uint32_t s = 0; s < 3; ++s)
              v +=
                  kG2[y][r] * double{f.w[((std::size_t{k} * 3 + r) * 3 + s) * f.c + c]} * kG2[x][s];
          u[(std::size_t{y} * kTile + x) * f.c + c] = static_cast<float>(v);
        }
    q.scales[k] = quantize_weight_channel(u.data(), per, bits, quantizer, &q.codes.data[k * per]);
  }
  return q;
}

models::ops::ConvWeights spread_input_channels(const models::ops::ConvWeights& w,
                                               const std::vector<std::uint32_t>& map,
                                               std::uint32_t physical) {
  if (map.size() != w.channels) {
    throw GraphError(
        fmt::format("weights of {} input channels for a layout of {}", w.channels, map.size()));
  }
  models::ops::ConvWeights out(w.kernels, w.kernel_height, w.kernel_width, physical);
  const std::size_t positions = std::size_t{w.kernels} * w.kernel_height * w.kernel_width;
  for (std::size_t p = 0; p < positions; ++p) {
    for (std::uint32_t c = 0; c < w.channels; ++c) {
      if (map[c] >= physical)
        throw GraphError(fmt::format("channel {} beyond {}", map[c], physical));
      out.data[p * physical + map[c]] = w.data[p * w.channels + c];
    }
  }
  return out;
}

}  // namespace octasim::firmware::net
