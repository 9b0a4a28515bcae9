// Strided surfaces reach the L2 slices and DRAM channels their addresses map to: an SDP layer
// whose input and output lines are far apart runs on the cycle-level SoC (soc_small: 2
// partitions x 2 L2 slices, 256-byte interleave, 128-byte L2 lines), and each slice's client
// bytes and each channel's DRAM fill bytes equal what the memory system's address map predicts
// for exactly the surface's lines — not what a linear read from the base address would give.
// One SystemC elaboration per process: ctest runs each TEST alone.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

#include "firmware/dla/sdp.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/sdp.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/mem/memory_system.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"

namespace octasim {
namespace {

namespace R = octasim::regs;

bool already_elaborated() {
  return sc_core::sc_get_status() != sc_core::SC_ELABORATION;
}

// Firmware's register port on the cycle-level SoC.
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

std::uint64_t counter(const stats::Group& g, const std::string& name) {
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (g.info(i).name == name) return g.value(i);
  }
  ADD_FAILURE() << "no counter " << g.path() << "." << name;
  return 0;
}

// [addr, addr + bytes) ranges: the lines of a surface, or one linear range.
using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

Ranges surface_lines(const firmware::FeatureSurface& s, std::uint32_t surfaces,
                     unsigned atom_bytes) {
  Ranges r;
  for (std::uint32_t c = 0; c < surfaces; ++c) {
    for (std::uint32_t h = 0; h < s.height; ++h) {
      r.emplace_back(
          s.address + std::uint64_t{c} * s.surface_stride + std::uint64_t{h} * s.line_stride,
          std::uint64_t{s.width} * atom_bytes);
    }
  }
  return r;
}

// Bytes per global L2 slice, by the documented map (granule g = addr / interleave goes to
// slice g % slices), checked against MemorySystem::route() byte by byte.
std::vector<std::uint64_t> bytes_per_slice(const Ranges& ranges, const HwConfig& hw,
                                           const MemorySystem& mem) {
  const unsigned slices = hw.mem.partitions * hw.mem.l2_slices_per_partition;
  std::vector<std::uint64_t> out(slices, 0);
  for (const auto& [addr, bytes] : ranges) {
    for (std::uint64_t a = addr; a < addr + bytes; ++a) {
      const unsigned slice = static_cast<unsigned>((a / hw.mem.interleave_bytes) % slices);
      EXPECT_EQ(mem.route(a).slice, slice) << std::hex << a;
      EXPECT_EQ(mem.route(a).partition, slice / hw.mem.l2_slices_per_partition) << std::hex << a;
      ++out[slice];
    }
  }
  return out;
}

// DRAM bytes each partition's channel reads to fill the L2 lines the ranges touch (a cold,
// large-enough L2: each line is fetched whole, once).
std::vector<std::uint64_t> fill_bytes_per_channel(const Ranges& ranges, const HwConfig& hw,
                                                  const MemorySystem& mem) {
  std::set<std::uint64_t> lines;
  for (const auto& [addr, bytes] : ranges) {
    for (std::uint64_t a = addr; a < addr + bytes; ++a) lines.insert(a / hw.mem.l2_line_bytes);
  }
  std::vector<std::uint64_t> out(hw.mem.partitions, 0);
  for (std::uint64_t line : lines)
    out[mem.route(line * hw.mem.l2_line_bytes).partition] += hw.mem.l2_line_bytes;
  return out;
}

TEST(StridedSurfaces, SdpLinesReachTheirL2SlicesAndDramChannels) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  const HwConfig hw = load_hw_config("soc_small");
  ASSERT_EQ(hw.mem.partitions, 2u);
  ASSERT_EQ(hw.mem.l2_slices_per_partition, 2u);
  ASSERT_EQ(hw.mem.interleave_bytes, 256u);
  const unsigned atom = hw.dla.memory_atomic_size;  // 8
  ASSERT_EQ(atom, 8u);

  // 8 x 6 x 16 INT8: two C' = 8 surfaces of 6 lines of 64 bytes. Input lines 768 bytes (three
  // granules) apart and surfaces 0x1300 apart; output lines 320 bytes apart, surfaces 0x900.
  firmware::SdpLayer layer;
  layer.precision = firmware::Precision::kInt8;
  layer.src = {0x10000, 8, 6, 16, 768, 0x1300};
  layer.dst = {0x40000, 8, 6, 16, 320, 0x900};
  layer.relu = true;
  const std::uint32_t surfaces = 2;

