// Host time of the exporter zoo's transformers (models/networks/exporter_zoo: tiny_vit and
// bert_encoder, exported by PyTorch) on soc_large's cycle-level SoC at FP16, the DLA running what
// it can and the PPU the rest (--fallback ppu), the two engines overlapped: one inference per
// iteration. Reports the host seconds per inference and the simulated cycles per inference and
// per host second. One SoC (one SystemC elaboration) serves both.
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <systemc>

#include "bench/net_cycle_bench.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "models/io/tensor_file.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/soc/soc.hpp"

namespace {

using namespace octasim;
namespace fn = firmware::net;

std::map<std::string, bench::CompiledNet>* g_nets = nullptr;
soc::HostAdapter* g_device = nullptr;

void BM_TransformerCycleLevel(benchmark::State& state, const std::string& name) {
  bench::run_inferences(state, g_nets->at(name), *g_device);
}

}  // namespace

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  const HwConfig hw = load_hw_config("soc_large");
  static std::map<std::string, bench::CompiledNet> nets;
  for (const char* name : {"tiny_vit", "bert_encoder"}) {
    const std::string dir = OCTASIM_EXPORTER_ZOO;
    try {
      bench::CompiledNet c;
      c.net = fn::prepare_network(firmware::load_onnx(dir + "/" + name + ".onnx"), hw);
      models::Tensor npy = models::read_npy(dir + "/" + name + "_input.npy");
      std::vector<std::int64_t> shape(npy.shape.begin(), npy.shape.end());
      c.images = fn::as_input_batch(
          c.net.plan, models::graph::Tensor::floats(std::move(shape), std::move(npy.values)));
      fn::QuantOptions q;
      q.precision = fn::NetPrecision::kFp16;
      fn::quantize_network(c.net, hw, c.images, q, nullptr, fn::PlacementOptions{false});
      nets.emplace(name, std::move(c));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "octasim_bench_transformer: %s: %s (not benchmarked)\n", name, e.what());
    }
  }
  g_nets = &nets;
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  g_device = &device;
  for (const auto& [name, c] : nets) {
    benchmark::RegisterBenchmark((name + "/soc_large/fp16").c_str(), BM_TransformerCycleLevel, name)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0)
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
