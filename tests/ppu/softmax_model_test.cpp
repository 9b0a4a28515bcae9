// models/ops/softmax: the line arithmetic against a double-precision softmax of the same FP16
// inputs (every output within 1 FP16 ulp plus the smallest subnormal; the FP32 quotients within
// a few FP32 ulps), hand-worked cases (uniform lines give 1/n, large inputs do not overflow,
// NaN and infinity as the header states), and whole surfaces in NVDLA's feature layout (each
// line gathered here from format.rst's address formula, padding lanes +0, stride gaps kept, in
// place) and the layout errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "firmware/ppu/commands.hpp"
#include "models/numerics/float_format.hpp"
#include "models/ops/softmax.hpp"
#include "tests/models/vec_memory.hpp"

namespace octasim::models::ops {
namespace {

std::vector<double> softmax_double(const std::vector<std::uint16_t>& x) {
  double m = -INFINITY;
  for (std::uint16_t h : x) m = std::max(m, static_cast<double>(fp16_to_float(h)));
  std::vector<double> e(x.size());
  double s = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    e[i] = std::exp(static_cast<double>(fp16_to_float(x[i])) - m);
    s += e[i];
  }
  for (double& v : e) v /= s;
  return e;
}

// One FP16 ulp at the magnitude of v (subnormals: 2^-24).
double fp16_ulp(double v) {
  const double a = std::fabs(v);
  if (a < std::ldexp(1.0, -14)) return std::ldexp(1.0, -24);
  return std::ldexp(1.0, std::ilogb(a) - 10);
}

std::vector<std::uint16_t> run_line(const std::vector<std::uint16_t>& x) {
  std::vector<std::uint16_t> y(x.size(), 0xdead);
  std::vector<float> scratch;
  softmax_line_fp16(x.data(), x.size(), y.data(), scratch);
  return y;
}

std::uint16_t h(double v) {
  return fp16_from_double(v);
}

TEST(SoftmaxLine, RandomLinesWithinOneFp16UlpOfDoubleSoftmax) {
  std::mt19937 rng(2024);
  const double ranges[] = {1.0, 8.0, 30.0, 1000.0, 65504.0};
  int lines = 0;
  for (double range : ranges) {
    for (int rep = 0; rep < 40; ++rep) {
      const std::size_t n = 1 + rng() % (rep % 4 == 0 ? 2000 : 64);
      std::uniform_real_distribution<double> u(-range, range);
      std::vector<std::uint16_t> x(n);
      for (auto& v : x) v = h(u(rng));
      const auto want = softmax_double(x);
      const auto got = run_line(x);
      std::vector<float> v(n), q(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = fp16_to_float(x[i]);
      softmax_line_fp32(v.data(), n, q.data());
      float m = v[0];
      for (float f : v) m = std::max(m, f);
      for (std::size_t i = 0; i < n; ++i) {
        SCOPED_TRACE(::testing::Message() << "range " << range << " n " << n << " i " << i);
        ASSERT_EQ(got[i] & 0x8000u, 0u) << "negative output";
        const double y = fp16_to_float(got[i]);
        ASSERT_LE(std::fabs(y - want[i]), fp16_ulp(want[i]) + std::ldexp(1.0, -24))
            << "got " << y << " want " << want[i];
        // Before the FP16 rounding: a few FP32 ulps (relative), the sum's n among them.
        const double d = std::fabs(static_cast<double>(v[i]) - static_cast<double>(m));
        const double bound =
            (2.0 * d + 2.0 * n + 8.0) * std::ldexp(1.0, -24) * want[i] + std::ldexp(1.0, -148);
        ASSERT_LE(std::fabs(static_cast<double>(q[i]) - want[i]), bound) << q[i];
        ASSERT_EQ(got[i], fp16_from_float(q[i])) << "the FP16 output is q rounded once";
      }
      ++lines;
    }
  }
  EXPECT_EQ(lines, 200);
}

TEST(SoftmaxLine, UniformLinesGiveOneOverN) {
  // Hand-worked FP16 patterns: 1, 1/2, 1/3 = 1.0101..b x 2^-2 -> 0x3555, 1/4, 1/10 -> 0x2e66.
  const std::pair<std::size_t, std::uint16_t> known[] = {
      {1, 0x3c00}, {2, 0x3800}, {3, 0x3555}, {4, 0x3400}, {10, 0x2e66}};
  for (const double c : {0.0, -3.5, 65504.0, -65504.0, 1e-7}) {
    for (const auto& [n, want] : known) {
      const auto y = run_line(std::vector<std::uint16_t>(n, h(c)));
      for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(y[i], want) << "c " << c << " n " << n;
    }
    for (const std::size_t n : {7u, 100u, 1000u, 8192u}) {
      const auto y = run_line(std::vector<std::uint16_t>(n, h(c)));
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(y[i], fp16_from_double(1.0 / static_cast<double>(n))) << "c " << c << " n " << n;
      }
    }
  }
}

TEST(SoftmaxLine, LargeInputsDoNotOverflow) {
  // 10000, 10001, 10002 are not FP16 values (the spacing at 2^13 is 8): all three encode as
  // 10000, so the line is uniform.
  EXPECT_EQ(h(10001.0), h(10000.0));
  EXPECT_EQ(h(10002.0), h(10000.0));
  EXPECT_EQ(run_line({h(10000.0), h(10001.0), h(10002.0)}),
            (std::vector<std::uint16_t>{0x3555, 0x3555, 0x3555}));
  // 10000, 10008, 10016: softmax of -16, -8, 0 (exp(10016) alone would overflow FP32).
  const std::vector<std::uint16_t> x = {h(10000.0), h(10008.0), h(10016.0)};
  const double s = std::exp(-16.0) + std::exp(-8.0) + 1.0;
  const double want[] = {std::exp(-16.0) / s, std::exp(-8.0) / s, 1.0 / s};
  const auto y = run_line(x);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(fp16_is_nan(y[i]) || fp16_is_inf(y[i])) << i;
    EXPECT_LE(std::fabs(static_cast<double>(fp16_to_float(y[i])) - want[i]), fp16_ulp(want[i]))
        << i;
  }
  // 1/s = 0.99966..: the FP16 neighbours are 0.99951 (0x3bff) and 1.0; nearest is 0x3bff.
  EXPECT_EQ(y[2], 0x3bffu);
  // The largest FP16 magnitudes on both sides: exp(-131008) is +0 in FP32.
  EXPECT_EQ(run_line({h(-65504.0), h(65504.0)}), (std::vector<std::uint16_t>{0x0000, 0x3c00}));
  EXPECT_EQ(run_line({h(65504.0), h(65504.0), h(65472.0)})[0],
            fp16_from_double(1.0 / (2.0 + std::exp(-32.0))));
}

