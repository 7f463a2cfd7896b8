// What the HunyuanVideo 1.0 and 1.5 VAE tests share (test_vae.cpp, test_hy15_vae.cpp): a golden
// file's config and parameters through a translator component, a VAE built from them strictly,
// the published key lists (tests/hunyuan/data/*.json) as shapes, and the golden run through its
// parity kind with every row checked.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "nn/params.h"
#include "parity/parity.h"
#include "translate/inspect.h"
#include "translate/source.h"
#include "translate/translate.h"

namespace vidax::test::hunyuan_vae {

template <class Config>
struct Loaded {
  io::Checkpoint file;
  Config cfg;
  std::map<std::string, Tensor> params;  // official names
};

// The file at path: cfg = Config::from_json(metadata "config"); params = every tensor but the
// golden's input / output / inter ones, through comp (with the parsed config, or cfg.to_json()
// when normalized).
template <class Config>
Loaded<Config> load(const std::string& path, const translate::Component& comp, bool normalized) {
  Loaded<Config> l{io::Checkpoint::open(path), {}, {}};
  const auto config = nlohmann::json::parse(l.file.metadata().at("config"));
  l.cfg = Config::from_json(config);
  translate::MemorySource src(path);
  for (const std::string& n : l.file.names())
    if (!translate::is_golden_io_key(n)) src.add(n, l.file.get(n));
  l.params = translate::load(src, comp, normalized ? l.cfg.to_json() : config);
  return l;
}

// The VAE of `parts` from params, every one of them taken.
template <class VAE, class Config, class Parts>
VAE build(const Loaded<Config>& l, std::map<std::string, Tensor> params, Parts parts, DType compute) {
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
  VAE vae(l.cfg, src, parts, compute);
  src.expect_all_taken();
  return vae;
}

// tests/hunyuan/data/<file>: {name: shape} of a published state dict.
inline std::map<std::string, Shape> key_list(const char* file) {
  std::ifstream f(std::filesystem::path(VIDAX_TEST_DATA_DIR) / "hunyuan" / "data" / file);
  const auto j = nlohmann::json::parse(f);
  std::map<std::string, Shape> out;
  for (const auto& [k, v] : j.items()) out[k] = v.get<Shape>();
  return out;
}

inline translate::MemorySource shapes_only(const std::map<std::string, Shape>& keys, const std::string& prefix = "") {
  translate::MemorySource src("key list");
  for (const auto& [k, s] : keys) src.add(prefix + k, DType::F32, s);
  return src;
}

// Every output* and inter.* tensor of the golden at path against what the kind produces (vidax
// parity's run) at precision: each row Ok and within abs_bound, at least min_compared rows; the
// rows printed with their names padded to name_width.
inline void expect_golden(const std::string& path, const std::string& precision, double rel_bound, double abs_bound,
                          int min_compared, int name_width) {
  engine::register_builtins();
  parity::Options opt;
  opt.precision = precision;
  opt.rtol = rel_bound;
  const parity::Report rep = parity::run(path, opt);
  for (const auto& c : rep.rows) {
    std::printf("  %-*s %s max_abs=%.3g rel_l2=%.3g\n", name_width, c.name.c_str(), precision.c_str(), c.max_abs,
                c.rel_l2);
    EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << c.name << " " << c.note;  // every tap is produced
    EXPECT_LE(c.max_abs, abs_bound) << c.name;
  }
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
  EXPECT_GE(rep.compared, min_compared);
}

}  // namespace vidax::test::hunyuan_vae
