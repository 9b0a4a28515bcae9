#include "firmware/net/program.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/core.h>

#include "firmware/dla/conv_winograd.hpp"
#include "firmware/net/batch.hpp"
#include "firmware/net/builder.hpp"
#include "models/numerics/float_format.hpp"

namespace octasim::firmware::net {

std::uint64_t NetProgram::macs() const {
  std::uint64_t n = 0;
  for (const NetLayer& l : layers) n += l.macs;
  return n;
}

std::uint64_t NetProgram::network_macs() const {
  std::uint64_t n = 0;
  for (const NetLayer& l : layers) n += l.network_macs;
  return n;
}

FallbackSummary fallback_summary(const NetProgram& p) {
  FallbackSummary s;
  for (const NetLayer& l : p.layers) {
    if (!ppu_channel(l.hw)) {
      ++s.dla_layers;
      continue;
    }
    ++s.ppu_layers;
    const auto* node = std::get_if<PpuNodeLayer>(&l.hw);
    if (node != nullptr && !l.fallback.empty()) {
      ++s.ops[node->image.op_type];
      s.nodes.emplace_back(l.nodes, l.fallback);
    }
  }
  return s;
}

bool integer_network(const models::graph::Graph& g) {
  return !g.inputs.empty() && !models::graph::is_float(g.inputs[0].dtype);
}

const ConvLayer* layer_conv(const NetLayer& l) {
  if (const auto* conv = std::get_if<ConvLayer>(&l.hw)) return conv;
  if (const auto* cp = std::get_if<ConvPoolLayer>(&l.hw)) return &cp->conv;
  return nullptr;
}

namespace detail {
namespace {

// Round half away from zero, as the device's convertors round.
double round_away(double v) {
  return v < 0 ? -std::floor(-v + 0.5) : std::floor(v + 0.5);
}

}  // namespace

NetProgram Builder::run() {
  if (integer_) {
    if (!prog_.hw.int16) {
      throw GraphError(
          fmt::format("{} has no INT16 convolution (an integer network's values "
                      "run as INT16: nv_full, nv_large, soc_large)",
                      hw_.name));
    }
  } else if (fp16()) {
    if (!hw_.dla.feature_fp16) {
      throw GraphError(
          fmt::format("{} has no FP16 datapath (--precision fp16 needs nv_full, "
                      "nv_large or soc_large)",
                      hw_.name));
    }
  } else if (!prog_.hw.int8) {
    throw GraphError(
        fmt::format("{} has no INT8 convolution; octasim's network compiler "
                    "quantizes to INT8/INT4 codes",
                    hw_.name));
  }
  if (options_.precision == NetPrecision::kInt16 && !integer_) {
    throw GraphError(
        "precision int16 is not supported by the network compiler yet "
        "(int8, int4, fp16)");
  }
  plan_layouts();
  prog_.input = tensor(plan_.input);
  // The last layer reading each tensor: its buffer is free for later layers after that one. A
  // Concat's buffer holds its inputs (storage()): it lives until the last read of any of them.
  std::map<std::string, std::size_t> last_read;
  for (std::size_t i = 0; i < plan_.layers.size(); ++i) {
    for (const std::string& t : layer_reads(g_, plan_.layers[i])) last_read[storage(t)] = i;
  }
  std::set<std::string> kept{storage(plan_.input)};
  for (const std::string& out : plan_.outputs) kept.insert(storage(plan_.resolve(out)));
  // A buffer whose last reader runs on the PPU (or on the DLA) is not given to the layer right
  // after it when that one runs on the other engine: the two may run at once (the overlapped
  // schedule), which reusing the buffer would forbid. It is freed one layer later.
  const auto on_ppu = [](const PlannedLayer& l) {
    return l.kind == LayerKind::kPpu || l.kind == LayerKind::kSoftmax;
  };
  std::vector<std::pair<std::uint64_t, std::uint64_t>> deferred;
  const auto release_dead = [&](const PlannedLayer& l, std::size_t i) {
    for (const auto& [address, bytes] : deferred) activations_.release(address, bytes);
    deferred.clear();
    const bool defer = i + 1 < plan_.layers.size() && on_ppu(plan_.layers[i + 1]) != on_ppu(l);
    std::vector<std::string> touched = layer_reads(g_, l);
    touched.push_back(l.output);
    for (std::string& t : touched) t = storage(t);
    for (const std::string& t : touched) {
      const auto r = last_read.find(t);
      const bool dead = r == last_read.end() ? t == l.output : r->second == i;
      if (dead && kept.count(t) == 0 && released_.insert(t).second) {
        const FeatureSurface& s = tensors_.at(t).surface;
        const std::uint64_t bytes = surface_bytes(s, elem(), atom());
        if (defer) {
          deferred.emplace_back(s.address, bytes);
        } else {
          activations_.release(s.address, bytes);
        }
      }
    }
  };
  for (std::size_t i = 0; i < plan_.layers.size(); ++i) {
    const PlannedLayer& l = plan_.layers[i];
    // A pooling that is the only reader of a convolution's output runs on the fly.
    const PlannedLayer* pool = i + 1 < plan_.layers.size() ? &plan_.layers[i + 1] : nullptr;
    // A convolution run group by group (groups.cpp) writes its output in parts: a pooling reads
    // it from memory.
    const auto by_groups = [&] {
      return l.conv.groups > 1 && !conv_groups(l, tensor(l.input), tensor(l.output)).empty();
    };
    const bool fusable = pool != nullptr && l.kind == LayerKind::kConv &&
                         l.conv.matrix_bias.empty() && pool->kind == LayerKind::kPool &&
                         pool->input == l.output && !pool->pool.exclude_pad &&
                         last_read[l.output] == i + 1 && kept.count(l.output) == 0 &&
                         options_.calibration != ClipCalibration::kOctavDevice && !by_groups();
    bool fused = false;
    try {
      if (fusable) {
        fused = lower_conv_pool(l, *pool);
      } else {
        lower(l);
      }
    } catch (const FirmwareError& e) {
      throw LayerRefusal(fmt::format("{}: {}", layer_nodes_label(g_, l), e.what()), l.nodes);
    } catch (const LayerRefusal&) {
      throw;
    } catch (const GraphError& e) {
      // Which planned layer refused: the compiler may give its node to the PPU (compiler.cpp).
      throw LayerRefusal(e.what(),
                         l.kind == LayerKind::kPpu ? std::vector<std::size_t>{} : l.nodes);
    }
    release_dead(l, i);
    if (fused) release_dead(*pool, ++i);
  }
  for (const std::string& out : plan_.outputs) {
    if (g_.is_constant(plan_.resolve(out))) {
      prog_.outputs.push_back(constant_output(out));
      continue;
    }
    NetTensor t = tensor(plan_.resolve(out));  // (a channel slice no layer read: made here)
    t.name = out;
    t.shape = plan_.shapes.at(out);
    prog_.outputs.push_back(t);
  }
  prog_.memory_end = activations_.end();
  prog_.constants_end = next_;
  return std::move(prog_);
}

std::uint64_t Builder::allocate(std::uint64_t bytes) {
  const std::uint64_t a = next_;
  next_ += (bytes + kAlign - 1) / kAlign * kAlign;
  if (next_ > (std::uint64_t{1} << 32)) {
    throw GraphError(
        fmt::format("the network needs more than the 2 GiB of DRAM at 0x{:x}", kMemoryBase));
  }
  return a;
}

NetTensor Builder::constant_output(const std::string& name) {
  const models::graph::Tensor& v = g_.initializers.at(plan_.resolve(name));
  if (!fp16() && !integer_) {
    throw GraphError(fmt::format(
        "output '{}' is a constant folded at compile time, which an INT8 network's calibrated "
        "codes do not hold (FP16 and integer networks do)",
        name));
  }
  NetTensor t;
  t.name = name;
  t.shape = plan_.shapes.at(name);
  t.precision = elem();
  t.quant.bits = 16;
  t.quant.clip = integer_ ? 32767.0 : 0.0;
  t.quant.method = integer_ ? "integer" : "fp16";
  prog_.table[name] = t.quant;
  t.rows = t.shape.size() == 2;
  const Cube& c = plan_.cubes.at(plan_.resolve(name));
  FeatureSurface s = packed_surface(0, c.width, c.height, c.channels, atom());
  models::ops::ConvCube cube(c.width, c.height, c.channels);
  const bool exact = !models::graph::is_float(v.dtype);
  for (std::size_t i = 0; i < v.elements(); ++i) {
    const double x = v.at(i);
    std::int32_t code = 0;
    if (integer_) {
      if (!exact || x < -32768.0 || x > 32767.0) {
        throw GraphError(fmt::format(
            "output '{}' is a constant folded at compile time; element {} ({}) is not an INT16 "
            "integer",
            name, i, x));
      }
      code = static_cast<std::int32_t>(x);
    } else {
      const std::uint16_t h = models::fp16_from_double(x);
      // Integer values must come back exactly; float ones are rounded to FP16 as every value.
      if (exact && double{models::fp16_to_float(h)} != x) {
        throw GraphError(fmt::format(
            "output '{}' is a constant folded at compile time; element {} ({}) is not exact in "
            "FP16",
            name, i, x));
      }
      code = h;
    }
    cube.data[tensor_cube_index(t, cube, i)] = code;
  }
  s.address = constant(fmt::format("constant output '{}'", name),
                       conv_feature_image(cube, s, t.precision, atom()));
  t.surface = s;
  return t;
}

std::uint64_t Builder::constant(std::string what, std::vector<std::uint8_t> bytes) {
  const std::uint64_t a = allocate(bytes.size());
  prog_.constants.push_back({a, std::move(what), std::move(bytes)});
  return a;
}

Precision Builder::output_precision(const PlannedLayer& l) const {
  if (l.kind != LayerKind::kSdp) return elem();
  switch (l.sdp.convert) {
    case SdpAttrs::Convert::kQuantize:
      return Precision::kInt16;
    case SdpAttrs::Convert::kDequantize:
      return Precision::kFp16;
    case SdpAttrs::Convert::kNone:
      break;
  }
  return elem();
}

const NetTensor& Builder::tensor(const std::string& name, Precision precision) {
  const auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  const auto slice = plan_.slices.find(name);
  if (slice != plan_.slices.end()) return slice_tensor(name, slice->second);
  const Cube& c = plan_.cubes.at(name);
  NetTensor t;
  t.name = name;
  t.shape = plan_.shapes.at(name);
  t.precision = precision;
  if (fp16() || integer_) {
    const bool integers = precision == Precision::kInt16;
    t.quant.bits = 16;
    // Integers: step 1, the code is the value.
    t.quant.clip = integers ? 32767.0 : 0.0;
    t.quant.method = integers ? "integer" : "fp16";
    prog_.table[name] = t.quant;
  } else {
    t.quant = table_.at(name);
  }
  t.rows = t.shape.size() == 2 && plan_.transposed.count(name) == 0;
  const auto layout = layouts_.find(name);
  if (layout != layouts_.end()) t.channel_map = layout->second.map;
  if (name == plan_.input) t.fold = plan_input_fold();
  t.surface =
      t.fold ? folded_input_surface(*t.fold, precision)
             : placed_surface(name, layout != layouts_.end() ? layout->second.physical : c.channels,
                              precision);
  return tensors_.emplace(name, t).first->second;
}

void Builder::lower(const PlannedLayer& l) {
  NetLayer out;
  out.engine = layer_engine(l.kind);
  out.nodes = layer_nodes_label(g_, l);
  out.input = l.input;
  out.output = l.output;
  const NetTensor& in = tensor(l.input);
  const NetTensor& dst = tensor(l.output, output_precision(l));
  if (l.kind == LayerKind::kSdp && l.sdp.convert == SdpAttrs::Convert::kDequantize) {
    return lower_dequantize(l, in, dst, out);
  }
  if (l.kind == LayerKind::kSdp && l.sdp.unary) return lower_activation(l, in, dst, out);
  switch (l.kind) {
    case LayerKind::kConv:
      if (!l.conv.matrix_bias.empty()) return lower_conv_matrix_bias(l, in, dst, out);
      if (l.conv.groups > 1) {
        const std::vector<ConvGroup> groups = conv_groups(l, in, dst);
        if (!groups.empty()) return lower_conv_groups(l, in, dst, out, groups);
      }
      out.hw = lower_conv(l, in, dst, out);
      break;
    case LayerKind::kPool:
      if (l.pool.exclude_pad) return lower_pool_exclude_pad(l, in, dst, out);
      out.hw = lower_pool(l, in, dst);
      break;
    case LayerKind::kLrn:
      out.hw = lower_lrn(l, in, dst);
      break;
    case LayerKind::kSdp:
      out.hw = lower_sdp(l, in, dst, out.nodes);
      break;
    case LayerKind::kSoftmax:
      out.hw = lower_softmax(l, in, dst, out.nodes);
      break;
    case LayerKind::kPpu: {
      PpuNodeLayer node = lower_ppu_node(l, out.nodes);
      // The node's matrix products (MatMul of two activations) are the network's, done by the
      // PPU's tensor cores, not the DLA's MAC array (macs stays 0).
      out.network_macs = models::ops::node_cost(node.image).macs;
      out.hw = std::move(node);
      out.fallback = l.ppu.reason;
      break;
    }
    case LayerKind::kBdma:
      out.hw = lower_resize(l, in, dst);
      break;
    case LayerKind::kRubik:
      out.hw = lower_depth_to_space(l, in, dst);
      break;
  }
  push_layer(std::move(out));
  if (l.kind == LayerKind::kConv && options_.calibration == ClipCalibration::kOctavDevice &&
      !fp16()) {
    add_device_clip(l);
  }
}

void Builder::add_device_clip(const PlannedLayer& l) {
  if (plan_.concat_parent.count(l.output) != 0) {
    throw GraphError(fmt::format(
        "{}: --calibration octav-device is not supported for an input of a Concat (the snapped "
        "codes are written to a surface of their own)",
        layer_nodes_label(g_, l)));
  }
  NetTensor& t = tensors_.at(l.output);
  const std::string nodes = prog_.layers.back().nodes;
  OctavLayer o;
  o.type = OctavDataType::kInt8;
  o.is_unsigned = t.quant.is_unsigned;
  o.src = t.surface;
  o.granularity = OctavGranularity::kTensor;
  o.bits = t.quant.is_unsigned ? code_bits(options_.precision) : 8;
  o.max_iterations = 20;
  o.tolerance = 1e-4F;
  o.init = OctavInit::kHalfMax;
  o.auto_program = OctavAutoProgram::kFakeQuant;
  FakeQuantSdpLayer f;
  f.precision = Precision::kInt8;
  f.src = t.surface;
  f.dst = t.surface;
  f.dst.address = activations_.allocate(surface_bytes(t.surface, Precision::kInt8, atom()));
  f.bits = o.bits;
  f.is_unsigned = o.is_unsigned;
  (void)fake_quant_sdp_model_config(f, 1.0, atom());  // checks the layer
  t.quant.method = fmt::format("{}; OCTAV {}-bit grid in the device", t.quant.method, o.bits);
  prog_.table[l.output].method = t.quant.method;
  NetLayer octav;
  octav.engine = "OCTAV";
  octav.nodes = nodes + " (clip in the device)";
  octav.input = octav.output = l.output;
  octav.hw = o;
  prog_.layers.push_back(std::move(octav));
  NetLayer fq;
  fq.engine = "SDP";
  fq.nodes = nodes + " (snap to the clip's grid)";
  fq.input = fq.output = l.output;
  fq.hw = f;
  prog_.layers.push_back(std::move(fq));
  // The codes before snapping are dead once the SDP has read them.
  activations_.release(t.surface.address, surface_bytes(t.surface, Precision::kInt8, atom()));
  t.surface = f.dst;
}

bool Builder::lower_conv_pool(const PlannedLayer& conv, const PlannedLayer& pool) {
  NetLayer out;
  out.engine = layer_engine(LayerKind::kConv);
  out.nodes = layer_nodes_label(g_, conv);
  out.input = conv.input;
  out.output = conv.output;
  ConvPoolLayer cp;
  // The convolution's output surface is never written by the device; the golden (models/)
  // passes through it.
  cp.conv = lower_conv(conv, tensor(conv.input), tensor(conv.output), out);
  cp.pool = lower_pool(pool, tensor(conv.output), tensor(pool.output));
  try {
    check_conv_pool(cp, prog_.hw);
  } catch (const FirmwareError&) {
    // Not on the fly (e.g. the pooling needs split widths, the convolution split heights): the
    // two layers through memory.
    out.hw = cp.conv;
    push_layer(std::move(out));
    lower(pool);
    return true;
  }
  out.nodes += " + " + layer_nodes_label(g_, pool);
  out.output = pool.output;
  out.hw = cp;
  prog_.layers.push_back(std::move(out));
  return true;
}

ConvLayer Builder::direct_conv(const ConvAttrs& a, Precision precision, const FeatureSurface& src,
                               std::uint32_t kernels) {
  ConvLayer conv;
  conv.precision = precision;
  conv.src = src;
  conv.kernels = kernels;
  conv.kernel_width = a.kernel_w;
  conv.kernel_height = a.kernel_h;
  conv.stride_x = a.stride_x;
  conv.stride_y = a.stride_y;
  conv.dilation_x = a.dilation_x;
  conv.dilation_y = a.dilation_y;
  conv.pad_left = a.pad_left;
  conv.pad_right = a.pad_right;
  conv.pad_top = a.pad_top;
  conv.pad_bottom = a.pad_bottom;
  return conv;
}

ConvLayer Builder::lower_conv(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                              NetLayer& out, const ConvGroup* group) {
  const ConvAttrs& a = l.conv;
  const Cube& c = plan_.cubes.at(l.input);
  if (a.integer != integer_) {
    throw GraphError(fmt::format("{}: {} in {} network", out.nodes,
                                 a.integer ? "an integer operator" : "a float operator",
                                 integer_ ? "an integer" : "a float"));
  }
  // The codes over the channels the layer reads: a padded layout's, or a group's window.
  const auto place = [&](QuantizedWeights& w) {
    if (!in.channel_map.empty())
      w.codes = spread_input_channels(w.codes, in.channel_map, in.surface.channels);
    if (group != nullptr && group->in_channels != w.codes.channels) {
      std::vector<std::uint32_t> map(w.codes.channels);
      for (std::uint32_t k = 0; k < w.codes.channels; ++k) map[k] = group->offset + k;
      w.codes = spread_input_channels(w.codes, map, group->in_channels);
    }
  };
  // The layer's weights from those of `weights(g)`, ONNX group g's (all groups: nullopt).
  const auto layer_weights = [&](auto weights) {
    return group != nullptr ? group_weights(*group, weights) : weights(std::nullopt);
  };
  QuantizedWeights w = layer_weights([&](std::optional<unsigned> index) {
    return integer_ ? integer_conv_weights(g_, l, c, index)
           : fp16() ? fp16_conv_weights(g_, l, c, index)
                    : quantize_conv_weights(g_, l, c, code_bits(options_.precision),
                                            options_.weights, index);
  });
  place(w);
  ConvLayer conv = direct_conv(a, elem(), in.surface, w.codes.kernels);
  if (in.fold) fold_conv_layer(*in.fold, conv, w.codes);  // fold.hpp
  conv.dst = dst.surface;
  const ConvCubeSize oc = conv_output_cube(conv);
  if (oc.width != dst.surface.width || oc.height != dst.surface.height) {
    throw GraphError(fmt::format("{}: output {}x{} differs from the graph's {}x{}", out.nodes,
                                 oc.width, oc.height, dst.surface.width, dst.surface.height));
  }
  if (std::optional<ConvLayer> wino =
          winograd_layer(l, in, conv, a.groups > 1 && group == nullptr)) {
    conv = *wino;
    w = layer_weights([&](std::optional<unsigned> index) {
      return winograd_conv_weights(g_, l, c, code_bits(options_.precision), options_.weights,
                                   index);
    });
    place(w);
  }
  conv.weight_address = constant(out.nodes + " weights",
                                 conv.winograd ? winograd_weight_image(w.codes, elem(), prog_.hw)
                                               : conv_weight_image(w.codes, elem(), prog_.hw));
  if (integer_ && !a.input_zero_point.empty()) {
    // Padded positions hold the zero point: (x - zero point) is 0 there, as ONNX pads.
    conv.pad_value = static_cast<std::int32_t>(g_.initializers.at(a.input_zero_point).at(0));
  }
  conv.sdp = !a.residual.empty() ? residual_stage(w, l, in, dst, out.nodes)
             : integer_          ? integer_stage(w.bias, a, out.nodes)
             : fp16()            ? fp16_stage(w.bias, a, out.nodes)
                                 : requantization(w, in.quant, dst.quant, a.relu, out.nodes);
  // The channels the device multiplies: the input's (logical) channels, or a group's window.
  const std::uint64_t read_channels = group != nullptr ? group->in_channels : c.channels;
  const std::uint64_t dense_macs =
      std::uint64_t{oc.width} * oc.height * conv.kernels * a.kernel_w * a.kernel_h * read_channels;
  // Winograd: 16 products per 2x2 outputs and channel, 4 per output where direct takes 9.
  out.macs = conv.winograd ? dense_macs / (a.kernel_w * a.kernel_h) * 4 : dense_macs;
  // A grouped convolution's kernels see C / groups channels each; the dense expansion the
  // device runs (or a group's window wider than its channels) multiplies the others by zero.
  out.network_macs = dense_macs / read_channels * (c.channels / a.groups);
  const auto measured = options_.winograd_measured.find(l.output);
  if (measured != options_.winograd_measured.end()) out.winograd_measure = measured->second;
  out.weight_scale_min = *std::min_element(w.scales.begin(), w.scales.end());
  out.weight_scale_max = *std::max_element(w.scales.begin(), w.scales.end());
  return conv;  // push_layer splits it or refuses it (split_conv), before anything runs
}

SdpStage Builder::requantization(const QuantizedWeights& w, const TensorQuant& x,
                                 const TensorQuant& y, bool relu, const std::string& who) {
  const std::size_t k = w.scales.size();
  std::vector<double> bias(k), mul(k);
  double bias_max = 0.0, mul_max = 0.0;
  for (std::size_t i = 0; i < k; ++i) {
    const double acc_step = x.step() * w.scales[i];
    bias[i] = w.bias[i] / acc_step;
    mul[i] = acc_step / y.step();
    bias_max = std::max(bias_max, std::abs(bias[i]));
    mul_max = std::max(mul_max, mul[i]);
  }
  SdpBiasScale bs;
  while (bias_max / std::ldexp(1.0, static_cast<int>(bs.alu_shift)) > 32767.0) ++bs.alu_shift;
  if (bs.alu_shift > 31) throw GraphError(fmt::format("{}: bias out of range", who));
  // The largest t with every m[k] = round(M_k 2^t) in INT16.
  int t = 0;
  while (t < 63 && round_away(mul_max * std::ldexp(1.0, t + 1)) <= 32767.0) ++t;
  if (round_away(mul_max * std::ldexp(1.0, t)) > 32767.0) {
    throw GraphError(
        fmt::format("{}: the requantization factor {} exceeds SDP's INT16 "
                    "multiplier",
                    who, mul_max));
  }
  bs.mul_shift = static_cast<unsigned>(t);
  std::vector<std::int16_t> alu(k), m(k);
  for (std::size_t i = 0; i < k; ++i) {
    alu[i] = static_cast<std::int16_t>(
        round_away(bias[i] / std::ldexp(1.0, static_cast<int>(bs.alu_shift))));
    m[i] = static_cast<std::int16_t>(round_away(mul[i] * std::ldexp(1.0, t)));
  }
  bs.address =
      constant(who + " bias/scale", sdp_bias_scale_table(alu, m, Precision::kInt8, atom()));
  SdpStage s;
  s.bias_scale = bs;
  s.relu = relu;
  if (y.max_code() < 127) s.clamp_max = static_cast<std::int16_t>(y.max_code());
  s.cvt = SdpConvertor{0, 1, 0};
  return s;
}

SdpStage Builder::integer_stage(const std::vector<double>& bias, const ConvAttrs& a,
                                const std::string& who) {
  SdpStage s;
  s.relu = a.relu;
  s.cvt = SdpConvertor{0, 1, 0};
  if (a.clip_max > 0.0) throw GraphError(fmt::format("{}: Clip in an integer network", who));
  if (std::all_of(bias.begin(), bias.end(), [](double b) { return b == 0.0; })) return s;
  std::vector<std::int16_t> alu, mul(bias.size(), 1);
  for (double b : bias) {
    if (std::abs(b) > 32767.0) {
      throw GraphError(
          fmt::format("{}: the zero-point correction {} is beyond SDP's INT16 operand", who, b));
    }
    alu.push_back(static_cast<std::int16_t>(b));
  }
  s.bias_scale = SdpBiasScale{constant(who + " zero-point correction",
                                       sdp_bias_scale_table(alu, mul, Precision::kInt16, atom())),
                              0, 0};
  return s;
}

CdpLayer Builder::lower_lrn_fp16(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst) {
  LrnParams lp;
  lp.local_size = l.lrn.size;
  lp.k = l.lrn.bias;
  lp.alpha = l.lrn.alpha;
  lp.beta = l.lrn.beta;
  lp.input_scale = 1.0;
  const LrnLut lut = make_lrn_lut(lp, Precision::kFp16);
  CdpLayer c;
  c.precision = Precision::kFp16;
  c.src = in.surface;
  c.dst = dst.surface;
  c.local_size = l.lrn.size;
  c.lut = lut.config;
  c.lut_tables = lut.tables;
  (void)cdp_model_params(c, atom());
  return c;
}

CdpLayer Builder::lower_lrn(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst) {
  if (integer_) {
    throw GraphError(fmt::format("{}: LRN in an integer network", layer_nodes_label(g_, l)));
  }
  if (fp16()) return lower_lrn_fp16(l, in, dst);
  LrnParams lp;
  lp.local_size = l.lrn.size;
  lp.k = l.lrn.bias;
  lp.alpha = l.lrn.alpha;
  lp.beta = l.lrn.beta;
  lp.input_scale = in.quant.step();
  const LrnLut lut = make_lrn_lut(lp, Precision::kInt8);
  CdpLayer c;
  c.precision = Precision::kInt8;
  c.src = in.surface;
  c.dst = dst.surface;
  c.local_size = l.lrn.size;
  c.in_cvt = CdpConvertor{0, 1, 0};
  // y = x f at the input's step, times s_x / s_y: scale 2^u * s_x/s_y in INT16.
  const double ratio = in.quant.step() / dst.quant.step();
  if (round_away(ratio) > 32767.0) {
    throw GraphError(
        fmt::format("{}: the output step is {} times finer than the input's, "
                    "beyond CDP's INT16 output scale",
                    layer_nodes_label(g_, l), ratio));
  }
  int u = 0;
  while (lut.fraction_bits + u < 63 && round_away(ratio * std::ldexp(1.0, u + 1)) <= 32767.0) ++u;
  c.out_cvt = CdpConvertor{0, static_cast<std::int16_t>(round_away(ratio * std::ldexp(1.0, u))),
                           lut.fraction_bits + static_cast<unsigned>(u)};
  c.lut = lut.config;
  c.lut_tables = lut.tables;
  (void)cdp_model_params(c, atom());
  return c;
}

}  // namespace detail

NetProgram build_program(const models::graph::Graph& g, const NetPlan& plan,
                         const CalibrationTable& table, const QuantOptions& options,
                         const HwConfig& hw) {
  return batch_program(detail::Builder(g, plan, table, options, hw).run(), options.fc_batch);
}

}  // namespace octasim::firmware::net
