// The same tiny checkpoint in the diffusers layout (model_index.json,
// transformer/, vae/, text_encoder/, tokenizer/ with diffusers/transformers
// names and configs) runs through the translator to the same result as the
// original layout: the official generate's golden latents.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "pipeline/scratch.h"
#include "diffusers_fixture.h"
#include "test_diff.h"
#include "io/checkpoint.h"
#include "pipeline/generate.h"
#include "models/wan/t2v_load.h"
#include "translate/keymap.h"
#include "models/wan/checkpoint_keys.h"
#include "text/umt5_keys.h"

namespace fs = std::filesystem;
using namespace vidax;
using nlohmann::json;

using namespace vidax::test::wan_diffusers;

namespace {

const std::string kGolden = std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/wan_pipeline_tiny";



// The tiny T2V golden's checkpoint written in the diffusers layout under `d`, with the DiT of
// `dit_file` (original names) and its transformer config plus `extra` (e.g. VACE's fields).
void write_diffusers_checkpoint(const fs::path& d, const std::string& dit_file, const json& extra);

}  // namespace

TEST(DiffusersLayout, SameLatentsAsTheOriginalLayout) {
  const fs::path d = vidax::test::scratch_dir("diffusers_tiny");
  write_diffusers_checkpoint(d, kGolden + "/diffusion_pytorch_model.safetensors", json::object());

  pipeline::LoadOptions lo;
  lo.weights_dir = d.string();
  lo.model = "wan2.1-tiny-demo";
  lo.precision = "fp32";
  wan::LoadedT2V m = wan::load_t2v(lo);
  EXPECT_EQ(m.files.layout, "diffusers");

  io::Checkpoint g = io::Checkpoint::open(kGolden + ".safetensors");
  const json cfg = json::parse(g.metadata().at("config"));
  const pipeline::Request r = pipeline::request_from_json(cfg, m.preset.variant.defaults.negative_prompt);
  pipeline::Result res = pipeline::run_generation(m.parts, r, {}, /*decode=*/false);
  const double e = vidax::test::rel_l2(g.get("output.latents"), res.latents);
  std::printf("diffusers layout: latents rel_l2 %.3g vs the official golden\n", e);
  EXPECT_LT(e, 1e-5);
}

// Wan VACE in the diffusers layout (WanVACETransformer3DModel names and config, detected as
// wan2.1-vace-1.3b's architecture family): the official WanVace.generate's golden latents.
TEST(DiffusersLayout, VaceSameLatentsAsTheOfficialGenerate) {
  const std::string golden = std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/wan_vace_tiny";
  const fs::path d = vidax::test::scratch_dir("diffusers_vace_tiny");
  write_diffusers_checkpoint(d, golden + "/vace_diffusion_pytorch_model.safetensors",
                             {{"_class_name", "WanVACETransformer3DModel"}, {"vace_layers", {0, 1}},
                              {"vace_in_channels", 96}});
  pipeline::LoadOptions lo;
  lo.weights_dir = d.string();
  lo.model = "wan2.1-vace-tiny-demo";
  lo.precision = "fp32";
  wan::LoadedT2V m = wan::load_t2v(lo);
  EXPECT_EQ(m.files.layout, "diffusers");
  ASSERT_TRUE(m.parts.condition_on_control);
  io::Checkpoint g = io::Checkpoint::open(golden + ".safetensors");
  const json cfg = json::parse(g.metadata().at("config"));
  pipeline::Request r = pipeline::request_from_json(cfg, m.preset.variant.defaults.negative_prompt);
  r.control_video = g.get("input.control_video");
  r.control_fps = cfg.at("control_fps");
  r.control_mask = g.get("input.mask_video");
  r.reference_images = {g.get("input.reference_image.0")};
  r.control_scale = cfg.at("control_scale");
  pipeline::Result res = pipeline::run_generation(m.parts, r, {}, /*decode=*/false);
  const double e = vidax::test::rel_l2(g.get("output.latents"), res.latents);
  std::printf("diffusers VACE layout: latents rel_l2 %.3g vs the official golden\n", e);
  EXPECT_LT(e, 1e-5);
}

namespace {

void write_diffusers_checkpoint(const fs::path& d, const std::string& dit_file, const json& extra) {
  std::ifstream vm(kGolden + "/vidax_model.json");
  const json model = json::parse(vm);
  const json& dit = model["dit"];
  const json& vae = model["vae"];
  const json& t5 = model["t5"];

  namespace tw = translate::wan;
  write_renamed(dit_file, tw::dit_keymap("diffusers"), d / "transformer/diffusion_pytorch_model.safetensors");
  write_renamed(kGolden + "/Wan2.1_VAE.safetensors", tw::vae_keymap("diffusers", tw::VaeConfig::from_json(vae)),
                d / "vae/diffusion_pytorch_model.safetensors");
  write_json(d / "model_index.json", {{"_class_name", "WanPipeline"}});
  // The configs as diffusers / transformers spell them.
  json transformer = transformer_config(dit);
  transformer.update(extra);
  write_json(d / "transformer/config.json", transformer);
  write_json(d / "vae/config.json", {{"_class_name", "AutoencoderKLWan"},
                                     {"base_dim", vae["dim"]},
                                     {"z_dim", vae["z_dim"]},
                                     {"dim_mult", vae["dim_mult"]},
                                     {"num_res_blocks", vae["num_res_blocks"]},
                                     {"attn_scales", vae["attn_scales"]},
                                     {"temperal_downsample", vae["temperal_downsample"]},
                                     {"dropout", 0.0}});
  write_text_encoder(d, kGolden, t5);
}

}  // namespace
