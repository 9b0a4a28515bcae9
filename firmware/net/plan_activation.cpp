// Unary activations on SDP (planner.hpp): Sigmoid, Tanh, Erf, HardSigmoid, HardSwish, Gelu, and
// the patterns Mul(x, Sigmoid(x)) — SiLU/Swish as PyTorch exports nn.SiLU at opset 13 —,
// Mul(x, HardSigmoid(x)) — nn.Hardswish at opset 13 — and
// Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) — nn.GELU before opset 20 — as one SDP layer.
// program_activation.cpp lowers it (the EW stage's LUT at INT8; FP16 recipes).
#include <cmath>

#include <fmt/core.h>

#include "firmware/net/planner.hpp"

namespace octasim::firmware::net::detail {
namespace {

// Whether `name` is a one-element constant within 1e-6 (relative) of `value`.
bool scalar_near(const Graph& g, const std::string& name, double value) {
  if (!g.is_constant(name)) return false;
  const models::graph::Tensor& t = g.initializers.at(name);
  return t.elements() == 1 && std::abs(t.at(0) - value) <= 1e-6 * std::abs(value);
}

// The operand of binary node `n` other than `tensor` (empty when neither input is it).
std::string other_operand(const Node& n, const std::string& tensor) {
  if (n.inputs.size() != 2) return {};
  if (n.inputs[0] == tensor) return n.inputs[1];
  if (n.inputs[1] == tensor) return n.inputs[0];
  return {};
}

}  // namespace

// PyTorch's GELU at opsets before 20, from its Div: x / sqrt(2) -> Erf -> + 1 -> x * . -> * 0.5,
// each node the only reader of the one before; the Div may be the Mul by 1 / sqrt(2) the graph
// passes make of it (models/graph/passes.hpp constant_arithmetic). Returns the nodes after the
// Div, or none.
std::vector<std::size_t> Planner::gelu_pattern(std::size_t div) const {
  const Node& d = g_.nodes[div];
  const bool scaled = d.inputs.size() == 2 &&
                      ((d.op_type == "Div" && scalar_near(g_, d.inputs[1], std::sqrt(2.0))) ||
                       (d.op_type == "Mul" && scalar_near(g_, d.inputs[1], std::sqrt(0.5))));
  if (!scaled) return {};
  const std::string& x = d.inputs[0];
  std::size_t erf = 0, add = 0, mul = 0, half = 0;
  const Node* e = sole_consumer(d.outputs.at(0), &erf);
  if (e == nullptr || e->op_type != "Erf") return {};
  const Node* a = sole_consumer(e->outputs.at(0), &add);
  if (a == nullptr || a->op_type != "Add" || !scalar_near(g_, other_operand(*a, e->outputs[0]), 1))
    return {};
  const Node* m = sole_consumer(a->outputs.at(0), &mul);
  if (m == nullptr || m->op_type != "Mul" || other_operand(*m, a->outputs[0]) != x) return {};
  const Node* h = sole_consumer(m->outputs.at(0), &half);
  if (h == nullptr || h->op_type != "Mul" ||
      !scalar_near(g_, other_operand(*h, m->outputs[0]), 0.5))
    return {};
  return {erf, add, mul, half};
}

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
  } else if (n.op_type == "Gelu") {
    u.function = UnaryFunction::kGelu;
    const std::string approximate = n.get_string("approximate", "none");
    if (approximate != "none") {
      throw GraphError(fmt::format("{}: approximate='{}' is not lowered (the exact GELU is)",
                                   n.label(), approximate));
    }
  } else if (n.op_type == "Div" || n.op_type == "Mul") {
    const std::vector<std::size_t> rest = gelu_pattern(i);
    if (rest.empty()) {
      throw GraphError(fmt::format(
          "{}: Div is not supported on the DLA of {} (it is lowered only as the start of GELU: "
          "Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5))",
          n.label(), config_));
    }
    u.function = UnaryFunction::kGelu;
    for (const std::size_t k : rest) {
      l.nodes.push_back(k);
      used_[k] = true;
    }
    l.output = g_.nodes[rest.back()].outputs.at(0);
  } else if (n.op_type == "HardSigmoid") {
    u.function = UnaryFunction::kHardSigmoid;
    u.alpha = n.get_float("alpha", 0.2F);
    u.beta = n.get_float("beta", 0.5F);
    if (!(u.alpha != 0.0)) {
      throw GraphError(fmt::format("{}: alpha 0 (a constant output) is not supported", n.label()));
    }
    // Mul(x, HardSigmoid(x)) where the Mul alone reads it: HardSwish with this alpha and beta, as
    // PyTorch exports nn.Hardswish at opset 13 (alpha 1/6), one layer.
    std::size_t k = 0;
    const Node* mul = sole_consumer(l.output, &k);
    if (mul != nullptr && mul->op_type == "Mul" && other_operand(*mul, l.output) == n.inputs[0]) {
      u.function = UnaryFunction::kHardSwish;
      l.nodes.push_back(k);
      used_[k] = true;
      l.output = mul->outputs.at(0);
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
