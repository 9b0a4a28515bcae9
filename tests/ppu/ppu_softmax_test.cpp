// The PPU's softmax kernel (kSoftmax) on the device: an FP16 feature surface in memory, a push
// buffer with a LAUNCH of softmax_descriptor() rung through the front end's CSB registers, the
// channel's interrupt awaited; the output surface (stride gaps included) equal bit for bit to
// models::ops::run_softmax for every axis on soc_small (8-byte atoms) and soc_large (32-byte
// atoms); the three-pass path for columns beyond shared memory; a DLA FP16 SDP layer feeding the
// softmax through a semaphore with no host step between them; bad descriptors stopping the
// channel (kBadKernel, or kBadAddress for surfaces outside memory, as the other kernels do).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <systemc>

#include "firmware/dla/sdp.hpp"
#include "firmware/dla/surface.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/ppu/commands.hpp"
#include "firmware/ppu/push_buffer_mmio.hpp"
#include "models/numerics/float_format.hpp"
#include "models/ops/sdp.hpp"
#include "models/ops/softmax.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "tests/ppu/ppu_test_util.hpp"

namespace octasim {
namespace {

namespace F = ppu_format;
namespace M = models::ops;

constexpr std::uint64_t kIn = 0x80000000, kOut = 0x80400000, kDesc = 0x80800000, kPb = 0x80801000,
                        kSem = 0x80802000;

// A softmax case: shape, surfaces, and the bytes of both surfaces' spans before the kernel.
struct Case {
  M::SoftmaxShape shape;
  M::SoftmaxSurface in, out;
};

F::SurfacePlace place(const M::SoftmaxSurface& s) {
  return {s.address, s.line_stride, s.surface_stride};
}

F::Descriptor descriptor(const Case& c) {
  return F::softmax_descriptor(place(c.in), place(c.out), c.shape.width, c.shape.height,
                               c.shape.channels, c.shape.atom_bytes,
                               static_cast<F::SoftmaxAxis>(c.shape.axis));
}

// Random FP16 values in the cube; the padding lanes and the gaps hold junk (NaN patterns in the
// input's padding lanes, 0x5a elsewhere), the output's span 0xc3.
void fill(const Case& c, MemoryImage& image, firmware::HostMemory& golden, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-8.0, 8.0);
  std::vector<std::uint8_t> in(M::softmax_surface_bytes(c.shape, c.in), 0x5a);
  const unsigned lanes = c.shape.channels_per_atom();
  for (std::uint32_t ch = 0; ch < c.shape.surfaces() * lanes; ++ch) {
    for (std::uint32_t y = 0; y < c.shape.height; ++y) {
      for (std::uint32_t x = 0; x < c.shape.width; ++x) {
        const std::uint64_t off = M::softmax_element_offset(c.shape, c.in, {x, y, ch});
        const std::uint16_t v =
            ch < c.shape.channels ? models::fp16_from_double(u(rng)) : std::uint16_t{0x7d01};
        in[off] = static_cast<std::uint8_t>(v);
        in[off + 1] = static_cast<std::uint8_t>(v >> 8);
      }
    }
  }
  const std::vector<std::uint8_t> out(M::softmax_surface_bytes(c.shape, c.out), 0xc3);
  image.write(c.in.address, in.data(), in.size());
  image.write(c.out.address, out.data(), out.size());
  golden.write(c.in.address, in.data(), in.size());
  golden.write(c.out.address, out.data(), out.size());
}

std::vector<std::uint8_t> read(MemoryImage& image, std::uint64_t addr, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  image.read(addr, v.data(), n);
  return v;
}

// Places the push buffer at kPb and rings channel `ch` through CSB.
void ring(soc::HostAdapter& dev, unsigned ch, std::uint64_t base, const F::PushBuffer& pb) {
  const auto bytes = pb.bytes();
  dev.memory().write(base, bytes.data(), bytes.size());
  const std::uint32_t r = F::kCsbBase + ch * F::kChannelStride;
  dev.csb_write(r + F::kPbBaseLow, static_cast<std::uint32_t>(base));
  dev.csb_write(r + F::kPbBaseHigh, static_cast<std::uint32_t>(base >> 32));
  dev.csb_write(r + F::kPbSize, static_cast<std::uint32_t>(bytes.size()));
  dev.csb_write(r + F::kPut, static_cast<std::uint32_t>(bytes.size()));
}

void expect_idle(soc::HostAdapter& dev, unsigned ch, std::size_t pb_bytes) {
  const std::uint32_t r = F::kCsbBase + ch * F::kChannelStride;
  EXPECT_EQ(dev.csb_read(r + F::kStatus), 0u) << "channel " << ch << " idle";
  EXPECT_EQ(dev.csb_read(r + F::kError), 0u) << "channel " << ch;
  EXPECT_EQ(dev.csb_read(r + F::kGet), pb_bytes) << "channel " << ch;
}

std::uint64_t atom_bytes_of(const M::SoftmaxShape& s) {
  return std::uint64_t{s.surfaces()} * s.height * s.width * s.atom_bytes;
}

const char* const kConfigs[] = {"soc_small", "soc_large"};

class PpuSoftmax : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(PpuSoftmax, EqualsTheModelBitForBit) {
  const HwConfig hw = load_hw_config(kConfigs[std::get<0>(GetParam())]);
  const auto axis = static_cast<M::SoftmaxAxis>(std::get<1>(GetParam()));
  const unsigned atom = hw.dla.memory_atomic_size;
  Case c;
  // C = 37: 10 surfaces of 4 (8-byte atoms) or 3 of 16 (32-byte atoms), the last partial.
  c.shape = {13, 7, 37, atom, axis};
  const std::uint32_t line = 13 * atom;
  c.in = {kIn, line + atom, (line + atom) * 7 + 3 * atom};            // gaps after lines
  c.out = {kOut + 2 * atom, line + 2 * atom, (line + 2 * atom) * 7};  // and other gaps
  ASSERT_EQ(M::softmax_layout_error(c.shape, c.in, c.out), "");
  soc::Soc dev_soc("dev", hw);
  soc::HostAdapter dev(dev_soc);
  firmware::HostMemory golden;
  fill(c, dev.memory(), golden, 100 + std::get<1>(GetParam()));
  const auto d = descriptor(c).bytes();
  dev.memory().write(kDesc, d.data(), d.size());
  F::PushBuffer pb;
  pb.launch(kDesc);
  pb.interrupt();
  ring(dev, 1, kPb, pb);
  ASSERT_TRUE(dev.wait_interrupt(F::kInterruptBit0 + 1, 5'000'000));
  expect_idle(dev, 1, pb.bytes().size());
  M::run_softmax(c.shape, c.in, c.out, golden);
  const std::size_t span = M::softmax_surface_bytes(c.shape, c.out);
  EXPECT_TRUE(read(dev.memory(), c.out.address, span) == golden.bytes(c.out.address, span))
      << "output span differs from models::ops::run_softmax";
  // The input is untouched.
  const std::size_t in_span = M::softmax_surface_bytes(c.shape, c.in);
  EXPECT_TRUE(read(dev.memory(), c.in.address, in_span) == golden.bytes(c.in.address, in_span));
  ASSERT_NE(dev.soc().ppu(), nullptr);
  ASSERT_EQ(dev.soc().ppu()->kernels().size(), 1u);
  ppu::test::print_records(*dev.soc().ppu());
  const ppu::KernelRecord& r = dev.soc().ppu()->kernels()[0];
  EXPECT_EQ(r.kind, "softmax");
  EXPECT_EQ(r.type, "fp16");
  EXPECT_EQ(r.channel, 1u);
  EXPECT_EQ(r.m, axis == M::SoftmaxAxis::kC   ? 13u * 7
                 : axis == M::SoftmaxAxis::kH ? 37u * 13
                                              : 37u * 7);
  EXPECT_EQ(r.k, axis == M::SoftmaxAxis::kC ? 37u : axis == M::SoftmaxAxis::kH ? 7u : 13u);
  EXPECT_NE(r.path.find("one pass"), std::string::npos) << r.path;
  EXPECT_GT(r.end_cycle, r.start_cycle);
  // Every atom read and written (a line request covers the gaps between the atoms it merges, so
  // with gaps the bytes can exceed the atoms; the packed cases below check them exactly).
  EXPECT_GE(r.bytes_read, atom_bytes_of(c.shape));
  EXPECT_GE(r.bytes_written, atom_bytes_of(c.shape));
  EXPECT_GT(r.ctas, 1u) << "the columns are shared among the SMs";
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<int, int>>& p) {
  static const char* const kAxes[] = {"C", "H", "W"};
  return std::string(kConfigs[std::get<0>(p.param)]) + "_axis" + kAxes[std::get<1>(p.param)];
}

INSTANTIATE_TEST_SUITE_P(ConfigsAndAxes, PpuSoftmax,
                         ::testing::Combine(::testing::Range(0, 2), ::testing::Range(0, 3)),
                         case_name);

// Columns longer than the 32 KiB a CTA keeps resident (a line of 1100 32-byte atoms along W)
// stream three times: max, exp and sum, divide. The same surface over C (64-byte columns) reads
// it once; both outputs equal the model, and the three passes take longer.
TEST(PpuSoftmaxPasses, LongColumnsStreamThreeTimes) {
  const HwConfig hw = load_hw_config("soc_large");
  const unsigned atom = hw.dla.memory_atomic_size;
  ASSERT_EQ(atom, 32u);
  Case over_w;
  over_w.shape = {1100, 3, 20, atom, M::SoftmaxAxis::kW};
  const std::uint32_t line = 1100 * atom;
  over_w.in = {kIn, line, line * 3};  // packed: requests cover exactly the atoms
  over_w.out = {kOut, line, line * 3};
  Case over_c = over_w;
  over_c.shape.axis = M::SoftmaxAxis::kC;
  over_c.out.address = kOut + 0x100000;
  soc::Soc dev_soc("dev", hw);
  soc::HostAdapter dev(dev_soc);
  firmware::HostMemory golden;
  fill(over_w, dev.memory(), golden, 7);
  const std::vector<std::uint8_t> sentinel(M::softmax_surface_bytes(over_c.shape, over_c.out),
                                           0xc3);
  dev.memory().write(over_c.out.address, sentinel.data(), sentinel.size());
  golden.write(over_c.out.address, sentinel.data(), sentinel.size());
  const auto dw = descriptor(over_w).bytes(), dc = descriptor(over_c).bytes();
  dev.memory().write(kDesc, dw.data(), dw.size());
  dev.memory().write(kDesc + 128, dc.data(), dc.size());
  F::PushBuffer pb;
  pb.launch(kDesc);
  pb.launch(kDesc + 128);
  pb.interrupt();
  ring(dev, 0, kPb, pb);
  ASSERT_TRUE(dev.wait_interrupt(F::kInterruptBit0, 20'000'000));
  expect_idle(dev, 0, pb.bytes().size());
  M::run_softmax(over_w.shape, over_w.in, over_w.out, golden);
  M::run_softmax(over_c.shape, over_c.in, over_c.out, golden);
  const std::size_t span = M::softmax_surface_bytes(over_w.shape, over_w.out);
  EXPECT_TRUE(read(dev.memory(), over_w.out.address, span) ==
              golden.bytes(over_w.out.address, span));
  EXPECT_TRUE(read(dev.memory(), over_c.out.address, span) ==
              golden.bytes(over_c.out.address, span));
  ASSERT_EQ(dev.soc().ppu()->kernels().size(), 2u);
  ppu::test::print_records(*dev.soc().ppu());
  const ppu::KernelRecord& w = dev.soc().ppu()->kernels()[0];
  const ppu::KernelRecord& c = dev.soc().ppu()->kernels()[1];
  const std::uint64_t bytes = atom_bytes_of(over_w.shape);  // 2 surfaces x 3 lines x 1100 atoms
  EXPECT_EQ(bytes, 2u * 3 * 1100 * 32);
  EXPECT_NE(w.path.find("three passes"), std::string::npos) << w.path;
  EXPECT_EQ(w.ctas, 2u * 3) << "one column (surface, line) per CTA";
  EXPECT_EQ(w.bytes_read, 3 * bytes);
  EXPECT_EQ(w.bytes_written, bytes);
  EXPECT_NE(c.path.find("one pass"), std::string::npos) << c.path;
  EXPECT_EQ(c.bytes_read, bytes);
  EXPECT_EQ(c.bytes_written, bytes);
  EXPECT_GT(w.cycles(), c.cycles()) << "three reads of the input take longer than one";
  EXPECT_GE(c.start_cycle, w.end_cycle) << "stream order";
}

// A DLA layer and the softmax after it, with no host step between: channel 0 programs an FP16
// SDP layer (y = x + bias[c]) through REG_WRITEs and releases a semaphore when its interrupt
// came; channel 1 (rung first) acquires it and launches the softmax over C of the SDP's output.
TEST(PpuSoftmaxAfterDla, SdpThenSoftmaxOrderedBySemaphore) {
  const HwConfig hw = load_hw_config("soc_large");
  const unsigned atom = hw.dla.memory_atomic_size;
  constexpr std::uint32_t kW = 6, kH = 5, kC = 21;
  constexpr std::uint64_t kSdpOut = 0x80200000, kBias = 0x80300000;
  firmware::SdpLayer sdp;
  sdp.precision = firmware::Precision::kFp16;
  sdp.src = firmware::packed_surface(kIn, kW, kH, kC, atom);
  sdp.dst = firmware::packed_surface(kSdpOut, kW, kH, kC, atom);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> bias(kC);
  for (auto& b : bias) b = u(rng);
  const auto table = firmware::sdp_fp16_table(bias, atom);
  sdp.bias = firmware::SdpPerChannel{kBias, 0};
  Case sm;
  sm.shape = {kW, kH, kC, atom, M::SoftmaxAxis::kC};
  sm.in = {kSdpOut, sdp.dst.line_stride, sdp.dst.surface_stride};
  sm.out = {kOut, sdp.dst.line_stride, sdp.dst.surface_stride};

  soc::Soc dev_soc("dev", hw);
  soc::HostAdapter dev(dev_soc);
  firmware::HostMemory golden;
  Case input = sm;
  input.in.address = kIn;
  fill(input, dev.memory(), golden, 3);  // the SDP's input, and junk in the softmax's output
  dev.memory().write(kBias, table.data(), table.size());
  golden.write(kBias, table.data(), table.size());
  dev.memory().fill(kSem, 4, 0);

  F::PushBuffer pb0;
  firmware::PushBufferMmio mmio(pb0);
  mmio.wait_interrupt(firmware::program_sdp(mmio, sdp, 0, atom));
  pb0.sem_release(kSem, 1);
  pb0.interrupt();
  F::PushBuffer pb1;
  pb1.sem_acquire(kSem, 1);
  pb1.launch(kDesc);
  pb1.interrupt();
  const auto d = descriptor(sm).bytes();
  dev.memory().write(kDesc, d.data(), d.size());
  ring(dev, 1, kPb + 0x400, pb1);
  ring(dev, 0, kPb, pb0);
  ASSERT_TRUE(dev.wait_interrupt(F::kInterruptBit0 + 1, 5'000'000));
  ASSERT_TRUE(dev.wait_interrupt(F::kInterruptBit0, 5'000'000));
  expect_idle(dev, 0, pb0.bytes().size());
  expect_idle(dev, 1, pb1.bytes().size());

  (void)M::run_sdp_layer(firmware::sdp_model_config(sdp, atom), golden);
  M::run_softmax(sm.shape, sm.in, sm.out, golden);
  const std::size_t span = M::softmax_surface_bytes(sm.shape, sm.out);
  EXPECT_TRUE(read(dev.memory(), kSdpOut, span) == golden.bytes(kSdpOut, span)) << "SDP output";
  EXPECT_TRUE(read(dev.memory(), kOut, span) == golden.bytes(kOut, span)) << "softmax output";
  ASSERT_EQ(dev.soc().dla().layers().size(), 1u);
  ASSERT_EQ(dev.soc().ppu()->kernels().size(), 1u);
  const ppu::KernelRecord& r = dev.soc().ppu()->kernels()[0];
  EXPECT_GE(r.start_cycle, dev.soc().dla().layers()[0].end_cycle);
  // Packed surfaces: every atom once (2 surfaces of 16 channels x 5 lines x 6 atoms of 32 bytes).
  EXPECT_EQ(r.bytes_read, 2u * kH * kW * 32);
  EXPECT_EQ(r.bytes_written, 2u * kH * kW * 32);
  // Every line sums to about 1 (21 FP16 roundings of at most half an ulp of 0.5 or less).
  for (std::uint32_t y = 0; y < kH; ++y) {
    for (std::uint32_t x = 0; x < kW; ++x) {
      double s = 0.0;
      for (std::uint32_t ch = 0; ch < kC; ++ch) {
        std::uint8_t b[2];
        dev.memory().read(kOut + M::softmax_element_offset(sm.shape, sm.out, {x, y, ch}), b, 2);
        s += static_cast<double>(
            models::fp16_to_float(static_cast<std::uint16_t>(b[0] | b[1] << 8)));
      }
      EXPECT_NEAR(s, 1.0, 21 * 0x1p-12) << x << "," << y;
    }
  }
}

// ---- Bad descriptors ------------------------------------------------------------------------
struct BadCase {
  const char* name;
  F::ErrorCode code;
};
const BadCase kBad[] = {
    {"type_int8", F::ErrorCode::kBadKernel},
    {"type_int16", F::ErrorCode::kBadKernel},
    {"axis_3", F::ErrorCode::kBadKernel},
    {"zero_width", F::ErrorCode::kBadKernel},
    {"zero_height", F::ErrorCode::kBadKernel},
    {"zero_channels", F::ErrorCode::kBadKernel},
    {"width_8193", F::ErrorCode::kBadKernel},
    {"atom_zero", F::ErrorCode::kBadKernel},
    {"atom_24", F::ErrorCode::kBadKernel},
    {"line_stride_below_line", F::ErrorCode::kBadKernel},
    {"surface_stride_below_surface", F::ErrorCode::kBadKernel},
    {"output_line_stride_below_line", F::ErrorCode::kBadKernel},
    {"address_not_atom_aligned", F::ErrorCode::kBadKernel},
    {"surface_over_2_28_bytes", F::ErrorCode::kBadKernel},
    {"input_outside_memory", F::ErrorCode::kBadAddress},
    {"output_outside_memory", F::ErrorCode::kBadAddress},
};

class PpuSoftmaxBad : public ::testing::TestWithParam<int> {};

// A bad softmax descriptor stops its channel in ERROR with the code, the LAUNCH's offset and the
// channel's interrupt, runs no kernel and writes nothing; the same push buffer with the good
// descriptor runs (so each case is bad for the reason named).
TEST_P(PpuSoftmaxBad, StopsTheChannelWithTheCode) {
  using namespace ppu::test;
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  const BadCase& bc = kBad[GetParam()];
  const std::string name = bc.name;
  Bench bench(soc_small());
  namespace S = F::softmax;
  const unsigned atom = 8;
  Case c;
  c.shape = {4, 3, 6, atom, M::SoftmaxAxis::kC};
  c.in = {bench.alloc(4096), 4 * atom, 12 * atom};
  c.out = {bench.alloc(4096), 4 * atom, 12 * atom};
  F::Descriptor good = descriptor(c), bad = good;
  const std::uint64_t beyond = bench.image.address_space_size();
  if (name == "type_int8") bad.set(S::kType, 0);
  if (name == "type_int16") bad.set(S::kType, 1);
  if (name == "axis_3") bad.set(S::kAxis, 3);
  if (name == "zero_width") bad.set(S::kWidth, 0);
  if (name == "zero_height") bad.set(S::kHeight, 0);
  if (name == "zero_channels") bad.set(S::kChannels, 0);
  if (name == "width_8193") bad.set(S::kWidth, 8193);
  if (name == "atom_zero") bad.set(S::kAtomBytes, 0);
  if (name == "atom_24") bad.set(S::kAtomBytes, 24);
  if (name == "line_stride_below_line") bad.set(S::kInputLineStride, 3 * atom);
  if (name == "surface_stride_below_surface") bad.set(S::kInputSurfaceStride, 11 * atom);
  if (name == "output_line_stride_below_line") bad.set(S::kOutputLineStride, 0);
  if (name == "address_not_atom_aligned") bad.set_address(S::kOutput, c.out.address + 2);
  if (name == "surface_over_2_28_bytes") {
    bad.set(S::kWidth, 8192), bad.set(S::kHeight, 8192);
    bad.set(S::kInputLineStride, 8192 * atom), bad.set(S::kOutputLineStride, 8192 * atom);
    bad.set(S::kInputSurfaceStride, 8192 * 8192 * atom);
    bad.set(S::kOutputSurfaceStride, 8192 * 8192 * atom);
  }
  if (name == "input_outside_memory") bad.set_address(S::kInput, beyond - 64);
  if (name == "output_outside_memory") bad.set_address(S::kOutput, beyond - 64);
  ASSERT_NE(bad.words, good.words) << "case " << name << " changes the descriptor";
  const std::vector<std::uint8_t> sentinel(4096, 0xc3);
  bench.image.write(c.out.address, sentinel.data(), sentinel.size());
  F::PushBuffer pb;
  pb.nop();  // the LAUNCH is at byte offset 4
  pb.launch(bench.put(bad.bytes()));
  pb.interrupt();    // never reached
  F::PushBuffer ok;  // channel 1: the good descriptor
  ok.launch(bench.put(good.bytes()));
  ok.interrupt();
  bench.submit(0, pb);
  bench.submit(1, ok);
  ASSERT_TRUE(bench.run());
  EXPECT_EQ(bench.chreg(0, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_ERROR);
  EXPECT_EQ(bench.chreg(0, P::S_CH0_ERROR::kAddr), static_cast<std::uint32_t>(bc.code));
  EXPECT_EQ(bench.chreg(0, P::S_CH0_ERROR_OFFSET::kAddr), 4u);
  EXPECT_EQ(std::count(bench.host.raised.begin(), bench.host.raised.end(), F::kInterruptBit0), 1)
      << "the error's interrupt only";
  EXPECT_EQ(bench.chreg(1, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_IDLE);
  EXPECT_EQ(bench.chreg(1, P::S_CH0_ERROR::kAddr), 0u);
  ASSERT_EQ(bench.ppu.kernels().size(), 1u) << "only the good descriptor ran";
  EXPECT_EQ(bench.ppu.kernels()[0].channel, 1u);
  EXPECT_EQ(bench.ppu.kernels()[0].kind, "softmax");
}

INSTANTIATE_TEST_SUITE_P(Cases, PpuSoftmaxBad,
                         ::testing::Range(0, static_cast<int>(std::size(kBad))),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(kBad[p.param].name);
                         });

}  // namespace
}  // namespace octasim

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
