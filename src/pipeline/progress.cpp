#include "pipeline/progress.h"

#include <unistd.h>

#include <cmath>

namespace vidax::pipeline {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

ProgressBar::ProgressBar(std::string label, int total, std::FILE* out, int tty)
    : label_(std::move(label)), total_(total), out_(out) {
  tty_ = tty < 0 ? ::isatty(::fileno(out)) != 0 : tty != 0;
}

void ProgressBar::update(int done, double seconds) {
  done_ = done;
  elapsed_ += seconds;
  // ETA from the mean step time so far (steps of one run cost the same).
  const double eta = done > 0 ? elapsed_ / done * (total_ - done) : -1;
  if (tty_) {
    constexpr int kWidth = 30;
    const int fill = total_ > 0 ? done * kWidth / total_ : kWidth;
    std::string bar(static_cast<size_t>(fill), '#');
    bar.resize(kWidth, '.');
    std::fprintf(out_, "\r%s [%s] %d/%d  %.2f s/step  ETA %s ", label_.c_str(), bar.c_str(), done, total_,
                 seconds, format_duration(eta).c_str());
  } else {
    std::fprintf(out_, "%s %d/%d  %.2f s  elapsed %s  ETA %s\n", label_.c_str(), done, total_, seconds,
                 format_duration(elapsed_).c_str(), format_duration(eta).c_str());
  }
  std::fflush(out_);
}

void ProgressBar::abandon() {
  if (finished_) return;
  finished_ = true;
  if (tty_ && done_ > 0) std::fputc('\n', out_);
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_)
    std::fprintf(out_, "\n%s: %d/%d done in %s\n", label_.c_str(), done_, total_, format_duration(elapsed_).c_str());
  else
    std::fprintf(out_, "%s: %d/%d done in %s\n", label_.c_str(), done_, total_, format_duration(elapsed_).c_str());
  std::fflush(out_);
}

}  // namespace vidax::pipeline
