// Runs every tests/golden/wan_dit_*.safetensors through the wan.dit runner and
// compares output and every inter.* tensor: fp32 relative L2 <= 1e-5, bf16 <= 1e-2
// (DESIGN.md par. 4).
#include <gtest/gtest.h>

#include <cstdio>

#include "io/checkpoint.h"
#include "models/wan/dit_parity.h"
#include "test_names.h"
#include "wan_dit/helpers.h"

using namespace vidax;

namespace {

struct Case {
  std::string file;
  std::string precision;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.file << " (" << c.precision << ")"; }

std::string case_name(const testing::TestParamInfo<Case>& info) {
  return vidax::test::gtest_name(std::filesystem::path(info.param.file).stem().string()) + "_" + info.param.precision;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const std::string& f : wan_dit_test::golden_files())
    for (const char* p : {"fp32", "bf16"}) cases.push_back({f, p});
  return cases;
}

class WanDiTGolden : public testing::TestWithParam<Case> {};

}  // namespace

TEST_P(WanDiTGolden, MatchesTheReference) {
  const Case& c = GetParam();
  const io::Checkpoint file = io::Checkpoint::open(c.file);
  ASSERT_EQ(file.metadata().at("kind"), "wan.dit");
  const auto config = nlohmann::json::parse(file.metadata().at("config"));
  const std::map<std::string, Tensor> produced = wan::run_dit_golden(file, config, c.precision, c.file);
  const double rtol = c.precision == "fp32" ? 1e-5 : 1e-2;
  int compared = 0;
  for (const std::string& name : file.names()) {
    const bool is_output = name.rfind("output", 0) == 0, is_inter = name.rfind("inter.", 0) == 0;
    if (!is_output && !is_inter) continue;
    auto it = produced.find(name);
    if (it == produced.end()) {
      EXPECT_FALSE(is_output) << name << " must be produced";
      std::printf("  %-40s SKIP\n", name.c_str());
      continue;
    }
    const Tensor expected = file.get(name);
    ASSERT_EQ(expected.shape(), it->second.shape()) << name;
    const wan_dit_test::Diff d = wan_dit_test::diff(expected, it->second);
    std::printf("  %-40s max_abs=%.3g rel_l2=%.3g %s\n", name.c_str(), d.max_abs, d.rel_l2,
                d.rel_l2 <= rtol ? "OK" : "FAIL");
    EXPECT_LE(d.rel_l2, rtol) << name << " (" << c.precision << ") max_abs " << d.max_abs;
    ++compared;
  }
  EXPECT_GE(compared, 2) << "a golden file must hold output and at least one inter.* tensor";
}

INSTANTIATE_TEST_SUITE_P(Files, WanDiTGolden, testing::ValuesIn(all_cases()), case_name);

// Deleting or renaming a golden file must not silently drop its check.
TEST(WanDiTGolden, AllGoldenFilesArePresent) {
  std::set<std::string> names;
  for (const std::string& f : wan_dit_test::golden_files()) names.insert(std::filesystem::path(f).filename());
  for (const char* f : {"wan_dit_tiny.safetensors", "wan_dit_tiny_b2.safetensors", "wan_dit_diffusers_tiny.safetensors",
                        "wan_dit_i2v_tiny.safetensors", "wan_dit_flf2v_tiny.safetensors",
                        "wan_dit_block1536.safetensors", "wan_dit_vace_tiny.safetensors", "wan_dit_vace_default_b2.safetensors",
                        "wan_dit_vace_diffusers_tiny.safetensors"})
    EXPECT_TRUE(names.count(f)) << f;
}
