#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "pipeline/interrupt.h"
#include "pipeline/progress.h"

using namespace vidax::pipeline;

namespace {
std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}
}  // namespace

TEST(Progress, FormatsDurations) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(47.4), "0:47");
  EXPECT_EQ(format_duration(62), "1:02");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(Progress, PlainLinesWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  ProgressBar bar("denoising", 4, f, /*tty=*/0);
  bar.update(1, 2.0);
  bar.update(2, 2.0);
  bar.finish();
  const std::string s = read_all(f);
  std::fclose(f);
  EXPECT_NE(s.find("denoising 1/4  2.00 s  elapsed 0:02  ETA 0:06\n"), std::string::npos) << s;
  EXPECT_NE(s.find("denoising 2/4  2.00 s  elapsed 0:04  ETA 0:04\n"), std::string::npos) << s;
  EXPECT_NE(s.find("denoising: 2/4 done in 0:04\n"), std::string::npos) << s;
  EXPECT_EQ(s.find('\r'), std::string::npos);
}

TEST(Progress, RedrawnBarOnATerminal) {
  std::FILE* f = std::tmpfile();
  ProgressBar bar("denoising", 10, f, /*tty=*/1);
  bar.update(5, 1.5);
  const std::string s = read_all(f);
  std::fclose(f);
  EXPECT_EQ(s.rfind("\rdenoising [###############...............] 5/10  1.50 s/step  ETA 0:02", 0), 0u) << s;
}

TEST(Interrupt, FlagStopsWithTheSignalAndPlace) {
  clear_interrupt();
  EXPECT_NO_THROW(throw_if_interrupted("step 1"));
  request_interrupt_for_testing(SIGINT);
  try {
    throw_if_interrupted("denoising step 3/50");
    FAIL() << "no throw";
  } catch (const Interrupted& e) {
    EXPECT_EQ(std::string(e.what()), "stopped by SIGINT (Ctrl-C) during denoising step 3/50; no output was written");
  }
  clear_interrupt();
}

TEST(Interrupt, RealSigintSetsTheFlag) {
  clear_interrupt();
  install_interrupt_handlers();
  std::raise(SIGINT);  // handled: the process keeps running
  EXPECT_TRUE(interrupt_requested());
  EXPECT_EQ(interrupt_signal_name(), "SIGINT (Ctrl-C)");
  clear_interrupt();
  std::signal(SIGINT, SIG_DFL);
}
