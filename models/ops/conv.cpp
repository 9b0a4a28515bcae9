#include "models/ops/conv.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/numerics/int_range.hpp"
#include "models/ops/conv_detail.hpp"

namespace octasim::models::ops {

ConvCube read_feature_cube(const ConvFeatureSurface& s, ConvPrecision p, const Memory& mem) {
  const unsigned bpe = conv_element_bytes(p);
  const unsigned epa = s.atom_bytes / bpe;
  ConvCube cube(s.width, s.height, s.channels);
  std::vector<std::uint8_t> line(std::size_t{s.width} * s.atom_bytes);
  const std::uint32_t surfaces = (s.channels + epa - 1) / epa;
  for (std::uint32_t surf = 0; surf < surfaces; ++surf) {
    for (std::uint32_t y = 0; y < s.height; ++y) {
      mem.read(s.base + std::uint64_t{surf} * s.surface_stride + std::uint64_t{y} * s.line_stride,
               line.data(), line.size());
      for (std::uint32_t x = 0; x < s.width; ++x) {
        for (unsigned i = 0; i < epa; ++i) {
          const std::uint32_t c = surf * epa + i;
          if (c >= s.channels) break;
          cube.at(x, y, c) =
              conv_detail::load_signed(&line[std::size_t{x} * s.atom_bytes + i * bpe], bpe);
        }
      }
    }
  }
  return cube;
}

void write_feature_cube(const ConvCube& cube, const ConvFeatureSurface& s, ConvPrecision p,
                        Memory& mem) {
  const unsigned bpe = conv_element_bytes(p);
  const unsigned epa = s.atom_bytes / bpe;
  std::vector<std::uint8_t> line(std::size_t{s.width} * s.atom_bytes);
  const std::uint32_t surfaces = (s.channels + epa - 1) / epa;
  for (std::uint32_t surf = 0; surf < surfaces; ++surf) {
    for (std::uint32_t y = 0; y < s.height; ++y) {
      std::fill(line.begin(), line.end(), std::uint8_t{0});
      for (std::uint32_t x = 0; x < s.width; ++x) {
        for (unsigned i = 0; i < epa; ++i) {
          const std::uint32_t c = surf * epa + i;
          if (c >= s.channels) break;
          conv_detail::store(&line[std::size_t{x} * s.atom_bytes + i * bpe], cube.at(x, y, c), bpe);
        }
      }
      mem.write(s.base + std::uint64_t{surf} * s.surface_stride + std::uint64_t{y} * s.line_stride,
                line.data(), line.size());
    }
  }
}

std::uint64_t ConvWeightLayout::offset(const ConvWeights& w, std::uint32_t k, std::uint32_t r,
                                       std::uint32_t s, std::uint32_t c) const {
  const unsigned g_size = group_kernels();
  const std::uint32_t group = k / g_size;
  const std::uint32_t kg =
      std::min<std::uint32_t>(g_size, w.kernels - group * g_size);  // kernels in this group
  const std::uint64_t kernel_elems = std::uint64_t{w.kernel_height} * w.kernel_width * w.channels;
  const std::uint32_t block = c / atomic_c;
  const std::uint32_t block_size = std::min<std::uint32_t>(atomic_c, w.channels - block * atomic_c);
  std::uint64_t e = std::uint64_t{group} * g_size * kernel_elems;                // earlier groups
  e += std::uint64_t{block} * atomic_c * w.kernel_height * w.kernel_width * kg;  // earlier blocks
  e += ((std::uint64_t{r} * w.kernel_width + s) * kg + (k - group * g_size)) * block_size;
  e += c - block * atomic_c;
  return e * conv_element_bytes(precision);
}

std::uint64_t ConvWeightLayout::bytes(const ConvWeights& w) const {
  return std::uint64_t{w.kernels} * w.kernel_height * w.kernel_width * w.channels *
         conv_element_bytes(precision);
}

ConvWeights read_weights(std::uint64_t base, std::uint32_t kernels, std::uint32_t kernel_height,
                         std::uint32_t kernel_width, std::uint32_t channels,
                         const ConvWeightLayout& layout, const Memory& mem) {
  ConvWeights w(kernels, kernel_height, kernel_width, channels);
  std::vector<std::uint8_t> raw(layout.bytes(w));
  mem.read(base, raw.data(), raw.size());
  const unsigned bpe = conv_element_bytes(layout.precision);
  for (std::uint32_t k = 0; k < kernels; ++k) {
    for (std::uint32_t r = 0; r < kernel_height; ++r) {
      for (std::uint32_t s = 0; s < kernel_width; ++s) {
        for (std::uint32_t c = 0; c < channels; ++c) {
          w.at(k, r, s, c) = conv_detail::load_signed(&raw[layout.offset(w, k, r, s, c)], bpe);
        }
      }
    }
  }
  return w;
}

std::uint64_t write_weights(const ConvWeights& w, std::uint64_t base,
                            const ConvWeightLayout& layout, Memory& mem) {
  const std::uint64_t packed = layout.bytes(w);
  std::vector<std::uint8_t> raw((packed + 127) / 128 * 128, 0);
  const unsigned bpe = conv_element_bytes(layout.precision);
  for (std::uint32_t k = 0; k < w.kernels; ++k) {
    for (std::uint32_t r = 0; r < w.kernel_height; ++r) {
      for (std::uint32_t s = 0; s < w.kernel_width; ++s) {
        for (std::uint32_t c = 0; c < w.channels; ++c) {
          conv_detail::store(&raw[layout.offset(w, k, r, s, c)], w.at(k, r, s, c), bpe);
        }
      }
    }
  }
  mem.write(base, raw.data(), raw.size());
  return raw.size();
}

std::uint32_t conv_output_size(std::uint32_t in, std::uint32_t pad_before, std::uint32_t pad_after,
                               std::uint32_t kernel, std::uint32_t dilation, std::uint32_t stride) {
  const std::int64_t span = (std::int64_t{kernel} - 1) * dilation + 1;
  const std::int64_t padded = std::int64_t{in} + pad_before + pad_after;
  if (padded < span || stride == 0) return 0;
  return static_cast<std::uint32_t>((padded - span) / stride + 1);
}

ConvResult run_conv_int(const ConvCube& in, const ConvWeights& w, const ConvParams& p,
                        std::uint32_t out_channels_padded) {
  if (p.precision == ConvPrecision::kFp16) {
    throw std::runtime_error("convolution: FP16 is not supported by the integer datapath");
  }
  if (w.channels != in.channels) {
    throw std::runtime_error("convolution: weight channels (" + std::to_string(w.channels) +
                             ") differ from input channels (" + std::to_string(in.channels) + ")");
  }
  const std::uint32_t out_c = std::max(out_channels_padded, w.kernels);
  ConvResult res;
  res.out = ConvCube(p.out_width, p.out_height, out_c);

  // Channel-last copy of the input so each kernel position is one contiguous dot product.
  const std::uint32_t C = in.channels;
  std::vector<std::int32_t> hwc(in.data.size());
  for (std::uint32_t c = 0; c < C; ++c) {
    for (std::uint32_t y = 0; y < in.height; ++y) {
      for (std::uint32_t x = 0; x < in.width; ++x) {
        hwc[(std::size_t{y} * in.width + x) * C + c] = in.at(x, y, c);
      }
    }
  }
  // A padded position contributes pad_value * (sum of the kernel position's weights).
  std::vector<std::int64_t> wsum(std::size_t{w.kernels} * w.kernel_height * w.kernel_width, 0);
  for (std::uint32_t k = 0; k < w.kernels; ++k) {
    for (std::uint32_t r = 0; r < w.kernel_height; ++r) {
      for (std::uint32_t s = 0; s < w.kernel_width; ++s) {
        std::int64_t sum = 0;
        const std::int32_t* wp = &w.data[w.index(k, r, s, 0)];
        for (std::uint32_t c = 0; c < C; ++c) sum += wp[c];
        wsum[(std::size_t{k} * w.kernel_height + r) * w.kernel_width + s] = sum;
      }
    }
  }

  for (std::uint32_t k = 0; k < w.kernels; ++k) {
    for (std::uint32_t oy = 0; oy < p.out_height; ++oy) {
      for (std::uint32_t ox = 0; ox < p.out_width; ++ox) {
        std::int64_t acc = 0;
        for (std::uint32_t r = 0; r < w.kernel_height; ++r) {
          const std::int64_t y =
              std::int64_t{oy} * p.stride_y - p.pad_top + std::int64_t{r} * p.dilation_y;
          for (std::uint32_t s = 0; s < w.kernel_width; ++s) {
            const std::int64_t x =
                std::int64_t{ox} * p.stride_x - p.pad_left + std::int64_t{s} * p.dilation_x;
            if (y < 0 || y >= in.height || x < 0 || x >= in.width) {
              acc += std::int64_t{p.pad_value} *
                     wsum[(std::size_t{k} * w.kernel_height + r) * w.kernel_width + s];
              continue;
            }
            const std::int32_t* dp =
                &hwc[(static_cast<std::size_t>(y) * in.width + static_cast<std::size_t>(x)) * C];
            const std::int32_t* wp = &w.data[w.index(k, r, s, 0)];
            std::int64_t dot = 0;
            for (std::uint32_t c = 0; c < C; ++c) dot += std::int64_t{dp[c]} * wp[c];
            acc += dot;
          }
        }
        acc = std::clamp(acc, conv_detail::kAccMin, conv_detail::kAccMax);
        const auto t = static_cast<std::int64_t>(shift_right_round_half_away(acc, p.clip_truncate));
        std::int32_t v = 0;
        if (t > INT32_MAX) {
          v = INT32_MAX;
          ++res.saturated;
        } else if (t < INT32_MIN) {
          v = INT32_MIN;
          ++res.saturated;
        } else {
          v = static_cast<std::int32_t>(t);
        }
        res.out.at(ox, oy, k) = v;
      }
    }
  }
  res.macs =
      std::uint64_t{p.out_width} * p.out_height * w.kernels * w.kernel_height * w.kernel_width * C;
  return res;
}

}  // namespace octasim::models::ops
