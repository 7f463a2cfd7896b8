// The hunyuanvideo1.5 Family's image-to-video variants: their defaults (PIPELINE_CONFIGS['480p_i2v'],
// ['720p_i2v'], the cfg-distilled and step-distilled ones), the discovery of vision_encoder/siglip/,
// `vidax make-demo --model hunyuanvideo1.5-i2v-tiny-demo` + `vidax generate --image` as a user runs
// them, and that the CLI's latents equal the hunyuan1.5.pipeline.i2v kind (itself matched to the
// official __call__ in test_i2v.cpp) on a golden made of the demo's weights, the family's own
// embeddings and the same picture; the refusals (a t2v variant given --image names the i2v one, an i2v
// variant without --image, a missing SigLIP folder).
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/ops.h"
#include "cli_child.h"
#include "core/error.h"
#include "engine/families.h"
#include "io/checkpoint.h"
#include "io/video.h"
#include "models/hunyuan15/family.h"
#include "models/hunyuan15/load.h"
#include "models/hunyuan15/pipeline_parity.h"
#include "models/hunyuan15/presets.h"
#include "models/hunyuan15/weights.h"
#include "parity/parity.h"
#include "pipeline/generate.h"
#include "pipeline/scratch.h"
#include "test_diff.h"

namespace fs = std::filesystem;
using namespace vidax;

