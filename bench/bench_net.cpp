// Simulation speed of a whole network: the committed Fashion-MNIST CNN
// (models/networks/fashion_mnist, 7 DLA layers, 1.12 M MACs) compiled for nv_small at INT8 and run
// one inference per iteration — on the cycle-level SoC (simulated cycles and inferences per host
// second) and on the zero-time functional device (inferences per host second). One SystemC
// elaboration serves the cycle-level benchmark, as `octasim net` uses one.
#include <cstdint>
#include <exception>
#include <string>

#include <benchmark/benchmark.h>
#include <systemc>

#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"

namespace {

using namespace octasim;
namespace fn = firmware::net;

const fn::CompiledNetwork* g_net = nullptr;
models::graph::Tensor* g_images = nullptr;
soc::HostAdapter* g_device = nullptr;

void run_inferences(benchmark::State& state, trace::Device& device) {
  const fn::NetProgram& prog = g_net->program;
  fn::load_constants(prog, device.memory());
  trace::DeviceMmio mmio(device, 50'000'000);
  fn::GroupState groups;
  std::uint64_t simulated = 0, images = 0;
  for (auto _ : state) {
    const std::uint64_t before = device.cycle();
    try {
      fn::write_input(prog, *g_images, images % 8, device.memory());
      fn::program_network(prog, mmio, groups);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
    simulated += device.cycle() - before;
    ++images;
  }
  state.counters["inferences_per_s"] =
      benchmark::Counter(static_cast<double>(images), benchmark::Counter::kIsRate);
  if (simulated > 0) {
    state.counters["sim_cycles_per_s"] =
        benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kIsRate);
  }
}

void BM_FashionCnnCycleLevel(benchmark::State& state) {
  // Register groups start at 0 again (GroupState below): benchmark calls this more than once.
  g_device->soc().reset();
  run_inferences(state, *g_device);
}

void BM_FashionCnnFunctional(benchmark::State& state) {
  dla::FunctionalDevice device(load_hw_config("nv_small"));
  run_inferences(state, device);
}

}  // namespace

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  const HwConfig hw = load_hw_config("nv_small");
  fn::CompiledNetwork net;
  try {
    net = fn::prepare_network(firmware::load_onnx(OCTASIM_FASHION_CNN), hw);
    models::graph::Tensor images = fn::random_images(net.plan, 8);
    for (float& v : images.f) v *= 255.0F;  // the model takes raw pixels 0..255
    fn::quantize_network(net, hw, images, fn::QuantOptions{});
    static models::graph::Tensor kept = images;
    g_images = &kept;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "octasim_bench_net: %s\n", e.what());
    return 1;
  }
  g_net = &net;
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  g_device = &device;
  benchmark::RegisterBenchmark("fashion_cnn/nv_small/cycle_level", BM_FashionCnnCycleLevel)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(1.0)
      ->UseRealTime();
  benchmark::RegisterBenchmark("fashion_cnn/nv_small/functional", BM_FashionCnnFunctional)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(1.0)
      ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
