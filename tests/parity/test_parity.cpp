// Every committed golden file passes `vidax parity` (fp32 bounds), and the
// parity machinery itself fails when it should.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
#include "parity/parity.h"
#include "test_names.h"

namespace fs = std::filesystem;
using namespace vidax;

namespace {
std::vector<std::string> golden_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(fs::path(VIDAX_TEST_DATA_DIR) / "golden"))
    if (e.path().extension() == ".safetensors") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}
std::string stem(const std::string& p) { return fs::path(p).stem().string(); }

// Rewrites a golden file with `output*` tensor `victim` perturbed by `delta` (relative).
std::string perturbed_copy(const std::string& path, double delta, std::string* victim) {
  io::Checkpoint ck = io::Checkpoint::open(path);
  std::map<std::string, Tensor> t;
  for (const auto& n : ck.names()) t[n] = ck.get(n);
  for (auto& [n, v] : t) {
    if (n.rfind("output", 0) != 0) continue;
    std::vector<float> x = v.to_f32_vector();
    for (auto& e : x) e = static_cast<float>(e * (1 + delta) + delta);
    v = Tensor::from_f32(x, v.shape(), v.dtype());
    *victim = n;
    break;
  }
  const std::string out = (fs::temp_directory_path() / ("vidax_perturbed_" + stem(path) + ".safetensors")).string();
  io::save_safetensors(out, t, ck.metadata());
  return out;
}
}  // namespace

class GoldenFile : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenFile, PassesAtFp32) {
  parity::Report rep = parity::run(GetParam(), parity::Options{});
  for (const auto& c : rep.rows)
    EXPECT_NE(c.status, parity::Comparison::Status::Fail)
        << c.name << " rel_l2=" << c.rel_l2 << " max_abs=" << c.max_abs << " " << c.note;
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenFile, ::testing::ValuesIn(golden_files()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return vidax::test::gtest_name(stem(i.param));
                         });

TEST(Parity, PerturbedOutputFails) {
  auto files = golden_files();
  ASSERT_FALSE(files.empty());
  std::string victim;
  const std::string p = perturbed_copy(files.front(), 1e-3, &victim);
  parity::Report rep = parity::run(p, parity::Options{});
  EXPECT_FALSE(rep.ok());
  bool saw = false;
  for (const auto& c : rep.rows)
    if (c.name == victim) {
      saw = true;
      EXPECT_EQ(c.status, parity::Comparison::Status::Fail);
    }
  EXPECT_TRUE(saw) << victim;
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
  const std::string p = (fs::temp_directory_path() / "vidax_not_golden.safetensors").string();
  io::save_safetensors(p, {{"output", Tensor::from_f32({1}, {1})}}, {});
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
  const std::string bin = std::string(VIDAX_BINARY_DIR) + "/bin/vidax";
  const std::string cmd = bin + " parity " + files.front() + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  int rc = pclose(f);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("PASS "), std::string::npos) << out;
  EXPECT_NE(out.find(" rel_l2="), std::string::npos) << out;
  std::string victim;
  const std::string p = perturbed_copy(files.front(), 1e-3, &victim);
  rc = system((bin + " parity " + p + " >/dev/null 2>&1").c_str());
  EXPECT_NE(rc, 0);
  fs::remove(p);
}
