#include "models/ops/bdma.hpp"

#include <vector>

namespace octasim::models::ops {

void run_bdma_copy(const BdmaCopy& copy, const Memory& src_mem, Memory& dst_mem) {
  std::vector<std::uint8_t> line(copy.line_bytes);
  for (std::uint32_t s = 0; s < copy.surfaces; ++s) {
    for (std::uint32_t l = 0; l < copy.lines; ++l) {
      const std::uint64_t from = copy.src + s * copy.src_surface_stride + l * copy.src_line_stride;
      const std::uint64_t to = copy.dst + s * copy.dst_surface_stride + l * copy.dst_line_stride;
      src_mem.read(from, line.data(), line.size());
      dst_mem.write(to, line.data(), line.size());
    }
  }
}

}  // namespace octasim::models::ops
