#include "sim/core/memory_image.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <fmt/core.h>

namespace octasim {

MemoryImage::MemoryImage(unsigned address_bits)
    : limit_(address_bits >= 64 ? ~std::uint64_t{0} : std::uint64_t{1} << address_bits) {}

MemoryImage::MemoryImage(std::uint64_t base, std::uint64_t bytes, std::string name)
    : base_(base), limit_(base + bytes), name_(std::move(name)) {
  if (limit_ < base_) throw std::invalid_argument(name_ + " ends past 2^64");
}

bool MemoryImage::contains(std::uint64_t addr, std::uint64_t size) const {
  return addr >= base_ && addr <= limit_ && size <= limit_ - addr;
}

void MemoryImage::check_range(std::uint64_t addr, std::uint64_t size) const {
  if (!contains(addr, size)) {
    throw std::out_of_range(
        fmt::format("memory range [0x{:x}, 0x{:x}) is outside {} [0x{:x}, 0x{:x})", addr,
                    addr + size, name_, base_, limit_));
  }
}

const MemoryImage::Page* MemoryImage::find_page(std::uint64_t page_index) const {
  const auto it = pages_.find(page_index);
  return it == pages_.end() ? nullptr : it->second.get();
}

MemoryImage::Page& MemoryImage::page_for_write(std::uint64_t page_index) {
  auto& slot = pages_[page_index];
  if (!slot) slot = std::make_unique<Page>(Page{});
  return *slot;
}

void MemoryImage::read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const {
  check_range(addr, size);
  while (size > 0) {
    const std::size_t offset = addr & (kPageSize - 1);
    const std::size_t n = std::min(size, kPageSize - offset);
    if (const Page* p = find_page(addr >> kPageBits)) {
      std::memcpy(dst, p->data() + offset, n);
    } else {
      std::memset(dst, 0, n);
    }
    addr += n;
    dst += n;
    size -= n;
  }
}

void MemoryImage::write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) {
  check_range(addr, size);
  while (size > 0) {
    const std::size_t offset = addr & (kPageSize - 1);
    const std::size_t n = std::min(size, kPageSize - offset);
    std::memcpy(page_for_write(addr >> kPageBits).data() + offset, src, n);
    addr += n;
    src += n;
    size -= n;
  }
}

void MemoryImage::fill(std::uint64_t addr, std::size_t size, std::uint8_t value) {
  check_range(addr, size);
  while (size > 0) {
    const std::size_t offset = addr & (kPageSize - 1);
    const std::size_t n = std::min(size, kPageSize - offset);
    std::memset(page_for_write(addr >> kPageBits).data() + offset, value, n);
    addr += n;
    size -= n;
  }
}

}  // namespace octasim
