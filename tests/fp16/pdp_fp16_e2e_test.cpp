// FP16 PDP layers end to end on nv_full: programmed by firmware/dla/pdp (Precision::kFp16),
// recorded as NVDLA traces whose golden CRCs come from models/ (run_pdp_layer over
// pdp_model_params, never the simulator) and whose D_NAN_INPUT_NUM / D_INF_INPUT_NUM /
// D_NAN_OUTPUT_NUM checks are counted here from the data; played on the functional device in this
// process and by `octasim run --config nv_full` on the cycle-level device. The golden itself is
// checked against a double-precision reference pool with NVDLA's PDP rule (check_pdp).

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/pdp.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "models/numerics/float_format.hpp"
#include "models/precision/thresholds.hpp"
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

constexpr std::uint64_t kSrc = 0x80000000, kDst = 0x80100000;

struct PoolCase {
  std::string name;
  PoolMethod method = PoolMethod::kMax;
  std::uint32_t width = 8, height = 8, channels = 16;
  unsigned kernel = 2, stride = 2, pad = 0;
  double scale = 0.06;    // input magnitudes (NVDLA's absolute 1e-4 bound wants small averages)
  bool specials = false;  // plant NaNs and infinities
};

void PrintTo(const PoolCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<PoolCase> cases() {
  std::vector<PoolCase> v;
  v.push_back({"max2x2", PoolMethod::kMax, 8, 6, 24, 2, 2, 0, 100.0, false});
  v.push_back({"ave2x2", PoolMethod::kAverage, 8, 6, 24, 2, 2, 0, 0.06, false});
  v.push_back({"max3x3_s2_pad1", PoolMethod::kMax, 11, 9, 20, 3, 2, 1, 100.0, false});
  v.push_back({"ave3x3_s2_pad1", PoolMethod::kAverage, 11, 9, 20, 3, 2, 1, 0.06, false});
  v.push_back({"ave_global5x5", PoolMethod::kAverage, 5, 5, 40, 5, 1, 0, 0.06, false});
  v.push_back({"max_global5x5", PoolMethod::kMax, 5, 5, 40, 5, 1, 0, 100.0, false});
  v.push_back({"min3x3_s2_pad1_specials", PoolMethod::kMin, 9, 7, 16, 3, 2, 1, 10.0, true});
  v.push_back({"ave3x3_s2_pad1_specials", PoolMethod::kAverage, 9, 7, 16, 3, 2, 1, 0.06, true});
  return v;
}

struct Built {
  PdpLayer layer;
  std::vector<std::uint8_t> input, golden;
  std::uint32_t nan_in = 0, inf_in = 0, nan_out = 0;
  std::string cfg;
};

std::uint16_t element(const std::vector<std::uint8_t>& bytes, std::uint64_t offset) {
  return static_cast<std::uint16_t>(bytes[offset] | bytes[offset + 1] << 8);
}

// The layer, its input and the models/ golden output.
Built build(const PoolCase& pc) {
  const HwConfig hw = load_hw_config("nv_full");
  const unsigned atom = hw.dla.memory_atomic_size;
  Built b;
  PdpLayer& l = b.layer;
  l.precision = Precision::kFp16;
  l.method = pc.method;
  l.kernel_width = l.kernel_height = pc.kernel;
  l.stride_x = l.stride_y = pc.stride;
  l.pad_left = l.pad_right = l.pad_top = l.pad_bottom = pc.pad;
  l.src = packed_surface(kSrc, pc.width, pc.height, pc.channels, atom);
  l.dst = packed_surface(kDst, pdp_output_size(pc.width, pc.kernel, pc.stride, pc.pad, pc.pad),
                         pdp_output_size(pc.height, pc.kernel, pc.stride, pc.pad, pc.pad),
                         pc.channels, atom);
  const std::uint64_t src_bytes = surface_bytes(l.src, l.precision, atom);
  const std::uint64_t dst_bytes = surface_bytes(l.dst, l.precision, atom);

  // Every lane of every atom gets data (NVDLA pools whole atoms).
  std::mt19937 rng(static_cast<std::uint32_t>(std::hash<std::string>{}(pc.name) & 0xffffffffu));
  std::uniform_real_distribution<double> d(-pc.scale, pc.scale);
  b.input.resize(src_bytes);
  for (std::size_t i = 0; i + 1 < b.input.size(); i += 2) {
    const std::uint16_t e = models::fp16_from_double(d(rng));
    b.input[i] = static_cast<std::uint8_t>(e);
    b.input[i + 1] = static_cast<std::uint8_t>(e >> 8);
  }
  if (pc.specials) {
    const std::pair<std::uint64_t, std::uint16_t> planted[] = {
        {element_offset(l.src, l.precision, atom, 0, 0, 0), 0x7e00},
        {element_offset(l.src, l.precision, atom, 4, 3, 7), 0xfe01},
        {element_offset(l.src, l.precision, atom, 8, 6, 15), 0x7c00},
        {element_offset(l.src, l.precision, atom, 2, 5, 3), 0xfc00}};
    for (const auto& [off, bits] : planted) {
      b.input[off] = static_cast<std::uint8_t>(bits);
      b.input[off + 1] = static_cast<std::uint8_t>(bits >> 8);
    }
  }
  // D_NAN_INPUT_NUM / D_INF_INPUT_NUM: every element PDP_RDMA reads (the whole packed surface).
  for (std::uint64_t off = 0; off < src_bytes; off += 2) {
    const std::uint16_t e = element(b.input, off);
    b.nan_in += models::fp16_is_nan(e) ? 1 : 0;
    b.inf_in += models::fp16_is_inf(e) ? 1 : 0;
  }

  firmware::HostMemory golden;
  golden.write(kSrc, b.input.data(), b.input.size());
  (void)models::ops::run_pdp_layer(pdp_model_params(l, atom), golden);
  b.golden = golden.bytes(kDst, dst_bytes);

  return b;
}

// The double reference of one output element (x, y, channel c, possibly a padding lane), and
// whether its window holds a NaN.
struct Ref {
  double value = 0, max_abs = 0;
  bool nan = false, inf = false;
};

Ref reference(const Built& b, unsigned atom, std::uint32_t ox, std::uint32_t oy, std::uint32_t c) {
  const PdpLayer& l = b.layer;
  Ref r;
  double best = 0, sum = 0;
  bool first = true;
  for (unsigned ky = 0; ky < l.kernel_height; ++ky) {
    for (unsigned kx = 0; kx < l.kernel_width; ++kx) {
      const long x = long{ox} * l.stride_x + kx - l.pad_left;
      const long y = long{oy} * l.stride_y + ky - l.pad_top;
      if (x < 0 || y < 0 || x >= long{l.src.width} || y >= long{l.src.height}) continue;
      const std::uint16_t e =
          element(b.input, element_offset(l.src, l.precision, atom, static_cast<std::uint32_t>(x),
                                          static_cast<std::uint32_t>(y), c));
      if (models::fp16_is_nan(e)) {
        r.nan = true;
        continue;
      }
      r.inf = r.inf || models::fp16_is_inf(e);
      const double v = models::decode_float(e, models::kFp16);
      r.max_abs = std::max(r.max_abs, std::fabs(v));
      sum += v;
      if (first || (l.method == PoolMethod::kMax ? v > best : v < best)) best = v;
      first = false;
    }
  }
  r.value = l.method == PoolMethod::kAverage ? sum / (l.kernel_width * l.kernel_height) : best;
  return r;
}

// Checks the golden against the reference; returns D_NAN_OUTPUT_NUM's expected value.
std::uint32_t check_golden(const Built& b, unsigned atom) {
  const PdpLayer& l = b.layer;
  const unsigned lanes = atom / 2;
  const std::uint32_t all_channels = ((l.dst.channels + lanes - 1) / lanes) * lanes;
  std::uint32_t nan_out = 0;
  for (std::uint32_t c = 0; c < all_channels; ++c) {
    for (std::uint32_t oy = 0; oy < l.dst.height; ++oy) {
      for (std::uint32_t ox = 0; ox < l.dst.width; ++ox) {
        const std::uint16_t got =
            element(b.golden, element_offset(l.dst, l.precision, atom, ox, oy, c));
        const Ref r = reference(b, atom, ox, oy, c);
        if (r.nan) {
          EXPECT_TRUE(models::fp16_is_nan(got)) << ox << "," << oy << "," << c;
          ++nan_out;
          continue;
        }
        if (r.inf && l.method == PoolMethod::kAverage) {
          // NVDLA saturates an average with an infinity at +-65504.
          EXPECT_EQ(std::fabs(models::decode_float(got, models::kFp16)), 65504.0);
          continue;
        }
        const std::uint16_t want = models::fp16_from_double(r.value);
        if (l.method != PoolMethod::kAverage) {
          EXPECT_EQ(got, want) << ox << "," << oy << "," << c;
          continue;
        }
        const models::ThresholdResult t = models::check_pdp(got, want, r.max_abs);
        EXPECT_TRUE(t.pass) << ox << "," << oy << "," << c << ": diff " << t.diff << " bound "
                            << t.bound;
      }
    }
  }
  return nan_out;
}

// Builds the case's trace in `dir` (CRC and the three statistics registers).
Built build_trace(const PoolCase& pc, const std::string& dir) {
  const unsigned atom = load_hw_config("nv_full").dla.memory_atomic_size;
  Built b = build(pc);
  b.nan_out = check_golden(b, atom);
  if (pc.specials) {
    EXPECT_GT(b.nan_in, 0u);
    EXPECT_GT(b.nan_out, 0u);
  }
  const std::uint64_t dst_bytes = b.golden.size();
  TraceWriter t;
  t.comment("FP16 PDP " + pc.name + " (nv_full)");
  t.mem_init_zero(kDst, dst_bytes);
  t.mem_load(kSrc, pc.name + "_input.dat", b.input);
  t.wait_interrupt(program_pdp(t, b.layer, 0, atom));
  t.check_crc(kDst, dst_bytes, models::crc32(b.golden.data(), b.golden.size()));
  t.check_register(regs::PDP::D_NAN_INPUT_NUM::kAddr, b.nan_in);
  t.check_register(regs::PDP::D_INF_INPUT_NUM::kAddr, b.inf_in);
  t.check_register(regs::PDP::D_NAN_OUTPUT_NUM::kAddr, b.nan_out);
  b.cfg = t.save(dir, "pdp_fp16.cfg");
  return b;
}

class PdpFp16EndToEnd : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PdpFp16EndToEnd, FunctionalDeviceMatchesTheModel) {
  const test::TempDir tmp("pdp_fp16_" + GetParam().name + "-f");
  const std::string dir = tmp.str();
  const Built b = build_trace(GetParam(), dir);
  dla::FunctionalDevice dev(load_hw_config("nv_full"));
  const trace::PlayResult r = trace::play(trace::parse_trace_file(b.cfg), dev, {});
  ASSERT_EQ(r.checks.size(), 4u);
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.pass) << "line " << c.line << ": " << c.description << ": " << c.detail;
  }
}

TEST_P(PdpFp16EndToEnd, CycleLevelDeviceMatchesTheModel) {
  const test::TempDir tmp("pdp_fp16_" + GetParam().name + "-c");
  const std::string dir = tmp.str();
  const Built b = build_trace(GetParam(), dir);
  std::string out;
  const int rc = test::run_octasim("run " + b.cfg + " --config nv_full", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("checks: 4 passed, 0 failed"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Cases, PdpFp16EndToEnd, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PoolCase>& p) { return p.param.name; });

// nv_small has no FP16: the same trace is refused with NVDLA's "not present" error.
TEST(PdpFp16EndToEndRefusal, NvSmallRefusesFp16Pooling) {
  const test::TempDir tmp("pdp_fp16_nv-small");
  const std::string dir = tmp.str();
  const Built b = build_trace(cases()[0], dir);
  std::string out;
  const int rc = test::run_octasim("run " + b.cfg + " --functional", &out);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("PDP FP16 is not present in this configuration (nv_small)"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace octasim::firmware
