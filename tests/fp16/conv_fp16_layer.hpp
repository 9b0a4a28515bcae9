// Tests-only: one nv_full FP16 direct-convolution layer with the SDP in flying mode, programmed
// register by register as NVDLA's dc traces program theirs (CDMA, CSC, CMAC_A/B, CACC, SDP,
// SDP_RDMA; OP_ENABLE last, SDP first), its input data, and its golden output computed with the
// models/ reference ops (and, independently, in double precision).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "firmware/driver/mmio.hpp"
#include "models/numerics/float_format.hpp"
#include "models/ops/conv.hpp"
#include "models/ops/conv_fp16.hpp"
#include "models/ops/memory.hpp"
#include "models/ops/sdp.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::test {

// A sparse byte memory for golden computations.
class MapMemory final : public models::ops::Memory {
 public:
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    for (std::size_t i = 0; i < size; ++i) {
      const auto it = bytes_.find(addr + i);
      dst[i] = it == bytes_.end() ? 0 : it->second;
    }
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override {
    for (std::size_t i = 0; i < size; ++i) bytes_[addr + i] = src[i];
  }
  [[nodiscard]] std::vector<std::uint8_t> bytes(std::uint64_t addr, std::size_t size) const {
    std::vector<std::uint8_t> out(size);
    read(addr, out.data(), size);
    return out;
  }

 private:
  std::map<std::uint64_t, std::uint8_t> bytes_;
};

// nv_full's geometry.
inline constexpr unsigned kAtom = 32, kAtomicC = 64, kAtomicK = 32, kEpa = kAtom / 2;

struct Fp16ConvLayer {
  std::uint32_t width = 9, height = 7, channels = 80;  // input
  std::uint32_t kernels = 32, kernel_w = 3, kernel_h = 3;
  std::uint32_t stride_x = 1, stride_y = 1;
  std::uint32_t pad_left = 1, pad_right = 1, pad_top = 1, pad_bottom = 0;
  std::uint16_t pad_value = 0x3800;  // 0.5
  bool nan_to_zero = false;
  // SDP BS: per-channel bias from memory (BRDMA), multiplier from a register, ReLU.
  std::uint16_t bs_mul = 0x3c00;  // 1.0
  bool relu = true;

  std::uint64_t in_addr = 0x80000000, wt_addr = 0x80100000, bias_addr = 0x80200000;
  std::uint64_t out_addr = 0x90000000;

  models::ops::ConvCube input;       // FP16 bit patterns
  models::ops::ConvWeights weights;  // FP16 bit patterns
  std::vector<std::uint16_t> bias;   // one per kernel

  [[nodiscard]] std::uint32_t out_width() const {
    return models::ops::conv_output_size(width, pad_left, pad_right, kernel_w, 1, stride_x);
  }
  [[nodiscard]] std::uint32_t out_height() const {
    return models::ops::conv_output_size(height, pad_top, pad_bottom, kernel_h, 1, stride_y);
  }
  [[nodiscard]] models::ops::ConvFeatureSurface in_surface() const {
    return {in_addr, width * kAtom, width * height * kAtom, width, height, channels, kAtom};
  }
  [[nodiscard]] std::uint32_t out_line_stride() const { return out_width() * kAtom; }
  [[nodiscard]] std::uint32_t out_surface_stride() const {
    return out_width() * out_height() * kAtom;
  }
  [[nodiscard]] std::uint32_t out_surfaces() const { return (kernels + kEpa - 1) / kEpa; }
  [[nodiscard]] std::uint64_t out_bytes() const {
    return std::uint64_t{out_surfaces()} * out_surface_stride();
  }
  [[nodiscard]] models::ops::ConvWeightLayout weight_layout() const {
    return {kAtomicC, kAtomicK, models::ops::ConvPrecision::kFp16};
  }
  [[nodiscard]] std::uint32_t weight_bytes() const {
    const std::uint64_t b = weight_layout().bytes(weights);
    return static_cast<std::uint32_t>((b + 127) / 128 * 128);
  }
  [[nodiscard]] models::ops::ConvParams params() const {
    models::ops::ConvParams p;
    p.precision = models::ops::ConvPrecision::kFp16;
    p.stride_x = stride_x;
    p.stride_y = stride_y;
    p.pad_left = pad_left;
    p.pad_top = pad_top;
    p.out_width = out_width();
    p.out_height = out_height();
    p.pad_value = static_cast<std::int16_t>(pad_value);
    return p;
  }

