// Writes held aside until committed: a unit computes its output functionally when it starts,
// into an overlay, and the output becomes visible in DRAM when the unit finishes — so other
// units and the trace player see memory change when the hardware would have changed it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "models/ops/memory.hpp"
#include "sim/core/memory_image.hpp"

namespace octasim {

class OverlayMemory final : public models::ops::Memory {
 public:
  explicit OverlayMemory(MemoryImage& base) : base_(base) {}

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
  MemoryImage& base_;
  std::map<std::uint64_t, Chunk> chunks_;  // by chunk index
};

}  // namespace octasim
