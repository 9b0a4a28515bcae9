// Shared by the PPU's kernel implementations (kernels.cpp, gemm_kernel.cpp,
// streaming_kernels.cpp, softmax_kernel.cpp, node_kernel.cpp): descriptor decoding helpers, the
// error a kernel's constructor throws (decode_kernel turns it into a DecodeResult) and the kernels'
// constructors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "firmware/ppu/commands.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/ppu/kernels.hpp"

namespace octasim::ppu::detail {

inline constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 28;  // per operand (host
                                                                       // memory guard)

inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}
inline unsigned round_up(unsigned v, unsigned m) {
  return (v + m - 1) / m * m;
}

// The 64-bit address in descriptor words i (low) and i + 1 (high).
inline std::uint64_t address(const std::uint32_t* w, unsigned i) {
  return std::uint64_t{w[i]} | std::uint64_t{w[i + 1]} << 32;
}

// The bytes holding elements [first, first + count) of `bits`-bit elements at `base`.
inline Range element_range(std::uint64_t base, std::uint64_t first, std::uint64_t count,
                           unsigned bits) {
  if (bits == 4) {
    const std::uint64_t b0 = first / 2, b1 = (first + count - 1) / 2;
    return {base + b0, b1 - b0 + 1};
  }
  return {base + first * (bits / 8), count * (bits / 8)};
}

inline unsigned sms(const HwConfig& hw) {
  return hw.ppu.gpcs * hw.ppu.sms_per_gpc;
}

// Why a descriptor cannot run (thrown by the kernels' constructors).
class Failure {
 public:
  Failure(ppu_format::ErrorCode code, std::string why) : code_(code), why_(std::move(why)) {}
  ppu_format::ErrorCode code_;
  std::string why_;
};

[[noreturn]] void bad_kernel(const std::string& why);
// The operand bytes at [addr, +bytes) (Failure kBadAddress outside the image).
[[nodiscard]] std::vector<std::uint8_t> read_image(const MemoryImage& image, std::uint64_t addr,
                                                   std::uint64_t bytes, const char* what);
void check_writable(const MemoryImage& image, std::uint64_t addr, std::uint64_t bytes,
                    const char* what);

// The kernels, from their descriptor words (throw Failure).
[[nodiscard]] std::unique_ptr<Kernel> make_gemm_kernel(const std::uint32_t* w, const HwConfig& hw,
                                                       const MemoryImage& image, bool conv);
[[nodiscard]] std::unique_ptr<Kernel> make_elementwise_kernel(const std::uint32_t* w,
                                                              const HwConfig& hw,
                                                              const MemoryImage& image);
[[nodiscard]] std::unique_ptr<Kernel> make_reduce_kernel(const std::uint32_t* w, const HwConfig& hw,
                                                         const MemoryImage& image);
[[nodiscard]] std::unique_ptr<Kernel> make_softmax_kernel(const std::uint32_t* w,
                                                          const HwConfig& hw,
                                                          const MemoryImage& image);
[[nodiscard]] std::unique_ptr<Kernel> make_node_kernel(const std::uint32_t* w, const HwConfig& hw,
                                                       const MemoryImage& image);

}  // namespace octasim::ppu::detail
