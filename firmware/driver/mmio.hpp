// The DLA's CSB register port as firmware sees it. Driver and layer-programming code talk only
// to this interface, so the same code records an NVDLA trace (TraceWriter), runs against a
// strict sequenced mock in unit tests, or drives a device directly.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace octasim::firmware {

// A problem firmware can report to its user: a layer it cannot program, a file it cannot
// write. One line, no trailing period.
class FirmwareError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Mmio {
 public:
  Mmio() = default;
  Mmio(const Mmio&) = delete;
  Mmio& operator=(const Mmio&) = delete;
  virtual ~Mmio() = default;

  // One 32-bit CSB write / read at a byte address of the NVDLA register map.
  virtual void write32(std::uint32_t addr, std::uint32_t value) = 0;
  [[nodiscard]] virtual std::uint32_t read32(std::uint32_t addr) = 0;
  // Waits until GLB S_INTR_STATUS has bit `status_bit` set (the done interrupt of a unit's
  // register group, e.g. SDP_DONE_STATUS0), then acknowledges it by writing the bit back
  // (write one to clear). This is what NVDLA's trace command intr_notify means.
  virtual void wait_interrupt(unsigned status_bit) = 0;
};

}  // namespace octasim::firmware
