// Wan 2.2 in the diffusers layout: a TI2V-5B folder (WanPipeline: transformer/, vae/ the Wan 2.2 VAE
// as AutoencoderKLWan with is_residual, text_encoder/, tokenizer/) and an I2V-A14B folder
// (WanImageToVideoPipeline: transformer/ = the high-noise expert, transformer_2/ = the low-noise
// one, boundary_ratio in model_index.json), each written from the tiny golden's original-layout
// weights under diffusers' names and configs, give the official generate's golden results.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
#include "io/video.h"
#include "models/wan/checkpoint_keys.h"
#include "models/wan/t2v_load.h"
#include "pipeline/generate.h"
#include "pipeline/scratch.h"
#include "diffusers_fixture.h"
#include "test_diff.h"
#include "text/umt5_keys.h"
#include "translate/keymap.h"

namespace fs = std::filesystem;
using namespace vidax;
using nlohmann::json;

using namespace vidax::test::wan_diffusers;

namespace {

const std::string kPipelines = std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/";


json vidax_model(const std::string& g) {
  std::ifstream f(g + "/vidax_model.json");
  return json::parse(f);
}

// The TI2V tiny golden's folder in the diffusers layout.
fs::path write_ti2v_diffusers(const std::string& name) {
  const std::string g = kPipelines + "wan22_ti2v_tiny";
  const json m = vidax_model(g);
  const fs::path d = vidax::test::scratch_dir(name);
  namespace tw = translate::wan;
  write_renamed(g + "/diffusion_pytorch_model.safetensors", tw::dit_keymap("diffusers"),
                d / "transformer/diffusion_pytorch_model.safetensors");
  write_json(d / "transformer/config.json", transformer_config(m["dit"]));
  const json& vae = m["vae"];
  write_renamed(g + "/Wan2.2_VAE.safetensors",
                tw::vae22_keymap("diffusers", vae["dim_mult"].size(), vae["num_res_blocks"].get<int64_t>()),
                d / "vae/diffusion_pytorch_model.safetensors");
  write_json(d / "vae/config.json", {{"_class_name", "AutoencoderKLWan"},
                                     {"base_dim", vae["dim"]},
                                     {"decoder_base_dim", vae["dec_dim"]},
                                     {"z_dim", vae["z_dim"]},
                                     {"dim_mult", vae["dim_mult"]},
                                     {"num_res_blocks", vae["num_res_blocks"]},
                                     {"attn_scales", vae["attn_scales"]},
                                     {"temperal_downsample", vae["temperal_downsample"]},
                                     {"dropout", 0.0},
                                     {"is_residual", true},
                                     {"in_channels", 12},
                                     {"out_channels", 12},
                                     {"patch_size", 2},
                                     {"scale_factor_spatial", 16},
                                     {"scale_factor_temporal", 4}});
  write_text_encoder(d, g, m["t5"]);
  write_json(d / "model_index.json", {{"_class_name", "WanPipeline"}, {"expand_timesteps", true}});
  return d;
}

}  // namespace

// The official Wan2.2 WanTI2V.generate (text-to-video branch) golden, from the diffusers folder.
TEST(Wan22Diffusers, TI2VFolderGivesTheOfficialResults) {
  const fs::path d = write_ti2v_diffusers("wan22_ti2v_diffusers");
  pipeline::LoadOptions lo;
  lo.weights_dir = d.string();
  lo.model = "wan2.2-ti2v-tiny-demo";
  lo.precision = "fp32";
  wan::LoadedT2V m = wan::load_t2v(lo);
  EXPECT_EQ(m.files.layout, "diffusers");
  EXPECT_EQ(m.parts.geometry.z_dim, 48);
  io::Checkpoint g = io::Checkpoint::open(kPipelines + "wan22_ti2v_tiny.safetensors");
  const json cfg = json::parse(g.metadata().at("config"));
  const pipeline::Request r = pipeline::request_from_json(cfg, m.preset.variant.defaults.negative_prompt);
  pipeline::Result res = pipeline::run_generation(m.parts, r);
  const double e_lat = vidax::test::rel_l2(g.get("output.latents"), res.latents);
  const double e_vid = vidax::test::rel_l2(g.get("output.video"), res.video);
  std::printf("TI2V diffusers layout: latents rel_l2 %.3g, video rel_l2 %.3g vs the official golden\n", e_lat, e_vid);
  EXPECT_LT(e_lat, 1e-5);
  EXPECT_LT(e_vid, 1e-5);
}

