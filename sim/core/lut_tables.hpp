// The LUT memories of SDP and CDP as software wrote them through S_LUT_ACCESS_CFG /
// S_LUT_ACCESS_DATA. The register file owns the access port (and its auto-increment); entries
// are the raw 16-bit values, INT16 or FP16 by the unit's precision.
#pragma once

#include <array>
#include <cstdint>

namespace octasim {

struct LutTables {
  std::array<std::uint16_t, 65> le{};   // LE (density/exponent) table
  std::array<std::uint16_t, 257> lo{};  // LO (linear) table
};

}  // namespace octasim
