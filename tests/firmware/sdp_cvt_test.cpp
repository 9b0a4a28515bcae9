// SDP precision-conversion layers on nv_full, programmed by firmware/dla/sdp (SdpLayer::
// out_precision) and firmware/dla/sdp_quantize: QuantizeLinear (FP16 -> INT16, per tensor and per
// channel) and DequantizeLinear (INT16 -> FP16 through the output convertor, per tensor and per
// channel with a BS bias/multiplier table). Each layer's golden comes from models/
// (sdp_model_config + run_sdp_layer) and must equal, bit for bit, a reference computed here
// independently (float arithmetic for NVDLA's FP32 units, integer arithmetic for the INT32 ones);
// QuantizeLinear codes must also equal ONNX's (round half to even of x / s) away from ties. The
// functional device (in-process) and the cycle-level device (`octasim run --config nv_full`)
// reproduce the golden and the D_PERF_OUT_SATURATION count; nv_small refuses the traces.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/sdp.hpp"
#include "firmware/dla/sdp_quantize.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
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

using octasim::test::run_octasim;
using octasim::test::TempDir;

constexpr unsigned kAtom = 32;  // nv_full
constexpr std::uint64_t kSrc = 0x80000000, kBsTable = 0x80100000, kZpTable = 0x80110000,
                        kDst = 0x80400000;

std::uint16_t h16(double v) {
  return models::fp16_from_double(v);
}
float f16(std::uint16_t h) {
  return static_cast<float>(models::decode_float(h, models::kFp16));
}

enum class Kind { kQuantize, kDequantize };

struct CvtCase {
  std::string name;
  Kind kind = Kind::kQuantize;
  std::uint32_t width = 7, height = 5, channels = 20;
  bool per_channel = false;
  std::int32_t lo = 0, hi = 255;   // quantize: the code range
  double range = 300.0;            // quantize: |x| bound
  std::int32_t zp = 128, mul = 2;  // dequantize per tensor
  unsigned shift = 0;
  std::int32_t q_lo = 0, q_hi = 255;  // dequantize: the input codes
};

