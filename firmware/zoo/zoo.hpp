// The model zoo: standard network topologies written as ONNX models (opset 13, IR version 7)
// with deterministic weights — no download, no framework. The weights are not trained: they
// are uniform random numbers with He's variance (2 / fan_in) from a fixed-seed splitmix64, so
// a [0, 1) input keeps its scale through the depth (the transformers' LayerNorms renormalise it
// at every layer), and the same name gives the same bytes on every run and machine. For performance
// studies (octasim net) and MAC counts, not accuracy.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace octasim::firmware::zoo {

// An unknown model name or a file that cannot be written: one line.
class ZooError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ModelInfo {
  std::string name;                       // "resnet50"
  std::string description;                // one line
  std::vector<std::int64_t> input_shape;  // batch 1: NCHW, or 1 x tokens x features (bert_tiny)
};

// Every model, in the order `octasim zoo --list` prints them.
[[nodiscard]] const std::vector<ModelInfo>& models();

// The model `name`; ZooError names the known ones when there is no such model.
[[nodiscard]] const ModelInfo& model_info(const std::string& name);
[[nodiscard]] onnx::ModelProto build_model(const std::string& name);

// The binary ModelProto of `name` (deterministic serialization).
[[nodiscard]] std::string serialize_model(const std::string& name);

// Writes serialize_model(name) to `path`; ZooError "PATH: cannot write ..." when it fails.
void write_model(const std::string& name, const std::string& path);

}  // namespace octasim::firmware::zoo
