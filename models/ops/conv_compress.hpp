// NVDLA's sparse weight compression (format.rst "Sparse Compression option"; the C-model's CDMA
// WMB/WGS fetch and CSC weight decompression), applied to the direct-convolution weight format
// of conv.hpp. Three memory surfaces replace the dense weights:
//
// - WMB (weight mask bits): one bit per weight element (INT8: one byte, INT16/FP16: two bytes)
//   in the order of the dense weight bytes; element i is bit i % 8 of byte i / 8 (little-endian
//   bit order). 1: the element is stored in the compressed data; 0: it is zero and left out.
//   The bits of the kernel groups run on without gaps: a group's mask starts at the bit after the
//   previous group's last one, not at a byte boundary (CSC keeps its WMB bit position from one
//   kernel group to the next).
// - Compressed data: the stored elements, in the same order, packed without gaps (across groups
//   too).
// - WGS (weight group size): per kernel group, a little-endian 32-bit count of its compressed
//   bytes (stored elements x bytes per element).
//
// Each surface is zero-padded to a multiple of 128 bytes. An element is stored exactly when one
// of its bytes is non-zero, so decompression restores every bit pattern (FP16 -0.0 is stored).
// Register view: CDMA D_WEIGHT_BYTES (and CSC's) is the compressed data surface's size — what
// CDMA fetches at D_WEIGHT_ADDR and what CSC counts in CBUF entries — and D_WMB_BYTES the WMB
// surface's; CDMA reads the WGS, one 32-bit word per kernel group, in whole memory atoms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/ops/conv.hpp"
#include "models/ops/memory.hpp"

namespace octasim::models::ops {

inline constexpr std::uint32_t kWeightSurfaceAlign = 128;

struct CompressedWeights {
  std::vector<std::uint8_t> wmb;           // mask bits, padded to 128 bytes
  std::vector<std::uint8_t> wgs;           // one little-endian uint32 per group, padded
  std::vector<std::uint8_t> data;          // the stored elements, padded
  std::vector<std::uint32_t> group_sizes;  // the WGS values
};

// Dense bytes of each kernel group of `kernels` kernels of `kernel_bytes` bytes (R*S*C*bpe)
// under `layout` (atomic-K kernels a group at INT8, atomic-K/2 at INT16/FP16, the last smaller).
[[nodiscard]] std::vector<std::uint64_t> weight_group_bytes(const ConvWeightLayout& layout,
                                                            std::uint32_t kernels,
                                                            std::uint64_t kernel_bytes);

// Compresses the dense weight bytes `dense` whose kernel groups take `group_bytes` bytes each,
// back to back from the start (bytes after them, such as the 128-byte padding, are not weights).
// Throws std::runtime_error if the groups do not fit `dense` or are not whole elements.
[[nodiscard]] CompressedWeights compress_weights(const std::vector<std::uint8_t>& dense,
                                                 const std::vector<std::uint64_t>& group_bytes,
                                                 unsigned element_bytes);

// The dense bytes (sum of `group_bytes`) back from the mask bits `wmb`, the compressed data
// `data` and the WGS values `group_sizes`. Throws std::runtime_error (one line) when a group's
// WGS differs from the bytes its mask bits mark, or the mask or the data are too short.
[[nodiscard]] std::vector<std::uint8_t> decompress_weights(
    const std::vector<std::uint8_t>& wmb, const std::vector<std::uint8_t>& data,
    const std::vector<std::uint32_t>& group_sizes, const std::vector<std::uint64_t>& group_bytes,
    unsigned element_bytes);

// The WGS values of `groups` groups from the surface bytes at `wgs`.
[[nodiscard]] std::vector<std::uint32_t> parse_wgs(const std::uint8_t* wgs, std::size_t groups);

// Bytes of the WMB surface for `elements` weight elements: ceil(elements / 8), padded to 128.
[[nodiscard]] std::uint64_t wmb_surface_bytes(std::uint64_t elements);
// Bytes CDMA reads of the WGS surface for `groups` kernel groups: 4 per group, in whole memory
// atoms of `atom_bytes`.
[[nodiscard]] std::uint64_t wgs_fetch_bytes(std::uint64_t groups, unsigned atom_bytes);

// What the CDMA weight client fetches per kernel group of compressed weights: the group's WGS
// bytes of compressed data plus the WMB bytes holding its mask bits (a byte shared by two groups
// counts for the first); the last group also takes the padding of both surfaces, so the sum is
// data_bytes + wmb_bytes. Groups of `group_kernels` kernels of `kernel_elements` elements.
[[nodiscard]] std::vector<std::uint64_t> compressed_group_fetch_bytes(
    const std::vector<std::uint32_t>& group_sizes, const std::vector<std::uint32_t>& group_kernels,
    std::uint64_t kernel_elements, std::uint64_t data_bytes, std::uint64_t wmb_bytes);

// Where a layer's compressed weights are and how much CDMA is told to fetch.
struct CompressedWeightSurfaces {
  std::uint64_t data_base = 0;   // CDMA D_WEIGHT_ADDR
  std::uint64_t wmb_base = 0;    // CDMA D_WMB_ADDR
  std::uint64_t wgs_base = 0;    // CDMA D_WGS_ADDR
  std::uint64_t data_bytes = 0;  // CDMA D_WEIGHT_BYTES
  std::uint64_t wmb_bytes = 0;   // CDMA D_WMB_BYTES
};

// read_weights for compressed weights: reads the WGS, WMB and data surfaces, checks the WGS
// against the mask bits and their sum against data_bytes, and decodes the decompressed bytes.
// Throws std::runtime_error (one line) on an inconsistency.
[[nodiscard]] ConvWeights read_compressed_weights(
    const CompressedWeightSurfaces& s, std::uint32_t kernels, std::uint32_t kernel_height,
    std::uint32_t kernel_width, std::uint32_t channels, const ConvWeightLayout& layout,
    const Memory& mem);

}  // namespace octasim::models::ops
