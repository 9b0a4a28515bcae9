// A feature data surface in NVDLA's memory layout (format.rst, "Feature data format"): the
// W x H x C cube is cut into surfaces of C' channels, C' = memory atom / element size (nv_small:
// 8-byte atoms, 8 INT8 or 4 INT16 channels); within a surface each (w, h) position is one
// 1x1xC' atom, atoms of a line are packed, lines are `line_stride` bytes apart and surfaces
// `surface_stride` bytes apart. The last surface's channels beyond C are padding lanes.
#pragma once

#include <cstdint>
#include <string>

namespace octasim::firmware {

// A layer's data precision, in NVDLA's encoding (INT8 = 0, INT16 = 1, FP16 = 2). FP16 elements
// are their 16-bit patterns. Each unit's programming says which precisions it encodes.
enum class Precision : std::uint8_t { kInt8 = 0, kInt16 = 1, kFp16 = 2 };

[[nodiscard]] constexpr unsigned element_bytes(Precision p) {
  return p == Precision::kInt8 ? 1 : 2;
}
[[nodiscard]] const char* precision_name(Precision p);
// Throws FirmwareError "<unit>: FP16 is not encoded" for FP16: the guard of a unit whose
// programming encodes the integer pipelines only.
void require_integer(Precision p, const char* unit);

// The memory a surface lives in, as NVDLA's *_RAM_TYPE fields encode it: the CV-SRAM behind the
// secondary memory interface (CV = 0) or DRAM through the primary one (MC = 1).
enum class Ram : std::uint8_t { kCv = 0, kMc = 1 };

struct FeatureSurface {
  std::uint64_t address = 0;
  std::uint32_t width = 1, height = 1, channels = 1;
  std::uint32_t line_stride = 0;     // bytes from one line to the next
  std::uint32_t surface_stride = 0;  // bytes from one C' surface to the next
  Ram ram = Ram::kMc;                // the memory it lives in (*_RAM_TYPE)
};

// The *_RAM_TYPE field value of the surface's memory.
[[nodiscard]] constexpr std::uint32_t ram_type(const FeatureSurface& s) {
  return static_cast<std::uint32_t>(s.ram);
}

// A surface whose lines and surfaces are packed back to back (line_stride = width * atom,
// surface_stride = height * line_stride).
[[nodiscard]] FeatureSurface packed_surface(std::uint64_t address, std::uint32_t width,
                                            std::uint32_t height, std::uint32_t channels,
                                            unsigned atom_bytes);
// Channels per atom (C') and the number of C' surfaces the cube spans.
[[nodiscard]] unsigned channels_per_atom(Precision p, unsigned atom_bytes);
[[nodiscard]] std::uint32_t surface_count(const FeatureSurface& s, Precision p,
                                          unsigned atom_bytes);
// Bytes from the surface's address to the end of its last atom (what a CRC check covers).
[[nodiscard]] std::uint64_t surface_bytes(const FeatureSurface& s, Precision p,
                                          unsigned atom_bytes);
// Byte offset of element (w, h, c) from the surface's address.
[[nodiscard]] std::uint64_t element_offset(const FeatureSurface& s, Precision p,
                                           unsigned atom_bytes, std::uint32_t w, std::uint32_t h,
                                           std::uint32_t c);

// The halves of a 64-bit DMA address for NVDLA's *_ADDR_LOW / *_ADDR_HIGH register pairs.
[[nodiscard]] inline std::uint32_t low32(std::uint64_t a) {
  return static_cast<std::uint32_t>(a);
}
[[nodiscard]] inline std::uint32_t high32(std::uint64_t a) {
  return static_cast<std::uint32_t>(a >> 32);
}

// Throws FirmwareError naming `what` (e.g. "SDP input") when the surface cannot be programmed:
// an empty or too large cube (NVDLA's cube registers hold 13 bits: 1..8192), strides smaller
// than a packed layout (lines or surfaces that overlap), or an address not aligned to the atom.
void check_surface(const FeatureSurface& s, Precision p, unsigned atom_bytes,
                   const std::string& what);

}  // namespace octasim::firmware
