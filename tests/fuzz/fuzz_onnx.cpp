// Fuzz target: ONNX models (firmware/onnx/onnx_import.cpp: protobuf parse and the import into
// models/graph, with its checks; then the graph passes the compiler starts with, Identity
// removal and BatchNorm folding) and TensorProto files. No SystemC; the compiler's planning and
// calibration run the reference executor on the model's shapes, too slow per input. A malformed
// model must give OnnxError (or TensorFileError for a tensor), nothing else.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "firmware/onnx/onnx_import.hpp"
#include "models/graph/passes.hpp"
#include "models/io/tensor_file.hpp"
#include "tests/fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = octasim::fuzz::write_scratch("model.onnx", data, size);
  try {
    octasim::models::graph::Graph g = octasim::firmware::load_onnx(path);
    // The compiler's first, graph-level passes (firmware/net/compiler.cpp applies them before
    // planning): pure rewrites of what the importer accepted.
    try {
      (void)octasim::models::graph::remove_identities(g);
      (void)octasim::models::graph::fold_batch_norm(g);
    } catch (const octasim::models::graph::GraphError& e) {
      octasim::fuzz::rejected(e);
    }
  } catch (const octasim::firmware::OnnxError& e) {
    octasim::fuzz::rejected(e);
  }
  const std::string pb = octasim::fuzz::write_scratch("tensor.pb", data, size);
  try {
    (void)octasim::firmware::read_tensor_pb(pb);
  } catch (const octasim::firmware::OnnxError& e) {
    octasim::fuzz::rejected(e);
  } catch (const octasim::models::TensorFileError& e) {
    octasim::fuzz::rejected(e);
  }
  return 0;
}
