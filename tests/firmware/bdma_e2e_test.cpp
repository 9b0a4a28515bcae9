// End to end: BDMA copies (strided 2-D and 3-D, two groups) programmed by firmware/dla/bdma
// through the Mmio interface, recorded as an NVDLA trace whose golden destination comes from
// models/ (models::ops::run_bdma_copy on a host memory image), then played on the functional
// device in-process and by `octasim run --config nv_full` on the cycle-level device, whose
// report gives the BDMA's cycles: at least the bytes over the interface's bytes per cycle.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "firmware/dla/bdma.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/ops/bdma.hpp"
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

using octasim::test::run_octasim;
using octasim::test::TempDir;

constexpr std::uint64_t kSrc = 0x80000000;
constexpr std::uint64_t kDst = 0x80100000;
constexpr std::uint64_t kDstBytes = 0x8000;

// Group 0: a 3-D copy with different strides on each side and a packed 2-D one; group 1: a
// surface of 5 lines gathered from a wider source.
std::vector<std::vector<BdmaTransfer>> groups() {
  BdmaTransfer cube;
  cube.src = kSrc + 0x40;
  cube.dst = kDst;
  cube.line_bytes = 160;
  cube.lines = 6;
  cube.surfaces = 3;
  cube.src_line_stride = 0x100;
  cube.dst_line_stride = 0xc0;
  cube.src_surface_stride = 0x800;
  cube.dst_surface_stride = 0x500;
  BdmaTransfer packed;
  packed.src = kSrc + 0x2000;
  packed.dst = kDst + 0x1000;
  packed.line_bytes = 0x400;
  packed.lines = 4;
  BdmaTransfer gather;
  gather.src = kSrc + 0x3000;
  gather.dst = kDst + 0x4000;
  gather.line_bytes = 64;
  gather.lines = 5;
  gather.src_line_stride = 0x200;
  return {{cube, packed}, {gather}};
}

std::vector<std::uint8_t> source_bytes() {
  std::vector<std::uint8_t> src(0x4000);
  std::uint32_t x = 12345;
  for (auto& b : src) {
    x = x * 1103515245u + 12345u;
    b = static_cast<std::uint8_t>(x >> 16);
  }
  return src;
}

// Records the copies and returns the bytes the models/ reference copy moved.
std::uint64_t build(TraceWriter& t) {
  HostMemory golden;
  const std::vector<std::uint8_t> src = source_bytes();
  golden.write(kSrc, src.data(), src.size());
  t.mem_load(kSrc, "bdma_src.dat", src);
  t.mem_init_zero(kDst, kDstBytes);
  std::uint64_t bytes = 0;
  const auto all = groups();
  for (unsigned g = 0; g < all.size(); ++g) {
    for (const BdmaTransfer& c : all[g]) {
      program_bdma(t, c);
      models::ops::run_bdma_copy(bdma_model_copy(c), golden, golden);
      bytes += bdma_model_copy(c).bytes();
    }
    t.wait_interrupt(launch_bdma(t, g));
  }
  t.check_file(kDst, "bdma_dst_golden.dat", golden.bytes(kDst, kDstBytes));
  return bytes;
}

TEST(BdmaEndToEnd, FunctionalNvFull) {
  TraceWriter t;
  (void)build(t);
  TempDir dir("functional");
  const std::string cfg = t.save(dir.str(), "bdma.cfg");
  dla::FunctionalDevice device(load_hw_config("nv_full"));
  const trace::PlayResult r = trace::play(trace::parse_trace_file(cfg), device, {});
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].pass) << r.checks[0].detail;
  ASSERT_EQ(device.layers().size(), 3u);
  for (const auto& l : device.layers()) EXPECT_EQ(l.engine, "BDMA");
  EXPECT_EQ(device.layers()[2].group, 1u);
}

// The golden file is sensitive: one destination byte off fails the check.
TEST(BdmaEndToEnd, AWrongGoldenFails) {
  TraceWriter t;
  (void)build(t);
  TempDir dir("wrong");
  const std::string cfg = t.save(dir.str(), "bdma.cfg");
  std::fstream golden(dir.str() + "/bdma_dst_golden.dat", std::ios::in | std::ios::out);
  std::stringstream s;
  s << golden.rdbuf();
  std::string text = s.str();
  // The first payload byte of the packet at offset 0x20 (inside the 3-D copy's first line).
  const std::size_t packet = text.find("{offset:0x20,");
  ASSERT_NE(packet, std::string::npos);
  const std::size_t byte = text.find("payload:0x", packet) + 10;
  text[byte] = text[byte] == '0' ? '1' : '0';
  std::ofstream(dir.str() + "/bdma_dst_golden.dat", std::ios::trunc) << text;
  dla::FunctionalDevice device(load_hw_config("nv_full"));
  const trace::PlayResult r = trace::play(trace::parse_trace_file(cfg), device, {});
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_FALSE(r.checks[0].pass);
}

TEST(BdmaEndToEnd, CycleLevelNvFullWithinTheInterfaceBound) {
  TraceWriter t;
  const std::uint64_t bytes = build(t);
  TempDir dir("cycle");
  const std::string cfg = t.save(dir.str(), "bdma.cfg");
  const std::string report = dir.str() + "/report.json";
  std::string out;
  ASSERT_EQ(run_octasim("run " + cfg + " --config nv_full --report " + report, &out), 0) << out;
  EXPECT_NE(out.find("checks: 1 passed, 0 failed"), std::string::npos) << out;
  std::ifstream in(report);
  const nlohmann::json j = nlohmann::json::parse(in);
  const HwConfig hw = load_hw_config("nv_full");
  const std::uint64_t interface_bytes = hw.dla.primary_memif_width / 8;  // 64 on nv_full
  std::uint64_t layer_cycles = 0, layers = 0;
  for (const auto& l : j.at("layers")) {
    if (l.at("engine") != "BDMA") continue;
    ++layers;
    layer_cycles += l.at("cycles").get<std::uint64_t>();
  }
  EXPECT_EQ(layers, 3u);
  // No copy is faster than its bytes through the interface, plus one read latency each.
  EXPECT_GE(layer_cycles, bytes / interface_bytes + 3 * hw.dla.primary_memif_latency);
  // Nor slower than every 64-byte request paying the read and write latencies in turn.
  EXPECT_LE(layer_cycles, (bytes / interface_bytes + 3 * 6 * 3) *
                              (hw.dla.primary_memif_latency + hw.mem.dram_write_latency + 2));
}

TEST(BdmaProgramming, RefusesWhatItCannotProgram) {
  TraceWriter t;
  BdmaTransfer c;
  c.src = 0x1010;  // not 32-byte aligned
  EXPECT_THROW(program_bdma(t, c), FirmwareError);
  c.src = 0x1000;
  c.line_bytes = 48;
  EXPECT_THROW(program_bdma(t, c), FirmwareError);
  c.line_bytes = 64;
  c.lines = 2;
  c.dst_line_stride = 32;  // destination lines would overlap
  EXPECT_THROW(program_bdma(t, c), FirmwareError);
  EXPECT_EQ(t.text().find("reg_write"), std::string::npos) << "nothing written before refusing";
  EXPECT_THROW((void)launch_bdma(t, 2), FirmwareError);
}

}  // namespace
}  // namespace octasim::firmware