  soc::Soc dev_soc("dla", hw);
  soc::HostAdapter dev(dev_soc);
  MemoryImage golden;
  std::uint32_t seed = 12345;
  const Ranges in_lines = surface_lines(layer.src, surfaces, atom);
  for (const auto& [addr, bytes] : in_lines) {
    std::vector<std::uint8_t> data(bytes);
    for (auto& b : data) {
      seed = seed * 1103515245u + 12345u;
      b = static_cast<std::uint8_t>(seed >> 16);
    }
    dev.memory().write(addr, data.data(), data.size());
    golden.write(addr, data.data(), data.size());
  }

  SocMmio mmio(dev);
  const unsigned bit = firmware::program_sdp(mmio, layer, 0, atom);
  mmio.wait_interrupt(bit);

  // The output equals models/ on the same input.
  (void)models::ops::run_sdp_layer(firmware::sdp_model_config(layer, atom), golden);
  const Ranges out_lines = surface_lines(layer.dst, surfaces, atom);
  for (const auto& [addr, bytes] : out_lines) {
    std::vector<std::uint8_t> got(bytes), want(bytes);
    dev.memory().read(addr, got.data(), bytes);
    golden.read(addr, want.data(), bytes);
    EXPECT_EQ(got, want) << "output line at 0x" << std::hex << addr;
  }

  const MemorySystem& mem = dev.soc().memory_system();
  ASSERT_EQ(mem.l2_slices(), 4u);
  const std::vector<std::uint64_t> want_read = bytes_per_slice(in_lines, hw, mem);
  const std::vector<std::uint64_t> want_written = bytes_per_slice(out_lines, hw, mem);
  // By hand: input line l of surface s at 0x10000 + s * 0x1300 + l * 0x300, granule
  // 0x100 + s * 0x13 + 3l: surface 0 lines go to slices 0,3,2,1,0,3 and surface 1 (granule
  // offset 19 = 3 mod 4) to 3,2,1,0,3,2 — 64 bytes each: slices 0..3 get 3, 2, 3, 4 lines.
  EXPECT_EQ(want_read, (std::vector<std::uint64_t>{3 * 64, 2 * 64, 3 * 64, 4 * 64}));
  for (unsigned i = 0; i < 4; ++i) {
    const stats::Group& g = mem.l2_statistics(i);
    EXPECT_EQ(counter(g, "bytes_read"), want_read[i]) << g.path();
    EXPECT_EQ(counter(g, "bytes_written"), want_written[i]) << g.path();
  }
  const std::vector<std::uint64_t> want_fill = fill_bytes_per_channel(in_lines, hw, mem);
  for (unsigned p = 0; p < 2; ++p) {
    const stats::Group& g = mem.dram_statistics(p);
    EXPECT_EQ(counter(g, "bytes_read"), want_fill[p]) << g.path();
  }

  // A linear read of the same bytes from the base would load different slices and channels.
  const std::uint64_t in_bytes =
      std::uint64_t{layer.src.width} * atom * layer.src.height * surfaces;
  const Ranges linear_in{{layer.src.address, in_bytes}};
  EXPECT_NE(bytes_per_slice(linear_in, hw, mem), want_read);
  EXPECT_NE(fill_bytes_per_channel(linear_in, hw, mem), want_fill);
  const std::uint64_t out_bytes = in_bytes;
  EXPECT_NE(bytes_per_slice({{layer.dst.address, out_bytes}}, hw, mem), want_written);

  // The engine moved exactly the surfaces' bytes (so nothing ran past their lines).
  std::size_t sdp = 0;
  while (dla::engines()[sdp].name != "SDP") ++sdp;
  const stats::Group& eg = dev.soc().dla().engine(sdp).statistics();
  EXPECT_EQ(counter(eg, "bytes_read"), in_bytes);
  EXPECT_EQ(counter(eg, "bytes_written"), out_bytes);
}

}  // namespace
}  // namespace octasim
