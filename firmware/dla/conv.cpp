#include "firmware/dla/conv.hpp"

#include <algorithm>
#include <string>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

namespace CD = regs::CDMA;
namespace CS = regs::CSC;
namespace MA = regs::CMAC_A;
namespace MB = regs::CMAC_B;
namespace CA = regs::CACC;
namespace S = regs::SDP;
namespace RD = regs::SDP_RDMA;

using models::ops::ConvPrecision;

constexpr std::uint32_t kWeightAlign = 128;     // CDMA fetches weights in 128-byte units
constexpr std::uint32_t kWeightAddrAlign = 32;  // NVDLA's firmware: CHECK_ALIGN(weight, 32)

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}

std::uint32_t next_pow2(std::uint32_t v) {
  std::uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

ConvPrecision model_precision(Precision p) {
  return p == Precision::kInt8 ? ConvPrecision::kInt8 : ConvPrecision::kInt16;
}

std::uint32_t dilated(std::uint32_t kernel, std::uint32_t dilation) {
  return (kernel - 1) * dilation + 1;
}

void range(const char* what, std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
  if (v < lo || v > hi) {
    throw FirmwareError(fmt::format("convolution: {} {} is outside {}..{}", what, v, lo, hi));
  }
}

void check_sdp_stage(const ConvSdpStage& s, unsigned atom_bytes) {
  const auto operand = [&](const std::optional<SdpPerChannel>& op, const char* what) {
    if (!op) return;
    if (op->shift > 63) {
      throw FirmwareError(
          fmt::format("convolution: SDP {} shift {} is outside 0..63", what, op->shift));
    }
    if (op->address % atom_bytes != 0) {
      throw FirmwareError(
          fmt::format("convolution: SDP {} table address 0x{:x} is not aligned to the {}-byte "
                      "atom",
                      what, op->address, atom_bytes));
    }
  };
  operand(s.bias, "bias");
  operand(s.scale, "scale");
  if (s.cvt.shift > 63) {
    throw FirmwareError(
        fmt::format("convolution: SDP output convertor shift {} is outside 0..63", s.cvt.shift));
  }
}

std::uint32_t entries_per_slice(const ConvLayer& l, const ConvHardware& hw) {
  const std::uint32_t surfaces = surface_count(l.src, l.precision, hw.atom_bytes);
  const std::uint32_t atoms_per_entry = std::max(1u, hw.cbuf_bank_width / hw.atom_bytes);
  const std::uint32_t whole = surfaces / atoms_per_entry;
  const std::uint32_t rest = surfaces % atoms_per_entry;
  std::uint64_t eps = std::uint64_t{whole} * l.src.width;
  // A trailing part of r atoms (rounded up to a power of two) shares an entry between
  // atoms_per_entry / r width positions.
  if (rest != 0) eps += ceil_div(std::uint64_t{l.src.width} * next_pow2(rest), atoms_per_entry);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(eps, 0xffffffffu));
}

// Fills the SdpLayer that sdp_model_config understands with the flying stage: SDP's cube is the
// output cube (src is a stand-in; flying SDP reads no input surface).
SdpLayer sdp_layer_of(const ConvLayer& l) {
  SdpLayer s;
  s.precision = l.precision;
  s.src = l.dst;
  s.dst = l.dst;
  s.bias = l.sdp.bias;
  s.scale = l.sdp.scale;
  s.relu = l.sdp.relu;
  s.cvt = l.sdp.cvt;
  s.count_saturation = l.sdp.count_saturation;
  return s;
}

std::uint32_t rdma_cfg(bool enabled, std::uint32_t data_use) {
  using C = RD::D_BRDMA_CFG;  // NRDMA shares the layout
  if (!enabled) return C::BRDMA_DISABLE.set(0, C::BRDMA_DISABLE_YES);
  std::uint32_t v = C::BRDMA_DISABLE.set(0, C::BRDMA_DISABLE_NO);
  v = C::BRDMA_DATA_USE.set(v, data_use);
  v = C::BRDMA_DATA_SIZE.set(v, C::BRDMA_DATA_SIZE_TWO_BYTE);
  v = C::BRDMA_DATA_MODE.set(v, C::BRDMA_DATA_MODE_PER_KERNEL);
  return C::BRDMA_RAM_TYPE.set(v, C::BRDMA_RAM_TYPE_MC);
}

// One X stage (BS or BN) as D_DP_{BS,BN}_CFG encode it (both share the bit layout).
std::uint32_t x_cfg(bool used, bool alu_sum, bool mul, bool relu) {
  using C = S::D_DP_BS_CFG;
  if (!used) {
    return C::BS_BYPASS.set(0, 1) | C::BS_ALU_BYPASS.set(0, 1) | C::BS_MUL_BYPASS.set(0, 1) |
           C::BS_RELU_BYPASS.set(0, 1);
  }
  std::uint32_t v = C::BS_BYPASS.set(0, C::BS_BYPASS_NO);
  v = C::BS_ALU_BYPASS.set(v, alu_sum ? C::BS_ALU_BYPASS_NO : C::BS_ALU_BYPASS_YES);
  v = C::BS_ALU_ALGO.set(v, alu_sum ? C::BS_ALU_ALGO_SUM : C::BS_ALU_ALGO_MAX);
  v = C::BS_MUL_BYPASS.set(v, mul ? C::BS_MUL_BYPASS_NO : C::BS_MUL_BYPASS_YES);
  v = C::BS_MUL_PRELU.set(v, C::BS_MUL_PRELU_NO);
  return C::BS_RELU_BYPASS.set(v, relu ? C::BS_RELU_BYPASS_NO : C::BS_RELU_BYPASS_YES);
}

