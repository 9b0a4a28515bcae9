// Split and Slice on the channel axis in the network planner (planner.hpp): no layer. NVDLA's
// feature surface is a stack of C'-channel surfaces (format.rst), so channels [c0, c1) of a
// W x H x C tensor, with c0 a multiple of C', are a W x H x (c1 - c0) surface of their own at the
// input's address + (c0 / C') surface strides, with the input's line and surface strides — the
// reverse of a Concat placing its inputs (plan_concat.cpp). Where c0 is not a multiple of C' the
// slice is the same window from the atom holding c0 on, its channels at an offset in it: a padded
// channel layout (program.hpp's channel map), as a Concat's. The lowering (program_concat.cpp)
// chooses which, knowing the atom (configuration and precision).
#include <fmt/core.h>

#include "firmware/net/planner.hpp"

namespace octasim::firmware::net::detail {

namespace {

// The ONNX dimension the device holds as channels for a tensor of `shape` (set_cube's mapping).
std::size_t slice_channel_axis(const std::vector<std::int64_t>& shape) {
  const std::size_t rank = shape.size();
  if (rank == 4 || (rank == 3 && shape[0] == 1)) return 1;
  if (rank == 3) return 0;
  return rank == 0 ? 0 : rank - 1;
}

}  // namespace

void Planner::plan_channel_slice(std::size_t i) {
  const Node& n = g_.nodes[i];
  const std::string& in = n.inputs.at(0);
  if (g_.is_constant(in)) {
    throw GraphError(
        fmt::format("{}: {} of a constant: not folded before lowering", n.label(), n.op_type));
  }
  if (plan_.views.count(in) != 0) {
    throw GraphError(fmt::format("{}: {} of '{}', a view of '{}' (Flatten/Reshape): not supported",
                                 n.label(), n.op_type, in, plan_.views.at(in)));
  }
  if (plan_.cubes.count(in) == 0) {
    throw GraphError(fmt::format("{}: input '{}' is not computed on the device", n.label(), in));
  }
  if (plan_.transposed.count(in) != 0) {
    throw GraphError(
        fmt::format("{}: input '{}' is held transposed: not supported", n.label(), in));
  }
  const auto& shape = plan_.shapes.at(in);
  const std::size_t caxis = slice_channel_axis(shape);
  // Steps other than 1 (a reversal, a stride) are no window of the surface.
  if (n.op_type == "Slice") {
    std::vector<std::int64_t> steps;
    if (g_.opset >= 10 && n.inputs.size() > 4 && !n.inputs[4].empty()) {
      const auto& t = constant(n, 4, "steps");
      for (std::size_t k = 0; k < t.elements(); ++k) {
        steps.push_back(static_cast<std::int64_t>(t.at(k)));
      }
    }
    for (std::int64_t s : steps) {
      if (s != 1) {
        throw GraphError(fmt::format(
            "{}: Slice with step {}: the DLA takes channel windows of step 1 only", n.label(), s));
      }
    }
    if (g_.opset >= 10) {
      for (std::size_t k = 1; k < n.inputs.size() && k < 4; ++k) {
        if (!n.inputs[k].empty())
          (void)constant(n, k, k == 1 ? "starts" : k == 2 ? "ends" : "axes");
      }
    }
  }
  // Every axis but the channel axis is whole (from shape inference); the channel window starts
  // where the outputs before it end (Split) or at the clamped start (Slice).
  std::uint32_t first = 0;
  for (const std::string& out : n.outputs) {
    if (out.empty()) continue;
    const auto& o = plan_.shapes.at(out);
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (d != caxis && o.at(d) != shape[d]) {
        throw GraphError(
            fmt::format("{}: {} along axis {} of {}: the DLA takes channel slices only (axis {})",
                        n.label(), n.op_type, d, models::graph::shape_string(shape), caxis));
      }
    }
  }
  if (n.op_type == "Slice") {
    std::int64_t start = 0;
    std::vector<std::int64_t> starts, axes;
    const auto ints = [&](std::size_t k, const char* what) {
      std::vector<std::int64_t> v;
      const auto& t = constant(n, k, what);
      for (std::size_t e = 0; e < t.elements(); ++e)
        v.push_back(static_cast<std::int64_t>(t.at(e)));
      return v;
    };
    if (g_.opset >= 10) {
      starts = ints(1, "starts");
      if (n.inputs.size() > 3 && !n.inputs[3].empty()) axes = ints(3, "axes");
    } else {
      starts = n.get_ints("starts", {});
      axes = n.get_ints("axes", {});
    }
    const auto rank = static_cast<std::int64_t>(shape.size());
    for (std::size_t k = 0; k < starts.size(); ++k) {
      std::int64_t a = k < axes.size() ? axes[k] : static_cast<std::int64_t>(k);
      if (a < 0) a += rank;
      if (a != static_cast<std::int64_t>(caxis)) continue;
      const std::int64_t dim = shape[caxis];
      start = starts[k] < 0 ? starts[k] + dim : starts[k];
      start = std::min(std::max<std::int64_t>(start, 0), dim);
    }
    first = static_cast<std::uint32_t>(start);
  }
  // A slice of a slice is a window of the first one's source.
  std::string source = in;
  const auto outer = plan_.slices.find(in);
  if (outer != plan_.slices.end()) {
    source = outer->second.source;
    first += outer->second.first;
  }
  for (const std::string& out : n.outputs) {
    if (out.empty()) continue;
    set_cube(out, &n);
    plan_.slices[out] = PlannedSlice{i, source, first};
    first += plan_.cubes.at(out).channels;
  }
}

}  // namespace octasim::firmware::net::detail
