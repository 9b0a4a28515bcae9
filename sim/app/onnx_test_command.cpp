// `octasim onnx-test DIR...`: ONNX backend node tests run on the device. Each test is compiled
// by the network compiler (firmware/net) — float tests at FP16 — and every data set's images run
// on one device (the cycle-level SoC, or the functional device), each checked bit for bit
// against the layer-by-layer models/ executor and then against ONNX's expected outputs within
// the FP16 bound of firmware/net/backend_test.hpp. One line per test:
//   PASS name | FAIL name: <what differs> | UNSUPPORTED name: <op> <why>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <systemc>

#include <CLI/CLI.hpp>
#include "firmware/driver/host_memory.hpp"
#include "firmware/net/backend_test.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "sim/app/commands.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"

namespace octasim::app {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;

enum class Verdict { kPass, kFail, kUnsupported };

struct Outcome {
  Verdict verdict = Verdict::kPass;
  std::string detail;
};

// The device every test runs on: one per process (one SystemC elaboration), its register
// groups carried from program to program.
class TestDevice {
 public:
  TestDevice(const HwConfig& hw, bool functional, std::uint64_t timeout) {
    if (functional) {
      functional_ = std::make_unique<dla::FunctionalDevice>(hw);
    } else {
      sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
      soc_ = std::make_unique<soc::Soc>("dla", hw);
      adapter_ = std::make_unique<soc::HostAdapter>(*soc_);
    }
    mmio_ = std::make_unique<trace::DeviceMmio>(device(), timeout);
  }
  trace::Device& device() {
    return functional_ ? static_cast<trace::Device&>(*functional_) : *adapter_;
  }
  trace::DeviceMmio& mmio() { return *mmio_; }
  fn::GroupState& groups() { return groups_; }

 private:
  std::unique_ptr<dla::FunctionalDevice> functional_;
  std::unique_ptr<soc::Soc> soc_;
  std::unique_ptr<soc::HostAdapter> adapter_;
  std::unique_ptr<trace::DeviceMmio> mmio_;
  fn::GroupState groups_;
};

// Runs every image of `bound` through `prog` on the device and on models/; the outputs (each
// graph output, images concatenated) or a FAIL naming the first image that differs.
Outcome run_images(const fn::NetProgram& prog, const fn::BoundTest& bound, TestDevice& dev,
                   std::vector<std::vector<float>>& outputs) {
  firmware::HostMemory golden;
  DeviceMemory memory = trace::dma_memory(dev.device());  // DRAM and CV-SRAM
  fn::load_constants(prog, memory);
  fn::load_constants(prog, golden);
  outputs.assign(prog.outputs.size(), {});
  for (std::size_t i = 0; i < bound.image_count; ++i) {
    const fn::ImageRun run =
        fn::run_image(prog, bound.images, i, memory, dev.mmio(), dev.groups(), golden);
    if (run.differing_output < prog.outputs.size()) {
      return {Verdict::kFail, fmt::format("image {}: output '{}' differs from the models/ "
                                          "executor's",
                                          i, prog.outputs[run.differing_output].name)};
    }
    for (std::size_t k = 0; k < prog.outputs.size(); ++k) {
      const Tensor t = fn::read_output(prog, k, memory);
      outputs[k].insert(outputs[k].end(), t.f.begin(), t.f.end());
    }
  }
  return {};
}

std::string op_of(const fn::BackendTest& t) {
  return t.graph.nodes.empty() ? std::string("graph") : t.graph.nodes.front().op_type;
}

Outcome run_test(const std::string& dir, const HwConfig& hw, TestDevice& dev) {
  fn::BackendTest test;
  try {
    test = fn::read_backend_test(dir);
  } catch (const firmware::OnnxError& e) {
    return {Verdict::kFail, e.what()};  // a test that cannot be read
  } catch (const models::graph::GraphError& e) {
    return {Verdict::kUnsupported, e.what()};
  }
  // Float data (the first graph input; the others become constants) runs at FP16; integer data
  // holds its values as INT16 codes.
  fn::QuantOptions options;
  options.precision =
      fn::integer_network(test.graph) ? fn::NetPrecision::kInt16 : fn::NetPrecision::kFp16;
  for (const fn::BackendDataSet& d : test.data_sets) {
    fn::CompiledNetwork net;
    fn::BoundTest bound;
    // Refusals come before the device runs: an exception thrown after SystemC has switched
    // stacks confuses ASan's bookkeeping (a warning on stderr).
    if (options.precision == fn::NetPrecision::kFp16) {
      try {
        const std::string refused = fn::fp16_bound_refusal(test.graph, d);
        if (!refused.empty()) return {Verdict::kUnsupported, refused};
      } catch (const models::graph::GraphError& e) {
        return {Verdict::kUnsupported, e.what()};
      }
    }
    try {
      bound = fn::bind_test(test.graph, d);
      net = fn::prepare_network(bound.graph, hw);
      fn::quantize_network(net, hw, fn::slice_batch(bound.images, 0, 1), options);
    } catch (const models::graph::GraphError& e) {
      return {Verdict::kUnsupported, e.what()};
    } catch (const firmware::FirmwareError& e) {
      return {Verdict::kUnsupported, e.what()};
    }
    std::vector<std::vector<float>> outputs;
    try {
      const Outcome o = run_images(net.program, bound, dev, outputs);
      if (o.verdict != Verdict::kPass) {
        return {o.verdict, fmt::format("{}: {}", d.name, o.detail)};
      }
    } catch (const std::runtime_error& e) {
      return {Verdict::kFail, fmt::format("{}: {}", d.name, e.what())};
    }
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      // Integer outputs (QuantizeLinear's codes, ConvInteger's sums) must be exact; float ones
      // (DequantizeLinear's too) within the FP16 bound.
      const bool exact_output = !models::graph::is_float(d.outputs[k].dtype);
      std::vector<double> bounds(d.outputs[k].elements(), 0.0);
      try {
        if (!exact_output) bounds = fn::fp16_bounds(test.graph, d, k);
      } catch (const models::graph::GraphError& e) {
        return {Verdict::kUnsupported, e.what()};
      }
      if (!exact_output) {
        const fn::Comparison r = fn::fp16_reference(test.graph, d, k, bounds);
        if (r.failures != 0) {
          return {Verdict::kUnsupported,
                  fmt::format("{}: FP16 cannot hold {}'s data: ONNX's reference on it rounded to "
                              "FP16 is already outside the bound (element {}: {:.6g} against "
                              "{:.6g})",
                              op_of(test), d.name, r.worst, r.device, r.expected)};
        }
      }
      const fn::Comparison c = fn::compare_output(outputs[k], d.outputs[k], bounds);
      if (c.failures != 0) {
        return {Verdict::kFail,
                fmt::format("{}: output '{}': {}", d.name, test.graph.outputs[k].name, c.message)};
      }
    }
  }
  return {};
}

}  // namespace

