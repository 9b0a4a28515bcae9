#include "models/ops/conv_fp16.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/numerics/float_format.hpp"
#include "models/numerics/int_range.hpp"
#include "models/precision/thresholds.hpp"

namespace octasim::models::ops {
namespace {

constexpr std::uint32_t kFp32QuietNan = 0x7fc00000u;
constexpr std::uint32_t kFp32PosInf = 0x7f800000u;
constexpr std::uint32_t kFp32NegInf = 0xff800000u;

// An FP16 number as m * 2^e with an integer significand m (11 bits at most) and e >= -24.
struct Fp16Parts {
  bool negative;
  std::uint32_t m;
  int e;
};

Fp16Parts split(std::uint16_t h) {
  const std::uint32_t field = (h >> 10) & 0x1fu;
  const std::uint32_t frac = h & 0x3ffu;
  if (field == 0) return {(h & 0x8000u) != 0, frac, -24};
  return {(h & 0x8000u) != 0, frac | 0x400u, static_cast<int>(field) - 25};
}

int msb_index(uint128_t x) {
  const auto hi = static_cast<std::uint64_t>(x >> 64);
  if (hi != 0) return 127 - __builtin_clzll(hi);
  return 63 - __builtin_clzll(static_cast<std::uint64_t>(x));
}

// The exact fixed-point sum (units of 2^-48) rounded once to FP32, nearest even. The magnitude
// is first cut to 53 bits rounding to odd (a sticky bit in the last place), which a double holds
// exactly; rounding that to FP32's 24 bits then equals rounding the exact value.
std::uint32_t round_to_fp32(int128_t acc) {
  if (acc == 0) return 0;
  const bool negative = acc < 0;
  const uint128_t mag = negative ? static_cast<uint128_t>(-acc) : static_cast<uint128_t>(acc);
  const int msb = msb_index(mag);
  int shift = 0;
  std::uint64_t top = 0;
  if (msb > 52) {
    shift = msb - 52;
    const uint128_t rest = mag & ((uint128_t{1} << shift) - 1);
    top = static_cast<std::uint64_t>(mag >> shift) | (rest != 0 ? 1u : 0u);
  } else {
    top = static_cast<std::uint64_t>(mag);
  }
  const double v = std::ldexp(static_cast<double>(top), shift - 48);
  return encode_float(negative ? -v : v, kFp32);
}

// CDMA's view of one FP16 operand: counted, and a NaN flushed to +0 when asked.
std::uint16_t cdma_read(std::uint16_t h, bool nan_to_zero, std::uint32_t& nans,
                        std::uint32_t& infs) {
  if (fp16_is_nan(h)) {
    ++nans;
    return nan_to_zero ? std::uint16_t{0} : h;
  }
  if (fp16_is_inf(h)) ++infs;
  return h;
}

std::uint16_t bits16(std::int32_t v) {
  return static_cast<std::uint16_t>(static_cast<std::uint32_t>(v));
}

}  // namespace

std::uint32_t fp16_dot_fp32(const std::uint16_t* data, const std::uint16_t* wt, std::size_t n) {
  int128_t acc = 0;
  bool nan = false, pos_inf = false, neg_inf = false;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t a = data[i], b = wt[i];
    if ((a & 0x7c00u) == 0x7c00u || (b & 0x7c00u) == 0x7c00u) {
      const bool a_zero = (a & 0x7fffu) == 0, b_zero = (b & 0x7fffu) == 0;
      if (fp16_is_nan(a) || fp16_is_nan(b) || (fp16_is_inf(a) && b_zero) ||
          (fp16_is_inf(b) && a_zero)) {
        nan = true;
      } else {
        (((a ^ b) & 0x8000u) != 0 ? neg_inf : pos_inf) = true;
      }
      continue;
    }
    const Fp16Parts x = split(a), y = split(b);
    const std::uint64_t m = std::uint64_t{x.m} * y.m;
    if (m == 0) continue;
    const int128_t term = int128_t{static_cast<std::int64_t>(m)} << (x.e + y.e + 48);
    acc += x.negative != y.negative ? -term : term;
  }
  if (nan || (pos_inf && neg_inf)) return kFp32QuietNan;
  if (pos_inf) return kFp32PosInf;
  if (neg_inf) return kFp32NegInf;
  return round_to_fp32(acc);
}

