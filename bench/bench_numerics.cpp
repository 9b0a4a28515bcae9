// Throughput of the numerics primitives the simulator calls per element.
#include <cstdint>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "models/numerics/crc32.hpp"
#include "models/numerics/float_format.hpp"
#include "models/precision/convertor.hpp"

namespace {

using namespace octasim::models;

void BM_ConvertInt32ToInt8(benchmark::State& state) {
  std::mt19937 rng(1);
  std::vector<std::int32_t> xs(4096);
  for (auto& x : xs) x = static_cast<std::int32_t>(rng());
  const ConvertorParams p{17, 181, 20};
  SaturationCounter sat;
  for (auto _ : state) {
    for (auto x : xs) {
      const auto y = convert(x, p, IntPrecision::kInt8);
      sat.record(y.saturated);
      benchmark::DoNotOptimize(y.value);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * xs.size()));
}
BENCHMARK(BM_ConvertInt32ToInt8);

void BM_Fp16FromFloat(benchmark::State& state) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);
  std::vector<float> xs(4096);
  for (auto& x : xs) x = dist(rng);
  for (auto _ : state) {
    for (auto x : xs) benchmark::DoNotOptimize(fp16_from_float(x));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * xs.size()));
}
BENCHMARK(BM_Fp16FromFloat);

void BM_Crc32Surface(benchmark::State& state) {
  std::vector<std::uint8_t> surface(static_cast<std::size_t>(state.range(0)));
  for (std::size_t i = 0; i < surface.size(); ++i) surface[i] = static_cast<std::uint8_t>(i * 7);
  for (auto _ : state) benchmark::DoNotOptimize(crc32(surface.data(), surface.size()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * surface.size()));
}
BENCHMARK(BM_Crc32Surface)->Arg(1 << 20);

}  // namespace

BENCHMARK_MAIN();