void program_sdp_flying(Mmio& mmio, const ConvLayer& l, unsigned atom_bytes) {
  const ConvSdpStage& st = l.sdp;
  const bool rdma = st.bias.has_value() || st.scale.has_value();
  const auto p = static_cast<std::uint32_t>(l.precision);
  // Bias in BS, the multiplier in BN, ReLU in the last stage used (BS alone when neither).
  const bool bn_used = st.scale.has_value();
  const bool bn_relu = bn_used && st.relu;
  const bool bs_used = st.bias.has_value() || (st.relu && !bn_used);
  const bool bs_relu = st.relu && !bn_used;
  const std::uint32_t op_stride = channels_per_atom(l.precision, atom_bytes) * 2u;

  if (rdma) {
    mmio.write32(RD::D_DATA_CUBE_WIDTH::kAddr, l.dst.width - 1);
    mmio.write32(RD::D_DATA_CUBE_HEIGHT::kAddr, l.dst.height - 1);
    mmio.write32(RD::D_DATA_CUBE_CHANNEL::kAddr, l.dst.channels - 1);
    mmio.write32(RD::D_BRDMA_CFG::kAddr,
                 rdma_cfg(st.bias.has_value(), RD::D_BRDMA_CFG::BRDMA_DATA_USE_ALU));
    if (st.bias) {
      mmio.write32(RD::D_BS_BASE_ADDR_LOW::kAddr, low32(st.bias->address));
      mmio.write32(RD::D_BS_BASE_ADDR_HIGH::kAddr, high32(st.bias->address));
      mmio.write32(RD::D_BS_LINE_STRIDE::kAddr, op_stride);
      mmio.write32(RD::D_BS_SURFACE_STRIDE::kAddr, op_stride);
    }
    mmio.write32(RD::D_NRDMA_CFG::kAddr,
                 rdma_cfg(st.scale.has_value(), RD::D_NRDMA_CFG::NRDMA_DATA_USE_MUL));
    if (st.scale) {
      mmio.write32(RD::D_BN_BASE_ADDR_LOW::kAddr, low32(st.scale->address));
      mmio.write32(RD::D_BN_BASE_ADDR_HIGH::kAddr, high32(st.scale->address));
      mmio.write32(RD::D_BN_LINE_STRIDE::kAddr, op_stride);
      mmio.write32(RD::D_BN_SURFACE_STRIDE::kAddr, op_stride);
    }
    mmio.write32(RD::D_ERDMA_CFG::kAddr, rdma_cfg(false, 0));
    using M = RD::D_FEATURE_MODE_CFG;
    std::uint32_t v = M::FLYING_MODE.set(0, M::FLYING_MODE_ON);
    v = M::IN_PRECISION.set(v, p);
    v = M::PROC_PRECISION.set(v, p);
    mmio.write32(M::kAddr, M::OUT_PRECISION.set(v, p));
  }

  mmio.write32(S::D_DATA_CUBE_WIDTH::kAddr, l.dst.width - 1);
  mmio.write32(S::D_DATA_CUBE_HEIGHT::kAddr, l.dst.height - 1);
  mmio.write32(S::D_DATA_CUBE_CHANNEL::kAddr, l.dst.channels - 1);
  mmio.write32(S::D_DST_BASE_ADDR_LOW::kAddr, low32(l.dst.address));
  mmio.write32(S::D_DST_BASE_ADDR_HIGH::kAddr, high32(l.dst.address));
  mmio.write32(S::D_DST_LINE_STRIDE::kAddr, l.dst.line_stride);
  mmio.write32(S::D_DST_SURFACE_STRIDE::kAddr, l.dst.surface_stride);

  mmio.write32(S::D_DP_BS_CFG::kAddr, x_cfg(bs_used, st.bias.has_value(), false, bs_relu));
  mmio.write32(S::D_DP_BS_ALU_CFG::kAddr,
               st.bias ? S::D_DP_BS_ALU_CFG::BS_ALU_SRC.set(0, S::D_DP_BS_ALU_CFG::BS_ALU_SRC_MEM) |
                             S::D_DP_BS_ALU_CFG::BS_ALU_SHIFT_VALUE.set(0, st.bias->shift)
                       : 0u);
  mmio.write32(S::D_DP_BS_ALU_SRC_VALUE::kAddr, 0);
  mmio.write32(S::D_DP_BS_MUL_CFG::kAddr, 0);
  mmio.write32(S::D_DP_BS_MUL_SRC_VALUE::kAddr, 0);

  mmio.write32(S::D_DP_BN_CFG::kAddr, x_cfg(bn_used, false, bn_used, bn_relu));
  mmio.write32(S::D_DP_BN_ALU_CFG::kAddr, 0);
  mmio.write32(S::D_DP_BN_ALU_SRC_VALUE::kAddr, 0);
  mmio.write32(S::D_DP_BN_MUL_CFG::kAddr,
               st.scale
                   ? S::D_DP_BN_MUL_CFG::BN_MUL_SRC.set(0, S::D_DP_BN_MUL_CFG::BN_MUL_SRC_MEM) |
                         S::D_DP_BN_MUL_CFG::BN_MUL_SHIFT_VALUE.set(0, st.scale->shift)
                   : 0u);
  mmio.write32(S::D_DP_BN_MUL_SRC_VALUE::kAddr, 0);
  {
    using E = S::D_DP_EW_CFG;
    mmio.write32(E::kAddr, E::EW_BYPASS.set(0, E::EW_BYPASS_YES) |
                               E::EW_ALU_BYPASS.set(0, E::EW_ALU_BYPASS_YES) |
                               E::EW_MUL_BYPASS.set(0, E::EW_MUL_BYPASS_YES) |
                               E::EW_LUT_BYPASS.set(0, E::EW_LUT_BYPASS_YES));
  }
  {
    using M = S::D_FEATURE_MODE_CFG;
    mmio.write32(M::kAddr, M::FLYING_MODE.set(0, M::FLYING_MODE_ON) |
                               M::OUTPUT_DST.set(0, M::OUTPUT_DST_MEM) |
                               M::WINOGRAD.set(0, M::WINOGRAD_OFF) |
                               M::NAN_TO_ZERO.set(0, M::NAN_TO_ZERO_DISABLE));
  }
  mmio.write32(S::D_DST_DMA_CFG::kAddr,
               S::D_DST_DMA_CFG::DST_RAM_TYPE.set(0, S::D_DST_DMA_CFG::DST_RAM_TYPE_MC));
  mmio.write32(S::D_DATA_FORMAT::kAddr, S::D_DATA_FORMAT::PROC_PRECISION.set(0, p) |
                                            S::D_DATA_FORMAT::OUT_PRECISION.set(0, p));
  mmio.write32(S::D_CVT_OFFSET::kAddr, static_cast<std::uint32_t>(st.cvt.offset));
  mmio.write32(S::D_CVT_SCALE::kAddr, static_cast<std::uint16_t>(st.cvt.scale));
  mmio.write32(S::D_CVT_SHIFT::kAddr, st.cvt.shift);
  mmio.write32(S::D_PERF_ENABLE::kAddr,
               S::D_PERF_ENABLE::PERF_SAT_EN.set(0, st.count_saturation ? 1 : 0));
}

}  // namespace

