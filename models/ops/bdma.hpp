// NVDLA's bridge DMA (BDMA) copy as a golden reference: `surfaces` surfaces of `lines` lines of
// `line_bytes` bytes each, from a source to a destination region, each with its own line and
// surface strides (v1_ias_unit_description.rst, "Bridge DMA"; v1_ias_programming_guide.rst,
// "BDMA programming"). Line l of surface s is read at src + s * src_surface_stride +
// l * src_line_stride and written at dst + s * dst_surface_stride + l * dst_line_stride. Lines
// are copied one after the other, surface by surface (the order the hardware streams them), so a
// copy whose regions overlap reads each line after the lines before it were written.
#pragma once

#include <cstdint>

#include "models/ops/memory.hpp"

namespace octasim::models::ops {

struct BdmaCopy {
  std::uint64_t src = 0, dst = 0;
  std::uint64_t line_bytes = 0;
  std::uint32_t lines = 1, surfaces = 1;
  std::uint64_t src_line_stride = 0, dst_line_stride = 0;
  std::uint64_t src_surface_stride = 0, dst_surface_stride = 0;

  [[nodiscard]] std::uint64_t bytes() const {
    return line_bytes * std::uint64_t{lines} * std::uint64_t{surfaces};
  }
};

// Copies `copy` from `src_mem` to `dst_mem` (the same object for a copy within one memory).
void run_bdma_copy(const BdmaCopy& copy, const Memory& src_mem, Memory& dst_mem);

}  // namespace octasim::models::ops
