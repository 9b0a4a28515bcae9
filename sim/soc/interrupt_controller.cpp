#include "sim/soc/interrupt_controller.hpp"

#include "octasim/regs/nvdla.hpp"

namespace octasim::soc {

void InterruptController::raise(unsigned status_bit) {
  regs_.raise_interrupt(status_bit);
  announce();
}

void InterruptController::announce() {
  event_.notify(sc_core::SC_ZERO_TIME);
  update_signal();
  if (host_waiting_) sc_core::sc_pause();
}

void InterruptController::clear(std::uint32_t mask) {
  regs_.csb_write(regs::GLB::S_INTR_STATUS::kAddr, mask);
  update_signal();
}

void InterruptController::trace_signal(sc_core::sc_trace_file* file) {
  drive_signal_ = true;
  sc_core::sc_trace(file, signal_, "glb.intr_status");
}

void InterruptController::update_signal() {
  if (drive_signal_) signal_.write(regs_.interrupt_status());
}

}  // namespace octasim::soc
