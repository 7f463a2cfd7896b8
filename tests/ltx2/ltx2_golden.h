// What the LTX-2 golden tests share (test_dit, test_video_vae, test_audio_vae, test_vocoder,
// test_text_encoder, test_text_connector, test_pipeline, test_i2v):
// the golden files' folder, a file's parameters apart from its inputs and outputs, and the run of
// a file through its kind with every row checked, the run of an edited copy, a row's status, an
// error check.
#pragma once
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "parity/parity.h"
#include "test_diff.h"
#include "translate/inspect.h"

namespace vidax::test::ltx2 {

inline std::string golden(const char* name) {
  return (std::filesystem::path(VIDAX_TEST_DATA_DIR) / "golden" / "ltx2" / name).string();
}

// The file, its config (metadata "config") and its parameters (every tensor but input.* /
// output* / inter.*), for tests that build a module from them by hand.
struct GoldenParams {
  io::Checkpoint file;
  nlohmann::json config;
  std::map<std::string, Tensor> params;
};
inline GoldenParams load_golden(const char* name) {
  GoldenParams g{io::Checkpoint::open(golden(name)), {}, {}};
  g.config = nlohmann::json::parse(g.file.metadata().at("config"));
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n)) g.params[n] = g.file.get(n);
  return g;
}

inline double max_abs_diff(const Tensor& want, const Tensor& got) {
  EXPECT_EQ(want.shape(), got.shape());
  return diff(want, got).max_abs;
}

// The file through its kind (`vidax parity`'s run) at `precision`: every row passes at `bound`
// (rel L2), at fp32 also max abs <= 1e-5; returns the report for the caller's counts.
inline parity::Report expect_golden_rows(const char* name, const char* precision = "fp32", double bound = 1e-5) {
  engine::register_builtins();
  parity::Options opt;
  opt.precision = precision;
  opt.rtol = bound;
  const parity::Report rep = parity::run(golden(name), opt);
  for (const auto& c : rep.rows) {
    std::printf("  %s %s %-32s max_abs=%.3g rel_l2=%.3g\n", name, precision, c.name.c_str(), c.max_abs, c.rel_l2);
    EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << c.name << " " << c.note;
    if (std::string(precision) == "fp32") {
      EXPECT_LE(c.max_abs, 1e-5) << c.name;
    }
  }
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
  return rep;
}

// A copy of a golden with its tensors and config edited, run through its kind (`vidax parity`'s
// run, default options); the copy, in the temporary folder, removed afterwards.
inline parity::Report run_edited(const char* name,
                                 const std::function<void(std::map<std::string, Tensor>&, nlohmann::json&)>& edit) {
  engine::register_builtins();
  io::Checkpoint ck = io::Checkpoint::open(golden(name));
  std::map<std::string, Tensor> t;
  for (const auto& n : ck.names()) t[n] = ck.get(n);
  auto meta = ck.metadata();
  nlohmann::json config = nlohmann::json::parse(meta.at("config"));
  edit(t, config);
  meta["config"] = config.dump();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("vidax_edited_" + std::to_string(::getpid()) + "_" + name)).string();
  io::save_safetensors(path, t, meta);
  struct Remove {
    std::string p;
    ~Remove() { std::filesystem::remove(p); }
  } remove{path};
  return parity::run(path, parity::Options{});
}

// The status of the report's row `row` (a failure when there is none).
inline parity::Comparison::Status row_status(const parity::Report& rep, const std::string& row) {
  for (const auto& c : rep.rows)
    if (c.name == row) return c.status;
  ADD_FAILURE() << "no row " << row;
  return parity::Comparison::Status::Fail;
}

// f() throws an error whose message holds `needle`.
template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error (expected one mentioning '" << needle << "')";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace vidax::test::ltx2
