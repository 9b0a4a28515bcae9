// `octasim run TRACE.cfg`: play an NVDLA trace on the device and report every check.
#include <unistd.h>  // isatty

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <fmt/core.h>
#include <systemc>

#include <CLI/CLI.hpp>
#include "firmware/regmap/regmap.hpp"
#include "models/io/atomic_file.hpp"
#include "octasim/version.hpp"
#include "sim/app/commands.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/stop_request.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/report/report.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/stoppable_device.hpp"
#include "sim/trace/trace.hpp"
#include "sim/trace/txn_reader.hpp"

namespace octasim::app {
namespace {

void print_layer(const std::string& engine, unsigned group, const dla::OpResult& r) {
  // A unit without an output surface (OCTAV: clipping scalars to registers) shows none.
  const std::string to =
      r.out.width == 0 ? std::string()
                       : fmt::format(" -> out {}x{}x{}", r.out.width, r.out.height, r.out.channels);
  fmt::print("  {} group {}: in {}x{}x{}{}, read {} B, wrote {} B\n", engine, group, r.in.width,
             r.in.height, r.in.channels, to, r.bytes_read, r.bytes_written);
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

// The trace::Device the player drives, with a progress line on stderr: simulated cycles and the
// share of the trace's register writes and interrupt waits done, shown once a run has taken
// more than two seconds and refreshed four times a second. Interrupt waits run in slices of
// simulated time so that the line moves during long layers (the device's timing is the same).
class ProgressDevice final : public trace::Device {
 public:
  ProgressDevice(trace::Device& inner, const trace::Trace& t) : inner_(inner) {
    for (const auto& c : t.commands) {
      total_ += c.op == trace::Op::kRegWrite || c.op == trace::Op::kIntrNotify ? 1 : 0;
    }
  }
  ProgressDevice(const ProgressDevice&) = delete;
  ProgressDevice& operator=(const ProgressDevice&) = delete;
  ~ProgressDevice() override {
    if (shown_) std::fputs("\r\033[K", stderr);  // leave the terminal as it was
  }

  void csb_write(std::uint32_t addr, std::uint32_t value) override {
    inner_.csb_write(addr, value);
    ++done_;
    tick();
  }
  [[nodiscard]] std::uint32_t csb_read(std::uint32_t addr) override {
    const std::uint32_t v = inner_.csb_read(addr);
    tick();
    return v;
  }
  [[nodiscard]] MemoryImage& memory() override { return inner_.memory(); }
  [[nodiscard]] MemoryImage& memory_of(MemorySpace space) override {
    return inner_.memory_of(space);
  }
  [[nodiscard]] bool wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) override {
    constexpr std::uint64_t kSlice = 1'000'000;
    const std::uint64_t deadline = cycle() + timeout_cycles;
    for (;;) {
      const std::uint64_t slice = std::min(kSlice, deadline - cycle());
      if (inner_.wait_interrupt(status_bit, slice)) {
        ++done_;
        tick();
        return true;
      }
      tick();
      if (cycle() >= deadline) return false;
    }
  }
  void wait_cycles(std::uint64_t cycles) override {
    inner_.wait_cycles(cycles);
    tick();
  }
  [[nodiscard]] std::uint64_t cycle() const override { return inner_.cycle(); }

 private:
  void tick() {
    const auto now = std::chrono::steady_clock::now();
    if (now - started_ < std::chrono::seconds(2) ||
        now - shown_at_ < std::chrono::milliseconds(250)) {
      return;
    }
    shown_at_ = now;
    shown_ = true;
    fmt::print(stderr,
               "\r\033[Koctasim: cycle {}, {}% of the trace's register writes and interrupt waits",
               cycle(), total_ == 0 ? 100 : 100 * done_ / total_);
    std::fflush(stderr);
  }

  trace::Device& inner_;
  std::uint64_t total_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point shown_at_{};
  bool shown_ = false;
};

// The layer map `octasim compile` writes beside its trace (layer_map.json): hardware layer i ->
// its ONNX nodes, in execution order. Empty when there is none or it does not parse.
std::vector<std::string> read_layer_map(const std::string& trace_path) {
  const std::filesystem::path map =
      std::filesystem::path(trace_path).parent_path() / "layer_map.json";
  std::ifstream in(map);
  std::vector<std::string> nodes;
  if (!in) return nodes;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    // One entry per device layer record: a convolution with a flying PDP leaves two.
    for (const nlohmann::json& l : j.at("layers")) {
      const std::size_t records = l.contains("records") ? l.at("records").get<std::size_t>() : 1;
      for (std::size_t r = 0; r < records; ++r) {
        nodes.push_back(l.at("onnx_nodes").get<std::string>());
      }
    }
  } catch (const nlohmann::json::exception&) {
    fmt::print(
        "note: {} is not a layer map octasim can read; layers are shown without ONNX nodes\n",
        map.string());
    nodes.clear();
  }
  return nodes;
}

// The VCD file `--vcd FILE` names: FILE, with ".vcd" appended unless it ends so (SystemC's rule).
std::string vcd_path(const std::string& option) {
  const bool suffix = option.size() > 4 && option.compare(option.size() - 4, 4, ".vcd") == 0;
  return suffix ? option : option + ".vcd";
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
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  std::unique_ptr<stats::Timeline> timeline;
  if (!opts.timeline.empty()) {
    const stats::Detail detail = opts.timeline_detail == "layer" ? stats::Detail::kLayer
                                 : opts.timeline_detail == "dma" ? stats::Detail::kDma
                                                                 : stats::Detail::kTile;
    timeline = std::make_unique<stats::Timeline>(detail);
    soc.set_timeline(timeline.get());
  }
  // The waveform goes to a temporary file (SystemC appends ".vcd" to the name it is given),
  // renamed into place with the other outputs once the run is complete.
  std::optional<models::PendingFile> vcd_file;
  sc_core::sc_trace_file* vcd = nullptr;
  if (!opts.vcd.empty()) {
    vcd_file.emplace(vcd_path(opts.vcd), ".vcd");
    std::string base = vcd_file->temp_path();
    base.resize(base.size() - 4);
    vcd = sc_core::sc_create_vcd_trace_file(base.c_str());
    vcd->set_time_unit(1, sc_core::SC_NS);
    soc.trace_signals(vcd);
  }
  trace::StoppableDevice stoppable(device);
  trace::PlayResult result;
  if (opts.progress && isatty(STDERR_FILENO) == 1) {
    ProgressDevice progress(stoppable, t);
    result = trace::play(t, progress, po);
  } else {
    result = trace::play(t, stoppable, po);
  }
  throw_if_stop_requested(device.cycle());
  if (vcd != nullptr) sc_core::sc_close_vcd_trace_file(vcd);
  const report::RunInfo info = run_info(opts, result);
  nlohmann::json summary = report::build(soc, info);
  report::annotate_onnx_nodes(summary, read_layer_map(opts.trace));
  report::print_summary(summary);
  try {
    models::PendingFileSet outputs;  // all of them or none
    if (!opts.report.empty()) outputs.add(opts.report, report::report_text(summary));
    if (timeline) outputs.add(opts.timeline, report::timeline_text(*timeline, info.generator));
    if (vcd_file) vcd_file->commit();
    outputs.commit();
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  return result;
}

trace::PlayResult play_functional(const trace::Trace& t, const HwConfig& hw,
                                  const trace::PlayerOptions& po, const std::string& trace_path) {
  dla::FunctionalDevice functional(hw);
  trace::StoppableDevice device(functional, 0);
  trace::PlayResult result = trace::play(t, device, po);
  fmt::print("\nlayers (functional, {}):\n", hw.name);
  const std::vector<std::string> nodes = read_layer_map(trace_path);
  std::size_t i = 0;
  for (const auto& l : functional.layers()) {
    print_layer(l.engine, l.group, l.result);
    if (!nodes.empty()) fmt::print("    ONNX: {}\n", nodes[i++ % nodes.size()]);
    print_counters(l.result);
  }
  return result;
}

}  // namespace

void check_output_files(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    if (path.empty()) continue;
    try {
      models::check_writable(path);
    } catch (const models::OutputFileError& e) {
      throw UsageError(e.what());
    }
  }
}

