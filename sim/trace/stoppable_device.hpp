// A trace::Device that a stop signal (sim/core/stop_request.hpp) can end at a safe point: before
// each register access and between slices of an interrupt wait, it throws Interrupted when
// SIGINT or SIGTERM arrived. The slices only change how often the host looks: the device's
// timing, and so every cycle count, is the same as an unsliced wait's.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sim/core/stop_request.hpp"
#include "sim/trace/player.hpp"

namespace octasim::trace {

class StoppableDevice final : public Device {
 public:
  // Simulated cycles between looks at the flag during an interrupt wait on the cycle-level
  // device (a functional device's waits take no host time: `slice_cycles` = 0, unsliced).
  static constexpr std::uint64_t kSliceCycles = 100'000;

  explicit StoppableDevice(Device& inner, std::uint64_t slice_cycles = kSliceCycles)
      : inner_(inner), slice_(slice_cycles == 0 ? ~std::uint64_t{0} : slice_cycles) {}

  void csb_write(std::uint32_t addr, std::uint32_t value) override {
    throw_if_stop_requested(inner_.cycle());
    inner_.csb_write(addr, value);
  }
  [[nodiscard]] std::uint32_t csb_read(std::uint32_t addr) override {
    throw_if_stop_requested(inner_.cycle());
    return inner_.csb_read(addr);
  }
  [[nodiscard]] MemoryImage& memory() override { return inner_.memory(); }
  [[nodiscard]] MemoryImage& memory_of(MemorySpace space) override {
    return inner_.memory_of(space);
  }
  [[nodiscard]] bool wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) override {
    const std::uint64_t now = inner_.cycle();
    const std::uint64_t deadline =
        timeout_cycles > ~std::uint64_t{0} - now ? ~std::uint64_t{0} : now + timeout_cycles;
    for (;;) {
      throw_if_stop_requested(inner_.cycle());
      const std::uint64_t slice = std::min(slice_, deadline - inner_.cycle());
      if (inner_.wait_interrupt(status_bit, slice)) return true;
      if (inner_.cycle() >= deadline) return false;
    }
  }
  void wait_cycles(std::uint64_t cycles) override {
    throw_if_stop_requested(inner_.cycle());
    inner_.wait_cycles(cycles);
  }
  [[nodiscard]] std::uint64_t cycle() const override { return inner_.cycle(); }

 private:
  Device& inner_;
  std::uint64_t slice_;
};

}  // namespace octasim::trace
