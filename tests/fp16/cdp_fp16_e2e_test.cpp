// FP16 LRN layers end to end on nv_full: programmed by firmware/dla/cdp (Precision::kFp16, the
// LUT from make_lrn_lut), recorded as NVDLA traces whose golden CRCs come from models/
// (run_cdp_layer over cdp_model_params, never the simulator), whose NaN/inf statistics and LUT
// statistics are counted here from the data; played on the functional device in this process
// and by `octasim run --config nv_full` on the cycle-level device. The golden itself is checked
// against a double-precision LRN computed here: within 1e-3 relative plus 2^-24 absolute.

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/cdp.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "models/numerics/float_format.hpp"
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

struct LrnCase {
  std::string name;
  std::uint32_t width = 5, height = 5, channels = 5;
  LrnParams lrn;
  double scale = 1.0;     // inputs scale * N(0, 1)
  bool specials = false;  // plant NaNs and infinities
  bool nan_to_zero = false;
};

void PrintTo(const LrnCase& c, std::ostream* os) {
  *os << c.name;
}

LrnParams lrn(unsigned size, double alpha, double beta, double bias) {
  LrnParams p;
  p.local_size = size;
  p.alpha = alpha;
  p.beta = beta;
  p.k = bias;
  return p;
}

std::vector<LrnCase> cases() {
  std::vector<LrnCase> v;
  // ONNX's test_lrn_default (size 3, alpha 1e-4, beta 0.75, bias 1) on a 5x5x5 cube.
  v.push_back({"lrn3_5x5x5", 5, 5, 5, lrn(3, 1e-4, 0.75, 1.0), 1.0, false, false});
  // ONNX's test_lrn (alpha 2e-4, beta 0.5, bias 2).
  v.push_back({"lrn3_onnx_5x5x5", 5, 5, 5, lrn(3, 2e-4, 0.5, 2.0), 1.0, false, false});
  // Size 5 over 24 channels (two surfaces of 16 lanes), larger inputs, AlexNet-like alpha.
  v.push_back({"lrn5_7x6x24", 7, 6, 24, lrn(5, 1e-3, 0.75, 2.0), 3.0, false, false});
  // Size 9 with a strong alpha (the LUT's curvature matters), 20 channels.
  v.push_back({"lrn9_4x3x20", 4, 3, 20, lrn(9, 0.05, 0.75, 1.0), 2.0, false, false});
  v.push_back({"lrn5_specials", 6, 4, 18, lrn(5, 1e-4, 0.75, 1.0), 1.0, true, false});
  v.push_back({"lrn5_specials_flush", 6, 4, 18, lrn(5, 1e-4, 0.75, 1.0), 1.0, true, true});
  return v;
}

struct Built {
  CdpLayer layer;
  std::vector<std::uint8_t> input, golden;
  std::uint32_t nan_in = 0, inf_in = 0, nan_out = 0, uflow = 0, lo_hit = 0, oflow = 0;
  std::string cfg;
};

std::uint16_t element(const std::vector<std::uint8_t>& bytes, std::uint64_t offset) {
  return static_cast<std::uint16_t>(bytes[offset] | bytes[offset + 1] << 8);
}
void put(std::vector<std::uint8_t>& bytes, std::uint64_t offset, std::uint16_t e) {
  bytes[offset] = static_cast<std::uint8_t>(e);
  bytes[offset + 1] = static_cast<std::uint8_t>(e >> 8);
}

