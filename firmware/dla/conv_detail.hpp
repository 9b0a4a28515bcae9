// Rules the convolution firmware's files share (internal to firmware/dla).
#pragma once

#include <cstdint>

namespace octasim::firmware::conv_detail {

constexpr std::uint32_t kWeightAlign = 128;     // CDMA fetches weights in 128-byte units
constexpr std::uint32_t kWeightAddrAlign = 32;  // NVDLA's firmware: CHECK_ALIGN(weight, 32)

[[nodiscard]] inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}

}  // namespace octasim::firmware::conv_detail