TEST(SoftmaxLine, NanAndInfinity) {
  const std::uint16_t nan = 0x7e00, neg_nan = 0xfe01, inf = 0x7c00, ninf = 0xfc00;
  const std::vector<std::uint16_t> all_nan3(3, kSoftmaxNan);
  EXPECT_EQ(run_line({h(1.0), nan, h(2.0)}), all_nan3);
  EXPECT_EQ(run_line({neg_nan, h(1.0), h(2.0)}), all_nan3) << "NaN outputs are 0x7e00";
  EXPECT_EQ(run_line({h(1.0), inf, h(2.0)}), all_nan3) << "+Inf - +Inf is NaN";
  EXPECT_EQ(run_line({ninf, h(0.0), h(0.0)}), (std::vector<std::uint16_t>{0x0000, 0x3800, 0x3800}));
  EXPECT_EQ(run_line({ninf, ninf}), (std::vector<std::uint16_t>{kSoftmaxNan, kSoftmaxNan}));
  EXPECT_EQ(run_line({inf}), (std::vector<std::uint16_t>{kSoftmaxNan}));
  EXPECT_EQ(run_line({h(-7.25)}), (std::vector<std::uint16_t>{0x3c00}));
  EXPECT_EQ(run_line({0x8000, 0x0000}), (std::vector<std::uint16_t>{0x3800, 0x3800})) << "-0, +0";
  // Far below the maximum: exp underflows; outputs +0 (never -0), and FP16 subnormals near 2^-24.
  const auto y = run_line({h(0.0), h(-20.0), h(-12.0)});
  EXPECT_EQ(y[1], 0x0000u);  // e^-20 ~ 2.1e-9 is below half of 2^-24
  EXPECT_EQ(y[2], fp16_from_double(std::exp(-12.0) / (1.0 + std::exp(-20.0) + std::exp(-12.0))));
  EXPECT_LT(y[2], 0x0400u) << "a subnormal";
  EXPECT_GT(y[2], 0x0000u);
}