ConvFp16Result run_conv_fp16(const ConvCube& in, const ConvWeights& w, const ConvParams& p,
                             std::uint32_t out_channels_padded, bool nan_to_zero) {
  if (p.precision != ConvPrecision::kFp16) {
    throw std::runtime_error("convolution: run_conv_fp16 needs FP16 parameters");
  }
  if (w.channels != in.channels) {
    throw std::runtime_error("convolution: weight channels (" + std::to_string(w.channels) +
                             ") differ from input channels (" + std::to_string(in.channels) + ")");
  }
  ConvFp16Result res;
  const std::uint32_t C = in.channels;
  // Channel-last copies of what CDMA delivered (counted, NaN flushed when asked).
  std::vector<std::uint16_t> hwc(in.data.size());
  for (std::uint32_t c = 0; c < C; ++c) {
    for (std::uint32_t y = 0; y < in.height; ++y) {
      for (std::uint32_t x = 0; x < in.width; ++x) {
        hwc[(std::size_t{y} * in.width + x) * C + c] =
            cdma_read(bits16(in.at(x, y, c)), nan_to_zero, res.stats.nan_data, res.stats.inf_data);
      }
    }
  }
  std::vector<std::uint16_t> wt(w.data.size());
  for (std::size_t i = 0; i < w.data.size(); ++i) {
    wt[i] = cdma_read(bits16(w.data[i]), nan_to_zero, res.stats.nan_weight, res.stats.inf_weight);
  }

  const std::uint32_t out_c = std::max(out_channels_padded, w.kernels);
  res.out = ConvCube(p.out_width, p.out_height, out_c);
  const std::size_t window = std::size_t{w.kernel_height} * w.kernel_width * C;
  std::vector<std::uint16_t> data(window), pad(C, bits16(p.pad_value));
  for (std::uint32_t oy = 0; oy < p.out_height; ++oy) {
    for (std::uint32_t ox = 0; ox < p.out_width; ++ox) {
      // The element's window, kernel-position-major like the weights of one kernel.
      for (std::uint32_t r = 0; r < w.kernel_height; ++r) {
        const std::int64_t y =
            std::int64_t{oy} * p.stride_y - p.pad_top + std::int64_t{r} * p.dilation_y;
        for (std::uint32_t s = 0; s < w.kernel_width; ++s) {
          const std::int64_t x =
              std::int64_t{ox} * p.stride_x - p.pad_left + std::int64_t{s} * p.dilation_x;
          const bool inside = y >= 0 && y < in.height && x >= 0 && x < in.width;
          const std::uint16_t* src =
              inside
                  ? &hwc[(static_cast<std::size_t>(y) * in.width + static_cast<std::size_t>(x)) * C]
                  : pad.data();
          std::copy(src, src + C, &data[(std::size_t{r} * w.kernel_width + s) * C]);
        }
      }
      for (std::uint32_t k = 0; k < w.kernels; ++k) {
        const std::uint32_t v = fp16_dot_fp32(data.data(), &wt[w.index(k, 0, 0, 0)], window);
        res.out.at(ox, oy, k) = static_cast<std::int32_t>(v);
      }
    }
  }
  res.macs = std::uint64_t{p.out_width} * p.out_height * w.kernels * window;
  return res;
}

std::vector<int> conv_fp16_max_exp(const ConvCube& in, const ConvWeights& w, const ConvParams& p) {
  const std::uint32_t C = in.channels;
  const std::size_t window = std::size_t{w.kernel_height} * w.kernel_width * C;
  std::vector<int> out(std::size_t{p.out_width} * p.out_height * w.kernels);
  std::vector<std::uint16_t> data(window), wt(window);
  for (std::uint32_t k = 0; k < w.kernels; ++k) {
    for (std::size_t i = 0; i < window; ++i) wt[i] = bits16(w.data[w.index(k, 0, 0, 0) + i]);
    for (std::uint32_t oy = 0; oy < p.out_height; ++oy) {
      for (std::uint32_t ox = 0; ox < p.out_width; ++ox) {
        for (std::uint32_t r = 0; r < w.kernel_height; ++r) {
          const std::int64_t y =
              std::int64_t{oy} * p.stride_y - p.pad_top + std::int64_t{r} * p.dilation_y;
          for (std::uint32_t s = 0; s < w.kernel_width; ++s) {
            const std::int64_t x =
                std::int64_t{ox} * p.stride_x - p.pad_left + std::int64_t{s} * p.dilation_x;
            const bool inside = y >= 0 && y < in.height && x >= 0 && x < in.width;
            for (std::uint32_t c = 0; c < C; ++c) {
              data[(std::size_t{r} * w.kernel_width + s) * C + c] =
                  inside ? bits16(in.at(static_cast<std::uint32_t>(x),
                                        static_cast<std::uint32_t>(y), c))
                         : bits16(p.pad_value);
            }
          }
        }
        out[(std::size_t{k} * p.out_height + oy) * p.out_width + ox] =
            cc_max_exp(data.data(), wt.data(), window);
      }
    }
  }
  return out;
}

}  // namespace octasim::models::ops
