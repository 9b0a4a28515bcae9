#include "models/ops/conv_winograd.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/numerics/int_range.hpp"
#include "models/ops/conv_detail.hpp"

namespace octasim::models::ops {
namespace {

IntPrecision int_precision(ConvPrecision p) {
  if (p == ConvPrecision::kFp16) {
    throw std::runtime_error("Winograd convolution: FP16 is not modelled (INT8/INT16 only)");
  }
  return p == ConvPrecision::kInt8 ? IntPrecision::kInt8 : IntPrecision::kInt16;
}

// 2G (format.rst's G with the halves doubled), 4 x 3.
constexpr std::int64_t kG2[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};

// y = A^T m A for a 4x4 m (row-major): the POA, 2x2 row-major out.
void poa(const std::int64_t m[16], std::int64_t out[4]) {
  std::int64_t t[2][4];  // A^T m: rows 0 = m0 + m1 + m2, 1 = m1 - m2 - m3
  for (int x = 0; x < 4; ++x) {
    t[0][x] = m[0 * 4 + x] + m[1 * 4 + x] + m[2 * 4 + x];
    t[1][x] = m[1 * 4 + x] - m[2 * 4 + x] - m[3 * 4 + x];
  }
  for (int y = 0; y < 2; ++y) {
    out[y * 2 + 0] = t[y][0] + t[y][1] + t[y][2];
    out[y * 2 + 1] = t[y][1] - t[y][2] - t[y][3];
  }
}

std::int32_t clip_truncate(std::int64_t acc, unsigned shift, std::uint32_t& saturated) {
  acc = std::clamp(acc, conv_detail::kAccMin, conv_detail::kAccMax);
  const Saturated s = saturate(shift_right_round_half_away(acc, shift), IntPrecision::kInt32);
  if (s.saturated) ++saturated;
  return static_cast<std::int32_t>(s.value);
}

}  // namespace

std::uint32_t winograd_channels(std::uint32_t channels, ConvPrecision p) {
  const std::uint32_t per32 = 32 / conv_element_bytes(p);
  return (channels + per32 - 1) / per32 * per32;
}

ConvWeights winograd_transform_weights(const ConvWeights& g, ConvPrecision p) {
  const IntPrecision ip = int_precision(p);
  if (g.kernel_height != 3 || g.kernel_width != 3) {
    throw std::runtime_error("Winograd convolution: kernels must be 3x3, got " +
                             std::to_string(g.kernel_width) + "x" +
                             std::to_string(g.kernel_height));
  }
  ConvWeights u(g.kernels, kWinogradTile, kWinogradTile, winograd_channels(g.channels, p));
  for (std::uint32_t k = 0; k < g.kernels; ++k) {
    for (std::uint32_t c = 0; c < g.channels; ++c) {
      for (int y = 0; y < 4; ++y) {
        for (int x = 0; x < 4; ++x) {
          std::int64_t v = 0;  // sum_rs 2G[y][r] g[r][s] 2G[x][s]
          for (std::uint32_t r = 0; r < 3; ++r) {
            for (std::uint32_t s = 0; s < 3; ++s) v += kG2[y][r] * g.at(k, r, s, c) * kG2[x][s];
          }
          if (overflows(v, ip)) {
            throw std::runtime_error("Winograd convolution: transformed weight " +
                                     std::to_string(v) + " of kernel " + std::to_string(k) +
                                     " channel " + std::to_string(c) + " does not fit INT" +
                                     std::to_string(bits(ip)) + " (4U = (2G) g (2G)^T)");
          }
          u.at(k, static_cast<std::uint32_t>(y), static_cast<std::uint32_t>(x), c) =
              static_cast<std::int32_t>(v);
        }
      }
    }
  }
  return u;
}

std::uint64_t winograd_weight_offset(const ConvWeights& u, const ConvWeightLayout& layout,
                                     std::uint32_t k, std::uint32_t y, std::uint32_t x,
                                     std::uint32_t c) {
  const unsigned g_size = layout.group_kernels();
  const std::uint32_t group = k / g_size;
  const std::uint32_t kg = std::min<std::uint32_t>(g_size, u.kernels - group * g_size);
  const std::uint64_t cube = 64;                      // elements of a 4x4x4 small cube
  const std::uint64_t blocks = (u.channels + 3) / 4;  // small cubes per kernel
  std::uint64_t e = std::uint64_t{group} * g_size * blocks * cube;  // earlier groups
  e += (std::uint64_t{c / 4} * kg + (k - group * g_size)) * cube;   // K -> C scan in the group
  e += (std::uint64_t{y} * 4 + x) * 4 + c % 4;                      // inside the small cube
  return e * conv_element_bytes(layout.precision);
}

std::uint64_t winograd_weight_bytes(const ConvWeights& u, const ConvWeightLayout& layout) {
  return std::uint64_t{u.kernels} * 64 * ((u.channels + 3) / 4) *
         conv_element_bytes(layout.precision);
}

ConvWeights read_winograd_weights(std::uint64_t base, std::uint32_t kernels, std::uint32_t channels,
                                  const ConvWeightLayout& layout, const Memory& mem) {
  ConvWeights u(kernels, kWinogradTile, kWinogradTile, channels);
  std::vector<std::uint8_t> raw(winograd_weight_bytes(u, layout));
  mem.read(base, raw.data(), raw.size());
  const unsigned bpe = conv_element_bytes(layout.precision);
  for (std::uint32_t k = 0; k < kernels; ++k) {
    for (std::uint32_t y = 0; y < 4; ++y) {
      for (std::uint32_t x = 0; x < 4; ++x) {
        for (std::uint32_t c = 0; c < channels; ++c) {
          u.at(k, y, x, c) =
              conv_detail::load_signed(&raw[winograd_weight_offset(u, layout, k, y, x, c)], bpe);
        }
      }
    }
  }
  return u;
}

std::uint64_t write_winograd_weights(const ConvWeights& u, std::uint64_t base,
                                     const ConvWeightLayout& layout, Memory& mem) {
  std::vector<std::uint8_t> raw((winograd_weight_bytes(u, layout) + 127) / 128 * 128, 0);
  const unsigned bpe = conv_element_bytes(layout.precision);
  for (std::uint32_t k = 0; k < u.kernels; ++k) {
    for (std::uint32_t y = 0; y < 4; ++y) {
      for (std::uint32_t x = 0; x < 4; ++x) {
        for (std::uint32_t c = 0; c < u.channels; ++c) {
          conv_detail::store(&raw[winograd_weight_offset(u, layout, k, y, x, c)], u.at(k, y, x, c),
                             bpe);
        }
      }
    }
  }
  mem.write(base, raw.data(), raw.size());
  return raw.size();
}

void winograd_pra(const std::int64_t d[16], unsigned pra_trunc, ConvPrecision p,
                  std::int64_t v[16]) {
  const IntPrecision ip = int_precision(p);
  std::int64_t t[16];  // C^T d: rows d0 - d2, d1 + d2, d2 - d1, d1 - d3
  for (int x = 0; x < 4; ++x) {
    t[0 * 4 + x] = d[0 * 4 + x] - d[2 * 4 + x];
    t[1 * 4 + x] = d[1 * 4 + x] + d[2 * 4 + x];
    t[2 * 4 + x] = d[2 * 4 + x] - d[1 * 4 + x];
    t[3 * 4 + x] = d[1 * 4 + x] - d[3 * 4 + x];
  }
  for (int y = 0; y < 4; ++y) {  // (C^T d) C: the same combination of columns
    const std::int64_t* r = &t[y * 4];
    const std::int64_t w[4] = {r[0] - r[2], r[1] + r[2], r[2] - r[1], r[1] - r[3]};
    for (int x = 0; x < 4; ++x) {
      v[y * 4 + x] = saturate(shift_right_round_half_away(w[x], pra_trunc), ip).value;
    }
  }
}

ConvResult run_conv_winograd(const ConvCube& in, const ConvWeights& u, const ConvParams& p,
                             unsigned pra_trunc, std::uint32_t out_channels_padded) {
  (void)int_precision(p.precision);
  if (u.kernel_height != kWinogradTile || u.kernel_width != kWinogradTile) {
    throw std::runtime_error("Winograd convolution: transformed kernels must be 4x4");
  }
  if (u.channels < in.channels) {
    throw std::runtime_error("Winograd convolution: weight channels (" +
                             std::to_string(u.channels) + ") fewer than input channels (" +
                             std::to_string(in.channels) + ")");
  }
  if (p.stride_x != 1 || p.stride_y != 1 || p.dilation_x != 1 || p.dilation_y != 1) {
    throw std::runtime_error("Winograd convolution: stride and dilation must be 1");
  }
  if (p.out_width % kWinogradOutTile != 0 || p.out_height % kWinogradOutTile != 0) {
    throw std::runtime_error("Winograd convolution: output width and height must be even");
  }
  ConvResult res;
  res.out = ConvCube(p.out_width, p.out_height, std::max(out_channels_padded, u.kernels));
  const std::uint32_t tiles_x = p.out_width / 2, tiles_y = p.out_height / 2;
  // V of every tile and input channel (the PRA runs once per tile, shared by all kernels).
  std::vector<std::int64_t> v(std::size_t{tiles_x} * tiles_y * in.channels * 16);
  for (std::uint32_t c = 0; c < in.channels; ++c) {
    for (std::uint32_t ty = 0; ty < tiles_y; ++ty) {
      for (std::uint32_t tx = 0; tx < tiles_x; ++tx) {
        std::int64_t d[16];
        for (int y = 0; y < 4; ++y) {
          for (int x = 0; x < 4; ++x) {
            const std::int64_t iy = std::int64_t{ty} * 2 + y - p.pad_top;
            const std::int64_t ix = std::int64_t{tx} * 2 + x - p.pad_left;
            const bool inside = iy >= 0 && iy < in.height && ix >= 0 && ix < in.width;
            d[y * 4 + x] =
                inside ? in.at(static_cast<std::uint32_t>(ix), static_cast<std::uint32_t>(iy), c)
                       : p.pad_value;
          }
        }
        winograd_pra(d, pra_trunc, p.precision,
                     &v[((std::size_t{ty} * tiles_x + tx) * in.channels + c) * 16]);
      }
    }
  }
  for (std::uint32_t k = 0; k < u.kernels; ++k) {
    for (std::uint32_t ty = 0; ty < tiles_y; ++ty) {
      for (std::uint32_t tx = 0; tx < tiles_x; ++tx) {
        std::int64_t acc[4] = {0, 0, 0, 0};
        for (std::uint32_t c0 = 0; c0 < in.channels; c0 += 4) {  // one small cube per block
          std::int64_t m[16] = {};                               // phase 1: 4 channels summed
          for (std::uint32_t c = c0; c < std::min(c0 + 4, in.channels); ++c) {
            const std::int64_t* vt = &v[((std::size_t{ty} * tiles_x + tx) * in.channels + c) * 16];
            for (std::uint32_t e = 0; e < 16; ++e) {
              m[e] += vt[e] * u.at(k, e / 4, e % 4, c);
            }
          }
          std::int64_t s[4];
          poa(m, s);  // phases 2 and 3
          for (int i = 0; i < 4; ++i) acc[i] += s[i];
        }
        for (std::uint32_t i = 0; i < 4; ++i) {
          res.out.at(tx * 2 + i % 2, ty * 2 + i / 2, k) =
              clip_truncate(acc[i], p.clip_truncate, res.saturated);
        }
      }
    }
  }
  res.macs = std::uint64_t{tiles_x} * tiles_y * 16 * u.channels * u.kernels;
  return res;
}

}  // namespace octasim::models::ops