void PrintTo(const CvtCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<CvtCase> cases() {
  std::vector<CvtCase> v;
  CvtCase c;
  c.name = "quantize_uint8_s2_zp128";  // ONNX test_quantizelinear's parameters
  v.push_back(c);
  c = CvtCase{};
  c.name = "quantize_int8_per_channel";
  c.per_channel = true;
  c.lo = -128;
  c.hi = 127;
  c.range = 80.0;
  c.width = 6;
  c.height = 4;
  c.channels = 37;
  v.push_back(c);
  c = CvtCase{};
  c.name = "dequantize_uint8_s2_zp128";  // ONNX test_dequantizelinear's parameters
  c.kind = Kind::kDequantize;
  v.push_back(c);
  c = CvtCase{};
  c.name = "dequantize_int16_m5_shift1_saturating";
  c.kind = Kind::kDequantize;
  c.zp = -7;
  c.mul = 5;  // (q + 7) * 5 / 2 beyond 65535 for q >= 26208: saturates
  c.shift = 1;
  c.q_lo = -32768;
  c.q_hi = 32767;
  c.channels = 33;
  v.push_back(c);
  c = CvtCase{};
  c.name = "dequantize_per_channel_table";
  c.kind = Kind::kDequantize;
  c.per_channel = true;
  c.shift = 2;
  c.q_lo = -128;
  c.q_hi = 127;
  v.push_back(c);
  return v;
}

// Per-channel parameters of a quantize case: scales with exact FP16 inverses, zero points in
// range (negative ones included).
float channel_scale(std::uint32_t c) {
  const float s[] = {0.25f, 0.5f, 2.0f, 1.0f, 0.125f};
  return s[c % 5];
}
float channel_zp(std::uint32_t c, std::int32_t lo, std::int32_t hi) {
  const std::int32_t z[] = {-3, 5, 0, -128, 127, 17, -60};
  return static_cast<float>(std::clamp(z[c % 7], lo, hi));
}
// Per-channel dequantize: zero point and multiplier of channel c.
std::int16_t deq_zp(std::uint32_t c) {
  return static_cast<std::int16_t>(static_cast<int>(c % 9) * 7 - 30);
}
std::int16_t deq_mul(std::uint32_t c) {
  return static_cast<std::int16_t>(static_cast<int>(c % 5) * 13 - 20);
}

struct Built {
  SdpLayer layer;
  std::vector<std::uint16_t> x;  // input elements (FP16 bits or INT16), c-major
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> loads;
  Precision in = Precision::kFp16, out = Precision::kInt16;
};

std::vector<std::uint8_t> image(const std::vector<std::uint16_t>& cube, const FeatureSurface& s,
                                Precision p) {
  std::vector<std::uint8_t> out(surface_bytes(s, p, kAtom), 0);
  for (std::uint32_t c = 0; c < s.channels; ++c) {
    for (std::uint32_t y = 0; y < s.height; ++y) {
      for (std::uint32_t x = 0; x < s.width; ++x) {
        const std::uint16_t v = cube[(std::size_t{c} * s.height + y) * s.width + x];
        const std::uint64_t at = element_offset(s, p, kAtom, x, y, c);
        out[at] = static_cast<std::uint8_t>(v);
        out[at + 1] = static_cast<std::uint8_t>(v >> 8);
      }
    }
  }
  return out;
}

Built build(const CvtCase& sc) {
  Built b;
  SdpLayer& l = b.layer;
  std::mt19937 rng(static_cast<std::uint32_t>(std::hash<std::string>{}(sc.name) & 0xffffffffu));
  const std::size_t n = std::size_t{sc.width} * sc.height * sc.channels;
  b.x.resize(n);
  if (sc.kind == Kind::kQuantize) {
    b.in = Precision::kFp16;
    b.out = Precision::kInt16;
    l.precision = Precision::kFp16;
    l.out_precision = Precision::kInt16;
    std::uniform_real_distribution<double> u(-sc.range, sc.range);
    for (std::size_t i = 0; i < n; ++i) {
      // Every fourth element a tie of x / s (k + 0.5 times the scale), the rest at random.
      const std::uint32_t c = static_cast<std::uint32_t>(i / (std::size_t{sc.width} * sc.height));
      const double s = static_cast<double>(sc.per_channel ? channel_scale(c) : 2.0f);
      b.x[i] = h16(i % 4 == 0 ? (std::floor(u(rng) / s) + 0.5) * s : u(rng));
    }
    if (sc.per_channel) {
      std::vector<float> scale(sc.channels), zp(sc.channels);
      for (std::uint32_t c = 0; c < sc.channels; ++c) {
        scale[c] = channel_scale(c);
        zp[c] = channel_zp(c, sc.lo, sc.hi);
      }
      const SdpQuantizeTables t = sdp_quantize_tables(scale, zp, sc.lo, sc.hi, kAtom);
      b.loads.emplace_back(kBsTable, t.bs);
      b.loads.emplace_back(kZpTable, t.zero_point);
      l.quantize = sdp_quantize_per_channel(kBsTable, kZpTable, sc.lo);
    } else {
      l.quantize = sdp_quantize_per_tensor(2.0f, 128.0f, sc.lo, sc.hi);
    }
  } else {
    b.in = Precision::kInt16;
    b.out = Precision::kFp16;
    std::uniform_int_distribution<std::int32_t> u(sc.q_lo, sc.q_hi);
    for (auto& v : b.x) v = static_cast<std::uint16_t>(static_cast<std::int16_t>(u(rng)));
  }
  l.src = packed_surface(kSrc, sc.width, sc.height, sc.channels, kAtom);
  l.dst = packed_surface(kDst, sc.width, sc.height, sc.channels, kAtom);
  if (sc.kind == Kind::kDequantize) {
    if (sc.per_channel) {
      l = sdp_dequantize_layer(l.src, l.dst, 0, 1, 0);
      std::vector<std::int16_t> alu(sc.channels), mul(sc.channels);
      for (std::uint32_t c = 0; c < sc.channels; ++c) {
        alu[c] = static_cast<std::int16_t>(-deq_zp(c));
        mul[c] = deq_mul(c);
      }
      b.loads.emplace_back(kBsTable, sdp_bias_scale_table(alu, mul, Precision::kInt16, kAtom));
      l.bias_scale = SdpBiasScale{kBsTable, 0, sc.shift};
    } else {
      l = sdp_dequantize_layer(l.src, l.dst, sc.zp, sc.mul, sc.shift);
    }
  }
  b.loads.emplace(b.loads.begin(), kSrc, image(b.x, l.src, b.in));
  return b;
}

// Round half away from zero of v / 2^shift (exact integers).
std::int64_t round_shift(std::int64_t v, unsigned shift) {
  if (shift == 0) return v;
  const std::int64_t half = std::int64_t{1} << (shift - 1);
  return v >= 0 ? (v + half) >> shift : -((-v + half) >> shift);
}

// NVDLA, computed independently: the quantize chain in float (FP32 rounding per operation), the
// dequantize chain in exact integers; then FP16 (nearest even, saturating) and for quantize the
// FP16 value to an integer, halves away from zero.
std::uint16_t reference(const CvtCase& sc, const Built& b, std::size_t i, std::uint32_t c,
                        bool* saturated) {
  *saturated = false;
  if (sc.kind == Kind::kQuantize) {
    const float s = sc.per_channel ? channel_scale(c) : 2.0f;
    const float zp = sc.per_channel ? channel_zp(c, sc.lo, sc.hi) : 128.0f;
    const float hi_x =
        f16(h16((static_cast<double>(sc.hi) - static_cast<double>(zp)) * static_cast<double>(s)));
    float v = std::min(f16(b.x[i]), hi_x) * f16(h16(1.0 / static_cast<double>(s)));
    v = v + zp;
    v = std::max(v, static_cast<float>(sc.lo));
    const double r = std::round(static_cast<double>(f16(h16(static_cast<double>(v)))));
    return static_cast<std::uint16_t>(static_cast<std::int16_t>(r));
  }
  const std::int64_t q = static_cast<std::int16_t>(b.x[i]);
  std::int64_t t = 0;
  if (sc.per_channel) {
    t = round_shift((q - deq_zp(c)) * deq_mul(c), sc.shift);
  } else {
    t = round_shift((q - sc.zp) * sc.mul, sc.shift);
  }
  t = std::clamp<std::int64_t>(t, -65536, 65535);
  const double mag = std::min(std::fabs(static_cast<double>(t)), 65504.0);
  const std::uint16_t y = h16(t < 0 ? -mag : mag);  // no infinity: 65520.. saturate at 65504
  *saturated = (y & 0x7fff) == 0x7bff;
  return y;
}

// ONNX's QuantizeLinear: saturate(round_half_even(x / s) + zp).
std::int32_t onnx_quantize(const CvtCase& sc, float x, std::uint32_t c, double* frac) {
  const double s = static_cast<double>(sc.per_channel ? channel_scale(c) : 2.0f);
  const double zp = static_cast<double>(sc.per_channel ? channel_zp(c, sc.lo, sc.hi) : 128.0f);
  const double v = static_cast<double>(x) / s;
  *frac = v - std::floor(v);
  return static_cast<std::int32_t>(
      std::clamp(std::nearbyint(v) + zp, static_cast<double>(sc.lo), static_cast<double>(sc.hi)));
}

struct Golden {
  std::vector<std::uint8_t> bytes;
  std::uint32_t saturations = 0;  // the models/ counter
};

Golden golden(const Built& b) {
  HostMemory mem;
  for (const auto& [addr, bytes] : b.loads) mem.write(addr, bytes.data(), bytes.size());
  const models::ops::SdpLayerResult r =
      models::ops::run_sdp_layer(sdp_model_config(b.layer, kAtom), mem);
  return {mem.bytes(kDst, static_cast<std::size_t>(surface_bytes(b.layer.dst, b.out, kAtom))),
          r.stats.out_saturation.value()};
}

std::uint16_t element(const std::vector<std::uint8_t>& bytes, std::uint64_t at) {
  return static_cast<std::uint16_t>(bytes[at] | bytes[at + 1] << 8);
}

std::string record(const CvtCase& sc, const Built& b, const Golden& want, const std::string& dir) {
  TraceWriter t;
  t.mem_init_zero(kDst, want.bytes.size());
  int i = 0;
  for (const auto& [addr, bytes] : b.loads) {
    t.mem_load(addr, sc.name + "_in" + std::to_string(i++) + ".dat", bytes);
  }
  t.wait_interrupt(program_sdp(t, b.layer, 0, kAtom));
  t.check_file(kDst, sc.name + "_golden.dat", want.bytes);
  t.check_register(regs::SDP::D_PERF_OUT_SATURATION::kAddr, want.saturations);
  return t.save(dir, sc.name + ".cfg");
}

class SdpCvt : public ::testing::TestWithParam<CvtCase> {};

TEST_P(SdpCvt, GoldenEqualsIndependentReferenceBitForBit) {
  const CvtCase& sc = GetParam();
  const Built b = build(sc);
  const Golden want = golden(b);
  std::uint32_t saturations = 0, ties = 0, onnx_differs = 0;
  for (std::uint32_t c = 0; c < sc.channels; ++c) {
    for (std::uint32_t y = 0; y < sc.height; ++y) {
      for (std::uint32_t x = 0; x < sc.width; ++x) {
        const std::size_t i = (std::size_t{c} * sc.height + y) * sc.width + x;
        bool sat = false;
        const std::uint16_t ref = reference(sc, b, i, c, &sat);
        const std::uint16_t got =
            element(want.bytes, element_offset(b.layer.dst, b.out, kAtom, x, y, c));
        ASSERT_EQ(got, ref) << "x " << x << " y " << y << " c " << c;
        saturations += sat ? 1 : 0;
        if (sc.kind != Kind::kQuantize) continue;
        double frac = 0;
        const std::int32_t onnx = onnx_quantize(sc, f16(b.x[i]), c, &frac);
        const auto q = static_cast<std::int16_t>(got);
        EXPECT_LE(std::abs(q - onnx), 1) << "x " << x << " y " << y << " c " << c;
        if (std::fabs(frac - 0.5) > 0.07) {
          EXPECT_EQ(q, onnx) << "x " << x << " y " << y << " c " << c << " frac " << frac;
        }
        ties += frac == 0.5 ? 1 : 0;
        onnx_differs += q != onnx ? 1 : 0;
      }
    }
  }
  if (sc.kind == Kind::kQuantize) {
    EXPECT_GT(ties, 0u);          // the planted ties are there
    EXPECT_GT(onnx_differs, 0u);  // and some of them round differently from ONNX
  }
  // Padding lanes of the last surface count too (x = 0 there: no saturation in these cases).
  EXPECT_EQ(want.saturations, saturations);
  if (sc.name == "dequantize_int16_m5_shift1_saturating") {
    EXPECT_GT(saturations, 0u);
  }
}

TEST_P(SdpCvt, FunctionalDeviceMatchesGolden) {
  const CvtCase& sc = GetParam();
  const Built b = build(sc);
  TempDir dir("sdp-cvt-f");
  const std::string cfg = record(sc, b, golden(b), dir.path().string());
  dla::FunctionalDevice device(load_hw_config("nv_full"));
  const trace::PlayResult r = trace::play(trace::parse_trace_file(cfg), device, {});
  ASSERT_EQ(r.checks.size(), 2u);
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.pass) << "line " << c.line << ": " << c.description << ": " << c.detail;
  }
}

