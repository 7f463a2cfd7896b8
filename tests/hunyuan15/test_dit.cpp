// The HunyuanVideo 1.5 DiT against the official HunyuanVideo_1_5_DiffusionTransformer and diffusers'
// HunyuanVideo15Transformer3DModel (tests/golden/hunyuan15/*.safetensors, tools/golden/hunyuan15_dit.py): output and every inter.*
// tensor at fp32 relative L2 <= 1e-5 (and max abs <= 1e-5), bf16 at its stated bound, and controls
// that must fail (a perturbed parameter, an unmasked padding token, other RoPE tables, the vision
// tokens' t2v rule) or must not change the output (what the masks hide), plus bad config / input errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "hunyuan/dit_test_support.h"
#include "io/checkpoint.h"
#include "models/hunyuan15/checkpoint_keys.h"
#include "models/hunyuan15/dit.h"
#include "models/hunyuan15/dit_parity.h"

using namespace vidax;
using namespace vidax::test::hunyuan_dit;
using hunyuan15::DiTConfig;
using hunyuan15::DiTInputs;
using hunyuan15::HunyuanVideo15DiT;
namespace fs = std::filesystem;

namespace {

fs::path golden_dir() { return fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan15"; }

std::vector<std::string> dit_files() { return golden_files(golden_dir(), "hunyuan1.5.dit"); }

class Hunyuan15DiTGolden : public testing::TestWithParam<Case> {};

using DiTLoaded = Loaded<DiTConfig, DiTInputs>;

DiTLoaded load(const std::string& name) {
  const std::string path = (golden_dir() / name).string();
  DiTLoaded l{io::Checkpoint::open(path), {}, {}, {}};
  const auto config = nlohmann::json::parse(l.file.metadata().at("config"));
  l.cfg = DiTConfig::from_json(config);
  l.params = hunyuan15::golden_params(l.file, config, path);
  l.in = hunyuan15::golden_inputs(l.file, path);
  return l;
}

Tensor run(const DiTLoaded& l, std::map<std::string, Tensor> params, const DiTInputs& in) {
  return HunyuanVideo15DiT::from_weights(l.cfg, std::move(params), DType::F32).forward(in);
}

}  // namespace

TEST_P(Hunyuan15DiTGolden, MatchesTheReference) {
  const Case& c = GetParam();
  const io::Checkpoint file = io::Checkpoint::open(c.file);
  const auto config = nlohmann::json::parse(file.metadata().at("config"));
  EXPECT_GE(expect_matches(file, hunyuan15::run_dit_golden(file, config, c.precision, c.file), c.precision,
                           /*fp32_max_abs=*/1e-5),
            6);
}

INSTANTIATE_TEST_SUITE_P(Files, Hunyuan15DiTGolden, testing::ValuesIn(all_cases(dit_files())), case_name);

TEST(Hunyuan15DiTGolden, AllGoldenFilesArePresent) {
  std::set<std::string> names;
  for (const auto& f : dit_files()) names.insert(fs::path(f).filename().string());
  for (const char* f : {"hy15_dit_i2v.safetensors", "hy15_dit_t2v.safetensors", "hy15_dit_guid.safetensors",
                        "hy15_dit_linear.safetensors", "hy15_dit_diffusers.safetensors",
                        "hy15_dit_hd128.safetensors"})
    EXPECT_TRUE(names.count(f)) << f;
}

// The controls: each must move the output far past the fp32 bound (so the golden test can fail).
TEST(Hunyuan15DiTControls, APerturbedParameterFails) {
  const DiTLoaded l = load("hy15_dit_i2v.safetensors");
  ASSERT_LE(output_error(l, run(l, l.params, l.in)), 1e-5);
  for (const char* name : {"single_blocks.1.linear2.weight", "double_blocks.0.txt_attn_qkv.weight",
                           "byt5_in.fc3.weight", "vision_in.proj.4.bias", "cond_type_embedding.weight",
                           "img_in.proj.weight"}) {
    auto p = l.params;
    std::vector<float> v = p.at(name).to_f32_vector();
    v[v.size() * 5 / 6] += 1.0f;  // in the v third of a fused qkv, the mask channels of img_in
    p[name] = Tensor::from_f32(v, p.at(name).shape());
    EXPECT_GT(output_error(l, run(l, p, l.in)), 1e-4) << name;
  }
}

TEST(Hunyuan15DiTControls, AnUnmaskedPaddingTokenFails) {
  const DiTLoaded l = load("hy15_dit_i2v.safetensors");
  for (const char* which : {"text", "glyph"}) {
    DiTInputs in = l.in;
    Tensor& mask = std::string(which) == "text" ? in.encoder_attention_mask : in.byt5_text_mask;
    std::vector<int64_t> m = ints(mask);
    const size_t pad = std::string(which) == "text" ? 5 : 3;  // sample 0: 5 of 8 text, 3 of 4 glyph tokens
    ASSERT_EQ(m[pad], 0);
    m[pad] = 1;
    mask = Tensor::from_i64(m, mask.shape());
    EXPECT_GT(output_error(l, run(l, l.params, in)), 1e-4) << which;
  }
}

TEST(Hunyuan15DiTControls, OtherRopeTablesFail) {
  const DiTLoaded l = load("hy15_dit_i2v.safetensors");
  DiTInputs in = l.in;
  std::swap(in.freqs_cos, in.freqs_sin);
  EXPECT_GT(output_error(l, run(l, l.params, in)), 1e-4);
  // Without tables the forward computes get_nd_rotary_pos_embed's own: the golden's output again.
  in.freqs_cos = in.freqs_sin = Tensor();
  EXPECT_LE(output_error(l, run(l, l.params, in)), 1e-5);
}

// T2V: all-zero vision states with mask_type t2v are padding; with mask_type i2v they are tokens.
TEST(Hunyuan15DiTControls, ZeroVisionStatesAreTokensOnlyForI2V) {
  const DiTLoaded l = load("hy15_dit_t2v.safetensors");
  DiTInputs in = l.in;
  in.mask_type = "i2v";
  EXPECT_GT(output_error(l, run(l, l.params, in)), 1e-4);
  in = l.in;
  in.vision_states = Tensor();  // no vision tokens at all: the same valid tokens
  EXPECT_LE(output_error(l, run(l, l.params, in)), 1e-5);
}

// What the masks hide cannot matter: new values in the padded text and glyph rows leave the output.
TEST(Hunyuan15DiTControls, PaddedRowsDoNotReachTheOutput) {
  for (const char* f : {"hy15_dit_i2v.safetensors", "hy15_dit_t2v.safetensors"}) {
    const DiTLoaded l = load(f);
    DiTInputs in = l.in;
    auto scramble = [](Tensor& states, const Tensor& mask) {
      std::vector<float> ts = states.to_f32_vector();
      const std::vector<double> m = mask.to_f64_vector();
      const int64_t D = states.size(2);
      for (size_t r = 0; r < m.size(); ++r)
        if (m[r] == 0 && r % static_cast<size_t>(mask.size(1)) != 0)  // token 0 the refiner always sees
          for (int64_t j = 0; j < D; ++j) ts[r * D + static_cast<size_t>(j)] = 7.0f - 0.3f * static_cast<float>(j % 11);
      states = Tensor::from_f32(ts, states.shape());
    };
    scramble(in.text_states, in.encoder_attention_mask);
    scramble(in.byt5_text_states, in.byt5_text_mask);
    const Tensor base = run(l, l.params, l.in), moved = run(l, l.params, in);
    EXPECT_EQ(base.to_f32_vector(), moved.to_f32_vector()) << f;
  }
}

// The official names: every split projection the key map fuses is one the official class has.
TEST(Hunyuan15DiT, OfficialKeysAreTheGoldensNames) {
  const io::Checkpoint file = io::Checkpoint::open((golden_dir() / "hy15_dit_i2v.safetensors").string());
  const auto desc = nlohmann::json::parse(file.metadata().at("synthetic_params"))["tensors"];
  for (const char* k : {"double_blocks.0.img_attn_q.weight", "double_blocks.1.txt_attn_v.bias",
                        "single_blocks.0.linear1_mlp.weight", "single_blocks.1.linear2.fc.weight",
                        "byt5_in.fc1.weight", "vision_in.proj.0.weight", "cond_type_embedding.weight"})
    EXPECT_TRUE(desc.contains(k)) << k;
  const auto cfg = DiTConfig::from_json(nlohmann::json::parse(file.metadata().at("config")));
  EXPECT_EQ(hunyuan15::dit_params(cfg).parameter_count(), [&] {
    int64_t n = 0;
    for (const auto& [name, d] : desc.items()) {
      int64_t c = 1;
      for (int64_t s : d["shape"].get<std::vector<int64_t>>()) c *= s;
      n += c;
    }
    return n;
  }());
}

TEST(Hunyuan15DiT, RefusesInputsThatDoNotFit) {
  const DiTLoaded l = load("hy15_dit_i2v.safetensors");
  const auto model = HunyuanVideo15DiT::from_weights(l.cfg, l.params, DType::F32);
  auto fails_with = [&](const DiTInputs& in, const std::string& what) {
    expect_error([&] { model.forward(in); }, what);
  };
  DiTInputs in = l.in;
  in.byt5_text_states = Tensor();
  fails_with(in, "needs byt5_text_states");
  in = l.in;
  in.hidden_states = Tensor::zeros({2, 4, 3, 4, 4}, DType::F32);
  fails_with(in, "has 4 channels, the model takes 9");
  in = l.in;
  in.hidden_states = Tensor::zeros({2, 9, 3, 4, 5}, DType::F32);
  fails_with(in, "width 5 is not a multiple of the patch size 2");
  in = l.in;
  in.encoder_attention_mask = Tensor::zeros(l.in.encoder_attention_mask.shape(), DType::I64);
  fails_with(in, "encoder_attention_mask row 0 has no token");
  in = l.in;
  in.byt5_text_mask = Tensor::full({2, 4}, 2.0, DType::F32);
  fails_with(in, "byt5_text_mask values must be 0 or 1");
  in = l.in;
  in.mask_type = "v2v";
  fails_with(in, "mask_type 'v2v'");
  in = l.in;
  in.guidance = {6016.0, 6016.0};
  fails_with(in, "without guidance_in");
  in = l.in;
  in.timestep_r = {1.0, 2.0};
  fails_with(in, "without time_r_in");
  in = l.in;
  in.text_states_2 = Tensor::zeros({2, 12}, DType::F32);
  fails_with(in, "without vector_in");
  in = l.in;
  in.vision_states = Tensor::zeros({2, 3, 25}, DType::F32);
  fails_with(in, "vision_states must be [2, Lv, 24]");
  in = l.in;
  in.freqs_sin = Tensor();
  fails_with(in, "freqs_cos and freqs_sin come together");
  in = l.in;
  in.timestep = {1.0};
  fails_with(in, "1 timestep values for a batch of 2");
}

TEST(Hunyuan15DiT, RefusesBadConfigs) {
  auto fails_with = [](const nlohmann::json& j, const std::string& what) {
    expect_error([&] { DiTConfig::from_json(j); }, what);
  };
  const nlohmann::json ok = DiTConfig::published().to_json();
  EXPECT_EQ(DiTConfig::from_json(ok), DiTConfig::published());
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = ok;
    j[key] = std::move(v);
    return j;
  };
  fails_with(with("attn_mode", "flex-block-attn"), "flex-block-attn");
  fails_with(with("heads_num", 15), "must be divisible by heads_num 15");
  fails_with(with("vision_projection", "mlp"), "vision_projection 'mlp'");
  fails_with(with("glyph_byT5_v2", false), "use_cond_type_embedding needs glyph_byT5_v2");
  fails_with(with("glyph_byT5_v2", 1), "'glyph_byT5_v2' must be true or false");
  fails_with(nlohmann::json{{"_class_name", "HunyuanVideo15Transformer3DModel"}, {"text_embed_2_dim", 1024}},
             "text_embed_2_dim 1024");
  fails_with(nlohmann::json{{"foo", 1}}, "not a HunyuanVideo 1.5 DiT config");
  // diffusers' defaults are the published model (65 embedded channels = 2 * 32 + 1).
  const DiTConfig d = DiTConfig::from_json({{"_class_name", "HunyuanVideo15Transformer3DModel"}});
  EXPECT_EQ(d.embed_channels(), 65);
  EXPECT_EQ(d.hidden_size, 2048);
  EXPECT_EQ(d.mm_double_blocks_depth, 54);
  EXPECT_EQ(hunyuan15::dit_params(d).parameter_count(), hunyuan15::dit_params(DiTConfig::published()).parameter_count());
}

// The published 8.3B transformer: diffusers' HunyuanVideo15Transformer3DModel() with its defaults
// (the published config) has 1,801 tensors and 8,326,608,160 parameters on the meta device.
TEST(Hunyuan15DiT, PublishedSizeIsTheReferences) {
  EXPECT_EQ(hunyuan15::dit_params(DiTConfig::published()).parameter_count(), 8326608160LL);
}
