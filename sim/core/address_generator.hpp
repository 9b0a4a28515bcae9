// Where a DMA's bytes live: a unit's surfaces as NVDLA lays them out in memory, and the walk
// that turns "the next n bytes this DMA moves" into requests on real addresses (line and
// surface strides included), so the memory system's address map — L2 slices, partition
// interleave, DRAM banks and rows — sees the lines a unit really touches.
//
// A region is `surfaces` surfaces of `lines` lines of `line_bytes` bytes each; line l of
// surface s starts at base + s * surface_stride + l * line_stride (NVDLA's feature format:
// format.rst). A packed array is one line. The walk visits regions in order, surface by
// surface, line by line, and yields pieces that never cross a line; pieces that continue at
// the next address are merged, so a packed surface is requested exactly as a linear range.
//
// Addresses are DMA addresses (device_memory.hpp): a region's base carries its memory (DRAM, or
// the CV-SRAM its *_RAM_TYPE selected), and so does every piece of its walk.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/core/device_memory.hpp"

namespace octasim {

struct SurfaceRegion {
  std::uint64_t base = 0;
  std::uint64_t line_bytes = 0;
  std::uint32_t lines = 1;
  std::uint32_t surfaces = 1;
  std::uint64_t line_stride = 0;
  std::uint64_t surface_stride = 0;

  // A packed range of `bytes` at `base`.
  [[nodiscard]] static SurfaceRegion linear(std::uint64_t base, std::uint64_t bytes) {
    return SurfaceRegion{base, bytes, 1, 1, bytes, bytes};
  }
  // The memory the region lives in.
  [[nodiscard]] MemorySpace space() const { return split_dma_address(base).space; }
  [[nodiscard]] std::uint64_t bytes() const {
    return line_bytes * std::uint64_t{lines} * std::uint64_t{surfaces};
  }
};

// One DMA request on a real address.
struct DmaPiece {
  std::uint64_t addr = 0;
  std::uint32_t bytes = 0;
};

class AddressGenerator {
 public:
  AddressGenerator() = default;
  // `fallback` is where bytes go when there are no regions at all.
  explicit AddressGenerator(std::vector<SurfaceRegion> regions, std::uint64_t fallback = 0)
      : regions_(std::move(regions)), beyond_(fallback) {
    regions_.erase(std::remove_if(regions_.begin(), regions_.end(),
                                  [](const SurfaceRegion& r) { return r.bytes() == 0; }),
                   regions_.end());
    for (const SurfaceRegion& r : regions_) total_ += r.bytes();
  }

  // Bytes the regions hold.
  [[nodiscard]] std::uint64_t total() const { return total_; }
  // Bytes walked so far.
  [[nodiscard]] std::uint64_t position() const { return position_; }

  // Appends the pieces of the next `bytes` bytes of the walk to `out` (cleared first). Bytes
  // past the last region continue linearly after it: a timing model that moves more than the
  // surfaces describe (rounding of a plan) still gets addresses, never an error.
  void next(std::uint64_t bytes, std::vector<DmaPiece>& out) {
    out.clear();
    while (bytes > 0) {
      std::uint64_t addr = 0, run = 0;
      if (region_ < regions_.size()) {
        const SurfaceRegion& r = regions_[region_];
        addr = r.base + surface_ * r.surface_stride + line_ * r.line_stride + offset_;
        run = std::min<std::uint64_t>(bytes, r.line_bytes - offset_);
        advance(run);
      } else {
        addr = beyond_;
        run = bytes;
        beyond_ += run;
      }
      emit(out, addr, run);
      bytes -= run;
      position_ += run;
    }
  }

 private:
  static void emit(std::vector<DmaPiece>& out, std::uint64_t addr, std::uint64_t bytes) {
    while (bytes > 0) {
      const auto room = static_cast<std::uint64_t>(UINT32_MAX);
      if (!out.empty() && out.back().addr + out.back().bytes == addr && out.back().bytes < room) {
        const std::uint64_t add = std::min(bytes, room - out.back().bytes);
        out.back().bytes += static_cast<std::uint32_t>(add);
        addr += add;
        bytes -= add;
        continue;
      }
      const std::uint64_t take = std::min(bytes, room);
      out.push_back({addr, static_cast<std::uint32_t>(take)});
      addr += take;
      bytes -= take;
    }
  }

  void advance(std::uint64_t run) {
    const SurfaceRegion& r = regions_[region_];
    offset_ += run;
    if (offset_ < r.line_bytes) return;
    beyond_ = r.base + surface_ * r.surface_stride + line_ * r.line_stride + r.line_bytes;
    offset_ = 0;
    if (++line_ < r.lines) return;
    line_ = 0;
    if (++surface_ < r.surfaces) return;
    surface_ = 0;
    ++region_;
  }

  std::vector<SurfaceRegion> regions_;
  std::uint64_t total_ = 0;
  std::uint64_t position_ = 0;
  std::size_t region_ = 0;
  std::uint64_t surface_ = 0, line_ = 0, offset_ = 0;
  std::uint64_t beyond_ = 0;  // the address after the last byte walked in a region
};

}  // namespace octasim