  // Deterministic pseudo-random data: inputs in (-2, 2), weights in (-0.25, 0.25), biases in
  // (-1, 1), all exact FP16 values.
  void fill(std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    const auto h = [](double v) { return static_cast<std::int16_t>(models::fp16_from_double(v)); };
    input = models::ops::ConvCube(width, height, channels);
    for (auto& v : input.data) v = h(2.0 * u(rng));
    weights = models::ops::ConvWeights(kernels, kernel_h, kernel_w, channels);
    for (auto& v : weights.data) v = h(0.25 * u(rng));
    bias.resize(kernels);
    for (auto& v : bias) v = models::fp16_from_double(u(rng));
  }

  // Input surface, packed weights and the per-channel bias (padded to whole atoms) in `mem`.
  void load(models::ops::Memory& mem) const {
    models::ops::write_feature_cube(input, in_surface(), models::ops::ConvPrecision::kFp16, mem);
    (void)models::ops::write_weights(weights, wt_addr, weight_layout(), mem);
    std::vector<std::uint8_t> b(std::size_t{out_surfaces()} * kAtom, 0);
    for (std::size_t k = 0; k < bias.size(); ++k) {
      b[2 * k] = static_cast<std::uint8_t>(bias[k]);
      b[2 * k + 1] = static_cast<std::uint8_t>(bias[k] >> 8);
    }
    mem.write(bias_addr, b.data(), b.size());
  }

  [[nodiscard]] models::ops::SdpConfig sdp_config() const {
    models::ops::SdpConfig s;
    s.width = out_width();
    s.height = out_height();
    s.channels = kernels;
    s.in_precision = s.proc_precision = s.out_precision = models::ops::SdpPrecision::kFp16;
    s.atom_bytes = kAtom;
    s.flying = true;
    s.brdma.enabled = true;
    s.brdma.use = models::ops::SdpDataUse::kAlu;
    s.brdma.bytes_per_component = 2;
    s.brdma.mode = models::ops::SdpDataMode::kPerChannel;
    s.brdma.base = bias_addr;
    s.bs.bypass = false;
    s.bs.alu_bypass = false;
    s.bs.alu_algo = models::SdpAluAlgo::kSum;
    s.bs.alu_src = models::ops::SdpOperandSource::kMemory;
    s.bs.mul_bypass = false;
    s.bs.mul_operand = static_cast<std::int16_t>(bs_mul);
    s.bs.relu_bypass = !relu;
    s.dst_base = out_addr;
    s.dst_line_stride = out_line_stride();
    s.dst_surface_stride = out_surface_stride();
    return s;
  }

  // The output surface as the models/ ops compute it (convolution, then SDP).
  [[nodiscard]] std::vector<std::uint8_t> golden() const {
    MapMemory mem;
    load(mem);
    const models::ops::ConvFp16Result conv =
        models::ops::run_conv_fp16(input, weights, params(), out_surfaces() * kEpa, nan_to_zero);
    (void)models::ops::run_sdp_layer(sdp_config(), mem, &conv.out);
    return mem.bytes(out_addr, out_bytes());
  }

