// `octasim run TRACE.cfg`: play an NVDLA trace on the device and report every check.
#include <exception>
#include <fstream>
#include <optional>
#include <string>

#include <fmt/core.h>
#include <systemc>

#include "firmware/regmap/regmap.hpp"
#include "octasim/version.hpp"
#include "sim/app/commands.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/dla_device.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/report/report.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"

namespace octasim::app {
namespace {

void print_layer(const std::string& engine, unsigned group, const dla::OpResult& r) {
  fmt::print("  {} group {}: in {}x{}x{} -> out {}x{}x{}, read {} B, wrote {} B\n", engine, group,
             r.in.width, r.in.height, r.in.channels, r.out.width, r.out.height, r.out.channels,
             r.bytes_read, r.bytes_written);
  if (r.macs > 0) {
    fmt::print("    kernel {}x{}, stride {}x{}, weights {} B, {} MACs\n", r.kernel_width,
               r.kernel_height, r.stride_width, r.stride_height, r.weight_bytes, r.macs);
  }
}

// The statistics registers the layer set to a non-zero value, by NVDLA name.
void print_counters(const dla::OpResult& r) {
  std::string line;
  for (const auto& [addr, value] : r.status) {
    if (value == 0) continue;
    const regs::RegisterInfo* info = regs::find_register(addr);
    line += fmt::format("{}{}.{}={}", line.empty() ? "" : ", ", info ? info->unit : "?",
                        info ? info->name : "?", value);
  }
  if (!line.empty()) fmt::print("    registers: {}\n", line);
}

report::RunInfo run_info(const RunOptions& opts, const trace::PlayResult& result) {
  report::RunInfo info;
  info.generator = fmt::format("octasim {}", kVersion);
  info.trace = opts.trace;
  for (const auto& c : result.checks) (c.pass ? info.checks_passed : info.checks_failed) += 1;
  info.trace_cycles = result.trace_cycles();
  info.compute_cycles = result.compute_cycles();
  return info;
}

// Plays the trace on the cycle-level device inside one SystemC simulation, prints the summary
// and writes the report the options ask for.
trace::PlayResult play_cycle_level(const trace::Trace& t, const HwConfig& hw,
                                   const trace::PlayerOptions& po, const RunOptions& opts) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  dla::DlaDevice device("dla", hw);
  trace::PlayResult result = trace::play(t, device, po);
  const nlohmann::json summary = report::build(device, run_info(opts, result));
  report::print_summary(summary);
  if (!opts.report.empty()) {
    try {
      report::write(summary, opts.report);
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
  }
  return result;
}

trace::PlayResult play_functional(const trace::Trace& t, const HwConfig& hw,
                                  const trace::PlayerOptions& po) {
  dla::FunctionalDevice device(hw);
  trace::PlayResult result = trace::play(t, device, po);
  fmt::print("\nlayers (functional, {}):\n", hw.name);
  for (const auto& l : device.layers()) {
    print_layer(l.engine, l.group, l.result);
    print_counters(l.result);
  }
  return result;
}

}  // namespace

void add_report_options(CLI::App& cmd, RunOptions& opts) {
  cmd.add_option("--report", opts.report,
                 "write the run's report (layers, units, statistics, roofline) as JSON to FILE "
                 "(schema: sim/report/report.schema.json)");
}

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
  add_report_options(*cmd, opts);
}

int run_trace(const RunOptions& opts) {
  HwConfig hw;
  try {
    hw = load_hw_config(opts.config);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  if (opts.functional && !opts.report.empty()) {
    throw UsageError("--report needs the cycle-level device (drop --functional)");
  }
  // Output files are created before the simulation runs, so that an unwritable path is a usage
  // error up front rather than an exception after the SystemC kernel ran.
  for (const std::string* path : {&opts.report}) {
    if (path->empty()) continue;
    std::ofstream probe(*path);
    if (!probe) throw UsageError(fmt::format("{}: cannot write file", *path));
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

  trace::PlayResult result;
  try {
    result = opts.functional ? play_functional(t, hw, po) : play_cycle_level(t, hw, po, opts);
  } catch (const trace::TraceError& e) {
    throw UsageError(e.what());
  }

  std::size_t passed = 0;
  for (const auto& c : result.checks) passed += c.pass ? 1 : 0;
  fmt::print("\n{}: {} on {}\n", opts.trace, result.all_passed() ? "PASS" : "FAIL", hw.name);
  fmt::print("checks: {} passed, {} failed\n", passed, result.checks.size() - passed);
  fmt::print("cycles: trace={} compute={}\n", result.trace_cycles(), result.compute_cycles());
  return result.all_passed() ? 0 : 1;
}

}  // namespace octasim::app
