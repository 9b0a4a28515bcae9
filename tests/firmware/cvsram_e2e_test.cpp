// End to end with the CV-SRAM: a PDP layer programmed by firmware/dla/pdp with its input surface
// in the CV-SRAM (Ram::kCv: PDP_RDMA SRC_RAM_TYPE = CV) and its output in DRAM, recorded as an
// NVDLA trace (mem_load(sec_mem, ...)) whose golden CRC comes from models/ (run_pdp_layer),
// played on the functional device in this process and by `octasim run` on the cycle-level
// device. DRAM holds different bytes at the input's address, so a layer that read DRAM instead
// fails its CRC.

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/pdp.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/firmware/e2e_util.hpp"

#ifndef OCTASIM_BIN
#error "OCTASIM_BIN must name the octasim executable"
#endif

namespace octasim::firmware {
namespace {

constexpr std::uint64_t kSrc = 0x50001000;  // in the CV-SRAM (nv_large maps it at 0x50000000)
constexpr std::uint64_t kDst = 0x80000000;  // DRAM

struct Built {
  std::string cfg;
  std::uint32_t crc = 0;
  std::uint64_t src_bytes = 0;
};

std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

// A 2x2 stride-2 max pooling of a 8x6x40 INT8 cube (two C' surfaces of 32 on nv_large).
Built build(const std::string& dir) {
  const HwConfig hw = load_hw_config("nv_large");
  const unsigned atom = hw.dla.memory_atomic_size;
  PdpLayer l;
  l.method = PoolMethod::kMax;
  l.kernel_width = l.kernel_height = 2;
  l.stride_x = l.stride_y = 2;
  l.src = packed_surface(kSrc, 8, 6, 40, atom);
  l.src.ram = Ram::kCv;
  l.dst = packed_surface(kDst, pdp_output_size(8, 2, 2, 0, 0), pdp_output_size(6, 2, 2, 0, 0), 40,
                         atom);
  const std::uint64_t src_bytes = surface_bytes(l.src, l.precision, atom);
  const std::uint64_t dst_bytes = surface_bytes(l.dst, l.precision, atom);

  // The golden output: models/ over the input bytes.
  const std::vector<std::uint8_t> input = random_bytes(src_bytes, 7);
  HostMemory golden;
  golden.write(kSrc, input.data(), input.size());
  (void)models::ops::run_pdp_layer(pdp_model_params(l, atom), golden);
  const std::vector<std::uint8_t> out = golden.bytes(kDst, dst_bytes);

  TraceWriter t;
  t.comment("PDP max 2x2/2, input in the CV-SRAM, output in DRAM (nv_large)");
  t.mem_init_zero(kDst, dst_bytes);
  // DRAM at the input's address holds other bytes: only the CV-SRAM's give the golden output.
  t.mem_load(kSrc, "decoy.dat", random_bytes(src_bytes, 99));
  t.mem_load(kSrc, "input.dat", input, TraceMemory::kSecondary);
  t.wait_interrupt(program_pdp(t, l, 0, atom));
  t.check_crc(kDst, dst_bytes, models::crc32(out.data(), out.size()));
  return {t.save(dir, "pdp_cvsram.cfg"), models::crc32(out.data(), out.size()), src_bytes};
}

TEST(CvSramEndToEnd, PdpInputInCvSramOnTheFunctionalDevice) {
  const test::TempDir tmp("cvsram_e2e");
  const std::string dir = tmp.str();
  const Built b = build(dir);
  dla::FunctionalDevice dev(load_hw_config("nv_large"));
  const trace::PlayResult r = trace::play(trace::parse_trace_file(b.cfg), dev, {});
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].pass) << r.checks[0].detail;
}

TEST(CvSramEndToEnd, PdpInputInCvSramOnTheCycleLevelDevice) {
  const test::TempDir tmp("cvsram_e2e");
  const std::string dir = tmp.str();
  const Built b = build(dir);
  std::string out;
  const int rc = test::run_octasim("run " + b.cfg + " --config nv_large", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("checks: 1 passed, 0 failed"), std::string::npos) << out;
  // The input came through the secondary interface: PDP_RDMA read the whole source surface.
  std::istringstream lines(out);
  std::string line;
  std::uint64_t cvsram_read = 0;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    if (name == "mem.cvsram.bytes_read") words >> cvsram_read;
  }
  EXPECT_EQ(cvsram_read, b.src_bytes) << out;
}

TEST(CvSramEndToEnd, RefusedWithoutASecondaryInterface) {
  const test::TempDir tmp("cvsram_e2e");
  const std::string dir = tmp.str();
  const Built b = build(dir);
  dla::FunctionalDevice dev(load_hw_config("nv_small"));
  try {
    (void)trace::play(trace::parse_trace_file(b.cfg), dev, {});
    ADD_FAILURE() << "expected a TraceError";
  } catch (const trace::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("secondary_memif"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace octasim::firmware
