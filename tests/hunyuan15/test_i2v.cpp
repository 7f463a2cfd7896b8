// HunyuanVideo 1.5 image-to-video: the SigLIP image encoder (src/models/hunyuan15/siglip.h) against the
// official VisionEncoder (tests/golden/hunyuan15/hy15_siglip*.safetensors, tools/golden/hunyuan15_siglip.py)
// and the i2v parts (i2v.h) against the official HunyuanVideo_1_5_Pipeline.__call__ with a reference image
// (hy15_pipeline_i2v*.safetensors, tools/golden/hunyuan15_pipeline_i2v.py), with their negative controls,
// the size buckets against the reference's values and the configs' refusals.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/hunyuan15/i2v.h"
#include "models/hunyuan15/pipeline_parity.h"
#include "models/hunyuan15/siglip.h"
#include "parity/parity.h"
#include "test_diff.h"

namespace vidax::hunyuan15 {
namespace {

namespace fs = std::filesystem;

std::string golden_path(const std::string& name) {
  return (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan15" / name).string();
}
const std::string kSiglip = golden_path("hy15_siglip.safetensors");
const std::string kSiglipSmall = golden_path("hy15_siglip_small.safetensors");
const std::string kI2V = golden_path("hy15_pipeline_i2v.safetensors");
const std::string kI2VCfg = golden_path("hy15_pipeline_i2v_cfg.safetensors");
const std::string kI2VMeanflow = golden_path("hy15_pipeline_i2v_meanflow.safetensors");

constexpr double kBound = 1e-5;  // the contract's fp32 bound, max abs

fs::path scratch() {
  const fs::path dir = fs::temp_directory_path() / ("vidax_test_hy15i2v_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

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
std::string rewritten(const std::string& path, const std::string& tag,
                      const std::function<void(std::map<std::string, Tensor>&)>& edit) {
  const io::Checkpoint ck = io::Checkpoint::open(path);
  std::map<std::string, Tensor> tensors;
  for (const std::string& n : ck.names()) tensors[n] = ck.get(n);
  edit(tensors);
  const std::string out = (scratch() / (tag + ".safetensors")).string();
  io::save_safetensors(out, tensors, ck.metadata());
  return out;
}

// Value `at` of an F32 tensor moved by delta.
void nudge(std::map<std::string, Tensor>& t, const std::string& name, size_t at, float delta) {
  std::vector<float> v = t.at(name).to_f32_vector();
  v.at(at) += delta;
  t[name] = Tensor::from_f32(v, t.at(name).shape());
}

// Byte `at` of the U8 picture input.image moved by delta (mod 256).
void nudge_pixel(std::map<std::string, Tensor>& t, size_t at, int delta) {
  Tensor img = t.at("input.image").contiguous().clone();
  uint8_t* d = img.data<uint8_t>();  // view-write-ok: a fresh clone
  d[at] = static_cast<uint8_t>(d[at] + delta);
  t["input.image"] = img;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double row_max_abs(const parity::Report& r, const std::string& name) {
  for (const auto& c : r.rows)
    if (c.name == name) return c.max_abs;
  ADD_FAILURE() << "no row " << name;
  return 0;
}

class Hunyuan15I2V : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { engine::register_builtin_kinds(); }
};

// ---- SigLIP ------------------------------------------------------------------------------

TEST_F(Hunyuan15I2V, SiglipMatchesTheOfficialVisionEncoder) {
  for (const std::string& path : {kSiglip, kSiglipSmall}) {
    const parity::Report r = parity::run(path, parity::Options{});
    EXPECT_EQ(r.kind, "hunyuan1.5.image.siglip");
    EXPECT_TRUE(r.ok()) << path;
    // The preprocessing is exact (the same uint8 resample, the same fp32 normalisation).
    EXPECT_EQ(row_max_abs(r, "inter.pixel_values"), 0.0) << path;
    const double e = row_max_abs(r, "output");
    std::printf("  %s output max_abs %.3g\n", fs::path(path).filename().c_str(), e);
    EXPECT_LE(e, kBound) << path;
  }
}

TEST_F(Hunyuan15I2V, SiglipPerturbedGoldenFails) {
  // A weight of the last layer, the input picture: the output moves past the bound.
  const std::string w = rewritten(kSiglip, "siglip_w", [](auto& t) { nudge(t, "encoder.layers.1.self_attn.v_proj.weight", 0, 0.5f); });
  const parity::Report rw = parity::run(w, parity::Options{});
  EXPECT_FALSE(rw.ok());
  EXPECT_GT(row_max_abs(rw, "output"), 1e-3);
  const std::string img = rewritten(kSiglip, "siglip_img", [](auto& t) { nudge_pixel(t, 100, 60); });
  const parity::Report ri = parity::run(img, parity::Options{});
  EXPECT_FALSE(ri.ok());
  EXPECT_GT(row_max_abs(ri, "inter.pixel_values"), 1e-3);
  // The pooling head is not read (the pipeline takes last_hidden_state): moving it changes nothing.
  const std::string head = rewritten(kSiglip, "siglip_head", [](auto& t) { nudge(t, "head.probe", 0, 5.0f); });
  EXPECT_TRUE(parity::run(head, parity::Options{}).ok());
}

TEST_F(Hunyuan15I2V, SiglipConfigs) {
  const SiglipVisionConfig pub = SiglipVisionConfig::so400m_patch14_384();
  EXPECT_EQ(pub.tokens(), 729);  // floor(384 / 14) = 27 patches a side: the pipeline's vision_num_semantic_tokens
  EXPECT_EQ(pub.hidden_size, 1152);
  // 384 is no multiple of 14: the stride-14 conv leaves 6 pixels unread, not an error (docs/bugs.md 127).
  EXPECT_EQ(SiglipVisionConfig::from_json(pub.to_json()).tokens(), 729);
  EXPECT_NE(error_of([] { (void)SiglipVisionConfig::from_json({{"hidden_act", "gelu"}}); }).find("hidden_act 'gelu'"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)SiglipVisionConfig::from_json({{"hidden_size", 10}, {"num_attention_heads", 3}}); })
                .find("not divisible"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)SiglipProcessorConfig::from_json({{"resample", 2}}); }).find("resample 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)SiglipProcessorConfig::from_json({{"image_std", {0.5, 0.0, 0.5}}}); }).find("image_std"),
            std::string::npos);
  // A SiglipConfig's vision_config is read too.
  EXPECT_EQ(SiglipVisionConfig::from_json({{"model_type", "siglip"}, {"vision_config", {{"hidden_size", 48}}}}).hidden_size, 48);
}

// A vision_encoder/siglip/ folder as published: image_encoder/ (config.json, model.safetensors under
// vision_model.*) and feature_extractor/preprocessor_config.json.
fs::path write_siglip_folder(const std::string& tag, bool stray = false) {
  const parity::Golden g = open_golden(kSiglip);
  const fs::path root = scratch() / tag;
  fs::create_directories(root / "image_encoder");
  fs::create_directories(root / "feature_extractor");
  std::map<std::string, Tensor> tensors;
  for (const std::string& n : g.file.names())
    if (n.rfind("input.", 0) != 0 && n.rfind("inter.", 0) != 0 && n != "output")
      tensors["vision_model." + n] = g.file.get(n);
  if (stray) tensors["vision_model.extra.weight"] = Tensor::zeros({2}, DType::F32);
  io::save_safetensors((root / "image_encoder" / "model.safetensors").string(), tensors, {});
  std::ofstream(root / "image_encoder" / "config.json") << g.config.at("vision").dump();
  std::ofstream(root / "feature_extractor" / "preprocessor_config.json") << g.config.at("processor").dump();
  return root;
}

TEST_F(Hunyuan15I2V, SiglipLoadsThePublishedFolder) {
  const fs::path root = write_siglip_folder("siglip");
  const SiglipEncoder enc = load_siglip(root.string(), DType::F32);
  const parity::Golden g = open_golden(kSiglip);
  const test::Diff d = test::diff(g.file.get("output"), enc.encode(g.file.get("input.image")));
  EXPECT_LE(d.max_abs, kBound);
  // A stray key and a missing preprocessor config are named.
  const fs::path bad = write_siglip_folder("siglip_stray", true);
  EXPECT_NE(error_of([&] { (void)load_siglip(bad.string(), DType::F32); }).find("extra.weight"), std::string::npos);
  fs::remove(root / "feature_extractor" / "preprocessor_config.json");
  EXPECT_NE(error_of([&] { (void)load_siglip(root.string(), DType::F32); }).find("preprocessor_config.json"),
            std::string::npos);
}

// ---- size buckets ---------------------------------------------------------------------------

TEST_F(Hunyuan15I2V, BucketsAreTheReferences) {
  // get_closest_resolution_given_original_size at 640 (480p) and 960 (720p): the reference's values
  // (the t2v presets' 16:9 sizes, docs/models/hunyuanvideo.md's 1:1, 9:16 and 4:3 rows).
  using B = std::array<int64_t, 2>;
  EXPECT_EQ(closest_bucket(9, 16, 640), (B{480, 848}));
  EXPECT_EQ(closest_bucket(9, 16, 960), (B{720, 1280}));
  EXPECT_EQ(closest_bucket(16, 9, 640), (B{848, 480}));
  EXPECT_EQ(closest_bucket(1, 1, 960), (B{960, 960}));
  EXPECT_EQ(closest_bucket(3, 4, 640), (B{544, 720}));
  EXPECT_EQ(closest_bucket(3, 4, 960), (B{832, 1104}));
  // The golden's: a 40 x 64 picture at base 40 -> 32 x 48.
  EXPECT_EQ(closest_bucket(40, 64, 40), (B{32, 48}));
  EXPECT_EQ(crop_size_list(40).size(), 7u);
  EXPECT_NE(error_of([] { (void)closest_bucket(10, 10, 4); }).find("no size bucket"), std::string::npos);
}

// ---- the i2v pipeline ----------------------------------------------------------------------

TEST_F(Hunyuan15I2V, MatchesTheOfficialPipeline) {
  for (const std::string& path : {kI2V, kI2VCfg, kI2VMeanflow}) {
    const parity::Golden g = open_golden(path);
    ASSERT_EQ(g.kind, "hunyuan1.5.pipeline.i2v");
    const parity::Produced out = run_i2v_golden(g, parity::Options{});
    EXPECT_EQ(test::diff(g.file.get("inter.noise"), out.at("inter.noise")).max_abs, 0.0) << path;
    EXPECT_EQ(test::diff(g.file.get("inter.timesteps"), out.at("inter.timesteps")).max_abs, 0.0) << path;
    for (const char* name : {"inter.cond_latents", "inter.vision_states", "inter.latents_step0", "inter.latents_last",
                             "output.latents", "output.video"}) {
      const test::Diff d = test::diff(g.file.get(name), out.at(name));
      std::printf("  %s %s: max_abs %.3g rel_l2 %.3g\n", fs::path(path).filename().c_str(), name, d.max_abs, d.rel_l2);
      EXPECT_LE(d.max_abs, kBound) << path << " " << name;
    }
    // The video takes the image's bucket (32 x 48), not a requested size.
    EXPECT_EQ(out.at("output.video").shape(), (Shape{3, g.config.at("frames").get<int64_t>(), 32, 48}));
  }
}

TEST_F(Hunyuan15I2V, PerturbedInputsFail) {
  const parity::Golden g = open_golden(kI2V);
  const Tensor want = g.file.get("output.latents");
  auto latents_moved = [&](const parity::Golden& other) {
    const double e = test::diff(want, run_i2v_golden(other, parity::Options{}).at("output.latents")).max_abs;
    std::printf("  latents moved by %.3g\n", e);
    return e;
  };
  EXPECT_GT(latents_moved(with_config(g, [](nlohmann::json& c) { c["seed"] = 43; })), 1e-2);
  // One pixel of the picture: the image latent, the vision states and the result move.
  const parity::Golden px = open_golden(rewritten(kI2V, "i2v_px", [](auto& t) { nudge_pixel(t, 1000, 80); }));
  const parity::Produced opx = run_i2v_golden(px, parity::Options{});
  EXPECT_GT(test::diff(g.file.get("inter.cond_latents"), opx.at("inter.cond_latents")).max_abs, 1e-4);
  EXPECT_GT(test::diff(g.file.get("inter.vision_states"), opx.at("inter.vision_states")).max_abs, 1e-4);
  EXPECT_GT(test::diff(want, opx.at("output.latents")).max_abs, kBound);
  // A SigLIP weight and a VAE encoder weight.
  EXPECT_GT(latents_moved(open_golden(rewritten(
                kI2V, "i2v_sig", [](auto& t) { nudge(t, "vision_encoder.post_layernorm.bias", 0, 1.0f); }))),
            kBound);
  EXPECT_GT(latents_moved(open_golden(rewritten(
                kI2V, "i2v_enc", [](auto& t) { nudge(t, "vae.encoder.conv_out.conv.bias", 0, 0.5f); }))),
            kBound);
  // Another bucket base: another size, refused against the golden's shapes by the comparison.
  const parity::Produced other = run_i2v_golden(with_config(g, [](nlohmann::json& c) { c["bucket_hw_base_size"] = 64; }),
                                                parity::Options{});
  EXPECT_NE(other.at("output.video").shape(), g.file.get("output.video").shape());
  // The kind through the registry, and a perturbed expected output fails it.
  EXPECT_TRUE(parity::run(kI2V, parity::Options{}).ok());
  const std::string bad = rewritten(kI2V, "i2v_out", [](auto& t) { nudge(t, "output.latents", 3, 0.01f); });
  EXPECT_FALSE(parity::run(bad, parity::Options{}).ok());
}

TEST_F(Hunyuan15I2V, RefusesARunWithoutTheImage) {
  const parity::Golden g = open_golden(kI2V);
  const std::string no_image = rewritten(kI2V, "i2v_noimg", [](auto& t) { t.erase("input.image"); });
  EXPECT_NE(error_of([&] { (void)run_i2v_golden(open_golden(no_image), parity::Options{}); }).find("input.image"),
            std::string::npos);
  const std::string gray = rewritten(kI2V, "i2v_gray", [](auto& t) {
    t["input.image"] = Tensor::zeros({40, 64}, DType::U8);
  });
  EXPECT_NE(error_of([&] { (void)run_i2v_golden(open_golden(gray), parity::Options{}); }).find("[H, W, 3] U8"),
            std::string::npos);
}

}  // namespace
}  // namespace vidax::hunyuan15
