#include "models/ops/conv_image.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "models/precision/convertor.hpp"

namespace octasim::models::ops {
namespace {

// How a format's components sit in memory.
enum class Packing : std::uint8_t {
  kBytes,       // one byte a component
  kWords,       // one little-endian 16-bit word a component
  k10_10_10_2,  // three 10-bit and one 2-bit field of a 32-bit word
  kPlanarBytes,
  kPlanarWords,
};

struct FormatEntry {
  PixelFormatInfo info;
  Packing packing;
  // kBytes/kWords: element of the pixel holding component i (R/Y, G/U, B/V, A/X).
  // kPlanar*: 0 = Y (plane 0), 1/2 = first/second chroma sample of plane 1.
  // k10_10_10_2: bit position of component i's field.
  std::array<std::uint8_t, 4> where;
};

using P = ConvPrecision;
constexpr auto kI8 = P::kInt8;
constexpr auto kI16 = P::kInt16;
constexpr auto kF16 = P::kFp16;

// Indexed by the PIXEL_FORMAT encoding.
constexpr std::array<FormatEntry, 36> kFormats{{
    {{"T_R8", 1, 1, 1, 0, kI8}, Packing::kBytes, {0, 0, 0, 0}},
    {{"T_R10", 1, 1, 2, 0, kI16}, Packing::kWords, {0, 0, 0, 0}},
    {{"T_R12", 1, 1, 2, 0, kI16}, Packing::kWords, {0, 0, 0, 0}},
    {{"T_R16", 1, 1, 2, 0, kI16}, Packing::kWords, {0, 0, 0, 0}},
    {{"T_R16_I", 1, 1, 2, 0, kI16}, Packing::kWords, {0, 0, 0, 0}},
    {{"T_R16_F", 1, 1, 2, 0, kF16}, Packing::kWords, {0, 0, 0, 0}},
    {{"T_A16B16G16R16", 1, 4, 8, 0, kI16}, Packing::kWords, {0, 1, 2, 3}},
    {{"T_X16B16G16R16", 1, 4, 8, 0, kI16}, Packing::kWords, {0, 1, 2, 3}},
    {{"T_A16B16G16R16_F", 1, 4, 8, 0, kF16}, Packing::kWords, {0, 1, 2, 3}},
    {{"T_A16Y16U16V16", 1, 4, 8, 0, kI16}, Packing::kWords, {2, 1, 0, 3}},
    {{"T_V16U16Y16A16", 1, 4, 8, 0, kI16}, Packing::kWords, {1, 2, 3, 0}},
    {{"T_A16Y16U16V16_F", 1, 4, 8, 0, kF16}, Packing::kWords, {2, 1, 0, 3}},
    {{"T_A8B8G8R8", 1, 4, 4, 0, kI8}, Packing::kBytes, {0, 1, 2, 3}},
    {{"T_A8R8G8B8", 1, 4, 4, 0, kI8}, Packing::kBytes, {2, 1, 0, 3}},
    {{"T_B8G8R8A8", 1, 4, 4, 0, kI8}, Packing::kBytes, {1, 2, 3, 0}},
    {{"T_R8G8B8A8", 1, 4, 4, 0, kI8}, Packing::kBytes, {3, 2, 1, 0}},
    {{"T_X8B8G8R8", 1, 4, 4, 0, kI8}, Packing::kBytes, {0, 1, 2, 3}},
    {{"T_X8R8G8B8", 1, 4, 4, 0, kI8}, Packing::kBytes, {2, 1, 0, 3}},
    {{"T_B8G8R8X8", 1, 4, 4, 0, kI8}, Packing::kBytes, {1, 2, 3, 0}},
    {{"T_R8G8B8X8", 1, 4, 4, 0, kI8}, Packing::kBytes, {3, 2, 1, 0}},
    {{"T_A2B10G10R10", 1, 4, 4, 0, kI16}, Packing::k10_10_10_2, {0, 10, 20, 30}},
    {{"T_A2R10G10B10", 1, 4, 4, 0, kI16}, Packing::k10_10_10_2, {20, 10, 0, 30}},
    {{"T_B10G10R10A2", 1, 4, 4, 0, kI16}, Packing::k10_10_10_2, {2, 12, 22, 0}},
    {{"T_R10G10B10A2", 1, 4, 4, 0, kI16}, Packing::k10_10_10_2, {22, 12, 2, 0}},
    {{"T_A2Y10U10V10", 1, 4, 4, 0, kI16}, Packing::k10_10_10_2, {20, 10, 0, 30}},
    {{"T_V10U10Y10A2", 1, 4, 4, 0, kI16}, Packing::k10_10_10_2, {2, 12, 22, 0}},
    {{"T_A8Y8U8V8", 1, 4, 4, 0, kI8}, Packing::kBytes, {2, 1, 0, 3}},
    {{"T_V8U8Y8A8", 1, 4, 4, 0, kI8}, Packing::kBytes, {1, 2, 3, 0}},
    {{"T_Y8___U8V8_N444", 2, 3, 1, 2, kI8}, Packing::kPlanarBytes, {0, 2, 1, 0}},
    {{"T_Y8___V8U8_N444", 2, 3, 1, 2, kI8}, Packing::kPlanarBytes, {0, 1, 2, 0}},
    {{"T_Y10___U10V10_N444", 2, 3, 2, 4, kI16}, Packing::kPlanarWords, {0, 2, 1, 0}},
    {{"T_Y10___V10U10_N444", 2, 3, 2, 4, kI16}, Packing::kPlanarWords, {0, 1, 2, 0}},
    {{"T_Y12___U12V12_N444", 2, 3, 2, 4, kI16}, Packing::kPlanarWords, {0, 2, 1, 0}},
    {{"T_Y12___V12U12_N444", 2, 3, 2, 4, kI16}, Packing::kPlanarWords, {0, 1, 2, 0}},
    {{"T_Y16___U16V16_N444", 2, 3, 2, 4, kI16}, Packing::kPlanarWords, {0, 2, 1, 0}},
    {{"T_Y16___V16U16_N444", 2, 3, 2, 4, kI16}, Packing::kPlanarWords, {0, 1, 2, 0}},
}};

const FormatEntry& entry(PixelFormat f) {
  return kFormats.at(static_cast<std::size_t>(f));
}

std::int32_t component_value(std::uint32_t bits, unsigned width, bool sign_override) {
  if (width == 8) {
    return sign_override ? std::int32_t{static_cast<std::int8_t>(bits & 0xffu)}
                         : static_cast<std::int32_t>(bits & 0xffu);
  }
  return sign_override ? std::int32_t{static_cast<std::int16_t>(bits & 0xffffu)}
                       : static_cast<std::int32_t>(bits & 0xffffu);
}

// Bytes of one memory atom for the format's fetches (NVDLA_MEMORY_ATOMIC_SIZE elements of the
// input precision; the 10-bit packed formats count bytes).
unsigned atom_bytes(const ImageSurface& s) {
  const FormatEntry& e = entry(s.format);
  const bool wide =
      e.packing != Packing::k10_10_10_2 && e.info.in_precision != ConvPrecision::kInt8;
  return s.atom_elements * (wide ? 2u : 1u);
}

// First pixel (relative to the line's aligned start) that plane 1's base address holds.
std::uint32_t uv_first_pixel(const ImageSurface& s) {
  const FormatEntry& e = entry(s.format);
  const unsigned atom = atom_bytes(s);
  return s.x_offset * e.info.uv_bytes_per_pixel >= atom ? atom / e.info.uv_bytes_per_pixel : 0;
}

std::uint32_t load(const Memory& mem, std::uint64_t addr, unsigned bytes) {
  std::uint8_t b[4] = {0, 0, 0, 0};
  mem.read(addr, b, bytes);
  return std::uint32_t{b[0]} | (std::uint32_t{b[1]} << 8) | (std::uint32_t{b[2]} << 16) |
         (std::uint32_t{b[3]} << 24);
}

void put(std::vector<std::uint8_t>& line, std::size_t at, std::uint32_t v, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) line.at(at + i) = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

const PixelFormatInfo* pixel_format_info(unsigned encoding) {
  return encoding < kFormats.size() ? &kFormats[encoding].info : nullptr;
}

const PixelFormatInfo& pixel_format_info(PixelFormat f) {
  return entry(f).info;
}

std::string pixel_format_name(unsigned encoding) {
  const PixelFormatInfo* info = pixel_format_info(encoding);
  return info != nullptr ? info->name : "reserved pixel format " + std::to_string(encoding);
}

std::array<std::int32_t, 4> read_pixel(const ImageSurface& s, std::uint32_t x, std::uint32_t y,
                                       bool sign_override, const Memory& mem) {
  const FormatEntry& e = entry(s.format);
  const std::uint64_t px = std::uint64_t{s.x_offset} + x;
  const std::uint64_t line0 = s.base0 + std::uint64_t{y} * s.line_stride;
  const std::uint64_t at0 = line0 + px * e.info.bytes_per_pixel;
  std::array<std::int32_t, 4> c{};
  switch (e.packing) {
    case Packing::kBytes:
    case Packing::kWords: {
      const unsigned w = e.packing == Packing::kBytes ? 1 : 2;
      for (unsigned i = 0; i < e.info.channels; ++i) {
        c[i] = component_value(load(mem, at0 + std::uint64_t{e.where[i]} * w, w), 8 * w,
                               sign_override);
      }
      break;
    }
    case Packing::k10_10_10_2: {
      const std::uint32_t word = load(mem, at0, 4);
      for (unsigned i = 0; i < 4; ++i) {
        const unsigned pos = e.where[i];
        const bool alpha = i == 3;
        const std::uint32_t field = (word >> pos) & (alpha ? 0x3u : 0x3ffu);
        c[i] = component_value(field << (alpha ? 14 : 6), 16, sign_override);
      }
      break;
    }
    case Packing::kPlanarBytes:
    case Packing::kPlanarWords: {
      const unsigned w = e.packing == Packing::kPlanarBytes ? 1 : 2;
      const std::uint64_t line1 = s.base1 + std::uint64_t{y} * s.uv_line_stride;
      const std::uint64_t at1 = line1 + (px - uv_first_pixel(s)) * e.info.uv_bytes_per_pixel;
      const std::array<std::uint32_t, 3> samples{load(mem, at0, w), load(mem, at1, w),
                                                 load(mem, at1 + w, w)};
      for (unsigned i = 0; i < 3; ++i)
        c[i] = component_value(samples[e.where[i]], 8 * w, sign_override);
      break;
    }
  }
  return c;
}

std::int32_t convert_pixel_component(std::int32_t raw, unsigned channel, const ImageConvert& cvt) {
  const IntPrecision out =
      cvt.proc_precision == ConvPrecision::kInt8 ? IntPrecision::kInt8 : IntPrecision::kInt16;
  if (!cvt.cvt_enable) {
    return out == IntPrecision::kInt8 ? std::int32_t{static_cast<std::int8_t>(raw & 0xff)}
                                      : std::int32_t{static_cast<std::int16_t>(raw & 0xffff)};
  }
  const std::int16_t m = cvt.mean_enable ? cvt.mean.at(channel) : cvt.cvt_offset;
  const ConvertorParams p{m, cvt.cvt_scale, static_cast<std::uint8_t>(cvt.cvt_truncate)};
  return static_cast<std::int32_t>(convert(raw, p, out).value);
}

ConvCube read_image_cube(const ImageSurface& s, const ImageConvert& cvt, const Memory& mem) {
  const PixelFormatInfo& info = pixel_format_info(s.format);
  if (info.in_precision == ConvPrecision::kFp16 || cvt.in_precision == ConvPrecision::kFp16 ||
      cvt.proc_precision == ConvPrecision::kFp16) {
    throw std::runtime_error("image input: FP16 pixels or processing are not supported yet");
  }
  if (!cvt.cvt_enable && cvt.in_precision != cvt.proc_precision) {
    throw std::runtime_error(
        "image input: IN_PRECISION differs from PROC_PRECISION but the CDMA convertor "
        "(CVT_EN) is off");
  }
  const std::uint32_t width = cvt.pad_left + s.width + cvt.pad_right;
  ConvCube cube(width, s.height, info.channels);
  const std::int32_t pad = cvt.proc_precision == ConvPrecision::kInt8
                               ? std::int32_t{static_cast<std::int8_t>(cvt.pad_value & 0xffu)}
                               : std::int32_t{static_cast<std::int16_t>(cvt.pad_value)};
  for (std::uint32_t y = 0; y < s.height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      const bool padding = x < cvt.pad_left || x >= cvt.pad_left + s.width;
      if (padding) {
        for (unsigned c = 0; c < info.channels; ++c) cube.at(x, y, c) = pad;
        continue;
      }
      const std::array<std::int32_t, 4> raw =
          read_pixel(s, x - cvt.pad_left, y, cvt.sign_override, mem);
      for (unsigned c = 0; c < info.channels; ++c) {
        cube.at(x, y, c) = convert_pixel_component(raw[c], c, cvt);
      }
    }
  }
  return cube;
}

std::uint64_t image_fetch_bytes(const ImageSurface& s) {
  const PixelFormatInfo& info = pixel_format_info(s.format);
  const std::uint64_t atom = atom_bytes(s);
  const auto round_up = [atom](std::uint64_t b) { return (b + atom - 1) / atom * atom; };
  std::uint64_t line = round_up((std::uint64_t{s.x_offset} + s.width) * info.bytes_per_pixel);
  if (info.planes == 2) {
    line += round_up((std::uint64_t{s.x_offset} * info.uv_bytes_per_pixel) % atom +
                     std::uint64_t{s.width} * info.uv_bytes_per_pixel);
  }
  return line * s.height;
}

void write_image(const ImageSurface& s, const ConvCube& pixels, Memory& mem) {
  const FormatEntry& e = entry(s.format);
  const PixelFormatInfo& info = e.info;
  if (pixels.width != s.width || pixels.height != s.height || pixels.channels != info.channels) {
    throw std::runtime_error("write_image: the pixel cube does not match the region");
  }
  const std::uint32_t first_uv = uv_first_pixel(s);
  for (std::uint32_t y = 0; y < s.height; ++y) {
    std::vector<std::uint8_t> line0((std::size_t{s.x_offset} + s.width) * info.bytes_per_pixel, 0);
    std::vector<std::uint8_t> line1(
        (std::size_t{s.x_offset} + s.width - first_uv) * info.uv_bytes_per_pixel, 0);
    for (std::uint32_t x = 0; x < s.width; ++x) {
      const std::size_t px = std::size_t{s.x_offset} + x;
      const std::size_t at0 = px * info.bytes_per_pixel;
      const auto v = [&](unsigned c) { return static_cast<std::uint32_t>(pixels.at(x, y, c)); };
      switch (e.packing) {
        case Packing::kBytes:
        case Packing::kWords: {
          const unsigned w = e.packing == Packing::kBytes ? 1 : 2;
          for (unsigned c = 0; c < info.channels; ++c) put(line0, at0 + e.where[c] * w, v(c), w);
          break;
        }
        case Packing::k10_10_10_2: {
          std::uint32_t word = 0;
          for (unsigned c = 0; c < 4; ++c) {
            const bool alpha = c == 3;
            word |= ((v(c) & 0xffffu) >> (alpha ? 14 : 6)) << e.where[c];
          }
          put(line0, at0, word, 4);
          break;
        }
        case Packing::kPlanarBytes:
        case Packing::kPlanarWords: {
          const unsigned w = e.packing == Packing::kPlanarBytes ? 1 : 2;
          const std::size_t at1 = (px - first_uv) * info.uv_bytes_per_pixel;
          put(line0, at0, v(0), w);
          for (unsigned c = 1; c < 3; ++c) put(line1, at1 + (e.where[c] - 1) * w, v(c), w);
          break;
        }
      }
    }
    mem.write(s.base0 + std::uint64_t{y} * s.line_stride, line0.data(), line0.size());
    if (info.planes == 2) {
      mem.write(s.base1 + std::uint64_t{y} * s.uv_line_stride, line1.data(), line1.size());
    }
  }
}

ConvWeights unfold_image_weights(const ConvWeights& extended, std::uint32_t pixel_channels) {
  if (extended.kernel_width != 1 || pixel_channels == 0 ||
      extended.channels % pixel_channels != 0) {
    throw std::runtime_error(
        "image weights: the pre-extended kernel must be 1 wide with a whole "
        "number of pixels of channels");
  }
  const std::uint32_t s_width = extended.channels / pixel_channels;
  ConvWeights w(extended.kernels, extended.kernel_height, s_width, pixel_channels);
  for (std::uint32_t k = 0; k < w.kernels; ++k) {
    for (std::uint32_t r = 0; r < w.kernel_height; ++r) {
      for (std::uint32_t s = 0; s < s_width; ++s) {
        for (std::uint32_t c = 0; c < pixel_channels; ++c) {
          w.at(k, r, s, c) = extended.at(k, r, 0, s * pixel_channels + c);
        }
      }
    }
  }
  return w;
}

ConvWeights fold_image_weights(const ConvWeights& w) {
  ConvWeights ext(w.kernels, w.kernel_height, 1, w.kernel_width * w.channels);
  for (std::uint32_t k = 0; k < w.kernels; ++k) {
    for (std::uint32_t r = 0; r < w.kernel_height; ++r) {
      for (std::uint32_t s = 0; s < w.kernel_width; ++s) {
        for (std::uint32_t c = 0; c < w.channels; ++c) {
          ext.at(k, r, 0, s * w.channels + c) = w.at(k, r, s, c);
        }
      }
    }
  }
  return ext;
}

}  // namespace octasim::models::ops
