// The zoo's models against ONNX's own library (Debian's libonnx, independent of octasim): the
// model checker accepts them, strict shape inference from ONNX's operator schemas runs through
// them, and every tensor's shape it infers is the one octasim's shape inference finds.
#include <gtest/gtest.h>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "firmware/onnx/onnx_import.hpp"
#include "firmware/zoo/zoo.hpp"
#include "models/graph/macs.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::firmware::zoo {
namespace {

class ZooOnnxChecker : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooOnnxChecker, CheckerAcceptsAndShapesAgree) {
  const std::string& name = GetParam();
  onnx::ModelProto model = build_model(name);
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  // check_type, strict (a node whose inference fails throws), no data propagation.
  const onnx::ShapeInferenceOptions strict(true, 1, false);
  ASSERT_NO_THROW(
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), strict));

  const test::TempDir dir("zoo");
  const std::string path = (dir.path() / (name + ".onnx")).string();
  write_model(name, path);
  const models::graph::ShapeMap ours = models::graph::infer_shapes(load_onnx(path));
  std::size_t compared = 0;
  const auto compare = [&](const onnx::ValueInfoProto& vi) {
    std::vector<std::int64_t> theirs;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      ASSERT_TRUE(d.has_dim_value()) << vi.name() << ": ONNX left a dimension symbolic";
      theirs.push_back(d.dim_value());
    }
    ASSERT_EQ(ours.count(vi.name()), 1U) << vi.name();
    EXPECT_EQ(ours.at(vi.name()), theirs) << vi.name();
    ++compared;
  };
  for (const onnx::ValueInfoProto& vi : model.graph().value_info()) compare(vi);
  for (const onnx::ValueInfoProto& vi : model.graph().output()) compare(vi);
  // Every node's output: ONNX inferred them all.
  EXPECT_EQ(compared, static_cast<std::size_t>(model.graph().node_size())) << name;
}

INSTANTIATE_TEST_SUITE_P(Networks, ZooOnnxChecker,
                         ::testing::Values("lenet5", "alexnet", "googlenet", "resnet50",
                                           "mobilenet_v2", "vit_tiny", "bert_tiny"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace octasim::firmware::zoo
