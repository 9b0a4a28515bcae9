#include "firmware/net/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/core.h>

#include "models/graph/reference.hpp"
#include "models/quant/calibrators.hpp"
#include "models/quant/octav.hpp"

namespace octasim::firmware::net {

using models::graph::Graph;
using models::graph::Tensor;

namespace {

// Whether an SDP layer keeps its input's codes (a lone ReLU: max(code, 0); a Clip: the codes
// clamped; LeakyRelu: the negative codes scaled).
bool keeps_codes(const PlannedLayer& l) {
  return l.kind == LayerKind::kSdp && l.sdp.mul.empty() && l.sdp.add.empty() &&
         l.sdp.ew == EwOp::kNone && l.sdp.convert == SdpAttrs::Convert::kNone && !l.sdp.unary;
}

// An SDP layer's output: a lone ReLU keeps the codes (unsigned); an affine map (BatchNormalization,
// per-channel Mul/Add), an Add of a tensor or a Mul by a per-channel tensor gets its own clip,
// unsigned after a ReLU, in 8-bit codes (BN adds or scales there, so no unit is left to clamp
// narrower ones).
TensorQuant sdp_code_format(const PlannedLayer& l, const QuantOptions& options, int wide,
                            const TensorQuant& src) {
  // A Clip or LeakyRelu: the input's format (its codes, signed where the input's are).
  if (keeps_codes(l) && (l.sdp.clip_lo || l.sdp.clip_hi || l.sdp.leaky_slope)) return src;
  TensorQuant q;
  q.bits = wide;
  if (keeps_codes(l)) {
    q.is_unsigned = true;
    return q;
  }
  // A unary activation (activation.hpp): unsigned where its range is (Sigmoid, HardSigmoid),
  // 8-bit codes (the LUT's entries are clamped to them).
  if (l.sdp.unary) {
    q.is_unsigned = l.sdp.unary->non_negative();
    return q;
  }
  const bool tensor_add = l.sdp.ew == EwOp::kAdd && !l.sdp.operand.empty();
  // A per-channel Mul by a tensor (squeeze-excitation): the output convertor rescales the product.
  const bool channel_mul = l.sdp.ew == EwOp::kMul && l.sdp.operand_per_channel;
  if (l.sdp.convert != SdpAttrs::Convert::kNone ||
      (l.sdp.ew != EwOp::kNone && !tensor_add && !channel_mul)) {
    throw models::graph::GraphError(fmt::format(
        "the SDP layer computing '{}': quantized ({}) QuantizeLinear, DequantizeLinear, Mul of "
        "two tensors, PRelu and an Add of a broadcast constant are not supported (they run at "
        "fp16)",
        l.output, precision_name(options.precision)));
  }
  q.is_unsigned = l.sdp.relu;
  return q;
}

// The tensor whose codes `tensor` holds: a channel slice's source (it is a window of those
// codes), or itself.
const std::string& codes_of(const NetPlan& plan, const std::string& tensor) {
  const auto it = plan.slices.find(tensor);
  return it == plan.slices.end() ? tensor : it->second.source;
}

// Tensors that share one quantization because of a Concat: its output and inputs (each producer
// requantizes to it; its readers see one step) and, transitively, a pool's or lone ReLU's output
// and input (those layers keep the codes). Only groups that hold a Concat, members in plan order.
std::vector<std::vector<std::string>> concat_groups(const NetPlan& plan) {
  std::map<std::string, std::string> parent;
  const std::function<std::string(const std::string&)> find = [&](const std::string& x) {
    const auto it = parent.find(x);
    if (it == parent.end() || it->second == x) return x;
    return it->second = find(it->second);
  };
  const auto unite = [&](const std::string& a, const std::string& b) {
    const std::string ra = find(a), rb = find(b);
    if (ra != rb) parent[ra] = rb;
  };
  for (const auto& [out, c] : plan.concats) {
    for (const std::string& in : c.inputs) unite(in, out);
  }
  std::vector<std::string> names{plan.input};
  for (const PlannedLayer& l : plan.layers) {
    if (l.kind == LayerKind::kPool || l.kind == LayerKind::kBdma || l.kind == LayerKind::kRubik ||
        keeps_codes(l)) {
      unite(l.output, l.input);
    }
    names.push_back(l.output);
  }
  for (const auto& entry : plan.concats) names.push_back(entry.first);
  std::set<std::string> roots, seen;
  for (const auto& entry : plan.concats) roots.insert(find(entry.first));
  std::map<std::string, std::vector<std::string>> by_root;
  std::vector<std::string> order;  // roots in the order their first member appears
  for (const std::string& n : names) {
    const std::string r = find(n);
    if (roots.count(r) == 0 || !seen.insert(n).second) continue;
    if (by_root[r].empty()) order.push_back(r);
    by_root[r].push_back(n);
  }
  std::vector<std::vector<std::string>> groups;
  for (const std::string& r : order) groups.push_back(std::move(by_root[r]));
  return groups;
}

// The codes a set of tensors can share: unsigned when every one is, 4-bit only when every one
// is 4-bit (a 4-bit producer can write 8-bit codes, not the other way round).
TensorQuant shared_format(const std::vector<const TensorQuant*>& members) {
  TensorQuant q = *members.front();
  for (const TensorQuant* m : members) {
    q.is_unsigned = q.is_unsigned && m->is_unsigned;
    if (m->bits != q.bits) q.bits = std::max(q.bits, m->bits) == 16 ? 16 : 8;
  }
  return q;
}

// The format of `tensor`: from `t`, or, for a Concat output not yet there, its inputs' shared
// format (a nested Concat's first).
const TensorQuant& concat_format(const NetPlan& plan, const std::string& tensor,
                                 CalibrationTable& t) {
  const auto it = t.find(tensor);
  if (it != t.end() || plan.concats.count(tensor) == 0) return t.at(tensor);
  std::vector<const TensorQuant*> members;
  for (const std::string& in : plan.concats.at(tensor).inputs) {
    members.push_back(&concat_format(plan, in, t));
  }
  return t[tensor] = shared_format(members);
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
    const TensorQuant& src = concat_format(plan, codes_of(plan, l.input), t);
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
      case LayerKind::kBdma:   // nearest upsampling moves codes
      case LayerKind::kRubik:  // DepthToSpace too
        q = src;
        break;
      case LayerKind::kLrn:
        q.is_unsigned = src.is_unsigned;
        break;
      case LayerKind::kSoftmax:
        throw models::graph::GraphError(fmt::format(
            "the Softmax computing '{}' runs on the PPU at fp16 only (--precision fp16)",
            l.output));
      case LayerKind::kPpu:  // the PPU writes signed 8-bit codes of the output's own clip
        q.is_unsigned = false;
        break;
      case LayerKind::kSdp:
        q = sdp_code_format(l, options, wide, src);
        break;
    }
    t[l.output] = q;
  }
  // A Concat no layer reads (a graph output) has no format yet.
  for (const auto& entry : plan.concats) (void)concat_format(plan, entry.first, t);
  // Each concatenation group shares one format.
  for (const std::vector<std::string>& group : concat_groups(plan)) {
    std::vector<const TensorQuant*> members;
    for (const std::string& name : group) members.push_back(&t.at(name));
    const TensorQuant q = shared_format(members);
    for (const std::string& name : group) t[name] = q;
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

// One clip for each concatenation group (concat_groups), calibrated on the values of all its
// tensors, or the table's largest clip among its Concat outputs. Returns the tensors it set.
std::set<std::string> calibrate_groups(const Graph& g, const NetPlan& plan,
                                       const models::graph::TensorMap& values,
                                       const QuantOptions& options, const CalibrationTable* given,
                                       CalibrationTable& table) {
  std::set<std::string> done;
  for (const std::vector<std::string>& group : concat_groups(plan)) {
    TensorQuant q = table.at(group.front());
    std::string concat;  // the group's first Concat output, for messages
    for (const std::string& name : group) {
      if (concat.empty() && plan.concats.count(name) != 0) concat = name;
    }
    const std::string who = g.nodes[plan.concats.at(concat).node].label();
    if (given != nullptr) {
      q.clip = 0.0;
      for (const std::string& name : group) {
        const auto it = given->find(name);
        if (plan.concats.count(name) == 0 || it == given->end()) continue;
        q.clip = std::max(q.clip, it->second.clip);
        q.min = std::min(q.min, it->second.min);
        q.max = std::max(q.max, it->second.max);
      }
      if (!(q.clip > 0.0)) {
        throw CalibrationError(fmt::format(
            "the calibration table has no entry for tensor '{}' (needed by the device)", concat));
      }
      q.method = "table";
    } else {
      std::vector<float> v;
      for (const std::string& name : group) {
        const std::vector<float>& f = values.at(name).f;
        v.insert(v.end(), f.begin(), f.end());
      }
      if (v.empty()) throw CalibrationError(fmt::format("tensor '{}' is not float", concat));
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      q.min = *lo;
      q.max = *hi;
      q.clip = clip_of(v, q, options, &q.method);
      if (!(q.clip > 0.0)) q.clip = 1.0;  // all zero: any positive clip represents it
    }
    q.method += fmt::format(" (shared by {} and {} more tensors)", who, group.size() - 1);
    for (const PlannedLayer& l : plan.layers) {
      const bool member = std::find(group.begin(), group.end(), l.output) != group.end();
      if (member && l.kind == LayerKind::kConv && l.conv.clip_max > 0.0 &&
          q.clip > l.conv.clip_max) {
        throw models::graph::GraphError(fmt::format(
            "{}: its Clip bound {:g} is below the clip {:g} its output shares with {} (a capped "
            "input of a quantized Concat is not supported; --precision fp16 runs it)",
            layer_nodes_label(g, l), l.conv.clip_max, q.clip, who));
      }
    }
    for (const std::string& name : group) {
      table[name] = q;
      done.insert(name);
    }
  }
  return done;
}

// Tensor `name`'s clip, min, max and method: from the calibration table `given` when there is
// one, else measured on its calibration values (clip_of).
void measure_clip(const std::string& name, const CalibrationTable* given,
                  const models::graph::TensorMap& values, const QuantOptions& options,
                  TensorQuant& q) {
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
}

}  // namespace

std::string quantized_refusal(const Graph& g, const PlannedLayer& l, const QuantOptions& options) {
  if (fp16_values(options.precision)) return "";
  if (l.kind == LayerKind::kSoftmax) {
    return fmt::format("the PPU's softmax kernel runs at fp16, not {}",
                       precision_name(options.precision));
  }
  if (l.kind != LayerKind::kSdp) return "";
  try {
    (void)sdp_code_format(l, options, 8, TensorQuant{});
  } catch (const models::graph::GraphError& e) {
    return e.what();
  }
  // An Add of a constant broadcast to the output (program_ew.cpp lower_sdp_quantized: SDP adds a
  // tensor's codes or a per-channel constant, not an element-wise constant at int8).
  if (!l.sdp.unary && l.sdp.convert == SdpAttrs::Convert::kNone && l.sdp.ew == EwOp::kAdd &&
      !l.sdp.operand.empty() && g.is_constant(l.sdp.operand)) {
    return fmt::format(
        "the SDP layer computing '{}': an Add of a broadcast constant is not "
        "supported at {} (it runs at fp16)",
        l.output, precision_name(options.precision));
  }
  return "";
}

bool int8_matmul_node(const Graph& g, const models::graph::Node& n) {
  if ((n.op_type != "MatMul" && n.op_type != "Gemm") || n.inputs.size() < 2) return false;
  for (std::size_t k = 0; k < 2; ++k) {
    const std::string& in = n.inputs[k];
    if (in.empty()) return false;
    if (!g.is_constant(in)) continue;
    const Tensor& c = g.initializers.at(in);
    if (!models::graph::is_float(c.dtype) || c.shape.size() != 2) return false;
  }
  return true;
}

CalibrationTable calibrate_matmul_operands(const Graph& g, const NetPlan& plan,
                                           const Tensor& images, const QuantOptions& options,
                                           const CalibrationTable* given) {
  std::vector<std::string> names;  // the operands, in plan order, each once
  for (const PlannedLayer& l : plan.layers) {
    if (l.kind != LayerKind::kPpu || l.nodes.size() != 1) continue;
    const models::graph::Node& n = g.nodes.at(l.nodes[0]);
    if (!int8_matmul_node(g, n)) continue;
    for (std::size_t k = 0; k < 2; ++k) {
      const std::string& in = n.inputs[k];
      if (g.is_constant(in) || std::find(names.begin(), names.end(), in) != names.end()) continue;
      names.push_back(in);
    }
  }
  CalibrationTable table;
  if (names.empty()) return table;
  if (given == nullptr && options.calibration == ClipCalibration::kOctavDevice) {
    throw models::graph::GraphError(
        "--precision mixed --calibration octav-device: the OCTAV unit clips the DLA's "
        "convolution outputs, not the FP16 operands of a matrix product on the PPU (calibrate "
        "them offline: max, percentile, mse-hist or octav)");
  }
  models::graph::TensorMap values;
  if (given == nullptr) values = models::graph::run_reference_images(g, plan.input, images);
  for (const std::string& name : names) {
    TensorQuant q;
    q.bits = 8;
    q.is_unsigned = false;
    measure_clip(name, given, values, options, q);
    q.method += " (an INT8 matmul operand)";
    if (!(q.clip > 0.0)) {
      q.clip = 1.0;
      q.method += " (all zero: 1)";
    }
    table[name] = q;
  }
  return table;
}

CalibrationTable calibrate(const Graph& g, const NetPlan& plan, const Tensor& images,
                           const QuantOptions& options, const CalibrationTable* given) {
  CalibrationTable table = code_formats(plan, images, options, given);
  models::graph::TensorMap values;
  if (given == nullptr) values = models::graph::run_reference_images(g, plan.input, images);
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
  const std::set<std::string> shared = calibrate_groups(g, plan, values, options, given, table);
  for (const std::string& name : order) {
    if (shared.count(name) != 0) continue;
    TensorQuant& q = table.at(name);
    const PlannedLayer* layer = input_of(name);
    if (layer != nullptr && (layer->kind == LayerKind::kPool || layer->kind == LayerKind::kBdma ||
                             layer->kind == LayerKind::kRubik || keeps_codes(*layer))) {
      const TensorQuant& src = table.at(codes_of(plan, layer->input));
      q.clip = src.clip;
      q.min = src.min;
      q.max = src.max;
      q.method = "input of " + layer_nodes_label(g, *layer);
      continue;
    }
    measure_clip(name, given, values, options, q);
    if (layer != nullptr && layer->kind == LayerKind::kConv && layer->conv.clip_max > 0.0) {
      q.clip = std::min(q.clip, layer->conv.clip_max);
    }
    // Sigmoid, Tanh, Erf, HardSigmoid: |y| <= 1, so no clip above 1.
    if (layer != nullptr && layer->kind == LayerKind::kSdp && layer->sdp.unary &&
        layer->sdp.unary->magnitude_bound() > 0.0) {
      q.clip = std::min(q.clip, layer->sdp.unary->magnitude_bound());
    }
    if (!(q.clip > 0.0)) {
      // An all-zero tensor on the calibration data: any positive clip represents it.
      q.clip = 1.0;
      q.method += " (all zero: 1)";
    }
  }
  // A channel slice is its source's codes.
  for (const auto& [name, slice] : plan.slices) {
    TensorQuant q = table.at(slice.source);
    q.method = "channels of '" + slice.source + "'";
    table[name] = q;
  }
  return table;
}

}  // namespace octasim::firmware::net
