// The contents of one of the device's memories: a sparse, paged byte image over its address
// range — DRAM's whole configured address space, or the CV-SRAM's [base, base + size). It is the
// backing store of the simulated memory system and the backdoor the trace player uses (mem_load,
// mem_init, check_crc). Unwritten memory reads as zero.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "models/ops/memory.hpp"

namespace octasim {

class MemoryImage final : public models::ops::Memory {
 public:
  static constexpr std::size_t kPageBits = 16;
  static constexpr std::size_t kPageSize = std::size_t{1} << kPageBits;

  // address_bits: the width of the address space (NVDLA's MEM_ADDRESS_WIDTH, e.g. 32).
  explicit MemoryImage(unsigned address_bits = 32);
  // A memory of `bytes` bytes at [base, base + bytes), named `name` in range errors (the
  // CV-SRAM).
  MemoryImage(std::uint64_t base, std::uint64_t bytes, std::string name);

  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override;
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override;
  void fill(std::uint64_t addr, std::size_t size, std::uint8_t value);

  // True when [addr, addr + size) lies inside the memory's address range.
  [[nodiscard]] bool contains(std::uint64_t addr, std::uint64_t size) const;
  // Throws std::out_of_range naming the range and the address space when it does not.
  void check_range(std::uint64_t addr, std::uint64_t size) const;
  [[nodiscard]] std::uint64_t address_space_size() const { return limit_; }
  [[nodiscard]] std::uint64_t base() const { return base_; }
  [[nodiscard]] std::size_t mapped_bytes() const { return pages_.size() * kPageSize; }

 private:
  using Page = std::array<std::uint8_t, kPageSize>;
  [[nodiscard]] const Page* find_page(std::uint64_t page_index) const;
  Page& page_for_write(std::uint64_t page_index);

  std::uint64_t base_ = 0;
  std::uint64_t limit_;  // one past the last address
  std::string name_ = "the address space";
  std::unordered_map<std::uint64_t, std::unique_ptr<Page>> pages_;
};

}  // namespace octasim
