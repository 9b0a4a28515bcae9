// The PPU's other kernels against models/: implicit-GEMM convolution bit for bit against
// conv_implicit_gemm_reference (every type, padding, stride, bias), split-precision FP32 GEMM
// equal to models::split_gemm, element-wise and row-reduction kernels against a loop here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "models/ops/split_gemm.hpp"
#include "tests/ppu/ppu_test_util.hpp"

namespace octasim::ppu::test {
namespace {

class PpuConv : public ::testing::TestWithParam<int> {};

TEST_P(PpuConv, BitExactAgainstImplicitGemmReference) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  const auto type = static_cast<GemmType>(GetParam());
  Bench bench(soc_small());
  std::mt19937 rng(77 + GetParam());
  struct Case {
    models::ops::ConvGemmShape s;
    bool bias;
    std::vector<std::uint8_t> in, w, bias_vec;
    std::uint64_t out;
  };
  std::vector<Case> cases;
  auto shape = [](unsigned n, unsigned h, unsigned w, unsigned c, unsigned k, unsigned r,
                  unsigned s, unsigned stride, unsigned pad) {
    models::ops::ConvGemmShape sh;
    sh.n = n, sh.h = h, sh.w = w, sh.c = c, sh.k_out = k, sh.r = r, sh.s = s;
    sh.stride_h = sh.stride_w = stride;
    sh.pad_h = sh.pad_w = pad;
    return sh;
  };
  const models::ops::ConvGemmShape shapes[] = {
      shape(1, 9, 7, 5, 11, 3, 3, 1, 1),    // odd sizes, padding: M 63, K 45
      shape(2, 8, 8, 16, 32, 3, 3, 2, 1),   // stride 2, batch 2
      shape(1, 6, 5, 3, 4, 1, 1, 1, 0),     // 1x1
      shape(1, 12, 10, 8, 24, 5, 3, 1, 2),  // rectangular kernel, wide padding
  };
  F::PushBuffer pb;
  int i = 0;
  for (const auto& s : shapes) {
    Case c{s, i % 2 == 0, {}, {}, {}, 0};
    c.in = random_input(type, std::size_t{s.n} * s.h * s.w * s.c, rng);
    c.w = random_input(type, std::size_t{s.k_out} * s.r * s.s * s.c, rng);
    if (c.bias) c.bias_vec = random_acc(type, s.k_out, rng);
    namespace C = F::conv;
    F::Descriptor d;
    d.set(C::kKind, static_cast<std::uint32_t>(F::KernelKind::kConv));
    d.set(C::kType, static_cast<std::uint32_t>(type));
    d.set(C::kFlags, c.bias ? 1u : 0u);
    d.set(C::kN, s.n), d.set(C::kH, s.h), d.set(C::kW, s.w), d.set(C::kC, s.c);
    d.set(C::kKOut, s.k_out), d.set(C::kR, s.r), d.set(C::kS, s.s);
    d.set(C::kStrideH, s.stride_h), d.set(C::kStrideW, s.stride_w);
    d.set(C::kPadH, s.pad_h), d.set(C::kPadW, s.pad_w);
    d.set_address(C::kInput, bench.put(c.in));
    d.set_address(C::kWeights, bench.put(c.w));
    if (c.bias) d.set_address(C::kBias, bench.put(c.bias_vec));
    c.out = bench.alloc(models::ops::gemm_acc_bytes(type, std::size_t{s.gemm_m()} * s.k_out));
    d.set_address(C::kOutput, c.out);
    if (i == 3) {  // a small descriptor tiling: many CTAs, k-steps cutting through (r, s) taps
      const auto& info = models::ops::gemm_type_info(type);
      d.set(C::kTileM, 2 * info.shape_multiple);
      d.set(C::kTileN, info.shape_multiple);
      d.set(C::kTileK, std::max(info.shape_multiple, info.mma_k));
    }
    pb.launch(bench.put(d.bytes()));
    cases.push_back(std::move(c));
    ++i;
  }
  bench.submit(0, pb);
  ASSERT_TRUE(bench.run());
  print_records(bench.ppu);
  ASSERT_EQ(bench.ppu.kernels().size(), cases.size());
  for (std::size_t j = 0; j < cases.size(); ++j) {
    const Case& c = cases[j];
    SCOPED_TRACE(::testing::Message() << "case " << j);
    const std::size_t m = c.s.gemm_m(), n = c.s.k_out;
    const std::size_t acc = models::ops::gemm_acc_bytes(type, 1);
    std::vector<std::uint8_t> bias_rows;
    if (c.bias) {
      for (std::size_t r = 0; r < m; ++r) {
        bias_rows.insert(bias_rows.end(), c.bias_vec.begin(), c.bias_vec.end());
      }
      ASSERT_EQ(bias_rows.size(), m * n * acc);
    }
    const auto want = models::ops::conv_implicit_gemm_reference(
        type, c.s, c.in.data(), c.w.data(), c.bias ? bias_rows.data() : nullptr);
    EXPECT_TRUE(bench.get(c.out, want.d.size()) == want.d) << "output differs from the reference";
    const KernelRecord& r = bench.ppu.kernels()[j];
    EXPECT_EQ(r.kind, "conv");
    EXPECT_EQ(r.m, m);
    EXPECT_EQ(r.k, c.s.gemm_k());
    EXPECT_EQ(r.saturations, want.saturations);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, PpuConv, ::testing::Range(0, 6),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(
                               models::ops::gemm_type_info(static_cast<GemmType>(p.param)).name);
                         });

std::vector<std::uint8_t> fp32_bytes(const std::vector<float>& v) {
  std::vector<std::uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(PpuSplit, EqualsModelsSplitGemm) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench bench(soc_small());
  std::mt19937 rng(5);
  struct Case {
    unsigned m, n, k;
    models::ops::SplitConfig cfg;
    float scale;
    std::vector<float> a, b;
    std::uint64_t d;
  };
  using SF = models::ops::SplitFormat;
  std::vector<Case> cases = {
      {64, 64, 256, {SF::kBf16, 2, 3, 8}, 1.0f, {}, {}, 0},
      {13, 7, 29, {SF::kBf16, 1, 1, 0}, 1.0f, {}, {}, 0},
      {70, 33, 100, {SF::kBf16, 3, 6, 8}, 1.0f, {}, {}, 0},
      {48, 40, 96, {SF::kFp16, 3, 6, 11}, 1.0f / 1024, {}, {}, 0},
      {48, 40, 96, {SF::kFp16, 3, 6, 0}, 1.0f / 1024, {}, {}, 0},
  };
  F::PushBuffer pb;
  for (auto& c : cases) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    c.a.resize(std::size_t{c.m} * c.k);
    c.b.resize(std::size_t{c.k} * c.n);
    for (auto& x : c.a) x = u(rng) * c.scale;
    for (auto& x : c.b) x = u(rng) * c.scale;
    c.d = bench.alloc(std::size_t{c.m} * c.n * 4);
    F::Descriptor desc =
        gemm_descriptor(GemmType::kFp32, c.m, c.n, c.k, bench.put(fp32_bytes(c.a)),
                        bench.put(fp32_bytes(c.b)), 0, c.d, F::ShapePolicy::kPad, false);
    namespace G = F::gemm;
    desc.set(G::kFlags, 1u << 16);
    desc.set(G::kSplitFormat, c.cfg.format == SF::kBf16 ? 0 : 1);
    desc.set(G::kSplitParts, c.cfg.parts);
    desc.set(G::kSplitProducts, c.cfg.products);
    desc.set(G::kSplitScaleLog2, static_cast<std::uint32_t>(c.cfg.residual_scale_log2));
    pb.launch(bench.put(desc.bytes()));
  }
  bench.submit(0, pb);
  ASSERT_TRUE(bench.run());
  print_records(bench.ppu);
  ASSERT_EQ(bench.ppu.kernels().size(), cases.size());
  std::vector<double> errors;
  for (std::size_t j = 0; j < cases.size(); ++j) {
    const Case& c = cases[j];
    SCOPED_TRACE(::testing::Message() << "case " << j);
    const auto want = models::ops::split_gemm(c.m, c.n, c.k, c.a, c.b, c.cfg);
    EXPECT_TRUE(bench.get(c.d, want.size() * 4) == fp32_bytes(want));
    const KernelRecord& r = bench.ppu.kernels()[j];
    EXPECT_EQ(r.macs, std::uint64_t{c.m} * c.n * c.k * c.cfg.products);
    EXPECT_NE(r.path.find("split fp32"), std::string::npos) << r.path;
    const std::vector<double> ad(c.a.begin(), c.a.end()), bd(c.b.begin(), c.b.end());
    std::vector<float> got(want.size());
    const auto bytes = bench.get(c.d, got.size() * 4);
    std::memcpy(got.data(), bytes.data(), bytes.size());
    errors.push_back(
        models::ops::relative_frobenius_error(got, models::ops::gemm_fp64(c.m, c.n, c.k, ad, bd)));
  }
  // More products, more accuracy; FP16 residual scaling matters for inputs of order 2^-10.
  EXPECT_LT(errors[0], 1e-4);
  EXPECT_GT(errors[1], 1e-4);
  EXPECT_LT(errors[2], 1e-6);
  EXPECT_LT(errors[3], 1e-6);
  EXPECT_GT(errors[4], 10 * errors[3]);
}

