#include "models/ops/cdp.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "models/numerics/float_format.hpp"
#include "models/precision/int_width.hpp"

namespace octasim::models::ops {

namespace {

bool is_int8(const CdpConfig& cfg) {
  return cfg.precision == CdpPrecision::kInt8;
}

std::int32_t load_element(const std::uint8_t* p, CdpPrecision precision) {
  if (precision == CdpPrecision::kInt8) return static_cast<std::int8_t>(p[0]);
  if (precision == CdpPrecision::kFp16) return p[0] | (p[1] << 8);  // the bit pattern
  return static_cast<std::int16_t>(static_cast<std::uint16_t>(p[0] | (p[1] << 8)));
}

void store_element(std::uint8_t* p, std::int32_t v, CdpPrecision precision) {
  const auto u = static_cast<std::uint32_t>(v);
  p[0] = static_cast<std::uint8_t>(u & 0xffu);
  if (precision != CdpPrecision::kInt8) p[1] = static_cast<std::uint8_t>((u >> 8) & 0xffu);
}

}  // namespace

std::int32_t cdp_in_cvt(const CdpConfig& cfg, std::int32_t x) {
  const unsigned in_bits = is_int8(cfg) ? 8 : 16;
  const unsigned out_bits = is_int8(cfg) ? 9 : 17;
  const std::int64_t offset = sign_extend(static_cast<std::uint32_t>(cfg.datin_offset), in_bits);
  const int128_t scaled = (int128_t{x} - offset) * cfg.datin_scale;
  const int128_t shifted = shift_right_round_half_away(scaled, cfg.datin_shifter & 0x1fu);
  return static_cast<std::int32_t>(saturate_bits(shifted, out_bits).value);
}

std::int64_t cdp_lut_input(const CdpConfig& cfg, const std::int32_t* cvt, unsigned count,
                           unsigned c) {
  if (cfg.sqsum_bypass) return cvt[c];
  const unsigned half = cfg.local_size / 2;
  const unsigned first = c >= half ? c - half : 0;
  const unsigned last = c + half < count ? c + half : count - 1;
  std::int64_t sum = 0;
  for (unsigned j = first; j <= last; ++j) sum += std::int64_t{cvt[j]} * cvt[j];
  return sum;
}

Saturated cdp_out_cvt(const CdpConfig& cfg, std::int64_t prod) {
  const unsigned offset_bits = is_int8(cfg) ? 25 : 32;
  const unsigned out_bits = is_int8(cfg) ? 8 : 16;
  const std::int64_t offset =
      sign_extend(static_cast<std::uint32_t>(cfg.datout_offset), offset_bits);
  const int128_t scaled = (int128_t{prod} - offset) * cfg.datout_scale;
  return shift_right_round_saturate_hls(scaled, cfg.datout_shifter & 0x3fu, out_bits);
}

std::int32_t cdp_output(const CdpConfig& cfg, const LutTables& lut, std::int64_t lut_input,
                        std::int32_t cvt, CdpStats& stats) {
  const LutResult r = lut_lookup(cfg.lut, lut, lut_input);
  stats.lut.record(r.outcome);
  const std::int64_t prod = cfg.mul_bypass ? std::int64_t{r.value} : std::int64_t{r.value} * cvt;
  const Saturated y = cdp_out_cvt(cfg, prod);
  stats.out_saturation.record(y.saturated);
  return static_cast<std::int32_t>(y.value);
}

void cdp_pixel(const CdpConfig& cfg, const LutTables& lut, const std::int32_t* raw,
               unsigned channels, unsigned lanes, std::int32_t* out, std::int32_t* scratch,
               CdpStats& stats) {
  // Lanes beyond the cube read as DATIN_OFFSET, which converts to exactly 0.
  for (unsigned c = 0; c < lanes; ++c) scratch[c] = c < channels ? cdp_in_cvt(cfg, raw[c]) : 0;
  for (unsigned c = 0; c < lanes; ++c) {
    out[c] = cdp_output(cfg, lut, cdp_lut_input(cfg, scratch, lanes, c), scratch[c], stats);
  }
}

float cdp_lut_input_fp16(const CdpConfig& cfg, const float* x, unsigned count, unsigned c) {
  if (cfg.sqsum_bypass) return x[c];
  // Squares are exact in FP32; each add is done in double and rounded once to FP32, which
  // equals the FP32 add (see lut.cpp).
  const auto sq = [&](long j) {
    return j < 0 || j >= static_cast<long>(count)
               ? 0.0
               : static_cast<double>(x[j]) * static_cast<double>(x[j]);
  };
  const auto add = [](double a, double b) {
    return static_cast<double>(static_cast<float>(a + b));
  };
  const long ci = c;
  double s = add(add(sq(ci - 1), sq(ci + 1)), sq(ci));
  for (long r = 2; r <= static_cast<long>(cfg.local_size / 2); ++r) {
    s = add(s, add(sq(ci - r), sq(ci + r)));
  }
  return static_cast<float>(s);
}

std::uint16_t cdp_output_fp16(const CdpConfig& cfg, const LutTables& lut, float lut_input,
                              std::uint16_t x, CdpStats& stats) {
  const LutFp16Result r = lut_lookup_fp16(cfg.lut, lut, lut_input);
  stats.lut.record(r.outcome);
  double exact;
  if (cfg.mul_bypass) {
    exact = static_cast<double>(fp16_is_nan(x) ? fp16_to_float(x) : r.value);
  } else {
    exact = static_cast<double>(fp16_to_float(x)) *
            static_cast<double>(r.value);  // 11 x 24 bits: exact
  }
  std::uint16_t y = fp16_from_double(exact);
  stats.out_saturation.record(std::isfinite(exact) && fp16_is_inf(y));
  const bool nan = fp16_is_nan(y);
  if (nan) y = static_cast<std::uint16_t>((y & 0x8000u) | 0x7e00u);
  stats.nan_output.record(nan);
  return y;
}

void cdp_pixel_fp16(const CdpConfig& cfg, const LutTables& lut, const std::uint16_t* raw,
                    unsigned channels, unsigned lanes, std::uint16_t* out, float* scratch,
                    CdpStats& stats) {
  for (unsigned c = 0; c < lanes; ++c) {
    stats.nan_input.record(fp16_is_nan(raw[c]));
    stats.inf_input.record(fp16_is_inf(raw[c]));
    // Lanes beyond the cube are +0; D_NAN_FLUSH_TO_ZERO turns NaNs into +0.
    std::uint16_t x = c < channels ? raw[c] : 0;
    if (cfg.nan_to_zero && fp16_is_nan(x)) x = 0;
    out[c] = x;
    scratch[c] = fp16_to_float(x);
  }
  for (unsigned c = 0; c < lanes; ++c) {
    out[c] = cdp_output_fp16(cfg, lut, cdp_lut_input_fp16(cfg, scratch, lanes, c), out[c], stats);
  }
}

CdpLayerResult run_cdp_layer(const CdpLayerParams& layer, const LutTables& lut, Memory& mem) {
  const CdpConfig& cfg = layer.cfg;
  const unsigned eb = cdp_element_bytes(cfg.precision);
  if (layer.width == 0 || layer.height == 0 || layer.channels == 0) {
    throw std::runtime_error("CDP: empty data cube");
  }
  if (layer.atom_bytes == 0 || layer.atom_bytes % eb != 0) {
    throw std::runtime_error("CDP: memory atom of " + std::to_string(layer.atom_bytes) +
                             " bytes does not hold whole elements");
  }
  if (cfg.local_size != 3 && cfg.local_size != 5 && cfg.local_size != 7 && cfg.local_size != 9) {
    throw std::runtime_error("CDP: local size " + std::to_string(cfg.local_size) +
                             " is not 3, 5, 7 or 9");
  }
  const unsigned per_atom = layer.atom_bytes / eb;
  const unsigned surfaces = (layer.channels + per_atom - 1) / per_atom;
  const unsigned lanes = surfaces * per_atom;
  const std::size_t line_bytes = std::size_t{layer.width} * layer.atom_bytes;

  std::vector<std::uint8_t> in(line_bytes * surfaces);
  std::vector<std::uint8_t> out(line_bytes * surfaces);
  std::vector<std::int32_t> raw(lanes), res(lanes), scratch(lanes);
  const bool fp16 = cfg.precision == CdpPrecision::kFp16;
  std::vector<std::uint16_t> raw16(fp16 ? lanes : 0), res16(fp16 ? lanes : 0);
  std::vector<float> scratch16(fp16 ? lanes : 0);
  CdpLayerResult result;

  for (unsigned h = 0; h < layer.height; ++h) {
    for (unsigned s = 0; s < surfaces; ++s) {
      mem.read(layer.src + h * layer.src_line_stride + s * layer.src_surface_stride,
               in.data() + s * line_bytes, line_bytes);
    }
    result.bytes_read += line_bytes * surfaces;
    for (unsigned w = 0; w < layer.width; ++w) {
      for (unsigned s = 0; s < surfaces; ++s) {
        const std::uint8_t* atom = in.data() + s * line_bytes + std::size_t{w} * layer.atom_bytes;
        for (unsigned k = 0; k < per_atom; ++k) {
          raw[s * per_atom + k] = load_element(atom + k * eb, cfg.precision);
        }
      }
      if (fp16) {
        for (unsigned c = 0; c < lanes; ++c) raw16[c] = static_cast<std::uint16_t>(raw[c]);
        cdp_pixel_fp16(cfg, lut, raw16.data(), layer.channels, lanes, res16.data(),
                       scratch16.data(), result.stats);
        for (unsigned c = 0; c < lanes; ++c) res[c] = res16[c];
      } else {
        cdp_pixel(cfg, lut, raw.data(), layer.channels, lanes, res.data(), scratch.data(),
                  result.stats);
      }
      for (unsigned s = 0; s < surfaces; ++s) {
        std::uint8_t* atom = out.data() + s * line_bytes + std::size_t{w} * layer.atom_bytes;
        for (unsigned k = 0; k < per_atom; ++k) {
          store_element(atom + k * eb, res[s * per_atom + k], cfg.precision);
        }
      }
    }
    for (unsigned s = 0; s < surfaces; ++s) {
      mem.write(layer.dst + h * layer.dst_line_stride + s * layer.dst_surface_stride,
                out.data() + s * line_bytes, line_bytes);
    }
    result.bytes_written += line_bytes * surfaces;
  }
  return result;
}

}  // namespace octasim::models::ops
