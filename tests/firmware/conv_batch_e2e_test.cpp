// Multi-batch convolution (NVDLA's BATCH feature, nv_full) end to end: firmware/dla/conv
// programs one layer over N input cubes (D_BATCH_NUMBER, D_BATCH_STRIDE, SDP D_DST_BATCH_STRIDE);
// the golden output of every batch is computed independently, as N single-batch layers through
// models/ (run_conv_model with batches = 1 at each batch's addresses: the path NVDLA's own traces
// validate). The trace is played on the functional device in-process and by `octasim run
// --config nv_full` on the cycle-level device. Timing: the batches share one weight fetch, so a
// weight-bound fully-connected layer of 8 batches takes far less than 8 times one batch, and
// never less than its weights' transfer time.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "firmware/dla/conv.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "octasim/regs/nvdla.hpp"
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

constexpr std::uint64_t kInput = 0x80000000, kWeights = 0x80100000, kBias = 0x80180000,
                        kOutput = 0x80200000;

struct BatchCase {
  std::string name;
  std::uint32_t batches = 1;
  std::uint32_t width = 1, height = 1, channels = 8;
  std::uint32_t kernels = 8, kernel_size = 1, pad = 0;
  std::uint32_t src_batch_stride = 0, dst_batch_stride = 0;
};

// A surface for SDP's output in multi-batch mode: lines and surfaces on 64-byte boundaries.
FeatureSurface aligned_surface(std::uint64_t address, std::uint32_t width, std::uint32_t height,
                               std::uint32_t channels, unsigned atom) {
  FeatureSurface s = packed_surface(address, width, height, channels, atom);
  s.line_stride = (s.line_stride + 63) / 64 * 64;
  s.surface_stride = s.line_stride * height;
  return s;
}

struct Recorded {
  std::string cfg;
  std::vector<std::uint32_t> crcs;  // of every batch's output, from the single-batch goldens
  std::uint64_t weight_bytes = 0;
};

Recorded record(const BatchCase& bc, const std::string& dir) {
  const HwConfig hwc = load_hw_config("nv_full");
  const ConvHardware hw = conv_hardware(hwc);
  const unsigned atom = hw.atom_bytes;

  ConvLayer l;
  l.precision = Precision::kInt8;
  l.src = packed_surface(kInput, bc.width, bc.height, bc.channels, atom);
  l.weight_address = kWeights;
  l.kernels = bc.kernels;
  l.kernel_width = l.kernel_height = bc.kernel_size;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = bc.pad;
  const ConvCubeSize out = conv_output_cube(l);
  l.dst = aligned_surface(kOutput, out.width, out.height, out.channels, atom);
  l.batches = bc.batches;
  l.src_batch_stride = bc.src_batch_stride;
  l.dst_batch_stride = bc.dst_batch_stride;
  l.sdp.cvt = SdpConvertor{0, 1, 9};
  l.sdp.relu = true;

  std::mt19937 rng(7);
  const auto uniform = [&](std::int32_t a, std::int32_t b) {
    return std::uniform_int_distribution<std::int32_t>(a, b)(rng);
  };
  HostMemory golden;
  TraceWriter trace;
  trace.comment(fmt::format("{}: {} batches of {}x{}x{} -> {}x{}x{}, golden from models/ per batch",
                            bc.name, bc.batches, bc.width, bc.height, bc.channels, out.width,
                            out.height, out.channels));
  models::ops::ConvWeights w(bc.kernels, bc.kernel_size, bc.kernel_size, bc.channels);
  for (auto& v : w.data) v = uniform(-128, 127);
  const std::vector<std::uint8_t> weight_bytes = conv_weight_image(w, l.precision, hw);
  golden.write(kWeights, weight_bytes.data(), weight_bytes.size());
  trace.mem_load(kWeights, bc.name + "_weights.dat", weight_bytes);
  std::vector<std::int16_t> bias(bc.kernels);
  for (auto& b : bias) b = static_cast<std::int16_t>(uniform(-3000, 3000));
  const std::vector<std::uint8_t> bias_bytes = sdp_per_channel_table(bias, l.precision, atom);
  golden.write(kBias, bias_bytes.data(), bias_bytes.size());
  trace.mem_load(kBias, bc.name + "_bias.dat", bias_bytes);
  l.sdp.bias = SdpPerChannel{kBias, 4};

  Recorded r;
  r.weight_bytes = weight_bytes.size();
  const std::uint64_t out_bytes = surface_bytes(l.dst, l.precision, atom);
  for (std::uint32_t b = 0; b < bc.batches; ++b) {
    ConvLayer one = l;
    one.batches = 1;
    one.src.address += std::uint64_t{b} * bc.src_batch_stride;
    one.dst.address += std::uint64_t{b} * bc.dst_batch_stride;
    models::ops::ConvCube in(bc.width, bc.height, bc.channels);
    for (auto& v : in.data) v = uniform(-128, 127);
    const std::vector<std::uint8_t> input = conv_feature_image(in, one.src, l.precision, atom);
    golden.write(one.src.address, input.data(), input.size());
    trace.mem_load(one.src.address, fmt::format("{}_input{}.dat", bc.name, b), input);
    trace.mem_init_zero(one.dst.address, out_bytes);
    (void)run_conv_model(one, hw, golden);
    const std::vector<std::uint8_t> want =
        golden.bytes(one.dst.address, static_cast<std::size_t>(out_bytes));
    r.crcs.push_back(models::crc32(want.data(), want.size()));
  }
  trace.wait_interrupt(program_conv(trace, l, 0, hw));
  for (std::uint32_t b = 0; b < bc.batches; ++b) {
    trace.check_crc(kOutput + std::uint64_t{b} * bc.dst_batch_stride, out_bytes, r.crcs[b]);
  }
  r.cfg = trace.save(dir, bc.name + ".cfg");
  return r;
}