Built build(const LrnCase& lc) {
  const unsigned atom = load_hw_config("nv_full").dla.memory_atomic_size;
  Built b;
  CdpLayer& l = b.layer;
  l.precision = Precision::kFp16;
  l.src = packed_surface(kSrc, lc.width, lc.height, lc.channels, atom);
  l.dst = packed_surface(kDst, lc.width, lc.height, lc.channels, atom);
  l.local_size = lc.lrn.local_size;
  l.nan_to_zero = lc.nan_to_zero;
  const LrnLut lut = make_lrn_lut(lc.lrn, Precision::kFp16);
  l.lut = lut.config;
  l.lut_tables = lut.tables;

  // Every lane of every atom gets data; lanes beyond the channels must not matter.
  std::mt19937 rng(static_cast<std::uint32_t>(std::hash<std::string>{}(lc.name) & 0xffffffffu));
  std::normal_distribution<double> d(0.0, lc.scale);
  b.input.resize(surface_bytes(l.src, l.precision, atom));
  for (std::size_t i = 0; i + 1 < b.input.size(); i += 2) {
    put(b.input, i, models::fp16_from_double(d(rng)));
  }
  if (lc.specials) {
    put(b.input, element_offset(l.src, l.precision, atom, 0, 0, 0), 0x7e00);
    put(b.input, element_offset(l.src, l.precision, atom, 3, 2, 9), 0xfe01);
    put(b.input, element_offset(l.src, l.precision, atom, 5, 3, 17), 0x7c00);
    put(b.input, element_offset(l.src, l.precision, atom, 2, 1, 4), 0xfc00);
  }
  for (std::uint64_t off = 0; off < b.input.size(); off += 2) {
    b.nan_in += models::fp16_is_nan(element(b.input, off)) ? 1 : 0;
    b.inf_in += models::fp16_is_inf(element(b.input, off)) ? 1 : 0;
  }

  HostMemory golden;
  golden.write(kSrc, b.input.data(), b.input.size());
  (void)models::ops::run_cdp_layer(cdp_model_params(l, atom), l.lut_tables, golden);
  b.golden = golden.bytes(kDst, surface_bytes(l.dst, l.precision, atom));
  return b;
}

// Checks every output lane of the golden against a double LRN (NaN/inf windows by their rule)
// and counts the statistics the device must report.
void check_golden(Built& b, const LrnCase& lc, unsigned atom) {
  const CdpLayer& l = b.layer;
  const unsigned lanes_per_atom = atom / 2;
  const std::uint32_t lanes =
      (l.src.channels + lanes_per_atom - 1) / lanes_per_atom * lanes_per_atom;
  const double lo_end = models::lut_fp32_register(l.lut.lo_end);
  const long half = static_cast<long>(l.local_size / 2);
  for (std::uint32_t y = 0; y < l.src.height; ++y) {
    for (std::uint32_t x = 0; x < l.src.width; ++x) {
      // The pixel's lanes as the hardware sees them: +0 beyond the cube, NaN flushed if asked.
      std::vector<std::uint16_t> in(lanes, 0);
      for (std::uint32_t c = 0; c < l.src.channels; ++c) {
        in[c] = element(b.input, element_offset(l.src, l.precision, atom, x, y, c));
        if (lc.nan_to_zero && models::fp16_is_nan(in[c])) in[c] = 0;
      }
      for (std::uint32_t c = 0; c < lanes; ++c) {
        const std::uint16_t got16 =
            element(b.golden, element_offset(l.dst, l.precision, atom, x, y, c));
        bool nan = false, inf = false, all_zero = true;
        double sum = 0;
        for (long j = static_cast<long>(c) - half; j <= static_cast<long>(c) + half; ++j) {
          if (j < 0 || j >= static_cast<long>(lanes)) continue;
          const std::uint16_t e = in[static_cast<std::size_t>(j)];
          nan = nan || models::fp16_is_nan(e);
          inf = inf || models::fp16_is_inf(e);
          const double v = models::decode_float(e, models::kFp16);
          all_zero = all_zero && v == 0;
          if (!models::fp16_is_nan(e)) sum += v * v;
        }
        const double xc = models::decode_float(in[c], models::kFp16);
        if (models::fp16_is_nan(in[c])) {
          EXPECT_TRUE(models::fp16_is_nan(got16)) << x << "," << y << "," << c;
        }
        b.nan_out += models::fp16_is_nan(got16) ? 1 : 0;
        // A NaN window sums to NaN (both tables underflow), an infinite one to infinity (both
        // overflow); their values follow the unit tests' rules.
        if (nan || inf) {
          b.oflow += !nan ? 1 : 0;
          continue;
        }
        // Statistics: an all-zero window underflows both tables, every other one is below the
        // LO table's end here (inputs of a few units) and hits LO only.
        ASSERT_LT(sum, lo_end);
        (all_zero ? b.uflow : b.lo_hit) += 1;
        const double want =
            xc / std::pow(lc.lrn.k + lc.lrn.alpha / l.local_size * sum, lc.lrn.beta);
        const double got = models::decode_float(got16, models::kFp16);
        EXPECT_LE(std::fabs(got - want), 1e-3 * std::fabs(want) + std::ldexp(1.0, -24))
            << x << "," << y << "," << c << ": got " << got << " want " << want;
      }
    }
  }
}

