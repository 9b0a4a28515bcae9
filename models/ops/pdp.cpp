#include "models/ops/pdp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "models/numerics/float_format.hpp"
#include "models/precision/int_width.hpp"

namespace octasim::models::ops {

namespace {

unsigned accumulator_bits(PdpPrecision p) {
  return p == PdpPrecision::kInt8 ? 16 : 32;
}

// INT8/INT16: the signed value; FP16: the 16-bit pattern.
std::int32_t load_element(const std::uint8_t* p, PdpPrecision precision) {
  if (precision == PdpPrecision::kInt8) return static_cast<std::int8_t>(p[0]);
  const auto bits = static_cast<std::uint16_t>(p[0] | (p[1] << 8));
  if (precision == PdpPrecision::kFp16) return bits;
  return static_cast<std::int16_t>(bits);
}

void store_element(std::uint8_t* p, std::int32_t v, PdpPrecision precision) {
  const auto u = static_cast<std::uint32_t>(v);
  p[0] = static_cast<std::uint8_t>(u & 0xffu);
  if (precision != PdpPrecision::kInt8) p[1] = static_cast<std::uint8_t>((u >> 8) & 0xffu);
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("PDP: " + what);
}

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// The largest finite FP17 number, (2 - 2^-10) * 2^31, in units of 2^-24: NVDLA's stand-in for an
// FP16 infinity in the average datapath.
constexpr int128_t kFp17MaxFixed = int128_t{2047} << 45;

// A finite FP16 number (or an infinity's FP17 stand-in) exactly, in units of 2^-24.
int128_t fp16_fixed(std::uint16_t h) {
  const unsigned e = (h >> 10) & 0x1fu;
  const unsigned m = h & 0x3ffu;
  int128_t mag = 0;
  if (e == 0x1f) {
    mag = kFp17MaxFixed;
  } else if (e == 0) {
    mag = m;
  } else {
    mag = int128_t{1024 + m} << (e - 1);
  }
  return (h & 0x8000u) ? -mag : mag;
}

// A non-NaN FP16 pattern as an integer that orders like NVDLA's comparison (-0 < +0).
int fp16_order_key(std::uint16_t h) {
  const int mag = h & 0x7fff;
  return (h & 0x8000u) ? -mag - 1 : mag;
}

// a * 2^k rounded once to FP16 (nearest even), saturating at +-65504 as NVDLA's FP17 -> FP16
// conversion does.
std::uint16_t round_to_fp16(int128_t a, int k) {
  if (a == 0) return 0;
  const bool negative = a < 0;
  uint128_t mag = negative ? static_cast<uint128_t>(-a) : static_cast<uint128_t>(a);
  int bits = 0;
  for (uint128_t t = mag; t != 0; t >>= 1) ++bits;
  const int lead = bits - 1 + k;                 // exponent of the leading bit
  const int quantum = std::max(lead - 10, -24);  // FP16's step there (subnormals: 2^-24)
  int exponent = k;
  if (quantum > k) {
    const int shift = quantum - k;
    if (shift >= 127) {
      mag = 0;
    } else {
      const uint128_t rest = mag & ((uint128_t{1} << shift) - 1);
      const uint128_t half = uint128_t{1} << (shift - 1);
      mag >>= shift;
      if (rest > half || (rest == half && (mag & 1u) != 0)) ++mag;
    }
    exponent = quantum;
  }
  // mag now has at most 12 significant bits: exact in a double, and an FP16 number (or beyond
  // 65504, where NVDLA saturates).
  double v = std::ldexp(static_cast<double>(static_cast<std::uint64_t>(mag)), exponent);
  v = std::min(v, 65504.0);
  return static_cast<std::uint16_t>(encode_float(negative ? -v : v, kFp16));
}

// One FP17 reciprocal register as mantissa * 2^exponent (mantissa 0 for a zero).
struct Fp17Parts {
  std::int64_t mantissa = 0;
  int exponent = 0;
};

Fp17Parts fp17_parts(std::uint32_t bits, const char* reg) {
  const unsigned e = (bits >> 10) & 0x3fu;
  const std::int64_t m = bits & 0x3ffu;
  if (e == 0x3f) {
    fail(std::string(reg) + " " + hex(bits) +
         " is not a finite FP17 number (exponent 63: infinity or NaN)");
  }
  if (e == 0) return {};
  const std::int64_t mantissa = 1024 + m;
  return {(bits & 0x10000u) ? -mantissa : mantissa, static_cast<int>(e) - 31 - 10};
}

// The FP16 pooling of one window (pdp.hpp, "octasim's defined FP16 order").
std::uint16_t pool_window_fp16(const PdpConfig& cfg, const std::int32_t* first,
                               std::ptrdiff_t col_stride, std::ptrdiff_t row_stride, unsigned cols,
                               unsigned rows) {
  const bool average = cfg.method == PdpMethod::kAverage;
  const bool is_max = cfg.method == PdpMethod::kMax;
  bool have_nan = false;
  std::uint16_t nan = 0;
  int128_t sum = 0;
  std::uint16_t best = 0;
  bool have_best = false;
  for (unsigned r = 0; r < rows; ++r) {
    const std::int32_t* p = first + r * row_stride;
    bool row_nan = false;
    for (unsigned c = 0; c < cols; ++c) {
      auto h = static_cast<std::uint16_t>(p[c * col_stride] & 0xffff);
      if (fp16_is_nan(h)) {
        if (!cfg.nan_to_zero) {
          // Within a row the first NaN stays; a lower row's NaN replaces an upper row's.
          if (!row_nan) nan = h;
          row_nan = have_nan = true;
          continue;
        }
        h = 0;
      }
      if (average) {
        sum += fp16_fixed(h);
      } else if (!have_best || (is_max ? fp16_order_key(h) > fp16_order_key(best)
                                       : fp16_order_key(h) < fp16_order_key(best))) {
        best = h;
        have_best = true;
      }
    }
  }
  if (have_nan) return nan;
  if (!average) return best;
  return pdp_average_fp16(cfg, sum);
}

// D_NAN_INPUT_NUM / D_INF_INPUT_NUM of the FP16 elements PDP_RDMA read.
void count_fp16_inputs(const std::int32_t* elements, std::size_t n, PdpLayerResult& result) {
  for (std::size_t i = 0; i < n; ++i) {
    const auto h = static_cast<std::uint16_t>(elements[i]);
    if (fp16_is_nan(h)) ++result.nan_input;
    if (fp16_is_inf(h)) ++result.inf_input;
  }
}

}  // namespace

double pdp_fp17_value(std::uint32_t bits) {
  const unsigned e = (bits >> 10) & 0x3fu;
  const unsigned m = bits & 0x3ffu;
  const double sign = (bits & 0x10000u) ? -1.0 : 1.0;
  if (e == 0x3f) return m != 0 ? std::nan("") : sign * HUGE_VAL;
  if (e == 0) return sign * 0.0;
  return sign * std::ldexp(1024.0 + m, static_cast<int>(e) - 31 - 10);
}

std::uint32_t pdp_fp17_from_double(double x) {
  if (std::isnan(x)) return 0x1fe00u;
  const std::uint32_t sign = std::signbit(x) ? 0x10000u : 0u;
  constexpr std::uint32_t kMaxFinite = (62u << 10) | 0x3ffu;
  const double a = std::fabs(x);
  if (a < std::ldexp(1.0, -30)) return sign;
  if (std::isinf(a)) return sign | kMaxFinite;
  int e2 = 0;
  (void)std::frexp(a, &e2);  // a = f * 2^e2, f in [0.5, 1): the leading bit is 2^(e2 - 1)
  int exponent = e2 - 1;
  // The 11 significant bits, rounded to nearest even (nearbyint: the default rounding mode).
  double q = std::nearbyint(std::ldexp(a, 10 - exponent));
  if (q >= 2048.0) {
    q /= 2.0;
    ++exponent;
  }
  const int field = exponent + 31;
  if (field >= 63) return sign | kMaxFinite;
  return sign | (static_cast<std::uint32_t>(field) << 10) | (static_cast<std::uint32_t>(q) - 1024u);
}

std::uint32_t pdp_fp16_recip(unsigned kernel) {
  if (kernel < 1 || kernel > 8) fail("kernel size " + std::to_string(kernel) + " is not 1..8");
  return pdp_fp17_from_double(1.0 / kernel);
}

std::uint16_t pdp_average_fp16(const PdpConfig& cfg, int128_t sum) {
  const Fp17Parts w = fp17_parts(cfg.recip_kernel_width, "D_RECIP_KERNEL_WIDTH");
  const Fp17Parts h = fp17_parts(cfg.recip_kernel_height, "D_RECIP_KERNEL_HEIGHT");
  // |sum| < 2^64 and each mantissa < 2^11: the product is exact in 128 bits.
  return round_to_fp16(sum * w.mantissa * h.mantissa, w.exponent + h.exponent - 24);
}

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
  if (cfg.precision == PdpPrecision::kFp16) {
    return pool_window_fp16(cfg, first, col_stride, row_stride, cols, rows);
  }
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
  const bool fp16 = cfg.precision == PdpPrecision::kFp16;
  if (cfg.precision != PdpPrecision::kInt8 && cfg.precision != PdpPrecision::kInt16 && !fp16) {
    fail("precision " + std::to_string(static_cast<unsigned>(cfg.precision)) +
         " is not INT8 (0), INT16 (1) or FP16 (2)");
  }
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
        if (fp16) count_fp16_inputs(row, std::size_t{split.in_width} * per_atom, result);
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
            if (fp16 && fp16_is_nan(static_cast<std::uint16_t>(v))) ++result.nan_output;
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
