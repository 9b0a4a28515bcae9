// Tests-only: one nv_full FP16 memory-to-memory SDP layer (FLYING_MODE=OFF, SDP_RDMA
// IN_PRECISION = PROC = OUT = FP16) programmed register by register: MRDMA reads the FP16 cube,
// BS multiplies-adds per channel ((x + b[c]) * s[c], BRDMA DATA_USE=BOTH), EW adds a per-element
// FP16 cube (ERDMA) or, with `ew_mul_per_channel`, multiplies by a per-channel FP16 slope and adds
// an FP32 register constant. Its golden comes from the models/ SDP; an independent reference
// computes the same in C++ float (IEEE binary32, round to nearest even) rounded once to FP16.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "firmware/driver/mmio.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/float_format.hpp"
#include "models/ops/sdp.hpp"
#include "octasim/regs/nvdla.hpp"
#include "tests/fp16/conv_fp16_layer.hpp"

namespace octasim::test {

struct Fp16SdpLayer {
  std::uint32_t width = 7, height = 5, channels = 40;  // 3 surfaces, the last one partial
  bool ew_mul_per_channel = false;  // EW: x * m[c] + k (k an FP32 register) instead of x + e
  float ew_add = 0.375f;            // k
  bool nan_to_zero = false;

  std::uint64_t in_addr = 0x80000000, bs_addr = 0x80100000, ew_addr = 0x80200000;
  std::uint64_t out_addr = 0x90000000;

  std::vector<std::uint16_t> input, ew;  // surface-ordered FP16 bit patterns (line_stride etc.)
  std::vector<std::uint16_t> bs;         // per channel: bias, scale (surfaces * kEpa pairs)
  std::vector<std::uint16_t> slope;      // per channel (ew_mul_per_channel)

  [[nodiscard]] std::uint32_t surfaces() const { return (channels + kEpa - 1) / kEpa; }
  [[nodiscard]] std::uint32_t line_stride() const { return width * kAtom; }
  [[nodiscard]] std::uint32_t surface_stride() const { return width * height * kAtom; }
  [[nodiscard]] std::uint64_t cube_bytes() const {
    return std::uint64_t{surface_stride()} * surfaces();
  }
  [[nodiscard]] std::size_t index(std::uint32_t x, std::uint32_t y, std::uint32_t c) const {
    return (std::size_t{c / kEpa} * surface_stride() + std::size_t{y} * line_stride() +
            std::size_t{x} * kAtom) /
               2 +
           c % kEpa;
  }

  // Random normal FP16 values in +-[1/8, 4), operands in a range that keeps every result finite.
  void fill(std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> mag(0.125, 4.0);
    std::bernoulli_distribution neg(0.5);
    const auto any = [&] { return models::fp16_from_double(neg(rng) ? -mag(rng) : mag(rng)); };
    const std::size_t n = cube_bytes() / 2;
    input.assign(n, 0);
    ew.assign(n, 0);
    for (std::uint32_t c = 0; c < channels; ++c) {
      for (std::uint32_t y = 0; y < height; ++y) {
        for (std::uint32_t x = 0; x < width; ++x) {
          input[index(x, y, c)] = any();
          ew[index(x, y, c)] = any();
        }
      }
    }
    bs.assign(std::size_t{surfaces()} * kEpa * 2, 0);
    slope.assign(std::size_t{surfaces()} * kEpa, 0);
    for (std::uint32_t c = 0; c < channels; ++c) {
      bs[2 * c] = any();
      bs[2 * c + 1] = any();
      slope[c] = any();
    }
  }

  [[nodiscard]] static std::vector<std::uint8_t> bytes_of(const std::vector<std::uint16_t>& v) {
    std::vector<std::uint8_t> b(v.size() * 2);
    std::memcpy(b.data(), v.data(), b.size());  // little-endian host, as the traces' memory
    return b;
  }
  [[nodiscard]] std::vector<std::uint8_t> ew_bytes() const {
    return ew_mul_per_channel ? bytes_of(slope) : bytes_of(ew);
  }

  void load(models::ops::Memory& mem) const {
    const auto put = [&](std::uint64_t a, const std::vector<std::uint8_t>& b) {
      mem.write(a, b.data(), b.size());
    };
    put(in_addr, bytes_of(input));
    put(bs_addr, bytes_of(bs));
    put(ew_addr, ew_bytes());
  }

