#include "sim/core/kernel.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define OCTASIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OCTASIM_ASAN 1
#endif
#endif

#ifdef OCTASIM_ASAN
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>

#include <cstddef>
#include <stdexcept>
#endif

namespace octasim::core {

#ifdef OCTASIM_ASAN
namespace {

struct StackRange {
  void* bottom = nullptr;
  std::size_t size = 0;
};

// The calling thread's stack as the C library describes it (the main thread's: its rlimit size).
StackRange this_thread_stack() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0)
    throw std::runtime_error("pthread_getattr_np failed");
  StackRange range;
  pthread_attr_getstack(&attr, &range.bottom, &range.size);
  pthread_attr_destroy(&attr);
  return range;
}

}  // namespace

void restore_main_stack_for_sanitizer() {
  static const StackRange main_stack = this_thread_stack();
  // A switch from the main stack to the main stack: ASan records the range as the current stack.
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, main_stack.bottom, main_stack.size);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
}
#else
void restore_main_stack_for_sanitizer() {}
#endif

void run_kernel(const sc_core::sc_time& duration) {
  sc_core::sc_start(duration);
  restore_main_stack_for_sanitizer();
}

}  // namespace octasim::core
