// The convolution's checks and CBUF plan (firmware/dla/conv.hpp describes the plan).
#include <algorithm>
#include <string>
#include <utility>

#include <fmt/core.h>

#include "firmware/dla/conv.hpp"
#include "firmware/dla/conv_detail.hpp"
#include "firmware/dla/conv_winograd.hpp"

namespace octasim::firmware {
namespace {

using conv_detail::ceil_div;
using conv_detail::kWeightAddrAlign;
using conv_detail::kWeightAlign;

std::uint32_t next_pow2(std::uint32_t v) {
  std::uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

std::uint32_t dilated(std::uint32_t kernel, std::uint32_t dilation) {
  return (kernel - 1) * dilation + 1;
}

void range(const char* what, std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
  if (v < lo || v > hi) {
    throw FirmwareError(fmt::format("convolution: {} {} is outside {}..{}", what, v, lo, hi));
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

// The bytes a feature surface spans from its address (the last surface's last line).
std::uint64_t surface_span(const FeatureSurface& s, Precision p, unsigned atom_bytes) {
  return std::uint64_t{surface_count(s, p, atom_bytes) - 1} * s.surface_stride +
         std::uint64_t{s.height - 1} * s.line_stride + std::uint64_t{s.width} * atom_bytes;
}

// Multi-batch: the batch count, the hardware, the strides (the batches' cubes must not overlap)
// and the output's 64-byte alignment the programming guide requires.
void check_batches(const ConvLayer& l, const ConvHardware& hw) {
  range("batch count", l.batches, 1, 32);
  if (l.batches == 1) return;
  if (!hw.batch) throw FirmwareError("convolution: multi-batch needs hardware with BATCH");
  if (l.compressed) {
    throw FirmwareError("convolution: multi-batch with compressed weights is not supported");
  }
  const std::uint64_t in_span = surface_span(l.src, l.precision, hw.atom_bytes);
  const std::uint64_t out_span = surface_span(l.dst, l.precision, hw.atom_bytes);
  if (l.src_batch_stride < in_span || l.dst_batch_stride < out_span) {
    throw FirmwareError(fmt::format(
        "convolution: batch strides (input {}, output {}) must cover one cube ({}, {} bytes)",
        l.src_batch_stride, l.dst_batch_stride, in_span, out_span));
  }
  for (const auto& [what, v] :
       {std::pair<const char*, std::uint64_t>{"output address", l.dst.address},
        {"output line stride", l.dst.line_stride},
        {"output surface stride", l.dst.surface_stride},
        {"output batch stride", l.dst_batch_stride}}) {
    if (v % 64 != 0) {
      throw FirmwareError(fmt::format(
          "convolution: multi-batch needs a 64-byte aligned {} (it is 0x{:x})", what, v));
    }
  }
}

// FP16 (direct convolution, FP32 from CACC into the FP16 SDP pipeline): on hardware with FP16;
// what the FP16 path does not encode is refused.
void check_fp16_layer(const ConvLayer& l, const ConvHardware& hw) {
  if (!hw.fp16) throw FirmwareError("convolution: FP16 is not supported by this configuration");
  const char* unsupported = l.winograd                 ? "Winograd"
                            : l.compressed.has_value() ? "compressed weights"
                            : l.batches != 1           ? "multi-batch"
                                                       : nullptr;
  if (unsupported != nullptr) {
    throw FirmwareError(fmt::format("convolution: FP16 with {} is not supported", unsupported));
  }
  if (l.clip_truncate != 0) {
    throw FirmwareError(fmt::format(
        "convolution: CACC clip truncate {} at FP16 (the truncation is INT8/INT16 only; 0 "
        "expected)",
        l.clip_truncate));
  }
}

}  // namespace

// In the order their errors are reported.
ConvCubeSize check_conv_layer(const ConvLayer& l, const ConvHardware& hw) {
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
  if (l.precision == Precision::kFp16) check_fp16_layer(l, hw);
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
  // FP16: the 16-bit pattern of an FP16 number.
  const bool fp16 = l.precision == Precision::kFp16;
  const std::int64_t pad_min = fp16 ? 0 : l.precision == Precision::kInt8 ? -128 : -32768;
  const std::int64_t pad_max = fp16 ? 0xffff : l.precision == Precision::kInt8 ? 127 : 32767;
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
  check_batches(l, hw);
  check_sdp_stage(conv_sdp_layer(l), hw.atom_bytes, "convolution: SDP");
  if (l.sdp.lut) {
    throw FirmwareError(
        "convolution: SDP LUT in the flying stage is not encoded (an SDP layer "
        "from memory runs it)");
  }
  if (l.winograd) check_winograd_layer(l, hw, out);
  return out;
}

namespace {

// Weight bytes per kernel, in CBUF and (compressed) of the WMB; returns the bytes of one
// kernel.
std::uint64_t plan_weights(const ConvLayer& l, const ConvHardware& hw, ConvPlan& p) {
  const std::uint64_t bpe = element_bytes(l.precision);
  const std::uint64_t per_kernel =
      l.winograd ? winograd_kernel_bytes(l)
                 : std::uint64_t{l.kernel_width} * l.kernel_height * l.src.channels * bpe;
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
  return per_kernel;
}

// Entries per slice and the banks data and weights may take (D_BANK fields: 5 bits; compressed
// weights: the last bank holds the WMB).
ConvCbufBudget cbuf_budget(const ConvLayer& l, const ConvHardware& hw, std::uint64_t per_kernel,
                           std::uint64_t weight_bytes) {
  ConvCbufBudget b;
  b.entries_per_slice = entries_per_slice(l, hw);
  b.bank_entries = hw.cbuf_bank_depth;
  b.banks = std::min(hw.cbuf_bank_number, 32u) - (l.compressed ? 1 : 0);
  const std::uint64_t bank_bytes = std::uint64_t{hw.cbuf_bank_width} * hw.cbuf_bank_depth;
  const unsigned group_kernels =
      l.precision == Precision::kInt8 ? hw.mac_atomic_k : hw.mac_atomic_k / 2;
  const std::uint64_t min_weight_banks = ceil_div(
      per_kernel * std::min<std::uint64_t>(l.kernels, group_kernels) + kWeightAlign, bank_bytes);
  const std::uint64_t all_weight_banks =
      std::max(min_weight_banks, ceil_div(weight_bytes, bank_bytes));
  // Clamped: a count above the CBUF's banks fits nowhere either way.
  b.weight_bytes = weight_bytes;
  b.min_weight_banks = static_cast<unsigned>(std::min<std::uint64_t>(min_weight_banks, 1u << 16));
  b.all_weight_banks = static_cast<unsigned>(std::min<std::uint64_t>(all_weight_banks, 1u << 16));
  return b;
}

// Weights kept in CBUF for the next layer or taken from the previous one: all of them fit, and
// the banks are where the other layer has them.
void check_weight_reuse(const ConvLayer& l, const ConvPlan& p) {
  if (!l.weight_reuse && !l.skip_weight_release) return;
  if (l.compressed || l.winograd) {
    throw FirmwareError(
        "convolution: weight reuse with compressed or Winograd weights is not supported");
  }
  if (!p.full_weights) {
    throw FirmwareError(fmt::format(
        "convolution: weight reuse needs every kernel in CBUF, but {} data banks leave {} for "
        "{} bytes of weights",
        p.data_banks, p.weight_banks, p.weight_bytes));
  }
  if (l.data_banks == 0) {
    throw FirmwareError(
        "convolution: weight reuse needs the data banks given (ConvLayer::data_banks), the same "
        "for every layer sharing the weights");
  }
}

// The data and weight banks of the CBUF.
void plan_cbuf(const ConvLayer& l, const ConvHardware& hw, std::uint64_t per_kernel, ConvPlan& p) {
  const std::uint64_t bpe = element_bytes(l.precision);
  const ConvCbufBudget b = cbuf_budget(l, hw, per_kernel, p.weight_bytes);
  p.entries_per_slice = b.entries_per_slice;
  if (p.entries_per_slice > (1u << 14)) {
    throw FirmwareError(
        fmt::format("convolution: one input line takes {} CBUF entries, above CDMA's limit of {}",
                    p.entries_per_slice, 1u << 14));
  }
  const std::uint64_t bank_bytes = std::uint64_t{hw.cbuf_bank_width} * hw.cbuf_bank_depth;
  const unsigned group_kernels =
      l.precision == Precision::kInt8 ? hw.mac_atomic_k : hw.mac_atomic_k / 2;
  // Compressed: one kernel group's WMB plus 128 bytes must fit the WMB bank.
  const std::uint64_t group_mask_bytes =
      ceil_div(per_kernel * std::min<std::uint64_t>(l.kernels, group_kernels), 8 * bpe);
  if (l.compressed && group_mask_bytes + kWeightAlign > bank_bytes) {
    throw FirmwareError(fmt::format(
        "convolution: one kernel group's WMB takes {} bytes; with 128 more it exceeds the {}-byte "
        "WMB bank",
        group_mask_bytes, bank_bytes));
  }
  const std::uint64_t needed = b.data_banks(std::uint64_t{l.src.height} * l.batches);
  if (needed + b.min_weight_banks > b.banks) {
    throw FirmwareError(fmt::format(
        "convolution: the {}x{}x{} input ({} batches) needs {} CBUF banks and one kernel group {} "
        "more, but the CBUF has {} (firmware/net splits such a layer in height)",
        l.src.width, l.src.height, l.src.channels, l.batches, needed, b.min_weight_banks, b.banks));
  }
  const std::uint64_t data_banks = std::max<std::uint64_t>(needed, l.data_banks);
  if (data_banks + b.min_weight_banks > b.banks) {
    throw FirmwareError(
        fmt::format("convolution: {} data banks and one kernel group's {} exceed the CBUF's {}",
                    data_banks, b.min_weight_banks, b.banks));
  }
  p.data_banks = static_cast<unsigned>(data_banks);
  p.full_weights = data_banks + b.all_weight_banks <= b.banks;
  p.weight_banks =
      static_cast<unsigned>(p.full_weights ? b.all_weight_banks : b.banks - data_banks);
  check_weight_reuse(l, p);
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

ConvCbufBudget conv_cbuf_budget(const ConvLayer& l, const ConvHardware& hw) {
  ConvPlan p;
  const std::uint64_t per_kernel = plan_weights(l, hw, p);
  return cbuf_budget(l, hw, per_kernel, p.weight_bytes);
}

ConvPlan plan_conv(const ConvLayer& l, const ConvHardware& hw) {
  const ConvCubeSize out = check_conv_layer(l, hw);
  const std::uint32_t span_x = dilated(l.kernel_width, l.dilation_x);
  const std::uint32_t span_y = dilated(l.kernel_height, l.dilation_y);
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
  if (l.winograd) {  // DATAIN_SIZE_EXT = output + 4 (conv_winograd.hpp)
    p.pad_right += 2;
    p.pad_bottom += 2;
  }

  const std::uint64_t per_kernel = plan_weights(l, hw, p);
  plan_cbuf(l, hw, per_kernel, p);

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

}  // namespace octasim::firmware
