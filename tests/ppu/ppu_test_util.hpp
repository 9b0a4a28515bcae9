// A PPU on the shared memory system with a test host: the register file is a map, REG_WRITE
// accepts addresses of the register map below the PPU's page, and a write of 1 to a "fake DLA"
// address (kFakeOpEnable) raises GLB bit kFakeDoneBit kFakeOpCycles later (for WAIT_DLA).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <systemc>

#include "firmware/ppu/commands.hpp"
#include "firmware/regmap/regmap.hpp"
#include "models/ops/gemm.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/mem/memory_system.hpp"
#include "sim/ppu/ppu.hpp"
#include "sim/ppu/ppu_host.hpp"

namespace octasim::ppu::test {

namespace P = regs::PPU;
namespace F = ppu_format;
using models::ops::GemmType;

inline bool already_elaborated() {
  return sc_core::sc_get_status() != sc_core::SC_ELABORATION;
}

inline constexpr std::uint32_t kFakeOpEnable = 0x5008;  // CDMA-page address the host accepts
inline constexpr unsigned kFakeDoneBit = 16;
inline constexpr unsigned kFakeOpCycles = 5000;

class TestHost final : public sc_core::sc_module, public PpuHost {
 public:
  explicit TestHost(const sc_core::sc_module_name& name, const sc_core::sc_time& period)
      : sc_core::sc_module(name), period_(period) {
    SC_HAS_PROCESS(TestHost);
    SC_THREAD(fake_op);
  }
  bool csb_write(std::uint32_t addr, std::uint32_t value) override {
    if (addr == kFakeOpEnable) {
      csb_log.emplace_back(addr, value);
      if (value == 1) op_start_.notify(sc_core::SC_ZERO_TIME);
      return true;
    }
    if (addr >= 0x13000 || regs::find_register(addr) == nullptr) return false;
    csb_log.emplace_back(addr, value);
    return true;
  }
  [[nodiscard]] std::uint32_t interrupt_status() const override { return intr; }
  void clear_interrupts(std::uint32_t mask) override { intr &= ~mask; }
  [[nodiscard]] const sc_core::sc_event& interrupt_event() const override { return intr_event_; }
  void raise_interrupt(unsigned bit) override {
    if (bit < F::kSyncpoints) ++regs[F::kSyncptBase + 4 * bit];  // as the register file counts
    intr |= 1u << bit;
    raised.push_back(bit);
    intr_event_.notify(sc_core::SC_ZERO_TIME);
  }
  [[nodiscard]] std::uint32_t reg(std::uint32_t addr) const override {
    const auto it = regs.find(addr);
    return it == regs.end() ? 0 : it->second;
  }
  void set_reg(std::uint32_t addr, std::uint32_t value) override { regs[addr] = value; }

  std::map<std::uint32_t, std::uint32_t> regs;
  std::uint32_t intr = 0;
  std::vector<unsigned> raised;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> csb_log;
  std::uint64_t fake_op_done_cycle = 0;

 private:
  void fake_op() {
    while (true) {
      wait(op_start_);
      wait(period_ * kFakeOpCycles);
      fake_op_done_cycle = static_cast<std::uint64_t>(sc_core::sc_time_stamp() / period_ + 0.5);
      raise_interrupt(kFakeDoneBit);
    }
  }
  sc_core::sc_time period_;
  sc_core::sc_event intr_event_, op_start_;
};

inline HwConfig soc_small() {
  return load_hw_config("soc_small");
}

// Prints the kernel records when OCTASIM_PPU_VERBOSE is set (for measuring, not asserting).
inline void print_records(const Ppu& ppu) {
  if (std::getenv("OCTASIM_PPU_VERBOSE") == nullptr) return;
  for (const KernelRecord& r : ppu.kernels()) {
    std::printf(
        "ch%u %s %s %ux%ux%u tiles %ux%ux%u ctas %u occ %u cycles %llu..%llu (%llu) macs %llu "
        "rd %llu wr %llu util %.3f AI %.2f %s | %s\n",
        r.channel, r.kind.c_str(), r.type.c_str(), r.m, r.n, r.k, r.tile_m, r.tile_n, r.tile_k,
        r.ctas, r.occupancy, static_cast<unsigned long long>(r.start_cycle),
        static_cast<unsigned long long>(r.end_cycle), static_cast<unsigned long long>(r.cycles()),
        static_cast<unsigned long long>(r.macs), static_cast<unsigned long long>(r.bytes_read),
        static_cast<unsigned long long>(r.bytes_written), r.tensor_utilization,
        r.arithmetic_intensity, r.bound.c_str(), r.path.c_str());
  }
}

inline void print_groups(const std::vector<const stats::Group*>& groups) {
  if (std::getenv("OCTASIM_PPU_VERBOSE") == nullptr) return;
  for (const stats::Group* g : groups) {
    for (std::size_t i = 0; i < g->size(); ++i) {
      std::printf("  %s = %llu\n", g->full_name(i).c_str(),
                  static_cast<unsigned long long>(g->value(i)));
    }
  }
}

// One elaboration: memory image, memory system, test host, PPU.
struct Bench {
  explicit Bench(const HwConfig& config)
      : hw(config),
        image(hw.dla.mem_address_width),
        host("host", period),
        mem("mem", hw, image, period),
        ppu("ppu", hw, image, host, period) {
    ppu.bind(mem.socket);
  }

