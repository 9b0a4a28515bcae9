// Rules the convolution firmware's files share (internal to firmware/dla).
#pragma once

#include <cstdint>

#include "firmware/dla/surface.hpp"
#include "models/ops/conv.hpp"

namespace octasim::firmware::conv_detail {

constexpr std::uint32_t kWeightAlign = 128;     // CDMA fetches weights in 128-byte units
constexpr std::uint32_t kWeightAddrAlign = 32;  // NVDLA's firmware: CHECK_ALIGN(weight, 32)

// The models' precision of a firmware precision.
[[nodiscard]] inline models::ops::ConvPrecision model_precision(Precision p) {
  switch (p) {
    case Precision::kInt8:
      return models::ops::ConvPrecision::kInt8;
    case Precision::kInt16:
      return models::ops::ConvPrecision::kInt16;
    case Precision::kFp16:
      break;
  }
  return models::ops::ConvPrecision::kFp16;
}

[[nodiscard]] inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}

}  // namespace octasim::firmware::conv_detail
