#include "firmware/dla/octav.hpp"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "models/numerics/float_format.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

namespace R = octasim::regs;

void check_octav(const OctavLayer& l) {
  const auto fail = [](const std::string& what) { throw FirmwareError("OCTAV layer: " + what); };
  if (l.bits < models::kMinQuantBits || l.bits > models::kMaxQuantBits) {
    fail(fmt::format("bits {} outside 2..16", l.bits));
  }
  if (l.max_iterations < 1 || l.max_iterations > 255) {
    fail(fmt::format("max_iterations {} outside 1..255", l.max_iterations));
  }
  if (!(l.tolerance >= 0.0f) || !std::isfinite(l.tolerance)) fail("tolerance must be >= 0");
  if (l.init == OctavInit::kRandom) fail("a random initial guess is not a mode of the unit");
  if (l.flat_length == 0) {
    if (l.src.width < 1 || l.src.width > 8192 || l.src.height < 1 || l.src.height > 8192 ||
        l.src.channels < 1 || l.src.channels > 8192) {
      fail("the feature cube must be 1..8192 in each dimension");
    }
  } else if (l.granularity == OctavGranularity::kChannel) {
    fail("per-channel granularity needs the feature layout");
  }
  if (l.granularity == OctavGranularity::kVector && l.vector_size == 0) {
    fail("per-vector granularity needs vector_size >= 1");
  }
  if (l.auto_program != OctavAutoProgram::kNone && l.granularity != OctavGranularity::kTensor) {
    fail("auto-program needs per-tensor granularity");
  }
  if (l.auto_program == OctavAutoProgram::kFakeQuant && l.type != OctavDataType::kInt8 &&
      l.type != OctavDataType::kInt16) {
    fail("fake-quant auto-program needs INT8 or INT16 data (the SDP's integer input)");
  }
  if (l.auto_clamp && l.auto_program != OctavAutoProgram::kSdp) {
    fail("auto_clamp needs auto-program to SDP");
  }
}

// Passes program_sdp's writes through except SDP_RDMA's S_POINTER (its own next group), the
// registers in `overrides` (written with the value given, or not at all without one: OCTAV's),
// and D_OP_ENABLE when deferred.
class SdpOverrideMmio final : public Mmio {
 public:
  using Overrides = std::vector<std::pair<std::uint32_t, std::optional<std::uint32_t>>>;
  SdpOverrideMmio(Mmio& inner, Overrides overrides, unsigned rdma_group, bool enable)
      : inner_(inner), overrides_(std::move(overrides)), rdma_group_(rdma_group), enable_(enable) {}

  void write32(std::uint32_t addr, std::uint32_t value) override {
    if (addr == R::SDP_RDMA::S_POINTER::kAddr) {
      inner_.write32(addr, R::SDP_RDMA::S_POINTER::PRODUCER.set(0, rdma_group_));
      return;
    }
    for (const auto& [a, v] : overrides_) {
      if (a != addr) continue;
      if (v) inner_.write32(addr, *v);
      return;
    }
    if ((addr == R::SDP::D_OP_ENABLE::kAddr || addr == R::SDP_RDMA::D_OP_ENABLE::kAddr) &&
        !enable_) {
      return;
    }
    inner_.write32(addr, value);
  }
  [[nodiscard]] std::uint32_t read32(std::uint32_t addr) override { return inner_.read32(addr); }
  void wait_interrupt(unsigned status_bit) override { inner_.wait_interrupt(status_bit); }

 private:
  Mmio& inner_;
  Overrides overrides_;
  unsigned rdma_group_;
  bool enable_;
};

// D_DP_BS_CFG / D_DP_BN_CFG (one layout): the stage on, its ALU with `algo`, the multiplier on
// or bypassed, ReLU on or bypassed.
std::uint32_t x_stage_cfg(std::uint32_t algo, bool mul, bool relu) {
  using C = R::SDP::D_DP_BS_CFG;
  return C::BS_BYPASS.set(0, C::BS_BYPASS_NO) | C::BS_ALU_BYPASS.set(0, C::BS_ALU_BYPASS_NO) |
         C::BS_ALU_ALGO.set(0, algo) |
         C::BS_MUL_BYPASS.set(0, mul ? C::BS_MUL_BYPASS_NO : C::BS_MUL_BYPASS_YES) |
         C::BS_MUL_PRELU.set(0, C::BS_MUL_PRELU_NO) |
         C::BS_RELU_BYPASS.set(0, relu ? C::BS_RELU_BYPASS_NO : C::BS_RELU_BYPASS_YES);
}

