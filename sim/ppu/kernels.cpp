// Kernel decoding: the descriptor's kind picks the kernel (gemm_kernel.cpp,
// streaming_kernels.cpp, softmax_kernel.cpp, node_kernel.cpp); a kernel's Failure becomes the
// DecodeResult's error.
#include "sim/ppu/kernels.hpp"

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "sim/ppu/kernel_decode.hpp"

namespace octasim::ppu {

using models::ops::gemm_type_info;
using models::ops::GemmType;
using ppu_format::ErrorCode;

namespace detail {

void bad_kernel(const std::string& why) {
  throw Failure(ErrorCode::kBadKernel, why);
}

std::vector<std::uint8_t> read_image(const MemoryImage& image, std::uint64_t addr,
                                     std::uint64_t bytes, const char* what) {
  if (!image.contains(addr, bytes)) {
    throw Failure(ErrorCode::kBadAddress,
                  fmt::format("{} [{:#x}, +{}) outside the address space", what, addr, bytes));
  }
  std::vector<std::uint8_t> v(bytes);
  image.read(addr, v.data(), bytes);
  return v;
}

void check_writable(const MemoryImage& image, std::uint64_t addr, std::uint64_t bytes,
                    const char* what) {
  if (!image.contains(addr, bytes)) {
    throw Failure(ErrorCode::kBadAddress,
                  fmt::format("{} [{:#x}, +{}) outside the address space", what, addr, bytes));
  }
}

}  // namespace detail

double tensor_peak_macs_per_cycle(const HwConfig& hw, GemmType type) {
  const auto& info = gemm_type_info(type);
  const double sm_count = static_cast<double>(detail::sms(hw));
  if (type == GemmType::kFp32) return sm_count * std::max(1u, hw.ppu.fma_lanes_per_sm);
  const unsigned step = std::max(1u, info.input_bits == 16  ? hw.ppu.tc_fp16_step_cycles
                                     : info.input_bits == 8 ? hw.ppu.tc_int8_step_cycles
                                                            : hw.ppu.tc_int4_step_cycles);
  return sm_count * hw.ppu.tensor_cores_per_sm *
         static_cast<double>(info.mma_m * info.mma_n * info.mma_k) / step;
}

DecodeResult decode_kernel(const std::uint32_t* words, const HwConfig& hw,
                           const MemoryImage& image) {
  DecodeResult r;
  try {
    using K = ppu_format::KernelKind;
    switch (static_cast<K>(words[0])) {
      case K::kGemm:
        r.kernel = detail::make_gemm_kernel(words, hw, image, false);
        break;
      case K::kConv:
        r.kernel = detail::make_gemm_kernel(words, hw, image, true);
        break;
      case K::kElementwise:
        r.kernel = detail::make_elementwise_kernel(words, hw, image);
        break;
      case K::kReduce:
        r.kernel = detail::make_reduce_kernel(words, hw, image);
        break;
      case K::kSoftmax:
        r.kernel = detail::make_softmax_kernel(words, hw, image);
        break;
      case K::kNode:
        r.kernel = detail::make_node_kernel(words, hw, image);
        break;
      default:
        r.error = ErrorCode::kBadKernel;
        r.why = fmt::format(
            "kernel kind {} (1 gemm, 2 conv, 3 elementwise, 4 reduce, 5 softmax, 6 node)",
            words[0]);
        return r;
    }
  } catch (const detail::Failure& f) {
    r.kernel.reset();
    r.error = f.code_;
    r.why = f.why_;
  } catch (const std::exception& e) {  // a model refusing the operands (should not happen)
    r.kernel.reset();
    r.error = ErrorCode::kBadKernel;
    r.why = e.what();
  }
  return r;
}

}  // namespace octasim::ppu
