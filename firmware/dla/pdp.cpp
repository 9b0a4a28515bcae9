#include "firmware/dla/pdp.hpp"

#include <algorithm>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

namespace P = regs::PDP;
namespace PR = regs::PDP_RDMA;

void check_layer(const PdpLayer& l, unsigned group, unsigned atom_bytes) {
  if (l.precision != Precision::kInt8 && l.precision != Precision::kInt16 &&
      l.precision != Precision::kFp16) {
    throw FirmwareError(fmt::format("PDP: precision {} is not INT8, INT16 or FP16",
                                    static_cast<unsigned>(l.precision)));
  }
  if (group > 1) throw FirmwareError(fmt::format("PDP: register group {} is not 0 or 1", group));
  if (!l.on_the_fly) check_surface(l.src, l.precision, atom_bytes, "PDP input");
  check_surface(l.dst, l.precision, atom_bytes, "PDP output");
  if (l.method != PoolMethod::kAverage && l.method != PoolMethod::kMax &&
      l.method != PoolMethod::kMin) {
    throw FirmwareError("PDP: pooling method is not average, max or min");
  }
  const auto range = [](const char* what, unsigned v, unsigned lo, unsigned hi) {
    if (v < lo || v > hi) {
      throw FirmwareError(fmt::format("PDP: {} {} is outside {}..{}", what, v, lo, hi));
    }
  };
  range("kernel width", l.kernel_width, 1, 8);
  range("kernel height", l.kernel_height, 1, 8);
  range("stride x", l.stride_x, 1, 16);
  range("stride y", l.stride_y, 1, 16);
  range("left padding", l.pad_left, 0, std::min(7u, l.kernel_width - 1));
  range("right padding", l.pad_right, 0, std::min(7u, l.kernel_width - 1));
  range("top padding", l.pad_top, 0, std::min(7u, l.kernel_height - 1));
  range("bottom padding", l.pad_bottom, 0, std::min(7u, l.kernel_height - 1));
  range("divisor width", l.divisor_width, 0, l.kernel_width);
  range("divisor height", l.divisor_height, 0, l.kernel_height);
  if (l.precision == Precision::kFp16) {
    if (l.pad_value != 0) {
      throw FirmwareError(fmt::format(
          "PDP: pad value {} with FP16: NVDLA's FP16 average ignores the padding values (padded "
          "positions add 0); set it to 0",
          l.pad_value));
    }
  } else if (l.nan_to_zero) {
    throw FirmwareError("PDP: NaN flush to zero is for FP16 layers only");
  }
  const std::int32_t max = l.precision == Precision::kInt8 ? 127 : 32767;
  if (l.precision != Precision::kFp16 && (l.pad_value < -max - 1 || l.pad_value > max)) {
    throw FirmwareError(fmt::format("PDP: pad value {} is outside the {} range", l.pad_value,
                                    precision_name(l.precision)));
  }
  const std::uint32_t out_w =
      pdp_output_size(l.src.width, l.kernel_width, l.stride_x, l.pad_left, l.pad_right);
  const std::uint32_t out_h =
      pdp_output_size(l.src.height, l.kernel_height, l.stride_y, l.pad_top, l.pad_bottom);
  if (out_w == 0 || out_h == 0) {
    throw FirmwareError(fmt::format("PDP: a {}x{} kernel does not fit the padded {}x{} input",
                                    l.kernel_width, l.kernel_height, l.src.width, l.src.height));
  }
  if (l.dst.width != out_w || l.dst.height != out_h || l.dst.channels != l.src.channels) {
    throw FirmwareError(
        fmt::format("PDP: output cube is {}x{}x{}, but pooling {}x{}x{} gives "
                    "{}x{}x{}",
                    l.dst.width, l.dst.height, l.dst.channels, l.src.width, l.src.height,
                    l.src.channels, out_w, out_h, l.src.channels));
  }
}