// The clamp stages and the convertor of ClipSdpLayer: BS ALU MIN (hi), BN ALU MAX (lo), register
// operands without shift; values from `clip`, or left to OCTAV.
SdpOverrideMmio::Overrides clip_overrides(const std::optional<SdpClip>& clip) {
  namespace S = R::SDP;
  using C = S::D_DP_BS_CFG;
  const auto value = [&](auto f) -> std::optional<std::uint32_t> {
    if (!clip) return std::nullopt;
    return f(*clip);
  };
  return {
      {S::D_DP_BS_CFG::kAddr, x_stage_cfg(C::BS_ALU_ALGO_MIN, false, false)},
      {S::D_DP_BN_CFG::kAddr, x_stage_cfg(C::BS_ALU_ALGO_MAX, false, false)},
      {S::D_DP_BS_ALU_CFG::kAddr, 0u},
      {S::D_DP_BN_ALU_CFG::kAddr, 0u},
      {S::D_DP_BS_ALU_SRC_VALUE::kAddr, value([](const SdpClip& c) {
         return std::uint32_t{static_cast<std::uint16_t>(c.clamp_hi)};
       })},
      {S::D_DP_BN_ALU_SRC_VALUE::kAddr, value([](const SdpClip& c) {
         return std::uint32_t{static_cast<std::uint16_t>(c.clamp_lo)};
       })},
      {S::D_CVT_OFFSET::kAddr,
       value([](const SdpClip& c) { return static_cast<std::uint32_t>(c.cvt.offset); })},
      {S::D_CVT_SCALE::kAddr, value([](const SdpClip& c) {
         return std::uint32_t{static_cast<std::uint16_t>(c.cvt.scale)};
       })},
      {S::D_CVT_SHIFT::kAddr, value([](const SdpClip& c) { return std::uint32_t{c.cvt.shift}; })},
  };
}

// The fake-quant stages: BS ALU MIN and multiplier (shift 0), ReLU for unsigned data; BN ALU MAX
// and multiplier; register operands from `params`, or left to OCTAV.
SdpOverrideMmio::Overrides fake_quant_overrides(const FakeQuantSdpLayer& l) {
  namespace S = R::SDP;
  using C = S::D_DP_BS_CFG;
  using AluCfg = S::D_DP_BN_ALU_CFG;
  using MulCfg = S::D_DP_BN_MUL_CFG;
  const std::optional<models::FakeQuantParams>& p = l.params;
  const auto value = [&](auto f) -> std::optional<std::uint32_t> {
    if (!p) return std::nullopt;
    return f(*p);
  };
  const auto u16 = [](std::int16_t v) { return std::uint32_t{static_cast<std::uint16_t>(v)}; };
  using P = models::FakeQuantParams;
  return {
      {S::D_DP_BS_CFG::kAddr, x_stage_cfg(C::BS_ALU_ALGO_MIN, true, l.is_unsigned)},
      {S::D_DP_BS_ALU_CFG::kAddr, 0u},  // register operand, no shift
      {S::D_DP_BS_ALU_SRC_VALUE::kAddr, value([&](const P& f) { return u16(f.hi); })},
      {S::D_DP_BS_MUL_CFG::kAddr, 0u},  // register operand, shift 0
      {S::D_DP_BS_MUL_SRC_VALUE::kAddr, value([&](const P& f) { return u16(f.r1); })},
      {S::D_DP_BN_CFG::kAddr, x_stage_cfg(C::BS_ALU_ALGO_MAX, true, false)},
      {AluCfg::kAddr, value([](const P& f) {
         return AluCfg::BN_ALU_SRC.set(0, AluCfg::BN_ALU_SRC_REG) |
                AluCfg::BN_ALU_SHIFT_VALUE.set(0, f.lo_shift);
       })},
      {S::D_DP_BN_ALU_SRC_VALUE::kAddr, value([&](const P& f) { return u16(f.lo); })},
      {MulCfg::kAddr, value([](const P& f) {
         return MulCfg::BN_MUL_SRC.set(0, MulCfg::BN_MUL_SRC_REG) |
                MulCfg::BN_MUL_SHIFT_VALUE.set(0, f.t2);
       })},
      {S::D_DP_BN_MUL_SRC_VALUE::kAddr, value([&](const P& f) { return u16(f.r2); })},
      {S::D_CVT_OFFSET::kAddr,
       value([](const P& f) { return static_cast<std::uint32_t>(f.cvt.offset); })},
      {S::D_CVT_SCALE::kAddr, value([&](const P& f) { return u16(f.cvt.scale); })},
      {S::D_CVT_SHIFT::kAddr, value([](const P& f) { return std::uint32_t{f.cvt.shift}; })},
  };
}

