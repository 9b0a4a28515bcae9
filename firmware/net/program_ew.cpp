// The element-wise Add of two tensors and the per-channel affine map on SDP's integer pipeline
// (builder.hpp): a residual Add fused into the convolution computing one addend (NVDLA's online
// element-wise mode: the flying SDP reads the other addend per element), an Add of two tensors or
// a BatchNormalization / per-channel Mul/Add as a memory-to-memory SDP layer; the multipliers and
// shifts come from ew_fixed_point.hpp, which derives their error bound.
#include <fmt/core.h>

#include "firmware/net/builder.hpp"
#include "firmware/net/ew_fixed_point.hpp"

namespace octasim::firmware::net::detail {
namespace {

// The sum of an Add and an affine map have no clamp after them (BN adds or multiplies; EW's ALU
// is the last integer unit), so their codes must be the INT8 range (calibrate.cpp gives 8 bits; a
// table could say otherwise).
void check_wide_codes(const TensorQuant& y, const std::string& who, const char* what) {
  if (y.max_code() < 127) {
    throw GraphError(fmt::format(
        "{}: {} is stored as 8-bit codes (SDP has no unit left to clamp it to the {} codes the "
        "calibration table gives)",
        who, what, y.max_code()));
  }
}

// The element-wise operand of an Add on `unit` with the fixed point `f`, and the output
// convertor it needs (EW: the sum's rescale; BN rescales with its own multiplier).
SdpElementwise add_operand(const FeatureSurface& e, SdpEwUnit unit, const EwAddFixedPoint& f,
                           SdpConvertor& cvt) {
  SdpElementwise ew(e, SdpEwOp::kAdd, unit);
  if (unit == SdpEwUnit::kBn) {
    ew.shift = f.operand_shift;
    ew.rescale = SdpRegisterScale{f.out_mul, f.out_shift};
    cvt = SdpConvertor{0, 1, 0};
  } else {
    ew.cvt = SdpOperandConvertor{0, static_cast<std::int16_t>(1 << f.operand_shift), 0};
    cvt = SdpConvertor{0, f.out_mul, f.out_shift};
  }
  return ew;
}

}  // namespace

SdpEwUnit Builder::ew_unit(bool relu, const std::string& who) const {
  if (hw_.dla.sdp_ew && !relu) return SdpEwUnit::kEw;
  if (hw_.dla.sdp_bn) return SdpEwUnit::kBn;
  throw GraphError(fmt::format("{}: {} SDP has no BN unit for an element-wise operand{}", who,
                               hw_.name,
                               relu ? " followed by a ReLU (EW has no ReLU after its ALU)" : ""));
}

SdpEwUnit Builder::channel_operand_unit(const std::string& who) const {
  if (!hw_.dla.sdp_bn) {
    throw GraphError(fmt::format("{}: {} SDP has no BN unit to multiply by a per-channel operand",
                                 who, hw_.name));
  }
  return SdpEwUnit::kBn;
}

SdpStage Builder::residual_stage(const QuantizedWeights& w, const PlannedLayer& l,
                                 const NetTensor& in, const NetTensor& dst,
                                 const std::string& who) {
  const ConvAttrs& a = l.conv;
  if (integer_) {
    throw GraphError(fmt::format(
        "{}: integer Add/Mul are not lowered (ONNX's uint8/int8 arithmetic wraps modulo 256, "
        "SDP saturates)",
        who));
  }
  const NetTensor& e = tensor(a.residual);
  const SdpEwUnit unit = ew_unit(a.relu, who);
  if (fp16()) {
    // Bias in BS, the addend in BN (ReLU after it) or EW; FP32 throughout, one FP16 rounding.
    SdpStage s = fp16_stage(w.bias, a, who);
    s.ew = SdpElementwise(e.surface, SdpEwOp::kAdd, unit);
    return s;
  }
  check_wide_codes(dst.quant, who, "the sum of an Add");
  std::vector<double> acc_step(w.scales.size());
  for (std::size_t k = 0; k < acc_step.size(); ++k) acc_step[k] = in.quant.step() * w.scales[k];
  const EwAddFixedPoint f =
      ew_add_fixed_point(acc_step, w.bias, e.quant.step(), dst.quant.step(), unit, who);
  SdpStage s;
  s.bias_scale =
      SdpBiasScale{constant(who + " bias/scale",
                            sdp_bias_scale_table(f.bs.alu, f.bs.mul, Precision::kInt8, atom())),
                   f.bs.alu_shift, f.bs.mul_shift};
  s.relu = a.relu;
  s.ew = add_operand(e.surface, unit, f, s.cvt);
  return s;
}

SdpLayer Builder::lower_sdp_quantized(const PlannedLayer& l, const NetTensor& in,
                                      const NetTensor& dst, const std::string& who) {
  const SdpAttrs& a = l.sdp;
  SdpLayer s;
  s.precision = Precision::kInt8;
  s.src = in.surface;
  s.dst = dst.surface;
  s.relu = a.relu;
  const std::uint32_t channels = in.surface.channels;
  if (a.ew == EwOp::kAdd && !a.operand.empty() && !g_.is_constant(a.operand)) {
    // x + e: the input's codes to the intermediate step by BS's multiplier, e by EW's convertor
    // or BN's shift, the sum to the output's step.
    check_wide_codes(dst.quant, who, "the sum of an Add");
    const NetTensor& e = tensor(a.operand);
    const SdpEwUnit unit = ew_unit(a.relu, who);
    const EwAddFixedPoint f = ew_add_fixed_point(std::vector<double>(channels, in.quant.step()), {},
                                                 e.quant.step(), dst.quant.step(), unit, who);
    s.bias_scale =
        SdpBiasScale{constant(who + " scale",
                              sdp_bias_scale_table(f.bs.alu, f.bs.mul, Precision::kInt8, atom())),
                     f.bs.alu_shift, f.bs.mul_shift};
    s.ew = add_operand(e.surface, unit, f, s.cvt);
  } else if (a.ew == EwOp::kMul && a.operand_per_channel) {
    // x * s[c] with s a tensor's codes, one per channel: BN's multiplier takes s from NRDMA
    // (PER_KERNEL, one byte a channel: s's own 1x1xC surface), the product q_x q_s exactly, then
    // the output convertor rescales it to the output's step (ew_fixed_point.hpp).
    check_wide_codes(dst.quant, who, "the product of a per-channel Mul");
    const NetTensor& e = tensor(a.operand);
    const ChannelMulFixedPoint f =
        channel_mul_fixed_point(in.quant.step(), e.quant.step(), dst.quant.step(), who);
    SdpElementwise ew(e.surface, SdpEwOp::kMul, channel_operand_unit(who));
    ew.per_channel = true;
    s.ew = ew;
    s.cvt = SdpConvertor{0, f.out_mul, f.out_shift};
  } else if (a.ew == EwOp::kNone && (!a.mul.empty() || !a.add.empty())) {
    // x * mul[c] + add[c]: BS multiplies exactly, BN adds the bias and scales per channel
    // (ew_fixed_point.hpp, affine_fixed_point).
    check_wide_codes(dst.quant, who, "an affine map");
    // Per surface channel: a padded (Concat) layout's unused channels x * 1 + 0.
    const std::size_t logical = std::max(a.mul.size(), a.add.size());
    const std::vector<double> mul =
        spread(a.mul.empty() ? std::vector<double>(logical, 1.0) : a.mul, dst, 1.0);
    const std::vector<double> add = a.add.empty() ? a.add : spread(a.add, dst, 0.0);
    const AffineFixedPoint f = affine_fixed_point(in.quant.step(), mul, add, dst.quant.step(), who);
    s.bias_scale = SdpBiasScale{
        constant(who + " scale", sdp_bias_scale_table(std::vector<std::int16_t>(mul.size(), 0),
                                                      f.bs_mul, Precision::kInt8, atom())),
        0, 0};
    s.bn_bias_scale =
        SdpBiasScale{constant(who + " bias/scale",
                              sdp_bias_scale_table(f.bn_alu, f.bn_mul, Precision::kInt8, atom())),
                     f.bn_alu_shift, f.bn_mul_shift};
    s.cvt = SdpConvertor{0, 1, 0};
  } else {
    throw GraphError(fmt::format(
        "{}: at {} SDP alone runs ReLU, BatchNormalization, a per-channel Mul/Add, a Mul by a "
        "per-channel tensor and an Add of two tensors (Mul of two tensors, PRelu and "
        "broadcast constants run at fp16)",
        who, precision_name(options_.precision)));
  }
  (void)sdp_model_config(s, atom());  // checks
  return s;
}

}  // namespace octasim::firmware::net::detail
