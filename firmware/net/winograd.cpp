// The network compiler's choice of Winograd mode for a convolution (Builder::winograd_layer):
// NVDLA's programming guide has a feature input with a 3x3 kernel (after the stride's channel
// extension) use Winograd. octasim takes it where every rule of firmware/dla/conv_winograd.hpp
// holds and the layer fits the CBUF unsplit, at INT8 only:
//   - the options allow it (QuantOptions::winograd, --no-winograd) and the hardware has it;
//   - a float network quantized to INT8 (INT4 codes would leave the transformed weights 4 bits;
//     integer networks are exact INT16 arithmetic, FP16 Winograd is not modelled);
//   - 3x3 kernel, stride 1, no dilation, not the folded first layer, not fully connected;
//   - the output a multiple of 4 and at least 8 in width and height, one band (plan_conv and
//     split_conv decide: a layer they refuse in Winograd mode stays direct);
//   - faster by the compiler's cost model (fold.hpp conv_cost: MAC cycles plus the bytes CDMA
//     reads, weights 16/9 larger in Winograd), which keeps DRAM-bound layers direct.
// The weights are then quantized in the transformed domain (weights.hpp winograd_conv_weights)
// and PRA truncates the transformed input by choose_pra_truncate's shift for the input's largest
// code, so no transformed input saturates (INT8 codes up to 127: a shift of 2).
#include "firmware/net/winograd.hpp"

#include <cmath>

#include <fmt/core.h>

#include "firmware/dla/conv_winograd.hpp"
#include "firmware/net/builder.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/split.hpp"
#include "firmware/net/weights.hpp"
#include "models/graph/reference.hpp"
#include "models/ops/conv_winograd.hpp"

namespace octasim::firmware::net::detail {

std::optional<ConvLayer> Builder::winograd_layer(const PlannedLayer& l, const NetTensor& in,
                                                 const ConvLayer& conv, bool dense_groups) const {
  const ConvAttrs& a = l.conv;
  if (options_.winograd == WinogradMode::kOff || dense_groups) return std::nullopt;
  if (options_.winograd == WinogradMode::kAuto) {
    const auto measured = options_.winograd_measured.find(l.output);
    if (measured == options_.winograd_measured.end() || !measured->second.accepted) {
      return std::nullopt;
    }
  }
  if (!prog_.hw.winograd || integer_ || options_.precision != NetPrecision::kInt8 || in.fold ||
      a.fully_connected || a.kernel_w != 3 || a.kernel_h != 3 || a.stride_x != 1 ||
      a.stride_y != 1 || a.dilation_x != 1 || a.dilation_y != 1 || conv.batches != 1) {
    return std::nullopt;
  }
  ConvLayer w = conv;
  w.winograd = true;
  const auto max_input = static_cast<std::uint32_t>(
      std::max(in.quant.max_code(), conv.pad_value < 0 ? -conv.pad_value : conv.pad_value));
  w.pra_truncate = choose_pra_truncate(max_input, conv.precision);
  try {
    if (split_conv(w, prog_.hw).size() != 1) return std::nullopt;
  } catch (const FirmwareError&) {
    return std::nullopt;  // e.g. an output not a multiple of 4, or an input that needs bands
  }
  // Winograd trades 2.25x fewer MAC cycles for 16/9 the weight bytes: taken where the modelled
  // cost (fold.hpp conv_cost) is lower.
  const double bandwidth = cdma_read_bytes_per_cycle(hw_);
  const ConvCost wino = conv_cost(w, prog_.hw, bandwidth);
  const ConvCost direct = conv_cost(conv, prog_.hw, bandwidth);
  if (!wino.feasible || (direct.feasible && direct.cycles <= wino.cycles)) return std::nullopt;
  return w;
}

}  // namespace octasim::firmware::net::detail

