#include "pipeline/interrupt.h"

#include <csignal>

namespace vidax::pipeline {

namespace {
volatile std::sig_atomic_t g_signal = 0;  // the signal number that arrived, 0 = none

extern "C" void on_stop_signal(int sig) { g_signal = sig; }
}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C takes the default action (terminate now)
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

int interrupt_signal() { return static_cast<int>(g_signal); }

bool interrupt_requested() { return g_signal != 0; }

std::string interrupt_signal_name() {
  switch (g_signal) {
    case 0: return "";
    case SIGINT: return "SIGINT (Ctrl-C)";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP (the terminal closed)";
    default: return "signal " + std::to_string(static_cast<int>(g_signal));
  }
}

void throw_if_interrupted(const std::string& where) {
  if (g_signal == 0) return;
  throw Interrupted("stopped by " + interrupt_signal_name() + " during " + where +
                    "; no output was written");
}

void request_interrupt_for_testing(int signal_number) { g_signal = signal_number; }
void clear_interrupt() { g_signal = 0; }

}  // namespace vidax::pipeline
