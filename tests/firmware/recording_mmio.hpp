// An Mmio that records every register write (the last value of each address), for tests that
// check what firmware programs without a device or a fixed sequence (StrictMmio checks one).
#pragma once

#include <cstdint>
#include <map>

#include "firmware/driver/mmio.hpp"

namespace octasim::test {

class RecordingMmio final : public firmware::Mmio {
 public:
  void write32(std::uint32_t addr, std::uint32_t v) override { regs_[addr] = v; }
  [[nodiscard]] std::uint32_t read32(std::uint32_t) override { return 0; }
  void wait_interrupt(unsigned) override {}
  // The last value written to `addr`, or 0xdeadbeef when nothing was.
  [[nodiscard]] std::uint32_t at(std::uint32_t addr) const {
    const auto it = regs_.find(addr);
    return it == regs_.end() ? 0xdeadbeefu : it->second;
  }
  [[nodiscard]] bool written(std::uint32_t addr) const { return regs_.count(addr) != 0; }

 private:
  std::map<std::uint32_t, std::uint32_t> regs_;
};

}  // namespace octasim::test