// D_RECIP_KERNEL_*: INT8/INT16 1/kernel in 1.16 fixed point, truncated (1/3 = 0x5555); FP16
// 1/kernel as NVDLA's FP17 number, rounded to nearest (1/3 = 0x7555).
// PdpLayer::sum: 1 (the window sum); PdpLayer::divisor_*: that divisor.
std::uint32_t recip(const PdpLayer& l, unsigned kernel, unsigned divisor) {
  if (divisor != 0) kernel = divisor;
  if (l.sum) kernel = 1;
  if (l.precision == Precision::kFp16) return models::ops::pdp_fp16_recip(kernel);
  return 0x10000u / kernel;
}

std::uint32_t kernel_cfg(const PdpLayer& l) {
  using K = P::D_POOLING_KERNEL_CFG;
  return K::KERNEL_WIDTH.set(0, l.kernel_width - 1) | K::KERNEL_HEIGHT.set(0, l.kernel_height - 1) |
         K::KERNEL_STRIDE_WIDTH.set(0, l.stride_x - 1) |
         K::KERNEL_STRIDE_HEIGHT.set(0, l.stride_y - 1);
}

// PAD_VALUE_<n>X = n * pad value, in the register's 19 bits.
std::uint32_t pad_value(const PdpLayer& l, unsigned n) {
  return P::D_POOLING_PADDING_VALUE_1_CFG::PAD_VALUE_1X.set(
      0, static_cast<std::uint32_t>(static_cast<std::int32_t>(n) * l.pad_value));
}

// PDP_RDMA's S_POINTER and D_ registers (pooling from memory).
void write_pdp_rdma_registers(Mmio& mmio, const PdpLayer& l, unsigned group) {
  const auto p = static_cast<std::uint32_t>(l.precision);
  mmio.write32(PR::S_POINTER::kAddr, PR::S_POINTER::PRODUCER.set(0, group));
  mmio.write32(PR::D_DATA_CUBE_IN_WIDTH::kAddr, l.src.width - 1);
  mmio.write32(PR::D_DATA_CUBE_IN_HEIGHT::kAddr, l.src.height - 1);
  mmio.write32(PR::D_DATA_CUBE_IN_CHANNEL::kAddr, l.src.channels - 1);
  mmio.write32(PR::D_FLYING_MODE::kAddr,
               PR::D_FLYING_MODE::FLYING_MODE.set(0, PR::D_FLYING_MODE::FLYING_MODE_OFF_FLYING));
  mmio.write32(PR::D_SRC_BASE_ADDR_LOW::kAddr, low32(l.src.address));
  mmio.write32(PR::D_SRC_BASE_ADDR_HIGH::kAddr, high32(l.src.address));
  mmio.write32(PR::D_SRC_LINE_STRIDE::kAddr, l.src.line_stride);
  mmio.write32(PR::D_SRC_SURFACE_STRIDE::kAddr, l.src.surface_stride);
  mmio.write32(PR::D_SRC_RAM_CFG::kAddr, PR::D_SRC_RAM_CFG::SRC_RAM_TYPE.set(0, ram_type(l.src)));
  mmio.write32(PR::D_DATA_FORMAT::kAddr, PR::D_DATA_FORMAT::INPUT_DATA.set(0, p));
  mmio.write32(PR::D_OPERATION_MODE_CFG::kAddr, PR::D_OPERATION_MODE_CFG::SPLIT_NUM.set(0, 0));
  mmio.write32(PR::D_POOLING_KERNEL_CFG::kAddr,
               PR::D_POOLING_KERNEL_CFG::KERNEL_WIDTH.set(0, l.kernel_width - 1) |
                   PR::D_POOLING_KERNEL_CFG::KERNEL_STRIDE_WIDTH.set(0, l.stride_x - 1));
  mmio.write32(PR::D_POOLING_PADDING_CFG::kAddr,
               PR::D_POOLING_PADDING_CFG::PAD_WIDTH.set(0, l.pad_left));
  mmio.write32(PR::D_PARTIAL_WIDTH_IN::kAddr,
               PR::D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_FIRST.set(0, l.src.width - 1));
}

}  // namespace

