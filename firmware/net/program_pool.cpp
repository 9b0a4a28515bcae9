// PDP layers (builder.hpp): pooling, and average pooling that excludes padding (ONNX's
// count_include_pad=0, or ceil_mode's partial windows).
#include <algorithm>
#include <cstdint>
#include <vector>

#include <fmt/core.h>

#include "firmware/net/builder.hpp"

namespace octasim::firmware::net::detail {
namespace {

// Consecutive outputs along one axis whose windows cover the same padding: outputs
// [out_first, out_first + outputs) read inputs [in_first, in_first + inputs) with pad_before and
// pad_after padded positions around them, and each window holds `real` input positions.
struct PoolBand {
  std::uint32_t out_first = 0, outputs = 0, in_first = 0, inputs = 0;
  unsigned pad_before = 0, pad_after = 0, real = 0;
};

std::vector<PoolBand> pool_bands(std::uint32_t in, std::uint32_t out, unsigned kernel,
                                 unsigned stride, unsigned pad, const std::string& who) {
  std::vector<PoolBand> bands;
  for (std::uint32_t o = 0; o < out; ++o) {
    const std::int64_t first = std::int64_t{o} * stride - pad;
    const auto before = static_cast<unsigned>(std::max<std::int64_t>(0, -first));
    const auto after = static_cast<unsigned>(std::max<std::int64_t>(0, first + kernel - in));
    if (before + after >= kernel) {
      throw GraphError(fmt::format("{}: output {} pools padding only", who, o));
    }
    if (!bands.empty() && bands.back().pad_before == before && bands.back().pad_after == after) {
      PoolBand& b = bands.back();
      ++b.outputs;
      b.inputs += stride;
      continue;
    }
    PoolBand b;
    b.out_first = o;
    b.outputs = 1;
    b.in_first = static_cast<std::uint32_t>(first + before);
    b.inputs = kernel - before - after;
    b.pad_before = before;
    b.pad_after = after;
    b.real = kernel - before - after;
    bands.push_back(b);
  }
  return bands;
}

// The window of `s` from element (x, y) on, `width` x `height` elements (same strides).
FeatureSurface window(FeatureSurface s, std::uint32_t x, std::uint32_t y, std::uint32_t width,
                      std::uint32_t height, Precision p, unsigned atom) {
  s.address += element_offset(s, p, atom, x, y, 0);
  s.width = width;
  s.height = height;
  return s;
}

}  // namespace

PdpLayer Builder::lower_pool(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst) {
  const PoolAttrs& a = l.pool;
  PdpLayer p;
  p.precision = elem();
  p.src = in.surface;
  p.dst = dst.surface;
  p.method = a.kind == PoolKind::kMax ? PoolMethod::kMax : PoolMethod::kAverage;
  p.kernel_width = a.kernel_w;
  p.kernel_height = a.kernel_h;
  p.stride_x = a.stride_x;
  p.stride_y = a.stride_y;
  p.pad_left = a.pad_left;
  p.pad_right = a.pad_right;
  p.pad_top = a.pad_top;
  p.pad_bottom = a.pad_bottom;
  p.pad_value = 0;
  const std::uint32_t ow =
      pdp_output_size(in.surface.width, a.kernel_w, a.stride_x, a.pad_left, a.pad_right);
  const std::uint32_t oh =
      pdp_output_size(in.surface.height, a.kernel_h, a.stride_y, a.pad_top, a.pad_bottom);
  if (ow != dst.surface.width || oh != dst.surface.height) {
    throw GraphError(fmt::format("{}: PDP output {}x{} differs from the graph's {}x{}",
                                 layer_nodes_label(g_, l), ow, oh, dst.surface.width,
                                 dst.surface.height));
  }
  (void)pdp_model_params(p, atom());  // checks the kernel, stride and padding limits
  return p;
}

void Builder::lower_pool_exclude_pad(const PlannedLayer& l, const NetTensor& in,
                                     const NetTensor& dst, NetLayer& out) {
  if (!fp16()) return lower_pool_bands(l, in, dst, out);
  const PoolAttrs& a = l.pool;
  PdpLayer p = lower_pool(l, in, dst);
  p.sum = true;
  p.dst.address = activations_.allocate(surface_bytes(dst.surface, elem(), atom()));
  const auto counts = [](std::uint32_t o, unsigned stride, unsigned pad, unsigned kernel,
                         std::uint32_t size) {
    const std::int64_t first = std::int64_t{o} * stride - pad;
    return std::min<std::int64_t>(first + kernel, size) - std::max<std::int64_t>(first, 0);
  };
  const FeatureSurface& d = dst.surface;
  std::vector<float> recip(std::size_t{d.width} * d.height * d.channels);
  for (std::uint32_t c = 0; c < d.channels; ++c)
    for (std::uint32_t y = 0; y < d.height; ++y)
      for (std::uint32_t x = 0; x < d.width; ++x) {
        const std::int64_t n = counts(y, a.stride_y, a.pad_top, a.kernel_h, in.surface.height) *
                               counts(x, a.stride_x, a.pad_left, a.kernel_w, in.surface.width);
        recip[(std::size_t{c} * d.height + y) * d.width + x] =
            n > 0 ? 1.0F / static_cast<float>(n) : 0.0F;
      }
  NetTensor cube_order = dst;
  cube_order.rows = false;  // `recip` is in the cube's (c, y, x) order
  NetLayer sum = out;
  sum.hw = p;
  push_with_operand(std::move(sum), p.dst, dst, recip, cube_order, SdpEwOp::kMul,
                    " (/ real elements of the window)");
}

void Builder::lower_pool_bands(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                               const NetLayer& out) {
  const PoolAttrs& a = l.pool;
  const PdpLayer whole = lower_pool(l, in, dst);
  const std::vector<PoolBand> rows = pool_bands(in.surface.height, dst.surface.height, a.kernel_h,
                                                a.stride_y, a.pad_top, out.nodes);
  const std::vector<PoolBand> cols = pool_bands(in.surface.width, dst.surface.width, a.kernel_w,
                                                a.stride_x, a.pad_left, out.nodes);
  for (const PoolBand& r : rows) {
    for (const PoolBand& c : cols) {
      PdpLayer p = whole;
      p.src = window(in.surface, c.in_first, r.in_first, c.inputs, r.inputs, elem(), atom());
      p.dst = window(dst.surface, c.out_first, r.out_first, c.outputs, r.outputs, elem(), atom());
      p.pad_left = c.pad_before;
      p.pad_right = c.pad_after;
      p.pad_top = r.pad_before;
      p.pad_bottom = r.pad_after;
      p.divisor_width = c.real;
      p.divisor_height = r.real;
      (void)pdp_model_params(p, atom());
      NetLayer band = out;
      if (rows.size() * cols.size() > 1) {
        band.nodes += fmt::format(" (rows {}..{}, columns {}..{} / {})", r.out_first,
                                  r.out_first + r.outputs - 1, c.out_first,
                                  c.out_first + c.outputs - 1, r.real * c.real);
      }
      band.hw = p;
      push_layer(std::move(band));
    }
  }
}

}  // namespace octasim::firmware::net::detail
