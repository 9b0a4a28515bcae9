#include "firmware/dla/octav.hpp"

#include <cmath>
#include <string>
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
  if (l.auto_clamp && l.auto_program != OctavAutoProgram::kSdp) {
    fail("auto_clamp needs auto-program to SDP");
  }
}

// Passes program_sdp's writes through except the clamp stages and the convertor, which it
// replaces (BS: ALU MIN with a register operand, BN: ALU MAX; operand and convertor values
// from `clip`, or none at all when OCTAV writes them), and D_OP_ENABLE when deferred.
class ClipSdpMmio final : public Mmio {
 public:
  ClipSdpMmio(Mmio& inner, const std::optional<SdpClip>& clip, unsigned rdma_group, bool enable)
      : inner_(inner), clip_(clip), rdma_group_(rdma_group), enable_(enable) {}

  void write32(std::uint32_t addr, std::uint32_t value) override {
    namespace S = R::SDP;
    if (addr == R::SDP_RDMA::S_POINTER::kAddr) {  // SDP_RDMA's own next group
      inner_.write32(addr, R::SDP_RDMA::S_POINTER::PRODUCER.set(0, rdma_group_));
      return;
    }
    if (addr == S::D_DP_BS_CFG::kAddr) {  // MIN(x, hi)
      using C = S::D_DP_BS_CFG;
      inner_.write32(addr, C::BS_BYPASS.set(0, C::BS_BYPASS_NO) |
                               C::BS_ALU_BYPASS.set(0, C::BS_ALU_BYPASS_NO) |
                               C::BS_ALU_ALGO.set(0, C::BS_ALU_ALGO_MIN) |
                               C::BS_MUL_BYPASS.set(0, C::BS_MUL_BYPASS_YES) |
                               C::BS_RELU_BYPASS.set(0, C::BS_RELU_BYPASS_YES));
      return;
    }
    if (addr == S::D_DP_BN_CFG::kAddr) {  // MAX(x, lo)
      using C = S::D_DP_BN_CFG;
      inner_.write32(addr, C::BN_BYPASS.set(0, C::BN_BYPASS_NO) |
                               C::BN_ALU_BYPASS.set(0, C::BN_ALU_BYPASS_NO) |
                               C::BN_ALU_ALGO.set(0, C::BN_ALU_ALGO_MAX) |
                               C::BN_MUL_BYPASS.set(0, C::BN_MUL_BYPASS_YES) |
                               C::BN_RELU_BYPASS.set(0, C::BN_RELU_BYPASS_YES));
      return;
    }
    if (addr == S::D_DP_BS_ALU_CFG::kAddr || addr == S::D_DP_BN_ALU_CFG::kAddr) {
      inner_.write32(addr, 0);  // operand from the register, no shift
      return;
    }
    if (addr == S::D_DP_BS_ALU_SRC_VALUE::kAddr || addr == S::D_DP_BN_ALU_SRC_VALUE::kAddr) {
      if (!clip_) return;  // OCTAV's
      const bool bs = addr == S::D_DP_BS_ALU_SRC_VALUE::kAddr;
      inner_.write32(addr, static_cast<std::uint16_t>(bs ? clip_->clamp_hi : clip_->clamp_lo));
      return;
    }
    if (addr == S::D_CVT_OFFSET::kAddr || addr == S::D_CVT_SCALE::kAddr ||
        addr == S::D_CVT_SHIFT::kAddr) {
      if (!clip_) return;  // OCTAV's
      const SdpConvertor& c = clip_->cvt;
      inner_.write32(addr, addr == S::D_CVT_OFFSET::kAddr  ? static_cast<std::uint32_t>(c.offset)
                           : addr == S::D_CVT_SCALE::kAddr ? static_cast<std::uint16_t>(c.scale)
                                                           : c.shift);
      return;
    }
    if ((addr == S::D_OP_ENABLE::kAddr || addr == R::SDP_RDMA::D_OP_ENABLE::kAddr) && !enable_) {
      return;
    }
    inner_.write32(addr, value);
  }
  [[nodiscard]] std::uint32_t read32(std::uint32_t addr) override { return inner_.read32(addr); }
  void wait_interrupt(unsigned status_bit) override { inner_.wait_interrupt(status_bit); }

 private:
  Mmio& inner_;
  const std::optional<SdpClip>& clip_;
  unsigned rdma_group_;
  bool enable_;
};

SdpLayer plain_sdp(const ClipSdpLayer& l) {
  SdpLayer s;
  s.precision = l.precision;
  s.src = l.src;
  s.dst = l.dst;
  s.count_saturation = l.count_saturation;
  return s;
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
  ClipSdpMmio filtered(mmio, layer.clip, rdma_group & 1u, enable);
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
