// LTX-2 image conditioning in the family's run (`vidax generate --image FILE [--image-frame N]
// [--image-strength S]`, src/models/ltx2/t2v_run.h encode_images): the run with an image is the kind
// ltx2.pipeline.i2v's code path (the official TI2VidOneStagePipeline.__call__ with images, verified on
// tiny weights), bit for bit; a frame-0 image of strength 1 keeps its latent; a keyframe moves the
// output; the CLI's pairing rule and its errors; Wan's --image unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "cli_child.h"
#include "core/rng.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "io/video.h"
#include "ltx2_golden.h"
#include "models/ltx2/checkpoint.h"
#include "models/ltx2/conditioning.h"
#include "models/ltx2/family.h"
#include "models/ltx2/presets.h"
#include "models/ltx2/t2v_run.h"
#include "parity/parity.h"
#include "pipeline/generate.h"
#include "pipeline/scratch.h"

namespace fs = std::filesystem;
using namespace vidax;
using vidax::test::ltx2::expect_error;

namespace {

const std::string& demo_dir() {
  static const std::string d = [] {
    const fs::path root = test::scratch_dir("ltx2_image_demo");
    pipeline::DemoOptions o;
    o.out_dir = (root / "demo").string();
    ltx2::family().make_demo(ltx2::k23TinyDemo, o);
    return o.out_dir;
  }();
  return d;
}

// A 56x40 PNG (another aspect ratio than the video's: resized and centre-cropped), its path.
std::string png(const std::string& name, int salt) {
  const fs::path dir = test::scratch_dir("ltx2_image_png_" + name);
  io::RgbVideo v;
  v.frames = 1;
  v.height = 40;
  v.width = 56;
  v.rgb.resize(v.frame_bytes());
  for (size_t i = 0; i < v.rgb.size(); ++i) v.rgb[i] = static_cast<uint8_t>((i * 13 + static_cast<size_t>(salt)) % 256);
  io::write_png_frames((dir / "frames").string(), v, {});
  return (dir / "frames" / "frame_00000.png").string();
}

const pipeline::LoadedModel& loaded() {
  static const pipeline::LoadedModel m = [] {
    pipeline::LoadOptions lo;
    lo.weights_dir = demo_dir();
    lo.precision = "fp32";
    return ltx2::family().load(lo);
  }();
  return m;
}

pipeline::Request demo_request(uint64_t seed) {
  const pipeline::Defaults& d = ltx2::preset(ltx2::k23TinyDemo).variant.defaults;
  pipeline::Request r;
  r.prompt = "a cat on a sofa";
  r.default_negative_prompt = d.negative_prompt;
  r.frames = 9;
  r.height = 32;
  r.width = 64;
  r.steps = 2;
  r.seed = seed;
  r.guidance = d.guidance;
  r.shift = d.shift;
  r.sampler = d.sampler;
  r.fps = 24;
  return r;
}

pipeline::KeyImage key(const std::string& file, int64_t frame, double strength) {
  return {io::read_image(file, "--image"), frame, strength};
}

double max_abs(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_f64_vector(), y = b.to_f64_vector();
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// The file's 8-bit picture as the kinds take it: [h, w, 3] F32 0..255.
Tensor picture(const std::string& file) {
  io::RgbVideo v;
  (void)io::read_video(file, &v);
  std::vector<float> x(v.rgb.begin(), v.rgb.end());
  return Tensor::from_f32(x, {v.height, v.width, 3});
}

}  // namespace

// The family's run with one image at frame 0 against the kind ltx2.pipeline.i2v fed the same
// contexts and the same picture, encoded by the kind itself with the checkpoint's vae.encoder.*: the
// video and audio latents and the image latent agree exactly (max abs 0); a perturbed picture fails.
TEST(Ltx2FamilyImage, TheRunWithAnImageIsTheI2VKindsCodePath) {
  const std::string img = png("kind", 0);
  pipeline::Request req = demo_request(11);
  req.key_images = {key(img, 0, 1.0)};
  const pipeline::Result res = pipeline::run_generation(loaded().parts, req, {}, /*decode=*/false);
  EXPECT_EQ(res.latents.shape(), Shape({128, 2, 1, 2}));  // the appended tokens dropped: F' h w only

  const ltx2::CheckpointFiles files = ltx2::find_checkpoint(demo_dir());
  const ltx2::Preset& preset = ltx2::preset(ltx2::k23TinyDemo);
  const auto m = ltx2::load_model(files, preset, DType::F32, pipeline::Residency::Resident);
  ASSERT_TRUE(m->encoder);
  const ltx2::PromptContexts ctx = ltx2::encode_contexts(*m, req.prompt, res.negative_prompt);
  const ltx2::T2VRequest r = ltx2::t2v_request(preset, req);
  const Tensor latent = m->encoder->forward(ltx2::preprocess_image(picture(img), r.height, r.width));
  const fs::path d = test::scratch_dir("ltx2_image_kind");
  auto write_golden = [&](const std::string& path, double perturb) {
    const io::Checkpoint ck = io::Checkpoint::open(files.checkpoint);
    std::map<std::string, Tensor> t;
    for (const auto& n : ck.names())
      if ((n.rfind("model.diffusion_model.", 0) == 0 && n.find("embeddings_connector.") == std::string::npos) ||
          n.rfind("vae.encoder.", 0) == 0 || n.rfind("vae.per_channel_statistics.", 0) == 0)
        t[n] = ck.get(n);
    t["input.v_context_p"] = ctx.v_context_p;
    t["input.a_context_p"] = ctx.a_context_p;
    t["input.v_context_n"] = ctx.v_context_n;
    t["input.a_context_n"] = ctx.a_context_n;
    const Tensor pic = picture(img);
    t["input.image.0"] = perturb == 0 ? pic : ops::add_scalar(pic, perturb);
    t["output.video_latent"] = res.latents.unsqueeze(0);
    t["output.audio_latent"] = res.taps.at("audio_latent").unsqueeze(0);
    t["inter.image_latent.0"] = latent;
    nlohmann::json c = {{"height", r.height},
                        {"width", r.width},
                        {"num_frames", r.num_frames},
                        {"frame_rate", r.frame_rate},
                        {"num_inference_steps", r.num_inference_steps},
                        {"seed", r.seed},
                        {"video_guider_params", r.video_guider.to_json()},
                        {"audio_guider_params", r.audio_guider.to_json()},
                        {"images", {{{"frame_idx", 0}, {"strength", 1.0}}}},
                        {"transformer", files.config.at("transformer")},
                        {"vae", files.config.at("vae")}};
    io::save_safetensors(path, t, {{"kind", "ltx2.pipeline.i2v"}, {"config", c.dump()}});
  };
  engine::register_builtins();
  write_golden((d / "same.safetensors").string(), 0);
  const parity::Report rep = parity::run((d / "same.safetensors").string(), parity::Options{});
  for (const auto& c : rep.rows) {
    std::printf("  family image run vs ltx2.pipeline.i2v %-22s max_abs=%.3g\n", c.name.c_str(), c.max_abs);
    if (c.status != parity::Comparison::Status::Skip) EXPECT_EQ(c.max_abs, 0.0) << c.name;
  }
  EXPECT_TRUE(rep.ok());
  EXPECT_GE(rep.compared, 3);  // the video latent, the audio latent, the image latent
  write_golden((d / "perturbed.safetensors").string(), 8.0);  // every pixel 8 levels brighter
  const parity::Report bad = parity::run((d / "perturbed.safetensors").string(), parity::Options{});
  EXPECT_FALSE(bad.ok());  // the negative control

  // Strength 1 at frame 0: the first latent frame's tokens are the image's latent, unchanged.
  EXPECT_EQ(max_abs(res.latents.slice(1, 0, 1), latent.select(0, 0)), 0.0);
  // Request::image (vidax serve's input_reference) is frame 0 at strength 1: the same run.
  pipeline::Request first = demo_request(11);
  first.image = io::read_image(img, "--image");
  const pipeline::Result res2 = pipeline::run_generation(loaded().parts, first, {}, false);
  EXPECT_EQ(max_abs(res2.latents, res.latents), 0.0);
  EXPECT_EQ(max_abs(res2.taps.at("audio_latent"), res.taps.at("audio_latent")), 0.0);
}

// A keyframe at frame 8 (appended tokens) changes the video against none and against the same image
// at frame 0; two images apply in order; half strength at frame 0 lets the first latent frame move.
TEST(Ltx2FamilyImage, AKeyframeMovesTheVideoAndStrengthMatters) {
  const std::string img = png("keyframe", 5);
  const pipeline::Result none = pipeline::run_generation(loaded().parts, demo_request(3), {}, false);
  pipeline::Request k8 = demo_request(3);
  k8.key_images = {key(img, 8, 1.0)};
  const pipeline::Result at8 = pipeline::run_generation(loaded().parts, k8, {}, false);
  pipeline::Request k0 = demo_request(3);
  k0.key_images = {key(img, 0, 1.0)};
  const pipeline::Result at0 = pipeline::run_generation(loaded().parts, k0, {}, false);
  ASSERT_EQ(at8.latents.shape(), none.latents.shape());
  const double d8 = max_abs(at8.latents, none.latents), d80 = max_abs(at8.latents, at0.latents);
  std::printf("  keyframe at 8 vs none: max_abs %.3g; vs the image at frame 0: %.3g\n", d8, d80);
  EXPECT_GT(d8, 1e-3);
  EXPECT_GT(d80, 1e-3);
  // Both at once (the first frame, then the keyframe), as the reference applies them in order.
  pipeline::Request both = demo_request(3);
  both.key_images = {key(img, 0, 1.0), key(img, 8, 0.5)};
  const pipeline::Result b = pipeline::run_generation(loaded().parts, both, {}, false);
  EXPECT_GT(max_abs(b.latents, at0.latents), 1e-3);
  EXPECT_TRUE(ops::all_finite(b.latents) && ops::all_finite(b.taps.at("audio_latent")));
  // Half strength at frame 0: the first latent frame moves off the image's latent.
  pipeline::Request half = demo_request(3);
  half.key_images = {key(img, 0, 0.5)};
  const pipeline::Result h = pipeline::run_generation(loaded().parts, half, {}, false);
  EXPECT_GT(max_abs(h.latents.slice(1, 0, 1), at0.latents.slice(1, 0, 1)), 1e-3);
}

// What the run refuses, before the encoder runs: a frame outside [0, frames), a strength outside
// [0, 1], a last frame; a checkpoint without vae.encoder.* names the encoder.
TEST(Ltx2FamilyImage, BadImagesAreRefusedByName) {
  const std::string img = png("bad", 1);
  auto refused = [&](const std::function<void(pipeline::Request&)>& change, const std::string& needle) {
    pipeline::Request r = demo_request(1);
    change(r);
    expect_error([&] { pipeline::run_generation(loaded().parts, r, {}, false); }, needle);
  };
  refused([&](pipeline::Request& r) { r.key_images = {key(img, 9, 1.0)}; },
          "frame index 9 is outside the video's frames [0, 9)");
  refused([&](pipeline::Request& r) { r.key_images = {key(img, 0, 1.5)}; }, "strength 1.5 must be in [0, 1]");
  refused([&](pipeline::Request& r) { r.key_images = {key(img, -1, 1.0)}; }, "frame index -1");
  refused([&](pipeline::Request& r) {
    r.image = io::read_image(img);
    r.last_image = io::read_image(img);
  },
          "--last-image");

  // A folder whose checkpoint lacks the encoder (a demo made before it was added).
  const fs::path old = test::scratch_dir("ltx2_image_no_encoder");
  for (const auto& e : fs::directory_iterator(demo_dir()))
    if (e.path().extension() != ".safetensors") fs::copy(e.path(), old / e.path().filename(), fs::copy_options::recursive);
  {
    const io::Checkpoint ck = io::Checkpoint::open((fs::path(demo_dir()) / "ltx2.3-tiny-demo.safetensors").string());
    std::map<std::string, Tensor> t;
    for (const auto& n : ck.names())
      if (n.rfind("vae.encoder.", 0) != 0) t[n] = ck.get(n);
    io::save_safetensors((old / "ltx2.3-tiny-demo.safetensors").string(), t,
                         {{"config", ck.metadata().at("config")}, {"model_version", "2.3.0"}});
  }
  pipeline::LoadOptions lo;
  lo.weights_dir = old.string();
  lo.precision = "fp32";
  const pipeline::LoadedModel m = ltx2::family().load(lo);
  pipeline::Request r = demo_request(1);
  EXPECT_NO_THROW(pipeline::run_generation(m.parts, r, {}, false));  // text-to-video still runs
  r.key_images = {key(img, 0, 1.0)};
  expect_error([&] { pipeline::run_generation(m.parts, r, {}, false); }, "has no video VAE encoder (vae.encoder.*)");
}

// `vidax generate --image` on the demo as a user runs it: one image at frame 0 gives the latents of
// the in-process run with the same request (bit for bit); the pairing rule's errors name the option
// before any weight is read; Wan's --image keeps its rules (a second --image names --last-image).
TEST(Ltx2CliImage, GenerateWithImagesAndTheirErrors) {
  namespace cli = vidax::test::cli;
  const fs::path d = test::scratch_dir("ltx2_cli_image");
  const std::string img = png("cli", 2), img2 = png("cli2", 77), lat = (d / "lat.safetensors").string();
  const std::vector<std::string> base{"generate", "--weights", demo_dir(), "--prompt", "a cat on a sofa",
                                      "--frames", "9",        "--height",  "32",   "--width", "64",
                                      "--steps",  "2",        "--seed",    "11",   "--threads", "2",
                                      "--precision", "fp32"};
  auto gen = [&](std::vector<std::string> extra, bool out = false) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.capture_stdout = out, .timeout_s = 300});
  };
  auto latents_of = [](const std::string& f) {
    const io::Checkpoint ck = io::Checkpoint::open(f);
    return ck.get(ck.names().front());
  };
  {
    const auto r = gen({"--image", img, "--output-format", "latents", "-o", lat});
    ASSERT_EQ(r.code, 0) << r.err;
    pipeline::Request q = demo_request(11);
    q.key_images = {key(img, 0, 1.0)};
    const pipeline::Result res = pipeline::run_generation(loaded().parts, q, {}, false);
    EXPECT_EQ(max_abs(latents_of(lat), res.latents), 0.0);
  }
  {  // Two images: the second at frame 8, strength 0.5; the record names both.
    const std::string lat2 = (d / "lat2.safetensors").string();
    const auto r = gen({"--image", img, "--image", img2, "--image-frame", "8", "--image-strength", "0.5",
                        "--output-format", "latents", "-o", lat2, "--json"},
                       true);
    ASSERT_EQ(r.code, 0) << r.err;
    pipeline::Request q = demo_request(11);
    q.key_images = {key(img, 0, 1.0), key(img2, 8, 0.5)};
    const pipeline::Result res = pipeline::run_generation(loaded().parts, q, {}, false);
    EXPECT_EQ(max_abs(latents_of(lat2), res.latents), 0.0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.at("key_images").size(), 2u) << j.dump();
    EXPECT_EQ(j["key_images"][1]["file"], img2);
    EXPECT_EQ(j["key_images"][1]["frame"], 8);
    EXPECT_EQ(j["key_images"][1]["strength"], 0.5);
    EXPECT_EQ(j["key_images"][0]["frame"], 0);
  }
  const std::string junk = (d / "junk.png").string();
  std::ofstream(junk) << "not a png";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--image", img, "--image-frame", "9"}, "--image-frame 9 (image 1): outside the video's frames [0, 9)"},
      {{"--image", img, "--image-strength", "1.5"}, "--image-strength 1.5 (image 1): must be in [0, 1]"},
      {{"--image-frame", "3"}, "--image-frame 3 comes before any --image"},
      {{"--image-frame", "3", "--image", img}, "--image-frame 3 comes before any --image"},
      {{"--image", img, "--image-frame", "0", "--image-frame", "8"}, "--image-frame 8 is the second --image-frame"},
      {{"--image", img, "--image-strength", "1", "--image-strength", "0.5"}, "is the second --image-strength"},
      {{"--image", img, "--image", img2}, "(image 2 of 2) has no --image-frame"},
      {{"--image", junk}, "cannot read the --image " + junk},
      {{"--image", img, "--last-image", img2}, "--last-image"},
  };
  const std::string out = (d / "x.mp4").string();
  for (const auto& [extra, needle] : cases) {
    std::vector<std::string> e = extra;
    e.insert(e.end(), {"-o", out});
    const auto r = gen(e);
    EXPECT_NE(r.code, 0) << extra.front();
    EXPECT_NE(r.err.find(needle), std::string::npos) << extra.front() << ": " << r.err;
    EXPECT_EQ(r.err.find("loading the DiT"), std::string::npos) << "refused after the weights: " << r.err;
  }
  EXPECT_FALSE(fs::exists(out));

  // Wan: one first frame; a second --image names --last-image, --image-frame is refused by name.
  const std::string wan = (d / "wan-i2v").string();
  {
    const auto r = cli::run({"make-demo", wan, "--model", "wan2.1-i2v-tiny-demo", "--tokenizer", cli::tiny_spiece()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  for (const auto& [extra, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--image", img, "--image", img2}, "--image given 2 times: wan2.1-i2v-tiny-demo takes one first frame"},
           {{"--image", img, "--image", img2}, "--last-image FILE"},
           {{"--image", img, "--image-frame", "4"}, "--image-frame / --image-strength: wan2.1-i2v-tiny-demo"},
           {{"--image", img, "--image-strength", "0.5"}, "conditions on the first frame only"}}) {
    std::vector<std::string> a{"generate", "--weights", wan, "--prompt", "a cat", "--steps", "1", "-o", out};
    a.insert(a.end(), extra.begin(), extra.end());
    const auto r = cli::run(a, {.timeout_s = 120});
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
}
