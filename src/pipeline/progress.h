// Progress of a run on stderr: a redrawn bar with the last step's time and an
// ETA when the stream is a terminal, one plain line per step otherwise (logs,
// CI, pipes). Formatting only; the pipeline reports steps through callbacks.
#pragma once
#include <cstdio>
#include <string>

namespace vidax::pipeline {

// "0:47", "1:02:03"; "?" for negative/non-finite input.
std::string format_duration(double seconds);

class ProgressBar {
 public:
  // tty: -1 = detect with isatty(out), 0 = plain lines, 1 = bar.
  ProgressBar(std::string label, int total, std::FILE* out = stderr, int tty = -1);
  // After unit `done` (1-based) finished, having taken `seconds`.
  void update(int done, double seconds);
  // Ends the bar's line (terminal mode); prints the total time.
  void finish();
  // Ends the bar's line without the "N/M done" summary: the run failed, and the
  // error that follows says where.
  void abandon();
  bool is_terminal() const { return tty_; }

 private:
  std::string label_;
  int total_;
  std::FILE* out_;
  bool tty_;
  double elapsed_ = 0;
  int done_ = 0;
  bool finished_ = false;
};

}  // namespace vidax::pipeline
