#include "models/ops/pdp.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/precision/int_width.hpp"

namespace octasim::models::ops {

namespace {

unsigned accumulator_bits(PdpPrecision p) {
  return p == PdpPrecision::kInt8 ? 16 : 32;
}

std::int32_t load_element(const std::uint8_t* p, PdpPrecision precision) {
  if (precision == PdpPrecision::kInt8) return static_cast<std::int8_t>(p[0]);
  return static_cast<std::int16_t>(static_cast<std::uint16_t>(p[0] | (p[1] << 8)));
}

void store_element(std::uint8_t* p, std::int32_t v, PdpPrecision precision) {
  const auto u = static_cast<std::uint32_t>(v);
  p[0] = static_cast<std::uint8_t>(u & 0xffu);
  if (precision == PdpPrecision::kInt16) p[1] = static_cast<std::uint8_t>((u >> 8) & 0xffu);
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("PDP: " + what);
}

}  // namespace

std::int32_t pdp_pad_value(std::uint32_t reg, unsigned n, PdpPrecision p) {
  static constexpr std::array<unsigned, 7> kSignBitInt8{7, 8, 9, 9, 10, 10, 10};
  if (n < 1 || n > 7) fail("padding value index " + std::to_string(n) + " is not 1..7");
  const unsigned sign_bit = kSignBitInt8[n - 1] + (p == PdpPrecision::kInt8 ? 0 : 8);
  std::uint64_t v = reg;
  if ((v >> sign_bit) & 1u) v |= ~((std::uint64_t{1} << (sign_bit + 1)) - 1);
  return static_cast<std::int32_t>(wrap_to_bits(static_cast<std::int64_t>(v), accumulator_bits(p)));
}

PdpSpan pdp_window_span(unsigned out_index, unsigned kernel, unsigned stride, unsigned pad_before,
                        unsigned in_size) {
  const std::int64_t start = std::int64_t{out_index} * stride - pad_before;  // input coords
  const std::int64_t end = start + kernel;                                   // exclusive
  const std::int64_t lo = std::max<std::int64_t>(start, 0);
  const std::int64_t hi = std::min<std::int64_t>(end, in_size);
  PdpSpan span;
  span.first = static_cast<int>(lo);
  span.count = hi > lo ? static_cast<unsigned>(hi - lo) : 0;
  span.pad_before = static_cast<unsigned>(std::min<std::int64_t>(lo - start, kernel));
  span.pad_after = static_cast<unsigned>(std::min<std::int64_t>(end - std::max(hi, lo), kernel));
  return span;
}

std::int32_t pdp_average(const PdpConfig& cfg, std::int64_t sum) {
  const std::int64_t acc = wrap_to_bits(sum, accumulator_bits(cfg.precision));
  const int128_t w = shift_right_round_half_away(int128_t{acc} * cfg.recip_kernel_width, 16);
  const int128_t h = shift_right_round_half_away(w * cfg.recip_kernel_height, 16);
  return static_cast<std::int32_t>(wrap_to_bits(h, cfg.precision == PdpPrecision::kInt8 ? 8 : 16));
}

std::int32_t pdp_pool_window(const PdpConfig& cfg, const std::int32_t* first,
                             std::ptrdiff_t col_stride, std::ptrdiff_t row_stride, unsigned cols,
                             unsigned rows, unsigned pad_cols, unsigned pad_rows) {
  if (cfg.method == PdpMethod::kAverage) {
    std::int64_t sum = 0;
    for (unsigned r = 0; r < rows; ++r) {
      const std::int32_t* p = first + r * row_stride;
      for (unsigned c = 0; c < cols; ++c) sum += p[c * col_stride];
    }
    if (pad_cols > 0) sum += std::int64_t{cfg.pad_value[pad_cols - 1]} * rows;
    if (pad_rows > 0) sum += std::int64_t{cfg.pad_value[pad_rows - 1]} * cfg.kernel_width;
    return pdp_average(cfg, sum);
  }
  const bool is_max = cfg.method == PdpMethod::kMax;
  std::int32_t best = *first;
  for (unsigned r = 0; r < rows; ++r) {
    const std::int32_t* p = first + r * row_stride;
    for (unsigned c = 0; c < cols; ++c) {
      const std::int32_t v = p[c * col_stride];
      best = is_max ? std::max(best, v) : std::min(best, v);
    }
  }
  return best;
}

std::vector<PdpSplit> pdp_splits(const PdpLayerParams& layer) {
  const PdpConfig& cfg = layer.cfg;
  if (layer.split_num == 0) {
    return {PdpSplit{0, layer.in_width, cfg.pad_left, cfg.pad_right, 0, layer.out_width}};
  }
  const unsigned count = layer.split_num + 1;
  const std::int64_t overlap = std::int64_t{cfg.kernel_width} - cfg.stride_width;
  std::vector<PdpSplit> splits;
  splits.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    PdpSplit s;
    if (i == 0) {
      s = {0, layer.partial_in_first, cfg.pad_left, 0, 0, layer.partial_out_first};
    } else {
      const bool last = i + 1 == count;
      const std::int64_t partial = last ? layer.partial_in_last : layer.partial_in_mid;
      const std::int64_t width = partial + overlap;
      if (width <= 0) {
        fail("split " + std::to_string(i) + " has no input columns (partial width " +
             std::to_string(partial) + ", kernel width " + std::to_string(cfg.kernel_width) +
             ", stride " + std::to_string(cfg.stride_width) + ")");
      }
      s.in_col = std::int64_t{layer.partial_in_first} + std::int64_t{i - 1} * layer.partial_in_mid -
                 overlap;
      s.in_width = static_cast<unsigned>(width);
      s.pad_left = 0;
      s.pad_right = last ? cfg.pad_right : 0;
      s.out_col = layer.partial_out_first + (i - 1) * layer.partial_out_mid;
      s.out_width = last ? layer.partial_out_last : layer.partial_out_mid;
    }
    splits.push_back(s);
  }
  return splits;
}

