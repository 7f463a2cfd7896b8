// Ctrl-C handling for long runs (DESIGN.md principle 8): the first SIGINT or
// SIGTERM only sets a flag; the pipeline checks it between steps, stops, and
// the output writers remove their temporary files. A second SIGINT kills the
// process at once (the handler is one-shot).
#pragma once
#include <string>

#include "core/error.h"

namespace vidax::pipeline {

// Thrown by throw_if_interrupted(); a vidax::Error so every caller's error
// path (and cleanup) applies. The CLI exits with 130 on it.
class Interrupted : public Error {
 public:
  using Error::Error;
};

// Installs the one-shot SIGINT/SIGTERM handlers (idempotent).
void install_interrupt_handlers();
bool interrupt_requested();
// The signal that set the flag ("SIGINT (Ctrl-C)", "SIGTERM"), or "" when none.
std::string interrupt_signal_name();
// Throws Interrupted naming the signal and `where` ("denoising step 3/50") when the flag is set.
void throw_if_interrupted(const std::string& where);
// Sets / clears the flag as a signal would (tests; a server cancelling a job).
void request_interrupt_for_testing(int signal_number);
void clear_interrupt();

}  // namespace vidax::pipeline
