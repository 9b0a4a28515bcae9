#include "models/ops/conv_compress.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

namespace octasim::models::ops {
namespace {

std::uint64_t align128(std::uint64_t n) {
  return (n + kWeightSurfaceAlign - 1) / kWeightSurfaceAlign * kWeightSurfaceAlign;
}

void check_element_bytes(unsigned element_bytes) {
  if (element_bytes != 1 && element_bytes != 2) {
    throw std::runtime_error("compressed weights: " + std::to_string(element_bytes) +
                             "-byte elements (want 1 or 2)");
  }
}

// The dense bytes as a Memory at address 0, for read_weights.
class BytesMemory final : public Memory {
 public:
  explicit BytesMemory(const std::vector<std::uint8_t>& bytes) : bytes_(bytes) {}
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    for (std::size_t i = 0; i < size; ++i) {
      const std::uint64_t a = addr + i;
      dst[i] = a < bytes_.size() ? bytes_[static_cast<std::size_t>(a)] : 0;
    }
  }
  void write(std::uint64_t /*addr*/, const std::uint8_t* /*src*/, std::size_t /*size*/) override {
    throw std::logic_error("BytesMemory is read-only");
  }

 private:
  const std::vector<std::uint8_t>& bytes_;
};

}  // namespace

std::vector<std::uint64_t> weight_group_bytes(const ConvWeightLayout& layout, std::uint32_t kernels,
                                              std::uint64_t kernel_bytes) {
  std::vector<std::uint64_t> v;
  const std::uint32_t group = layout.group_kernels();
  for (std::uint32_t k = 0; k < kernels; k += group) {
    v.push_back(std::min(group, kernels - k) * kernel_bytes);
  }
  return v;
}

CompressedWeights compress_weights(const std::vector<std::uint8_t>& dense,
                                   const std::vector<std::uint64_t>& group_bytes,
                                   unsigned element_bytes) {
  check_element_bytes(element_bytes);
  const std::uint64_t total = std::accumulate(group_bytes.begin(), group_bytes.end(), 0ull);
  if (total > dense.size()) {
    throw std::runtime_error("compressed weights: the kernel groups take " + std::to_string(total) +
                             " bytes but the dense weights have " + std::to_string(dense.size()));
  }
  CompressedWeights c;
  const std::uint64_t elements = total / element_bytes;
  c.wmb.assign(static_cast<std::size_t>(wmb_surface_bytes(elements)), 0);
  c.data.reserve(static_cast<std::size_t>(total));
  std::uint64_t e = 0;  // element index over all groups: the WMB bit position
  for (std::size_t g = 0; g < group_bytes.size(); ++g) {
    if (group_bytes[g] % element_bytes != 0) {
      throw std::runtime_error("compressed weights: kernel group " + std::to_string(g) + " has " +
                               std::to_string(group_bytes[g]) + " bytes, not whole " +
                               std::to_string(element_bytes) + "-byte elements");
    }
    std::uint32_t stored = 0;
    for (std::uint64_t i = 0; i < group_bytes[g] / element_bytes; ++i, ++e) {
      const std::uint8_t* p = &dense[static_cast<std::size_t>(e * element_bytes)];
      if (std::all_of(p, p + element_bytes, [](std::uint8_t b) { return b == 0; })) continue;
      c.wmb[static_cast<std::size_t>(e / 8)] |= static_cast<std::uint8_t>(1u << (e % 8));
      c.data.insert(c.data.end(), p, p + element_bytes);
      stored += element_bytes;
    }
    c.group_sizes.push_back(stored);
  }
  c.data.resize(static_cast<std::size_t>(align128(c.data.size())), 0);
  c.wgs.assign(static_cast<std::size_t>(align128(4 * c.group_sizes.size())), 0);
  for (std::size_t g = 0; g < c.group_sizes.size(); ++g) {
    for (unsigned b = 0; b < 4; ++b) {
      c.wgs[4 * g + b] = static_cast<std::uint8_t>(c.group_sizes[g] >> (8 * b));
    }
  }
  return c;
}