// The memory-to-memory SDP layer (surfaces, precision, counting) a clip or fake-quant layer
// programs its stages onto.
template <class Layer>
SdpLayer plain_sdp(const Layer& l) {
  SdpLayer s;
  s.precision = l.precision;
  s.src = l.src;
  s.dst = l.dst;
  s.count_saturation = l.count_saturation;
  return s;
}

void check_fake_quant_sdp(const FakeQuantSdpLayer& l, unsigned atom_bytes) {
  if (l.bits < models::kMinQuantBits || l.bits > models::kMaxQuantBits) {
    throw FirmwareError(fmt::format("fake-quant SDP: bits {} outside 2..16", l.bits));
  }
  (void)sdp_model_config(plain_sdp(l), atom_bytes);  // the surfaces (FirmwareError)
}

models::Signedness signedness(bool is_unsigned) {
  return is_unsigned ? models::Signedness::kUnsigned : models::Signedness::kSigned;
}

}  // namespace

unsigned program_octav(Mmio& mmio, const OctavLayer& l, unsigned group) {
  check_octav(l);
  using M = R::OCTAV::D_MISC_CFG;
  std::uint32_t misc = M::DATA_TYPE.set(0, static_cast<std::uint32_t>(l.type));
  misc = M::SIGNEDNESS.set(misc, l.is_unsigned ? M::SIGNEDNESS_UNSIGNED : M::SIGNEDNESS_SIGNED);
  misc = M::LAYOUT.set(misc, l.flat_length > 0 ? M::LAYOUT_FLAT : M::LAYOUT_FEATURE);
  misc = M::GRANULARITY.set(misc, static_cast<std::uint32_t>(l.granularity));
  misc = M::INIT_MODE.set(misc, l.init == OctavInit::kZero    ? M::INIT_MODE_ZERO
                                : l.init == OctavInit::kValue ? M::INIT_MODE_VALUE
                                                              : M::INIT_MODE_HALF_MAX);
  misc = M::AUTO_PROGRAM.set(misc, static_cast<std::uint32_t>(l.auto_program));
  misc = M::AUTO_CLAMP.set(misc, l.auto_clamp ? M::AUTO_CLAMP_ENABLE : M::AUTO_CLAMP_DISABLE);
  mmio.write32(R::OCTAV::S_POINTER::kAddr, R::OCTAV::S_POINTER::PRODUCER.set(0, group & 1u));
  mmio.write32(M::kAddr, misc);
  mmio.write32(R::OCTAV::D_BITS::kAddr, static_cast<std::uint32_t>(l.bits));
  mmio.write32(R::OCTAV::D_SRC_BASE_ADDR_LOW::kAddr, low32(l.src.address));
  mmio.write32(R::OCTAV::D_SRC_BASE_ADDR_HIGH::kAddr, high32(l.src.address));
  if (l.flat_length > 0) {
    mmio.write32(R::OCTAV::D_FLAT_LENGTH::kAddr, l.flat_length);
  } else {
    mmio.write32(R::OCTAV::D_DATAIN_SIZE_0::kAddr, (l.src.width - 1) | (l.src.height - 1) << 16);
    mmio.write32(R::OCTAV::D_DATAIN_SIZE_1::kAddr, l.src.channels - 1);
    mmio.write32(R::OCTAV::D_SRC_LINE_STRIDE::kAddr, l.src.line_stride);
    mmio.write32(R::OCTAV::D_SRC_SURFACE_STRIDE::kAddr, l.src.surface_stride);
  }
  if (l.granularity == OctavGranularity::kVector) {
    mmio.write32(R::OCTAV::D_VECTOR_SIZE::kAddr, l.vector_size);
  }
  mmio.write32(R::OCTAV::D_MAX_ITERATIONS::kAddr, static_cast<std::uint32_t>(l.max_iterations));
  mmio.write32(R::OCTAV::D_TOLERANCE::kAddr, models::fp32_to_bits(l.tolerance));
  if (l.init == OctavInit::kValue) {
    mmio.write32(R::OCTAV::D_INITIAL_VALUE::kAddr, models::fp32_to_bits(l.initial_value));
  }
  if (l.granularity != OctavGranularity::kTensor) {
    mmio.write32(R::OCTAV::D_RESULT_ADDR_LOW::kAddr, low32(l.result_address));
    mmio.write32(R::OCTAV::D_RESULT_ADDR_HIGH::kAddr, high32(l.result_address));
  }
  mmio.write32(R::OCTAV::D_OP_ENABLE::kAddr, R::OCTAV::D_OP_ENABLE::OP_EN_ENABLE);
  return R::GLB::S_INTR_STATUS::OCTAV_DONE_STATUS0.lsb + (group & 1u);
}

