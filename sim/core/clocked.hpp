// The clock every timing model counts in: one period, conversions between cycles and SystemC
// time, and waiting until an absolute time. Units derive from it instead of each keeping its
// own copy of the arithmetic.
#pragma once

#include <cstdint>

#include <systemc>

namespace octasim {

class Clocked {
 public:
  explicit Clocked(const sc_core::sc_time& period) : period_(period) {}

  [[nodiscard]] const sc_core::sc_time& clock_period() const { return period_; }
  // `n` cycles as a duration.
  [[nodiscard]] sc_core::sc_time cycles(std::uint64_t n) const {
    return period_ * static_cast<double>(n);
  }
  // A duration or an absolute time in (rounded) cycles.
  [[nodiscard]] std::uint64_t to_cycles(const sc_core::sc_time& t) const {
    return static_cast<std::uint64_t>(t / period_ + 0.5);
  }
  // The current cycle.
  [[nodiscard]] std::uint64_t now() const { return to_cycles(sc_core::sc_time_stamp()); }
  // Inside a thread: waits until absolute time `t` (returns at once when it has passed).
  static void wait_until(const sc_core::sc_time& t) {
    if (t > sc_core::sc_time_stamp()) sc_core::wait(t - sc_core::sc_time_stamp());
  }

 private:
  sc_core::sc_time period_;
};

}  // namespace octasim