  // The configuration decode_sdp makes of program()'s registers.
  [[nodiscard]] models::ops::SdpConfig config() const {
    using namespace models::ops;
    SdpConfig c;
    c.width = width;
    c.height = height;
    c.channels = channels;
    c.in_precision = c.proc_precision = c.out_precision = SdpPrecision::kFp16;
    c.atom_bytes = kAtom;
    c.nan_to_zero = nan_to_zero;
    c.src_base = in_addr;
    c.src_line_stride = line_stride();
    c.src_surface_stride = surface_stride();
    c.brdma = {true, SdpDataUse::kBoth, 2, SdpDataMode::kPerChannel, bs_addr, 0, 0};
    c.bs.bypass = c.bs.alu_bypass = c.bs.mul_bypass = false;
    c.bs.alu_algo = models::SdpAluAlgo::kSum;
    c.bs.alu_src = c.bs.mul_src = SdpOperandSource::kMemory;
    c.ew.bypass = c.ew.alu_bypass = false;
    c.ew.alu_algo = models::SdpAluAlgo::kSum;
    if (ew_mul_per_channel) {
      c.erdma = {true, SdpDataUse::kMul, 2, SdpDataMode::kPerChannel, ew_addr, 0, 0};
      c.ew.mul_bypass = false;
      c.ew.mul_src = SdpOperandSource::kMemory;
      c.ew.alu_operand = static_cast<std::int32_t>(models::fp32_to_bits(ew_add));
    } else {
      c.erdma = {true,          SdpDataUse::kAlu, 2, SdpDataMode::kPerElement, ew_addr,
                 line_stride(), surface_stride()};
      c.ew.alu_src = SdpOperandSource::kMemory;
    }
    c.dst_base = out_addr;
    c.dst_line_stride = line_stride();
    c.dst_surface_stride = surface_stride();
    return c;
  }

  [[nodiscard]] std::vector<std::uint8_t> golden() const {
    MapMemory mem;
    load(mem);
    (void)models::ops::run_sdp_layer(config(), mem);
    return mem.bytes(out_addr, cube_bytes());
  }

  // The same arithmetic in C++ float: each operation rounds once to binary32 (RNE), then FP16,
  // with NVDLA's documented special-value rules: NAN_TO_ZERO flushes a NaN input to 0, and the
  // FP16 output has no infinity (saturation to +-65504). Valid for the finite, normal operands
  // fill() makes (padding channels compute from zeros).
  [[nodiscard]] std::vector<std::uint8_t> reference() const {
    const bool flush = nan_to_zero;
    const auto f = [flush](std::uint16_t h) {
      const auto v = static_cast<float>(models::decode_float(h, models::kFp16));
      return flush && std::isnan(v) ? 0.0f : v;
    };
    std::vector<std::uint16_t> out(cube_bytes() / 2, 0);
    for (std::uint32_t c = 0; c < surfaces() * kEpa; ++c) {
      for (std::uint32_t y = 0; y < height; ++y) {
        for (std::uint32_t x = 0; x < width; ++x) {
          const std::size_t i = index(x, y, c);
          volatile float v = f(input[i]) + f(bs[2 * c]);
          v = v * f(bs[2 * c + 1]);
          v = ew_mul_per_channel ? v * f(slope[c]) : v;
          v = ew_mul_per_channel ? v + ew_add : v + f(ew[i]);
          const double d = static_cast<double>(v);
          out[i] = models::fp16_from_double(std::isinf(d) ? std::copysign(65504.0, d) : d);
        }
      }
    }
    return bytes_of(out);
  }

