// The ONNX importer (firmware/onnx) and the reference executor (models/graph) against ONNX's own
// backend node tests (Debian's libonnx-testdata: model.onnx, test_data_set_*/input_*.pb and the
// expected output_*.pb). Every test whose operators are all in the operator registry must pass,
// within ONNX's backend tolerances for floats (rtol 1e-3, atol 1e-7) and exactly for integers —
// except the ones listed in kUnsupported with the reason; a listed test that starts passing fails
// too, so the list stays true.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "firmware/net/backend_test.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "models/graph/op_registry.hpp"
#include "models/graph/reference.hpp"

namespace octasim {
namespace {

namespace fs = std::filesystem;
namespace g = models::graph;

const char* const kNodeDir = "/usr/include/onnx/backend/test/data/node";

// Tests the importer or the reference executor refuses, with why (an error is expected).
const std::map<std::string, std::string> kUnsupported = {
    {"test_averagepool_3d_default",
     "3-D pooling: octasim lowers 1-D and 2-D spatial operators only"},
    {"test_maxpool_3d_default", "3-D pooling: octasim lowers 1-D and 2-D spatial operators only"},
    {"test_batchnorm_epsilon_training_mode", "BatchNormalization training mode (inference only)"},
    {"test_batchnorm_example_training_mode", "BatchNormalization training mode (inference only)"},
    {"test_maxpool_with_argmax_2d_precomputed_pads", "MaxPool's Indices output"},
    {"test_maxpool_with_argmax_2d_precomputed_strides", "MaxPool's Indices output"},
    {"test_training_dropout", "Dropout in training mode drops at random: inference only"},
    {"test_training_dropout_default", "Dropout in training mode drops at random: inference only"},
    {"test_training_dropout_default_mask",
     "Dropout in training mode drops at random: inference only"},
    {"test_training_dropout_mask", "Dropout in training mode drops at random: inference only"},
};

// Every node test whose graph uses only operators of the registry (models/graph/op_registry.hpp):
// the tests of every operator octasim knows, including ONNX's expansions of other operators into
// them. A model the importer cannot read is not one of them.
std::vector<std::string> node_tests() {
  std::vector<std::string> names;
  for (const std::string& dir : firmware::net::registry_node_tests(kNodeDir)) {
    names.push_back(fs::path(dir).filename().string());
  }
  return names;
}

// Runs the test directory; returns "" when every output matches, else what differs.
std::string run_node_test(const fs::path& dir) {
  const g::Graph graph = firmware::load_onnx((dir / "model.onnx").string());
  std::string problems;
  for (int set = 0; fs::is_directory(dir / ("test_data_set_" + std::to_string(set))); ++set) {
    const fs::path data = dir / ("test_data_set_" + std::to_string(set));
    g::TensorMap inputs;
    for (std::size_t k = 0; k < graph.inputs.size(); ++k) {
      inputs[graph.inputs[k].name] =
          firmware::read_tensor((data / ("input_" + std::to_string(k) + ".pb")).string());
    }
    const g::TensorMap values = g::run_reference(graph, inputs);
    for (std::size_t k = 0; k < graph.outputs.size(); ++k) {
      const g::Tensor want =
          firmware::read_tensor((data / ("output_" + std::to_string(k) + ".pb")).string());
      const g::Tensor& got = values.at(graph.outputs[k].name);
      if (got.shape != want.shape) {
        problems += "output " + std::to_string(k) + " shape " + g::shape_string(got.shape) +
                    ", expected " + g::shape_string(want.shape) + "; ";
        continue;
      }
      if (got.dtype != want.dtype) {
        problems += std::string("output type ") + g::dtype_name(got.dtype) + ", expected " +
                    g::dtype_name(want.dtype) + "; ";
        continue;
      }
      for (std::size_t e = 0; e < want.elements(); ++e) {
        const double a = got.at(e), b = want.at(e);
        const bool ok =
            g::is_float(want.dtype) ? std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b) : a == b;
        if (!ok) {
          problems += "output " + std::to_string(k) + " element " + std::to_string(e) + ": " +
                      std::to_string(a) + ", expected " + std::to_string(b) + "; ";
          break;
        }
      }
    }
  }
  return problems;
}

class OnnxNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, ReferenceMatchesOnnx) {
  const std::string& name = GetParam();
  const auto listed = kUnsupported.find(name);
  std::string problems;
  try {
    problems = run_node_test(fs::path(kNodeDir) / name);
  } catch (const std::exception& e) {
    problems = std::string("error: ") + e.what();
  }
  if (listed != kUnsupported.end()) {
    EXPECT_FALSE(problems.empty())
        << name << " passes now: remove it from kUnsupported (" << listed->second << ")";
    return;
  }
  EXPECT_TRUE(problems.empty()) << problems;
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxNodeTest, ::testing::ValuesIn(node_tests()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(OnnxNodeTests, AreInstalled) {
  // libonnx-testdata (scripts/install-deps.sh) must provide them: 300+ use registry operators only.
  EXPECT_GE(node_tests().size(), 300u);
}

TEST(OnnxImport, ErrorsNameTheFile) {
  EXPECT_THROW((void)firmware::load_onnx("/nonexistent/model.onnx"), firmware::OnnxError);
  const fs::path bad = fs::temp_directory_path() / "octasim-not-a-model.onnx";
  { std::ofstream(bad) << "this is not protobuf"; }
  try {
    (void)firmware::load_onnx(bad.string());
    ADD_FAILURE() << "garbage parsed as a model";
  } catch (const firmware::OnnxError& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
  fs::remove(bad);
}

}  // namespace
}  // namespace octasim
