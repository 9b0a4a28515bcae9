// The host's side of the SoC: the trace player's trace::Device. It drives the SoC from sc_main,
// between kernel runs: each CSB access or wait runs the simulation for the time it takes
// (sc_start), so no player code — and no exception it throws — ever runs on a SystemC thread's
// stack. Call after elaboration, outside the kernel.
#pragma once

#include <cstdint>

#include "sim/soc/soc.hpp"
#include "sim/trace/player.hpp"

namespace octasim::soc {

class HostAdapter final : public trace::Device {
 public:
  explicit HostAdapter(Soc& soc) : soc_(soc) {}

  void csb_write(std::uint32_t addr, std::uint32_t value) override;
  [[nodiscard]] std::uint32_t csb_read(std::uint32_t addr) override;
  [[nodiscard]] MemoryImage& memory() override { return soc_.memory(); }
  [[nodiscard]] MemoryImage& memory_of(MemorySpace space) override {
    return soc_.device_memory().image(space);
  }
  [[nodiscard]] bool wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) override;
  void wait_cycles(std::uint64_t cycles) override;
  [[nodiscard]] std::uint64_t cycle() const override { return soc_.cycle(); }

  [[nodiscard]] Soc& soc() { return soc_; }

 private:
  void run_for(std::uint64_t cycles);

  Soc& soc_;
};

}  // namespace octasim::soc
