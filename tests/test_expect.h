// The checks many tests share: an error path (the call must throw vidax::Error naming what the
// test expects) and a golden file run through its parity kind as `vidax parity` runs it (every row
// within the bounds, each row's numbers printed).
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/error.h"
#include "engine/builtin_kinds.h"
#include "parity/parity.h"

namespace vidax::test {

// f() must throw a vidax::Error whose message contains needle.
template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error (expected one saying '" << needle << "')";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// Every output* and inter.* tensor of the golden at path against what its kind produces at
// precision (rtol rel_bound, each max_abs <= abs_bound), `compared` rows; label names the file in
// the printed rows.
inline void expect_parity_golden(const std::string& path, const char* label, const std::string& precision,
                                 double rel_bound, double abs_bound, int compared) {
  engine::register_builtins();
  parity::Options opt;
  opt.precision = precision;
  opt.rtol = rel_bound;
  const parity::Report rep = parity::run(path, opt);
  for (const auto& c : rep.rows) {
    std::printf("  %s %-24s %s max_abs=%.3g rel_l2=%.3g\n", label, c.name.c_str(), precision.c_str(), c.max_abs,
                c.rel_l2);
    EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << c.name << " " << c.note;
    EXPECT_LE(c.max_abs, abs_bound) << c.name;
  }
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
  EXPECT_EQ(rep.compared, compared);
}

}  // namespace vidax::test
