// Simulation speed of the cycle-level PPU on soc_small (with the shared memory system):
// simulated cycles and simulated multiply-accumulates per host second for GEMMs and a streaming
// kernel. One SystemC elaboration serves every benchmark: each iteration appends a LAUNCH to a
// channel's push buffer, rings the doorbell and runs until the PPU is idle.
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>
#include <systemc>

#include "firmware/ppu/commands.hpp"
#include "models/ops/gemm.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/mem/memory_system.hpp"
#include "sim/ppu/ppu.hpp"

namespace {

using namespace octasim;
namespace F = ppu_format;
namespace P = regs::PPU;

class Host final : public ppu::PpuHost {
 public:
  bool csb_write(std::uint32_t, std::uint32_t) override { return false; }
  std::uint32_t interrupt_status() const override { return intr_; }
  void clear_interrupts(std::uint32_t mask) override { intr_ &= ~mask; }
  const sc_core::sc_event& interrupt_event() const override { return event_; }
  void raise_interrupt(unsigned bit) override { intr_ |= 1u << bit; }
  std::uint32_t reg(std::uint32_t addr) const override {
    const auto it = regs_.find(addr);
    return it == regs_.end() ? 0 : it->second;
  }
  void set_reg(std::uint32_t addr, std::uint32_t value) override { regs_[addr] = value; }

 private:
  std::map<std::uint32_t, std::uint32_t> regs_;
  std::uint32_t intr_ = 0;
  sc_core::sc_event event_{"bench_host_interrupt"};
};

struct Soc {
  explicit Soc(const HwConfig& config)
      : hw(config),
        image(hw.dla.mem_address_width),
        mem("mem", hw, image, period),
        ppu("ppu", hw, image, host, period) {
    ppu.bind(mem.socket);
    host.set_reg(P::S_CH0_PB_BASE_LOW::kAddr, static_cast<std::uint32_t>(kPb));
    host.set_reg(P::S_CH0_PB_SIZE::kAddr, kPbSize);
  }
  std::uint64_t put(const std::vector<std::uint8_t>& bytes) {
    const std::uint64_t a = next;
    image.write(a, bytes.data(), bytes.size());
    next = (next + bytes.size() + 255) / 256 * 256;
    return a;
  }
  // Appends a LAUNCH of `descriptor`, rings the doorbell, runs until idle; returns cycles.
  std::uint64_t launch(std::uint64_t descriptor) {
    if (put_offset + 12 > kPbSize) put_offset = 0;  // (never in practice: 87k launches)
    F::PushBuffer pb;
    pb.launch(descriptor);
    const auto bytes = pb.bytes();
    image.write(kPb + put_offset, bytes.data(), bytes.size());
    put_offset += static_cast<std::uint32_t>(bytes.size());
    host.set_reg(P::S_CH0_PUT::kAddr, put_offset);
    const sc_core::sc_time start = sc_core::sc_time_stamp();
    ppu.doorbell(0);
    sc_core::sc_start();  // until no event is pending: the PPU is idle again
    return static_cast<std::uint64_t>((sc_core::sc_time_stamp() - start) / period + 0.5);
  }
  static constexpr std::uint64_t kPb = 0x10000;
  static constexpr std::uint32_t kPbSize = 1u << 20;
  HwConfig hw;
  sc_core::sc_time period{1, sc_core::SC_NS};
  MemoryImage image;
  Host host;
  MemorySystem mem;
  ppu::Ppu ppu;
  std::uint64_t next = 0x200000;
  std::uint32_t put_offset = 0;
};

Soc* g_soc = nullptr;

std::uint64_t gemm_descriptor(Soc& soc, models::ops::GemmType type, unsigned m, unsigned n,
                              unsigned k) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  const bool integer =
      type == models::ops::GemmType::kInt8Int32 || type == models::ops::GemmType::kInt4Int32;
  auto values = [&](std::size_t count) {
    std::vector<double> v(count);
    for (auto& x : v) x = integer ? std::floor(u(rng) * 3.0) : u(rng);
    return models::ops::encode_gemm_input(type, v);
  };
  namespace G = F::gemm;
  F::Descriptor d;
  d.set(G::kKind, static_cast<std::uint32_t>(F::KernelKind::kGemm));
  d.set(G::kType, static_cast<std::uint32_t>(type));
  d.set(G::kM, m), d.set(G::kN, n), d.set(G::kK, k);
  d.set_address(G::kA, soc.put(values(std::size_t{m} * k)));
  d.set_address(G::kB, soc.put(values(std::size_t{k} * n)));
  d.set_address(G::kD, soc.put(std::vector<std::uint8_t>(
                           models::ops::gemm_acc_bytes(type, std::size_t{m} * n), 0)));
  return soc.put(d.bytes());
}

void run(benchmark::State& state, std::uint64_t descriptor) {
  Soc& soc = *g_soc;
  std::uint64_t simulated = 0, macs = 0;
  for (auto _ : state) {
    const std::size_t before = soc.ppu.kernels().size();
    simulated += soc.launch(descriptor);
    if (soc.ppu.kernels().size() != before + 1) {
      state.SkipWithError("the kernel did not run");
      return;
    }
    macs += soc.ppu.kernels().back().macs;
  }
  state.counters["sim_cycles"] =
      benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kAvgIterations);
  state.counters["sim_cycles_per_s"] =
      benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kIsRate);
  if (macs > 0) {
    state.counters["sim_MACs_per_s"] =
        benchmark::Counter(static_cast<double>(macs), benchmark::Counter::kIsRate);
  }
  state.counters["util"] = soc.ppu.kernels().back().tensor_utilization;
}

}  // namespace

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  auto soc = std::make_unique<Soc>(load_hw_config("soc_small"));
  g_soc = soc.get();
  using models::ops::GemmType;
  struct Case {
    const char* name;
    std::uint64_t descriptor;
  };
  const Case cases[] = {
      {"gemm_fp16_fp32_256x256x256", gemm_descriptor(*soc, GemmType::kFp16Fp32, 256, 256, 256)},
      {"gemm_int8_int32_256x256x256", gemm_descriptor(*soc, GemmType::kInt8Int32, 256, 256, 256)},
      {"gemm_fp16_fp32_70x33x100_padded", gemm_descriptor(*soc, GemmType::kFp16Fp32, 70, 33, 100)},
  };
  for (const Case& c : cases) {
    benchmark::RegisterBenchmark(c.name, run, c.descriptor)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5)
        ->UseRealTime();
  }
  {
    namespace E = F::elementwise;
    const unsigned count = 1u << 18;
    F::Descriptor d;
    d.set(E::kKind, static_cast<std::uint32_t>(F::KernelKind::kElementwise));
    d.set(E::kOp, 0);
    d.set(E::kCount, count);
    d.set_address(E::kA, soc->put(std::vector<std::uint8_t>(count * 4, 0)));
    d.set_address(E::kB, soc->put(std::vector<std::uint8_t>(count * 4, 0)));
    d.set_address(E::kD, soc->put(std::vector<std::uint8_t>(count * 4, 0)));
    benchmark::RegisterBenchmark("elementwise_add_256k", run, soc->put(d.bytes()))
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5)
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
