#include "sim/core/device_memory.hpp"

#include <stdexcept>
#include <utility>

#include <fmt/core.h>

namespace octasim {

std::uint64_t dma_address(MemorySpace space, std::uint64_t addr) {
  if ((addr & kCvSramTag) != 0) {
    throw std::invalid_argument(
        fmt::format("{} address 0x{:x} is at or above 2^63, which octasim does not address",
                    memory_space_name(space), addr));
  }
  return space == MemorySpace::kCvSram ? addr | kCvSramTag : addr;
}

const char* memory_space_name(MemorySpace space) {
  return space == MemorySpace::kCvSram ? "CV-SRAM (sec_mem)" : "DRAM (pri_mem)";
}

std::unique_ptr<MemoryImage> make_cvsram_image(const HwConfig& hw) {
  if (!hw.dla.secondary_memif) return nullptr;
  return std::make_unique<MemoryImage>(hw.mem.cvsram_base, hw.mem.cvsram_bytes,
                                       "the CV-SRAM (sec_mem)");
}

DeviceMemory::DeviceMemory(MemoryImage& dram, MemoryImage* cvsram, std::string config_name)
    : dram_(dram), cvsram_(cvsram), config_name_(std::move(config_name)) {}

MemoryImage& DeviceMemory::image(MemorySpace space) const {
  if (space == MemorySpace::kDram) return dram_;
  if (cvsram_ == nullptr) {
    throw std::out_of_range(
        fmt::format("the CV-SRAM (sec_mem) is not present in this configuration{}: "
                    "it has no secondary memory interface (secondary_memif false)",
                    config_name_.empty() ? "" : " (" + config_name_ + ")"));
  }
  return *cvsram_;
}

MemoryImage& DeviceMemory::route(std::uint64_t dma_addr, std::uint64_t& addr) const {
  const SpaceAddress a = split_dma_address(dma_addr);
  addr = a.addr;
  return a.space == MemorySpace::kCvSram && cvsram_ != nullptr ? *cvsram_ : dram_;
}

void DeviceMemory::read(std::uint64_t dma_addr, std::uint8_t* dst, std::size_t size) const {
  std::uint64_t addr = 0;
  route(dma_addr, addr).read(addr, dst, size);
}

void DeviceMemory::write(std::uint64_t dma_addr, const std::uint8_t* src, std::size_t size) {
  std::uint64_t addr = 0;
  route(dma_addr, addr).write(addr, src, size);
}

void DeviceMemory::check_range(std::uint64_t dma_addr, std::uint64_t size) const {
  std::uint64_t addr = 0;
  route(dma_addr, addr).check_range(addr, size);
}

}  // namespace octasim
