#include "sim/core/stop_request.hpp"

#include <csignal>

namespace octasim {
namespace {

volatile std::sig_atomic_t g_signal = 0;
struct sigaction g_previous_int {};
struct sigaction g_previous_term {};

extern "C" void on_stop_signal(int sig) {
  if (g_signal != 0) {  // the second signal: end now, as without a handler
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal = sig;
}

}  // namespace

StopSignals::StopSignals() {
  g_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  // A signal the process inherited as ignored (nohup, a background job) stays ignored.
  sigaction(SIGINT, nullptr, &g_previous_int);
  sigaction(SIGTERM, nullptr, &g_previous_term);
  if (g_previous_int.sa_handler != SIG_IGN) sigaction(SIGINT, &action, nullptr);
  if (g_previous_term.sa_handler != SIG_IGN) sigaction(SIGTERM, &action, nullptr);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int stop_signal() {
  return g_signal;
}

void throw_if_stop_requested(std::uint64_t cycle) {
  if (g_signal != 0) throw Interrupted{g_signal, cycle};
}

}  // namespace octasim
