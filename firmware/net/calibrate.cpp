#include "firmware/net/calibrate.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "models/graph/reference.hpp"
#include "models/quant/calibrators.hpp"
#include "models/quant/octav.hpp"

namespace octasim::firmware::net {

using models::graph::Graph;
using models::graph::Tensor;

namespace {

// Whether an SDP layer keeps its input's codes (a lone ReLU: max(code, 0)).
bool keeps_codes(const PlannedLayer& l) {
  return l.kind == LayerKind::kSdp && l.sdp.mul.empty() && l.sdp.add.empty() &&
         l.sdp.ew == EwOp::kNone && l.sdp.convert == SdpAttrs::Convert::kNone;
}

// An SDP layer's output: a lone ReLU keeps the codes (unsigned); an affine map (BatchNormalization,
// per-channel Mul/Add) or an Add of a tensor gets its own clip, unsigned after a ReLU, in 8-bit
// codes (BN adds or scales there, so no unit is left to clamp narrower ones).
TensorQuant sdp_code_format(const PlannedLayer& l, const QuantOptions& options, int wide) {
  TensorQuant q;
  q.bits = wide;
  if (keeps_codes(l)) {
    q.is_unsigned = true;
    return q;
  }
  const bool tensor_add = l.sdp.ew == EwOp::kAdd && !l.sdp.operand.empty();
  if (l.sdp.convert != SdpAttrs::Convert::kNone || (l.sdp.ew != EwOp::kNone && !tensor_add)) {
    throw models::graph::GraphError(fmt::format(
        "the SDP layer computing '{}': quantized ({}) QuantizeLinear, DequantizeLinear, Mul of "
        "two tensors, PRelu, LeakyRelu and an Add of a broadcast constant are not supported (they "
        "run at fp16)",
        l.output, precision_name(options.precision)));
  }
  q.is_unsigned = l.sdp.relu;
  return q;
}

// Bits and sign of every tensor the plan quantizes, before any clip is known.
CalibrationTable code_formats(const NetPlan& plan, const Tensor& images,
                              const QuantOptions& options, const CalibrationTable* given) {
  CalibrationTable t;
  const int wide = code_bits(options.precision) == 16 ? 16 : 8;
  TensorQuant in;
  in.bits = wide;
  const auto given_in =
      given != nullptr ? given->find(plan.input) : CalibrationTable::const_iterator{};
  if (given != nullptr && given_in != given->end()) {
    in.is_unsigned = given_in->second.is_unsigned || given_in->second.min >= 0.0;
  } else {
    in.is_unsigned = std::none_of(images.f.begin(), images.f.end(), [](float v) { return v < 0; });
  }
  t[plan.input] = in;
  for (const PlannedLayer& l : plan.layers) {
    const TensorQuant& src = t.at(l.input);
    TensorQuant q;
    q.bits = wide;
    switch (l.kind) {
      case LayerKind::kConv:
        q.is_unsigned = l.conv.relu;
        // octav-device: the convolution writes 8-bit codes at the static max scale; the OCTAV
        // unit then snaps them to the B-bit grid of its own clip (program.hpp). A fused residual
        // Add leaves no unit to clamp narrow codes.
        if (q.is_unsigned && options.calibration != ClipCalibration::kOctavDevice &&
            l.conv.residual.empty()) {
          q.bits = code_bits(options.precision);
        }
        break;
      case LayerKind::kPool:
        q = src;
        break;
      case LayerKind::kLrn:
        q.is_unsigned = src.is_unsigned;
        break;
      case LayerKind::kSoftmax:
        throw models::graph::GraphError(fmt::format(
            "the Softmax computing '{}' runs on the PPU at fp16 only (--precision fp16)",
            l.output));
      case LayerKind::kSdp:
        q = sdp_code_format(l, options, wide);
        break;
    }
    t[l.output] = q;
  }
  return t;
}

double clip_of(const std::vector<float>& v, const TensorQuant& q, const QuantOptions& o,
               std::string* method) {
  using models::Signedness;
  const Signedness sign = q.is_unsigned ? Signedness::kUnsigned : Signedness::kSigned;
  const int bits = calibrator_bits(q);
  *method = calibration_name(o.calibration);
  switch (o.calibration) {
    case ClipCalibration::kMax:
    case ClipCalibration::kOctavDevice:
      return models::max_clip(v.data(), v.size(), sign).clip;
    case ClipCalibration::kPercentile:
      return models::percentile_clip(v.data(), v.size(), sign, o.percentile).clip;
    case ClipCalibration::kMseHistogram:
      return models::mse_histogram_clip(v.data(), v.size(), bits, sign).clip;
    case ClipCalibration::kOctav: {
      models::OctavOptions oo;
      oo.bits = bits;
      oo.sign = sign;
      oo.max_iterations = 50;
      return models::octav(v.data(), v.size(), oo).clip;
    }
  }
  return 0.0;
}

}  // namespace

CalibrationTable calibrate(const Graph& g, const NetPlan& plan, const Tensor& images,
                           const QuantOptions& options, const CalibrationTable* given) {
  CalibrationTable table = code_formats(plan, images, options, given);
  models::graph::TensorMap values;
  if (given == nullptr) values = models::graph::run_reference(g, {{plan.input, images}});
  const auto input_of = [&](const std::string& tensor) -> const PlannedLayer* {
    for (const PlannedLayer& l : plan.layers) {
      if (l.output == tensor) return &l;
    }
    return nullptr;
  };
  // In plan order, so that a pool or a lone ReLU (SDP keeps the codes) finds its input's clip
  // already set.
  std::vector<std::string> order{plan.input};
  for (const PlannedLayer& l : plan.layers) order.push_back(l.output);
  for (const std::string& name : order) {
    TensorQuant& q = table.at(name);
    const PlannedLayer* layer = input_of(name);
    if (layer != nullptr && (layer->kind == LayerKind::kPool || keeps_codes(*layer))) {
      const TensorQuant& src = table.at(layer->input);
      q.clip = src.clip;
      q.min = src.min;
      q.max = src.max;
      q.method = "input of " + layer_nodes_label(g, *layer);
      continue;
    }
    if (given != nullptr) {
      const auto it = given->find(name);
      if (it == given->end()) {
        throw CalibrationError(fmt::format(
            "the calibration table has no entry for tensor '{}' (needed by the device)", name));
      }
      q.clip = it->second.clip;
      q.min = it->second.min;
      q.max = it->second.max;
      q.method = "table";
    } else {
      const std::vector<float>& v = values.at(name).f;
      if (v.empty()) throw CalibrationError(fmt::format("tensor '{}' is not float", name));
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      q.min = *lo;
      q.max = *hi;
      q.clip = clip_of(v, q, options, &q.method);
    }
    if (layer != nullptr && layer->kind == LayerKind::kConv && layer->conv.clip_max > 0.0) {
      q.clip = std::min(q.clip, layer->conv.clip_max);
    }
    if (!(q.clip > 0.0)) {
      // An all-zero tensor on the calibration data: any positive clip represents it.
      q.clip = 1.0;
      q.method += " (all zero: 1)";
    }
  }
  return table;
}

}  // namespace octasim::firmware::net
