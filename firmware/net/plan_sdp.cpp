// The SDP and PPU layers of the network planner (planner.hpp): ReLU, LeakyRelu, a Clip no
// convolution takes, BatchNormalization, Add/Mul, QuantizeLinear/DequantizeLinear on SDP, Softmax
// on the PPU.
#include <cmath>
#include <tuple>

#include <fmt/core.h>

#include "firmware/net/planner.hpp"

namespace octasim::firmware::net::detail {

void Planner::plan_sdp(std::size_t i) {
  const Node& n = g_.nodes[i];
  PlannedLayer l;
  l.kind = LayerKind::kSdp;
  l.nodes = {i};
  l.output = n.outputs.at(0);
  if (n.op_type == "Relu") {
    l.input = data_input(n, false);
    l.sdp.relu = true;
  } else if (n.op_type == "LeakyRelu") {
    // x where x >= 0, else alpha x: BS's multiplier in PReLU mode by a register operand.
    l.input = data_input(n, false);
    l.sdp.leaky_slope = n.get_float("alpha", 0.01F);
  } else if (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear") {
    plan_convert(n, l);
    set_cube(l.output, &n);
    plan_.layers.push_back(std::move(l));
    return;
  } else if (n.op_type == "BatchNormalization") {
    plan_batch_norm(n, l);
  } else if (n.op_type == "Clip") {
    // One not fused into a convolution or Gemm: BS's ALU MAX (lo), BN's ALU MIN (hi).
    l.input = data_input(n, false);
    std::tie(l.sdp.clip_lo, l.sdp.clip_hi) = clip_bounds(n);
  } else {
    plan_binary(n, l);
  }
  // A Relu after it; a Clip after an SDP layer is a layer of its own.
  if (!l.sdp.relu && !l.sdp.clip_lo && !l.sdp.clip_hi) fuse_activation(l, false);
  l.sdp.relu = l.sdp.relu || l.conv.relu;
  set_cube(l.output, &n);
  plan_.layers.push_back(std::move(l));
}

void Planner::plan_batch_norm(const Node& n, PlannedLayer& l) {
  if (n.get_int("training_mode", 0) != 0 || n.outputs.size() > 1) {
    throw GraphError(
        fmt::format("{}: training_mode (batch statistics) is not supported: the DLA runs inference",
                    n.label()));
  }
  l.input = data_input(n, false);
  const std::uint32_t channels = plan_.cubes.at(l.input).channels;
  const auto& scale = constant(n, 1, "scale");
  const auto& bias = constant(n, 2, "bias");
  const auto& mean = constant(n, 3, "mean");
  const auto& var = constant(n, 4, "variance");
  for (const auto* t : {&scale, &bias, &mean, &var}) {
    if (t->elements() != channels) {
      throw GraphError(
          fmt::format("{}: {} values for {} channels", n.label(), t->elements(), channels));
    }
  }
  const double eps = n.get_float("epsilon", 1e-5F);
  for (std::uint32_t c = 0; c < channels; ++c) {
    const double m = scale.at(c) / std::sqrt(var.at(c) + eps);
    l.sdp.mul.push_back(m);
    l.sdp.add.push_back(bias.at(c) - mean.at(c) * m);
  }
}

void Planner::plan_binary(const Node& n, PlannedLayer& l) {
  if (n.inputs.size() != 2) throw GraphError(fmt::format("{}: expects 2 inputs", n.label()));
  const bool first_const = g_.is_constant(n.inputs[0]);
  // Two device tensors: the data operand is the one of the output's shape (Mul(s, x) as well as
  // Mul(x, s) for a per-channel scale s).
  const bool swap =
      first_const || (!g_.is_constant(n.inputs[1]) && plan_.shapes.count(n.inputs[0]) != 0 &&
                      plan_.shapes.count(n.inputs[1]) != 0 &&
                      plan_.shapes.at(n.inputs[0]) != plan_.shapes.at(n.outputs[0]) &&
                      plan_.shapes.at(n.inputs[1]) == plan_.shapes.at(n.outputs[0]));
  const std::string& data = swap ? n.inputs[1] : n.inputs[0];
  const std::string& other = swap ? n.inputs[0] : n.inputs[1];
  if (g_.is_constant(data)) {
    throw GraphError(fmt::format("{}: both operands are constants", n.label()));
  }
  Node reordered = n;
  reordered.inputs = {data, other};
  l.input = data_input(reordered, false);
  const auto& out_shape = plan_.shapes.at(l.output);
  if (plan_.shapes.at(l.input) != out_shape) {
    throw GraphError(fmt::format("{}: the data operand {} is broadcast to {}", n.label(),
                                 models::graph::shape_string(plan_.shapes.at(l.input)),
                                 models::graph::shape_string(out_shape)));
  }
  const bool add = n.op_type == "Add";
  if (n.op_type == "PRelu") {
    // The slope broadcast to the output as EW's operand, the multiplier in PReLU mode.
    if (!g_.is_constant(n.inputs[1])) {
      throw GraphError(fmt::format("{}: the slope must be a constant", n.label()));
    }
    l.sdp.ew = EwOp::kPrelu;
    l.sdp.operand = n.inputs[1];
    return;
  }
  if (g_.is_constant(other)) {
    const auto& t = g_.initializers.at(other);
    const std::uint32_t channels = plan_.cubes.at(l.input).channels;
    if (per_channel(t, out_shape)) {
      for (std::uint32_t c = 0; c < channels; ++c) {
        const double v = t.at(t.elements() == 1 ? 0 : c);
        (add ? l.sdp.add : l.sdp.mul).push_back(v);
      }
      if (add) l.sdp.mul.assign(channels, 1.0);
      return;
    }
  } else if (!add && channel_operand(n, other, out_shape)) {
    l.sdp.ew = EwOp::kMul;
    l.sdp.operand = plan_.resolve(other);
    l.sdp.operand_per_channel = true;
    return;
  } else {
    if (plan_.cubes.count(other) == 0 || plan_.shapes.at(other) != out_shape) {
      const auto& shape = out_shape;
      const std::string per_channel =
          !add && shape.size() == 4
              ? fmt::format(" or, for Mul, {}x{}x1x1 (one value per channel)", shape[0], shape[1])
              : std::string();
      throw GraphError(
          fmt::format("{}: operand '{}'{} must be a device tensor of shape {}{}", n.label(), other,
                      plan_.shapes.count(other) != 0
                          ? " of shape " + models::graph::shape_string(plan_.shapes.at(other))
                          : std::string(),
                      models::graph::shape_string(out_shape), per_channel));
    }
  }
  l.sdp.ew = add ? EwOp::kAdd : EwOp::kMul;
  l.sdp.operand = other;
}

bool Planner::channel_operand(const Node& n, const std::string& s,
                              const std::vector<std::int64_t>& out) const {
  const auto shape = plan_.shapes.find(s);
  if (out.size() != 4 || shape == plan_.shapes.end()) return false;
  const std::vector<std::int64_t> want{out[0], out[1], 1, 1};
  if (shape->second != want && shape->second != std::vector<std::int64_t>{out[1], 1, 1}) {
    return false;
  }
  // The tensor the device holds (a Reshape of an N x C Gemm output is a view of it): its cube must
  // be 1x1xC, one value per channel, in the order of its channels.
  const std::string& t = plan_.resolve(s);
  const auto cube = plan_.cubes.find(t);
  if (cube == plan_.cubes.end()) {
    throw GraphError(fmt::format("{}: operand '{}' is not computed on the device", n.label(), s));
  }
  if (cube->second.width != 1 || cube->second.height != 1 ||
      cube->second.channels != static_cast<std::uint32_t>(out[1]) ||
      plan_.transposed.count(t) != 0) {
    throw GraphError(fmt::format(
        "{}: the per-channel operand '{}' is held as a {}x{}x{} cube (W x H x C); SDP reads one "
        "value per channel from a 1x1x{} surface",
        n.label(), s, cube->second.width, cube->second.height, cube->second.channels, out[1]));
  }
  return true;
}

void Planner::plan_convert(const Node& n, PlannedLayer& l) {
  const bool quantize = n.op_type == "QuantizeLinear";
  l.sdp.convert = quantize ? SdpAttrs::Convert::kQuantize : SdpAttrs::Convert::kDequantize;
  l.input = data_input(n, false);
  const auto& scale = constant(n, 1, "scale");
  const auto& shape = plan_.shapes.at(l.input);
  const std::uint32_t channels = plan_.cubes.at(l.input).channels;
  if (scale.elements() != 1) {
    const auto rank = static_cast<std::int64_t>(shape.size());
    std::int64_t axis = n.get_int("axis", 1);
    if (axis < 0) axis += rank;
    const bool channel_axis =
        (rank == 4 && axis == 1) || (rank == 2 && axis == 1) || (rank == 1 && axis == 0);
    if (!channel_axis || scale.elements() != channels) {
      throw GraphError(
          fmt::format("{}: {} scales along axis {} of {}: per-channel scales run "
                      "along the channel axis only",
                      n.label(), scale.elements(), axis, models::graph::shape_string(shape)));
    }
  }
  for (std::size_t c = 0; c < scale.elements(); ++c) l.sdp.scale.push_back(scale.at(c));
  // The zero point (default 0, uint8) also gives the integer type and its range.
  models::graph::DType type = models::graph::DType::kUInt8;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const auto& zp = constant(n, 2, "zero point");
    if (zp.elements() != scale.elements()) {
      throw GraphError(fmt::format("{}: {} zero points for {} scales", n.label(), zp.elements(),
                                   scale.elements()));
    }
    type = zp.dtype;
    for (std::size_t c = 0; c < zp.elements(); ++c) l.sdp.zero_point.push_back(zp.at(c));
  } else {
    l.sdp.zero_point.assign(scale.elements(), 0.0);
  }
  if (type != models::graph::DType::kUInt8 && type != models::graph::DType::kInt8) {
    throw GraphError(fmt::format("{}: {} codes (uint8 and int8 are supported)", n.label(),
                                 models::graph::dtype_name(type)));
  }
  l.sdp.lo = type == models::graph::DType::kUInt8 ? 0 : -128;
  l.sdp.hi = type == models::graph::DType::kUInt8 ? 255 : 127;
  l.output = n.outputs.at(0);
}

