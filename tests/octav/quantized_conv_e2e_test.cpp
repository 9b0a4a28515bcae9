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
#include "tests/octav/quantized_conv_case.hpp"

namespace octasim::test {
namespace {

class TraceDir {
 public:
  TraceDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("octasim-octav-e2e-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  TraceDir(const TraceDir&) = delete;
  TraceDir& operator=(const TraceDir&) = delete;
  ~TraceDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

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

  const unsigned atom = hw.memory_atomic_size;
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
