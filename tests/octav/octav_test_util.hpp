// Helpers for the OCTAV unit tests: Laplace tensors in every element type, their FP32 values
// as the unit's front end defines them, and an NVDLA feature-layout writer derived from the
// format rule (element (w, h, c) at surface c / C', line h, atom w, lane c % C').
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "models/numerics/float_format.hpp"
#include "sim/octav/octav_functional.hpp"

namespace octasim::test {

// Raw little-endian elements of type t and their FP32 values, in C order [C, H, W] (or flat).
struct TypedTensor {
  octav::DataType type = octav::DataType::kInt8;
  std::vector<std::uint8_t> raw;  // element i at i * element_bytes
  std::vector<float> values;
};

// Laplace-distributed data (scale b), some exact zeros, and (signed types) both signs.
inline TypedTensor laplace_tensor(octav::DataType type, std::size_t n, double b, std::uint32_t seed,
                                  double zero_fraction = 0.1) {
  std::mt19937 rng(seed);
  std::exponential_distribution<double> mag(1.0 / b);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  TypedTensor t;
  t.type = type;
  const unsigned eb = octav::element_bytes(type);
  t.raw.resize(n * eb);
  t.values.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    double v = u(rng) < zero_fraction ? 0.0 : mag(rng) * (u(rng) < 0.5 ? -1.0 : 1.0);
    std::uint32_t bits = 0;
    float f = 0.0f;
    switch (type) {
      case octav::DataType::kInt8: {
        const auto q = static_cast<std::int8_t>(std::fmax(-128.0, std::fmin(127.0, std::round(v))));
        bits = static_cast<std::uint8_t>(q);
        f = q;
        break;
      }
      case octav::DataType::kInt16: {
        const auto q =
            static_cast<std::int16_t>(std::fmax(-32768.0, std::fmin(32767.0, std::round(v))));
        bits = static_cast<std::uint16_t>(q);
        f = q;
        break;
      }
      case octav::DataType::kInt32: {
        const auto q = static_cast<std::int32_t>(
            std::fmax(-2147483648.0, std::fmin(2147483647.0, std::round(v))));
        bits = static_cast<std::uint32_t>(q);
        f = static_cast<float>(q);
        break;
      }
      case octav::DataType::kFp16: {
        const std::uint16_t h = models::fp16_from_double(v);
        bits = h;
        f = models::fp16_to_float(h);
        break;
      }
      case octav::DataType::kFp32: {
        f = static_cast<float>(v);
        std::memcpy(&bits, &f, 4);
        break;
      }
    }
    for (unsigned k = 0; k < eb; ++k)
      t.raw[i * eb + k] = static_cast<std::uint8_t>(bits >> (8 * k));
    t.values[i] = f;
  }
  return t;
}

// Writes a [C, H, W] tensor into memory in NVDLA's feature layout.
inline void write_feature(models::ops::Memory& mem, std::uint64_t base, const TypedTensor& t,
                          std::uint32_t w, std::uint32_t h, std::uint32_t c, unsigned atom,
                          std::uint32_t line_stride, std::uint32_t surface_stride) {
  const unsigned eb = octav::element_bytes(t.type);
  const unsigned cpa = atom / eb;
  for (std::uint32_t ci = 0; ci < c; ++ci) {
    for (std::uint32_t hi = 0; hi < h; ++hi) {
      for (std::uint32_t wi = 0; wi < w; ++wi) {
        const std::uint64_t addr = base + std::uint64_t{ci / cpa} * surface_stride +
                                   std::uint64_t{hi} * line_stride + std::uint64_t{wi} * atom +
                                   (ci % cpa) * eb;
        const std::size_t i = (std::size_t{ci} * h + hi) * w + wi;
        mem.write(addr, t.raw.data() + i * eb, eb);
      }
    }
  }
}

// Registers as a map (CSB address -> value) read through a RegRead.
struct RegMap {
  std::map<std::uint32_t, std::uint32_t> values;
  void set(std::uint32_t addr, std::uint32_t v) { values[addr] = v; }
  [[nodiscard]] dla::RegRead reader() const {
    return [this](std::uint32_t addr) {
      const auto it = values.find(addr);
      return it == values.end() ? 0u : it->second;
    };
  }
};

inline std::uint32_t fp32_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline float fp32_of(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace octasim::test
