#include "firmware/driver/host_memory.hpp"

namespace octasim::firmware {

void HostMemory::read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const {
  for (std::size_t i = 0; i < size; ++i) {
    const std::uint64_t a = addr + i;
    const auto it = pages_.find(a >> kPageBits);
    dst[i] = it == pages_.end() ? 0 : (*it->second)[a & (kPageSize - 1)];
  }
}

void HostMemory::write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    const std::uint64_t a = addr + i;
    auto& page = pages_[a >> kPageBits];
    if (!page) page = std::make_unique<std::array<std::uint8_t, kPageSize>>();
    (*page)[a & (kPageSize - 1)] = src[i];
  }
}

std::vector<std::uint8_t> HostMemory::bytes(std::uint64_t addr, std::size_t size) const {
  std::vector<std::uint8_t> out(size);
  read(addr, out.data(), size);
  return out;
}

}  // namespace octasim::firmware
