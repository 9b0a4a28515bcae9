#include "sim/dla/functional.hpp"

#include <stdexcept>

#include "sim/core/device_memory.hpp"

namespace octasim::dla {

std::uint64_t read_address(const RegRead& regs, std::uint32_t high_addr, std::uint32_t low_addr) {
  return (std::uint64_t{regs(high_addr)} << 32) | regs(low_addr);
}

std::uint64_t read_address(const HwConfig& hw, const RegRead& regs, std::uint32_t high_addr,
                           std::uint32_t low_addr, std::uint32_t ram_type) {
  const std::uint64_t addr = read_address(regs, high_addr, low_addr);
  const bool cv = hw.dla.secondary_memif && ram_type_space(ram_type) == MemorySpace::kCvSram;
  return cv ? addr | kCvSramTag : addr;
}

void throw_not_present(const HwConfig& hw, const std::string& feature) {
  throw std::runtime_error(feature + " is not present in this configuration (" + hw.name + ")");
}

}  // namespace octasim::dla
