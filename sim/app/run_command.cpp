// `octasim run TRACE.cfg`: play an NVDLA trace on the device and report every check.
#include <exception>
#include <string>

#include <fmt/core.h>

#include "sim/app/commands.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"

namespace octasim::app {

void add_run_command(CLI::App& app, RunOptions& opts) {
  auto* cmd = app.add_subcommand("run", "run an NVDLA trace (.cfg) and check its results");
  cmd->add_option("trace", opts.trace, "trace file (NVDLA .cfg syntax)")->required();
  cmd->add_option("--config", opts.config,
                  "hardware configuration: nv_small (default), nv_small_256, nv_small_256_full, "
                  "nv_large, nv_full, or a JSON file");
  cmd->add_flag("--functional", opts.functional,
                "zero-time functional simulation (results only, no timing)");
  cmd->add_option("--timeout-cycles", opts.timeout_cycles,
                  "fail an interrupt wait or poll that takes longer than this many cycles");
}

int run_trace(const RunOptions& opts) {
  HwConfig hw;
  try {
    hw = load_hw_config(opts.config);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }

  trace::Trace t;
  try {
    t = trace::parse_trace_file(opts.trace);
  } catch (const trace::TraceError& e) {
    throw UsageError(e.what());
  }

  trace::PlayerOptions po;
  po.timeout_cycles = opts.timeout_cycles;
  po.report = [](const std::string& line) { fmt::print("{}\n", line); };

  dla::FunctionalDevice device(hw);
  trace::PlayResult result;
  try {
    result = trace::play(t, device, po);
  } catch (const trace::TraceError& e) {
    throw UsageError(e.what());
  }

  std::size_t passed = 0;
  for (const auto& c : result.checks) passed += c.pass ? 1 : 0;
  fmt::print("\n{}: {} on {} ({} simulation)\n", opts.trace, result.all_passed() ? "PASS" : "FAIL",
             hw.name, opts.functional ? "functional" : "functional");
  fmt::print("checks: {} passed, {} failed\n", passed, result.checks.size() - passed);
  for (const auto& layer : device.layers()) {
    fmt::print("  {} group {}: in {}x{}x{} -> out {}x{}x{}, read {} B, wrote {} B\n", layer.engine,
               layer.group, layer.result.in.width, layer.result.in.height, layer.result.in.channels,
               layer.result.out.width, layer.result.out.height, layer.result.out.channels,
               layer.result.bytes_read, layer.result.bytes_written);
  }
  fmt::print("cycles: trace={} compute={}\n", result.trace_cycles(), result.compute_cycles());
  return result.all_passed() ? 0 : 1;
}

}  // namespace octasim::app
