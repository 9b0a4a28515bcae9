// Concat in the network planner (planner.hpp): no layer. A concatenation on the device's channel
// axis of tensors with the same H and W is a matter of where each input lives: its producer
// writes straight into the output's surface at the input's channel offset (NVDLA's compilers do
// the same). The offsets are chosen when the network is lowered (program.hpp), where the atom
// size is known.
#include <algorithm>

#include <fmt/core.h>

#include "firmware/net/planner.hpp"

namespace octasim::firmware::net::detail {

namespace {

// The ONNX dimension the device holds as channels for a tensor of `shape` (set_cube's mapping:
// N x C x H x W and 1 x C x L: 1; C x H x W: 0; M x K: 1; K: 0).
std::size_t channel_axis(const std::vector<std::int64_t>& shape) {
  const std::size_t rank = shape.size();
  if (rank == 4 || (rank == 3 && shape[0] == 1)) return 1;
  if (rank == 3) return 0;
  return rank == 0 ? 0 : rank - 1;
}

}  // namespace

void Planner::plan_concat(std::size_t i) {
  const Node& n = g_.nodes[i];
  const std::string& out = n.outputs.at(0);
  const auto& shape = plan_.shapes.at(out);
  const auto rank = static_cast<std::int64_t>(shape.size());
  std::int64_t axis = n.get_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    throw GraphError(
        fmt::format("{}: axis {} of a rank-{} tensor", n.label(), n.get_int("axis", 0), rank));
  }
  if (static_cast<std::size_t>(axis) != channel_axis(shape)) {
    throw GraphError(fmt::format(
        "{}: axis {} not supported on the DLA (octasim concatenates along the channel axis, "
        "axis {} of {})",
        n.label(), axis, channel_axis(shape), models::graph::shape_string(shape)));
  }
  PlannedConcat c;
  c.node = i;
  for (const std::string& in : n.inputs) {
    if (in.empty()) throw GraphError(fmt::format("{}: an empty input name", n.label()));
    if (g_.is_constant(in)) {
      throw GraphError(
          fmt::format("{}: input '{}' is a constant: the DLA concatenates tensors it computes "
                      "(a constant block would need a copy)",
                      n.label(), in));
    }
    if (plan_.views.count(in) != 0) {
      throw GraphError(fmt::format(
          "{}: input '{}' is a view of '{}' (Flatten/Reshape): a view cannot be placed inside "
          "the concatenation",
          n.label(), in, plan_.views.at(in)));
    }
    if (plan_.cubes.count(in) == 0) {
      throw GraphError(fmt::format("{}: input '{}' is not computed on the device", n.label(), in));
    }
    if (plan_.slices.count(in) != 0) {
      throw GraphError(fmt::format(
          "{}: input '{}' is a channel slice of '{}': it lives inside that surface and cannot be "
          "placed inside the concatenation (insert_concat_copies copies it)",
          n.label(), in, plan_.slices.at(in).source));
    }
    if (plan_.transposed.count(in) != 0 ||
        channel_axis(plan_.shapes.at(in)) != channel_axis(shape)) {
      throw GraphError(fmt::format(
          "{}: input '{}' of shape {} does not hold its channels as {} does", n.label(), in,
          models::graph::shape_string(plan_.shapes.at(in)), models::graph::shape_string(shape)));
    }
    const auto twice = plan_.concat_parent.find(in);
    const bool repeated = std::count(n.inputs.begin(), n.inputs.end(), in) > 1;
    if (twice != plan_.concat_parent.end() || repeated) {
      throw GraphError(fmt::format(
          "{}: input '{}' is concatenated {}: a tensor lives in one place (that would need a "
          "copy)",
          n.label(), in,
          repeated ? std::string("twice by this Concat")
                   : fmt::format("already by {}",
                                 g_.nodes[plan_.concats.at(twice->second).node].label())));
    }
    c.inputs.push_back(in);
  }
  const Cube& first = plan_.cubes.at(c.inputs.front());
  for (const std::string& in : c.inputs) {
    const Cube& k = plan_.cubes.at(in);
    if (k.width != first.width || k.height != first.height) {
      throw GraphError(fmt::format("{}: input '{}' is {}x{}, '{}' {}x{} (W x H)", n.label(), in,
                                   k.width, k.height, c.inputs.front(), first.width, first.height));
    }
  }
  for (const std::string& in : c.inputs) plan_.concat_parent[in] = out;
  set_cube(out, &n);
  plan_.concats[out] = std::move(c);
}

}  // namespace octasim::firmware::net::detail
