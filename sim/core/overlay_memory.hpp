// Writes held aside until committed: a unit computes its output functionally when it starts,
// into an overlay, and the output becomes visible in DRAM when the unit finishes — so other
// units and the trace player see memory change when the hardware would have changed it.
// Addresses are DMA addresses (device_memory.hpp): DRAM and CV-SRAM writes are both held.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <memory>
#include "models/ops/memory.hpp"

#include "sim/core/device_memory.hpp"
#include "sim/core/memory_image.hpp"

namespace octasim {

class OverlayMemory final : public models::ops::Memory {
 public:
  explicit OverlayMemory(DeviceMemory& base) : base_(base) {}
  // Over DRAM alone.
  explicit OverlayMemory(MemoryImage& dram)
      : own_(std::make_unique<DeviceMemory>(dram, nullptr)), base_(*own_) {}

  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override;
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override;
  // Writes every held byte into the base image.
  void commit();

 private:
  static constexpr std::uint64_t kChunk = 256;
  struct Chunk {
    std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(kChunk);
    std::vector<bool> valid = std::vector<bool>(kChunk);
  };
  std::unique_ptr<DeviceMemory> own_;
  DeviceMemory& base_;
  std::map<std::uint64_t, Chunk> chunks_;  // by chunk index
};

}  // namespace octasim