namespace octasim::firmware::net {

namespace {

// The structural rules of Winograd mode a layer must meet to be worth measuring (winograd_layer
// checks the rest when lowering).
bool winograd_shape(const PlannedLayer& l, const NetPlan& plan) {
  const ConvAttrs& a = l.conv;
  if (l.kind != LayerKind::kConv || a.fully_connected || a.integer || a.kernel_w != 3 ||
      a.kernel_h != 3 || a.stride_x != 1 || a.stride_y != 1 || a.dilation_x != 1 ||
      a.dilation_y != 1) {
    return false;
  }
  const Cube& out = plan.cubes.at(l.output);
  return out.width % 4 == 0 && out.height % 4 == 0 && out.width >= 8 && out.height >= 8;
}

double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

}  // namespace

std::map<std::string, WinogradMeasure> measure_winograd(
    const models::graph::Graph& g, const NetPlan& plan, const CalibrationTable& table,
    const models::graph::Tensor& images, const QuantOptions& options, const HwConfig& hw,
    std::size_t max_images) {
  std::map<std::string, WinogradMeasure> out;
  if (options.winograd != WinogradMode::kAuto || !hw.dla.winograd ||
      options.precision != NetPrecision::kInt8 || images.shape.empty()) {
    return out;
  }
  std::vector<const PlannedLayer*> candidates;
  for (const PlannedLayer& l : plan.layers) {
    if (winograd_shape(l, plan) && table.count(l.input) != 0) candidates.push_back(&l);
  }
  if (candidates.empty()) return out;
  const auto count = std::min<std::size_t>(max_images, static_cast<std::size_t>(images.shape[0]));
  std::map<std::string, std::vector<double>> direct, wino, ref;  // by layer output
  for (std::size_t i = 0; i < count; ++i) {
    const models::graph::TensorMap values =
        models::graph::run_reference(g, {{plan.input, slice_batch(images, i, 1)}});
    for (const PlannedLayer* l : candidates) {
      const ConvAttrs& a = l->conv;
      const Cube& c = plan.cubes.at(l->input);
      const TensorQuant& xq = table.at(l->input);
      const models::graph::Tensor& x = values.at(l->input);
      const models::graph::Tensor& y = values.at(g.nodes[l->nodes.front()].outputs.at(0));
      models::ops::ConvCube in(c.width, c.height, c.channels);
      for (std::size_t e = 0; e < in.data.size(); ++e) in.data[e] = xq.code(x.f[e]);  // CHW
      const QuantizedWeights wd = quantize_conv_weights(g, *l, c, 8, options.weights);
      const QuantizedWeights ww = winograd_conv_weights(g, *l, c, 8, options.weights);
      const Cube& oc = plan.cubes.at(l->output);
      models::ops::ConvParams p;
      p.pad_left = a.pad_left;
      p.pad_top = a.pad_top;
      p.out_width = oc.width;
      p.out_height = oc.height;
      const models::ops::ConvResult rd =
          models::ops::run_conv_int(in, wd.codes, p, wd.codes.kernels);
      const auto max_code = static_cast<std::uint32_t>(xq.max_code());
      const unsigned pra = choose_pra_truncate(max_code, Precision::kInt8);
      models::ops::ConvParams pw = p;
      pw.clip_truncate = 2 - pra;  // the transform's factor 4 and PRA's shift (conv_winograd.hpp)
      const models::ops::ConvResult rw =
          models::ops::run_conv_winograd(in, ww.codes, pw, pra, ww.codes.kernels);
      std::vector<double>& d = direct[l->output];
      std::vector<double>& w = wino[l->output];
      std::vector<double>& r = ref[l->output];
      for (std::uint32_t k = 0; k < wd.codes.kernels; ++k) {
        for (std::uint32_t yy = 0; yy < oc.height; ++yy) {
          for (std::uint32_t xx = 0; xx < oc.width; ++xx) {
            d.push_back(rd.out.at(xx, yy, k) * xq.step() * wd.scales[k] + wd.bias[k]);
            w.push_back(rw.out.at(xx, yy, k) * xq.step() * ww.scales[k] + ww.bias[k]);
            r.push_back(y.f[(std::size_t{k} * oc.height + yy) * oc.width + xx]);
          }
        }
      }
    }
  }
  for (const PlannedLayer* l : candidates) {
    WinogradMeasure m;
    m.direct_error = relative_error(direct.at(l->output), ref.at(l->output));
    m.winograd_error = relative_error(wino.at(l->output), ref.at(l->output));
    m.accepted = m.winograd_error <= (1.0 + options.winograd_budget) * m.direct_error;
    out[l->output] = m;
  }
  return out;
}

}  // namespace octasim::firmware::net
