// Host time of the model zoo's networks (firmware/zoo) on the cycle-level SoC: ResNet-50,
// GoogLeNet and AlexNet from `octasim zoo`, compiled for nv_full at INT8 (max calibration on one
// deterministic random image; compile time not measured), one inference per iteration with the
// overlapped schedule (what `octasim net` runs). Reports the host seconds per inference, the
// simulated cycles per inference and per host second. One SoC (one SystemC elaboration) serves
// every network.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <string>

#include <benchmark/benchmark.h>
#include <systemc>

#include "bench/net_cycle_bench.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "firmware/zoo/zoo.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"

namespace {

using namespace octasim;
namespace fn = firmware::net;

using Compiled = bench::CompiledNet;

std::map<std::string, Compiled>* g_nets = nullptr;
soc::HostAdapter* g_device = nullptr;

void BM_ZooCycleLevel(benchmark::State& state, const std::string& name) {
  bench::run_inferences(state, g_nets->at(name), *g_device);
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