std::uint32_t pdp_output_size(std::uint32_t in, unsigned kernel, unsigned stride,
                              unsigned pad_before, unsigned pad_after) {
  const std::uint64_t padded = std::uint64_t{in} + pad_before + pad_after;
  if (stride == 0 || kernel == 0 || padded < kernel) return 0;
  return static_cast<std::uint32_t>((padded - kernel) / stride + 1);
}

unsigned program_pdp(Mmio& mmio, const PdpLayer& l, unsigned group, unsigned atom_bytes,
                     int rdma_group) {
  check_layer(l, group, atom_bytes);
  if (rdma_group > 1) {
    throw FirmwareError(fmt::format("PDP_RDMA: register group {} is not 0 or 1", rdma_group));
  }
  const auto p = static_cast<std::uint32_t>(l.precision);

  mmio.write32(P::S_POINTER::kAddr, P::S_POINTER::PRODUCER.set(0, group));
  if (!l.on_the_fly) {
    write_pdp_rdma_registers(mmio, l, rdma_group < 0 ? group : static_cast<unsigned>(rdma_group));
  }

  mmio.write32(P::D_DATA_CUBE_IN_WIDTH::kAddr, l.src.width - 1);
  mmio.write32(P::D_DATA_CUBE_IN_HEIGHT::kAddr, l.src.height - 1);
  mmio.write32(P::D_DATA_CUBE_IN_CHANNEL::kAddr, l.src.channels - 1);
  mmio.write32(P::D_DATA_CUBE_OUT_WIDTH::kAddr, l.dst.width - 1);
  mmio.write32(P::D_DATA_CUBE_OUT_HEIGHT::kAddr, l.dst.height - 1);
  mmio.write32(P::D_DATA_CUBE_OUT_CHANNEL::kAddr, l.dst.channels - 1);
  {
    using M = P::D_OPERATION_MODE_CFG;
    mmio.write32(M::kAddr, M::POOLING_METHOD.set(0, static_cast<std::uint32_t>(l.method)) |
                               M::FLYING_MODE.set(0, l.on_the_fly ? M::FLYING_MODE_ON_FLYING
                                                                  : M::FLYING_MODE_OFF_FLYING) |
                               M::SPLIT_NUM.set(0, 0));
  }
  mmio.write32(P::D_PARTIAL_WIDTH_IN::kAddr,
               P::D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_FIRST.set(0, l.src.width - 1));
  mmio.write32(P::D_PARTIAL_WIDTH_OUT::kAddr,
               P::D_PARTIAL_WIDTH_OUT::PARTIAL_WIDTH_OUT_FIRST.set(0, l.dst.width - 1));
  mmio.write32(P::D_POOLING_KERNEL_CFG::kAddr, kernel_cfg(l));
  mmio.write32(P::D_RECIP_KERNEL_WIDTH::kAddr, recip(l, l.kernel_width, l.divisor_width));
  mmio.write32(P::D_RECIP_KERNEL_HEIGHT::kAddr, recip(l, l.kernel_height, l.divisor_height));
  {
    using C = P::D_POOLING_PADDING_CFG;
    mmio.write32(C::kAddr, C::PAD_LEFT.set(0, l.pad_left) | C::PAD_TOP.set(0, l.pad_top) |
                               C::PAD_RIGHT.set(0, l.pad_right) |
                               C::PAD_BOTTOM.set(0, l.pad_bottom));
  }
  const std::uint32_t pad_addrs[7] = {
      P::D_POOLING_PADDING_VALUE_1_CFG::kAddr, P::D_POOLING_PADDING_VALUE_2_CFG::kAddr,
      P::D_POOLING_PADDING_VALUE_3_CFG::kAddr, P::D_POOLING_PADDING_VALUE_4_CFG::kAddr,
      P::D_POOLING_PADDING_VALUE_5_CFG::kAddr, P::D_POOLING_PADDING_VALUE_6_CFG::kAddr,
      P::D_POOLING_PADDING_VALUE_7_CFG::kAddr};
  for (unsigned n = 1; n <= 7; ++n) mmio.write32(pad_addrs[n - 1], pad_value(l, n));
  mmio.write32(P::D_SRC_LINE_STRIDE::kAddr, l.src.line_stride);
  mmio.write32(P::D_SRC_SURFACE_STRIDE::kAddr, l.src.surface_stride);
  mmio.write32(P::D_DST_BASE_ADDR_LOW::kAddr, low32(l.dst.address));
  mmio.write32(P::D_DST_BASE_ADDR_HIGH::kAddr, high32(l.dst.address));
  mmio.write32(P::D_DST_LINE_STRIDE::kAddr, l.dst.line_stride);
  mmio.write32(P::D_DST_SURFACE_STRIDE::kAddr, l.dst.surface_stride);
  mmio.write32(P::D_DST_RAM_CFG::kAddr, P::D_DST_RAM_CFG::DST_RAM_TYPE.set(0, ram_type(l.dst)));
  mmio.write32(P::D_DATA_FORMAT::kAddr, P::D_DATA_FORMAT::INPUT_DATA.set(0, p));
  if (l.precision == Precision::kFp16) {
    mmio.write32(P::D_NAN_FLUSH_TO_ZERO::kAddr,
                 P::D_NAN_FLUSH_TO_ZERO::NAN_TO_ZERO.set(0, l.nan_to_zero ? 1 : 0));
  }

  if (!l.on_the_fly) mmio.write32(PR::D_OP_ENABLE::kAddr, PR::D_OP_ENABLE::OP_EN_ENABLE);
  mmio.write32(P::D_OP_ENABLE::kAddr, P::D_OP_ENABLE::OP_EN_ENABLE);
  return regs::GLB::S_INTR_STATUS::PDP_DONE_STATUS0.lsb + group;
}

