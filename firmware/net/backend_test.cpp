#include "firmware/net/backend_test.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include <fmt/core.h>

#include "firmware/net/activation.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "models/graph/op_registry.hpp"
#include "models/numerics/float_format.hpp"

namespace octasim::firmware::net {

using models::graph::Graph;
using models::graph::GraphError;
using models::graph::Tensor;

namespace fs = std::filesystem;

std::vector<std::string> registry_node_tests(const std::string& node_dir) {
  std::vector<std::string> dirs;
  if (!fs::is_directory(node_dir)) return dirs;
  for (const auto& e : fs::directory_iterator(node_dir)) {
    const fs::path model = e.path() / "model.onnx";
    if (!fs::is_regular_file(model)) continue;
    try {
      const Graph graph = load_onnx(model.string());
      const bool known =
          !graph.nodes.empty() &&
          std::all_of(graph.nodes.begin(), graph.nodes.end(), [](const models::graph::Node& n) {
            return models::graph::find_op(n.op_type) != nullptr;
          });
      if (known) dirs.push_back(e.path().string());
    } catch (const std::exception&) {
      continue;  // a data type or construct the importer refuses
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

BackendTest read_backend_test(const std::string& dir) {
  BackendTest t;
  t.name = fs::path(dir).filename().string();
  if (t.name.empty()) t.name = fs::path(dir).parent_path().filename().string();
  const fs::path model = fs::path(dir) / "model.onnx";
  if (!fs::is_regular_file(model)) {
    throw OnnxError(
        fmt::format("{}: no model.onnx (an ONNX backend test directory holds "
                    "model.onnx and test_data_set_*/)",
                    dir));
  }
  t.graph = load_onnx(model.string());
  std::vector<fs::path> sets;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(e.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) throw OnnxError(fmt::format("{}: no test_data_set_* directory", dir));
  for (const fs::path& p : sets) {
    BackendDataSet d;
    d.name = p.filename().string();
    for (std::size_t k = 0; fs::exists(p / fmt::format("input_{}.pb", k)); ++k) {
      d.inputs.push_back(read_tensor_pb((p / fmt::format("input_{}.pb", k)).string()));
    }
    for (std::size_t k = 0; fs::exists(p / fmt::format("output_{}.pb", k)); ++k) {
      d.outputs.push_back(read_tensor_pb((p / fmt::format("output_{}.pb", k)).string()));
    }
    if (d.inputs.size() != t.graph.inputs.size() || d.outputs.size() != t.graph.outputs.size()) {
      throw OnnxError(fmt::format("{}: {} inputs and {} outputs for a graph of {} and {}",
                                  p.string(), d.inputs.size(), d.outputs.size(),
                                  t.graph.inputs.size(), t.graph.outputs.size()));
    }
    t.data_sets.push_back(std::move(d));
  }
  return t;
}

namespace {

std::vector<float> as_floats(const Tensor& t) {
  if (models::graph::is_float(t.dtype)) return t.f;
  return std::vector<float>(t.i.begin(), t.i.end());
}

}  // namespace

BoundTest bind_test(const Graph& g, const BackendDataSet& d) {
  if (g.inputs.empty()) throw GraphError("the graph has no input");
  BoundTest b;
  b.graph = g;
  for (std::size_t k = 1; k < g.inputs.size(); ++k) {
    b.graph.initializers[g.inputs[k].name] = d.inputs.at(k);
  }
  b.graph.inputs.resize(1);
  const Tensor& x = d.inputs.at(0);
  std::vector<std::int64_t> shape = x.shape;
  if (shape.size() == 4 && shape[0] > 1) {
    b.image_count = static_cast<std::size_t>(shape[0]);
    b.images = Tensor::floats(shape, as_floats(x));
    // The device runs the N images one at a time: only a graph that keeps them apart (no node
    // reducing or mixing along the first axis) computes the same that way. The FP32 reference
    // executor decides: the whole batch against image after image, element for element.
    models::graph::TensorMap whole;
    for (std::size_t k = 0; k < g.inputs.size(); ++k) whole[g.inputs[k].name] = d.inputs.at(k);
    const models::graph::TensorMap all = models::graph::run_reference(g, whole);
    const std::size_t per = x.elements() / b.image_count;
    std::vector<std::vector<float>> parts(g.outputs.size());
    for (std::size_t i = 0; i < b.image_count; ++i) {
      models::graph::TensorMap one = whole;
      std::vector<std::int64_t> s1 = x.shape;
      s1[0] = 1;
      const std::vector<float> v = as_floats(x);
      one[g.inputs[0].name] =
          Tensor::floats(s1, std::vector<float>(v.begin() + i * per, v.begin() + (i + 1) * per));
      const models::graph::TensorMap r = models::graph::run_reference(g, one);
      for (std::size_t k = 0; k < g.outputs.size(); ++k) {
        const Tensor& t = r.at(g.outputs[k].name);
        for (std::size_t e = 0; e < t.elements(); ++e) {
          parts[k].push_back(static_cast<float>(t.at(e)));
        }
      }
    }
    for (std::size_t k = 0; k < g.outputs.size(); ++k) {
      const Tensor& t = all.at(g.outputs[k].name);
      bool same = t.elements() == parts[k].size();
      for (std::size_t e = 0; same && e < t.elements(); ++e) {
        const double a = t.at(e), p = parts[k][e];
        same = std::abs(a - p) <= 1e-6 * std::max(1.0, std::abs(a));
      }
      if (!same) {
        throw GraphError(fmt::format(
            "output '{}': the graph mixes its {} images along the first axis (the reference on "
            "the batch differs from image by image), which the device runs one at a time",
            g.outputs[k].name, b.image_count));
      }
    }
    shape[0] = -1;
  } else {
    b.images = Tensor::floats({1, static_cast<std::int64_t>(x.elements())}, as_floats(x));
  }
  b.graph.inputs[0].shape = shape;
  return b;
}

int rounded_operands(const std::string& op) {
  const models::graph::OpSchema* schema = models::graph::find_op(op);
  return schema != nullptr ? schema->fp16_roundings : 1;
}

namespace {

// A float tensor's values rounded to FP16 (as the device holds them); others unchanged.
Tensor to_fp16(Tensor t) {
  for (float& v : t.f) v = models::fp16_to_float(models::fp16_from_float(v));
  return t;
}

// The graph's inputs by name, rounded to FP16 when asked.
models::graph::TensorMap graph_inputs(const Graph& g, const std::vector<Tensor>& values,
                                      bool fp16) {
  models::graph::TensorMap m;
  for (std::size_t i = 0; i < g.inputs.size(); ++i) {
    m[g.inputs[i].name] = fp16 ? to_fp16(values.at(i)) : values.at(i);
  }
  return m;
}

}  // namespace

namespace {

// Softmax: y_i = e^(x_i) / sum e^(x_j) moves by y_i (dx_i - sum y_j dx_j), at most
// 2 max|dx| y_i, and FP16 rounds each x by up to 2^-11 M: M = max|x| of a Softmax's input, or
// -1 without a Softmax.
double softmax_input_max(const Graph& g, const BackendDataSet& d) {
  const bool softmax = std::any_of(g.nodes.begin(), g.nodes.end(),
                                   [](const auto& n) { return n.op_type == "Softmax"; });
  if (!softmax) return -1.0;
  const models::graph::TensorMap real =
      models::graph::run_reference(g, graph_inputs(g, d.inputs, false));
  double m = -1.0;
  for (const auto& n : g.nodes) {
    if (n.op_type != "Softmax") continue;
    const Tensor& x = real.at(n.inputs.at(0));
    for (std::size_t i = 0; i < x.elements(); ++i) m = std::max(m, std::abs(x.at(i)));
  }
  return m;
}

// The refusal of the first-order Softmax bound for inputs as large as `m` ("" when it holds).
std::string softmax_refusal(double m) {
  if (std::ldexp(1.0, -10) * m <= 1.0 / 16) return {};
  return fmt::format(
      "Softmax: FP16 rounds inputs as large as {} by up to {}, beyond the range of the "
      "first-order bound (2^-10 max|x| below 1/16)",
      m, std::ldexp(1.0, -11) * m);
}

}  // namespace

std::string fp16_bound_refusal(const Graph& g, const BackendDataSet& d) {
  return softmax_refusal(softmax_input_max(g, d));
}

namespace {

bool is_activation(const std::string& op) {
  return op == "Sigmoid" || op == "Tanh" || op == "HardSigmoid" || op == "HardSwish" ||
         op == "Erf" || op == "Gelu";
}

// The node's function with ONNX's attributes (their defaults as the planner takes them).
Unary node_unary(const models::graph::Node& n) {
  Unary u;
  if (n.op_type == "Tanh") u.function = UnaryFunction::kTanh;
  if (n.op_type == "Erf") u.function = UnaryFunction::kErf;
  if (n.op_type == "Gelu") u.function = UnaryFunction::kGelu;
  if (n.op_type == "HardSigmoid") {
    u.function = UnaryFunction::kHardSigmoid;
    u.alpha = n.get_float("alpha", 0.2F);
    u.beta = n.get_float("beta", 0.5F);
  }
  if (n.op_type == "HardSwish") {
    u.function = UnaryFunction::kHardSwish;
    u.alpha = 1.0 / 6.0;
  }
  return u;
}

// A graph of unary activations and Mul (activation.hpp): the error of every tensor, bounded
// element by element and carried from node to node. The data's rounding to FP16 starts it
// (2^-11 |x| + 2^-25); an activation adds its Lipschitz constant times its input's error and
// fp16_activation_bound at its input (the reference on the FP16 data, widened by that error);
// a Mul of a and b (EW: one FP32 product, one FP16 rounding) |a| e_b + |b| e_a + e_a e_b and the
// rounding of its output. ONNX's float32 expected values add 2^-20 |b| + 2^-24.
std::vector<double> activation_bounds(const Graph& g, const BackendDataSet& d, std::size_t k) {
  std::vector<models::graph::Tensor> rounded;
  for (const Tensor& t : d.inputs) {
    Tensor r = t;
    for (float& v : r.f) v = models::fp16_to_float(models::fp16_from_float(v));
    rounded.push_back(std::move(r));
  }
  models::graph::TensorMap in;
  for (std::size_t i = 0; i < g.inputs.size(); ++i) in[g.inputs[i].name] = rounded.at(i);
  const models::graph::TensorMap ref = models::graph::run_reference(g, in);
  const double r16 = std::ldexp(1.0, -11);
  std::map<std::string, std::vector<double>> err;
  for (std::size_t i = 0; i < g.inputs.size(); ++i) {
    const Tensor& x = d.inputs.at(i);
    std::vector<double>& e = err[g.inputs[i].name];
    for (std::size_t j = 0; j < x.elements(); ++j) {
      e.push_back(r16 * std::abs(x.at(j)) + std::ldexp(1.0, -25));
    }
  }
  for (const auto& n : g.nodes) {
    const Tensor& y = ref.at(n.outputs.at(0));
    std::vector<double> e(y.elements());
    if (is_activation(n.op_type)) {
      const Unary u = node_unary(n);
      const Tensor& x = ref.at(n.inputs.at(0));
      const std::vector<double>& ex = err.at(n.inputs.at(0));
      for (std::size_t j = 0; j < e.size(); ++j) {
        double own = 0.0;
        for (const double at : {x.at(j) - ex[j], double{x.at(j)}, x.at(j) + ex[j]}) {
          own = std::max(own, fp16_activation_bound(u, at));
        }
        e[j] = activation_lipschitz(u) * ex[j] + own;
      }
    } else if (n.op_type == "Mul" && n.inputs.size() == 2 && err.count(n.inputs[0]) != 0 &&
               err.count(n.inputs[1]) != 0 && ref.at(n.inputs[0]).elements() == e.size() &&
               ref.at(n.inputs[1]).elements() == e.size()) {
      const Tensor& a = ref.at(n.inputs[0]);
      const Tensor& b = ref.at(n.inputs[1]);
      const std::vector<double>& ea = err.at(n.inputs[0]);
      const std::vector<double>& eb = err.at(n.inputs[1]);
      for (std::size_t j = 0; j < e.size(); ++j) {
        const double p = std::abs(a.at(j)) * eb[j] + std::abs(b.at(j)) * ea[j] + ea[j] * eb[j];
        e[j] = p + (r16 + std::ldexp(1.0, -24)) * (std::abs(y.at(j)) + p);
      }
    } else {
      throw GraphError(fmt::format(
          "{}: no FP16 error bound for {} in a graph of LUT activations (Sigmoid, Tanh, "
          "HardSigmoid, HardSwish with Mul)",
          n.label(), n.op_type));
    }
    err[n.outputs[0]] = std::move(e);
  }
  const Tensor& b = d.outputs.at(k);
  std::vector<double> bound = err.at(g.outputs.at(k).name);
  if (bound.size() != b.elements()) {
    throw GraphError(
        fmt::format("output {}: the reference computes {} elements, ONNX's data "
                    "holds {}",
                    k, bound.size(), b.elements()));
  }
  for (std::size_t j = 0; j < bound.size(); ++j) {
    bound[j] += std::ldexp(1.0, -20) * std::abs(b.at(j)) + std::ldexp(1.0, -24);
  }
  return bound;
}

}  // namespace

std::vector<double> fp16_bounds(const Graph& g, const BackendDataSet& d, std::size_t k) {
  if (std::any_of(g.nodes.begin(), g.nodes.end(),
                  [](const auto& n) { return is_activation(n.op_type); })) {
    return activation_bounds(g, d, k);
  }
  // Terms by magnitude: every float input and constant by its magnitude (a BatchNormalization's
  // mean negative, and a Sub an Add, so that x - mean and a - b add the magnitudes), the integer
  // data and zero points by theirs. Other integer tensors (indices, axes, starts, shapes) keep
  // their values: they select the terms, they are not terms.
  std::set<std::string> means;
  int r = 1;
  for (const auto& n : g.nodes) {
    r = std::max(r, rounded_operands(n.op_type));
    if (n.op_type == "BatchNormalization" && n.inputs.size() > 3) means.insert(n.inputs[3]);
    if (n.op_type == "DequantizeLinear" && n.inputs.size() > 2) means.insert(n.inputs[2]);
  }
  const std::string data = g.inputs.empty() ? std::string() : g.inputs.front().name;
  const auto magnitude = [&](const std::string& name, Tensor t) {
    const double sign = means.count(name) != 0 ? -1.0 : 1.0;
    for (float& v : t.f) v = static_cast<float>(sign * std::abs(double{v}));
    if (name == data || means.count(name) != 0) {
      for (std::int64_t& v : t.i) v = std::abs(v);
    }
    return t;
  };
  Graph a = g;
  for (auto& n : a.nodes) {
    if (n.op_type == "Sub") n.op_type = "Add";
  }
  for (auto& [name, t] : a.initializers) t = magnitude(name, t);
  models::graph::TensorMap inputs;
  for (std::size_t i = 0; i < g.inputs.size(); ++i) {
    inputs[g.inputs[i].name] = magnitude(g.inputs[i].name, d.inputs.at(i));
  }
  const models::graph::TensorMap out = models::graph::run_reference(a, inputs);
  const Tensor& s = out.at(g.outputs.at(k).name);
  const Tensor& b = d.outputs.at(k);
  if (s.elements() != b.elements()) {
    throw GraphError(
        fmt::format("output {}: the reference computes {} elements, ONNX's data "
                    "holds {}",
                    k, s.elements(), b.elements()));
  }
  const double softmax_m = softmax_input_max(g, d);
  const std::string refused = softmax_refusal(softmax_m);
  if (!refused.empty()) throw GraphError(refused);
  // PRelu, LeakyRelu: x, or slope x with both rounded: two roundings of the output itself.
  bool prelu = false;
  for (const auto& n : g.nodes) prelu = prelu || n.op_type == "PRelu" || n.op_type == "LeakyRelu";
  std::vector<double> bound(b.elements());
  const double rel = r * std::ldexp(1.0, -11) + std::ldexp(1.0, -20);
  for (std::size_t i = 0; i < bound.size(); ++i) {
    const double terms =
        softmax_m >= 0.0
            ? (std::ldexp(1.0, -10) * softmax_m + std::ldexp(1.0, -20)) * std::abs(b.at(i))
        : prelu ? (2 * std::ldexp(1.0, -11) + std::ldexp(1.0, -20)) * std::abs(b.at(i))
                : rel * std::abs(s.at(i));
    bound[i] = terms + std::ldexp(1.0, -11) * std::abs(b.at(i)) + std::ldexp(1.0, -24);
  }
  return bound;
}

Comparison fp16_reference(const Graph& g, const BackendDataSet& d, std::size_t k,
                          const std::vector<double>& bounds) {
  Graph rounded = g;
  for (auto& [name, t] : rounded.initializers) t = to_fp16(t);
  const models::graph::TensorMap out =
      models::graph::run_reference(rounded, graph_inputs(g, d.inputs, true));
  return compare_output(out.at(g.outputs.at(k).name).f, d.outputs.at(k), bounds);
}

Comparison compare_output(const std::vector<float>& device, const Tensor& expected,
                          const std::vector<double>& bounds) {
  Comparison c;
  if (device.size() != expected.elements()) {
    c.failures = 1;
    c.message = fmt::format("the device computed {} elements, ONNX's output has {}", device.size(),
                            expected.elements());
    return c;
  }
  double worst_ratio = -1.0;
  for (std::size_t i = 0; i < device.size(); ++i) {
    const double a = device[i], b = expected.at(i);
    double ratio = 0.0;
    bool ok = true;
    if (std::isnan(b) || std::isinf(b)) {
      ok = std::isnan(b) ? std::isnan(a) : a == b;
      ratio = ok ? 0.0 : std::numeric_limits<double>::infinity();
    } else if (!std::isfinite(a)) {
      ok = false;
      ratio = std::numeric_limits<double>::infinity();
    } else if (bounds[i] == 0.0) {  // integers: exact
      ok = a == b;
      ratio = ok ? 0.0 : std::numeric_limits<double>::infinity();
    } else {
      ratio = std::abs(a - b) / bounds[i];
      ok = ratio <= 1.0;
    }
    if (!ok) ++c.failures;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      c.worst = i;
      c.device = a;
      c.expected = b;
      c.bound = bounds[i];
    }
  }
  if (c.failures != 0) {
    c.message = fmt::format(
        "{} of {} elements outside the bound; worst element {}: device {:.8g}, expected {:.8g}, "
        "|a-b| {:.3g} > {:.3g}",
        c.failures, device.size(), c.worst, c.device, c.expected, std::abs(c.device - c.expected),
        c.bound);
  }
  return c;
}

}  // namespace octasim::firmware::net
