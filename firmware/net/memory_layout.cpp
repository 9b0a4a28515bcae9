#include "firmware/net/memory_layout.hpp"

#include <iterator>

#include <fmt/core.h>

namespace octasim::firmware::net {

using models::graph::GraphError;

std::uint64_t ActivationPool::allocate(std::uint64_t bytes) {
  bytes = aligned(bytes);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const std::uint64_t a = it->first;
    const std::uint64_t rest = it->second - bytes;
    free_.erase(it);
    if (rest != 0) free_[a + bytes] = rest;
    return a;
  }
  const std::uint64_t a = end_;
  end_ += bytes;
  if (end_ > kMemoryLimit) {
    throw GraphError(
        fmt::format("the network's activations need more than the {} MiB of DRAM "
                    "at 0x{:x}",
                    (kMemoryLimit - kActivationBase) >> 20, kActivationBase));
  }
  return a;
}

void ActivationPool::release(std::uint64_t addr, std::uint64_t bytes) {
  bytes = aligned(bytes);
  auto next = free_.lower_bound(addr);
  if (next != free_.end() && addr + bytes == next->first) {
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == addr) {
      prev->second += bytes;
      return;
    }
  }
  free_[addr] = bytes;
}

std::vector<float> broadcast(const models::graph::Tensor& t, const std::vector<std::int64_t>& shape,
                             const std::string& who) {
  if (t.shape.size() > shape.size()) {
    throw GraphError(fmt::format("{}: operand of shape {} does not broadcast to {}", who,
                                 models::graph::shape_string(t.shape),
                                 models::graph::shape_string(shape)));
  }
  const std::size_t rank = shape.size(), offset = rank - t.shape.size();
  std::vector<std::size_t> stride(rank, 0);
  std::size_t step = 1;
  for (std::size_t d = rank; d-- > offset;) {
    const std::int64_t n = t.shape[d - offset];
    if (n != 1 && n != shape[d]) {
      throw GraphError(fmt::format("{}: operand of shape {} does not broadcast to {}", who,
                                   models::graph::shape_string(t.shape),
                                   models::graph::shape_string(shape)));
    }
    stride[d] = n == 1 ? 0 : step;
    step *= static_cast<std::size_t>(n);
  }
  std::size_t total = 1;
  for (std::int64_t n : shape) total *= static_cast<std::size_t>(n);
  std::vector<float> out(total);
  for (std::size_t i = 0; i < total; ++i) {
    std::size_t rest = i, src = 0;
    for (std::size_t d = rank; d-- > 0;) {
      const auto n = static_cast<std::size_t>(shape[d]);
      src += (rest % n) * stride[d];
      rest /= n;
    }
    out[i] = static_cast<float>(t.at(src));
  }
  return out;
}

}  // namespace octasim::firmware::net
