// Which memory a DMA address lives in. NVDLA's DLA has two memory interfaces: the primary one
// (DBBIF/MCIF) to DRAM and, on configurations with SECONDARY_MEMIF, the secondary one
// (SRAMIF/CVIF) to an on-chip CV-SRAM. Each DMA surface picks one by its *_RAM_TYPE field
// (0 = CV: the CV-SRAM, 1 = MC: DRAM). The two are separate address spaces: the same address
// can hold different bytes in DRAM and in the CV-SRAM.
//
// Inside octasim a surface's memory travels with its address as a *DMA address*: the DRAM
// address itself, or the CV-SRAM address with bit 63 (kCvSramTag) set. Decoders produce DMA
// addresses (SurfaceRegion bases, the functional ops' addresses), DeviceMemory routes
// functional reads and writes by them, and the memory system's target routes timing requests
// by them (DRAM through the crossbar/L2/DRAM, the CV-SRAM through its own interface). A DRAM
// address at or above 2^63 is refused (no NVDLA configuration has DRAM there).
//
// The API for a DMA (BDMA's copies, a decoder): dma_address(space, addr) / split_dma_address()
// and DeviceMemory::read/write on DMA addresses, or DeviceMemory::image(space) for the plain
// image of one memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "models/ops/memory.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"

namespace octasim {

enum class MemorySpace : std::uint8_t {
  kDram,    // pri_mem: the primary interface (MC)
  kCvSram,  // sec_mem: the secondary interface (CV)
};

inline constexpr std::uint64_t kCvSramTag = std::uint64_t{1} << 63;

struct SpaceAddress {
  MemorySpace space = MemorySpace::kDram;
  std::uint64_t addr = 0;  // within the space
};

// NVDLA's *_RAM_TYPE encoding: 0 = CV (CV-SRAM), 1 = MC (DRAM).
[[nodiscard]] constexpr MemorySpace ram_type_space(std::uint32_t ram_type) {
  return ram_type == 0 ? MemorySpace::kCvSram : MemorySpace::kDram;
}
// The DMA address of `addr` in `space` (std::invalid_argument for an address with bit 63 set).
[[nodiscard]] std::uint64_t dma_address(MemorySpace space, std::uint64_t addr);
[[nodiscard]] constexpr SpaceAddress split_dma_address(std::uint64_t dma_addr) {
  return (dma_addr & kCvSramTag) != 0 ? SpaceAddress{MemorySpace::kCvSram, dma_addr & ~kCvSramTag}
                                      : SpaceAddress{MemorySpace::kDram, dma_addr};
}
[[nodiscard]] constexpr bool in_cvsram(std::uint64_t dma_addr) {
  return (dma_addr & kCvSramTag) != 0;
}
// "DRAM (pri_mem)" or "CV-SRAM (sec_mem)".
[[nodiscard]] const char* memory_space_name(MemorySpace space);

// The CV-SRAM of `hw` (hw.mem.cvsram_base / cvsram_bytes), empty; null when the configuration
// has no secondary memory interface.
[[nodiscard]] std::unique_ptr<MemoryImage> make_cvsram_image(const HwConfig& hw);

// The device's memories behind DMA addresses: DRAM and, when the configuration has a secondary
// memory interface, the CV-SRAM. Without one there is no CVIF: as in NVDLA's hardware built
// without SECONDARY_MEMIF, every DMA goes to DRAM whatever its RAM_TYPE says (a CV-tagged
// address reaches DRAM at the same address), so RAM_TYPE=CV changes nothing there. An access
// outside a memory's range throws std::out_of_range naming the memory and the range; image()
// of a memory the configuration lacks throws one naming the configuration (the trace's
// sec_mem on nv_small).
class DeviceMemory final : public models::ops::Memory {
 public:
  // `cvsram` null: the configuration (`config_name`) has no secondary memory.
  DeviceMemory(MemoryImage& dram, MemoryImage* cvsram, std::string config_name = "");

  void read(std::uint64_t dma_addr, std::uint8_t* dst, std::size_t size) const override;
  void write(std::uint64_t dma_addr, const std::uint8_t* src, std::size_t size) override;
  void check_range(std::uint64_t dma_addr, std::uint64_t size) const;

  [[nodiscard]] bool has(MemorySpace space) const {
    return space == MemorySpace::kDram || cvsram_ != nullptr;
  }
  // The image of `space`; std::out_of_range when the configuration has no such memory.
  [[nodiscard]] MemoryImage& image(MemorySpace space) const;

 private:
  // The image `dma_addr` reaches and the address within it.
  MemoryImage& route(std::uint64_t dma_addr, std::uint64_t& addr) const;

  MemoryImage& dram_;
  MemoryImage* cvsram_;
  std::string config_name_;
};

}  // namespace octasim
