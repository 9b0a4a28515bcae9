// `octasim demo` and the default `octasim`: generate the firmware demo trace (a quantized
// CONV+SDP -> PDP -> CDP network with golden output from models/) and play it exactly as
// `octasim run` plays a trace.
#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include "firmware/demo/demo.hpp"
#include "octasim/version.hpp"
#include "sim/app/commands.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::app {
namespace {

// A fresh directory under the system's temporary directory, removed when this goes away.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    std::string pattern = (ec ? std::filesystem::path("/tmp") : base) / "octasim-demo-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) == nullptr) {
      throw UsageError(
          fmt::format("cannot create a temporary directory from '{}' (set TMPDIR, "
                      "or use octasim demo --out DIR)",
                      pattern));
    }
    path_ = buffer.data();
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  ~TemporaryDirectory() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

firmware::PoolMethod pool_method(const std::string& name) {
  if (name == "average") return firmware::PoolMethod::kAverage;
  if (name == "min") return firmware::PoolMethod::kMin;
  return firmware::PoolMethod::kMax;
}

int generate_and_run(const std::string& dir, bool temporary, const DemoOptions& opts) {
  firmware::DemoOptions demo;
  demo.pool = pool_method(opts.pool);
  // The demo runs on the default configuration; its firmware lays the layers out for it.
  demo.hw = firmware::conv_hardware(load_hw_config("nv_small"));
  firmware::DemoFiles files;
  try {
    files = firmware::write_demo(dir, demo);
  } catch (const firmware::FirmwareError& e) {
    throw UsageError(e.what());
  }
  fmt::print(
      "octasim {} — built-in demo: a quantized CONV -> PDP -> CDP network programmed by "
      "octasim's firmware, then OCTAV requantizing the CONV output\n",
      kVersion);
  for (const auto& layer : files.summary.layers) fmt::print("  {}\n", layer);
  fmt::print(
      "input and weights: pseudo-random INT8 (mt19937 seed {}); golden CRCs and counters from "
      "the models/ reference ops\n",
      demo.seed);
  fmt::print("expected counters: {}\n", files.summary.counters);
  fmt::print("quantization with device-computed clipping scalars vs max-scaling: {}\n",
             files.summary.quantization);
  fmt::print("trace: {}{}\n\n", files.trace_path,
             temporary ? " (temporary; keep one with: octasim demo --out DIR)" : "");
  RunOptions run;
  run.trace = files.trace_path;
  run.report = opts.report;
  run.timeline = opts.timeline;
  run.timeline_detail = opts.timeline_detail;
  return run_trace(run);
}

}  // namespace

void add_demo_command(CLI::App& app, DemoOptions& opts) {
  auto* cmd = app.add_subcommand(
      "demo", "generate the built-in CONV -> PDP -> CDP trace and run it (the default)");
  cmd->add_option("--out", opts.out,
                  "write demo.cfg and its .dat files into DIR (created if missing) and keep them");
  cmd->add_option("--pool", opts.pool, "PDP pooling method: max (default), average or min")
      ->check(CLI::IsMember({"max", "average", "min"}));
  cmd->add_option("--report", opts.report,
                  "write the run's report as JSON to FILE (as octasim run --report)");
  cmd->add_option("--timeline", opts.timeline,
                  "write a Chrome-trace/Perfetto timeline to FILE (as octasim run --timeline)");
  cmd->add_option("--timeline-detail", opts.timeline_detail, "layer, tile (default) or dma")
      ->check(CLI::IsMember({"layer", "tile", "dma"}));
}

int run_demo(const DemoOptions& opts) {
  if (!opts.out.empty()) return generate_and_run(opts.out, false, opts);
  const TemporaryDirectory tmp;
  return generate_and_run(tmp.path(), true, opts);
}

}  // namespace octasim::app
