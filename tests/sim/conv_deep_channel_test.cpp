// Deep-channel 1x1 convolutions with a tiny spatial extent (thousands of input channels, one to
// four output pixels): firmware/dla/conv traces whose golden CRC comes from models/, played by
// `octasim run --report` on the cycle-level device (its own process), checked against the cost
// NVDLA's unit description gives for such layers (v1_ias_unit_description.rst):
//
//   "One stripe operation in FC layer has only one atomic operation. But the convolution
//    pipeline needs 16 cycles to load weight for next atomic operation. [...] MAC efficiency
//    falls to 6.25%."                                                  (Multi-Batch Mode)
//   "The lower limit 16 is due to internal bandwidth to fetch weights for next stripe
//    operation."                                                       (Stripe Operation)
//   "16 MAC cells [...] cache weights from 16 int16/fp16 kernels or 32 int8 kernels."
//                                                                      (Atomic Operation)
//
// So the weight loader fills one MAC cell per cycle and an atomic operation whose stripe is
// shorter than the cell count still costs one cycle per cell: 16 on the document's array
// (nv_full: atomic-K 32 INT8 kernels in 16 cells of 16-bit multipliers), at either precision.
// nv_small's spec (MAC_ATOMIC_K_SIZE_8, INT8 only) has 8 cells of one kernel each: 8 cycles,
// MAC efficiency 1/8. The expected values below are computed from these numbers and the layer's
// shape, not from the simulator.
//
// DeepChannelTraces.Write (OCTASIM_DEEP_TRACE_DIR set) writes the shapes the README's table
// measures: 1x1 kernels, inputs 1x1xC and 2x2xC, C in {1024, 2048, 4096}, K in {1, 8, 16, 32},
// on nv_small, nv_full and nv_large.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "firmware/dla/conv.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "sim/core/hw_config.hpp"
#include "tests/sim/sim_test_util.hpp"

#ifndef OCTASIM_BIN
#error "OCTASIM_BIN must name the octasim executable"
#endif