float f32(const std::vector<std::uint8_t>& b, std::size_t i) {
  float v = 0.0f;
  std::memcpy(&v, b.data() + i * 4, 4);
  return v;
}

TEST(PpuStreaming, ElementwiseAndReduceMatchALoop) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench bench(soc_small());
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  const unsigned count = 10000;  // not a multiple of the CTA's 4096 elements
  std::vector<float> a(count), b(count);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  a[5] = -0.0f;
  const std::uint64_t pa = bench.put(fp32_bytes(a)), pb_ = bench.put(fp32_bytes(b));
  F::PushBuffer pb;
  std::uint64_t out[3];
  for (unsigned op = 0; op < 3; ++op) {
    namespace E = F::elementwise;
    F::Descriptor d;
    d.set(E::kKind, static_cast<std::uint32_t>(F::KernelKind::kElementwise));
    d.set(E::kOp, op);
    d.set(E::kCount, count);
    d.set_address(E::kA, pa);
    d.set_address(E::kB, pb_);
    out[op] = bench.alloc(count * 4);
    d.set_address(E::kD, out[op]);
    pb.launch(bench.put(d.bytes()));
  }
  const unsigned rows = 37, cols = 300;
  std::vector<float> m(rows * cols);
  for (auto& x : m) x = u(rng);
  {
    namespace R = F::reduce;
    F::Descriptor d;
    d.set(R::kKind, static_cast<std::uint32_t>(F::KernelKind::kReduce));
    d.set(R::kRows, rows);
    d.set(R::kCols, cols);
    d.set_address(R::kA, bench.put(fp32_bytes(m)));
    const std::uint64_t rd = bench.alloc(rows * 4);
    d.set_address(R::kD, rd);
    pb.launch(bench.put(d.bytes()));
    bench.submit(0, pb);
    ASSERT_TRUE(bench.run());
    print_records(bench.ppu);
    const auto got = bench.get(rd, rows * 4);
    for (unsigned r = 0; r < rows; ++r) {
      float acc = 0.0f;
      for (unsigned c = 0; c < cols; ++c) acc += m[r * cols + c];
      ASSERT_EQ(f32(got, r), acc) << "row " << r;
    }
  }
  const auto add = bench.get(out[0], count * 4), mul = bench.get(out[1], count * 4),
             relu = bench.get(out[2], count * 4);
  for (unsigned i = 0; i < count; ++i) {
    ASSERT_EQ(f32(add, i), a[i] + b[i]) << i;
    ASSERT_EQ(f32(mul, i), a[i] * b[i]) << i;
    const float want = a[i] > 0.0f ? a[i] : 0.0f;
    ASSERT_EQ(std::signbit(f32(relu, i)), std::signbit(want)) << i;
    ASSERT_EQ(f32(relu, i), want) << i;
  }
  ASSERT_EQ(bench.ppu.kernels().size(), 4u);
  EXPECT_EQ(bench.ppu.kernels()[0].kind, "elementwise");
  EXPECT_EQ(bench.ppu.kernels()[0].bound, "memory");
  EXPECT_EQ(bench.ppu.kernels()[3].kind, "reduce");
  EXPECT_EQ(bench.ppu.kernels()[0].bytes_read, 2u * count * 4);
  EXPECT_EQ(bench.ppu.kernels()[0].bytes_written, count * 4u);
}

}  // namespace
}  // namespace octasim::ppu::test

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
