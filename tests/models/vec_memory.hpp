// A byte vector as models::ops::Memory, for the reference-op tests: reads and writes outside it
// throw instead of touching memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "models/ops/memory.hpp"

namespace octasim::models::ops::test {

class VecMemory final : public Memory {
 public:
  explicit VecMemory(std::size_t size) : bytes_(size, 0) {}
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    if (addr + size > bytes_.size()) throw std::runtime_error("read outside memory");
    std::memcpy(dst, bytes_.data() + addr, size);
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override {
    if (addr + size > bytes_.size()) throw std::runtime_error("write outside memory");
    std::memcpy(bytes_.data() + addr, src, size);
  }
  [[nodiscard]] std::uint8_t byte(std::uint64_t addr) const { return bytes_.at(addr); }
  [[nodiscard]] std::int8_t at(std::uint64_t addr) const {
    return static_cast<std::int8_t>(bytes_.at(addr));
  }
  void set(std::uint64_t addr, std::int8_t v) { bytes_.at(addr) = static_cast<std::uint8_t>(v); }
  void put(std::uint64_t addr, const std::vector<std::uint8_t>& b) {
    write(addr, b.data(), b.size());
  }
  // A little-endian 16-bit element (an INT16 or an FP16 bit pattern).
  [[nodiscard]] std::uint16_t u16(std::uint64_t addr) const {
    return static_cast<std::uint16_t>(bytes_.at(addr) | bytes_.at(addr + 1) << 8);
  }
  void put16(std::uint64_t addr, std::uint16_t v) {
    bytes_.at(addr) = static_cast<std::uint8_t>(v);
    bytes_.at(addr + 1) = static_cast<std::uint8_t>(v >> 8);
  }

 private:
  std::vector<std::uint8_t> bytes_;
};

}  // namespace octasim::models::ops::test