constexpr std::size_t kChecks = 6;

Built build_trace(const LrnCase& lc, const std::string& dir) {
  const unsigned atom = load_hw_config("nv_full").dla.memory_atomic_size;
  Built b = build(lc);
  check_golden(b, lc, atom);
  if (lc.specials) {
    EXPECT_EQ(b.nan_in, 2u);
    EXPECT_EQ(b.inf_in, 2u);
    EXPECT_GT(b.nan_out, 0u);
    EXPECT_GT(b.oflow, 0u);
  }
  const std::uint64_t dst_bytes = b.golden.size();
  TraceWriter t;
  t.comment("FP16 LRN " + lc.name + " (nv_full)");
  t.mem_init_zero(kDst, dst_bytes);
  t.mem_load(kSrc, lc.name + "_input.dat", b.input);
  t.wait_interrupt(program_cdp(t, b.layer, 0, atom));
  t.check_crc(kDst, dst_bytes, models::crc32(b.golden.data(), b.golden.size()));
  t.check_register(regs::CDP::D_NAN_INPUT_NUM::kAddr, b.nan_in);
  t.check_register(regs::CDP::D_INF_INPUT_NUM::kAddr, b.inf_in);
  t.check_register(regs::CDP::D_NAN_OUTPUT_NUM::kAddr, b.nan_out);
  if (lc.specials) {
    t.check_register(regs::CDP::D_OUT_SATURATION::kAddr, 0);
    t.check_register(regs::CDP::D_PERF_LUT_OFLOW::kAddr, b.oflow);
  } else {
    t.check_register(regs::CDP::D_PERF_LUT_UFLOW::kAddr, b.uflow);
    t.check_register(regs::CDP::D_PERF_LUT_LO_HIT::kAddr, b.lo_hit);
  }
  b.cfg = t.save(dir, "cdp_fp16.cfg");
  return b;
}

class CdpFp16EndToEnd : public ::testing::TestWithParam<LrnCase> {};

TEST_P(CdpFp16EndToEnd, FunctionalDeviceMatchesTheModel) {
  const test::TempDir tmp("cdp_fp16_" + GetParam().name + "-f");
  const std::string dir = tmp.str();
  const Built b = build_trace(GetParam(), dir);
  dla::FunctionalDevice dev(load_hw_config("nv_full"));
  const trace::PlayResult r = trace::play(trace::parse_trace_file(b.cfg), dev, {});
  ASSERT_EQ(r.checks.size(), kChecks);
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.pass) << "line " << c.line << ": " << c.description << ": " << c.detail;
  }
}

TEST_P(CdpFp16EndToEnd, CycleLevelDeviceMatchesTheModel) {
  const test::TempDir tmp("cdp_fp16_" + GetParam().name + "-c");
  const std::string dir = tmp.str();
  const Built b = build_trace(GetParam(), dir);
  std::string out;
  const int rc = test::run_octasim("run " + b.cfg + " --config nv_full", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("checks: 6 passed, 0 failed"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Cases, CdpFp16EndToEnd, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<LrnCase>& p) { return p.param.name; });

// nv_small has no FP16: the same trace is refused with NVDLA's "not present" error.
TEST(CdpFp16EndToEndRefusal, NvSmallRefusesFp16Lrn) {
  const test::TempDir tmp("cdp_fp16_nv-small");
  const std::string dir = tmp.str();
  const Built b = build_trace(cases()[0], dir);
  std::string out;
  const int rc = test::run_octasim("run " + b.cfg + " --functional", &out);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("CDP FP16 is not present in this configuration (nv_small)"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace octasim::firmware