// ---- Surfaces -------------------------------------------------------------------------------
struct Layout {
  SoftmaxShape shape;
  SoftmaxSurface in, out;
};

// Element (w, h, c) per format.rst: surface c / C', line h, atom w, lane c % C'.
std::uint64_t address_of(const Layout& l, const SoftmaxSurface& s, std::uint32_t w,
                         std::uint32_t hh, std::uint32_t c) {
  const unsigned lanes = l.shape.atom_bytes / 2;
  return s.address + std::uint64_t{c / lanes} * s.surface_stride +
         std::uint64_t{hh} * s.line_stride + std::uint64_t{w} * l.shape.atom_bytes +
         (c % lanes) * 2;
}

std::uint16_t read16(const test::VecMemory& m, std::uint64_t a) {
  return static_cast<std::uint16_t>(m.byte(a) | m.byte(a + 1) << 8);
}
void write16(test::VecMemory& m, std::uint64_t a, std::uint16_t v) {
  const std::uint8_t b[2] = {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8)};
  m.write(a, b, 2);
}

// A surface with stride gaps (sentinel 0xab) and the last surface's padding lanes full of NaN
// bit patterns: neither may enter a line.
void fill(const Layout& l, test::VecMemory& mem, std::mt19937& rng) {
  const std::uint64_t in_bytes = softmax_surface_bytes(l.shape, l.in);
  std::vector<std::uint8_t> junk(in_bytes, 0xab);
  mem.write(l.in.address, junk.data(), junk.size());
  const std::uint64_t out_bytes = softmax_surface_bytes(l.shape, l.out);
  std::vector<std::uint8_t> junk_out(out_bytes, 0xcd);
  mem.write(l.out.address, junk_out.data(), junk_out.size());
  const unsigned lanes = l.shape.atom_bytes / 2;
  const std::uint32_t all_c = l.shape.surfaces() * lanes;
  std::uniform_real_distribution<double> u(-6.0, 6.0);
  for (std::uint32_t c = 0; c < all_c; ++c) {
    for (std::uint32_t y = 0; y < l.shape.height; ++y) {
      for (std::uint32_t x = 0; x < l.shape.width; ++x) {
        write16(mem, address_of(l, l.in, x, y, c), c < l.shape.channels ? h(u(rng)) : 0x7fff);
      }
    }
  }
}

// Checks the output of run_softmax: every line equals softmax_line_fp16 of the line gathered
// here and is within 1 FP16 ulp of the double softmax; padding lanes +0; gaps untouched.
void check_surface(const Layout& l, const test::VecMemory& before, const test::VecMemory& after) {
  const SoftmaxShape& s = l.shape;
  const std::uint32_t n = s.axis == SoftmaxAxis::kC   ? s.channels
                          : s.axis == SoftmaxAxis::kH ? s.height
                                                      : s.width;
  const std::uint32_t o1 = s.axis == SoftmaxAxis::kC ? s.height : s.channels;
  const std::uint32_t o2 = s.axis == SoftmaxAxis::kW ? s.height : s.width;
  std::vector<bool> touched(softmax_surface_bytes(s, l.out), false);
  for (std::uint32_t a = 0; a < o1; ++a) {
    for (std::uint32_t b = 0; b < o2; ++b) {
      std::vector<std::uint64_t> in_at(n), out_at(n);
      std::vector<std::uint16_t> x(n);
      for (std::uint32_t i = 0; i < n; ++i) {
        std::uint32_t w = 0, hh = 0, c = 0;
        if (s.axis == SoftmaxAxis::kC) hh = a, w = b, c = i;
        if (s.axis == SoftmaxAxis::kH) c = a, w = b, hh = i;
        if (s.axis == SoftmaxAxis::kW) c = a, hh = b, w = i;
        in_at[i] = address_of(l, l.in, w, hh, c);
        out_at[i] = address_of(l, l.out, w, hh, c);
        x[i] = read16(before, in_at[i]);
      }
      const auto want = run_line(x);
      const auto exact = softmax_double(x);
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint16_t got = read16(after, out_at[i]);
        ASSERT_EQ(got, want[i]) << "line " << a << "," << b << " element " << i;
        ASSERT_LE(std::fabs(static_cast<double>(fp16_to_float(got)) - exact[i]),
                  fp16_ulp(exact[i]) + 0x1p-24);
        touched[out_at[i] - l.out.address] = touched[out_at[i] - l.out.address + 1] = true;
      }
    }
  }
  // Padding lanes of the last surface: +0.
  const unsigned lanes = s.atom_bytes / 2;
  for (std::uint32_t c = s.channels; c < s.surfaces() * lanes; ++c) {
    for (std::uint32_t y = 0; y < s.height; ++y) {
      for (std::uint32_t x = 0; x < s.width; ++x) {
        const std::uint64_t at = address_of(l, l.out, x, y, c);
        ASSERT_EQ(read16(after, at), 0u) << "padding lane " << c;
        touched[at - l.out.address] = touched[at - l.out.address + 1] = true;
      }
    }
  }
  // Everything else in the output's span (stride gaps) is what it was.
  for (std::size_t i = 0; i < touched.size(); ++i) {
    if (!touched[i]) {
      ASSERT_EQ(after.byte(l.out.address + i), before.byte(l.out.address + i)) << i;
    }
  }
}