trace::PlayResult play_functional(const std::string& cfg, const std::string& config) {
  dla::FunctionalDevice device(load_hw_config(config));
  return trace::play(trace::parse_trace_file(cfg), device, trace::PlayerOptions{});
}

// Plays the case on both devices (every CRC passes); returns the cycle-level compute cycles.
std::uint64_t expect_passes(const BatchCase& bc) {
  TempDir dir(bc.name);
  const Recorded r = record(bc, dir.str());
  const trace::PlayResult f = play_functional(r.cfg, "nv_full");
  EXPECT_EQ(f.checks.size(), bc.batches);
  for (const auto& c : f.checks) {
    EXPECT_TRUE(c.pass) << bc.name << " line " << c.line << ": " << c.description << ": "
                        << c.detail;
  }
  std::string out;
  EXPECT_EQ(run_octasim("run " + r.cfg + " --config nv_full", &out), 0) << out;
  EXPECT_NE(out.find(fmt::format("checks: {} passed, 0 failed", bc.batches)), std::string::npos)
      << out;
  std::smatch m;
  const std::regex cycles("compute=([0-9]+)");
  if (!std::regex_search(out, m, cycles)) {
    ADD_FAILURE() << "no compute cycles in: " << out;
    return 0;
  }
  return std::stoull(m[1].str());
}

// A fully-connected layer (1x1x512 -> 128) as NVDLA's documentation motivates batching with.
BatchCase fully_connected(std::uint32_t batches) {
  BatchCase c;
  c.name = fmt::format("fc512x128_batch{}", batches);
  c.batches = batches;
  c.channels = 512;
  c.kernels = 128;
  c.src_batch_stride = 512;  // 16 surfaces of 32 bytes
  c.dst_batch_stride = 256;  // 4 surfaces 64 bytes apart
  return c;
}

TEST(ConvBatchEndToEnd, FullyConnectedEightBatchesShareOneWeightFetch) {
  const std::uint64_t one = expect_passes(fully_connected(1));
  const std::uint64_t eight = expect_passes(fully_connected(8));
  // 64 KiB of weights over nv_full's 512-bit interface: at least 1024 cycles either way.
  const HwConfig hw = load_hw_config("nv_full");
  const std::uint64_t weight_cycles = 512ull * 128 / (hw.dla.primary_memif_width / 8);
  EXPECT_GE(one, weight_cycles);
  EXPECT_GE(eight, weight_cycles);
  std::printf("fully connected 512x128: batch 1 %llu cycles, batch 8 %llu cycles\n",
              static_cast<unsigned long long>(one), static_cast<unsigned long long>(eight));
  // Eight inferences for much less than eight times one: the weights are fetched once.
  EXPECT_LT(eight, 2 * one) << "batch 1: " << one << " cycles, batch 8: " << eight;
}

TEST(ConvBatchEndToEnd, ThreeBatchesOfAPaddedThreeByThreeConvolution) {
  BatchCase c;
  c.name = "conv6x5x40_k24_batch3";
  c.batches = 3;
  c.width = 6, c.height = 5, c.channels = 40;
  c.kernels = 24, c.kernel_size = 3, c.pad = 1;
  c.src_batch_stride = 6 * 5 * 32 * 2;  // two C' surfaces of 6x5 atoms
  c.dst_batch_stride = 1024;            // one 6x5 surface, lines 192 bytes apart
  (void)expect_passes(c);
}

TEST(ConvBatchEndToEnd, ConfigurationsWithoutBatchRefuseIt) {
  BatchCase c = fully_connected(4);
  TempDir dir("refused");
  const Recorded r = record(c, dir.str());
  try {
    (void)play_functional(r.cfg, "nv_large");
    FAIL() << "nv_large has no BATCH";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "multi-batch convolution is not present in this configuration (nv_large)"),
              std::string::npos)
        << e.what();
  }
  ConvLayer l;
  l.src = packed_surface(kInput, 1, 1, 64, 32);
  l.kernels = 32;
  l.dst = aligned_surface(kOutput, 1, 1, 32, 32);
  l.batches = 2;
  l.src_batch_stride = 64;
  l.dst_batch_stride = 64;
  ConvHardware no_batch = conv_hardware(load_hw_config("nv_large"));
  EXPECT_THROW((void)plan_conv(l, no_batch), FirmwareError);
  ConvHardware full = conv_hardware(load_hw_config("nv_full"));
  EXPECT_NO_THROW((void)plan_conv(l, full));
  l.dst_batch_stride = 32;  // overlaps batch 0's output and is not 64-byte aligned
  EXPECT_THROW((void)plan_conv(l, full), FirmwareError);
  l.dst_batch_stride = 64;
  l.batches = 33;
  EXPECT_THROW((void)plan_conv(l, full), FirmwareError);
}

}  // namespace
}  // namespace octasim::firmware