// The Wan 2.2 VAE as a single --vae file in diffusers' names, and in the original names (as
// ComfyUI's repackaged wan2.2_vae.safetensors), next to an original-layout folder.
TEST(Wan22Diffusers, TI2VWithASingleDiffusersVaeFile) {
  const fs::path d = write_ti2v_diffusers("wan22_ti2v_diffusers_vae_file");
  const std::string g = kPipelines + "wan22_ti2v_tiny";
  const fs::path original = d / "wan2.2_vae.safetensors";
  fs::copy_file(g + "/Wan2.2_VAE.safetensors", original, fs::copy_options::overwrite_existing);
  for (const fs::path& file : {d / "vae/diffusion_pytorch_model.safetensors", original}) {
    pipeline::LoadOptions lo;
    lo.weights_dir = g;
    lo.files.vae = file.string();
    lo.precision = "fp32";
    wan::LoadedT2V m = wan::load_t2v(lo);
    EXPECT_TRUE(m.files.vae_single);
    io::Checkpoint gold = io::Checkpoint::open(kPipelines + "wan22_ti2v_tiny.safetensors");
    const json cfg = json::parse(gold.metadata().at("config"));
    const pipeline::Request r = pipeline::request_from_json(cfg, m.preset.variant.defaults.negative_prompt);
    pipeline::Result res = pipeline::run_generation(m.parts, r);
    const double e_vid = vidax::test::rel_l2(gold.get("output.video"), res.video);
    std::printf("TI2V with --vae %s: video rel_l2 %.3g vs the official golden\n", file.filename().c_str(), e_vid);
    EXPECT_LT(e_vid, 1e-5);
  }
}

namespace {

// The I2V-A14B tiny golden's folder in the diffusers layout (WanImageToVideoPipeline): the two
// experts as transformer/ (high noise) and transformer_2/ (low noise), the Wan 2.1 VAE.
fs::path write_i2v_a14b_diffusers(const std::string& name, const json& model_index) {
  const std::string g = kPipelines + "wan22_i2v_a14b_tiny";
  const json m = vidax_model(g);
  const fs::path d = vidax::test::scratch_dir(name);
  namespace tw = translate::wan;
  for (const auto& [from, to] : {std::pair<const char*, const char*>{"high_noise_model", "transformer"},
                                 {"low_noise_model", "transformer_2"}}) {
    write_renamed(g + "/" + from + "/diffusion_pytorch_model.safetensors", tw::dit_keymap("diffusers"),
                  d / to / "diffusion_pytorch_model.safetensors");
    write_json(d / to / "config.json", transformer_config(m["dit"]));
  }
  const json& vae = m["vae"];
  write_renamed(g + "/Wan2.1_VAE.safetensors", tw::vae_keymap("diffusers", tw::VaeConfig::from_json(vae)),
                d / "vae/diffusion_pytorch_model.safetensors");
  write_json(d / "vae/config.json", {{"_class_name", "AutoencoderKLWan"},
                                     {"base_dim", vae["dim"]},
                                     {"z_dim", vae["z_dim"]},
                                     {"dim_mult", vae["dim_mult"]},
                                     {"num_res_blocks", vae["num_res_blocks"]},
                                     {"attn_scales", vae["attn_scales"]},
                                     {"temperal_downsample", vae["temperal_downsample"]},
                                     {"dropout", 0.0}});
  write_text_encoder(d, g, m["t5"]);
  write_json(d / "model_index.json", model_index);
  return d;
}

}  // namespace

// The official Wan2.2 WanI2V.generate golden (two experts, 3 + 3 steps), from the diffusers folder:
// the same experts at the same steps, the same latents and video.
TEST(Wan22Diffusers, I2VA14BFolderGivesTheOfficialResults) {
  const fs::path d = write_i2v_a14b_diffusers(
      "wan22_i2v_a14b_diffusers", {{"_class_name", "WanImageToVideoPipeline"}, {"boundary_ratio", 0.9},
                                   {"transformer", {"diffusers", "WanTransformer3DModel"}},
                                   {"transformer_2", {"diffusers", "WanTransformer3DModel"}},
                                   {"image_encoder", {nullptr, nullptr}}, {"image_processor", {nullptr, nullptr}}});
  io::Checkpoint g = io::Checkpoint::open(kPipelines + "wan22_i2v_a14b_tiny.safetensors");
  const json cfg = json::parse(g.metadata().at("config"));
  pipeline::LoadOptions lo;
  lo.weights_dir = d.string();
  lo.model = "wan2.2-i2v-a14b-tiny-demo";
  lo.precision = "fp32";
  wan::LoadedT2V m = wan::load_t2v(lo);
  EXPECT_EQ(m.files.layout, "diffusers");
  pipeline::Request r = pipeline::request_from_json(cfg, m.preset.variant.defaults.negative_prompt);
  r.image = io::picture_to_tensor(g.get("input.image"));
  pipeline::Result res = pipeline::run_generation(m.parts, r);
  const std::vector<double> expert = g.get("inter.expert").to_f64_vector();
  std::vector<double> ours(expert.size(), -1);
  for (size_t e = 0; e < res.denoiser_steps.size(); ++e)
    for (int s : res.denoiser_steps[e]) ours[static_cast<size_t>(s)] = static_cast<double>(e);
  EXPECT_EQ(ours, expert);
  const double e_lat = vidax::test::rel_l2(g.get("output.latents"), res.latents);
  const double e_vid = vidax::test::rel_l2(g.get("output.video"), res.video);
  std::printf("I2V-A14B diffusers layout: latents rel_l2 %.3g, video rel_l2 %.3g vs the official golden\n", e_lat,
              e_vid);
  EXPECT_LT(e_lat, 1e-5);
  EXPECT_LT(e_vid, 1e-5);
}

