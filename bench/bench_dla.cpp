// Simulation speed of the cycle-level DLA: simulated cycles (and, for convolutions, simulated
// multiply-accumulates) per host second on NVDLA's largest dc/sdp/pdp/cdp traces. One SystemC
// elaboration serves every benchmark (SystemC elaborates once per process): each iteration resets
// the device's registers and plays the trace once more, driving the kernel from sc_main as `octasim
// run` does.
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>
#include <systemc>

#include "sim/core/hw_config.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"

namespace {

using namespace octasim;

soc::HostAdapter* g_device = nullptr;
soc::HostAdapter* g_device_full = nullptr;

std::string trace_path(const std::string& name) {
  return std::string(OCTASIM_NVDLA_TRACES) + "/" + name + "/" + name + ".cfg";
}

void BM_Trace(benchmark::State& state, const std::string& name, bool full) {
  trace::Trace t;
  try {
    t = trace::parse_trace_file(trace_path(name));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  soc::HostAdapter& device = full ? *g_device_full : *g_device;
  std::uint64_t simulated = 0;
  std::uint64_t macs = 0;
  for (auto _ : state) {
    device.soc().reset();  // a trace assumes a freshly reset device (register groups start at 0)
    const std::uint64_t before = device.cycle();
    const std::size_t layers_before = device.soc().dla().layers().size();
    trace::PlayResult result;
    try {
      result = trace::play(t, device, trace::PlayerOptions{});
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
    if (!result.all_passed()) {
      state.SkipWithError("a check of the trace failed");
      return;
    }
    simulated += device.cycle() - before;
    for (std::size_t i = layers_before; i < device.soc().dla().layers().size(); ++i) {
      macs += device.soc().dla().layers()[i].result.macs;
    }
  }
  state.counters["sim_cycles"] =
      benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kAvgIterations);
  state.counters["sim_cycles_per_s"] =
      benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kIsRate);
  if (macs > 0) {
    state.counters["sim_MACs_per_s"] =
        benchmark::Counter(static_cast<double>(macs), benchmark::Counter::kIsRate);
  }
}

}  // namespace

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", load_hw_config("nv_small"));
  soc::Soc soc_full("dla_full", load_hw_config("nv_small_256_full"));
  soc::HostAdapter device(soc);
  soc::HostAdapter device_full(soc_full);
  g_device = &device;
  g_device_full = &device_full;
  for (const char* name : {"dc_35x22x54_6x8x54x29_int8_0", "dc_8192x1x1_2x3x1x41_int8_0",
                           "sdp_8192x1x1_pass_through_int8_0", "sdp_1x8192x1_pass_through_int8_0",
                           "cdp_33x17x34_lrn5_int8_0", "pdp_28x28x8_2x2_max_int8_0"}) {
    benchmark::RegisterBenchmark(name, BM_Trace, std::string(name), false)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("sdp_3x3x33_ew_le_lin_int8 (nv_small_256_full)", BM_Trace,
                               std::string("sdp_3x3x33_ew_le_lin_int8"), true)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.5)
      ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