void add_onnx_test_command(CLI::App& app, OnnxTestOptions& o) {
  auto* cmd = app.add_subcommand(
      "onnx-test",
      "run ONNX backend test directories (model.onnx, test_data_set_*/) on the device: float "
      "tests at FP16, compared with ONNX's outputs within the FP16 bound the README states");
  cmd->add_option("dirs", o.dirs, "test directories");
  cmd->add_option("--registry", o.registry,
                  "also every test directory in NODE_DIR (ONNX's node tests: "
                  "/usr/include/onnx/backend/test/data/node) whose operators are all operators "
                  "octasim knows (`octasim ops`), in name order");
  cmd->add_option("--config", o.config,
                  "hardware configuration with FP16 (nv_full, nv_large, soc_large, a JSON or "
                  ".spec file)");
  cmd->add_flag("--functional", o.functional,
                "run on the zero-time functional device instead of the cycle-level SoC");
  cmd->add_option("--timeout-cycles", o.timeout_cycles,
                  "fail a layer that takes longer than this many cycles");
}

int run_onnx_test(const OnnxTestOptions& options) {
  OnnxTestOptions o = options;
  if (!o.registry.empty()) {
    if (!std::filesystem::is_directory(o.registry)) {
      throw UsageError(fmt::format("--registry {}: not a directory", o.registry));
    }
    const std::vector<std::string> tests = fn::registry_node_tests(o.registry);
    o.dirs.insert(o.dirs.end(), tests.begin(), tests.end());
  }
  if (o.dirs.empty()) throw UsageError("onnx-test: no test directories (DIR... or --registry)");
  HwConfig hw;
  try {
    hw = load_hw_config(o.config);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  for (const std::string& dir : o.dirs) {
    if (!std::filesystem::is_regular_file(std::filesystem::path(dir) / "model.onnx")) {
      throw UsageError(fmt::format("{}: not an ONNX backend test directory (no model.onnx)", dir));
    }
  }
  TestDevice dev(hw, o.functional, o.timeout_cycles);
  std::size_t pass = 0, fail = 0, unsupported = 0;
  for (const std::string& dir : o.dirs) {
    const Outcome r = run_test(dir, hw, dev);
    std::string name = std::filesystem::path(dir).filename().string();
    if (name.empty()) name = std::filesystem::path(dir).parent_path().filename().string();
    switch (r.verdict) {
      case Verdict::kPass:
        fmt::print("PASS {}\n", name);
        ++pass;
        break;
      case Verdict::kFail:
        fmt::print("FAIL {}: {}\n", name, r.detail);
        ++fail;
        break;
      case Verdict::kUnsupported:
        fmt::print("UNSUPPORTED {}: {}\n", name, r.detail);
        ++unsupported;
        break;
    }
    std::fflush(stdout);
  }
  if (o.dirs.size() > 1) {
    fmt::print("onnx-test: {} passed, {} failed, {} unsupported (on {})\n", pass, fail, unsupported,
               hw.name);
  }
  return fail != 0 ? 1 : unsupported != 0 ? 2 : 0;
}

}  // namespace octasim::app
