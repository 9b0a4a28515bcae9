// ONNX backend node tests (onnx/backend/test/data/node/<name>: model.onnx and
// test_data_set_*/input_*.pb, output_*.pb) as octasim runs them on the device (`octasim
// onnx-test`): reading a test, turning its graph into one the network compiler takes, and the
// comparison of the device's outputs with ONNX's.
//
// A test's graph takes every operand as a graph input. The first is the data the device reads;
// the others (weights, biases, statistics, a second addend) are bound as constants to the
// values of the data set — what a deployed network holds as initializers. When the data input
// is N x C x H x W with N > 1, the device runs the N images one after the other (its first axis
// becomes the batch), which is what ONNX's operators compute for each image.
//
// Float tests run at FP16. Tolerance, derived from the FP16 rounding of what the device is given
// (NVDLA's precision guide: FP16 inputs and weights, exact or FP32 accumulation, one FP16
// rounding of each output): each element b of ONNX's output may differ from the device's a by
//   |a - b| <= (r 2^-11 + 2^-20) S + 2^-11 |b| + 2^-24
// S: the sum of the magnitudes of the terms that make the element (the reference executor run on
// the magnitudes of every input and constant; BatchNormalization's mean and DequantizeLinear's zero
// point subtracted as + their magnitude),
// r: how many roundings of 2^-11 a term meets before the output's (Conv, Gemm, MatMul, Mul: data
// and weight, 2; GlobalAveragePool: data and PDP's two FP17 reciprocals of 2^-12 each, 2;
// AveragePool: 3, the same or, where it excludes padding, data, PDP's FP16 window sum and the
// FP16 1/count SDP multiplies by; BatchNormalization: data and the folded scale, 2; LRN: data
// and the LUT, 2; Add, Relu, MaxPool, Flatten: 1). 2^-11 |b| is the output's rounding, 2^-24
// FP16's subnormal spacing, 2^-20 S the FP32 steps between.
// Softmax: y_i moves by y_i (dx_i - sum_j y_j dx_j) when its inputs move by dx, and FP16 rounds
// them by up to 2^-11 M (M: the largest |x|), so its term is (2^-10 M + 2^-20) |b| instead —
// a first-order bound, refused (GraphError) when 2^-10 M exceeds 1/16. PRelu and LeakyRelu: x or
// slope x, both rounded: (2 2^-11 + 2^-20) |b|.
// Sigmoid, Tanh, HardSigmoid, HardSwish (with Mul: SiLU, HardSwish expanded) run on recipes
// whose error is not a few roundings of the operands (an INT16 grid and a LUT, activation.hpp):
// a graph holding one is bounded by carrying each tensor's error bound node by node —
// fp16_activation_bound for the activations, Lipschitz constants for their input's error, the
// product rule and one rounding for Mul — refused (GraphError) for any other node.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "models/graph/graph.hpp"
#include "models/graph/reference.hpp"

namespace octasim::firmware::net {

struct BackendDataSet {
  std::string name;                            // test_data_set_0
  std::vector<models::graph::Tensor> inputs;   // input_0.pb, ... in graph-input order
  std::vector<models::graph::Tensor> outputs;  // output_0.pb, ...
};

struct BackendTest {
  std::string name;  // the directory's name
  models::graph::Graph graph;
  std::vector<BackendDataSet> data_sets;
};

// Reads DIR/model.onnx and every DIR/test_data_set_*/ (sorted). Throws OnnxError (file) or
// models::graph::GraphError.
[[nodiscard]] BackendTest read_backend_test(const std::string& dir);

// Every test directory in `node_dir` (ONNX's backend node tests) whose graph uses only operators
// of the registry (models/graph/op_registry.hpp) — the tests of every operator octasim knows,
// ONNX's expansions of other operators into them included — as paths, sorted by name. A model the
// importer cannot read is not one of them; a missing `node_dir` gives none.
[[nodiscard]] std::vector<std::string> registry_node_tests(const std::string& node_dir);

// The test's graph for one data set, ready for the compiler: inputs after the first bound as
// initializers, and the data input's first axis made the batch when it is N x C x H x W.
// `images` receives the data input as the runtime takes it: its first axis the images.
struct BoundTest {
  models::graph::Graph graph;
  models::graph::Tensor images;
  std::size_t image_count = 1;
};
[[nodiscard]] BoundTest bind_test(const models::graph::Graph& g, const BackendDataSet& d);

// Why the bound above does not apply to data set `d` ("" when it does): a Softmax whose inputs
// FP16 rounds too coarsely for the first-order bound. Checked before the device runs (fp16_bounds
// throws GraphError with the same words).
[[nodiscard]] std::string fp16_bound_refusal(const models::graph::Graph& g,
                                             const BackendDataSet& d);

// How many FP16-rounded operands multiply in one term of an op's sums (r above): the operator
// registry's fp16_roundings (models/graph/op_registry.cpp), 1 for an operator it does not know.
[[nodiscard]] int rounded_operands(const std::string& op_type);

// The bound of every element of output `k` (above) for data set `d` of graph `g` (the graph as
// read, with its own inputs).
[[nodiscard]] std::vector<double> fp16_bounds(const models::graph::Graph& g,
                                              const BackendDataSet& d, std::size_t k);

// ONNX's reference run on the data rounded to FP16 (inputs and constants), compared with ONNX's
// expected output `k` within `bounds`: a test whose data FP16 cannot hold fails here whatever
// the device does (onnx-test reports it UNSUPPORTED).
struct Comparison;
[[nodiscard]] Comparison fp16_reference(const models::graph::Graph& g, const BackendDataSet& d,
                                        std::size_t k, const std::vector<double>& bounds);

// The comparison of one output: the number of elements outside their bound and the worst one
// (largest |a - b| / bound).
struct Comparison {
  std::size_t failures = 0;
  std::size_t worst = 0;
  double device = 0.0, expected = 0.0, bound = 0.0;
  std::string message;  // "" when every element is within its bound
};
[[nodiscard]] Comparison compare_output(const std::vector<float>& device,
                                        const models::graph::Tensor& expected,
                                        const std::vector<double>& bounds);

}  // namespace octasim::firmware::net
