// The demo checkpoint's names and shapes equal the reference modules' state_dict
// at the same init args (key lists made by tools/golden/demo_keylists.py).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "models/wan/param_shapes.h"
#include "models/wan/presets.h"

using namespace vidax;
using namespace vidax::wan;

namespace {

// "name<TAB>dtype<TAB>[d0,d1,...]" lines after '#' comments, in state_dict order.
ParamShapes read_key_list(const std::string& file) {
  std::ifstream is(std::string(VIDAX_TEST_DATA_DIR) + "/wan/data/" + file);
  EXPECT_TRUE(is.is_open()) << file;
  ParamShapes out;
  std::string line;
  while (std::getline(is, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name, dtype, shape;
    std::getline(ls, name, '\t');
    std::getline(ls, dtype, '\t');
    std::getline(ls, shape);
    Shape s;
    std::string inner = shape.substr(1, shape.size() - 2);
    std::istringstream ss(inner);
    std::string d;
    while (std::getline(ss, d, ',')) s.push_back(std::stoll(d));
    out.push_back({name, s});
  }
  return out;
}

// Same names (no duplicates) with the same shapes; order is irrelevant in a checkpoint.
void expect_same(const ParamShapes& got, const ParamShapes& want) {
  std::map<std::string, std::string> g, w;
  for (auto& [n, s] : got) EXPECT_TRUE(g.emplace(n, shape_str(s)).second) << "duplicate " << n;
  for (auto& [n, s] : want) w.emplace(n, shape_str(s));
  EXPECT_EQ(g.size(), got.size());
  EXPECT_EQ(g, w);
}

}  // namespace

TEST(DemoParamShapes, DiTMatchesReferenceStateDict) {
  expect_same(wan_dit_param_shapes(preset(kTinyDemoModel).dit), read_key_list("demo_dit.txt"));
}

TEST(DemoParamShapes, VaeMatchesReferenceStateDict) {
  expect_same(wan_vae_param_shapes(preset(kTinyDemoModel).vae), read_key_list("demo_vae.txt"));
}

TEST(DemoParamShapes, Umt5MatchesReferenceStateDict) {
  nlohmann::json t5 = preset(kTinyDemoModel).t5;
  t5["vocab"] = 1000;  // the key list's vocabulary
  expect_same(umt5_param_shapes(t5), read_key_list("demo_t5.txt"));
}

TEST(DemoParamShapes, FullSizeDiTCountsMatchThePublishedModel) {
  // 1.3B: 825 tensors (translate's key list); parameters ~1.419e9 (reference page).
  auto p = wan_dit_param_shapes(preset("wan2.1-t2v-1.3b").dit);
  int64_t n = 0;
  for (auto& [name, s] : p) n += shape_numel(s);
  EXPECT_EQ(p.size(), 825u);
  EXPECT_NEAR(static_cast<double>(n), 1.419e9, 0.001e9);
}