TEST_P(SdpCvt, CycleLevelDeviceMatchesGolden) {
  const CvtCase& sc = GetParam();
  const Built b = build(sc);
  TempDir dir("sdp-cvt-c");
  const std::string cfg = record(sc, b, golden(b), dir.path().string());
  std::string out;
  ASSERT_EQ(run_octasim("run " + cfg + " --config nv_full", &out), 0) << out;
  EXPECT_NE(out.find("checks: 2 passed, 0 failed"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Cases, SdpCvt, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<CvtCase>& p) { return p.param.name; });

TEST(SdpCvtRefusal, NvSmallRefusesTheConversionTraces) {
  for (const CvtCase& sc : {cases()[0], cases()[2]}) {
    const Built b = build(sc);
    TempDir dir("sdp-cvt-s");
    const std::string cfg = record(sc, b, golden(b), dir.path().string());
    std::string out;
    EXPECT_NE(run_octasim("run " + cfg + " --functional", &out), 0) << out;
    EXPECT_NE(out.find("is not present in this configuration (nv_small)"), std::string::npos)
        << out;
  }
}

TEST(SdpCvtRefusal, FirmwareRefusesWhatNvdlaCannotConvert) {
  const auto error_of = [](const SdpLayer& l) {
    try {
      (void)sdp_model_config(l, kAtom);
    } catch (const FirmwareError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  SdpLayer l;
  l.src = packed_surface(kSrc, 4, 4, 16, kAtom);
  l.dst = packed_surface(kDst, 4, 4, 16, kAtom);
  l.precision = Precision::kInt8;
  l.out_precision = Precision::kFp16;
  EXPECT_EQ(error_of(l),
            "SDP: precision conversion INT8 -> FP16 is not encoded (INT16 -> FP16 and FP16 -> "
            "INT16 only)");
  l.precision = Precision::kFp16;
  l.out_precision = Precision::kInt8;
  EXPECT_NE(error_of(l).find("FP16 -> INT8 is not encoded"), std::string::npos);
  // FP16 -> INT16 has no output convertor.
  l.out_precision = Precision::kInt16;
  l.cvt.scale = 3;
  EXPECT_NE(error_of(l).find("FP16 has no output convertor"), std::string::npos) << error_of(l);
  l.cvt.scale = 1;
  // Quantize owns BS, BN and EW.
  l.quantize = sdp_quantize_per_tensor(2.0f, 128.0f, 0, 255);
  l.relu = true;
  EXPECT_NE(error_of(l).find("SDP quantize: the layer uses BS, BN and EW itself"),
            std::string::npos);
  l.relu = false;
  l.out_precision.reset();
  EXPECT_EQ(error_of(l), "SDP quantize: FP16 -> FP16 layer; FP16 -> INT16 expected");
  // Parameters the FP16 operands cannot carry.
  const auto param_error = [](float s, float zp, std::int32_t lo, std::int32_t hi) {
    try {
      (void)sdp_quantize_per_tensor(s, zp, lo, hi);
    } catch (const FirmwareError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(param_error(0.0f, 0, 0, 255).find("is not a positive number"), std::string::npos);
  EXPECT_NE(param_error(1e-6f, 0, 0, 255).find("is not a normal FP16 number"), std::string::npos);
  EXPECT_NE(param_error(2.0f, 300, 0, 255).find("zero point 300 is not an integer in [0, 255]"),
            std::string::npos);
  EXPECT_NE(param_error(2.0f, 1.5f, 0, 255).find("is not an integer"), std::string::npos);
  EXPECT_NE(param_error(2.0f, 0, -32768, 32767).find("wider than 512 codes"), std::string::npos);
  EXPECT_EQ(param_error(2.0f, -3, -128, 127), "");
}

}  // namespace
}  // namespace octasim::firmware
