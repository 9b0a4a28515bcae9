// The memory bandwidths NVIDIA's performance sheet gives, as the DLA meets them: a copy-like SDP
// layer (ReLU on an INT8 cube: it reads R bytes and writes W = R) on the cycle-level SoC with
// nv_full's DLA, and bounds derived by hand from the configuration's numbers:
//   - DRAM at dram_bytes_per_cycle B = 10 (the sheet's 10 GB/s at 1 GHz, reads and writes
//     together): the layer takes at least (R + W) / B cycles;
//   - the CV-SRAM with separate 25-byte read and write paths (25 GB/s each): at least R / 25,
//     and less than (R + W) / 25 — the least any path shared by reads and writes at 25 bytes a
//     cycle would need — because reads and writes proceed in parallel;
//   - the CV-SRAM with one shared 25-byte path: at least (R + W) / 25.
// The memories' latencies are set to 0: with nv_full's (1200 cycles to DRAM, 128 to the CV-SRAM)
// an RDMA's latency buffer, not the bandwidth, bounds these reads. The output equals models/ in
// every case. One SystemC elaboration per process: ctest runs each TEST alone.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <systemc>

#include "firmware/dla/sdp.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/sdp.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/device_memory.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/mem/cvsram_port.hpp"
#include "sim/mem/memory_system.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"

namespace octasim {
namespace {

namespace R = octasim::regs;

class SocMmio final : public firmware::Mmio {
 public:
  explicit SocMmio(soc::HostAdapter& dev) : dev_(dev) {}
  void write32(std::uint32_t addr, std::uint32_t value) override { dev_.csb_write(addr, value); }
  std::uint32_t read32(std::uint32_t addr) override { return dev_.csb_read(addr); }
  void wait_interrupt(unsigned status_bit) override {
    ASSERT_TRUE(dev_.wait_interrupt(status_bit, 10'000'000));
    dev_.csb_write(R::GLB::S_INTR_STATUS::kAddr, 1u << status_bit);
  }

 private:
  soc::HostAdapter& dev_;
};

struct LayerRun {
  std::uint64_t cycles = 0;  // OP_ENABLE writes to the completion interrupt
  std::uint64_t bytes = 0;   // R = W: the surface's bytes
  std::uint64_t dram_read = 0, dram_written = 0;
  std::uint64_t cvsram_read = 0, cvsram_written = 0;
};

// A 64 x 16 x 64 INT8 cube on nv_full (32-byte atoms: two C' surfaces of 16 lines of 64 atoms),
// packed, ReLU by SDP from `src` to `dst` in memory `ram`.
LayerRun run_copy(const std::string& config_json, firmware::Ram ram) {
  const HwConfig hw = parse_hw_config(config_json, "test.json");
  const unsigned atom = hw.dla.memory_atomic_size;
  EXPECT_EQ(atom, 32u);
  const std::uint64_t base = ram == firmware::Ram::kCv ? hw.mem.cvsram_base : 0x80000000;
  firmware::SdpLayer layer;
  layer.precision = firmware::Precision::kInt8;
  layer.src = firmware::packed_surface(base, 64, 16, 64, atom);
  layer.dst = firmware::packed_surface(base + 0x100000, 64, 16, 64, atom);
  layer.src.ram = layer.dst.ram = ram;
  layer.relu = true;
  const std::uint64_t bytes = firmware::surface_bytes(layer.src, layer.precision, atom);
  EXPECT_EQ(bytes, 2u * 16 * 64 * 32);

  soc::Soc soc("dla", hw);
  soc::HostAdapter dev(soc);
  DeviceMemory& mem = soc.device_memory();
  const MemorySpace space = ram == firmware::Ram::kCv ? MemorySpace::kCvSram : MemorySpace::kDram;
  std::vector<std::uint8_t> input(bytes);
  std::uint32_t seed = 2024;
  for (auto& b : input) {
    seed = seed * 1103515245u + 12345u;
    b = static_cast<std::uint8_t>(seed >> 16);
  }
  mem.write(dma_address(space, layer.src.address), input.data(), input.size());
  firmware::HostMemory golden;
  golden.write(layer.src.address, input.data(), input.size());

  SocMmio mmio(dev);
  LayerRun r;
  r.bytes = bytes;
  const std::uint64_t start = dev.cycle();
  mmio.wait_interrupt(firmware::program_sdp(mmio, layer, 0, atom));
  r.cycles = dev.cycle() - start;

  (void)models::ops::run_sdp_layer(firmware::sdp_model_config(layer, atom), golden);
  std::vector<std::uint8_t> got(bytes);
  mem.read(dma_address(space, layer.dst.address), got.data(), got.size());
  EXPECT_EQ(got, golden.bytes(layer.dst.address, bytes)) << "the output differs from models/";

  const MemorySystem& ms = soc.memory_system();
  r.dram_read = ms.bytes_read();
  r.dram_written = ms.bytes_written();
  if (const mem::CvSramPort* cv = ms.cvsram()) {
    r.cvsram_read = cv->bytes_read();
    r.cvsram_written = cv->bytes_written();
  }
  return r;
}

TEST(MemoryBandwidth, DramIsSharedByReadsAndWrites) {
  const LayerRun r =
      run_copy(R"({"base": "nv_full", "dram_bytes_per_cycle": 10, "primary_memif_latency": 0})",
               firmware::Ram::kMc);
  EXPECT_EQ(r.dram_read, r.bytes);
  EXPECT_EQ(r.dram_written, r.bytes);
  EXPECT_EQ(r.cvsram_read + r.cvsram_written, 0u);
  // (R + W) / 10 = 131072 / 10 = 13107.2: at least 13108 cycles.
  EXPECT_GE(r.cycles, 13108u);
}

TEST(MemoryBandwidth, CvSramReadsAndWritesRunInParallel) {
  const LayerRun r = run_copy(
      R"({"base": "nv_full", "dram_bytes_per_cycle": 10, "cvsram_read_bytes_per_cycle": 25,
          "cvsram_write_bytes_per_cycle": 25, "secondary_memif_latency": 0})",
      firmware::Ram::kCv);
  EXPECT_EQ(r.cvsram_read, r.bytes);
  EXPECT_EQ(r.cvsram_written, r.bytes);
  EXPECT_EQ(r.dram_read + r.dram_written, 0u);
  // R / 25 = 65536 / 25 = 2621.44: at least 2622 cycles of reading.
  EXPECT_GE(r.cycles, 2622u);
  // A shared 25-byte path would need (R + W) / 25 = 5242.88 cycles at least.
  EXPECT_LT(r.cycles, 5243u);
}

TEST(MemoryBandwidth, OneSharedCvSramPathCarriesReadsAndWritesInTurn) {
  const LayerRun r =
      run_copy(R"({"base": "nv_full", "dram_bytes_per_cycle": 10, "cvsram_bytes_per_cycle": 25,
                   "secondary_memif_latency": 0})",
               firmware::Ram::kCv);
  EXPECT_EQ(r.cvsram_read, r.bytes);
  EXPECT_EQ(r.cvsram_written, r.bytes);
  EXPECT_GE(r.cycles, 5243u);
}

}  // namespace
}  // namespace octasim
