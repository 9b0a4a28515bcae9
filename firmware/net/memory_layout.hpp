// Where a compiled network's data lives in device memory and how constants are shaped for it:
// the regions (constants bump-allocated from 0x8000_0000, feature surfaces from 0xC000_0000),
// the activation pool that reuses dead tensors' buffers, what was then moved to the CV-SRAM
// (placement.hpp), and NumPy broadcasting of a constant to a tensor's shape (an element-wise
// operand).
//
// Addresses in a NetProgram are each memory's own (a surface's address and its Ram, as the
// *_ADDR and *_RAM_TYPE registers hold them). A memory of the device (sim/core/device_memory.hpp's
// DeviceMemory) and the host's golden image take DMA addresses instead, the CV-SRAM's with bit 63
// set (kCvSramTag): dma_address_of() and PlacedMemory translate.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "firmware/dla/surface.hpp"
#include "models/graph/graph.hpp"
#include "models/ops/memory.hpp"
#include "sim/core/device_memory.hpp"

namespace octasim::firmware::net {

inline constexpr std::uint64_t kMemoryBase = 0x80000000;      // constants (weights, tables)
inline constexpr std::uint64_t kActivationBase = 0xC0000000;  // feature surfaces
inline constexpr std::uint64_t kMemoryLimit = std::uint64_t{1} << 32;
inline constexpr std::uint64_t kAlign = 256;

[[nodiscard]] inline std::uint64_t aligned(std::uint64_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// The activation region: first fit over the buffers of dead tensors, else at the end. Throws
// models::graph::GraphError when the region is exhausted.
class ActivationPool {
 public:
  std::uint64_t allocate(std::uint64_t bytes);
  // Returns a buffer, merged with free neighbours.
  void release(std::uint64_t addr, std::uint64_t bytes);
  [[nodiscard]] std::uint64_t end() const { return end_; }

 private:
  std::uint64_t end_ = kActivationBase;
  std::map<std::uint64_t, std::uint64_t> free_;  // address -> bytes
};

// What placement (placement.hpp) put where: the CV-SRAM addresses the program uses,
// [cvsram_begin, cvsram_end) (empty: none), and the bytes of activations (the activation
// region's footprint, buffers reused) and of constants in each memory.
struct MemoryPlacement {
  std::uint64_t cvsram_begin = 0, cvsram_end = 0;
  std::uint64_t activation_cvsram_bytes = 0, activation_dram_bytes = 0;
  std::uint64_t constant_cvsram_bytes = 0, constant_dram_bytes = 0;
};

// The DMA address of `addr` in memory `ram`.
[[nodiscard]] constexpr std::uint64_t dma_address_of(std::uint64_t addr, Ram ram) {
  return ram == Ram::kCv ? addr | kCvSramTag : addr;
}
[[nodiscard]] constexpr std::uint64_t dma_address_of(const FeatureSurface& s) {
  return dma_address_of(s.address, s.ram);
}

// A memory of DMA addresses seen through a program's own addresses: an address in the program's
// CV-SRAM range [cvsram_begin, cvsram_end) is the CV-SRAM's, any other DRAM's (placement keeps
// that range apart from the DRAM regions). For models/ ops, which address surfaces as the
// program lays them out.
class PlacedMemory final : public models::ops::Memory {
 public:
  PlacedMemory(models::ops::Memory& mem, const MemoryPlacement& placement)
      : mem_(mem), begin_(placement.cvsram_begin), end_(placement.cvsram_end) {}
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    mem_.read(translate(addr), dst, size);
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override {
    mem_.write(translate(addr), src, size);
  }

 private:
  [[nodiscard]] std::uint64_t translate(std::uint64_t addr) const {
    return addr >= begin_ && addr < end_ ? addr | kCvSramTag : addr;
  }
  models::ops::Memory& mem_;
  std::uint64_t begin_, end_;
};

// `t` broadcast to `shape` (NumPy's rules, dimensions aligned on the right), in C order. Throws
// GraphError naming `who` when it does not broadcast.
[[nodiscard]] std::vector<float> broadcast(const models::graph::Tensor& t,
                                           const std::vector<std::int64_t>& shape,
                                           const std::string& who);

}  // namespace octasim::firmware::net