namespace {

const pipeline::Family& fam() { return hunyuan15::family(); }

const std::string& demo_dir() {
  static const std::string d = [] {
    const fs::path p = test::scratch_dir("hy15_family_i2v") / "demo";
    fs::remove_all(p);
    fam().make_demo(hunyuan15::kI2VTinyDemo, pipeline::DemoOptions{.out_dir = p.string()});
    return p.string();
  }();
  return d;
}

// A 40 x 64 RGB picture (distinct bytes) as a PNG; its bytes are returned too.
fs::path write_png(const fs::path& dir, std::vector<uint8_t>* bytes = nullptr) {
  io::RgbVideo v;
  v.frames = 1;
  v.height = 40;
  v.width = 64;
  v.rgb.resize(v.frame_bytes());
  for (size_t i = 0; i < v.rgb.size(); ++i) v.rgb[i] = static_cast<uint8_t>((i * 7 + (i / 191) * 13) % 256);
  if (bytes) *bytes = v.rgb;
  const fs::path frames = dir / "png";
  fs::remove_all(frames);
  io::write_png_frames(frames.string(), v, {});
  return frames / "frame_00000.png";
}

double max_abs(const Tensor& a, const Tensor& b) { return test::diff(a, b).max_abs; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// PIPELINE_CONFIGS: 480p_i2v guidance 6 / shift 5, 720p_i2v 6 / 7, the *_distilled ones guidance 1,
// 480p_i2v_step_distilled guidance 1 / shift 7 / 12 steps; the default size is the bucket base
// (target_size_config: 640, 960).
TEST(Hunyuan15FamilyI2V, VariantsHaveTheOfficialDefaults) {
  struct Case {
    const char* name;
    const char* version;
    int64_t base, steps;
    double guidance, shift;
  };
  for (const Case& c : {Case{hunyuan15::kI2V480p, "480p_i2v", 640, 50, 6.0, 5.0},
                        Case{hunyuan15::kI2V720p, "720p_i2v", 960, 50, 6.0, 7.0},
                        Case{hunyuan15::kI2V480pDistilled, "480p_i2v_distilled", 640, 50, 1.0, 5.0},
                        Case{hunyuan15::kI2V720pDistilled, "720p_i2v_distilled", 960, 50, 1.0, 7.0},
                        Case{hunyuan15::kI2V480pStepDistilled, "480p_i2v_step_distilled", 640, 12, 1.0, 7.0}}) {
    const pipeline::Variant& v = fam().variant(c.name);
    EXPECT_EQ(v.tasks, std::vector<std::string>{"i2v"}) << c.name;
    EXPECT_EQ(std::vector<int64_t>({v.defaults.frames, v.defaults.height, v.defaults.width, v.defaults.steps}),
              std::vector<int64_t>({121, c.base, c.base, c.steps}))
        << c.name;
    EXPECT_EQ(v.defaults.guidance, c.guidance) << c.name;
    EXPECT_EQ(v.defaults.shift, c.shift) << c.name;
    const hunyuan15::Preset& p = hunyuan15::preset(c.name);
    EXPECT_EQ(p.transformer_version, c.version);
    EXPECT_TRUE(p.i2v());
    EXPECT_EQ(p.vision_tokens, 729);
    EXPECT_EQ(p.dit.at("ideal_task"), "i2v");
  }
  EXPECT_EQ(fam().image_variant(hunyuan15::kT2V480p), hunyuan15::kI2V480p);
  EXPECT_EQ(fam().image_variant(hunyuan15::kT2VTinyDemo), hunyuan15::kI2VTinyDemo);
  EXPECT_EQ(fam().image_variant(hunyuan15::kI2V480p), "");
  // The memory plan counts the image side (VAE encoder, SigLIP) for i2v only.
  pipeline::Request r;
  r.frames = 121;
  r.height = r.width = 640;
  EXPECT_GT(fam().memory_plan(hunyuan15::kI2V480p, r, "bf16").items.size(),
            fam().memory_plan(hunyuan15::kT2V480p, r, "bf16").items.size());
}

// The demo folder (vidax_model.json) and, without it, the folder of transformer/480p_i2v/ only;
// the SigLIP folder is named when missing.
TEST(Hunyuan15FamilyI2V, FindsTheVisionEncoderFolder) {
  EXPECT_EQ(engine::resolve(demo_dir(), "").variant.name, hunyuan15::kI2VTinyDemo);
  const hunyuan15::WeightFiles f = hunyuan15::find_weights(demo_dir(), "480p_i2v");
  EXPECT_EQ(fs::path(f.siglip), fs::path(demo_dir()) / "vision_encoder" / "siglip");
  const fs::path plain = test::scratch_dir("hy15_family_i2v_plain") / "demo";
  fs::remove_all(plain);
  fs::copy(demo_dir(), plain, fs::copy_options::recursive);
  fs::remove(plain / "vidax_model.json");
  EXPECT_EQ(fam().detect(plain.string()), hunyuan15::kI2V480p);
  fs::remove_all(plain / "vision_encoder");
  const std::string e = error_of([&] { (void)hunyuan15::find_weights(plain.string(), "480p_i2v"); });
  EXPECT_NE(e.find("vision_encoder/siglip"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { (void)fam().resolve(plain.string(), hunyuan15::kI2V480p); }).find("vision_encoder/siglip"),
            std::string::npos);
}

// As a user runs it; the CLI's latents equal the kind's on the same weights, embeddings and picture.
TEST(Hunyuan15FamilyI2V, CliEqualsThePipelineKind) {
  namespace cli = vidax::test::cli;
  const fs::path d = test::scratch_dir("hy15_family_i2v_cli");
  const std::string demo = (d / "demo").string();
  fs::remove_all(demo);
  {
    const auto r = cli::run({"make-demo", demo, "--model", "hunyuanvideo1.5-i2v-tiny-demo"}, {.timeout_s = 120});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  std::vector<uint8_t> bytes;
  const std::string png = write_png(d, &bytes).string();
  const std::string prompt = "the sign starts to glow";
  const std::vector<std::string> base{"generate", "--weights", demo, "--prompt", prompt, "--image", png,
                                      "--negative-prompt", "blurry", "--frames", "5", "--height", "32", "--width",
                                      "32", "--steps", "2", "--seed", "7", "--threads", "2"};
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.timeout_s = 300});
  };
  const std::string mp4 = (d / "out.mp4").string(), lat = (d / "lat.safetensors").string();
  {
    const auto r = gen({"-o", mp4});
    ASSERT_EQ(r.code, 0) << r.err;
    // The 64 x 40 picture at base sqrt(32 * 32): the 32 x 16 bucket (h/w 0.5 is the closest to 0.625).
    const io::VideoFileInfo info = io::read_video(mp4);
    EXPECT_EQ(info.frames, 5);
    EXPECT_EQ(info.width, 32);
    EXPECT_EQ(info.height, 16);
  }
  {
    const auto r = gen({"--output-format", "latents", "-o", lat});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const io::Checkpoint lc = io::Checkpoint::open(lat);
  const Tensor cli_latents = lc.get(lc.names().front());

  // The golden: the demo's DiT, whole VAE and SigLIP, the family's embeddings, the PNG's bytes.
  const hunyuan15::WeightFiles files = hunyuan15::find_weights(demo, "480p_i2v");
  const hunyuan15::Preset& p = hunyuan15::preset(hunyuan15::kI2VTinyDemo);
  auto enc = hunyuan15::make_prompt_encoder(files, "fp32", p.text_len);
  const hunyuan15::PromptEmbeds pe = enc->encode(prompt), ne = enc->encode_negative("blurry");
  std::map<std::string, Tensor> t;
  auto add_all = [&](const fs::path& file, const std::string& prefix) {
    const io::Checkpoint ck = io::Checkpoint::open(file.string());
    for (const std::string& n : ck.names()) t[prefix + n] = ck.get(n);
  };
  add_all(fs::path(files.dit) / "diffusion_pytorch_model.safetensors", "transformer.");
  add_all(fs::path(files.vae) / "diffusion_pytorch_model.safetensors", "vae.");
  add_all(fs::path(files.siglip) / "image_encoder" / "model.safetensors", "vision_encoder.");
  for (const auto& [pre, e] : {std::pair<std::string, const hunyuan15::PromptEmbeds*>{"", &pe}, {"negative_", &ne}}) {
    t["input." + pre + "text_states"] = e->text_states.unsqueeze(0);
    t["input." + pre + "text_mask"] = e->text_mask.unsqueeze(0);
    t["input." + pre + "byt5_text_states"] = e->byt5_states.unsqueeze(0);
    t["input." + pre + "byt5_text_mask"] = e->byt5_mask.unsqueeze(0);
  }
  Tensor pic = Tensor::empty({40, 64, 3}, DType::U8);
  std::copy(bytes.begin(), bytes.end(), pic.data<uint8_t>());  // view-write-ok: fills the tensor made above
  t["input.image"] = pic;
  const nlohmann::json config = {
      {"prompt", prompt}, {"negative_prompt", "blurry"}, {"frames", 5},    {"height", 32},
      {"width", 32},      {"steps", 2},                  {"seed", 7},      {"guidance", 6.0},
      {"shift", 5.0},     {"dit", p.dit},                {"vae", p.vae},   {"vae_tiling", {{"sample_size", 256}, {"overlap", 0.125}}},
      {"vision_num_semantic_tokens", p.vision_tokens},
      {"siglip", {{"vision", p.siglip}, {"processor", p.siglip_processor}}}};
  const std::string path = (d / "family_run.safetensors").string();
  io::save_safetensors(path, t, {{"kind", "hunyuan1.5.pipeline.i2v"}, {"config", config.dump()}});
  const io::Checkpoint ck = io::Checkpoint::open(path);
  const parity::Golden g{path, ck, "hunyuan1.5.pipeline.i2v", config};
  const parity::Produced out = hunyuan15::run_i2v_golden(g, parity::Options{.precision = "fp32"});
  const double dl = max_abs(out.at("output.latents"), cli_latents);
  std::printf("  vidax generate --image vs hunyuan1.5.pipeline.i2v on its embeddings: latents max_abs %.3g\n", dl);
  EXPECT_EQ(dl, 0.0);
  EXPECT_EQ(out.at("output.video").shape(), (Shape{3, 5, 16, 32}));
  // Negative control: another picture moves the kind's latents.
  Tensor other = pic.clone();
  other.data<uint8_t>()[500] = static_cast<uint8_t>(other.data<uint8_t>()[500] + 100);  // view-write-ok: a fresh clone
  t["input.image"] = other;
  const std::string path2 = (d / "family_run_other.safetensors").string();
  io::save_safetensors(path2, t, {{"kind", "hunyuan1.5.pipeline.i2v"}, {"config", config.dump()}});
  const io::Checkpoint ck2 = io::Checkpoint::open(path2);
  const parity::Produced out2 =
      hunyuan15::run_i2v_golden(parity::Golden{path2, ck2, "hunyuan1.5.pipeline.i2v", config}, parity::Options{});
  EXPECT_GT(max_abs(out2.at("output.latents"), cli_latents), 1e-5);

  // Refusals: an i2v variant without --image; a t2v variant given --image names the i2v one.
  auto err = [&](std::vector<std::string> a) {
    const auto r = cli::run(a, {.timeout_s = 120});
    EXPECT_NE(r.code, 0);
    return r.err;
  };
  const std::string e1 = err({"generate", "--weights", demo, "--prompt", "a cat", "--steps", "1", "-o", mp4});
  EXPECT_NE(e1.find("give --image FILE"), std::string::npos) << e1;
  const std::string t2v = (d / "t2v").string();
  fs::remove_all(t2v);
  ASSERT_EQ(cli::run({"make-demo", t2v, "--model", "hunyuanvideo1.5-t2v-tiny-demo"}, {.timeout_s = 120}).code, 0);
  const std::string e2 = err({"generate", "--weights", t2v, "--prompt", "a cat", "--image", png, "--steps", "1", "-o", mp4});
  EXPECT_NE(e2.find("--model hunyuanvideo1.5-i2v-tiny-demo"), std::string::npos) << e2;
  fs::remove_all(fs::path(demo) / "vision_encoder" / "siglip" / "feature_extractor");
  const std::string e3 = err(base);
  EXPECT_NE(e3.find("preprocessor_config.json"), std::string::npos) << e3;
}
