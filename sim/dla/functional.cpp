#include "sim/dla/functional.hpp"

#include <stdexcept>

namespace octasim::dla {

std::uint64_t read_address(const RegRead& regs, std::uint32_t high_addr, std::uint32_t low_addr) {
  return (std::uint64_t{regs(high_addr)} << 32) | regs(low_addr);
}

void throw_not_present(const HwConfig& hw, const std::string& feature) {
  throw std::runtime_error(feature + " is not present in this configuration (" + hw.name + ")");
}

}  // namespace octasim::dla