void add_report_options(CLI::App& cmd, RunOptions& opts) {
  cmd.add_option("--report", opts.report,
                 "write the run's report (layers, units, statistics, roofline) as JSON to FILE "
                 "(schema: sim/report/report.schema.json)");
  cmd.add_option("--timeline", opts.timeline,
                 "write a Chrome-trace JSON timeline (ui.perfetto.dev, chrome://tracing) to FILE: "
                 "a track per unit, 1 cycle = 1 us");
  cmd.add_option("--timeline-detail", opts.timeline_detail,
                 "timeline slices per layer, per tile (stripe / line step, the default) or per "
                 "DMA burst (dma)")
      ->check(CLI::IsMember({"layer", "tile", "dma"}));
  cmd.add_option("--vcd", opts.vcd,
                 "write the device's busy/interrupt/credit/DRAM signals as a VCD waveform to "
                 "FILE.vcd (GTKWave, Surfer)");
  cmd.add_flag("!--no-progress", opts.progress,
               "no progress line on stderr (shown only when stderr is a terminal and the run "
               "takes more than two seconds)");
}

void add_run_command(CLI::App& app, RunOptions& opts) {
  auto* cmd = app.add_subcommand("run", "run an NVDLA trace (.cfg or .txn) and check its results");
  cmd->add_option("trace", opts.trace,
                  "trace file: NVDLA .cfg syntax, or a first-release input.txn (with its "
                  "plusargs.txt and output_feature_map.dat)")
      ->required();
  cmd->add_option("--config", opts.config,
                  "hardware configuration: nv_small (default; nv_full for .txn), nv_small_256, "
                  "nv_small_256_full, nv_large, nv_full, soc_small, soc_large (DLA + PPU), a "
                  "JSON file, or an NVDLA spec file (FILE.spec)");
  cmd->add_flag("--functional", opts.functional,
                "zero-time functional simulation (results only, no timing)");
  cmd->add_option("--timeout-cycles", opts.timeout_cycles,
                  "fail an interrupt wait or poll that takes longer than this many cycles");
  add_report_options(*cmd, opts);
}

