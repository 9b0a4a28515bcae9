#include "sim/dla/functional_device.hpp"

#include <stdexcept>
#include <string>

#include "firmware/ppu/commands.hpp"

namespace octasim::dla {

FunctionalDevice::FunctionalDevice(HwConfig hw)
    : hw_(std::move(hw)),
      memory_(hw_.dla.mem_address_width),
      cvsram_(make_cvsram_image(hw_)),
      device_memory_(memory_, cvsram_.get(), hw_.name) {}

void FunctionalDevice::csb_write(std::uint32_t addr, std::uint32_t value) {
  regs_.csb_write(addr, value);
  if (const int channel = ppu_format::doorbell_channel(addr); channel >= 0) {
    throw std::runtime_error(
        "PPU channel " + std::to_string(channel) +
        ": the PPU runs on the cycle-level device only (drop --functional; use a configuration "
        "with a PPU, e.g. --config soc_small)");
  }
  // Only setting a D_OP_ENABLE can let an operation start.
  if (regs_.is_op_enable(addr) && (value & 1u) != 0) start_ready_engines();
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
      const RegisterFile::Groups groups = regs_.consumers();
      if (!ready_to_start(e, regs_, groups)) continue;
      // The hardware starts the operation (pending groups become running), as on the SoC;
      // it then completes at once.
      start_group(e, regs_, groups);
      const RegRead read = group_reader(regs_, groups);
      OpResult r = e.run(hw_, read, lut_of(e, regs_), device_memory_);
      // SDP's output goes to PDP on the fly: the paired flying PDP starts with it.
      OpResult pooled;
      if (r.to_pdp != nullptr) {
        start_group(pdp_engine(), regs_, groups);
        pooled = run_pdp_on_the_fly(hw_, read, *r.to_pdp, device_memory_);
      }
      const bool flying = r.to_pdp != nullptr;
      complete_group(e, regs_, groups, r);
      const unsigned group = regs_.group_of(e.units(read).names[0], groups);
      layers_.push_back({std::string(e.name), group, std::move(r)});
      if (flying) {
        complete_group(pdp_engine(), regs_, groups, pooled);
        layers_.push_back({"PDP", regs_.group_of("PDP", groups), std::move(pooled)});
      }
      progress = true;
    }
  }
}

}  // namespace octasim::dla
