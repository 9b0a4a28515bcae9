// Host time of the model zoo's networks (firmware/zoo) on the cycle-level SoC: ResNet-50,
// GoogLeNet and AlexNet from `octasim zoo`, compiled for nv_full at INT8 (max calibration on one
// deterministic random image; compile time not measured), one inference per iteration with the
// overlapped schedule (what `octasim net` runs). Reports the host seconds per inference, the
// simulated cycles per inference and per host second. One SoC (one SystemC elaboration) serves
// every network.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <string>

#include <benchmark/benchmark.h>
#include <systemc>

#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "firmware/zoo/zoo.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"

namespace {

using namespace octasim;
namespace fn = firmware::net;

struct Compiled {
  fn::CompiledNetwork net;
  models::graph::Tensor images;
};

std::map<std::string, Compiled>* g_nets = nullptr;
soc::HostAdapter* g_device = nullptr;

void BM_ZooCycleLevel(benchmark::State& state, const std::string& name) {
  const Compiled& c = g_nets->at(name);
  const fn::NetProgram& prog = c.net.program;
  g_device->soc().reset();
  DeviceMemory memory = trace::dma_memory(*g_device);
  fn::load_constants(prog, memory);
  trace::DeviceMmio mmio(*g_device, 500'000'000);
  fn::GroupState groups;
  std::uint64_t simulated = 0, inferences = 0;
  for (auto _ : state) {
    const std::uint64_t before = g_device->cycle();
    try {
      fn::write_input(prog, c.images, 0, memory);
      fn::program_network(prog, mmio, groups, fn::Schedule::kOverlap);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
    simulated += g_device->cycle() - before;
    ++inferences;
  }
  if (inferences > 0) state.counters["sim_cycles_per_inference"] = simulated / inferences;
  state.counters["sim_cycles_per_s"] =
      benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kIsRate);
}

}  // namespace

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  const HwConfig hw = load_hw_config("nv_full");
  static std::map<std::string, Compiled> nets;
  for (const char* name : {"resnet50", "googlenet", "alexnet"}) {
    const std::string path =
        (std::filesystem::temp_directory_path() / (std::string("octasim_bench_") + name + ".onnx"))
            .string();
    try {
      firmware::zoo::write_model(name, path);
      Compiled c;
      c.net = fn::prepare_network(firmware::load_onnx(path), hw);
      c.images = fn::random_images(c.net.plan, 1);
      fn::quantize_network(c.net, hw, c.images, fn::QuantOptions{});
      nets.emplace(name, std::move(c));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "octasim_bench_zoo: %s: %s (not benchmarked)\n", name, e.what());
    }
    std::filesystem::remove(path);
  }
  g_nets = &nets;
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  g_device = &device;
  for (const auto& [name, c] : nets) {
    benchmark::RegisterBenchmark((name + "/nv_full/cycle_level").c_str(), BM_ZooCycleLevel, name)
        ->Unit(benchmark::kSecond)
        ->Iterations(1)
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