ConvCubeSize conv_output_cube(const ConvLayer& l) {
  ConvCubeSize c;
  c.width = models::ops::conv_output_size(l.src.width, l.pad_left, l.pad_right, l.kernel_width,
                                          l.dilation_x, l.stride_x);
  c.height = models::ops::conv_output_size(l.src.height, l.pad_top, l.pad_bottom, l.kernel_height,
                                           l.dilation_y, l.stride_y);
  c.channels = l.kernels;
  return c;
}

ConvPlan plan_conv(const ConvLayer& l, const ConvHardware& hw) {
  if (hw.atom_bytes == 0 || hw.cbuf_bank_width == 0 || hw.cbuf_bank_depth == 0 ||
      hw.cbuf_bank_number < 2 || hw.mac_atomic_c == 0 || hw.mac_atomic_k < 2) {
    throw FirmwareError("convolution: the hardware description has an empty CBUF or MAC array");
  }
  if (l.precision == Precision::kInt8 && !hw.int8) {
    throw FirmwareError("convolution: INT8 is not supported by this configuration");
  }
  if (l.precision == Precision::kInt16 && !hw.int16) {
    throw FirmwareError("convolution: INT16 is not supported by this configuration");
  }
  check_surface(l.src, l.precision, hw.atom_bytes, "convolution input");
  check_surface(l.dst, l.precision, hw.atom_bytes, "convolution output");
  range("kernel count", l.kernels, 1, 8192);
  range("kernel width", l.kernel_width, 1, 32);
  range("kernel height", l.kernel_height, 1, 32);
  range("stride x", l.stride_x, 1, 8);
  range("stride y", l.stride_y, 1, 8);
  range("dilation x", l.dilation_x, 1, 32);
  range("dilation y", l.dilation_y, 1, 32);
  range("left padding", l.pad_left, 0, 31);
  range("top padding", l.pad_top, 0, 31);
  range("right padding", l.pad_right, 0, 63);
  range("bottom padding", l.pad_bottom, 0, 63);
  range("CACC clip truncate", l.clip_truncate, 0, 31);
  const std::int64_t pad_min = l.precision == Precision::kInt8 ? -128 : -32768;
  const std::int64_t pad_max = l.precision == Precision::kInt8 ? 127 : 32767;
  if (l.pad_value < pad_min || l.pad_value > pad_max) {
    throw FirmwareError(fmt::format("convolution: padding value {} is outside {}..{} ({})",
                                    l.pad_value, pad_min, pad_max, precision_name(l.precision)));
  }
  const std::uint32_t span_x = dilated(l.kernel_width, l.dilation_x);
  const std::uint32_t span_y = dilated(l.kernel_height, l.dilation_y);
  if (l.pad_left >= span_x || l.pad_right >= span_x || l.pad_top >= span_y ||
      l.pad_bottom >= span_y) {
    throw FirmwareError(fmt::format(
        "convolution: padding (left {}, right {}, top {}, bottom {}) must be smaller than the "
        "kernel's extent {}x{}",
        l.pad_left, l.pad_right, l.pad_top, l.pad_bottom, span_x, span_y));
  }
  const ConvCubeSize out = conv_output_cube(l);
  if (out.width == 0 || out.height == 0) {
    throw FirmwareError(fmt::format(
        "convolution: a {}x{} kernel (dilated {}x{}) does not fit the padded {}x{} input",
        l.kernel_width, l.kernel_height, span_x, span_y, l.src.width, l.src.height));
  }
  if (l.dst.width != out.width || l.dst.height != out.height || l.dst.channels != out.channels) {
    throw FirmwareError(fmt::format(
        "convolution: output surface is {}x{}x{} but the layer produces {}x{}x{}", l.dst.width,
        l.dst.height, l.dst.channels, out.width, out.height, out.channels));
  }
  if (l.dst.line_stride > 0xffffffu || l.dst.surface_stride > 0xffffffu) {
    throw FirmwareError("convolution: output strides above 2^24 - 1 do not fit CACC's registers");
  }
  if (l.weight_address % kWeightAddrAlign != 0) {
    throw FirmwareError(fmt::format("convolution: weight address 0x{:x} is not aligned to {} bytes",
                                    l.weight_address, kWeightAddrAlign));
  }
  check_sdp_stage(l.sdp, hw.atom_bytes);

  ConvPlan p;
  p.out_width = out.width;
  p.out_height = out.height;
  // Right/bottom padding only as far as the last output reaches (the guide's rule
  // (out - 1) * stride + S' == PL + W + PR); the output size stays the same.
  const auto used_pad = [](std::uint32_t outs, std::uint32_t stride, std::uint32_t span,
                           std::uint32_t before, std::uint32_t in) {
    const std::int64_t reach = std::int64_t{outs - 1} * stride + span;
    return static_cast<std::uint32_t>(std::max<std::int64_t>(0, reach - before - in));
  };
  p.pad_right = used_pad(out.width, l.stride_x, span_x, l.pad_left, l.src.width);
  p.pad_bottom = used_pad(out.height, l.stride_y, span_y, l.pad_top, l.src.height);

  const std::uint64_t bpe = element_bytes(l.precision);
  const std::uint64_t per_kernel =
      std::uint64_t{l.kernel_width} * l.kernel_height * l.src.channels * bpe;
  if (per_kernel > (1u << 18)) {
    throw FirmwareError(fmt::format(
        "convolution: a kernel of {} bytes exceeds CDMA's BYTE_PER_KERNEL limit of {} bytes",
        per_kernel, 1u << 18));
  }
  p.bytes_per_kernel = static_cast<std::uint32_t>(per_kernel);
  const std::uint64_t weight_bytes = ceil_div(per_kernel * l.kernels, kWeightAlign) * kWeightAlign;
  if (weight_bytes > 0xffffffffu) {
    throw FirmwareError("convolution: the weights exceed 4 GiB");
  }
  p.weight_bytes = static_cast<std::uint32_t>(weight_bytes);
  if (l.compressed) {
    const ConvCompressedWeights& c = *l.compressed;
    if (!hw.weight_compression) {
      throw FirmwareError("convolution: compressed weights need hardware with weight compression");
    }
    for (const auto& [what, a] : {std::pair{"WMB", c.wmb_address}, {"WGS", c.wgs_address}}) {
      if (a % kWeightAddrAlign != 0) {
        throw FirmwareError(fmt::format("convolution: {} address 0x{:x} is not aligned to {} bytes",
                                        what, a, kWeightAddrAlign));
      }
    }
    if (c.data_bytes == 0 || c.data_bytes % kWeightAlign != 0) {
      throw FirmwareError(fmt::format(
          "convolution: compressed weight data of {} bytes is not a positive multiple of {}",
          c.data_bytes, kWeightAlign));
    }
    p.weight_bytes = c.data_bytes;
    const std::uint64_t wmb = models::ops::wmb_surface_bytes(per_kernel * l.kernels / bpe);
    if (wmb >= (1u << 28)) {
      throw FirmwareError(fmt::format(
          "convolution: the WMB of {} bytes exceeds D_WMB_BYTES' limit of {}", wmb, 1u << 28));
    }
    p.wmb_bytes = static_cast<std::uint32_t>(wmb);
  }

  p.entries_per_slice = entries_per_slice(l, hw);
  if (p.entries_per_slice > (1u << 14)) {
    throw FirmwareError(
        fmt::format("convolution: one input line takes {} CBUF entries, above CDMA's limit of {}",
                    p.entries_per_slice, 1u << 14));
  }
  // D_BANK fields: 5 bits. Compressed weights: the last bank holds the WMB.
  const unsigned max_banks = std::min(hw.cbuf_bank_number, 32u) - (l.compressed ? 1 : 0);
  const std::uint64_t bank_bytes = std::uint64_t{hw.cbuf_bank_width} * hw.cbuf_bank_depth;
  const std::uint64_t data_banks =
      ceil_div(std::uint64_t{p.entries_per_slice} * l.src.height, hw.cbuf_bank_depth);
  const unsigned group_kernels =
      l.precision == Precision::kInt8 ? hw.mac_atomic_k : hw.mac_atomic_k / 2;
  const std::uint64_t min_weight_banks = ceil_div(
      per_kernel * std::min<std::uint64_t>(l.kernels, group_kernels) + kWeightAlign, bank_bytes);
  const std::uint64_t all_weight_banks =
      std::max(min_weight_banks, ceil_div(p.weight_bytes, bank_bytes));
  // Compressed: one kernel group's WMB plus 128 bytes must fit the WMB bank.
  const std::uint64_t group_mask_bytes =
      ceil_div(per_kernel * std::min<std::uint64_t>(l.kernels, group_kernels), 8 * bpe);
  if (l.compressed && group_mask_bytes + kWeightAlign > bank_bytes) {
    throw FirmwareError(fmt::format(
        "convolution: one kernel group's WMB takes {} bytes; with 128 more it exceeds the {}-byte "
        "WMB bank",
        group_mask_bytes, bank_bytes));
  }
  if (data_banks + min_weight_banks > max_banks) {
    throw FirmwareError(fmt::format(
        "convolution: the {}x{}x{} input needs {} CBUF banks and one kernel group {} more, but "
        "the CBUF has {} (splitting the input in height is not supported)",
        l.src.width, l.src.height, l.src.channels, data_banks, min_weight_banks, max_banks));
  }
  p.data_banks = static_cast<unsigned>(data_banks);
  p.full_weights = data_banks + all_weight_banks <= max_banks;
  p.weight_banks =
      static_cast<unsigned>(p.full_weights ? all_weight_banks : max_banks - data_banks);

  p.atomics = out.width * out.height;
  if (p.atomics > (1u << 21)) {
    throw FirmwareError(fmt::format(
        "convolution: {} output positions exceed CSC's ATOMICS limit of {}", p.atomics, 1u << 21));
  }
  p.release = l.src.height;
  if (p.release > (1u << 12)) {
    throw FirmwareError(fmt::format(
        "convolution: input height {} exceeds CSC's RLS_SLICES limit of {}", p.release, 1u << 12));
  }
  return p;
}

