// `octasim numerics`: quantize a built-in INT32 tensor to INT8 with an NVDLA convertor, count
// saturations, CRC the result, and show FP16/BF16 rounding on the values people usually get
// wrong.
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include "models/numerics/crc32.hpp"
#include "models/numerics/float_format.hpp"
#include "models/precision/convertor.hpp"
#include "octasim/version.hpp"
#include "sim/app/commands.hpp"

namespace octasim::app {

void add_numerics_command(CLI::App& app) {
  app.add_subcommand("numerics",
                     "self-demonstration of the numerics core: convertor, saturation, CRC, FP16");
}

int run_numerics() {
  using namespace octasim::models;
  fmt::print("octasim {} — numerics self-demonstration (models/)\n\n", kVersion);

  // A convolution-accumulator-like INT32 tensor: a smooth ramp with a few large outliers.
  std::vector<std::int64_t> acc;
  for (int i = 0; i < 16; ++i) acc.push_back((i - 7) * 1500 + (i % 3) * 37);
  acc[3] = -40000;
  acc[12] = 52000;
  acc[15] = 2147483647;

  // Requantize to INT8: y = (x - 64) * 181 >> 15, about x / 181.
  const ConvertorParams p{64, 181, 15};
  std::vector<std::int64_t> out;
  SaturationCounter sat;
  fmt::print("NVDLA convertor: y = sat_int8(round_half_away(((x - {}) * {}) >> {}))\n", p.offset,
             p.scale, p.shift);
  fmt::print("  {:>12} {:>6}\n", "x (INT32)", "y");
  for (const std::int64_t x : acc) {
    const Saturated y = convert(x, p, IntPrecision::kInt8);
    sat.record(y.saturated);
    out.push_back(y.value);
    fmt::print("  {:>12} {:>6}{}\n", x, y.value, y.saturated ? "  saturated" : "");
  }
  fmt::print("saturation count: {} of {} (INT8 range [-128, 127])\n", sat.value(), acc.size());

  std::vector<std::uint8_t> bytes;
  for (const auto v : out) bytes.push_back(static_cast<std::uint8_t>(v));
  fmt::print("CRC32 of the INT8 surface (as check_crc computes it): 0x{:08x}\n\n",
             crc32(bytes.data(), bytes.size()));

  fmt::print("FP16 / BF16 round-to-nearest-even:\n");
  fmt::print("  {:>14} {:>8} {:>14} {:>8} {:>14}\n", "x", "fp16", "fp16 value", "bf16",
             "bf16 value");
  const std::array<double, 7> samples{
      0.1, 1.0 / 3.0, 65519.0, 65520.0, std::ldexp(1.0, -25), std::ldexp(1.0, -24), -1e-8};
  for (const double x : samples) {
    const std::uint16_t h = fp16_from_double(x);
    const std::uint16_t b = bf16_from_double(x);
    fmt::print("  {:>14.8g} 0x{:04x} {:>14.8g} 0x{:04x} {:>14.8g}\n", x, h, decode_float(h, kFp16),
               b, decode_float(b, kBf16));
  }
  return 0;
}

}  // namespace octasim::app
