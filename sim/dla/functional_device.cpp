#include "sim/dla/functional_device.hpp"

namespace octasim::dla {

FunctionalDevice::FunctionalDevice(HwConfig hw)
    : hw_(std::move(hw)), memory_(hw_.mem_address_width) {}

void FunctionalDevice::csb_write(std::uint32_t addr, std::uint32_t value) {
  regs_.csb_write(addr, value);
  start_ready_engines();
}

bool FunctionalDevice::wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) {
  // Everything that can happen has happened: operations complete inside csb_write. An
  // interrupt that is not there now never comes, so the wait times out.
  if ((regs_.interrupt_status() >> status_bit & 1u) != 0) return true;
  wait_cycles(timeout_cycles);
  return false;
}

void FunctionalDevice::wait_cycles(std::uint64_t cycles) {
  cycle_ = cycles > ~std::uint64_t{0} - cycle_ ? ~std::uint64_t{0} : cycle_ + cycles;
}

void FunctionalDevice::start_ready_engines() {
  for (bool progress = true; progress;) {
    progress = false;
    for (const Engine& e : engines()) {
      const unsigned group = regs_.consumer(e.core_unit);
      if (!ready_to_start(e, regs_, group)) continue;
      // The hardware starts the group (a pending group becomes running), as on DlaDevice; the
      // operation then completes at once.
      start_group(e, regs_, group);
      const RegRead read = [this, group](std::uint32_t addr) { return regs_.value(addr, group); };
      OpResult r = e.run(hw_, read, regs_.lut(e.core_unit), memory_);
      complete_group(e, regs_, group, r);
      layers_.push_back({std::string(e.name), group, std::move(r)});
      progress = true;
    }
  }
}

}  // namespace octasim::dla
