// nn::synthetic_from_description: the tensors a golden file's __metadata__.synthetic_params
// describes are synthetic_uniform's, and a description the engine cannot regenerate is refused.
#include <gtest/gtest.h>

#include "nn/synthetic_init.h"

using namespace vidax;

TEST(SyntheticDescription, RegeneratesEachTensor) {
  const auto t = nn::synthetic_from_description(
      R"({"generator": "splitmix64_uniform_v1", "seed": 7, "tensors": {"a.weight": {"shape": [3, 2], "bound": 0.5},
          "a.norm.weight": {"shape": [4], "bound": 0.2, "offset": 1.0}}})",
      "file");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.at("a.weight").to_f32_vector(), nn::synthetic_uniform(7, "a.weight", {3, 2}, 0.5).to_f32_vector());
  EXPECT_EQ(t.at("a.norm.weight").to_f32_vector(),
            nn::synthetic_uniform(7, "a.norm.weight", {4}, 0.2, 1.0).to_f32_vector());
}

TEST(SyntheticDescription, RefusesWhatItCannotRegenerate) {
  for (const char* bad : {"{not json", R"({"generator": "other", "seed": 1, "tensors": {}})", R"({"seed": 1})"}) {
    try {
      nn::synthetic_from_description(bad, "g.safetensors");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("g.safetensors: __metadata__.synthetic_params"), std::string::npos)
          << e.what();
    }
  }
}
