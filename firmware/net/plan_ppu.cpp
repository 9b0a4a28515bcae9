// A node the DLA cannot run, on the PPU (plan.hpp: Fallback::kPpu): one kPpu layer per node.
#include <algorithm>

#include <fmt/core.h>

#include "firmware/net/planner.hpp"
#include "models/graph/op_registry.hpp"

namespace octasim::firmware::net::detail {

void Planner::plan_ppu(std::size_t i, const std::string& reason) {
  const Node& n = g_.nodes[i];
  const models::graph::OpSchema* op = models::graph::find_op(n.op_type);
  if (op == nullptr || op->reference == nullptr) throw GraphError(reason);
  const auto refuse = [&](const std::string& why) {
    throw GraphError(fmt::format("{} (and the PPU cannot take it: {})", reason, why));
  };
  if (n.outputs.size() != 1 || n.outputs[0].empty()) {
    refuse(fmt::format("{} outputs; a PPU node writes one", n.outputs.size()));
  }
  PlannedLayer l;
  l.kind = LayerKind::kPpu;
  l.nodes = {i};
  // The refusal without its leading "<node>: " (the layer names the node).
  const std::string prefix = n.label() + ": ";
  l.ppu.reason = reason.rfind(prefix, 0) == 0 ? reason.substr(prefix.size()) : reason;
  // The inputs as the reference kernel sees them: constants as they are, device tensors as FP32
  // zeros of their shape (what the kernel reads: FP16 widened) or, in an integer network, zeros
  // of their own integer type (what it reads from INT16 surfaces).
  const bool integer = !plan_.dtypes.empty();
  std::vector<models::graph::Tensor> zeros;
  zeros.reserve(n.inputs.size());
  for (const std::string& in : n.inputs) {
    if (in.empty()) {
      zeros.emplace_back();
      continue;
    }
    if (g_.is_constant(in)) {
      zeros.push_back(g_.initializers.at(in));
      continue;
    }
    const std::string& t = plan_.resolve(in);
    if (plan_.cubes.count(t) == 0 && plan_.concats.count(t) == 0 && plan_.slices.count(t) == 0) {
      refuse(fmt::format("input '{}' is not computed on the device", in));
    }
    l.ppu.reads.push_back(t);
    models::graph::DType type = models::graph::DType::kFloat32;
    if (integer) {
      type = plan_.dtypes.at(in);
      if (models::graph::is_float(type)) {
        refuse(
            fmt::format("input '{}' is {} in an integer network (whose tensors are INT16 "
                        "integers)",
                        in, models::graph::dtype_name(type)));
      }
    }
    zeros.push_back(models::graph::Tensor::zeros(type, plan_.shapes.at(in)));
  }
  if (l.ppu.reads.empty()) refuse("no input is computed on the device (all constants)");
  models::graph::Inputs inputs;
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    inputs.push_back(n.inputs[k].empty() ? nullptr : &zeros[k]);
  }
  std::vector<models::graph::Tensor> out;
  try {
    out = models::graph::run_op_shapes(n, inputs, g_.opset);
  } catch (const std::exception& e) {
    refuse(e.what());
  }
  const std::string& name = n.outputs[0];
  if (out.empty()) refuse("its output is missing");
  if (integer) {
    // INT16 holds 8-bit integers and bool exactly; wider integers while their values fit (a
    // result beyond INT16 saturates, on the device and in the models/ executor alike:
    // models/ops/ppu_node.hpp).
    if (out.size() != 1 || models::graph::is_float(out[0].dtype)) {
      refuse(fmt::format("its output is {}: an integer network's PPU layers write INT16 integers",
                         models::graph::dtype_name(out[0].dtype)));
    }
  } else if (out.size() != 1 || !models::graph::is_float(out[0].dtype)) {
    refuse(fmt::format("its output is {}, not floating point",
                       models::graph::dtype_name(out[0].dtype)));
  }
  if (out[0].shape != plan_.shapes.at(name)) {
    refuse(fmt::format("its output has shape {}, shape inference said {}",
                       models::graph::shape_string(out[0].shape),
                       models::graph::shape_string(plan_.shapes.at(name))));
  }
  l.input = l.ppu.reads.front();
  l.output = name;
  set_cube(name, &n, true);
  plan_.layers.push_back(std::move(l));
}

}  // namespace octasim::firmware::net::detail
