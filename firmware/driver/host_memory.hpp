// A host-side byte image for computing golden output with models/ reference ops: sparse pages,
// unwritten bytes read as zero (as the device's memory does).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/ops/memory.hpp"

namespace octasim::firmware {

class HostMemory final : public models::ops::Memory {
 public:
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override;
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override;
  [[nodiscard]] std::vector<std::uint8_t> bytes(std::uint64_t addr, std::size_t size) const;

 private:
  static constexpr std::size_t kPageBits = 12;
  static constexpr std::size_t kPageSize = std::size_t{1} << kPageBits;
  std::unordered_map<std::uint64_t, std::unique_ptr<std::array<std::uint8_t, kPageSize>>> pages_;
};

}  // namespace octasim::firmware
