// Ctrl-C handling for long runs (DESIGN.md principle 8): the first SIGINT,
// SIGTERM or SIGHUP (the terminal closed) only sets a flag; the pipeline checks it between steps, stops, and
// the output writers remove their temporary files. A second SIGINT kills the
// process at once (the handler is one-shot).
#pragma once
#include <string>

#include "core/error.h"

namespace vidax::pipeline {

// Thrown by throw_if_interrupted(); a vidax::Error so every caller's error
// path (and cleanup) applies. The CLI exits with 128 + the signal's number on
// it (130 SIGINT, 143 SIGTERM, 129 SIGHUP), as a shell reports a process the
// signal killed.
class Interrupted : public Error {
 public:
  using Error::Error;
};

// Installs the one-shot SIGINT/SIGTERM/SIGHUP handlers (idempotent), and
// ignores SIGPIPE: a closed log pipe (`vidax generate ... 2>&1 | head`) must not
// kill a run; writes to it fail and are dropped instead.
void install_interrupt_handlers();
// The number of the signal that set the flag, 0 when none.
int interrupt_signal();
bool interrupt_requested();
// The signal that set the flag ("SIGINT (Ctrl-C)", "SIGTERM"), or "" when none.
std::string interrupt_signal_name();
// Throws Interrupted naming the signal and `where` ("denoising step 3/50") when the flag is set.
void throw_if_interrupted(const std::string& where);
// Sets / clears the flag as a signal would (tests; a server cancelling a job).
void request_interrupt_for_testing(int signal_number);
void clear_interrupt();

}  // namespace vidax::pipeline
