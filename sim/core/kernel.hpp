#pragma once
// Running the SystemC kernel from sc_main.
//
// SystemC 2.3.4 announces each coroutine switch to AddressSanitizer, but it announces the main
// coroutine (sc_main's own stack) with an empty range. Once the kernel has switched back to
// sc_main, ASan therefore believes the main stack is empty: an exception thrown there (a trace's
// user error found during a register write) cannot have its abandoned frames unpoisoned, and ASan
// reports a false stack-use-after-scope. run_kernel() gives ASan the main thread's real stack back
// every time the kernel returns; in builds without ASan it is sc_start and nothing else.

#include <systemc>

namespace octasim::core {

// sc_start(duration), then the main stack's bounds restored for AddressSanitizer.
void run_kernel(const sc_core::sc_time& duration);

// The same after a kernel call made elsewhere (tests that call sc_start themselves).
void restore_main_stack_for_sanitizer();

}  // namespace octasim::core