  // An independent reference: the convolution and the BS stage in double precision, rounded
  // once to FP16 — what NVDLA's CC threshold compares against. It follows NVDLA's documented
  // special-value rules: CDMA's NaN flush when enabled, and no infinity at the FP16 output
  // (saturation to +-65504).
  [[nodiscard]] std::vector<std::uint8_t> reference() const {
    std::vector<std::uint8_t> out(out_bytes(), 0);
    const auto f = [](std::int32_t bits) {
      return models::decode_float(static_cast<std::uint16_t>(bits), models::kFp16);
    };
    const double pad = models::decode_float(pad_value, models::kFp16);
    for (std::uint32_t k = 0; k < kernels; ++k) {
      for (std::uint32_t oy = 0; oy < out_height(); ++oy) {
        for (std::uint32_t ox = 0; ox < out_width(); ++ox) {
          double acc = 0.0;
          for (std::uint32_t r = 0; r < kernel_h; ++r) {
            for (std::uint32_t s = 0; s < kernel_w; ++s) {
              const long y = long(oy * stride_y) - long(pad_top) + long(r);
              const long x = long(ox * stride_x) - long(pad_left) + long(s);
              const bool inside = y >= 0 && y < long(height) && x >= 0 && x < long(width);
              for (std::uint32_t c = 0; c < channels; ++c) {
                double d = inside ? f(input.at(std::uint32_t(x), std::uint32_t(y), c)) : pad;
                double wv = f(weights.at(k, r, s, c));
                if (nan_to_zero && std::isnan(d)) d = 0.0;
                if (nan_to_zero && std::isnan(wv)) wv = 0.0;
                acc += d * wv;
              }
            }
          }
          double v = (acc + models::decode_float(bias[k], models::kFp16)) *
                     models::decode_float(bs_mul, models::kFp16);
          if (relu && v < 0) v = 0;
          if (std::isinf(v)) v = std::copysign(65504.0, v);
          const auto h = static_cast<std::uint16_t>(
              models::encode_float(v, models::kFp16, models::Overflow::kSaturate));
          const std::size_t at = std::size_t{k / kEpa} * out_surface_stride() +
                                 std::size_t{oy} * out_line_stride() + std::size_t{ox} * kAtom +
                                 (k % kEpa) * 2;
          out[at] = static_cast<std::uint8_t>(h);
          out[at + 1] = static_cast<std::uint8_t>(h >> 8);
        }
      }
    }
    return out;
  }

  // max_exp of every output element, one signed byte per FP16 element of the output surface
  // (the FP16_CC_DIRECT check's max_exp file).
  [[nodiscard]] std::vector<std::uint8_t> max_exp_bytes() const {
    const std::vector<int> me = models::ops::conv_fp16_max_exp(input, weights, params());
    std::vector<std::uint8_t> out(out_bytes() / 2, 0);
    for (std::uint32_t k = 0; k < kernels; ++k) {
      for (std::uint32_t oy = 0; oy < out_height(); ++oy) {
        for (std::uint32_t ox = 0; ox < out_width(); ++ox) {
          const std::size_t at =
              (std::size_t{k / kEpa} * out_surface_stride() + std::size_t{oy} * out_line_stride() +
               std::size_t{ox} * kAtom + (k % kEpa) * 2) /
              2;
          out[at] = static_cast<std::uint8_t>(static_cast<std::int8_t>(
              me[(std::size_t{k} * out_height() + oy) * out_width() + ox]));
        }
      }
    }
    return out;
  }

