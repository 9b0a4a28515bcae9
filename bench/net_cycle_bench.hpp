// One compiled network's inference on a cycle-level SoC as a Google Benchmark: the input
// written, every layer programmed with the overlapped schedule (what `octasim net` runs), one
// inference per iteration. Reports the simulated cycles per inference and per host second.
// Shared by bench_zoo.cpp and bench_transformer.cpp; each benchmark executable elaborates one SoC.
#pragma once

#include <cstdint>
#include <exception>

#include <benchmark/benchmark.h>

#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"

namespace octasim::bench {

struct CompiledNet {
  firmware::net::CompiledNetwork net;
  models::graph::Tensor images;
};

inline void run_inferences(benchmark::State& state, const CompiledNet& c,
                           soc::HostAdapter& device) {
  namespace fn = firmware::net;
  const fn::NetProgram& prog = c.net.program;
  device.soc().reset();
  DeviceMemory memory = trace::dma_memory(device);
  fn::load_constants(prog, memory);
  trace::DeviceMmio mmio(device, 500'000'000);
  fn::GroupState groups;
  std::uint64_t simulated = 0, inferences = 0;
  for (auto _ : state) {
    const std::uint64_t before = device.cycle();
    try {
      fn::write_input(prog, c.images, 0, memory);
      fn::program_network(prog, mmio, groups, fn::Schedule::kOverlap);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
    simulated += device.cycle() - before;
    ++inferences;
  }
  if (inferences > 0) state.counters["sim_cycles_per_inference"] = simulated / inferences;
  state.counters["sim_cycles_per_s"] =
      benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kIsRate);
}

}  // namespace octasim::bench