  // Bump allocator for test data (256-byte aligned).
  std::uint64_t alloc(std::uint64_t bytes) {
    const std::uint64_t a = next;
    next = (next + bytes + 255) / 256 * 256;
    return a;
  }
  std::uint64_t put(const std::vector<std::uint8_t>& bytes) {
    const std::uint64_t a = alloc(bytes.size());
    image.write(a, bytes.data(), bytes.size());
    return a;
  }
  std::vector<std::uint8_t> get(std::uint64_t addr, std::size_t bytes) const {
    std::vector<std::uint8_t> v(bytes);
    image.read(addr, v.data(), bytes);
    return v;
  }
  std::uint32_t word(std::uint64_t addr) const {
    std::uint32_t w = 0;
    image.read(addr, reinterpret_cast<std::uint8_t*>(&w), 4);
    return w;
  }
  std::uint32_t chreg(unsigned ch, std::uint32_t ch0_addr) const {
    return host.reg(ch0_addr + ch * kChannelStride);
  }

  // Places a push buffer (room for `capacity` bytes) and rings the doorbell with PUT = its size.
  std::uint64_t submit(unsigned ch, const F::PushBuffer& pb, std::uint32_t capacity = 0) {
    const auto bytes = pb.bytes();
    const std::uint64_t base = alloc(std::max<std::size_t>(capacity, bytes.size()));
    image.write(base, bytes.data(), bytes.size());
    set_channel(ch, base,
                std::max<std::uint32_t>(capacity, static_cast<std::uint32_t>(bytes.size())),
                static_cast<std::uint32_t>(bytes.size()));
    return base;
  }
  void set_channel(unsigned ch, std::uint64_t base, std::uint32_t size, std::uint32_t put_offset) {
    host.set_reg(P::S_CH0_PB_BASE_LOW::kAddr + ch * kChannelStride,
                 static_cast<std::uint32_t>(base));
    host.set_reg(P::S_CH0_PB_BASE_HIGH::kAddr + ch * kChannelStride,
                 static_cast<std::uint32_t>(base >> 32));
    host.set_reg(P::S_CH0_PB_SIZE::kAddr + ch * kChannelStride, size);
    host.set_reg(P::S_CH0_PUT::kAddr + ch * kChannelStride, put_offset);
    ppu.doorbell(ch);
  }
  // Runs until the PPU is idle (false after max_cycles).
  bool run(std::uint64_t max_cycles = 200'000'000) {
    const std::uint64_t chunk = 100'000;
    for (std::uint64_t t = 0; t < max_cycles; t += chunk) {
      sc_core::sc_start(period * static_cast<double>(chunk));
      if (!ppu.busy()) return true;
    }
    return false;
  }
  std::uint64_t now() const {
    return static_cast<std::uint64_t>(sc_core::sc_time_stamp() / period + 0.5);
  }

  HwConfig hw;
  sc_core::sc_time period{1, sc_core::SC_NS};
  MemoryImage image;
  TestHost host;
  MemorySystem mem;
  Ppu ppu;
  std::uint64_t next = 0x100000;
};

// Random GEMM inputs of the type's range, as storage bytes.
inline std::vector<std::uint8_t> random_input(GemmType type, std::size_t count, std::mt19937& rng,
                                              double scale = 1.0) {
  std::vector<double> v(count);
  if (type == GemmType::kInt8Int32 || type == GemmType::kInt4Int32) {
    const int lo = type == GemmType::kInt8Int32 ? -128 : -8;
    std::uniform_int_distribution<int> d(lo, -lo - 1);
    for (auto& x : v) x = d(rng);
  } else {
    std::uniform_real_distribution<double> d(-2.0 * scale, 2.0 * scale);
    for (auto& x : v) x = d(rng);
  }
  return models::ops::encode_gemm_input(type, v);
}

inline std::vector<std::uint8_t> random_acc(GemmType type, std::size_t count, std::mt19937& rng) {
  std::vector<double> v(count);
  if (type == GemmType::kInt8Int32 || type == GemmType::kInt4Int32) {
    std::uniform_int_distribution<int> d(-100000, 100000);
    for (auto& x : v) x = d(rng);
  } else {
    std::uniform_real_distribution<double> d(-4.0, 4.0);
    for (auto& x : v) x = d(rng);
  }
  return models::ops::encode_gemm_acc(type, v);
}

inline F::Descriptor gemm_descriptor(GemmType type, unsigned m, unsigned n, unsigned k,
                                     std::uint64_t a, std::uint64_t b, std::uint64_t c,
                                     std::uint64_t d, F::ShapePolicy policy, bool has_c) {
  namespace G = F::gemm;
  F::Descriptor desc;
  desc.set(G::kKind, static_cast<std::uint32_t>(F::KernelKind::kGemm));
  desc.set(G::kType, static_cast<std::uint32_t>(type));
  desc.set(G::kFlags, (has_c ? 1u : 0u) | static_cast<std::uint32_t>(policy) << 12);
  desc.set(G::kM, m);
  desc.set(G::kN, n);
  desc.set(G::kK, k);
  desc.set_address(G::kA, a);
  desc.set_address(G::kB, b);
  desc.set_address(G::kC, c);
  desc.set_address(G::kD, d);
  return desc;
}

}  // namespace octasim::ppu::test
