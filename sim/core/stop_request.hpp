// Stopping a long run on SIGINT (Ctrl-C) or SIGTERM without losing control of what it leaves
// behind: while a StopSignals object lives, either signal only sets a flag; the simulation
// loops (the trace player's device, the network runner) check it at safe points — between
// register accesses, between slices of an interrupt wait — and throw Interrupted, which unwinds
// through the normal paths (temporary output files removed, nothing renamed into place) to
// main(), which prints "octasim: interrupted at cycle N" and exits with 128 + the signal (130
// for SIGINT, 143 for SIGTERM). A second signal while the first is pending ends the process at
// once, as if no handler were installed.
#pragma once

#include <cstdint>

namespace octasim {

// Thrown at a safe point after a stop signal. Deliberately not a std::exception: it is no
// error, and no handler that turns exceptions into error messages (the player names the trace
// line of any std::exception) may absorb it.
struct Interrupted {
  int signal = 0;           // SIGINT or SIGTERM
  std::uint64_t cycle = 0;  // the simulated cycle the run stopped at
};

// Installs the flag-setting handlers for SIGINT and SIGTERM; the destructor restores the
// previous ones. Not nested.
class StopSignals {
 public:
  StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  ~StopSignals();
};

// The pending stop signal, 0 when none.
[[nodiscard]] int stop_signal();
// Throws Interrupted{signal, cycle} when a stop signal is pending.
void throw_if_stop_requested(std::uint64_t cycle);

}  // namespace octasim