std::vector<std::uint8_t> decompress_weights(const std::vector<std::uint8_t>& wmb,
                                             const std::vector<std::uint8_t>& data,
                                             const std::vector<std::uint32_t>& group_sizes,
                                             const std::vector<std::uint64_t>& group_bytes,
                                             unsigned element_bytes) {
  check_element_bytes(element_bytes);
  if (group_sizes.size() != group_bytes.size()) {
    throw std::runtime_error("compressed weights: " + std::to_string(group_sizes.size()) +
                             " WGS entries for " + std::to_string(group_bytes.size()) +
                             " kernel groups");
  }
  const std::uint64_t total = std::accumulate(group_bytes.begin(), group_bytes.end(), 0ull);
  const std::uint64_t elements = total / element_bytes;
  if (wmb.size() * 8 < elements) {
    throw std::runtime_error("compressed weights: the WMB has " + std::to_string(wmb.size()) +
                             " bytes but " + std::to_string(elements) + " weights need " +
                             std::to_string((elements + 7) / 8));
  }
  std::vector<std::uint8_t> dense(static_cast<std::size_t>(total), 0);
  std::uint64_t e = 0, next = 0;  // WMB bit position, compressed data position
  for (std::size_t g = 0; g < group_bytes.size(); ++g) {
    const std::uint64_t group_start = next;
    for (std::uint64_t i = 0; i < group_bytes[g] / element_bytes; ++i, ++e) {
      if (((wmb[static_cast<std::size_t>(e / 8)] >> (e % 8)) & 1u) == 0) continue;
      if (next + element_bytes > data.size()) {
        throw std::runtime_error("compressed weights: the mask bits of kernel group " +
                                 std::to_string(g) + " run past the " +
                                 std::to_string(data.size()) + " bytes of compressed data");
      }
      std::memcpy(&dense[static_cast<std::size_t>(e * element_bytes)],
                  &data[static_cast<std::size_t>(next)], element_bytes);
      next += element_bytes;
    }
    if (next - group_start != group_sizes[g]) {
      throw std::runtime_error("compressed weights: WGS of kernel group " + std::to_string(g) +
                               " is " + std::to_string(group_sizes[g]) +
                               " bytes but its mask bits mark " +
                               std::to_string(next - group_start));
    }
  }
  return dense;
}

std::vector<std::uint32_t> parse_wgs(const std::uint8_t* wgs, std::size_t groups) {
  std::vector<std::uint32_t> v(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    v[g] = std::uint32_t{wgs[4 * g]} | std::uint32_t{wgs[4 * g + 1]} << 8 |
           std::uint32_t{wgs[4 * g + 2]} << 16 | std::uint32_t{wgs[4 * g + 3]} << 24;
  }
  return v;
}

std::uint64_t wmb_surface_bytes(std::uint64_t elements) {
  return align128((elements + 7) / 8);
}

std::uint64_t wgs_fetch_bytes(std::uint64_t groups, unsigned atom_bytes) {
  return (4 * groups + atom_bytes - 1) / atom_bytes * atom_bytes;
}

std::vector<std::uint64_t> compressed_group_fetch_bytes(
    const std::vector<std::uint32_t>& group_sizes, const std::vector<std::uint32_t>& group_kernels,
    std::uint64_t kernel_elements, std::uint64_t data_bytes, std::uint64_t wmb_bytes) {
  std::vector<std::uint64_t> v(group_sizes.size(), 0);
  std::uint64_t bits = 0, data = 0, mask = 0;
  for (std::size_t g = 0; g < v.size() && g < group_kernels.size(); ++g) {
    bits += group_kernels[g] * kernel_elements;
    const std::uint64_t mask_end = (bits + 7) / 8;
    v[g] = group_sizes[g] + (mask_end - mask);
    data += group_sizes[g];
    mask = mask_end;
  }
  if (!v.empty()) {
    v.back() +=
        (data_bytes > data ? data_bytes - data : 0) + (wmb_bytes > mask ? wmb_bytes - mask : 0);
  }
  return v;
}

ConvWeights read_compressed_weights(const CompressedWeightSurfaces& s, std::uint32_t kernels,
                                    std::uint32_t kernel_height, std::uint32_t kernel_width,
                                    std::uint32_t channels, const ConvWeightLayout& layout,
                                    const Memory& mem) {
  const unsigned bpe = conv_element_bytes(layout.precision);
  const std::vector<std::uint64_t> groups = weight_group_bytes(
      layout, kernels, std::uint64_t{kernel_height} * kernel_width * channels * bpe);
  std::vector<std::uint8_t> wgs_bytes(4 * groups.size());
  mem.read(s.wgs_base, wgs_bytes.data(), wgs_bytes.size());
  const std::vector<std::uint32_t> wgs = parse_wgs(wgs_bytes.data(), groups.size());
  const std::uint64_t stored = std::accumulate(wgs.begin(), wgs.end(), 0ull);
  if (stored > s.data_bytes) {
    throw std::runtime_error("compressed weights: the WGS add up to " + std::to_string(stored) +
                             " bytes but WEIGHT_BYTES is " + std::to_string(s.data_bytes));
  }
  std::vector<std::uint8_t> wmb(static_cast<std::size_t>(s.wmb_bytes));
  mem.read(s.wmb_base, wmb.data(), wmb.size());
  std::vector<std::uint8_t> data(static_cast<std::size_t>(stored));
  mem.read(s.data_base, data.data(), data.size());
  const std::vector<std::uint8_t> dense = decompress_weights(wmb, data, wgs, groups, bpe);
  return read_weights(0, kernels, kernel_height, kernel_width, channels, layout,
                      BytesMemory(dense));
}

}  // namespace octasim::models::ops
