// The hunyuanvideo1.5 Family (src/models/hunyuan15/family.h): its variants' official defaults, the
// discovery of the ckpts/ layout, the loader on a `vidax make-demo` folder, and `vidax make-demo` +
// `vidax generate` as a user runs them. The family's run is the hunyuan1.5.pipeline.t2v code path
// (checked against the official HunyuanVideo_1_5_Pipeline.__call__ in test_t2v.cpp): here the same
// run from a golden file made of the demo's weights and the family's own embeddings must give the
// family's latents exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "cli_child.h"
#include "core/error.h"
#include "dist/communicator.h"
#include "dist/mesh.h"
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
#include "backend/ops.h"
#include "test_diff.h"

namespace fs = std::filesystem;
using namespace vidax;

namespace {

const pipeline::Family& fam() { return hunyuan15::family(); }

// One demo folder for the in-process tests, made by the family's make_demo.
const std::string& demo_dir() {
  static const std::string d = [] {
    const fs::path p = test::scratch_dir("hy15_family") / "demo";
    fam().make_demo(hunyuan15::kT2VTinyDemo, pipeline::DemoOptions{.out_dir = p.string()});
    return p.string();
  }();
  return d;
}

const pipeline::LoadedModel& loaded() {
  static const pipeline::LoadedModel m = fam().load(pipeline::LoadOptions{.weights_dir = demo_dir()});
  return m;
}

pipeline::Request request(const std::string& prompt, uint64_t seed, double guidance = 6.0) {
  pipeline::Request r;
  r.prompt = prompt;
  r.negative_prompt = "blurry";
  r.frames = 5;
  r.height = 32;
  r.width = 32;
  r.steps = 2;
  r.seed = seed;
  r.guidance = guidance;
  r.shift = 5.0;
  r.sampler = "flow_match_euler";
  return r;
}

Tensor run(const pipeline::Request& r) { return pipeline::run_generation(loaded().parts, r, {}).latents; }

double max_abs(const Tensor& a, const Tensor& b) { return test::diff(a, b).max_abs; }

double sum_of(const Tensor& t) {
  double s = 0;
  for (double v : t.to_f64_vector()) s += std::abs(v);
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A copy of the demo folder to break.
fs::path demo_copy(const std::string& tag) {
  const fs::path d = test::scratch_dir("hy15_family_" + tag) / "demo";
  fs::remove_all(d);
  fs::copy(demo_dir(), d, fs::copy_options::recursive);
  return d;
}

}  // namespace

// The official t2v defaults: PIPELINE_CONFIGS (guidance 6, flow_shift 5 / 9), the pipeline's 50
// steps, generate.py's 121 frames, 24 fps, bf16, "" negative prompt, and the 16:9 bucket of each
// resolution (generate_crop_size_list(640 / 960, 16)).
TEST(Hunyuan15Family, VariantsHaveTheOfficialDefaults) {
  EXPECT_EQ(fam().name(), "hunyuanvideo1.5");
  const pipeline::Defaults& a = fam().variant(hunyuan15::kT2V480p).defaults;
  EXPECT_EQ(std::vector<int64_t>({a.frames, a.height, a.width, a.steps}), std::vector<int64_t>({121, 480, 848, 50}));
  EXPECT_EQ(a.guidance, 6.0);
  EXPECT_EQ(a.shift, 5.0);
  EXPECT_EQ(a.fps, 24);
  EXPECT_EQ(a.sampler, "flow_match_euler");
  EXPECT_EQ(a.precision, "bf16");
  EXPECT_EQ(a.negative_prompt, "");
  const pipeline::Defaults& b = fam().variant(hunyuan15::kT2V720p).defaults;
  EXPECT_EQ(std::vector<int64_t>({b.frames, b.height, b.width, b.steps}), std::vector<int64_t>({121, 720, 1280, 50}));
  EXPECT_EQ(b.guidance, 6.0);
  EXPECT_EQ(b.shift, 9.0);
  EXPECT_EQ(hunyuan15::preset(hunyuan15::kT2V480p).transformer_version, "480p_t2v");
  EXPECT_EQ(hunyuan15::preset(hunyuan15::kT2V720p).transformer_version, "720p_t2v");
  const pipeline::Geometry g = fam().geometry(hunyuan15::kT2V720p);
  EXPECT_EQ(g.vae_stride_s, 16);
  EXPECT_EQ(g.vae_stride_t, 4);
  EXPECT_EQ(g.text_len, 1000);
  EXPECT_NE(error_of([] { (void)hunyuan15::preset("hunyuanvideo1.5-t2v-480p-distilled"); }).find("distilled"),
            std::string::npos);
}

// The demo folder is found as the demo (vidax_model.json); without it, as the 480p model its
// transformer/480p_t2v/ is.
TEST(Hunyuan15Family, DetectsTheCheckpointFolder) {
  const engine::Resolved r = engine::resolve(demo_dir(), "");
  EXPECT_EQ(r.family->name(), "hunyuanvideo1.5");
  EXPECT_EQ(r.variant.name, hunyuan15::kT2VTinyDemo);
  const fs::path plain = demo_copy("plain");
  fs::remove(plain / "vidax_model.json");
  EXPECT_EQ(fam().detect(plain.string()), hunyuan15::kT2V480p);
  EXPECT_EQ(engine::resolve(plain.string(), "").variant.name, hunyuan15::kT2V480p);
  EXPECT_EQ(fam().detect(test::scratch_dir("hy15_family_empty").string()), "");
}

// The family's run (its Qwen2.5-VL and ByT5 encoders on the prompt, the loaded DiT and VAE) against
// the hunyuan1.5.pipeline.t2v kind on a golden made of the same weights and the family's
// embeddings: the same latents and video, bit for bit.
TEST(Hunyuan15Family, RunEqualsThePipelineKindOnTheSameEmbeddings) {
  const std::string prompt = "a neon sign that reads \"HY\"";
  const pipeline::Request r = request(prompt, 7);
  const pipeline::Result res = pipeline::run_generation(loaded().parts, r, {});
  EXPECT_EQ(res.denoiser_calls, 4);  // guidance 6: two passes a step

  const hunyuan15::WeightFiles files = hunyuan15::find_weights(demo_dir(), "480p_t2v");
  auto enc = hunyuan15::make_prompt_encoder(files, "fp32", hunyuan15::preset(hunyuan15::kT2VTinyDemo).text_len);
  const hunyuan15::PromptEmbeds pe = enc->encode(prompt), ne = enc->encode_negative("blurry");
  std::map<std::string, Tensor> t;
  const io::Checkpoint dit = io::Checkpoint::open((fs::path(files.dit) / "diffusion_pytorch_model.safetensors").string());
  for (const std::string& n : dit.names()) t["transformer." + n] = dit.get(n);
  const io::Checkpoint vae = io::Checkpoint::open((fs::path(files.vae) / "diffusion_pytorch_model.safetensors").string());
  for (const std::string& n : vae.names())
    if (n.rfind("decoder.", 0) == 0) t["vae." + n] = vae.get(n);
  for (const auto& [p, e] : {std::pair<std::string, const hunyuan15::PromptEmbeds*>{"", &pe}, {"negative_", &ne}}) {
    t["input." + p + "text_states"] = e->text_states.unsqueeze(0);
    t["input." + p + "text_mask"] = e->text_mask.unsqueeze(0);
    t["input." + p + "byt5_text_states"] = e->byt5_states.unsqueeze(0);
    t["input." + p + "byt5_text_mask"] = e->byt5_mask.unsqueeze(0);
  }
  const hunyuan15::Preset& demo = hunyuan15::preset(hunyuan15::kT2VTinyDemo);
  const nlohmann::json config = {{"prompt", prompt},   {"negative_prompt", "blurry"}, {"frames", 5},
                                 {"height", 32},       {"width", 32},                {"steps", 2},
                                 {"seed", 7},          {"guidance", 6.0},            {"shift", 5.0},
                                 {"dit", demo.dit},    {"vae", demo.vae},
                                 {"vae_tiling", {{"sample_size", 256}, {"overlap", 0.125}}},
                                 {"vision_num_semantic_tokens", demo.vision_tokens}};
  const std::string path = (test::scratch_dir("hy15_family_golden") / "family_run.safetensors").string();
  io::save_safetensors(path, t, {{"kind", "hunyuan1.5.pipeline.t2v"}, {"config", config.dump()}});
  const io::Checkpoint ck = io::Checkpoint::open(path);
  const parity::Golden g{path, ck, "hunyuan1.5.pipeline.t2v", config};
  const parity::Produced out = hunyuan15::run_t2v_golden(g, parity::Options{.precision = "fp32"});
  const double dl = max_abs(out.at("output.latents"), res.latents);
  const double dv = max_abs(out.at("output.video"), ops::add_scalar(ops::scale(res.video, 0.5), 0.5));
  std::printf("  family run vs hunyuan1.5.pipeline.t2v on its embeddings: latents max_abs %.3g, video %.3g\n", dl, dv);
  EXPECT_EQ(dl, 0.0);
  EXPECT_EQ(dv, 0.0);
  // Negative control: the kind on the other seed's noise is far away.
  EXPECT_GT(max_abs(run(request(prompt, 8)), out.at("output.latents")), 1e-3);
}

TEST(Hunyuan15Family, SeedAndPromptReachTheLatents) {
  const Tensor a = run(request("a cat", 1)), b = run(request("a cat", 1));
  EXPECT_EQ(a.shape(), Shape({4, 2, 2, 2}));
  EXPECT_EQ(max_abs(a, b), 0.0);  // the same seed: identical latents
  const double prompt_moved = max_abs(a, run(request("a red panda in the snow", 1)));
  const double seed_moved = max_abs(a, run(request("a cat", 2)));
  std::printf("  other prompt moves the latents %.3g, other seed %.3g\n", prompt_moved, seed_moved);
  EXPECT_GT(prompt_moved, 1e-4);
  EXPECT_GT(seed_moved, 1e-3);
}

// do_classifier_free_guidance is guidance_scale > 1: 0.5 runs the prompt alone, as 1 does.
TEST(Hunyuan15Family, GuidanceBelowOneRunsAsOne) {
  const pipeline::Result half = pipeline::run_generation(loaded().parts, request("a cat", 3, 0.5), {});
  const pipeline::Result one = pipeline::run_generation(loaded().parts, request("a cat", 3, 1.0), {});
  EXPECT_EQ(half.denoiser_calls, 2);
  EXPECT_EQ(max_abs(half.latents, one.latents), 0.0);
  EXPECT_GT(max_abs(half.latents, run(request("a cat", 3, 6.0))), 1e-4);
}

// The quoted text of a prompt is what ByT5 sees ('Text "HY". ' + </s>: 12 ids); a prompt without
// quotes, and the negative prompt always (_prepare_byt5_embeddings encodes "" for it), give zeros
// with an all-zero mask; the Qwen half of the negative is its own prompt's.
TEST(Hunyuan15Family, QuotedTextIsTheByT5Input) {
  const hunyuan15::WeightFiles files = hunyuan15::find_weights(demo_dir(), "480p_t2v");
  auto enc = hunyuan15::make_prompt_encoder(files, "fp32", 64);
  const hunyuan15::PromptEmbeds hy = enc->encode("a neon sign that reads \"HY\"");
  const hunyuan15::PromptEmbeds ho = enc->encode("a neon sign that reads \"HO\"");
  const hunyuan15::PromptEmbeds plain = enc->encode("a neon sign that reads HY");
  EXPECT_EQ(hy.byt5_states.shape(), Shape({256, 1472}));
  EXPECT_EQ(sum_of(hy.byt5_mask), 12.0);
  EXPECT_GT(sum_of(hy.byt5_states), 0.0);
  EXPECT_GT(max_abs(hy.byt5_states, ho.byt5_states), 1e-4);
  EXPECT_EQ(sum_of(plain.byt5_mask), 0.0);
  EXPECT_EQ(sum_of(plain.byt5_states), 0.0);
  const hunyuan15::PromptEmbeds neg = enc->encode_negative("a neon sign that reads \"HY\"");
  EXPECT_EQ(neg.byt5_states.shape(), Shape({256, 1472}));
  EXPECT_EQ(sum_of(neg.byt5_mask), 0.0);
  EXPECT_EQ(sum_of(neg.byt5_states), 0.0);
  EXPECT_EQ(max_abs(neg.text_states, hy.text_states), 0.0);
  EXPECT_EQ(hy.text_states.shape(), Shape({64, 32}));
  // The quotes reach the latents through the glyph states (the Qwen half differs too).
  EXPECT_GT(max_abs(run(request("a neon sign that reads \"HY\"", 4)), run(request("a neon sign that reads \"HO\"", 4))),
            1e-5);
}

// create_byt5's other form of byt5_model.pt: {"state_dict": {"module.text_tower.encoder.<T5Stack name>"}},
// other keys dropped; the same glyph states as the bare state dict.
TEST(Hunyuan15Family, ReadsTheWrappedGlyphCheckpoint) {
  const fs::path d = demo_copy("wrapped");
  const fs::path file = d / "text_encoder" / "Glyph-SDXL-v2" / "checkpoints" / "byt5_model.safetensors";
  std::map<std::string, Tensor> wrapped;
  {
    const io::Checkpoint ck = io::Checkpoint::open(file.string());
    for (const std::string& n : ck.names()) wrapped["state_dict.module.text_tower.encoder." + n] = ck.get(n).clone();
    wrapped["state_dict.module.text_tower.projection.weight"] = Tensor::zeros({2, 2}, DType::F32);
  }
  io::save_safetensors(file.string(), wrapped, {});
  const std::string prompt = "a neon sign that reads \"HY\"";
  const hunyuan15::PromptEmbeds a =
      hunyuan15::make_prompt_encoder(hunyuan15::find_weights(demo_dir(), "480p_t2v"), "fp32", 64)->encode(prompt);
  const hunyuan15::PromptEmbeds b =
      hunyuan15::make_prompt_encoder(hunyuan15::find_weights(d.string(), "480p_t2v"), "fp32", 64)->encode(prompt);
  EXPECT_GT(sum_of(a.byt5_states), 0.0);
  EXPECT_EQ(max_abs(a.byt5_states, b.byt5_states), 0.0);
  // A wrapper with nothing under the prefix is refused naming it.
  io::save_safetensors(file.string(), {{"state_dict.other.weight", Tensor::zeros({2}, DType::F32)}}, {});
  const std::string e = error_of(
      [&] { (void)hunyuan15::make_prompt_encoder(hunyuan15::find_weights(d.string(), "480p_t2v"), "fp32", 64); });
  EXPECT_NE(e.find("module.text_tower.encoder."), std::string::npos) << e;
}

// What is not built is refused by its flag, before anything is loaded.
TEST(Hunyuan15Family, RefusesWhatIsNotBuilt) {
  auto load_error = [](const std::function<void(pipeline::LoadOptions&)>& edit) {
    pipeline::LoadOptions o{.weights_dir = demo_dir()};
    edit(o);
    return error_of([&] { (void)fam().load(o); });
  };
  EXPECT_NE(load_error([](auto& o) { o.device = "pjrt"; }).find("--device pjrt"), std::string::npos);
  EXPECT_NE(load_error([](auto& o) { o.offload = true; }).find("--offload"), std::string::npos);
  EXPECT_NE(load_error([](auto& o) { o.vae_tile = 128; }).find("--vae-tile 128"), std::string::npos);
  EXPECT_NE(load_error([](auto& o) { o.loras.push_back({}); }).find("--lora"), std::string::npos);
  EXPECT_NE(load_error([](auto& o) { o.files.diffusion_model = "x.safetensors"; }).find("--diffusion-model"),
            std::string::npos);
  dist::LocalCommunicator one_rank;
  const dist::Mesh mesh(one_rank, dist::MeshShape{1, 1, 1});
  EXPECT_NE(load_error([&](auto& o) { o.mesh = &mesh; }).find("--mesh"), std::string::npos);
  EXPECT_NE(load_error([](auto& o) { o.precision = "fp16"; }).find("fp32 or bf16"), std::string::npos);
}

// A folder missing a part is refused naming the path the official loader reads; a folder of only
// the distilled transformer names what is there and that it is not built.
TEST(Hunyuan15Family, MissingPartsAreNamed) {
  const fs::path no_llm = demo_copy("no_llm");
  fs::remove_all(no_llm / "text_encoder" / "llm");
  // Without text_encoder/llm/ the folder is not detected; named as the model, the part is named.
  EXPECT_EQ(fam().detect(no_llm.string()), "");
  const std::string e1 = error_of([&] { (void)fam().resolve(no_llm.string(), hunyuan15::kT2VTinyDemo); });
  EXPECT_NE(e1.find("text_encoder/llm"), std::string::npos) << e1;
  const fs::path no_glyph = demo_copy("no_glyph");
  fs::remove_all(no_glyph / "text_encoder" / "Glyph-SDXL-v2" / "checkpoints");
  const std::string e2 = error_of([&] { (void)fam().resolve(no_glyph.string(), ""); });
  EXPECT_NE(e2.find("byt5_model.pt"), std::string::npos) << e2;
  const fs::path distilled = demo_copy("distilled");
  fs::rename(distilled / "transformer" / "480p_t2v", distilled / "transformer" / "480p_t2v_distilled");
  const std::string e3 = error_of([&] { (void)fam().resolve(distilled.string(), ""); });
  EXPECT_NE(e3.find("present: 480p_t2v_distilled"), std::string::npos) << e3;
  EXPECT_NE(e3.find("not built"), std::string::npos) << e3;
}

// As a user runs it: make-demo, generate an mp4, the latents reproducible by seed; bad sizes and a
// missing text encoder refused naming the value or the path; --image refused (t2v only).
TEST(Hunyuan15Family, MakeDemoThenGenerateFromTheCli) {
  namespace cli = vidax::test::cli;
  const fs::path d = test::scratch_dir("hy15_family_cli");
  const std::string demo = (d / "demo").string();
  fs::remove_all(demo);
  {
    const auto r = cli::run({"make-demo", demo, "--model", "hunyuanvideo1.5-t2v-tiny-demo"}, {.timeout_s = 120});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::vector<std::string> base{"generate", "--weights", demo, "--frames", "5", "--height", "32", "--width", "32",
                                      "--steps", "2", "--seed", "1", "--threads", "2"};
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.timeout_s = 300});
  };
  const std::string mp4 = (d / "out.mp4").string();
  {
    const auto r = gen({"--prompt", "a neon sign that reads \"HY\"", "-o", mp4});
    ASSERT_EQ(r.code, 0) << r.err;
    const io::VideoFileInfo info = io::read_video(mp4);
    EXPECT_EQ(info.frames, 5);
    EXPECT_EQ(info.width, 32);
    EXPECT_EQ(info.height, 32);
  }
  const std::string l1 = (d / "l1.safetensors").string(), l2 = (d / "l2.safetensors").string();
  for (const std::string& out : {l1, l2}) {
    const auto r = gen({"--prompt", "a cat", "--output-format", "latents", "-o", out});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const io::Checkpoint c1 = io::Checkpoint::open(l1), c2 = io::Checkpoint::open(l2);
  EXPECT_EQ(max_abs(c1.get(c1.names().front()), c2.get(c2.names().front())), 0.0);

  auto err = [&](std::vector<std::string> a) {
    const auto r = cli::run(a, {.timeout_s = 120});
    EXPECT_NE(r.code, 0);
    return r.err;
  };
  const std::vector<std::string> g{"generate", "--weights", demo, "--prompt", "a cat", "--steps", "1", "-o", mp4};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = g;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  EXPECT_NE(err(with({"--frames", "6"})).find("4k+1"), std::string::npos);
  EXPECT_NE(err(with({"--height", "40"})).find("nearest: 32 or 48"), std::string::npos);
  // --mesh (one rank: the loader's refusal) and --image (a still: the t2v variant takes none).
  EXPECT_NE(err(with({"--mesh", "cfg=1"})).find("--mesh: HunyuanVideo 1.5 runs on a single rank"), std::string::npos);
  const fs::path frames = d / "still";
  fs::remove_all(frames);
  io::RgbVideo still{1, 32, 32, std::vector<uint8_t>(32 * 32 * 3, 128)};
  io::write_png_frames(frames.string(), still, {});
  const std::string e_image = err(with({"--image", (frames / "frame_00000.png").string()}));
  EXPECT_NE(e_image.find("takes no image"), std::string::npos) << e_image;
  fs::remove_all(fs::path(demo) / "text_encoder" / "llm");
  const std::string e = err(with({"--model", "hunyuanvideo1.5-t2v-tiny-demo"}));
  EXPECT_NE(e.find("text_encoder/llm"), std::string::npos) << e;
}
