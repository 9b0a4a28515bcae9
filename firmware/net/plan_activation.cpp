// Unary activations on SDP (planner.hpp): Sigmoid, Tanh, Erf, HardSigmoid, HardSwish, and the
// pattern Mul(x, Sigmoid(x)) — SiLU/Swish as PyTorch exports nn.SiLU at opset 13 — as one SDP
// layer. program_activation.cpp lowers it (the EW stage's LUT at INT8; FP16 recipes).
#include <fmt/core.h>

#include "firmware/net/planner.hpp"

namespace octasim::firmware::net::detail {

void Planner::plan_activation(std::size_t i) {
  const Node& n = g_.nodes[i];
  PlannedLayer l;
  l.kind = LayerKind::kSdp;
  l.nodes = {i};
  l.input = data_input(n, false);
  l.output = n.outputs.at(0);
  Unary u;
  if (n.op_type == "Sigmoid") {
    u.function = UnaryFunction::kSigmoid;
    // Mul(x, Sigmoid(x)) where the Mul alone reads the Sigmoid: SiLU, one layer.
    std::size_t k = 0;
    const Node* mul = sole_consumer(l.output, &k);
    if (mul != nullptr && mul->op_type == "Mul" && mul->inputs.size() == 2 &&
        ((mul->inputs[0] == l.output && mul->inputs[1] == n.inputs[0]) ||
         (mul->inputs[1] == l.output && mul->inputs[0] == n.inputs[0]))) {
      u.function = UnaryFunction::kSilu;
      l.nodes.push_back(k);
      used_[k] = true;
      l.output = mul->outputs.at(0);
    }
  } else if (n.op_type == "Tanh") {
    u.function = UnaryFunction::kTanh;
  } else if (n.op_type == "Erf") {
    u.function = UnaryFunction::kErf;
  } else if (n.op_type == "HardSigmoid") {
    u.function = UnaryFunction::kHardSigmoid;
    u.alpha = n.get_float("alpha", 0.2F);
    u.beta = n.get_float("beta", 0.5F);
    if (!(u.alpha != 0.0)) {
      throw GraphError(fmt::format("{}: alpha 0 (a constant output) is not supported", n.label()));
    }
  } else if (n.op_type == "HardSwish") {
    u.function = UnaryFunction::kHardSwish;
    u.alpha = 1.0 / 6.0;
    u.beta = 0.5;
  } else {
    throw GraphError(fmt::format("{}: not a unary activation", n.label()));
  }
  l.sdp.unary = u;
  set_cube(l.output, &n);
  plan_.layers.push_back(std::move(l));
}

}  // namespace octasim::firmware::net::detail