double dequantized_mse(const std::vector<double>& codes, const SdpConvertor& cvt,
                       const std::vector<double>& reference) {
  const double m = std::ldexp(static_cast<double>(cvt.scale), -static_cast<int>(cvt.shift));
  double sum = 0.0;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const double e = codes[i] / m - reference[i];
    sum += e * e;
  }
  return sum / static_cast<double>(codes.size());
}

SdpClip sdp_clip_fields(double s, int bits, bool is_unsigned) {
  const models::Signedness sign =
      is_unsigned ? models::Signedness::kUnsigned : models::Signedness::kSigned;
  models::ConvertorParams p;
  models::ClampBounds b;
  try {
    p = models::clip_to_convertor(s, bits, sign);
    b = models::clip_to_clamp(s, sign);
  } catch (const std::invalid_argument& e) {
    throw FirmwareError(std::string("clip fields: ") + e.what());
  }
  SdpClip c;
  c.cvt = SdpConvertor{p.offset, p.scale, p.shift};
  c.clamp_lo = b.lo;
  c.clamp_hi = b.hi;
  return c;
}

unsigned program_clip_sdp(Mmio& mmio, const ClipSdpLayer& layer, unsigned group,
                          unsigned rdma_group, unsigned atom_bytes, bool enable) {
  SdpOverrideMmio filtered(mmio, clip_overrides(layer.clip), rdma_group & 1u, enable);
  return program_sdp(filtered, plain_sdp(layer), group, atom_bytes);
}