int run_trace(const RunOptions& opts) {
  HwConfig hw;
  std::vector<std::string> config_notes;  // a spec file's defines with no octasim key
  try {
    const std::string default_config = trace::is_txn_path(opts.trace) ? "nv_full" : "nv_small";
    hw = load_hw_config(opts.config.empty() ? default_config : opts.config, &config_notes);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  if (opts.functional) {
    for (const auto& [option, value] :
         {std::pair{"report", &opts.report}, {"timeline", &opts.timeline}, {"vcd", &opts.vcd}}) {
      if (!value->empty()) {
        throw UsageError(
            fmt::format("--{} needs the cycle-level device (drop --functional)", option));
      }
    }
  }
  // Output files are checked before the simulation runs, so that an unwritable path is a usage
  // error up front rather than an exception after the SystemC kernel ran; they are written
  // (atomically) only when the run completes.
  check_output_files({opts.report, opts.timeline, opts.vcd.empty() ? "" : vcd_path(opts.vcd)});
  trace::Trace t;
  try {
    t = trace::read_trace_file(opts.trace);
  } catch (const trace::TraceError& e) {
    throw UsageError(e.what());
  }

  // On stdout, before the run: stderr stays one line for an error.
  for (const std::string& note : config_notes) fmt::print("note: {}\n", note);

  trace::PlayerOptions po;
  po.timeout_cycles = opts.timeout_cycles;
  po.report = [](const std::string& line) { fmt::print("{}\n", line); };

  const StopSignals stop_signals;  // SIGINT/SIGTERM end the run at a safe point (exit 130/143)
  trace::PlayResult result;
  try {
    result = opts.functional ? play_functional(t, hw, po, opts.trace)
                             : play_cycle_level(t, hw, po, opts);
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