bool Planner::per_channel(const models::graph::Tensor& t,
                          const std::vector<std::int64_t>& out) const {
  if (t.elements() == 1) return true;
  // The device's channel axis: dimension 1 of N x C x ..., dimension 0 of C x H x W or the
  // last one of M x K and K.
  const std::size_t rank = out.size();
  const std::size_t caxis = rank >= 4 || (rank == 3 && out[0] == 1) ? 1 : rank == 3 ? 0 : rank - 1;
  // Right-aligned broadcasting: t's dimensions other than the channel axis must be 1.
  if (t.shape.size() > rank) return false;
  const std::size_t offset = rank - t.shape.size();
  for (std::size_t d = 0; d < t.shape.size(); ++d) {
    const std::size_t axis = d + offset;
    if (axis != caxis && t.shape[d] != 1) return false;
    if (axis == caxis && t.shape[d] != out[caxis]) return false;
  }
  return true;
}

void Planner::plan_softmax(std::size_t i) {
  const Node& n = g_.nodes[i];
  PlannedLayer l;
  l.kind = LayerKind::kSoftmax;
  l.nodes = {i};
  l.input = data_input(n, false);
  const auto& shape = plan_.shapes.at(n.inputs.at(0));
  const auto rank = static_cast<std::int64_t>(shape.size());
  std::int64_t axis = n.get_int("axis", g_.opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    throw GraphError(
        fmt::format("{}: axis {} of a rank-{} tensor", n.label(), n.get_int("axis", -1), rank));
  }
  if (g_.opset < 13) {
    for (std::int64_t d = axis + 1; d < rank; ++d) {
      if (shape[static_cast<std::size_t>(d)] != 1) {
        throw GraphError(
            fmt::format("{}: opset {} Softmax over the dimensions from axis {} on of {} (the PPU's "
                        "softmax runs over one axis)",
                        n.label(), g_.opset, axis, models::graph::shape_string(shape)));
      }
    }
  }
  // The cube axis of ONNX's `axis` (set_cube's mapping).
  const bool batched = (rank == 4 || rank == 3) && shape[0] == 1;
  std::vector<CubeAxis> axes;  // ONNX dimension -> cube axis (first entry: dimension 0)
  if (rank == 4) axes = {CubeAxis::kC, CubeAxis::kC, CubeAxis::kH, CubeAxis::kW};
  if (rank == 3) {
    axes = batched ? std::vector<CubeAxis>{CubeAxis::kC, CubeAxis::kC, CubeAxis::kW}
                   : std::vector<CubeAxis>{CubeAxis::kC, CubeAxis::kH, CubeAxis::kW};
  }
  if (rank == 2) axes = {CubeAxis::kH, CubeAxis::kC};
  if (rank == 1) axes = {CubeAxis::kC};
  if (axes.empty() || (batched && axis == 0) || plan_.transposed.count(l.input) != 0) {
    throw GraphError(fmt::format("{}: softmax over axis {} of {} is not supported", n.label(), axis,
                                 models::graph::shape_string(shape)));
  }
  l.softmax.axis = axes[static_cast<std::size_t>(axis)];
  l.output = n.outputs.at(0);
  set_cube(l.output, &n);
  plan_.layers.push_back(std::move(l));
}

}  // namespace octasim::firmware::net::detail