TEST(SoftmaxSurface, EveryAxisWithGapsAndPaddingLanes) {
  std::mt19937 rng(11);
  for (const unsigned atom : {8u, 32u}) {
    for (const auto axis : {SoftmaxAxis::kC, SoftmaxAxis::kH, SoftmaxAxis::kW}) {
      Layout l;
      l.shape = {5, 4, atom == 8 ? 10u : 37u, atom, axis};  // last surface partial
      const std::uint32_t line = 5 * atom;
      l.in = {0x1000, line + atom, (line + atom) * 4 + 2 * atom};
      l.out = {0x40000, line + 2 * atom, (line + 2 * atom) * 4 + atom};
      SCOPED_TRACE(::testing::Message()
                   << "atom " << atom << " axis " << static_cast<unsigned>(axis));
      ASSERT_EQ(softmax_layout_error(l.shape, l.in, l.out), "");
      test::VecMemory mem(0x80000);
      fill(l, mem, rng);
      test::VecMemory before(0x80000);
      std::vector<std::uint8_t> all(0x80000);
      mem.read(0, all.data(), all.size());
      before.write(0, all.data(), all.size());
      run_softmax(l.shape, l.in, l.out, mem);
      check_surface(l, before, mem);
      // Lines count: W*H for C, C*W for H, C*H for W.
      EXPECT_EQ(l.shape.lines(), axis == SoftmaxAxis::kC   ? 20u
                                 : axis == SoftmaxAxis::kH ? 5u * l.shape.channels
                                                           : 4u * l.shape.channels);
    }
  }
}

TEST(SoftmaxSurface, InPlaceEqualsOutOfPlace) {
  std::mt19937 rng(12);
  Layout l;
  l.shape = {6, 3, 13, 8, SoftmaxAxis::kC};
  l.in = {0x2000, 6 * 8 + 16, (6 * 8 + 16) * 3};
  l.out = {0x20000, 6 * 8 + 16, (6 * 8 + 16) * 3};
  test::VecMemory a(0x40000);
  fill(l, a, rng);
  std::vector<std::uint8_t> all(0x40000);
  a.read(0, all.data(), all.size());
  test::VecMemory b(0x40000);
  b.write(0, all.data(), all.size());
  run_softmax(l.shape, l.in, l.out, a);
  Layout in_place = l;
  in_place.out = l.in;
  run_softmax(in_place.shape, in_place.in, in_place.out, b);
  // The atoms (the gaps of the two regions hold different junk).
  for (std::uint32_t c = 0; c < l.shape.surfaces() * 4; ++c) {
    for (std::uint32_t y = 0; y < l.shape.height; ++y) {
      for (std::uint32_t x = 0; x < l.shape.width; ++x) {
        ASSERT_EQ(read16(b, address_of(l, l.in, x, y, c)), read16(a, address_of(l, l.out, x, y, c)))
            << x << "," << y << "," << c;
      }
    }
  }
}