  // The register programming, group 0, as the dc traces do it: every unit's D_ registers, then
  // OP_ENABLE from SDP back to CDMA, then the wait for SDP's done interrupt.
  void program(firmware::Mmio& m) const {
    namespace R = octasim::regs;
    namespace CD = R::CDMA;
    namespace CS = R::CSC;
    namespace CA = R::CACC;
    namespace S = R::SDP;
    namespace RD = R::SDP_RDMA;
    const std::uint32_t fp16 = 2;
    const std::uint32_t ow = out_width(), oh = out_height();
    const auto lo = [](std::uint64_t a) { return static_cast<std::uint32_t>(a); };
    const auto hi = [](std::uint64_t a) { return static_cast<std::uint32_t>(a >> 32); };

    m.write32(R::GLB::S_INTR_MASK::kAddr, 0);
    for (std::uint32_t p :
         {S::S_POINTER::kAddr, RD::S_POINTER::kAddr, CD::S_POINTER::kAddr, CS::S_POINTER::kAddr,
          R::CMAC_A::S_POINTER::kAddr, R::CMAC_B::S_POINTER::kAddr, CA::S_POINTER::kAddr}) {
      m.write32(p, 0);
    }
    // SDP: flying FP16 -> FP16, BS = (x + bias[c]) * mul, ReLU.
    m.write32(S::D_DATA_CUBE_WIDTH::kAddr, ow - 1);
    m.write32(S::D_DATA_CUBE_HEIGHT::kAddr, oh - 1);
    m.write32(S::D_DATA_CUBE_CHANNEL::kAddr, kernels - 1);
    m.write32(S::D_DATA_FORMAT::kAddr, S::D_DATA_FORMAT::OUT_PRECISION.set(
                                           S::D_DATA_FORMAT::PROC_PRECISION.set(0, fp16), fp16));
    m.write32(S::D_FEATURE_MODE_CFG::kAddr, S::D_FEATURE_MODE_CFG::FLYING_MODE.set(0, 1));
    m.write32(S::D_DST_DMA_CFG::kAddr, S::D_DST_DMA_CFG::DST_RAM_TYPE_MC);
    m.write32(S::D_DST_BASE_ADDR_LOW::kAddr, lo(out_addr));
    m.write32(S::D_DST_BASE_ADDR_HIGH::kAddr, hi(out_addr));
    m.write32(S::D_DST_LINE_STRIDE::kAddr, out_line_stride());
    m.write32(S::D_DST_SURFACE_STRIDE::kAddr, out_surface_stride());
    m.write32(S::D_DP_BS_ALU_CFG::kAddr, S::D_DP_BS_ALU_CFG::BS_ALU_SRC.set(0, 1));
    m.write32(S::D_DP_BS_CFG::kAddr, S::D_DP_BS_CFG::BS_ALU_ALGO.set(
                                         relu ? 0u : S::D_DP_BS_CFG::BS_RELU_BYPASS.set(0, 1), 2));
    m.write32(S::D_DP_BS_MUL_CFG::kAddr, 0);
    m.write32(S::D_DP_BS_MUL_SRC_VALUE::kAddr, bs_mul);
    m.write32(S::D_DP_BN_CFG::kAddr, S::D_DP_BN_CFG::BN_BYPASS.set(0, 1));
    m.write32(S::D_DP_EW_CFG::kAddr, S::D_DP_EW_CFG::EW_BYPASS.set(0, 1));
    m.write32(S::D_PERF_ENABLE::kAddr, S::D_PERF_ENABLE::PERF_SAT_EN.set(
                                           S::D_PERF_ENABLE::PERF_NAN_INF_COUNT_EN.set(0, 1), 1));
    // SDP_RDMA: BRDMA streams the per-channel bias (16-bit, ALU).
    m.write32(RD::D_DATA_CUBE_WIDTH::kAddr, ow - 1);
    m.write32(RD::D_DATA_CUBE_HEIGHT::kAddr, oh - 1);
    m.write32(RD::D_DATA_CUBE_CHANNEL::kAddr, kernels - 1);
    m.write32(RD::D_FEATURE_MODE_CFG::kAddr,
              RD::D_FEATURE_MODE_CFG::FLYING_MODE.set(
                  RD::D_FEATURE_MODE_CFG::PROC_PRECISION.set(
                      RD::D_FEATURE_MODE_CFG::IN_PRECISION.set(0, fp16), fp16),
                  1));
    m.write32(RD::D_BRDMA_CFG::kAddr, RD::D_BRDMA_CFG::BRDMA_RAM_TYPE.set(
                                          RD::D_BRDMA_CFG::BRDMA_DATA_USE.set(
                                              RD::D_BRDMA_CFG::BRDMA_DATA_SIZE.set(0, 1), 1),
                                          RD::D_BRDMA_CFG::BRDMA_RAM_TYPE_MC));
    m.write32(RD::D_BS_BASE_ADDR_LOW::kAddr, lo(bias_addr));
    m.write32(RD::D_BS_BASE_ADDR_HIGH::kAddr, hi(bias_addr));
    m.write32(RD::D_NRDMA_CFG::kAddr, RD::D_NRDMA_CFG::NRDMA_DISABLE.set(0, 1));
    m.write32(RD::D_ERDMA_CFG::kAddr, RD::D_ERDMA_CFG::ERDMA_DISABLE.set(0, 1));
    // CDMA.
    const std::uint32_t misc =
        CD::D_MISC_CFG::PROC_PRECISION.set(CD::D_MISC_CFG::IN_PRECISION.set(0, fp16), fp16);
    m.write32(CD::D_MISC_CFG::kAddr, misc);
    m.write32(CD::D_DATAIN_FORMAT::kAddr, 0);
    m.write32(CD::D_DATAIN_SIZE_0::kAddr,
              CD::D_DATAIN_SIZE_0::DATAIN_HEIGHT.set(
                  CD::D_DATAIN_SIZE_0::DATAIN_WIDTH.set(0, width - 1), height - 1));
    m.write32(CD::D_DATAIN_SIZE_1::kAddr, channels - 1);
    // DRAM (MC): the reset value of the RAM types is CV, the CV-SRAM of nv_full.
    m.write32(CD::D_DAIN_RAM_TYPE::kAddr, CD::D_DAIN_RAM_TYPE::DATAIN_RAM_TYPE_MCIF);
    m.write32(CD::D_WEIGHT_RAM_TYPE::kAddr, CD::D_WEIGHT_RAM_TYPE::WEIGHT_RAM_TYPE_MCIF);
    m.write32(CD::D_DAIN_ADDR_LOW_0::kAddr, lo(in_addr));
    m.write32(CD::D_DAIN_ADDR_HIGH_0::kAddr, hi(in_addr));
    m.write32(CD::D_LINE_STRIDE::kAddr, in_surface().line_stride);
    m.write32(CD::D_SURF_STRIDE::kAddr, in_surface().surface_stride);
    m.write32(CD::D_WEIGHT_SIZE_0::kAddr, kernel_w * kernel_h * channels * 2 - 1);
    m.write32(CD::D_WEIGHT_SIZE_1::kAddr, kernels - 1);
    m.write32(CD::D_WEIGHT_ADDR_LOW::kAddr, lo(wt_addr));
    m.write32(CD::D_WEIGHT_ADDR_HIGH::kAddr, hi(wt_addr));
    m.write32(CD::D_WEIGHT_BYTES::kAddr, weight_bytes());
    m.write32(CD::D_CONV_STRIDE::kAddr,
              CD::D_CONV_STRIDE::CONV_Y_STRIDE.set(
                  CD::D_CONV_STRIDE::CONV_X_STRIDE.set(0, stride_x - 1), stride_y - 1));
    std::uint32_t pad = CD::D_ZERO_PADDING::PAD_LEFT.set(0, pad_left);
    pad = CD::D_ZERO_PADDING::PAD_RIGHT.set(pad, pad_right);
    pad = CD::D_ZERO_PADDING::PAD_TOP.set(pad, pad_top);
    pad = CD::D_ZERO_PADDING::PAD_BOTTOM.set(pad, pad_bottom);
    m.write32(CD::D_ZERO_PADDING::kAddr, pad);
    m.write32(CD::D_ZERO_PADDING_VALUE::kAddr, pad_value);
    const std::uint32_t entries = width * ((channels * 2 + 63) / 64);
    m.write32(CD::D_ENTRY_PER_SLICE::kAddr, entries - 1);
    m.write32(CD::D_BANK::kAddr, CD::D_BANK::WEIGHT_BANK.set(CD::D_BANK::DATA_BANK.set(0, 1), 3));
    m.write32(CD::D_NAN_FLUSH_TO_ZERO::kAddr, nan_to_zero ? 1 : 0);
    // CSC.
    m.write32(CS::D_MISC_CFG::kAddr,
              CS::D_MISC_CFG::PROC_PRECISION.set(CS::D_MISC_CFG::IN_PRECISION.set(0, fp16), fp16));
    m.write32(CS::D_DATAIN_SIZE_EXT_0::kAddr,
              CS::D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.set(
                  CS::D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.set(0, width - 1), height - 1));
    m.write32(CS::D_DATAIN_SIZE_EXT_1::kAddr, channels - 1);
    m.write32(CS::D_WEIGHT_SIZE_EXT_0::kAddr,
              CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_HEIGHT_EXT.set(
                  CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.set(0, kernel_w - 1), kernel_h - 1));
    m.write32(CS::D_WEIGHT_SIZE_EXT_1::kAddr,
              CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_KERNEL.set(
                  CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_CHANNEL_EXT.set(0, channels - 1), kernels - 1));
    m.write32(CS::D_CONV_STRIDE_EXT::kAddr,
              CS::D_CONV_STRIDE_EXT::CONV_Y_STRIDE_EXT.set(
                  CS::D_CONV_STRIDE_EXT::CONV_X_STRIDE_EXT.set(0, stride_x - 1), stride_y - 1));
    m.write32(CS::D_DILATION_EXT::kAddr, 0);
    m.write32(
        CS::D_ZERO_PADDING::kAddr,
        CS::D_ZERO_PADDING::PAD_TOP.set(CS::D_ZERO_PADDING::PAD_LEFT.set(0, pad_left), pad_top));
    m.write32(CS::D_ZERO_PADDING_VALUE::kAddr, pad_value);
    m.write32(CS::D_DATAOUT_SIZE_0::kAddr,
              CS::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.set(
                  CS::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.set(0, ow - 1), oh - 1));
    m.write32(CS::D_DATAOUT_SIZE_1::kAddr, kernels - 1);
    m.write32(CS::D_ATOMICS::kAddr, ow * oh - 1);
    m.write32(CS::D_RELEASE::kAddr, height - 1);
    m.write32(CS::D_BANK::kAddr, CS::D_BANK::WEIGHT_BANK.set(CS::D_BANK::DATA_BANK.set(0, 1), 3));
    // CMAC_A/B and CACC.
    m.write32(R::CMAC_A::D_MISC_CFG::kAddr, R::CMAC_A::D_MISC_CFG::PROC_PRECISION.set(0, fp16));
    m.write32(R::CMAC_B::D_MISC_CFG::kAddr, R::CMAC_B::D_MISC_CFG::PROC_PRECISION.set(0, fp16));
    m.write32(CA::D_MISC_CFG::kAddr, CA::D_MISC_CFG::PROC_PRECISION.set(0, fp16));
    m.write32(CA::D_DATAOUT_SIZE_0::kAddr,
              CA::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.set(
                  CA::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.set(0, ow - 1), oh - 1));
    m.write32(CA::D_DATAOUT_SIZE_1::kAddr, kernels - 1);
    m.write32(CA::D_CLIP_CFG::kAddr, 0);
    // Enable, consumer first.
    for (std::uint32_t e : {S::D_OP_ENABLE::kAddr, RD::D_OP_ENABLE::kAddr, CA::D_OP_ENABLE::kAddr,
                            R::CMAC_A::D_OP_ENABLE::kAddr, R::CMAC_B::D_OP_ENABLE::kAddr,
                            CS::D_OP_ENABLE::kAddr, CD::D_OP_ENABLE::kAddr}) {
      m.write32(e, 1);
    }
    m.wait_interrupt(R::GLB::S_INTR_STATUS::SDP_DONE_STATUS0.lsb);
  }
};

}  // namespace octasim::test