models::ops::PdpLayerParams pdp_model_params(const PdpLayer& l, unsigned atom_bytes) {
  check_layer(l, 0, atom_bytes);
  models::ops::PdpLayerParams m;
  models::ops::PdpConfig& c = m.cfg;
  c.method = static_cast<models::ops::PdpMethod>(l.method);
  c.precision = static_cast<models::ops::PdpPrecision>(l.precision);
  c.kernel_width = l.kernel_width;
  c.kernel_height = l.kernel_height;
  c.stride_width = l.stride_x;
  c.stride_height = l.stride_y;
  c.pad_left = l.pad_left;
  c.pad_right = l.pad_right;
  c.pad_top = l.pad_top;
  c.pad_bottom = l.pad_bottom;
  for (unsigned n = 1; n <= 7; ++n) c.pad_value[n - 1] = static_cast<std::int32_t>(n) * l.pad_value;
  c.recip_kernel_width = recip(l, l.kernel_width, l.divisor_width);
  c.recip_kernel_height = recip(l, l.kernel_height, l.divisor_height);
  c.nan_to_zero = l.nan_to_zero;
  m.in_width = l.src.width;
  m.in_height = l.src.height;
  m.channels = l.src.channels;
  m.out_width = l.dst.width;
  m.out_height = l.dst.height;
  m.atom_bytes = atom_bytes;
  m.src = l.src.address;
  m.src_line_stride = l.src.line_stride;
  m.src_surface_stride = l.src.surface_stride;
  m.dst = l.dst.address;
  m.dst_line_stride = l.dst.line_stride;
  m.dst_surface_stride = l.dst.surface_stride;
  return m;
}

}  // namespace octasim::firmware
