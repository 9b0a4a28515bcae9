#include "sim/soc/host_adapter.hpp"

#include "sim/core/kernel.hpp"

namespace octasim::soc {

void HostAdapter::run_for(std::uint64_t cycles) {
  if (cycles > 0) core::run_kernel(soc_.clock_period() * static_cast<double>(cycles));
  soc_.dla().rethrow_pending_error();
}

void HostAdapter::csb_write(std::uint32_t addr, std::uint32_t value) {
  soc_.csb().check(addr);  // an unknown address is refused before time passes
  run_for(soc_.config().dla.csb_access_cycles);
  soc_.csb().write(addr, value);
}

std::uint32_t HostAdapter::csb_read(std::uint32_t addr) {
  run_for(soc_.config().dla.csb_access_cycles);
  return soc_.registers().csb_read(addr);
}

bool HostAdapter::wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) {
  InterruptController& interrupts = soc_.interrupts();
  const std::uint64_t deadline = cycle() + timeout_cycles;
  interrupts.set_host_waiting(true);
  while (!interrupts.raised(status_bit) && cycle() < deadline) {
    run_for(deadline - cycle());  // the interrupt controller pauses the kernel at an interrupt
  }
  interrupts.set_host_waiting(false);
  return interrupts.raised(status_bit);
}

void HostAdapter::wait_cycles(std::uint64_t cycles) {
  run_for(cycles);
}

}  // namespace octasim::soc