PdpLayerResult run_pdp_layer(const PdpLayerParams& layer, Memory& mem) {
  const PdpConfig& cfg = layer.cfg;
  const unsigned eb = pdp_element_bytes(cfg.precision);
  if (layer.in_width == 0 || layer.in_height == 0 || layer.channels == 0 || layer.out_width == 0 ||
      layer.out_height == 0) {
    fail("empty data cube");
  }
  if (cfg.kernel_width < 1 || cfg.kernel_width > 8 || cfg.kernel_height < 1 ||
      cfg.kernel_height > 8) {
    fail("kernel " + std::to_string(cfg.kernel_width) + "x" + std::to_string(cfg.kernel_height) +
         " is outside 1x1..8x8");
  }
  if (cfg.stride_width < 1 || cfg.stride_height < 1) fail("stride 0");
  if (layer.atom_bytes == 0 || layer.atom_bytes % eb != 0) {
    fail("memory atom of " + std::to_string(layer.atom_bytes) + " bytes holds no whole element");
  }
  const unsigned per_atom = layer.atom_bytes / eb;
  const unsigned surfaces = (layer.channels + per_atom - 1) / per_atom;
  const unsigned height = layer.in_height;

  // Every output row's window must hold a real row and stay inside the padding.
  std::vector<PdpSpan> row_spans(layer.out_height);
  for (unsigned oy = 0; oy < layer.out_height; ++oy) {
    row_spans[oy] = pdp_window_span(oy, cfg.kernel_height, cfg.stride_height, cfg.pad_top, height);
    if (row_spans[oy].count == 0 || row_spans[oy].pad_after > cfg.pad_bottom) {
      fail("output row " + std::to_string(oy) + " of " + std::to_string(layer.out_height) +
           " has its window outside the padded input (height " + std::to_string(height) +
           ", kernel " + std::to_string(cfg.kernel_height) + ", stride " +
           std::to_string(cfg.stride_height) + ", padding " + std::to_string(cfg.pad_top) + "/" +
           std::to_string(cfg.pad_bottom) + ")");
    }
  }

  PdpLayerResult result;
  std::vector<std::int32_t> plane;
  std::vector<std::uint8_t> line;
  std::vector<std::uint8_t> out_line;
  std::vector<PdpSpan> col_spans;
  for (const PdpSplit& split : pdp_splits(layer)) {
    col_spans.resize(split.out_width);
    for (unsigned ox = 0; ox < split.out_width; ++ox) {
      col_spans[ox] =
          pdp_window_span(ox, cfg.kernel_width, cfg.stride_width, split.pad_left, split.in_width);
      if (col_spans[ox].count == 0 || col_spans[ox].pad_after > split.pad_right) {
        fail("output column " + std::to_string(split.out_col + ox) +
             " has its window outside the padded input (width " + std::to_string(split.in_width) +
             ", kernel " + std::to_string(cfg.kernel_width) + ", stride " +
             std::to_string(cfg.stride_width) + ", padding " + std::to_string(split.pad_left) +
             "/" + std::to_string(split.pad_right) + ")");
      }
    }
    const std::int64_t col_offset = split.in_col * layer.atom_bytes;
    if (col_offset < 0 && static_cast<std::uint64_t>(-col_offset) > layer.src) {
      fail("split reads before address 0");
    }
    const std::size_t in_line_bytes = std::size_t{split.in_width} * layer.atom_bytes;
    const std::size_t out_line_bytes = std::size_t{split.out_width} * layer.atom_bytes;
    const std::ptrdiff_t col_stride = per_atom;
    const std::ptrdiff_t row_stride = static_cast<std::ptrdiff_t>(split.in_width) * per_atom;
    plane.resize(std::size_t{height} * split.in_width * per_atom);
    line.resize(in_line_bytes);
    out_line.resize(out_line_bytes);

    for (unsigned s = 0; s < surfaces; ++s) {
      const std::uint64_t surface_base =
          layer.src + static_cast<std::uint64_t>(col_offset) + s * layer.src_surface_stride;
      for (unsigned h = 0; h < height; ++h) {
        mem.read(surface_base + h * layer.src_line_stride, line.data(), in_line_bytes);
        std::int32_t* row = plane.data() + h * row_stride;
        for (std::size_t e = 0; e < std::size_t{split.in_width} * per_atom; ++e) {
          row[e] = load_element(line.data() + e * eb, cfg.precision);
        }
      }
      result.bytes_read += in_line_bytes * height;

      for (unsigned oy = 0; oy < layer.out_height; ++oy) {
        const PdpSpan& ry = row_spans[oy];
        const unsigned pad_rows = ry.pad_before + ry.pad_after;
        for (unsigned ox = 0; ox < split.out_width; ++ox) {
          const PdpSpan& rx = col_spans[ox];
          const unsigned pad_cols = rx.pad_before + rx.pad_after;
          const std::int32_t* first = plane.data() + ry.first * row_stride + rx.first * col_stride;
          for (unsigned k = 0; k < per_atom; ++k) {
            const std::int32_t v = pdp_pool_window(cfg, first + k, col_stride, row_stride, rx.count,
                                                   ry.count, pad_cols, pad_rows);
            store_element(out_line.data() + (std::size_t{ox} * per_atom + k) * eb, v,
                          cfg.precision);
          }
        }
        mem.write(layer.dst + std::uint64_t{split.out_col} * layer.atom_bytes +
                      oy * layer.dst_line_stride + s * layer.dst_surface_stride,
                  out_line.data(), out_line_bytes);
        result.bytes_written += out_line_bytes;
      }
    }
  }
  return result;
}

}  // namespace octasim::models::ops
