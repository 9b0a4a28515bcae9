// Firmware's register port (firmware::Mmio) on a trace::Device: the network runner programs the
// functional or the cycle-level device directly, without a trace in between. An interrupt wait
// that times out throws std::runtime_error naming the interrupt and the limit.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/core.h>

#include "firmware/driver/mmio.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/trace/player.hpp"

namespace octasim::trace {

class DeviceMmio final : public firmware::Mmio {
 public:
  DeviceMmio(Device& device, std::uint64_t timeout_cycles)
      : device_(device), timeout_(timeout_cycles) {}

  void write32(std::uint32_t addr, std::uint32_t value) override { device_.csb_write(addr, value); }
  [[nodiscard]] std::uint32_t read32(std::uint32_t addr) override { return device_.csb_read(addr); }
  // Waits for GLB S_INTR_STATUS bit `status_bit`, then clears it (write one to clear).
  void wait_interrupt(unsigned status_bit) override {
    if (!device_.wait_interrupt(status_bit, timeout_)) {
      throw std::runtime_error(
          fmt::format("the device did not raise GLB S_INTR_STATUS bit {} within {} "
                      "cycles",
                      status_bit, timeout_));
    }
    device_.csb_write(regs::GLB::S_INTR_STATUS::kAddr, 1U << status_bit);
  }

 private:
  Device& device_;
  std::uint64_t timeout_;
};

}  // namespace octasim::trace