TEST(SoftmaxSurface, LayoutErrorsNameTheProblem) {
  const SoftmaxShape ok{4, 2, 6, 8, SoftmaxAxis::kC};
  const SoftmaxSurface packed{0x100, 32, 64};
  EXPECT_EQ(softmax_layout_error(ok, packed, packed), "");
  struct Case {
    SoftmaxShape shape;
    SoftmaxSurface in, out;
    const char* expect;
  };
  const Case cases[] = {
      {{4, 2, 6, 8, static_cast<SoftmaxAxis>(3)}, packed, packed, "axis 3"},
      {{4, 2, 6, 6, SoftmaxAxis::kC}, packed, packed, "atom of 6 bytes"},
      {{4, 2, 6, 256, SoftmaxAxis::kC}, packed, packed, "atom of 256 bytes"},
      {{0, 2, 6, 8, SoftmaxAxis::kC}, packed, packed, "width 0"},
      {{4, 8193, 6, 8, SoftmaxAxis::kC}, packed, packed, "height 8193"},
      {{4, 2, 0, 8, SoftmaxAxis::kC}, packed, packed, "channels 0"},
      {ok, {0x104, 32, 64}, packed, "input: address 260 is not a multiple"},
      {ok, packed, {0x100, 36, 72}, "output: strides 36 / 72"},
      {ok, {0x100, 24, 64}, packed, "input: line stride 24 is below one line of 32"},
      {ok, packed, {0x100, 32, 56}, "output: surface stride 56 is below one surface of 64"},
      {{8192, 8192, 8, 8, SoftmaxAxis::kC}, {0, 65536, 65536 * 8192}, packed, "more than 2^28"},
      {ok, {~std::uint64_t{0} - 63, 32, 64}, packed, "past the end"},
  };
  for (const Case& c : cases) {
    const std::string why = softmax_layout_error(c.shape, c.in, c.out);
    EXPECT_NE(why.find(c.expect), std::string::npos) << "got '" << why << "' want " << c.expect;
    test::VecMemory mem(16);
    EXPECT_THROW(run_softmax(c.shape, c.in, c.out, mem), std::invalid_argument) << c.expect;
  }
  // One line or one surface: the unused stride is not checked against the line.
  EXPECT_EQ(softmax_layout_error({4, 1, 4, 8, SoftmaxAxis::kW}, {0, 0, 0}, {64, 0, 0}), "");
}

// The descriptor layout the firmware helper fills (the PPU decodes the same words: the device
// tests run descriptors built by it).
TEST(SoftmaxDescriptor, WordsAsDocumented) {
  namespace F = ppu_format;
  const F::Descriptor d =
      F::softmax_descriptor({0x1'2345'6780, 0x340, 0x1a00}, {0x9'8765'4300, 0x360, 0x1c00}, 13, 8,
                            37, 32, F::SoftmaxAxis::kW);
  std::vector<std::uint32_t> want(32, 0);
  want[0] = 5;  // kSoftmax
  want[1] = 2;  // FP16 in NVDLA's precision encoding
  want[2] = 2;  // axis W
  want[3] = 13, want[4] = 8, want[5] = 37, want[6] = 32;
  want[8] = 0x23456780, want[9] = 0x1, want[10] = 0x340, want[11] = 0x1a00;
  want[12] = 0x87654300, want[13] = 0x9, want[14] = 0x360, want[15] = 0x1c00;
  EXPECT_EQ(d.words, want);
  EXPECT_EQ(static_cast<std::uint32_t>(F::SoftmaxAxis::kC),
            static_cast<std::uint32_t>(SoftmaxAxis::kC));
  EXPECT_EQ(static_cast<std::uint32_t>(F::SoftmaxAxis::kH),
            static_cast<std::uint32_t>(SoftmaxAxis::kH));
  EXPECT_EQ(static_cast<std::uint32_t>(F::SoftmaxAxis::kW),
            static_cast<std::uint32_t>(SoftmaxAxis::kW));
}

}  // namespace
}  // namespace octasim::models::ops
