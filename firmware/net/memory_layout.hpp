// Where a compiled network's data lives in device memory and how constants are shaped for it:
// the regions (constants bump-allocated from 0x8000_0000, feature surfaces from 0xC000_0000),
// the activation pool that reuses dead tensors' buffers, and NumPy broadcasting of a constant to
// a tensor's shape (an element-wise operand).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/graph/graph.hpp"

namespace octasim::firmware::net {

inline constexpr std::uint64_t kMemoryBase = 0x80000000;      // constants (weights, tables)
inline constexpr std::uint64_t kActivationBase = 0xC0000000;  // feature surfaces
inline constexpr std::uint64_t kMemoryLimit = std::uint64_t{1} << 32;
inline constexpr std::uint64_t kAlign = 256;

[[nodiscard]] inline std::uint64_t aligned(std::uint64_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// The activation region: first fit over the buffers of dead tensors, else at the end. Throws
// models::graph::GraphError when the region is exhausted.
class ActivationPool {
 public:
  std::uint64_t allocate(std::uint64_t bytes);
  // Returns a buffer, merged with free neighbours.
  void release(std::uint64_t addr, std::uint64_t bytes);
  [[nodiscard]] std::uint64_t end() const { return end_; }

 private:
  std::uint64_t end_ = kActivationBase;
  std::map<std::uint64_t, std::uint64_t> free_;  // address -> bytes
};

// `t` broadcast to `shape` (NumPy's rules, dimensions aligned on the right), in C order. Throws
// GraphError naming `who` when it does not broadcast.
[[nodiscard]] std::vector<float> broadcast(const models::graph::Tensor& t,
                                           const std::vector<std::int64_t>& shape,
                                           const std::string& who);

}  // namespace octasim::firmware::net