// model_index.json's boundary_ratio is where diffusers' pipeline switches experts: it decides here
// too (0.95: only the steps at t >= 950 go to the high-noise expert); a bad value is refused.
TEST(Wan22Diffusers, I2VA14BBoundaryRatioFromModelIndex) {
  const fs::path d = write_i2v_a14b_diffusers(
      "wan22_i2v_a14b_diffusers_boundary", {{"_class_name", "WanImageToVideoPipeline"}, {"boundary_ratio", 0.95}});
  io::Checkpoint g = io::Checkpoint::open(kPipelines + "wan22_i2v_a14b_tiny.safetensors");
  const json cfg = json::parse(g.metadata().at("config"));
  pipeline::LoadOptions lo;
  lo.weights_dir = d.string();
  lo.model = "wan2.2-i2v-a14b-tiny-demo";
  lo.precision = "fp32";
  wan::LoadedT2V m = wan::load_t2v(lo);
  ASSERT_TRUE(m.preset.experts);
  EXPECT_EQ(m.preset.experts->boundary, 0.95);
  pipeline::Request r = pipeline::request_from_json(cfg, m.preset.variant.defaults.negative_prompt);
  r.image = io::picture_to_tensor(g.get("input.image"));
  pipeline::Result res = pipeline::run_generation(m.parts, r, {}, /*decode=*/false);
  std::vector<int> want_high;
  for (int i = 0; i < static_cast<int>(res.timesteps.size()); ++i)
    if (res.timesteps[static_cast<size_t>(i)] >= 950.0) want_high.push_back(i);
  ASSERT_FALSE(want_high.empty());
  EXPECT_EQ(res.denoiser_steps.at(wan::kHighNoiseExpert), want_high);
  int golden_high = 0;
  for (double e : g.get("inter.expert").to_f64_vector()) golden_high += e == wan::kHighNoiseExpert;
  EXPECT_LT(static_cast<int>(want_high.size()), golden_high);  // the switch moved

  const fs::path bad = write_i2v_a14b_diffusers(
      "wan22_i2v_a14b_diffusers_bad_boundary", {{"_class_name", "WanImageToVideoPipeline"}, {"boundary_ratio", "0.9"}});
  lo.weights_dir = bad.string();
  try {
    (void)wan::load_t2v(lo);
    ADD_FAILURE() << "a string boundary_ratio was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("boundary_ratio \"0.9\" is not a number"), std::string::npos) << e.what();
  }
}

// Discovery from the configs alone (the published diffusers repos' transformer configs): a
// 48-channel DiT is TI2V-5B, two 36-channel experts without image_dim I2V-A14B, two 16-channel
// ones T2V-A14B.
TEST(Wan22Diffusers, PublishedFoldersAreDetected) {
  auto folder = [](const std::string& name, int64_t heads, int64_t layers, int64_t in, int64_t out, bool experts) {
    const fs::path d = vidax::test::scratch_dir(name);
    json c = {{"_class_name", "WanTransformer3DModel"}, {"num_attention_heads", heads}, {"attention_head_dim", 128},
              {"num_layers", layers}, {"in_channels", in}, {"out_channels", out}, {"image_dim", nullptr},
              {"ffn_dim", heads == 24 ? 14336 : 13824}, {"text_dim", 4096}, {"freq_dim", 256}};
    write_json(d / "model_index.json", {{"_class_name", "WanPipeline"}});
    write_json(d / "transformer/config.json", c);
    if (experts) write_json(d / "transformer_2/config.json", c);
    return d.string();
  };
  EXPECT_EQ(wan::detect_model(folder("detect_ti2v", 24, 30, 48, 48, false)), "wan2.2-ti2v-5b");
  EXPECT_EQ(wan::detect_model(folder("detect_i2v_a14b", 40, 40, 36, 16, true)), "wan2.2-i2v-a14b");
  EXPECT_EQ(wan::detect_model(folder("detect_t2v_a14b", 40, 40, 16, 16, true)), "wan2.2-t2v-a14b");
}
