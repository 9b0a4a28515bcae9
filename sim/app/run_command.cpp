// `octasim run TRACE.cfg`: play an NVDLA trace on the device and report every check.
#include <exception>
#include <string>

#include <fmt/core.h>
#include <systemc>

#include "firmware/regmap/regmap.hpp"
#include "sim/app/commands.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/dla_device.hpp"
#include "sim/dla/functional_device.hpp"
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
  if (!line.empty()) fmt::print("    counters: {}\n", line);
}

// Plays the trace on the cycle-level device inside one SystemC simulation.
trace::PlayResult play_cycle_level(const trace::Trace& t, const HwConfig& hw,
                                   const trace::PlayerOptions& po) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  dla::DlaDevice device("dla", hw);
  trace::PlayResult result = trace::play(t, device, po);
  fmt::print("\nlayers (cycle-level, {}):\n", hw.name);
  for (const auto& l : device.layers()) {
    print_layer(l.engine, l.group, l.result);
    const std::uint64_t cycles = l.end_cycle - l.start_cycle;
    fmt::print("    cycles {}..{} ({} cycles), read stall {}, write stall {}\n", l.start_cycle,
               l.end_cycle, cycles, l.read_stall_cycles, l.write_stall_cycles);
    if (l.result.macs > 0 && cycles > 0) {
      // Useful MACs over what the atomic-C x atomic-K array could have done in the layer's time.
      // (INT16/FP16 run atomic-K/2 kernels at a time.)
      const double peak = static_cast<double>(cycles) * l.result.macs_per_cycle;
      fmt::print("    MAC utilization {:.1f}% of {} MACs/cycle ({:.1f} MACs/cycle)\n",
                 100.0 * static_cast<double>(l.result.macs) / peak, l.result.macs_per_cycle,
                 static_cast<double>(l.result.macs) / static_cast<double>(cycles));
    }
    print_counters(l.result);
  }
  fmt::print("units:\n");
  for (std::size_t i = 0; i < dla::engines().size(); ++i) {
    const dla::EngineStats& s = device.engine(i).stats();
    if (s.operations == 0) continue;
    fmt::print(
        "  {}: {} op, active {} cycles, busy {}, read stall {}, write stall {}, "
        "read {} B, wrote {} B\n",
        dla::engines()[i].name, s.operations, s.active_cycles, s.busy_cycles, s.read_stall_cycles,
        s.write_stall_cycles, s.bytes_read, s.bytes_written);
  }
  fmt::print("  DRAM: read {} B, wrote {} B, bus busy {} cycles ({} B/cycle peak)\n",
             device.dram().bytes_read(), device.dram().bytes_written(), device.dram().busy_cycles(),
             device.dram().bytes_per_cycle());
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

  trace::PlayResult result;
  try {
    result = opts.functional ? play_functional(t, hw, po) : play_cycle_level(t, hw, po);
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
