// What the device around the PPU provides to it: CSB register writes into the DLA/OCTAV units
// (REG_WRITE), the GLB interrupt status (WAIT_DLA, INTERRUPT), and the register file the PPU's
// own registers (S_CH<n>_*) live in. The device implements it; tests use a plain double.
#pragma once

#include <cstdint>

#include <systemc>

namespace octasim::ppu {

class PpuHost {
 public:
  virtual ~PpuHost() = default;
  // A CSB write as the host's; false when no register lives at `addr` (REG_WRITE ->
  // BAD_REGISTER). Called from inside a SystemC thread; must not throw.
  virtual bool csb_write(std::uint32_t addr, std::uint32_t value) = 0;
  // GLB S_INTR_STATUS, write-one-to-clear, and an event notified whenever a bit is raised.
  [[nodiscard]] virtual std::uint32_t interrupt_status() const = 0;
  virtual void clear_interrupts(std::uint32_t mask) = 0;
  [[nodiscard]] virtual const sc_core::sc_event& interrupt_event() const = 0;
  virtual void raise_interrupt(unsigned status_bit) = 0;
  // The register file (the PPU reads PB_BASE/PB_SIZE/PUT and sets GET/STATUS/ERROR/
  // ERROR_OFFSET).
  [[nodiscard]] virtual std::uint32_t reg(std::uint32_t addr) const = 0;
  virtual void set_reg(std::uint32_t addr, std::uint32_t value) = 0;
};

}  // namespace octasim::ppu
