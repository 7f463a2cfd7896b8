// Every committed golden file passes `vidax parity` (fp32 bounds), and the
// parity machinery itself fails when it should: for every kind, a golden whose
// expected outputs are perturbed fails on each of them.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "cli_child.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "parity/parity.h"
#include "test_names.h"

namespace fs = std::filesystem;
using namespace vidax;

namespace {
std::vector<std::string> golden_files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}
// The goldens checked at the default bounds: tests/golden/, tests/golden/hunyuan/, tests/golden/hunyuan15/
// and tests/golden/ltx2/
// (tests/golden/pipeline/ holds one checked with its own bound, in tests/pipeline).
std::vector<std::string> golden_files() {
  std::vector<std::string> out = golden_files_in(fs::path(VIDAX_TEST_DATA_DIR) / "golden");
  for (const auto& f : golden_files_in(fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan")) out.push_back(f);
  for (const auto& f : golden_files_in(fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan15")) out.push_back(f);
  // tests/golden/ltx2/ also holds component files with no parity kind (the RoPE tables, read by
  // tests/ltx2/test_rope.cpp): only the files that name a kind are parity goldens.
  for (const auto& f : golden_files_in(fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "ltx2"))
    if (io::Checkpoint::open(f).metadata().count("kind")) out.push_back(f);
  return out;
}
std::string stem(const std::string& p) { return fs::path(p).stem().string(); }

// The smallest committed golden of each kind (the pipeline's included): kind -> path.
std::map<std::string, std::string> smallest_golden_per_kind() {
  std::vector<std::string> files = golden_files();
  for (const auto& f : golden_files_in(fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "pipeline")) files.push_back(f);
  std::map<std::string, std::string> out;
  for (const auto& f : files) {
    const std::string kind = io::Checkpoint::open(f).metadata().at("kind");
    auto it = out.find(kind);
    if (it == out.end() || fs::file_size(f) < fs::file_size(it->second)) out[kind] = f;
  }
  return out;
}
std::vector<std::string> golden_kinds() {
  std::vector<std::string> out;
  for (const auto& [kind, _] : smallest_golden_per_kind()) out.push_back(kind);
  return out;
}

parity::Report run_golden(const std::string& path) {
  engine::register_builtin_kinds();
  return parity::run(path, parity::Options{});
}

// Rewrites a golden file with every `output*` tensor perturbed: floats by `delta` (relative and
// absolute, so a zero moves too), integers by one. Returns the copy's path; `victims` gets the
// names perturbed. A config's relative "weights" directory and "diffusion_model" file are made
// absolute (the copy lives elsewhere).
std::string perturbed_copy(const std::string& path, double delta, std::vector<std::string>* victims) {
  io::Checkpoint ck = io::Checkpoint::open(path);
  std::map<std::string, Tensor> t;
  for (const auto& n : ck.names()) t[n] = ck.get(n);
  for (auto& [n, v] : t) {
    if (n.rfind("output", 0) != 0) continue;
    std::vector<double> x = v.to_f64_vector();
    const bool is_float = dtype_is_float(v.dtype());
    for (auto& e : x) e = is_float ? e * (1 + delta) + delta : e + 1;
    v = Tensor::from_f64(x, v.shape(), v.dtype());
    victims->push_back(n);
  }
  auto meta = ck.metadata();
  nlohmann::json config = nlohmann::json::parse(meta.at("config"));
  for (const char* rel : {"weights", "diffusion_model"})  // paths beside the golden (the copy lives elsewhere)
    if (config.contains(rel) && config[rel].is_string()) {
      config[rel] = (fs::absolute(fs::path(path).parent_path()) / config[rel].get<std::string>()).string();
      meta["config"] = config.dump();
    }
  if (config.contains("loras") && config["loras"].is_array()) {  // LoRA files beside the golden (ltx2.pipeline.ic_lora)
    for (auto& l : config["loras"])
      if (l.contains("file") && l["file"].is_string())
        l["file"] = (fs::absolute(fs::path(path).parent_path()) / l["file"].get<std::string>()).string();
    meta["config"] = config.dump();
  }
  const std::string out = (fs::temp_directory_path() / ("vidax_perturbed_" + stem(path) + "_" + std::to_string(::getpid()) + ".safetensors")).string();
  io::save_safetensors(out, t, meta);
  return out;
}
}  // namespace

class GoldenFile : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenFile, PassesAtFp32) {
  parity::Report rep = run_golden(GetParam());
  for (const auto& c : rep.rows)
    EXPECT_NE(c.status, parity::Comparison::Status::Fail)
        << c.name << " rel_l2=" << c.rel_l2 << " max_abs=" << c.max_abs << " " << c.note;
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenFile, ::testing::ValuesIn(golden_files()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return vidax::test::gtest_name(stem(i.param));
                         });

// The negative control, for every kind: the same golden with its expected outputs moved by 5%
// (beyond the bf16 bound too) fails, on every output* row.
class PerturbedGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(PerturbedGolden, FailsOnEveryOutput) {
  const std::string file = smallest_golden_per_kind().at(GetParam());
  std::vector<std::string> victims;
  const std::string p = perturbed_copy(file, 0.05, &victims);
  ASSERT_FALSE(victims.empty()) << file << " has no output* tensor";
  parity::Report rep = run_golden(p);
  fs::remove(p);
  EXPECT_FALSE(rep.ok()) << file;
  std::map<std::string, parity::Comparison::Status> status;
  for (const auto& c : rep.rows) status[c.name] = c.status;
  for (const auto& v : victims) {
    ASSERT_TRUE(status.count(v)) << file << ": " << v << " was not compared";
    EXPECT_EQ(status.at(v), parity::Comparison::Status::Fail) << file << ": perturbed " << v << " passed";
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, PerturbedGolden, ::testing::ValuesIn(golden_kinds()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return vidax::test::gtest_name(i.param);
                         });

// The negative control above covers every kind only if every kind has a golden file.
TEST(Parity, EveryRegisteredKindHasAGolden) {
  engine::register_builtin_kinds();
  const std::vector<std::string> registered = parity::registered_kinds();
  ASSERT_FALSE(registered.empty());
  const auto goldens = smallest_golden_per_kind();
  for (const auto& k : registered) EXPECT_TRUE(goldens.count(k)) << "no committed golden file of kind " << k;
  for (const auto& [k, f] : goldens)
    EXPECT_NE(std::find(registered.begin(), registered.end(), k), registered.end()) << f << ": kind " << k;
}

// The parity core knows no kind by itself (it sits below every family): the error says so.
TEST(Parity, NoKindsBeforeTheyAreRegistered) {
  if (!parity::registered_kinds().empty()) GTEST_SKIP() << "another test registered the kinds first";
  const std::string p = (fs::temp_directory_path() / ("vidax_no_kinds_yet_" + std::to_string(::getpid()) + ".safetensors")).string();
  io::save_safetensors(p, {{"output", Tensor::from_f32({1}, {1})}}, {{"kind", "wan.dit"}});
  try {
    parity::run(p, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none registered"), std::string::npos) << e.what();
  }
  fs::remove(p);
}

TEST(Parity, CompareMeasures) {
  Tensor a = Tensor::from_f32({1, 2, 3, 4}, {4});
  Tensor b = Tensor::from_f32({1, 2, 3, 4.5f}, {4});
  parity::Comparison c = parity::compare("x", a, b, 1e-5);
  EXPECT_EQ(c.status, parity::Comparison::Status::Fail);
  EXPECT_DOUBLE_EQ(c.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(c.mean_abs, 0.125);
  EXPECT_NEAR(c.rel_l2, 0.5 / std::sqrt(30.0), 1e-12);
  EXPECT_EQ(parity::compare("x", a, a, 0).status, parity::Comparison::Status::Ok);
  EXPECT_EQ(parity::compare("x", a, Tensor::from_f32({1, 2}, {2}), 1).status, parity::Comparison::Status::Fail);
  Tensor n = Tensor::from_f32({1, 2, 3, NAN}, {4});
  EXPECT_EQ(parity::compare("x", a, n, 1).status, parity::Comparison::Status::Fail);
}

TEST(Parity, UnknownKindAndNotGoldenAreErrors) {
  const std::string p = (fs::temp_directory_path() / ("vidax_not_golden_" + std::to_string(::getpid()) + ".safetensors")).string();
  io::save_safetensors(p, {{"output", Tensor::from_f32({1}, {1})}}, {});
  engine::register_builtin_kinds();
  EXPECT_THROW(parity::run(p, {}), Error);
  io::save_safetensors(p, {{"output", Tensor::from_f32({1}, {1})}}, {{"kind", "no.such.kind"}});
  try {
    parity::run(p, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown golden kind 'no.such.kind'"), std::string::npos) << e.what();
  }
  fs::remove(p);
}

TEST(Parity, CliPrintsRowsAndExitStatus) {
  auto files = golden_files();
  ASSERT_FALSE(files.empty());
  vidax::test::cli::ChildOptions captured;
  captured.capture_stdout = true;
  const auto r = vidax::test::cli::run({"parity", files.front()}, captured);
  std::string out = r.all();
  EXPECT_EQ(r.code, 0) << out;
  EXPECT_NE(out.find("PASS "), std::string::npos) << out;
  EXPECT_NE(out.find(" rel_l2="), std::string::npos) << out;
  std::vector<std::string> victims;
  const std::string p = perturbed_copy(files.front(), 0.05, &victims);
  EXPECT_NE(vidax::test::cli::run({"parity", p}).code, 0);
  fs::remove(p);
}
