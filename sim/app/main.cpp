// octasim command line: `octasim` runs the built-in default; subcommands do the
// rest.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <fmt/core.h>
#include <CLI/CLI.hpp>
#include <systemc>  // declares sc_main, which sc_elab_and_sim calls

#include "octasim/version.hpp"
#include "sim/app/commands.hpp"
#include "sim/core/stop_request.hpp"

// SystemC prints a banner when its kernel starts; octasim's output stays its
// own. SystemC reads the switch before sc_main runs, so octasim has its own
// main() (the linker prefers it to libsystemc's), which sets it and then enters
// SystemC the usual way.
int main(int argc, char** argv) {
  setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int argc, char** argv) {
  using namespace octasim::app;
  CLI::App app{
      "octasim — cycle-level simulator of a quantization-aware DNN "
      "accelerator"};
  app.set_version_flag("--version", fmt::format("octasim {}", octasim::kVersion));
  app.require_subcommand(0, 1);

  CvtOptions cvt;
  add_cvt_command(app, cvt);
  ClipOptions clip;
  add_clip_command(app, clip);
  RunOptions run;
  add_run_command(app, run);
  DemoOptions demo;
  add_demo_command(app, demo);
  ReportOptions report;
  add_report_command(app, report);
  add_numerics_command(app);
  NetOptions net;
  add_net_command(app, net);
  CompileOptions compile;
  add_compile_command(app, compile);
  OnnxTestOptions onnx_test;
  add_onnx_test_command(app, onnx_test);
  ZooOptions zoo;
  add_zoo_command(app, zoo);
  add_ops_command(app);
  SweepOptions sweep;
  add_sweep_command(app, sweep);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "octasim: error: {} (see octasim --help)\n", e.what());
    return 2;
  }

  try {
    if (app.got_subcommand("cvt")) return run_cvt(cvt);
    if (app.got_subcommand("clip")) return run_clip(clip);
    if (app.got_subcommand("run")) return run_trace(run);
    if (app.got_subcommand("report")) return run_report(report);
    if (app.got_subcommand("numerics")) return run_numerics();
    if (app.got_subcommand("net")) return run_net(net);
    if (app.got_subcommand("compile")) return run_compile(compile);
    if (app.got_subcommand("onnx-test")) return run_onnx_test(onnx_test);
    if (app.got_subcommand("zoo")) return run_zoo(zoo);
    if (app.got_subcommand("ops")) return run_ops();
    if (app.got_subcommand("sweep")) return run_sweep(sweep);
    return run_demo(demo);
  } catch (const octasim::Interrupted& e) {
    // SIGINT or SIGTERM during a run (sim/core/stop_request.hpp): no output was written.
    fmt::print(stderr, "octasim: {} at cycle {}\n",
               e.signal == SIGTERM ? "terminated" : "interrupted", e.cycle);
    return 128 + e.signal;
  } catch (const UsageError& e) {
    fmt::print(stderr, "octasim: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "octasim: internal error: {}\n", e.what());
    return 3;
  }
}
