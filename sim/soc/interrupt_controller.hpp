// The SoC's interrupt controller: GLB S_INTR_STATUS (its bits live in the register file), the
// event a raised bit notifies (a PPU channel's WAIT_DLA waits on it), the host's wait for an
// interrupt (the kernel pauses when one is raised, so sc_start returns to the host) and the
// glb.intr_status VCD signal.
#pragma once

#include <cstdint>

#include <systemc>

#include "sim/core/register_file.hpp"

namespace octasim::soc {

class InterruptController {
 public:
  explicit InterruptController(RegisterFile& regs) : regs_(regs) {}
  InterruptController(const InterruptController&) = delete;
  InterruptController& operator=(const InterruptController&) = delete;

  [[nodiscard]] std::uint32_t status() const { return regs_.interrupt_status(); }
  [[nodiscard]] bool raised(unsigned status_bit) const {
    return (status() >> status_bit & 1u) != 0;
  }
  // Sets a GLB S_INTR_STATUS bit and announces it (a PPU channel's interrupt).
  void raise(unsigned status_bit);
  // Announces bits already set in the register file (an engine's completion sets them).
  void announce();
  // Clears the bits of `mask` (a write of 1s to S_INTR_STATUS).
  void clear(std::uint32_t mask);
  [[nodiscard]] const sc_core::sc_event& event() const { return event_; }
  // While the host waits for an interrupt, announcing one pauses the kernel (sc_pause).
  void set_host_waiting(bool waiting) { host_waiting_ = waiting; }

  void trace_signal(sc_core::sc_trace_file* file);
  // Drives glb.intr_status from the register file (once trace_signal was called).
  void update_signal();

 private:
  RegisterFile& regs_;
  sc_core::sc_event event_;
  bool host_waiting_ = false;
  bool drive_signal_ = false;
  sc_core::sc_signal<unsigned, sc_core::SC_UNCHECKED_WRITERS> signal_{"intr_status"};
};

}  // namespace octasim::soc
