// The bits of one trivially copyable value as another type of the same size (std::bit_cast is
// C++20): the one way models/ and firmware/ reinterpret FP32/FP64 values as integers and back.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace octasim::models {

template <class To, class From>
[[nodiscard]] inline To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of the same size");
  static_assert(std::is_trivially_copyable_v<To> && std::is_trivially_copyable_v<From>,
                "bit_cast needs trivially copyable types");
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

}  // namespace octasim::models
