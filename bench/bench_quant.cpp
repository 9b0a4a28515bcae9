// OCTAV against the brute-force sweep it replaces (OCTAV patent: about 10x faster on a CPU).
// Gaussian and Laplace tensors of 10^6 and 10^7 elements, per tensor and per channel (256
// channels, on the first axis and on the last); the brute force tries 100 candidates. Each
// benchmark reports the MSE it reaches; the table at the end gives CPU times (both sides are
// single-threaded; CPU time is steadier than wall time on a shared machine) and the ratios,
// from the medians when run with --benchmark_repetitions.
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include "models/quant/calibrators.hpp"
#include "models/quant/octav.hpp"

namespace {

using namespace octasim::models;

constexpr int kBits = 4;
constexpr std::size_t kChannels = 256;
constexpr std::size_t kCandidates = 100;

enum Dist { kGauss, kLaplace };
enum Layout { kTensor, kChannelFirst, kChannelLast };

const std::vector<float>& data(Dist d, std::size_t n) {
  static std::map<std::pair<int, std::size_t>, std::vector<float>> cache;
  auto& v = cache[{d, n}];
  if (v.empty()) {
    std::mt19937_64 rng(d == kGauss ? 11 : 12);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::exponential_distribution<float> expo(1.0f);
    v.resize(n);
    for (auto& x : v) x = d == kGauss ? gauss(rng) : ((rng() & 1) != 0 ? expo(rng) : -expo(rng));
  }
  return v;
}

GroupedTensor grouped(const std::vector<float>& v, Layout l) {
  const std::size_t n = v.size();
  switch (l) {
    case kTensor:
      return GroupedTensor(v.data(), {n}, Grouping::per_tensor());
    case kChannelFirst:
      return GroupedTensor(v.data(), {kChannels, n / kChannels}, Grouping::per_channel(0));
    case kChannelLast:
      break;
  }
  return GroupedTensor(v.data(), {n / kChannels, kChannels}, Grouping::per_channel(1));
}

double total_mse(const GroupedTensor& t, const std::vector<ClipResult>& r) {
  double sse = 0.0;
  for (std::size_t g = 0; g < t.group_count(); ++g) {
    sse += empirical_mse(t.group_data(g), t.group_size(g), r[g].clip, kBits, Signedness::kSigned) *
           static_cast<double>(t.group_size(g));
  }
  return sse / static_cast<double>(t.size());
}

// Range: distribution, log10(size), layout. The grouping (and its copy, for the last axis)
// is part of the timed work.
template <ClipMethod M>
void BM_Clip(benchmark::State& state) {
  const auto d = static_cast<Dist>(state.range(0));
  const auto n = static_cast<std::size_t>(std::pow(10.0, static_cast<double>(state.range(1))));
  const auto layout = static_cast<Layout>(state.range(2));
  const std::vector<float>& v = data(d, n);
  CalibrationOptions opts;
  opts.octav.bits = kBits;
  opts.candidates = kCandidates;
  std::vector<ClipResult> r;
  for (auto _ : state) {
    const GroupedTensor t = grouped(v, layout);
    r = calibrate(t, M, opts);
    benchmark::DoNotOptimize(r.data());
  }
  const GroupedTensor t = grouped(v, layout);
  state.counters["mse"] = total_mse(t, r);
  int max_it = 0;
  for (const auto& g : r) max_it = std::max(max_it, g.iterations);
  state.counters["iters"] = max_it;
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

void args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"dist", "log10n", "layout"});
  for (int d : {kGauss, kLaplace}) {
    for (int e : {6, 7}) {
      for (int l : {kTensor, kChannelFirst, kChannelLast}) b->Args({d, e, l});
    }
  }
  b->Unit(benchmark::kMillisecond)->MinTime(0.2);
}

BENCHMARK(BM_Clip<ClipMethod::kOctav>)->Name("BM_Octav")->Apply(args);
BENCHMARK(BM_Clip<ClipMethod::kBruteForce>)->Name("BM_BruteForce100")->Apply(args);

// Collects real times and prints the OCTAV/brute-force ratios after the usual table.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    // Plain runs, or with --benchmark_repetitions the median (reported after them).
    for (const auto& r : runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      const auto mse = r.counters.find("mse");
      times_[r.run_name.function_name + "/" + r.run_name.args] = {
          r.GetAdjustedCPUTime(), mse != r.counters.end() ? mse->second.value : 0.0};
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    const char* dist[] = {"gauss", "laplace"};
    const char* layout[] = {"per-tensor", "per-channel axis 0", "per-channel last axis"};
    fmt::print("\n{:<8} {:>5} {:<22} {:>10} {:>12} {:>10} {:>12} {:>8} {:>12}\n", "dist", "n",
               "grouping", "octav ms", "octav mse", "brute ms", "brute mse", "speedup",
               "vs per-tensor");
    for (int d = 0; d < 2; ++d) {
      for (int e = 6; e <= 7; ++e) {
        double tensor_ms = 0.0;
        for (int l = 0; l < 3; ++l) {
          const std::string args = fmt::format("/dist:{}/log10n:{}/layout:{}", d, e, l);
          const auto o = times_.find("BM_Octav" + args);
          const auto b = times_.find("BM_BruteForce100" + args);
          if (o == times_.end() || b == times_.end()) continue;
          if (l == 0) tensor_ms = o->second.first;
          fmt::print(
              "{:<8} {:>5} {:<22} {:>10.2f} {:>12.6g} {:>10.1f} {:>12.6g} {:>7.1f}x {:>11.2f}x\n",
              dist[d], fmt::format("1e{}", e), layout[l], o->second.first, o->second.second,
              b->second.first, b->second.second, b->second.first / o->second.first,
              tensor_ms > 0 ? o->second.first / tensor_ms : 0.0);
        }
      }
    }
  }

 private:
  std::map<std::string, std::pair<double, double>> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