  // Group 0: SDP and SDP_RDMA D_ registers, OP_ENABLE SDP first, wait for SDP's done interrupt.
  void program(firmware::Mmio& m) const {
    namespace R = octasim::regs;
    namespace S = R::SDP;
    namespace RD = R::SDP_RDMA;
    const std::uint32_t fp16 = 2;
    const auto lo = [](std::uint64_t a) { return static_cast<std::uint32_t>(a); };
    const auto hi = [](std::uint64_t a) { return static_cast<std::uint32_t>(a >> 32); };
    m.write32(R::GLB::S_INTR_MASK::kAddr, 0);
    m.write32(S::S_POINTER::kAddr, 0);
    m.write32(RD::S_POINTER::kAddr, 0);
    // SDP.
    m.write32(S::D_DATA_CUBE_WIDTH::kAddr, width - 1);
    m.write32(S::D_DATA_CUBE_HEIGHT::kAddr, height - 1);
    m.write32(S::D_DATA_CUBE_CHANNEL::kAddr, channels - 1);
    m.write32(S::D_DATA_FORMAT::kAddr, S::D_DATA_FORMAT::OUT_PRECISION.set(
                                           S::D_DATA_FORMAT::PROC_PRECISION.set(0, fp16), fp16));
    m.write32(S::D_FEATURE_MODE_CFG::kAddr,
              S::D_FEATURE_MODE_CFG::NAN_TO_ZERO.set(0, nan_to_zero ? 1 : 0));
    m.write32(S::D_DST_DMA_CFG::kAddr, S::D_DST_DMA_CFG::DST_RAM_TYPE_MC);
    m.write32(S::D_DST_BASE_ADDR_LOW::kAddr, lo(out_addr));
    m.write32(S::D_DST_BASE_ADDR_HIGH::kAddr, hi(out_addr));
    m.write32(S::D_DST_LINE_STRIDE::kAddr, line_stride());
    m.write32(S::D_DST_SURFACE_STRIDE::kAddr, surface_stride());
    // BS: ALU SUM and MUL, both operands from BRDMA; ReLU bypassed.
    m.write32(S::D_DP_BS_CFG::kAddr,
              S::D_DP_BS_CFG::BS_RELU_BYPASS.set(S::D_DP_BS_CFG::BS_ALU_ALGO.set(0, 2), 1));
    m.write32(S::D_DP_BS_ALU_CFG::kAddr, S::D_DP_BS_ALU_CFG::BS_ALU_SRC.set(0, 1));
    m.write32(S::D_DP_BS_MUL_CFG::kAddr, S::D_DP_BS_MUL_CFG::BS_MUL_SRC.set(0, 1));
    m.write32(S::D_DP_BN_CFG::kAddr, S::D_DP_BN_CFG::BN_BYPASS.set(0, 1));
    // EW: ALU SUM (per-element operand from ERDMA, or the FP32 register after a per-channel MUL).
    using Ew = S::D_DP_EW_CFG;
    m.write32(Ew::kAddr,
              Ew::EW_LUT_BYPASS.set(
                  Ew::EW_MUL_BYPASS.set(Ew::EW_ALU_ALGO.set(0, 2), ew_mul_per_channel ? 0 : 1), 1));
    m.write32(S::D_DP_EW_ALU_CFG::kAddr,
              S::D_DP_EW_ALU_CFG::EW_ALU_CVT_BYPASS.set(
                  S::D_DP_EW_ALU_CFG::EW_ALU_SRC.set(0, ew_mul_per_channel ? 0 : 1), 1));
    m.write32(S::D_DP_EW_ALU_SRC_VALUE::kAddr, models::fp32_to_bits(ew_add));
    m.write32(S::D_DP_EW_MUL_CFG::kAddr, S::D_DP_EW_MUL_CFG::EW_MUL_CVT_BYPASS.set(
                                             S::D_DP_EW_MUL_CFG::EW_MUL_SRC.set(0, 1), 1));
    m.write32(S::D_PERF_ENABLE::kAddr, S::D_PERF_ENABLE::PERF_SAT_EN.set(
                                           S::D_PERF_ENABLE::PERF_NAN_INF_COUNT_EN.set(0, 1), 1));
    // SDP_RDMA: MRDMA reads the FP16 cube, BRDMA the (bias, scale) pairs, ERDMA the EW operand.
    m.write32(RD::D_DATA_CUBE_WIDTH::kAddr, width - 1);
    m.write32(RD::D_DATA_CUBE_HEIGHT::kAddr, height - 1);
    m.write32(RD::D_DATA_CUBE_CHANNEL::kAddr, channels - 1);
    m.write32(RD::D_FEATURE_MODE_CFG::kAddr,
              RD::D_FEATURE_MODE_CFG::OUT_PRECISION.set(
                  RD::D_FEATURE_MODE_CFG::PROC_PRECISION.set(
                      RD::D_FEATURE_MODE_CFG::IN_PRECISION.set(0, fp16), fp16),
                  fp16));
    m.write32(RD::D_SRC_DMA_CFG::kAddr, RD::D_SRC_DMA_CFG::SRC_RAM_TYPE_MC);
    m.write32(RD::D_SRC_BASE_ADDR_LOW::kAddr, lo(in_addr));
    m.write32(RD::D_SRC_BASE_ADDR_HIGH::kAddr, hi(in_addr));
    m.write32(RD::D_SRC_LINE_STRIDE::kAddr, line_stride());
    m.write32(RD::D_SRC_SURFACE_STRIDE::kAddr, surface_stride());
    using B = RD::D_BRDMA_CFG;
    m.write32(B::kAddr, B::BRDMA_RAM_TYPE.set(
                            B::BRDMA_DATA_SIZE.set(B::BRDMA_DATA_USE.set(0, B::BRDMA_DATA_USE_BOTH),
                                                   B::BRDMA_DATA_SIZE_TWO_BYTE),
                            B::BRDMA_RAM_TYPE_MC));
    m.write32(RD::D_BS_BASE_ADDR_LOW::kAddr, lo(bs_addr));
    m.write32(RD::D_BS_BASE_ADDR_HIGH::kAddr, hi(bs_addr));
    m.write32(RD::D_NRDMA_CFG::kAddr, RD::D_NRDMA_CFG::NRDMA_DISABLE.set(0, 1));
    using E = RD::D_ERDMA_CFG;
    const std::uint32_t use = ew_mul_per_channel ? E::ERDMA_DATA_USE_MUL : E::ERDMA_DATA_USE_ALU;
    const std::uint32_t mode =
        ew_mul_per_channel ? E::ERDMA_DATA_MODE_PER_KERNEL : E::ERDMA_DATA_MODE_PER_ELEMENT;
    m.write32(E::kAddr,
              E::ERDMA_RAM_TYPE.set(
                  E::ERDMA_DATA_MODE.set(E::ERDMA_DATA_SIZE.set(E::ERDMA_DATA_USE.set(0, use),
                                                                E::ERDMA_DATA_SIZE_TWO_BYTE),
                                         mode),
                  E::ERDMA_RAM_TYPE_MC));
    m.write32(RD::D_EW_BASE_ADDR_LOW::kAddr, lo(ew_addr));
    m.write32(RD::D_EW_BASE_ADDR_HIGH::kAddr, hi(ew_addr));
    m.write32(RD::D_EW_LINE_STRIDE::kAddr, line_stride());
    m.write32(RD::D_EW_SURFACE_STRIDE::kAddr, surface_stride());
    m.write32(RD::D_PERF_ENABLE::kAddr, RD::D_PERF_ENABLE::PERF_NAN_INF_COUNT_EN.set(0, 1));
    m.write32(S::D_OP_ENABLE::kAddr, 1);
    m.write32(RD::D_OP_ENABLE::kAddr, 1);
    m.wait_interrupt(R::GLB::S_INTR_STATUS::SDP_DONE_STATUS0.lsb);
  }
};

// Writes `dir`/`name` and its data files: the layer, then its output checked byte-exact and
// with FP16_SDP against the models/ golden, byte-exact against the float reference, and the
// SDP_RDMA NaN/Inf input counters. Returns the trace's path.
inline std::string write_sdp_fp16_trace(const Fp16SdpLayer& layer, const std::string& dir,
                                        const std::string& name, std::uint32_t nan_in = 0,
                                        std::uint32_t inf_in = 0) {
  namespace RD = octasim::regs::SDP_RDMA;
  firmware::TraceWriter t;
  t.comment("nv_full FP16 memory-to-memory SDP (tests/fp16/sdp_fp16_layer.hpp)");
  t.mem_load(layer.in_addr, "in_feature.dat", Fp16SdpLayer::bytes_of(layer.input));
  t.mem_load(layer.bs_addr, "in_bs.dat", Fp16SdpLayer::bytes_of(layer.bs));
  t.mem_load(layer.ew_addr, "in_ew.dat", layer.ew_bytes());
  t.mem_init_zero(layer.out_addr, layer.cube_bytes());
  layer.program(t);
  t.check_register(RD::D_STATUS_NAN_INPUT_NUM::kAddr, nan_in);
  t.check_register(RD::D_STATUS_INF_INPUT_NUM::kAddr, inf_in);
  const std::string cfg = t.save(dir, name);
  firmware::write_text_file(dir + "/golden.dat", firmware::format_dat(layer.golden()));
  firmware::write_text_file(dir + "/reference.dat", firmware::format_dat(layer.reference()));
  const std::string checks = fmt::format(
      "check_file(sync_id_0, pri_mem, 0x{0:x}, 0x{1:x}, \"golden.dat\");\n"
      "check_file(sync_id_0, pri_mem, 0x{0:x}, 0x{1:x}, \"golden.dat\", FP16_SDP);\n"
      "check_file(sync_id_0, pri_mem, 0x{0:x}, 0x{1:x}, \"reference.dat\");\n",
      layer.out_addr, layer.cube_bytes());
  firmware::write_text_file(cfg, t.text() + checks);
  return cfg;
}

}  // namespace octasim::test