void enable_sdp(Mmio& mmio) {
  mmio.write32(R::SDP_RDMA::D_OP_ENABLE::kAddr, R::SDP_RDMA::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(R::SDP::D_OP_ENABLE::kAddr, R::SDP::D_OP_ENABLE::OP_EN_ENABLE);
}

models::ops::SdpConfig clip_sdp_model_config(const ClipSdpLayer& layer, const SdpClip& clip,
                                             unsigned atom_bytes) {
  models::ops::SdpConfig c = sdp_model_config(plain_sdp(layer), atom_bytes);
  c.bs = models::ops::SdpXConfig{};
  c.bs.bypass = false;
  c.bs.alu_bypass = false;
  c.bs.alu_algo = models::SdpAluAlgo::kMin;
  c.bs.alu_operand = clip.clamp_hi;
  c.bn = models::ops::SdpXConfig{};
  c.bn.bypass = false;
  c.bn.alu_bypass = false;
  c.bn.alu_algo = models::SdpAluAlgo::kMax;
  c.bn.alu_operand = clip.clamp_lo;
  c.cvt = models::ConvertorParams{clip.cvt.offset, clip.cvt.scale,
                                  static_cast<std::uint8_t>(clip.cvt.shift)};
  return c;
}

OctavSdpBits program_octav_sdp(Mmio& mmio, const OctavLayer& octav, const ClipSdpLayer& sdp,
                               unsigned octav_group, unsigned sdp_group, unsigned sdp_rdma_group,
                               unsigned atom_bytes) {
  if (octav.auto_program != OctavAutoProgram::kSdp || sdp.clip) {
    throw FirmwareError(
        "OCTAV -> SDP: OCTAV must auto-program SDP, and the SDP layer take no clip");
  }
  check_octav(octav);
  (void)sdp_model_config(plain_sdp(sdp), atom_bytes);  // refusals before any write
  OctavSdpBits bits;
  bits.octav = program_octav(mmio, octav, octav_group);
  bits.sdp = program_clip_sdp(mmio, sdp, sdp_group, sdp_rdma_group, atom_bytes, false);
  mmio.wait_interrupt(bits.octav);
  enable_sdp(mmio);
  mmio.wait_interrupt(bits.sdp);
  return bits;
}

models::FakeQuantParams fake_quant_fields(double s, int bits, bool is_unsigned) {
  try {
    return models::clip_to_fake_quant(s, bits, signedness(is_unsigned));
  } catch (const std::invalid_argument& e) {
    throw FirmwareError(std::string("fake-quant fields: ") + e.what());
  }
}

unsigned program_fake_quant_sdp(Mmio& mmio, const FakeQuantSdpLayer& layer, unsigned group,
                                unsigned rdma_group, unsigned atom_bytes, bool enable) {
  check_fake_quant_sdp(layer, atom_bytes);
  SdpOverrideMmio filtered(mmio, fake_quant_overrides(layer), rdma_group & 1u, enable);
  return program_sdp(filtered, plain_sdp(layer), group, atom_bytes);
}

models::ops::SdpConfig fake_quant_sdp_model_config(const FakeQuantSdpLayer& layer,
                                                   const models::FakeQuantParams& params,
                                                   unsigned atom_bytes) {
  check_fake_quant_sdp(layer, atom_bytes);
  models::ops::SdpConfig c = sdp_model_config(plain_sdp(layer), atom_bytes);
  const models::FakeQuantStages st =
      models::fake_quant_stages(params, signedness(layer.is_unsigned));
  c.bs = st.bs;
  c.bn = st.bn;
  c.cvt = st.cvt;
  return c;
}

models::ops::SdpConfig fake_quant_sdp_model_config(const FakeQuantSdpLayer& layer, double s,
                                                   unsigned atom_bytes) {
  return fake_quant_sdp_model_config(layer, fake_quant_fields(s, layer.bits, layer.is_unsigned),
                                     atom_bytes);
}

OctavSdpBits program_octav_fake_quant(Mmio& mmio, const OctavLayer& octav,
                                      const FakeQuantSdpLayer& sdp, unsigned octav_group,
                                      unsigned sdp_group, unsigned sdp_rdma_group,
                                      unsigned atom_bytes) {
  const auto fail = [](const std::string& what) {
    throw FirmwareError("OCTAV -> fake-quant SDP: " + what);
  };
  if (octav.auto_program != OctavAutoProgram::kFakeQuant) {
    fail("OCTAV must auto-program FAKEQUANT");
  }
  if (sdp.params) fail("the SDP layer must leave its operands to OCTAV (no params)");
  const OctavDataType want =
      sdp.precision == Precision::kInt8 ? OctavDataType::kInt8 : OctavDataType::kInt16;
  if (octav.type != want) fail("OCTAV's data type must be the SDP's precision");
  if (octav.bits != sdp.bits || octav.is_unsigned != sdp.is_unsigned) {
    fail(fmt::format("OCTAV's B and signedness ({}, {}) must be the SDP layer's ({}, {})",
                     octav.bits, octav.is_unsigned ? "unsigned" : "signed", sdp.bits,
                     sdp.is_unsigned ? "unsigned" : "signed"));
  }
  check_octav(octav);
  check_fake_quant_sdp(sdp, atom_bytes);
  OctavSdpBits bits;
  bits.octav = program_octav(mmio, octav, octav_group);
  bits.sdp = program_fake_quant_sdp(mmio, sdp, sdp_group, sdp_rdma_group, atom_bytes, false);
  mmio.wait_interrupt(bits.octav);
  enable_sdp(mmio);
  mmio.wait_interrupt(bits.sdp);
  return bits;
}

QuantizedConvBits program_quantized_conv(Mmio& mmio, const QuantizedConvLayer& layer,
                                         const ConvHardware& hw, unsigned conv_group,
                                         unsigned octav_group) {
  if (layer.conv.precision != Precision::kInt16) {
    throw FirmwareError(
        "quantized conv: the convolution must be INT16 (OCTAV reads its INT16 output; NVDLA's "
        "SDP cannot write INT32)");
  }
  // The units' next groups once the convolution has run: SDP's moved on; SDP_RDMA's only if the
  // convolution's SDP read operands through it.
  const unsigned sdp_group = (conv_group + 1) & 1u;
  const bool conv_used_rdma = layer.conv.sdp.bias.has_value() || layer.conv.sdp.scale.has_value();
  const unsigned sdp_rdma_group = conv_used_rdma ? sdp_group : conv_group & 1u;
  OctavLayer o;
  o.type = OctavDataType::kInt16;
  o.src = layer.conv.dst;
  o.bits = layer.bits;
  o.max_iterations = layer.max_iterations;
  o.tolerance = layer.tolerance;
  o.auto_program = OctavAutoProgram::kSdp;
  o.auto_clamp = true;
  check_octav(o);
  ClipSdpLayer s;
  s.src = layer.conv.dst;
  s.dst = layer.sdp_out;
  // Checks the SDP layer (FirmwareError) before the first register is written.
  (void)sdp_model_config(plain_sdp(s), hw.atom_bytes);
  QuantizedConvBits bits;
  bits.conv = program_conv(mmio, layer.conv, conv_group, hw);
  mmio.wait_interrupt(bits.conv);
  const OctavSdpBits os =
      program_octav_sdp(mmio, o, s, octav_group, sdp_group, sdp_rdma_group, hw.atom_bytes);
  bits.octav = os.octav;
  bits.sdp = os.sdp;
  return bits;
}

}  // namespace octasim::firmware
