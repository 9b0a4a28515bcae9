// The PPU inside the device (soc_small): a DLA layer and a PPU kernel ordered by a semaphore.
// Channel 0's push buffer programs an SDP layer through REG_WRITE (firmware/dla via
// PushBufferMmio), waits for its interrupt (WAIT_DLA) and releases a semaphore; channel 1
// acquires it and launches an INT8 GEMM whose A matrix is the SDP's output. Channel 1 is rung
// first, so without the semaphore its kernel would read A before the DLA wrote it — the control
// test shows that it then does. Goldens: models::ops::run_sdp_layer, then gemm_reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include <systemc>

#include "firmware/dla/sdp.hpp"
#include "firmware/dla/surface.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "firmware/ppu/commands.hpp"
#include "firmware/ppu/push_buffer_mmio.hpp"
#include "models/ops/gemm.hpp"
#include "models/ops/sdp.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"

namespace octasim {
namespace {

namespace F = ppu_format;
using models::ops::GemmType;

constexpr std::uint64_t kSdpIn = 0x80000000, kSdpOut = 0x80001000, kB = 0x80002000, kD = 0x80003000,
                        kDesc = 0x80008000, kPb0 = 0x80009000, kPb1 = 0x8000a000, kSem = 0x8000b000;
constexpr unsigned kW = 8, kH = 8, kC = 8, kN = 16;  // A = SDP output as (W*H) x C, INT8

struct Scenario {
  firmware::SdpLayer sdp;
  std::vector<std::uint8_t> input, b, descriptor, pb0, pb1;
  std::vector<std::uint8_t> a_golden, d_golden;
};

// The SDP layer, the GEMM and both push buffers; `with_semaphore` false drops the acquire.
Scenario make_scenario(const HwConfig& hw, bool with_semaphore) {
  const unsigned atom = hw.dla.memory_atomic_size;
  Scenario s;
  std::mt19937 rng(7);
  s.sdp.precision = firmware::Precision::kInt8;
  s.sdp.src = firmware::packed_surface(kSdpIn, kW, kH, kC, atom);
  s.sdp.dst = firmware::packed_surface(kSdpOut, kW, kH, kC, atom);
  s.sdp.relu = true;
  s.sdp.cvt = firmware::SdpConvertor{0, 3, 1};  // y = round(x * 3 / 2), then saturated
  // With C = 8 = one nv_small atom per pixel, a packed INT8 surface is a row-major
  // (W*H) x C matrix: the GEMM reads it as A.
  EXPECT_EQ(s.sdp.src.line_stride, kW * kC);
  s.input.resize(kW * kH * kC);
  for (auto& v : s.input) v = static_cast<std::uint8_t>(rng());
  s.b.resize(kC * kN);
  for (auto& v : s.b) v = static_cast<std::uint8_t>(rng());

  firmware::HostMemory golden;
  golden.write(kSdpIn, s.input.data(), s.input.size());
  (void)models::ops::run_sdp_layer(firmware::sdp_model_config(s.sdp, atom), golden);
  s.a_golden = golden.bytes(kSdpOut, kW * kH * kC);
  models::ops::GemmOperands ops;
  ops.type = GemmType::kInt8Int32;
  ops.m = kW * kH;
  ops.n = kN;
  ops.k = kC;
  ops.a = s.a_golden.data();
  ops.b = s.b.data();
  s.d_golden = models::ops::gemm_reference(ops).d;

  F::Descriptor d;
  d.set(F::gemm::kKind, static_cast<std::uint32_t>(F::KernelKind::kGemm));
  d.set(F::gemm::kType, static_cast<std::uint32_t>(GemmType::kInt8Int32));
  d.set(F::gemm::kM, kW * kH);
  d.set(F::gemm::kN, kN);
  d.set(F::gemm::kK, kC);
  d.set_address(F::gemm::kA, kSdpOut);
  d.set_address(F::gemm::kB, kB);
  d.set_address(F::gemm::kD, kD);
  s.descriptor = d.bytes();

  F::PushBuffer pb0;
  firmware::PushBufferMmio mmio(pb0);
  const unsigned bit = firmware::program_sdp(mmio, s.sdp, 0, atom);
  mmio.wait_interrupt(bit);
  pb0.sem_release(kSem, 1);
  pb0.interrupt();
  s.pb0 = pb0.bytes();
  F::PushBuffer pb1;
  if (with_semaphore) pb1.sem_acquire(kSem, 1);
  pb1.launch(kDesc);
  pb1.interrupt();
  s.pb1 = pb1.bytes();
  return s;
}

void load(soc::HostAdapter& dev, const Scenario& s) {
  MemoryImage& m = dev.memory();
  m.write(kSdpIn, s.input.data(), s.input.size());
  m.write(kB, s.b.data(), s.b.size());
  m.write(kDesc, s.descriptor.data(), s.descriptor.size());
  m.write(kPb0, s.pb0.data(), s.pb0.size());
  m.write(kPb1, s.pb1.data(), s.pb1.size());
  m.fill(kSem, 4, 0);
}

void ring(soc::HostAdapter& dev, unsigned channel, std::uint64_t base, std::size_t bytes) {
  const std::uint32_t r = F::kCsbBase + channel * F::kChannelStride;
  dev.csb_write(r + F::kPbBaseLow, static_cast<std::uint32_t>(base));
  dev.csb_write(r + F::kPbBaseHigh, static_cast<std::uint32_t>(base >> 32));
  dev.csb_write(r + F::kPbSize, static_cast<std::uint32_t>(bytes));
  dev.csb_write(r + F::kPut, static_cast<std::uint32_t>(bytes));
}

std::vector<std::uint8_t> read(soc::HostAdapter& dev, std::uint64_t addr, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  dev.memory().read(addr, out.data(), n);
  return out;
}

TEST(PpuDevice, DlaLayerAndPpuKernelOrderedBySemaphore) {
  const HwConfig hw = load_hw_config("soc_small");
  const Scenario s = make_scenario(hw, true);
  soc::Soc dev_soc("dev", hw);
  soc::HostAdapter dev(dev_soc);
  load(dev, s);
  ring(dev, 1, kPb1, s.pb1.size());  // the consumer first: it must wait
  ring(dev, 0, kPb0, s.pb0.size());
  ASSERT_TRUE(dev.wait_interrupt(25, 2000000));
  ASSERT_TRUE(dev.wait_interrupt(24, 2'000'000));
  EXPECT_EQ(read(dev, kSdpOut, s.a_golden.size()), s.a_golden);
  EXPECT_EQ(read(dev, kD, s.d_golden.size()), s.d_golden);
  // The order: the SDP layer ran (started by channel 0's REG_WRITEs) and ended before the
  // kernel started.
  ASSERT_EQ(dev.soc().dla().layers().size(), 1u);
  EXPECT_EQ(dev.soc().dla().layers()[0].engine, "SDP");
  ASSERT_NE(dev.soc().ppu(), nullptr);
  ASSERT_EQ(dev.soc().ppu()->kernels().size(), 1u);
  EXPECT_GE(dev.soc().ppu()->kernels()[0].start_cycle, dev.soc().dla().layers()[0].end_cycle);
  // Both channels went back to idle, without an error.
  for (unsigned ch = 0; ch < 2; ++ch) {
    const std::uint32_t r = F::kCsbBase + ch * F::kChannelStride;
    EXPECT_EQ(dev.csb_read(r + F::kStatus), 0u) << ch;
    EXPECT_EQ(dev.csb_read(r + F::kError), 0u) << ch;
    EXPECT_EQ(dev.csb_read(r + F::kGet), ch == 0 ? s.pb0.size() : s.pb1.size()) << ch;
  }
}

// The control: without SEM_ACQUIRE the kernel starts at once, reads A before the SDP has
// written it, and its D is not the golden one — so the test above depends on the semaphore.
TEST(PpuDevice, WithoutTheSemaphoreTheKernelReadsStaleInput) {
  const HwConfig hw = load_hw_config("soc_small");
  const Scenario s = make_scenario(hw, false);
  soc::Soc dev_soc("dev", hw);
  soc::HostAdapter dev(dev_soc);
  load(dev, s);
  ring(dev, 1, kPb1, s.pb1.size());
  ring(dev, 0, kPb0, s.pb0.size());
  ASSERT_TRUE(dev.wait_interrupt(25, 2'000'000));
  ASSERT_TRUE(dev.wait_interrupt(24, 2'000'000));
  ASSERT_EQ(dev.soc().ppu()->kernels().size(), 1u);
  EXPECT_LT(dev.soc().ppu()->kernels()[0].start_cycle, dev.soc().dla().layers()[0].end_cycle);
  EXPECT_NE(read(dev, kD, s.d_golden.size()), s.d_golden);
  EXPECT_EQ(read(dev, kSdpOut, s.a_golden.size()), s.a_golden);  // the DLA itself was right
}

// The same scenario as a trace (what `octasim run --config soc_small` plays): ppu_submit for
// both channels, intr_notify(PPU_1), check_file of D, plus a second, FP16 GEMM checked with
// FP32_TOL against an FP64 reference. Written into `dir` as ppu.cfg; returns its path.
std::string write_ppu_trace(const HwConfig& hw, const std::string& dir) {
  Scenario s = make_scenario(hw, true);
  // An FP16 GEMM (FP32 accumulation) on channel 1 after the INT8 one.
  constexpr unsigned m = 20, n = 36, k = 64;  // M, N not multiples of 8: padded on tensor cores
  constexpr std::uint64_t kA16 = 0x80010000, kB16 = 0x80012000, kD32 = 0x80014000,
                          kDesc16 = 0x80008100;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> a(m * k), b(k * n);
  for (auto& v : a) v = u(rng);
  for (auto& v : b) v = u(rng);
  const std::vector<std::uint8_t> a16 = models::ops::encode_gemm_input(GemmType::kFp16Fp32, a);
  const std::vector<std::uint8_t> b16 = models::ops::encode_gemm_input(GemmType::kFp16Fp32, b);
  // Independent golden: FP64 products of the FP16 values, rounded once to FP32.
  const std::vector<double> d64 = models::ops::gemm_fp64(
      m, n, k, models::ops::decode_gemm_input(GemmType::kFp16Fp32, a16, m * k),
      models::ops::decode_gemm_input(GemmType::kFp16Fp32, b16, k * n));
  const std::vector<std::uint8_t> d_fp64 = models::ops::encode_gemm_acc(GemmType::kFp16Fp32, d64);
  F::Descriptor d;
  d.set(F::gemm::kKind, static_cast<std::uint32_t>(F::KernelKind::kGemm));
  d.set(F::gemm::kType, static_cast<std::uint32_t>(GemmType::kFp16Fp32));
  d.set(F::gemm::kM, m);
  d.set(F::gemm::kN, n);
  d.set(F::gemm::kK, k);
  d.set_address(F::gemm::kA, kA16);
  d.set_address(F::gemm::kB, kB16);
  d.set_address(F::gemm::kD, kD32);
  F::PushBuffer pb1;
  pb1.sem_acquire(kSem, 1);
  pb1.launch(kDesc);
  pb1.launch(kDesc16);
  pb1.interrupt();

  firmware::TraceWriter t;
  t.comment(
      "octasim PPU trace (tests/ppu/ppu_device_test.cpp): channel 0 runs an SDP layer and "
      "releases a semaphore, channel 1 acquires it and runs an INT8 GEMM on the SDP output, "
      "then an FP16 GEMM");
  t.mem_init_zero(kSem, 4);
  t.mem_load(kSdpIn, "sdp_in.dat", s.input);
  t.mem_load(kB, "b.dat", s.b);
  t.mem_load(kDesc, "gemm_int8.dat", s.descriptor);
  t.mem_load(kDesc16, "gemm_fp16.dat", d.bytes());
  t.mem_load(kA16, "a16.dat", a16);
  t.mem_load(kB16, "b16.dat", b16);
  t.ppu_submit(1, kPb1, "pb1.dat", pb1.bytes());
  t.ppu_submit(0, kPb0, "pb0.dat", s.pb0);
  t.wait_interrupt(25);
  t.check_file(kD, "d_int32.dat", s.d_golden);
  t.check_file(kD32, "d_fp32.dat", d_fp64, "FP32_TOL, 1e-5, 1e-5");
  t.wait_interrupt(24);
  EXPECT_NE(t.text().find("intr_notify(PPU_1,"), std::string::npos) << t.text();
  return t.save(dir, "ppu.cfg");
}

TEST(PpuDevice, TraceWithPpuSubmitAndToleranceCheck) {
  const HwConfig hw = load_hw_config("soc_small");
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("octasim-ppu-trace-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = write_ppu_trace(hw, dir.string());
  soc::Soc dev_soc("dev", hw);
  soc::HostAdapter dev(dev_soc);
  const trace::PlayResult r = trace::play(trace::parse_trace_file(path), dev, {});
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.checks.size(), 2u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.pass) << c.description << ": " << c.detail;
  ASSERT_EQ(dev.soc().ppu()->kernels().size(), 2u);
  EXPECT_NE(dev.soc().ppu()->kernels()[1].path.find("padded"), std::string::npos)
      << dev.soc().ppu()->kernels()[1].path;
}

// Writes the trace into $OCTASIM_PPU_TRACE_DIR for the ctest fixture that plays it through
// `octasim run --config soc_small --report` (tests/ppu/CMakeLists.txt).
TEST(PpuTraceFile, Write) {
  const char* dir = std::getenv("OCTASIM_PPU_TRACE_DIR");
  if (dir == nullptr) GTEST_SKIP() << "OCTASIM_PPU_TRACE_DIR is not set";
  std::filesystem::create_directories(dir);
  (void)write_ppu_trace(load_hw_config("soc_small"), dir);
}

// A PPU doorbell on a configuration without a PPU is one clear error, not a hang.
TEST(PpuDevice, DoorbellWithoutAPpuIsAnError) {
  soc::Soc dev_soc("dev", load_hw_config("nv_small"));
  soc::HostAdapter dev(dev_soc);
  try {
    dev.csb_write(F::kCsbBase + F::kPut, 8);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("has no PPU"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace octasim

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
