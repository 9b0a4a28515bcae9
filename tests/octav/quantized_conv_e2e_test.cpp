// conv -> OCTAV -> auto-programmed SDP on the functional device (nv_full): a firmware-recorded
// trace whose checks come from models/ (tests/octav/quantized_conv_case.hpp) passes, the device's
// codes equal the models/ golden bit for bit, and OCTAV's clip gives a lower MSE against the
// exact convolution than max-scaling on this heavy-tailed (Laplace) data.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/octav/octav_test_util.hpp"
#include "tests/octav/quantized_conv_case.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::test {
namespace {

// A private directory for the traces (tests/sim/sim_test_util.hpp).
using TraceDir = TempDir;

TEST(QuantizedConvE2e, FunctionalDeviceMatchesModelsAndBeatsMaxScaling) {
  const HwConfig hw = load_hw_config("nv_full");
  firmware::TraceWriter writer;
  const QuantizedConvCase q = record_quantized_conv(hw, writer);
  // The case exercises what it claims: a real recursion, a clip well below the maximum.
  ASSERT_GT(q.octav.iterations, 2);
  ASSERT_TRUE(q.octav.converged);
  ASSERT_LT(static_cast<double>(q.clip), 0.8 * q.max_abs);

  const TraceDir dir;
  const std::string path = writer.save(dir.str(), "quantized_conv.cfg");
  dla::FunctionalDevice device(hw);
  const trace::PlayResult r = trace::play(trace::parse_trace_file(path), device, {});
  ASSERT_EQ(r.checks.size(), 6u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.pass) << c.description << ": " << c.detail;

  const unsigned atom = hw.dla.memory_atomic_size;
  const auto octav_codes = read_int16_surface(device.memory(), q.layer.sdp_out, atom);
  const auto max_codes = read_int16_surface(device.memory(), q.max_sdp.dst, atom);
  EXPECT_EQ(octav_codes, q.octav_codes);
  EXPECT_EQ(max_codes, q.max_codes);
  // B = 4 codes: within +-8, and OCTAV clips (codes at the ends) where max-scaling does not.
  int clipped = 0;
  for (std::int16_t c : octav_codes) {
    ASSERT_LE(std::abs(c), 8);
    clipped += std::abs(c) == 8 ? 1 : 0;
  }
  EXPECT_GT(clipped, 0);
  const double mse_octav = dequantized_mse(octav_codes, q.octav_fields, q.reference);
  const double mse_max = dequantized_mse(max_codes, q.max_fields, q.reference);
  EXPECT_LT(mse_octav, 0.8 * mse_max) << "OCTAV " << mse_octav << " max-scaling " << mse_max;
  // The layer list shows the three operations of the quantized layer, then max-scaling's SDP.
  ASSERT_EQ(device.layers().size(), 4u);
  EXPECT_EQ(device.layers()[1].engine, "OCTAV");
}

// The INT8 variant on nv_small (firmware::program_octav_sdp): OCTAV on an INT8 tensor (signed,
// B = 3) auto-programs an INT8 SDP, whose codes (|code| <= 4) equal the models/ golden.
TEST(OctavSdpE2e, Int8TensorToThreeBitCodesOnNvSmall) {
  using namespace firmware;
  const HwConfig hw = load_hw_config("nv_small");
  const unsigned atom = hw.dla.memory_atomic_size;
  constexpr std::uint64_t kSrc = 0x80000000, kOut = 0x80100000;
  const FeatureSurface src = packed_surface(kSrc, 16, 8, 12, atom);
  const TypedTensor t = laplace_tensor(octav::DataType::kInt8, 16 * 8 * 12, 14.0, 5);
  firmware::HostMemory golden;
  write_feature(golden, kSrc, t, 16, 8, 12, atom, src.line_stride, src.surface_stride);
  const std::uint64_t bytes = surface_bytes(src, Precision::kInt8, atom);
  const std::vector<std::uint8_t> src_bytes = golden.bytes(kSrc, bytes);

  OctavLayer o;
  o.type = OctavDataType::kInt8;
  o.src = src;
  o.bits = 3;
  o.auto_program = OctavAutoProgram::kSdp;
  o.auto_clamp = true;
  ClipSdpLayer s;
  s.precision = Precision::kInt8;
  s.src = src;
  s.dst = packed_surface(kOut, 16, 8, 12, atom);
  models::OctavOptions mo;
  mo.bits = 3;
  mo.max_iterations = o.max_iterations;
  mo.tolerance = o.tolerance;
  const models::ClipResult want = models::octav(t.values.data(), t.values.size(), mo);
  const SdpClip fields =
      sdp_clip_fields(static_cast<double>(static_cast<float>(want.clip)), 3, false);
  (void)models::ops::run_sdp_layer(clip_sdp_model_config(s, fields, atom), golden);
  const std::vector<std::uint8_t> want_out = golden.bytes(kOut, bytes);

  TraceWriter trace;
  trace.mem_init_zero(kOut, bytes);
  trace.mem_load(kSrc, "int8_input.dat", src_bytes);
  const OctavSdpBits b = program_octav_sdp(trace, o, s, 0, 0, 0, atom);
  EXPECT_EQ(b.octav, 22u);
  EXPECT_EQ(b.sdp, 0u);
  trace.check_crc(kOut, bytes, models::crc32(want_out.data(), want_out.size()));
  const TraceDir dir;
  dla::FunctionalDevice device(hw);
  const trace::PlayResult r =
      trace::play(trace::parse_trace_file(trace.save(dir.str(), "int8.cfg")), device, {});
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].pass) << r.checks[0].detail;
  std::vector<std::uint8_t> got(bytes);
  device.memory().read(kOut, got.data(), got.size());
  EXPECT_EQ(got, want_out);
  int top = 0;
  for (std::uint32_t c = 0; c < 12; ++c) {
    for (std::uint32_t h = 0; h < 8; ++h) {
      for (std::uint32_t w = 0; w < 16; ++w) {
        const auto code = static_cast<std::int8_t>(
            got[c / atom * src.surface_stride + h * src.line_stride + w * atom + c % atom]);
        ASSERT_LE(std::abs(code), 4);
        top += std::abs(code) == 4 ? 1 : 0;
      }
    }
  }
  EXPECT_GT(top, 0);
  // A refusal: the SDP layer must leave the fields to OCTAV.
  ClipSdpLayer with_clip = s;
  with_clip.clip = fields;
  TraceWriter unused;
  EXPECT_THROW((void)program_octav_sdp(unused, o, with_clip, 0, 0, 0, atom), FirmwareError);
  EXPECT_TRUE(unused.text().empty());
}

// Writes the trace into $OCTASIM_OCTAV_TRACE_DIR for the ctest fixture that plays it through
// `octasim run` (the run summary and JSON report of the cycle-level device).
TEST(QuantizedConvTraceFile, Write) {
  const char* dir = std::getenv("OCTASIM_OCTAV_TRACE_DIR");
  if (dir == nullptr) GTEST_SKIP() << "OCTASIM_OCTAV_TRACE_DIR not set";
  std::filesystem::create_directories(dir);
  firmware::TraceWriter writer;
  (void)record_quantized_conv(load_hw_config("nv_full"), writer);
  EXPECT_FALSE(writer.save(dir, "quantized_conv.cfg").empty());
}

}  // namespace
}  // namespace octasim::test
