#include "firmware/dla/surface.hpp"

#include <fmt/core.h>

#include "firmware/driver/mmio.hpp"

namespace octasim::firmware {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kInt8:
      return "INT8";
    case Precision::kInt16:
      return "INT16";
    case Precision::kFp16:
      return "FP16";
  }
  return "?";
}

void require_integer(Precision p, const char* unit) {
  if (p == Precision::kFp16) throw FirmwareError(std::string(unit) + ": FP16 is not encoded");
}

FeatureSurface packed_surface(std::uint64_t address, std::uint32_t width, std::uint32_t height,
                              std::uint32_t channels, unsigned atom_bytes) {
  FeatureSurface s;
  s.address = address;
  s.width = width;
  s.height = height;
  s.channels = channels;
  s.line_stride = width * atom_bytes;
  s.surface_stride = s.line_stride * height;
  return s;
}

unsigned channels_per_atom(Precision p, unsigned atom_bytes) {
  return atom_bytes / element_bytes(p);
}

std::uint32_t surface_count(const FeatureSurface& s, Precision p, unsigned atom_bytes) {
  const unsigned cpa = channels_per_atom(p, atom_bytes);
  return (s.channels + cpa - 1) / cpa;
}

std::uint64_t surface_bytes(const FeatureSurface& s, Precision p, unsigned atom_bytes) {
  const std::uint32_t surfaces = surface_count(s, p, atom_bytes);
  return std::uint64_t{surfaces - 1} * s.surface_stride +
         std::uint64_t{s.height - 1} * s.line_stride + std::uint64_t{s.width} * atom_bytes;
}

std::uint64_t element_offset(const FeatureSurface& s, Precision p, unsigned atom_bytes,
                             std::uint32_t w, std::uint32_t h, std::uint32_t c) {
  const unsigned cpa = channels_per_atom(p, atom_bytes);
  return std::uint64_t{c / cpa} * s.surface_stride + std::uint64_t{h} * s.line_stride +
         std::uint64_t{w} * atom_bytes + std::uint64_t{c % cpa} * element_bytes(p);
}

void check_surface(const FeatureSurface& s, Precision p, unsigned atom_bytes,
                   const std::string& what) {
  constexpr std::uint32_t kMaxDim = 8192;  // 13-bit cube registers hold size - 1
  if (atom_bytes == 0 || atom_bytes % element_bytes(p) != 0) {
    throw FirmwareError(fmt::format("{}: a memory atom of {} bytes cannot hold {} elements", what,
                                    atom_bytes, precision_name(p)));
  }
  const auto dim = [&](const char* name, std::uint32_t v) {
    if (v == 0 || v > kMaxDim) {
      throw FirmwareError(fmt::format("{}: {} {} is outside 1..{}", what, name, v, kMaxDim));
    }
  };
  dim("width", s.width);
  dim("height", s.height);
  dim("channels", s.channels);
  if (s.address % atom_bytes != 0) {
    throw FirmwareError(fmt::format("{}: address 0x{:x} is not aligned to the {}-byte atom", what,
                                    s.address, atom_bytes));
  }
  const std::uint64_t line = std::uint64_t{s.width} * atom_bytes;
  if (s.height > 1 && s.line_stride < line) {
    throw FirmwareError(
        fmt::format("{}: line stride {} is below one line of {} bytes", what, s.line_stride, line));
  }
  const std::uint64_t plane = std::uint64_t{s.height - 1} * s.line_stride + line;
  if (surface_count(s, p, atom_bytes) > 1 && s.surface_stride < plane) {
    throw FirmwareError(fmt::format("{}: surface stride {} is below one surface of {} bytes", what,
                                    s.surface_stride, plane));
  }
  if (s.line_stride % atom_bytes != 0 || s.surface_stride % atom_bytes != 0) {
    throw FirmwareError(fmt::format("{}: strides {} / {} are not multiples of the {}-byte atom",
                                    what, s.line_stride, s.surface_stride, atom_bytes));
  }
}

}  // namespace octasim::firmware
