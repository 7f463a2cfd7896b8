// HunyuanVideo 1.5 text-to-video (src/models/hunyuan15/t2v.h) against the official
// HunyuanVideo_1_5_Pipeline.__call__ (tests/golden/hunyuan15/hy15_pipeline_t2v*.safetensors,
// tools/golden/hunyuan15_pipeline.py) through the kind hunyuan1.5.pipeline.t2v: the whole run (the
// denoise loop and the decode) at guidance 1 and 6, the negative controls (another seed, a perturbed
// prompt / glyph / negative-prompt embedding each move the result far past the bound), and the
// request checks (frames not 4k+1, a size not a multiple of 16, steps < 1) naming the nearest valid values.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/hunyuan15/checkpoint_keys.h"
#include "models/hunyuan15/pipeline_parity.h"
#include "models/hunyuan15/t2v.h"
#include "parity/parity.h"
#include "test_diff.h"

namespace vidax::hunyuan15 {
namespace {

namespace fs = std::filesystem;

std::string golden_path(const std::string& name) {
  return (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan15" / name).string();
}
const std::string kPlain = golden_path("hy15_pipeline_t2v.safetensors");
const std::string kCfg = golden_path("hy15_pipeline_t2v_cfg.safetensors");

// The contract's fp32 bound, max abs, on every compared tensor.
constexpr double kBound = 1e-5;

parity::Golden open_golden(const std::string& path) {
  auto ck = io::Checkpoint::open(path);
  const auto& meta = ck.metadata();
  return parity::Golden{path, ck, meta.at("kind"), nlohmann::json::parse(meta.at("config"))};
}

parity::Golden with_config(const parity::Golden& g, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json c = g.config;
  edit(c);
  return parity::Golden{g.path, g.file, g.kind, c};
}

// The golden's tensors edited by `edit`, written to a scratch file `tag`.safetensors.
parity::Golden rewritten(const std::string& path, const std::string& tag,
                         const std::function<void(std::map<std::string, Tensor>&)>& edit) {
  const io::Checkpoint ck = io::Checkpoint::open(path);
  std::map<std::string, Tensor> tensors;
  for (const std::string& n : ck.names()) tensors[n] = ck.get(n);
  edit(tensors);
  const fs::path dir = fs::temp_directory_path() / ("vidax_test_hy15t2v_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / (tag + ".safetensors")).string();
  io::save_safetensors(out, tensors, ck.metadata());
  return open_golden(out);
}

// The golden with `count` values of tensor `name` (from flat index `at`) moved by `delta`.
parity::Golden perturbed(const std::string& path, const std::string& name, size_t at, float delta, size_t count = 1) {
  return rewritten(path, name, [&](std::map<std::string, Tensor>& tensors) {
    std::vector<float> v = tensors.at(name).to_f32_vector();
    for (size_t i = at; i < at + count; ++i) v.at(i) += delta;
    tensors[name] = Tensor::from_f32(v, tensors.at(name).shape());
  });
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double latents_error(const parity::Golden& reference, const parity::Produced& out) {
  const double e = test::diff(reference.file.get("output.latents"), out.at("output.latents")).max_abs;
  std::printf("  latents max_abs vs %s: %.3g\n", fs::path(reference.path).filename().c_str(), e);
  return e;
}

TEST(Hunyuan15T2V, MatchesTheOfficialPipeline) {
  for (const std::string& path : {kPlain, kCfg}) {
    const parity::Golden g = open_golden(path);
    ASSERT_EQ(g.kind, "hunyuan1.5.pipeline.t2v");
    const parity::Produced out = run_t2v_golden(g, parity::Options{});
    // The noise and the schedule are exact: the same generator stream, the official scheduler's float32 math.
    EXPECT_EQ(test::diff(g.file.get("inter.noise"), out.at("inter.noise")).max_abs, 0.0) << path;
    EXPECT_EQ(test::diff(g.file.get("inter.timesteps"), out.at("inter.timesteps")).max_abs, 0.0) << path;
    for (const char* name : {"inter.latents_step0", "inter.latents_last", "output.latents", "output.video"}) {
      const test::Diff d = test::diff(g.file.get(name), out.at(name));
      std::printf("  %s %s: max_abs %.3g rel_l2 %.3g\n", fs::path(path).filename().c_str(), name, d.max_abs, d.rel_l2);
      EXPECT_LE(d.max_abs, kBound) << path << " " << name;
    }
  }
}

TEST(Hunyuan15T2V, GuidanceUsesTheNegativePrompt) {
  const parity::Golden g = open_golden(kCfg);
  ASSERT_EQ(g.config.at("guidance").get<double>(), 6.0);
  const parity::Produced out = run_t2v_golden(g, parity::Options{});
  // The CFG-free golden's latents (same seed, same prompt) are far away.
  EXPECT_GT(latents_error(open_golden(kPlain), out), 1e-2);
  // A guided request without the negative embeddings is refused, not run on the prompt's.
  const parity::Golden bad = with_config(g, [](nlohmann::json& c) { c["negative_prompt"] = ""; });
  EXPECT_NE(error_of([&] { (void)run_t2v_golden(bad, parity::Options{}); }).find("needs a negative_prompt"),
            std::string::npos);
}

// The negative controls: each must move the latents far past the bound (so the golden test can fail).
TEST(Hunyuan15T2V, PerturbedInputsFail) {
  const parity::Golden g = open_golden(kPlain);
  const parity::Golden other_seed = with_config(g, [](nlohmann::json& c) { c["seed"] = 43; });
  EXPECT_GT(latents_error(g, run_t2v_golden(other_seed, parity::Options{})), 1e-2);
  // A valid Qwen token (row 0: one value) and a valid glyph token (row 0, the first 3 of 4 are
  // valid: 64 of its 1472 values; one alone moves the latents by 6.7e-5, the mapper's LayerNorm
  // spreads it).
  EXPECT_GT(latents_error(g, run_t2v_golden(perturbed(kPlain, "input.text_states", 3, 1.0f), parity::Options{})),
            1e-4);
  EXPECT_GT(
      latents_error(g, run_t2v_golden(perturbed(kPlain, "input.byt5_text_states", 0, 1.0f, 64), parity::Options{})),
      1e-4);
  // The negative prompt's embedding reaches the guided result.
  const parity::Golden cfg = open_golden(kCfg);
  const parity::Golden p = perturbed(kCfg, "input.negative_text_states", 3, 1.0f);
  EXPECT_GT(latents_error(cfg, run_t2v_golden(p, parity::Options{})), 1e-4);
  // The decode's tile is read: without "vae_tiling" the VAE constructor's (64 px, 0.25) decodes the
  // 2 x 3 latent whole, not in the golden's blended tiles of 32 px.
  const parity::Golden untiled = with_config(g, [](nlohmann::json& c) { c.erase("vae_tiling"); });
  const double tile_error =
      test::diff(g.file.get("output.video"), run_t2v_golden(untiled, parity::Options{}).at("output.video")).max_abs;
  std::printf("  video max_abs untiled vs the golden's tiles: %.3g\n", tile_error);
  EXPECT_GT(tile_error, 1e-3);
  // A padded Qwen token (row 7, mask 0) changes nothing beyond rounding.
  const parity::Golden pad = perturbed(kPlain, "input.text_states", 7 * 16 + 2, 1.0f);
  EXPECT_LE(latents_error(g, run_t2v_golden(pad, parity::Options{})), kBound);
}

TEST(Hunyuan15T2V, RefusesRequestsTheVaeCannotTake) {
  const parity::Golden g = open_golden(kPlain);
  auto run_with = [&](const char* field, int64_t value) {
    return error_of([&] {
      (void)run_t2v_golden(with_config(g, [&](nlohmann::json& c) { c[field] = value; }), parity::Options{});
    });
  };
  const std::string frames = run_with("frames", 8);
  EXPECT_NE(frames.find("--frames 8"), std::string::npos) << frames;
  EXPECT_NE(frames.find("4k+1"), std::string::npos) << frames;
  EXPECT_NE(frames.find("5 or 9"), std::string::npos) << frames;
  const std::string height = run_with("height", 40);
  EXPECT_NE(height.find("--height 40"), std::string::npos) << height;
  EXPECT_NE(height.find("32 or 48"), std::string::npos) << height;
  const std::string width = run_with("width", 8);
  EXPECT_NE(width.find("--width 8"), std::string::npos) << width;
  EXPECT_NE(width.find("nearest: 16"), std::string::npos) << width;
  const std::string steps = run_with("steps", 0);
  EXPECT_NE(steps.find("--steps 0: must be 1..1000"), std::string::npos) << steps;
}

// The pipeline's own spellings: __call__'s argument names in the config (guidance_scale, flow_shift,
// video_length, num_inference_steps; no sampler: flow_match_euler) and its variable names for the
// prompt's tensors (prompt_embeds, prompt_mask) give the same run; a guidance below 1 runs as 1
// (do_classifier_free_guidance is guidance_scale > 1), with no negative prompt needed.
TEST(Hunyuan15T2V, TakesThePipelinesSpellings) {
  const parity::Golden g = open_golden(kCfg);
  const parity::Produced base = run_t2v_golden(g, parity::Options{});
  const parity::Golden renamed = rewritten(kCfg, "renamed", [](std::map<std::string, Tensor>& t) {
    for (const char* p : {"", "negative_"}) {
      t["input." + std::string(p) + "prompt_embeds"] = t.at("input." + std::string(p) + "text_states");
      t["input." + std::string(p) + "prompt_mask"] = t.at("input." + std::string(p) + "text_mask");
      t.erase("input." + std::string(p) + "text_states");
      t.erase("input." + std::string(p) + "text_mask");
    }
  });
  const parity::Golden aliased = with_config(renamed, [](nlohmann::json& c) {
    for (const auto& [ours, theirs] : {std::pair<const char*, const char*>{"guidance", "guidance_scale"},
                                       {"shift", "flow_shift"}, {"frames", "video_length"},
                                       {"steps", "num_inference_steps"}}) {
      c[theirs] = c.at(ours);
      c.erase(ours);
    }
    c.erase("sampler");
  });
  const parity::Produced out = run_t2v_golden(aliased, parity::Options{});
  for (const char* name : {"output.latents", "output.video"})
    EXPECT_EQ(test::diff(base.at(name), out.at(name)).max_abs, 0.0) << name;
  const parity::Golden plain = open_golden(kPlain);
  const parity::Golden low = with_config(plain, [](nlohmann::json& c) { c["guidance"] = 0.5; });
  EXPECT_LE(latents_error(plain, run_t2v_golden(low, parity::Options{})), kBound);
}

// A DiT / VAE of the golden's configs with zero parameters (only the checks run).
std::shared_ptr<const HunyuanVideo15DiT> zero_dit(const DiTConfig& cfg) {
  std::map<std::string, Tensor> m;
  for (const auto& p : dit_params(cfg).params) m[p.name] = Tensor::zeros(p.shape, DType::F32);
  nn::ParamSource src = nn::ParamSource::from_map(std::move(m), "zeros");
  return std::make_shared<const HunyuanVideo15DiT>(cfg, src, DType::F32);
}
std::shared_ptr<const HunyuanVideo15VAE> zero_vae(const VAEConfig& cfg) {
  const VAEParts parts{.encoder = false, .decoder = true};
  std::map<std::string, Tensor> m;
  for (const auto& [name, shape] : HunyuanVideo15VAE::parameter_shapes(cfg, parts))
    m[name] = Tensor::zeros(shape, DType::F32);
  nn::ParamSource src = nn::ParamSource::from_map(std::move(m), "zeros");
  return std::make_shared<const HunyuanVideo15VAE>(cfg, src, parts, DType::F32);
}
class NoPrompt final : public PromptEncoder {
 public:
  PromptEmbeds encode(const std::string&) override { return {}; }
};

TEST(Hunyuan15T2V, RefusesDiTsTheLoopDoesNotBuild) {
  const parity::Golden g = open_golden(kPlain);
  nlohmann::json dj = g.config.at("dit");
  dj["glyph_byT5_v2"] = false;  // small: no 1472-wide mapper (and so no condition types)
  dj["use_cond_type_embedding"] = false;
  const VAEConfig vc = VAEConfig::from_json(g.config.at("vae"));
  auto vae = zero_vae(vc);
  auto enc = std::make_shared<NoPrompt>();
  auto refusal = [&](const char* field, const nlohmann::json& value) {
    nlohmann::json j = dj;
    j[field] = value;
    return error_of([&] { (void)make_t2v_parts(zero_dit(DiTConfig::from_json(j)), vae, enc); });
  };
  EXPECT_EQ(refusal("qkv_bias", true), "");  // the golden's own config builds
  EXPECT_NE(refusal("guidance_embed", true).find("guidance_embed must be false"), std::string::npos);
  EXPECT_EQ(refusal("use_meanflow", true), "");  // built: timestep_r is the next timestep (test_i2v.cpp's golden)
  EXPECT_NE(refusal("is_reshape_temporal_channels", true).find("is_reshape_temporal_channels"), std::string::npos);
  const std::string channels = refusal("in_channels", 8);
  EXPECT_NE(channels.find("in_channels 8"), std::string::npos) << channels;
  EXPECT_NE(channels.find("latent_channels 4"), std::string::npos) << channels;
  // An encoder whose embeddings do not fit the DiT is named at encode time.
  const pipeline::Parts parts = make_t2v_parts(zero_dit(DiTConfig::from_json(dj)), vae, enc);
  EXPECT_NE(error_of([&] { (void)parts.encode_prompt("x"); }).find("text_states missing, expected [L, 16]"),
            std::string::npos);
}

TEST(Hunyuan15T2V, ParityKindIsRegistered) {
  engine::register_builtins();
  for (const std::string& path : {kPlain, kCfg}) {
    const parity::Report rep = parity::run(path, parity::Options{});  // fp32
    EXPECT_TRUE(rep.ok()) << path;
    // output.latents, output.video, inter.noise, inter.timesteps, inter.latents_step0, inter.latents_last
    EXPECT_EQ(rep.compared, 6) << path;
  }
}

}  // namespace
}  // namespace vidax::hunyuan15
