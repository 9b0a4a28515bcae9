// An Mmio that records firmware's register programming into a PPU push buffer: every CSB write
// becomes a REG_WRITE command and every interrupt wait a WAIT_DLA (which also acknowledges the
// bit, as Mmio::wait_interrupt does). So the DLA layer functions (firmware/dla) program the DLA
// from a PPU channel exactly as they would from the host, and semaphore commands around them
// order the layer against PPU kernels on other channels.
#pragma once

#include <cstdint>

#include "firmware/driver/mmio.hpp"
#include "firmware/ppu/commands.hpp"

namespace octasim::firmware {

class PushBufferMmio final : public Mmio {
 public:
  explicit PushBufferMmio(ppu_format::PushBuffer& pb) : pb_(pb) {}
  void write32(std::uint32_t addr, std::uint32_t value) override { pb_.reg_write(addr, value); }
  // A push buffer cannot return a value to the host that builds it.
  [[nodiscard]] std::uint32_t read32(std::uint32_t addr) override {
    throw FirmwareError("a push buffer cannot read register 0x" + hex(addr) +
                        ": only writes and interrupt waits can be recorded");
  }
  void wait_interrupt(unsigned status_bit) override { pb_.wait_dla(1u << status_bit); }

 private:
  static std::string hex(std::uint32_t v) {
    static const char* const kDigits = "0123456789abcdef";
    std::string s;
    for (int i = 28; i >= 0; i -= 4) s += kDigits[(v >> i) & 0xfu];
    return s;
  }
  ppu_format::PushBuffer& pb_;
};

}  // namespace octasim::firmware