unsigned program_conv(Mmio& mmio, const ConvLayer& l, unsigned group, const ConvHardware& hw) {
  if (group > 1) {
    throw FirmwareError(fmt::format("convolution: register group {} is not 0 or 1", group));
  }
  const ConvPlan plan = plan_conv(l, hw);
  const auto p = static_cast<std::uint32_t>(l.precision);
  const bool sdp_rdma = l.sdp.bias.has_value() || l.sdp.scale.has_value();

  // Producer pointers, from the end of the pipeline to its start.
  mmio.write32(S::S_POINTER::kAddr, S::S_POINTER::PRODUCER.set(0, group));
  if (sdp_rdma) mmio.write32(RD::S_POINTER::kAddr, RD::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(CA::S_POINTER::kAddr, CA::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(MA::S_POINTER::kAddr, MA::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(MB::S_POINTER::kAddr, MB::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(CS::S_POINTER::kAddr, CS::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(CD::S_POINTER::kAddr, CD::S_POINTER::PRODUCER.set(0, group));

  // CACC.
  mmio.write32(CA::D_MISC_CFG::kAddr,
               CA::D_MISC_CFG::CONV_MODE.set(0, CA::D_MISC_CFG::CONV_MODE_DIRECT) |
                   CA::D_MISC_CFG::PROC_PRECISION.set(0, p));
  mmio.write32(CA::D_DATAOUT_SIZE_0::kAddr,
               CA::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.set(0, plan.out_width - 1) |
                   CA::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.set(0, plan.out_height - 1));
  mmio.write32(CA::D_DATAOUT_SIZE_1::kAddr,
               CA::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.set(0, l.kernels - 1));
  mmio.write32(CA::D_DATAOUT_ADDR::kAddr, low32(l.dst.address));
  mmio.write32(CA::D_BATCH_NUMBER::kAddr, 0);
  mmio.write32(CA::D_LINE_STRIDE::kAddr, l.dst.line_stride);
  mmio.write32(CA::D_SURF_STRIDE::kAddr, l.dst.surface_stride);
  {
    using M = CA::D_DATAOUT_MAP;
    const bool one = plan.out_width == 1 && plan.out_height == 1;
    mmio.write32(M::kAddr,
                 M::LINE_PACKED.set(0, one ? M::LINE_PACKED_TRUE : M::LINE_PACKED_FALSE) |
                     M::SURF_PACKED.set(0, one ? M::SURF_PACKED_TRUE : M::SURF_PACKED_FALSE));
  }
  mmio.write32(CA::D_CLIP_CFG::kAddr, CA::D_CLIP_CFG::CLIP_TRUNCATE.set(0, l.clip_truncate));

  // CMAC_A / CMAC_B.
  const std::uint32_t cmac = MA::D_MISC_CFG::CONV_MODE.set(0, MA::D_MISC_CFG::CONV_MODE_DIRECT) |
                             MA::D_MISC_CFG::PROC_PRECISION.set(0, p);
  mmio.write32(MA::D_MISC_CFG::kAddr, cmac);
  mmio.write32(MB::D_MISC_CFG::kAddr, cmac);

  // CSC.
  mmio.write32(CS::D_MISC_CFG::kAddr,
               CS::D_MISC_CFG::CONV_MODE.set(0, CS::D_MISC_CFG::CONV_MODE_DIRECT) |
                   CS::D_MISC_CFG::IN_PRECISION.set(0, p) |
                   CS::D_MISC_CFG::PROC_PRECISION.set(0, p));
  mmio.write32(CS::D_DATAIN_FORMAT::kAddr, CS::D_DATAIN_FORMAT::DATAIN_FORMAT.set(
                                               0, CS::D_DATAIN_FORMAT::DATAIN_FORMAT_FEATURE));
  const std::uint32_t datain_ext =
      CS::D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.set(0, l.src.width - 1) |
      CS::D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.set(0, l.src.height - 1);
  mmio.write32(CS::D_DATAIN_SIZE_EXT_0::kAddr, datain_ext);
  mmio.write32(CS::D_DATAIN_SIZE_EXT_1::kAddr,
               CS::D_DATAIN_SIZE_EXT_1::DATAIN_CHANNEL_EXT.set(0, l.src.channels - 1));
  mmio.write32(CS::D_BATCH_NUMBER::kAddr, 0);
  mmio.write32(CS::D_POST_Y_EXTENSION::kAddr, 0);
  mmio.write32(CS::D_ENTRY_PER_SLICE::kAddr,
               CS::D_ENTRY_PER_SLICE::ENTRIES.set(0, plan.entries_per_slice - 1));
  {
    using F = CS::D_WEIGHT_FORMAT;
    mmio.write32(F::kAddr, F::WEIGHT_FORMAT.set(0, l.compressed ? F::WEIGHT_FORMAT_COMPRESSED
                                                                : F::WEIGHT_FORMAT_UNCOMPRESSED));
  }
  mmio.write32(CS::D_WEIGHT_SIZE_EXT_0::kAddr,
               CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.set(0, l.kernel_width - 1) |
                   CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_HEIGHT_EXT.set(0, l.kernel_height - 1));
  mmio.write32(CS::D_WEIGHT_SIZE_EXT_1::kAddr,
               CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_CHANNEL_EXT.set(0, l.src.channels - 1) |
                   CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_KERNEL.set(0, l.kernels - 1));
  mmio.write32(CS::D_WEIGHT_BYTES::kAddr, plan.weight_bytes);
  mmio.write32(CS::D_WMB_BYTES::kAddr, plan.wmb_bytes);
  mmio.write32(CS::D_DATAOUT_SIZE_0::kAddr,
               CS::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.set(0, plan.out_width - 1) |
                   CS::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.set(0, plan.out_height - 1));
  mmio.write32(CS::D_DATAOUT_SIZE_1::kAddr,
               CS::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.set(0, l.kernels - 1));
  mmio.write32(CS::D_ATOMICS::kAddr, CS::D_ATOMICS::ATOMICS.set(0, plan.atomics - 1));
  mmio.write32(CS::D_RELEASE::kAddr, CS::D_RELEASE::RLS_SLICES.set(0, plan.release - 1));
  mmio.write32(CS::D_CONV_STRIDE_EXT::kAddr,
               CS::D_CONV_STRIDE_EXT::CONV_X_STRIDE_EXT.set(0, l.stride_x - 1) |
                   CS::D_CONV_STRIDE_EXT::CONV_Y_STRIDE_EXT.set(0, l.stride_y - 1));
  mmio.write32(CS::D_DILATION_EXT::kAddr,
               CS::D_DILATION_EXT::X_DILATION_EXT.set(0, l.dilation_x - 1) |
                   CS::D_DILATION_EXT::Y_DILATION_EXT.set(0, l.dilation_y - 1));
  mmio.write32(CS::D_ZERO_PADDING::kAddr, CS::D_ZERO_PADDING::PAD_LEFT.set(0, l.pad_left) |
                                              CS::D_ZERO_PADDING::PAD_TOP.set(0, l.pad_top));
  // 16 bits, sign-extended from the precision (the INT8 data path takes the low byte).
  const std::uint32_t pad_value =
      static_cast<std::uint16_t>(static_cast<std::int16_t>(l.pad_value));
  mmio.write32(CS::D_ZERO_PADDING_VALUE::kAddr,
               CS::D_ZERO_PADDING_VALUE::PAD_VALUE.set(0, pad_value));
  const std::uint32_t bank = CS::D_BANK::DATA_BANK.set(0, plan.data_banks - 1) |
                             CS::D_BANK::WEIGHT_BANK.set(0, plan.weight_banks - 1);
  mmio.write32(CS::D_BANK::kAddr, bank);
  mmio.write32(CS::D_PRA_CFG::kAddr, 0);

  // CDMA.
  mmio.write32(CD::D_MISC_CFG::kAddr,
               CD::D_MISC_CFG::CONV_MODE.set(0, CD::D_MISC_CFG::CONV_MODE_DIRECT) |
                   CD::D_MISC_CFG::IN_PRECISION.set(0, p) |
                   CD::D_MISC_CFG::PROC_PRECISION.set(0, p));
  mmio.write32(CD::D_DATAIN_FORMAT::kAddr, CD::D_DATAIN_FORMAT::DATAIN_FORMAT.set(
                                               0, CD::D_DATAIN_FORMAT::DATAIN_FORMAT_FEATURE));
  mmio.write32(CD::D_DATAIN_SIZE_0::kAddr,
               CD::D_DATAIN_SIZE_0::DATAIN_WIDTH.set(0, l.src.width - 1) |
                   CD::D_DATAIN_SIZE_0::DATAIN_HEIGHT.set(0, l.src.height - 1));
  mmio.write32(CD::D_DATAIN_SIZE_1::kAddr,
               CD::D_DATAIN_SIZE_1::DATAIN_CHANNEL.set(0, l.src.channels - 1));
  mmio.write32(CD::D_DATAIN_SIZE_EXT_0::kAddr, datain_ext);
  mmio.write32(CD::D_DAIN_RAM_TYPE::kAddr, CD::D_DAIN_RAM_TYPE::DATAIN_RAM_TYPE.set(
                                               0, CD::D_DAIN_RAM_TYPE::DATAIN_RAM_TYPE_MCIF));
  mmio.write32(CD::D_DAIN_ADDR_HIGH_0::kAddr, high32(l.src.address));
  mmio.write32(CD::D_DAIN_ADDR_LOW_0::kAddr, low32(l.src.address));
  mmio.write32(CD::D_DAIN_ADDR_HIGH_1::kAddr, high32(l.src.address));
  mmio.write32(CD::D_DAIN_ADDR_LOW_1::kAddr, low32(l.src.address));
  mmio.write32(CD::D_LINE_STRIDE::kAddr, l.src.line_stride);
  mmio.write32(CD::D_SURF_STRIDE::kAddr, l.src.surface_stride);
  mmio.write32(CD::D_LINE_UV_STRIDE::kAddr, 0);
  {
    using M = CD::D_DAIN_MAP;
    const std::uint64_t line = std::uint64_t{l.src.width} * hw.atom_bytes;
    const bool line_packed = l.src.line_stride == line;
    const bool surf_packed = l.src.surface_stride == line * l.src.height;
    mmio.write32(M::kAddr, M::LINE_PACKED.set(0, line_packed ? 1 : 0) |
                               M::SURF_PACKED.set(0, surf_packed ? 1 : 0));
  }
  mmio.write32(CD::D_BATCH_NUMBER::kAddr, 0);
  mmio.write32(CD::D_BATCH_STRIDE::kAddr, 0);
  mmio.write32(CD::D_ENTRY_PER_SLICE::kAddr,
               CD::D_ENTRY_PER_SLICE::ENTRIES.set(0, plan.entries_per_slice - 1));
  mmio.write32(CD::D_FETCH_GRAIN::kAddr, 0);  // fetch as soon as one slice fits
  {
    using F = CD::D_WEIGHT_FORMAT;
    mmio.write32(F::kAddr, F::WEIGHT_FORMAT.set(0, l.compressed ? F::WEIGHT_FORMAT_COMPRESSED
                                                                : F::WEIGHT_FORMAT_UNCOMPRESSED));
  }
  mmio.write32(CD::D_WEIGHT_SIZE_0::kAddr,
               CD::D_WEIGHT_SIZE_0::BYTE_PER_KERNEL.set(0, plan.bytes_per_kernel - 1));
  mmio.write32(CD::D_WEIGHT_SIZE_1::kAddr,
               CD::D_WEIGHT_SIZE_1::WEIGHT_KERNEL.set(0, l.kernels - 1));
  mmio.write32(CD::D_WEIGHT_RAM_TYPE::kAddr, CD::D_WEIGHT_RAM_TYPE::WEIGHT_RAM_TYPE.set(
                                                 0, CD::D_WEIGHT_RAM_TYPE::WEIGHT_RAM_TYPE_MCIF));
  mmio.write32(CD::D_WEIGHT_ADDR_HIGH::kAddr, high32(l.weight_address));
  mmio.write32(CD::D_WEIGHT_ADDR_LOW::kAddr, low32(l.weight_address));
  mmio.write32(CD::D_WEIGHT_BYTES::kAddr, plan.weight_bytes);
  if (l.compressed) {
    mmio.write32(CD::D_WGS_ADDR_HIGH::kAddr, high32(l.compressed->wgs_address));
    mmio.write32(CD::D_WGS_ADDR_LOW::kAddr, low32(l.compressed->wgs_address));
    mmio.write32(CD::D_WMB_ADDR_HIGH::kAddr, high32(l.compressed->wmb_address));
    mmio.write32(CD::D_WMB_ADDR_LOW::kAddr, low32(l.compressed->wmb_address));
    mmio.write32(CD::D_WMB_BYTES::kAddr, plan.wmb_bytes);
  }
  mmio.write32(CD::D_MEAN_FORMAT::kAddr, 0);
  mmio.write32(CD::D_CVT_CFG::kAddr, CD::D_CVT_CFG::CVT_EN.set(0, CD::D_CVT_CFG::CVT_EN_DISABLE));
  mmio.write32(CD::D_CONV_STRIDE::kAddr,
               CD::D_CONV_STRIDE::CONV_X_STRIDE.set(0, l.stride_x - 1) |
                   CD::D_CONV_STRIDE::CONV_Y_STRIDE.set(0, l.stride_y - 1));
  mmio.write32(CD::D_ZERO_PADDING::kAddr,
               CD::D_ZERO_PADDING::PAD_LEFT.set(0, l.pad_left) |
                   CD::D_ZERO_PADDING::PAD_RIGHT.set(0, plan.pad_right) |
                   CD::D_ZERO_PADDING::PAD_TOP.set(0, l.pad_top) |
                   CD::D_ZERO_PADDING::PAD_BOTTOM.set(0, plan.pad_bottom));
  mmio.write32(CD::D_ZERO_PADDING_VALUE::kAddr,
               CD::D_ZERO_PADDING_VALUE::PAD_VALUE.set(0, pad_value));
  mmio.write32(CD::D_BANK::kAddr, CD::D_BANK::DATA_BANK.set(0, plan.data_banks - 1) |
                                      CD::D_BANK::WEIGHT_BANK.set(0, plan.weight_banks - 1));

  // SDP in flying mode.
  program_sdp_flying(mmio, l, hw.atom_bytes);

  // Enable: the consumers first, CDMA (which starts fetching) last.
  mmio.write32(CD::D_PERF_ENABLE::kAddr, CD::D_PERF_ENABLE::DMA_EN.set(0, 1));
  if (sdp_rdma) mmio.write32(RD::D_OP_ENABLE::kAddr, RD::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(S::D_OP_ENABLE::kAddr, S::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(CA::D_OP_ENABLE::kAddr, CA::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(MA::D_OP_ENABLE::kAddr, MA::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(MB::D_OP_ENABLE::kAddr, MB::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(CS::D_OP_ENABLE::kAddr, CS::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(CD::D_OP_ENABLE::kAddr, CD::D_OP_ENABLE::OP_EN_ENABLE);
  return regs::GLB::S_INTR_STATUS::SDP_DONE_STATUS0.lsb + group;
}

ConvModel conv_model(const ConvLayer& l, const ConvHardware& hw) {
  (void)plan_conv(l, hw);
  ConvModel m;
  const ConvPrecision p = model_precision(l.precision);
  m.input.base = l.src.address;
  m.input.line_stride = l.src.line_stride;
  m.input.surface_stride = l.src.surface_stride;
  m.input.width = l.src.width;
  m.input.height = l.src.height;
  m.input.channels = l.src.channels;
  m.input.atom_bytes = hw.atom_bytes;
  m.weight_layout = models::ops::ConvWeightLayout{hw.mac_atomic_c, hw.mac_atomic_k, p};
  m.params.precision = p;
  m.params.stride_x = l.stride_x;
  m.params.stride_y = l.stride_y;
  m.params.dilation_x = l.dilation_x;
  m.params.dilation_y = l.dilation_y;
  m.params.pad_left = l.pad_left;
  m.params.pad_top = l.pad_top;
  const ConvCubeSize out = conv_output_cube(l);
  m.params.out_width = out.width;
  m.params.out_height = out.height;
  m.params.pad_value = l.pad_value;
  m.params.clip_truncate = l.clip_truncate;
  const unsigned epa = channels_per_atom(l.precision, hw.atom_bytes);
  m.out_channels_padded = (l.kernels + epa - 1) / epa * epa;
  m.sdp = sdp_model_config(sdp_layer_of(l), hw.atom_bytes);
  m.sdp.flying = true;
  return m;
}

ConvGolden run_conv_model(const ConvLayer& l, const ConvHardware& hw, models::ops::Memory& mem) {
  const ConvModel m = conv_model(l, hw);
  const models::ops::ConvCube in = models::ops::read_feature_cube(m.input, m.params.precision, mem);
  const models::ops::ConvWeights w =
      l.compressed
          ? models::ops::read_compressed_weights(
                {l.weight_address, l.compressed->wmb_address, l.compressed->wgs_address,
                 l.compressed->data_bytes,
                 models::ops::wmb_surface_bytes(std::uint64_t{l.kernels} * l.kernel_height *
                                                l.kernel_width * l.src.channels)},
                l.kernels, l.kernel_height, l.kernel_width, l.src.channels, m.weight_layout, mem)
          : models::ops::read_weights(l.weight_address, l.kernels, l.kernel_height, l.kernel_width,
                                      l.src.channels, m.weight_layout, mem);
  const models::ops::ConvResult conv =
      models::ops::run_conv_int(in, w, m.params, m.out_channels_padded);
  const models::ops::SdpLayerResult sdp = models::ops::run_sdp_layer(m.sdp, mem, &conv.out);
  ConvGolden g;
  g.cacc_saturation = conv.saturated;
  g.sdp_saturation = sdp.stats.out_saturation.value();
  return g;
}

namespace {

// A Memory over a byte vector starting at `base` (bytes outside it read as 0, writes outside it
// are dropped): lets the models/ layout writers fill an image.
class VectorMemory final : public models::ops::Memory {
 public:
  VectorMemory(std::uint64_t base, std::size_t size) : base_(base), bytes_(size, 0) {}
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    for (std::size_t i = 0; i < size; ++i) {
      const std::uint64_t a = addr + i;
      dst[i] = a >= base_ && a - base_ < bytes_.size() ? bytes_[a - base_] : 0;
    }
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override {
    for (std::size_t i = 0; i < size; ++i) {
      const std::uint64_t a = addr + i;
      if (a >= base_ && a - base_ < bytes_.size()) bytes_[a - base_] = src[i];
    }
  }
  [[nodiscard]] std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::uint64_t base_;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace

std::vector<std::uint8_t> conv_weight_image(const models::ops::ConvWeights& w, Precision precision,
                                            const ConvHardware& hw) {
  const models::ops::ConvWeightLayout layout{hw.mac_atomic_c, hw.mac_atomic_k,
                                             model_precision(precision)};
  VectorMemory mem(
      0, static_cast<std::size_t>(ceil_div(layout.bytes(w), kWeightAlign) * kWeightAlign));
  (void)models::ops::write_weights(w, 0, layout, mem);
  return mem.take();
}

models::ops::CompressedWeights conv_compressed_weight_image(const models::ops::ConvWeights& w,
                                                            Precision precision,
                                                            const ConvHardware& hw) {
  const models::ops::ConvWeightLayout layout{hw.mac_atomic_c, hw.mac_atomic_k,
                                             model_precision(precision)};
  const unsigned bpe = models::ops::conv_element_bytes(layout.precision);
  return models::ops::compress_weights(
      conv_weight_image(w, precision, hw),
      models::ops::weight_group_bytes(
          layout, w.kernels, std::uint64_t{w.kernel_height} * w.kernel_width * w.channels * bpe),
      bpe);
}

std::vector<std::uint8_t> conv_feature_image(const models::ops::ConvCube& cube,
                                             const FeatureSurface& s, Precision precision,
                                             unsigned atom_bytes) {
  if (cube.width != s.width || cube.height != s.height || cube.channels != s.channels) {
    throw FirmwareError(
        fmt::format("feature image: a {}x{}x{} cube does not fill a {}x{}x{} "
                    "surface",
                    cube.width, cube.height, cube.channels, s.width, s.height, s.channels));
  }
  check_surface(s, precision, atom_bytes, "feature image");
  VectorMemory mem(s.address, static_cast<std::size_t>(surface_bytes(s, precision, atom_bytes)));
  models::ops::write_feature_cube(cube, conv_model_surface(s, atom_bytes),
                                  model_precision(precision), mem);
  return mem.take();
}

models::ops::ConvFeatureSurface conv_model_surface(const FeatureSurface& s, unsigned atom_bytes) {
  models::ops::ConvFeatureSurface f;
  f.base = s.address;
  f.line_stride = s.line_stride;
  f.surface_stride = s.surface_stride;
  f.width = s.width;
  f.height = s.height;
  f.channels = s.channels;
  f.atom_bytes = atom_bytes;
  return f;
}

}  // namespace octasim::firmware