namespace octasim::firmware {
namespace {

using octasim::test::TempDir;

constexpr std::uint64_t kInput = 0x80000000, kWeights = 0x80100000, kOutput = 0x80400000;

struct DeepCase {
  std::string config = "nv_small";
  Precision precision = Precision::kInt8;
  std::uint32_t side = 1;  // input side x side x channels, 1x1 kernels, stride 1
  std::uint32_t channels = 1024;
  std::uint32_t kernels = 8;
  [[nodiscard]] std::string name() const {
    return fmt::format("deep_{}_{}_{}x{}x{}_k{}", config, precision_name(precision), side, side,
                       channels, kernels);
  }
};

// Writes the case's trace (input, weights, golden CRC of the output) into `dir`.
std::string record(const DeepCase& dc, const std::string& dir) {
  const ConvHardware hw = conv_hardware(load_hw_config(dc.config));
  const unsigned atom = hw.atom_bytes;
  const bool int8 = dc.precision == Precision::kInt8;
  ConvLayer l;
  l.precision = dc.precision;
  l.src = packed_surface(kInput, dc.side, dc.side, dc.channels, atom);
  l.weight_address = kWeights;
  l.kernels = dc.kernels;
  const ConvCubeSize out = conv_output_cube(l);
  l.dst = packed_surface(kOutput, out.width, out.height, out.channels, atom);
  l.sdp.cvt = SdpConvertor{0, 1, int8 ? 12u : 20u};
  std::mt19937 rng(dc.channels * 131 + dc.kernels * 7 + dc.side);
  const std::int32_t lo = int8 ? -128 : -2000, hi = int8 ? 127 : 2000;
  const auto uniform = [&] { return std::uniform_int_distribution<std::int32_t>(lo, hi)(rng); };
  models::ops::ConvCube in(dc.side, dc.side, dc.channels);
  models::ops::ConvWeights w(dc.kernels, 1, 1, dc.channels);
  for (auto& v : in.data) v = uniform();
  for (auto& v : w.data) v = uniform();
  HostMemory golden;
  const std::vector<std::uint8_t> input = conv_feature_image(in, l.src, l.precision, atom);
  const std::vector<std::uint8_t> weights = conv_weight_image(w, l.precision, hw);
  golden.write(kInput, input.data(), input.size());
  golden.write(kWeights, weights.data(), weights.size());
  (void)run_conv_model(l, hw, golden);
  TraceWriter trace;
  trace.comment(fmt::format("{}: 1x1 convolution, golden from models/", dc.name()));
  const std::uint64_t out_bytes = surface_bytes(l.dst, l.precision, atom);
  trace.mem_init_zero(kOutput, out_bytes);
  trace.mem_load(kInput, dc.name() + "_input.dat", input);
  trace.mem_load(kWeights, dc.name() + "_weights.dat", weights);
  trace.wait_interrupt(program_conv(trace, l, 0, hw));
  const std::vector<std::uint8_t> want = golden.bytes(kOutput, static_cast<std::size_t>(out_bytes));
  trace.check_crc(kOutput, out_bytes, models::crc32(want.data(), want.size()));
  return trace.save(dir, dc.name() + ".cfg");
}

// What the cycle-level run reports for the layer.
struct Measured {
  bool passed = false;
  std::uint64_t cycles = 0;      // the layer's cycles (start to last acknowledged write)
  std::uint64_t csc_busy = 0;    // cycles the CSC spent issuing packages
  std::uint64_t macs = 0;        // the layer's multiply-accumulates
  std::uint64_t bytes_read = 0;  // input and weights CDMA fetched
};

Measured run(const DeepCase& dc) {
  TempDir dir(dc.name());
  const std::string cfg = record(dc, dir.str());
  const std::string report = dir.str() + "/report.json", log = dir.str() + "/run.log";
  const int rc = std::system(fmt::format("{} run {} --config {} --report {} > {} 2>&1", OCTASIM_BIN,
                                         cfg, dc.config, report, log)
                                 .c_str());
  std::stringstream text;
  text << std::ifstream(log).rdbuf();
  Measured m;
  m.passed = rc == 0 && text.str().find("checks: 1 passed, 0 failed") != std::string::npos;
  EXPECT_TRUE(m.passed) << dc.name() << ":\n" << text.str();
  if (!m.passed) return m;
  const nlohmann::json r = nlohmann::json::parse(std::ifstream(report));
  const nlohmann::json& layer = r.at("layers").at(0);
  EXPECT_EQ(layer.at("engine"), "CONV");
  m.cycles = layer.at("cycles").get<std::uint64_t>();
  m.csc_busy = layer.at("counters").at("dla.CONV.busy_cycles").get<std::uint64_t>();
  m.macs = layer.at("macs").get<std::uint64_t>();
  m.bytes_read = layer.at("bytes_read").get<std::uint64_t>();
  return m;
}

// The documentation's numbers for a configuration: MAC cells (the cycles to load one atomic
// operation's weights) and the MACs of one atomic operation.
struct ArrayShape {
  unsigned cells = 0;
  unsigned macs_per_atomic = 0;
  unsigned atomic_c = 0;  // channels of one atomic operation (INT8)
};

// nv_small.spec: MAC_ATOMIC_C_SIZE_8, MAC_ATOMIC_K_SIZE_8, INT8 only: 8 cells of one kernel.
constexpr ArrayShape kNvSmall{8, 8 * 8, 8};
// The unit description's array (nv_full.spec: MAC_ATOMIC_C_SIZE_64, MAC_ATOMIC_K_SIZE_32): 16
// cells, each caching two INT8 kernels or one INT16 kernel of 64 channels.
constexpr ArrayShape kNvFull{16, 64 * 32, 64};

// One output pixel, one kernel: before the weight-load floor was applied to single-kernel
// packages, each atomic operation took 2 cycles and this layer finished in about half the time
// NVDLA's sequencing needs.
TEST(DeepChannel, SingleKernelAtomicOperationsTakeTheWeightLoadTimeOnNvSmall) {
  DeepCase dc;
  dc.channels = 4096;
  dc.kernels = 1;
  const Measured m = run(dc);
  ASSERT_TRUE(m.passed);
  const std::uint64_t atomics = dc.channels / kNvSmall.atomic_c;  // one stripe of one pixel
  EXPECT_EQ(m.csc_busy, atomics * kNvSmall.cells);
  // The CSC starts once the whole input and the kernel group are in CBUF (unit description,
  // CSC_SG: "Poll for enough data and weights in CBUF"; the input cube is one slice), and they
  // arrive through the DRAM at its configured bandwidth: the layer takes at least both phases.
  const HwConfig hw = load_hw_config(dc.config);
  const std::uint64_t fetch = m.bytes_read / hw.dram_bandwidth();
  EXPECT_GE(m.cycles, fetch + atomics * kNvSmall.cells);
  // ... and not much more (start latency, DRAM latency, CMAC/CACC/SDP pipelines, one write).
  EXPECT_LE(m.cycles, (fetch + atomics * kNvSmall.cells) * 105 / 100);
}

// A fully-connected layer (one pixel, a full kernel group): MAC efficiency 1/cells while the
// CSC issues, 12.5% on nv_small.
TEST(DeepChannel, FullyConnectedMacEfficiencyIsOneOverTheCellsOnNvSmall) {
  for (const std::uint32_t side : {1u, 2u}) {
    DeepCase dc;
    dc.side = side;
    dc.channels = 2048;
    dc.kernels = 8;
    const Measured m = run(dc);
    ASSERT_TRUE(m.passed);
    const std::uint64_t atomics = std::uint64_t{dc.channels} / kNvSmall.atomic_c;
    EXPECT_EQ(m.csc_busy, atomics * kNvSmall.cells) << dc.name();
    // Useful MACs over the MACs the array could have done while the CSC issued: the pixels of
    // the stripe (1 or 4) per 8 cycles.
    EXPECT_DOUBLE_EQ(
        static_cast<double>(m.macs) / static_cast<double>(m.csc_busy * kNvSmall.macs_per_atomic),
        side * side / 8.0)
        << dc.name();
  }
}

// The unit description's own example: an FC layer on its 16-cell array spends 16 cycles per
// atomic operation, MAC efficiency 6.25% -- at INT8 (32 kernels, two per cell) as at INT16.
TEST(DeepChannel, FullyConnectedTakesSixteenCyclesPerAtomicOperationOnNvFull) {
  struct Shape {
    Precision precision;
    std::uint32_t kernels;  // one full kernel group
    std::uint32_t channels_per_atomic;
  };
  for (const Shape s : {Shape{Precision::kInt8, 32, 64}, Shape{Precision::kInt16, 16, 64}}) {
    DeepCase dc;
    dc.config = "nv_full";
    dc.precision = s.precision;
    dc.channels = 4096;
    dc.kernels = s.kernels;
    const Measured m = run(dc);
    ASSERT_TRUE(m.passed);
    const std::uint64_t atomics = dc.channels / s.channels_per_atomic;
    EXPECT_EQ(m.csc_busy, atomics * 16) << dc.name();
    const unsigned macs_per_atomic =
        s.precision == Precision::kInt8 ? kNvFull.macs_per_atomic : kNvFull.macs_per_atomic / 2;
    EXPECT_DOUBLE_EQ(
        static_cast<double>(m.macs) / static_cast<double>(m.csc_busy * macs_per_atomic), 0.0625)
        << dc.name();
  }
}

// Producer for the README's before/after table: writes every shape's trace.
TEST(DeepChannelTraces, Write) {
  const char* dir = std::getenv("OCTASIM_DEEP_TRACE_DIR");
  if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "OCTASIM_DEEP_TRACE_DIR is not set";
  std::filesystem::create_directories(dir);
  for (const char* config : {"nv_small", "nv_full", "nv_large"}) {
    for (const std::uint32_t side : {1u, 2u}) {
      for (const std::uint32_t c : {1024u, 2048u, 4096u}) {
        for (const std::uint32_t k : {1u, 8u, 16u, 32u}) {
          DeepCase dc;
          dc.config = config;
          dc.side = side;
          dc.channels = c;
          dc.kernels = k;
          EXPECT_TRUE(std::filesystem::exists(record(dc, dir))) << dc.name();
        }
      }
    }
  }
}

}  // namespace
}  // namespace octasim::firmware
