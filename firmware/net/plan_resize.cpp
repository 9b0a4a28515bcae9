// Resize and Upsample (nearest) in the network planner (planner.hpp): a BDMA layer; DepthToSpace
// (DCR) a Rubik layer. Output pixel
// (x, y) is input pixel (x / f_w, y / f_h) for integer factors f: in NVDLA's feature format
// (format.rst) a pixel of one C' surface is one atom, so BDMA's strided line copies repeat each
// atom f_w x f_h times (program_resize.cpp) — the codes (or FP16 values) move unchanged.
//
// Which ONNX attributes repeat each pixel f times is not read off the attribute names: the
// registry's reference kernel resamples an index image with the node's own attributes and
// scales/sizes, and the layer is planned only where each output takes index (y / f_h, x / f_w).
#include <fmt/core.h>

#include "firmware/net/planner.hpp"
#include "models/graph/op_registry.hpp"

namespace octasim::firmware::net::detail {

namespace {

// The factor out / in along one axis, or 0 when it is not an integer in 1..kMaxResizeFactor.
unsigned integer_factor(std::int64_t in, std::int64_t out) {
  if (in <= 0 || out % in != 0) return 0;
  const std::int64_t f = out / in;
  return f >= 1 && f <= kMaxResizeFactor ? static_cast<unsigned>(f) : 0;
}

}  // namespace

void Planner::plan_resize(std::size_t i) {
  const Node& n = g_.nodes[i];
  PlannedLayer l;
  l.kind = LayerKind::kBdma;
  l.nodes = {i};
  l.input = data_input(n, false);
  l.output = n.outputs.at(0);
  const auto& x = plan_.shapes.at(n.inputs[0]);
  const auto& y = plan_.shapes.at(l.output);
  if (x.size() != 4 || y.size() != 4 || x[0] != 1 || y[0] != 1 || x[1] != y[1]) {
    throw GraphError(fmt::format(
        "{}: {} from {} to {}: the DLA resamples H and W of a 1 x C x H x W tensor only", n.label(),
        n.op_type, models::graph::shape_string(x), models::graph::shape_string(y)));
  }
  // Only nearest copies pixels, and tf_crop_and_resize's extrapolated outputs could equal the
  // index image by chance: both are refused before the index-image check.
  const std::string mode = n.get_string("mode", "nearest");
  const std::string coordinates = n.get_string("coordinate_transformation_mode", "half_pixel");
  if (mode != "nearest" || coordinates == "tf_crop_and_resize") {
    throw GraphError(fmt::format(
        "{}: {} in mode '{}' with coordinate_transformation_mode '{}': the DLA repeats pixels "
        "(nearest, BDMA copies), it does not interpolate or crop",
        n.label(), n.op_type, mode, coordinates));
  }
  const unsigned fh = integer_factor(x[2], y[2]), fw = integer_factor(x[3], y[3]);
  if (fh == 0 || fw == 0) {
    throw GraphError(fmt::format(
        "{}: {} from {} to {}: the DLA upsamples by integer factors 1..{} of H and W (BDMA)",
        n.label(), n.op_type, models::graph::shape_string(x), models::graph::shape_string(y),
        kMaxResizeFactor));
  }
  // The node's own arithmetic on an image of indices (one channel, the input's H x W): nearest
  // upsampling by (fh, fw) is index (oy / fh) * W + ox / fw at every output.
  models::graph::Inputs operands;
  std::vector<float> index(static_cast<std::size_t>(x[2] * x[3]));
  for (std::size_t k = 0; k < index.size(); ++k) index[k] = static_cast<float>(k);
  const models::graph::Tensor image = models::graph::Tensor::floats({1, 1, x[2], x[3]}, index);
  operands.push_back(&image);
  std::vector<models::graph::Tensor> held;
  held.reserve(n.inputs.size());
  for (std::size_t k = 1; k < n.inputs.size(); ++k) {
    if (n.inputs[k].empty()) {
      operands.push_back(nullptr);
      continue;
    }
    const models::graph::Tensor& t = constant(n, k, "scales/sizes/roi");
    held.push_back(t);
    // Sizes name the channels too: one channel here.
    if (!models::graph::is_float(t.dtype) && t.elements() == 4) held.back().i[1] = 1;
    operands.push_back(&held.back());
  }
  const std::vector<models::graph::Tensor> out = models::graph::run_op(n, operands, g_.opset);
  bool nearest = out.size() == 1 && out[0].shape == std::vector<std::int64_t>{1, 1, y[2], y[3]};
  for (std::int64_t oy = 0; nearest && oy < y[2]; ++oy) {
    for (std::int64_t ox = 0; nearest && ox < y[3]; ++ox) {
      const auto want = static_cast<double>((oy / fh) * x[3] + ox / fw);
      nearest = out[0].at(static_cast<std::size_t>(oy * y[3] + ox)) == want;
    }
  }
  if (!nearest) {
    throw GraphError(fmt::format(
        "{}: {} (mode '{}', coordinate_transformation_mode '{}', nearest_mode '{}') does not "
        "repeat each pixel {} x {} times: the DLA's BDMA upsampling cannot compute it",
        n.label(), n.op_type, n.get_string("mode", "nearest"),
        n.get_string("coordinate_transformation_mode", "half_pixel"),
        n.get_string("nearest_mode", "round_prefer_floor"), fw, fh));
  }
  l.resize.scale_h = fh;
  l.resize.scale_w = fw;
  set_cube(l.output, &n);
  plan_.layers.push_back(std::move(l));
}

void Planner::plan_depth_to_space(std::size_t i) {
  const Node& n = g_.nodes[i];
  PlannedLayer l;
  l.kind = LayerKind::kRubik;
  l.nodes = {i};
  l.input = data_input(n, false);
  const std::string mode = n.get_string("mode", "DCR");
  if (mode != "DCR") {
    throw GraphError(fmt::format(
        "{}: DepthToSpace mode {} is not supported: Rubik's contract takes the input's channels "
        "block by block (DCR: channel (by b + bx) C + c), CRD interleaves them (c b^2 + by b + bx)",
        n.label(), mode));
  }
  const auto& shape = plan_.shapes.at(l.input);
  const std::int64_t b = n.get_int("blocksize", 0);
  if (shape.size() != 4 || shape[0] != 1 || b < 1 || b > 32 || shape[1] % (b * b) != 0) {
    throw GraphError(
        fmt::format("{}: DepthToSpace of {} with blocksize {}: 1 x C x H x W, b in "
                    "1..32 dividing C by b^2 expected",
                    n.label(), models::graph::shape_string(shape), b));
  }
  l.depth_to_space.block = static_cast<unsigned>(b);
  l.output = n.outputs.at(0);
  set_cube(l.output, &n);
  plan_.layers.push_back(std::move(l));
}

}  // namespace octasim::firmware::net::detail
