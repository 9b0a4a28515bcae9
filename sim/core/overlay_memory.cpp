#include "sim/core/overlay_memory.hpp"

#include <algorithm>

namespace octasim {

void OverlayMemory::read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const {
  base_.read(addr, dst, size);
  if (chunks_.empty()) return;
  for (auto it = chunks_.lower_bound(addr / kChunk); it != chunks_.end(); ++it) {
    const std::uint64_t chunk_base = it->first * kChunk;
    if (chunk_base >= addr + size) break;
    for (std::uint64_t i = 0; i < kChunk; ++i) {
      const std::uint64_t a = chunk_base + i;
      if (a >= addr && a < addr + size && it->second.valid[i]) dst[a - addr] = it->second.bytes[i];
    }
  }
}

void OverlayMemory::write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) {
  base_.check_range(addr, size);
  while (size > 0) {
    const std::uint64_t offset = addr % kChunk;
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(size, kChunk - offset));
    Chunk& c = chunks_[addr / kChunk];
    std::copy(src, src + n, c.bytes.begin() + static_cast<long>(offset));
    std::fill(c.valid.begin() + static_cast<long>(offset),
              c.valid.begin() + static_cast<long>(offset + n), true);
    addr += n;
    src += n;
    size -= n;
  }
}

void OverlayMemory::commit() {
  for (const auto& [index, chunk] : chunks_) {
    std::uint64_t i = 0;
    while (i < kChunk) {  // write each run of held bytes at once
      if (!chunk.valid[i]) {
        ++i;
        continue;
      }
      std::uint64_t end = i;
      while (end < kChunk && chunk.valid[end]) ++end;
      base_.write(index * kChunk + i, &chunk.bytes[i], static_cast<std::size_t>(end - i));
      i = end;
    }
  }
  chunks_.clear();
}

}  // namespace octasim
