// The LTX-2 Family (src/models/ltx2/family.cpp): the tiny demo (`vidax make-demo --model
// ltx2.3-tiny-demo`), its discovery, the family's whole run (Parts::run) against the code path of the
// kind ltx2.pipeline.t2v (the official TI2VidOneStagePipeline.__call__ verified on tiny weights), and
// `vidax generate` on the demo as a user runs it: an MP4 with its AAC track, --no-audio,
// --audio-output, latents, --json, and the refused options.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "cli_child.h"
#include "core/rng.h"
#include "engine/families.h"
#include "io/audio.h"
#include "io/checkpoint.h"
#include "io/video.h"
#include "ltx2_golden.h"
#include "models/ltx2/checkpoint.h"
#include "models/ltx2/demo.h"
#include "models/ltx2/family.h"
#include "models/ltx2/presets.h"
#include "models/ltx2/t2v_run.h"
#include "pipeline/generate.h"
#include "pipeline/scratch.h"
#include "text/gemma_tokenizer.h"

namespace fs = std::filesystem;
using namespace vidax;
using vidax::test::ltx2::expect_error;

namespace {

// One demo folder for the whole binary (make-demo takes well under a second).
const std::string& demo_dir() {
  static const std::string d = [] {
    const fs::path root = test::scratch_dir("ltx2_family_demo");
    pipeline::DemoOptions o;
    o.out_dir = (root / "demo").string();
    ltx2::family().make_demo(ltx2::k23TinyDemo, o);
    return o.out_dir;
  }();
  return d;
}

pipeline::LoadedModel load_demo(const std::string& dir = demo_dir()) {
  pipeline::LoadOptions lo;
  lo.weights_dir = dir;
  lo.precision = "fp32";
  return ltx2::family().load(lo);
}

pipeline::Request demo_request(const std::string& prompt, uint64_t seed) {
  const pipeline::Defaults& d = ltx2::preset(ltx2::k23TinyDemo).variant.defaults;
  pipeline::Request r;
  r.prompt = prompt;
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

double max_abs(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_f64_vector(), y = b.to_f64_vector();
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// The reference's audio length for F frames at fps: T = round(F / fps * 25) latent frames
// (AudioLatentShape.from_video_pixel_shape), 4 T - 3 mel frames (the causal decoder's crop), 160
// samples each at 16 kHz (the base vocoder), x3 by the bandwidth extension to 48 kHz.
int64_t reference_audio_samples(int64_t frames, double fps) {
  const int64_t t = static_cast<int64_t>(std::nearbyint(static_cast<double>(frames) / fps * 25.0));
  return (4 * t - 3) * 160 * 3;
}

}  // namespace

TEST(Ltx2Family, DemoTokenizerIsTheFormatTheLoaderReads) {
  const fs::path d = test::scratch_dir("ltx2_demo_tok");
  const int64_t n = ltx2::write_demo_tokenizer(d.string());
  const text::GemmaTokenizer tok = text::GemmaTokenizer::from_dir(d.string());
  EXPECT_EQ(tok.vocab_size(), n);
  EXPECT_LE(n, 2048);  // the demo Gemma's rows
  EXPECT_EQ(tok.bos_id(), 2);
  EXPECT_EQ(tok.pad_id(), 0);
  // <bos>, then the words (merged whole: "a", then "cat" with its leading U+2581).
  EXPECT_EQ(tok.encode("a cat"), (std::vector<int64_t>{2, *tok.token_id("a"), *tok.token_id("\xe2\x96\x81" "cat")}));
  // A word it does not hold: one token per character (the space is U+2581).
  EXPECT_EQ(tok.encode("a zq").size(), 5u);
  EXPECT_EQ(tok.encode("\xc3\xa9").size(), 3u);  // e-acute: <bos> and its two bytes (byte fallback)
  const text::TokenizedPrompt p = ltx2::tokenize_prompt(tok, "  a cat ");
  EXPECT_EQ(p.length, 3);  // stripped as the reference strips
  const text::TokenizedPrompt neg = ltx2::tokenize_prompt(tok, ltx2::default_negative_prompt());
  std::printf("  demo tokenizer: %lld ids; the default negative prompt is %lld tokens\n", static_cast<long long>(n),
              static_cast<long long>(neg.length));
  EXPECT_FALSE(neg.truncated);
  EXPECT_LT(neg.length, 1024);  // measured 512: merges of one word can block another's, still well within
  EXPECT_EQ(p.ids.size(), 1024u);
  EXPECT_EQ(p.ids.front(), 0);  // LEFT padding with <pad>
}

TEST(Ltx2Family, DemoFolderIsTheOfficialLayoutAndIsDetected) {
  const fs::path d = demo_dir();
  for (const char* f : {"ltx2.3-tiny-demo.safetensors", "vidax_model.json", "gemma-3-tiny-demo/config.json",
                        "gemma-3-tiny-demo/model.safetensors", "gemma-3-tiny-demo/tokenizer.json",
                        "gemma-3-tiny-demo/tokenizer_config.json"})
    EXPECT_TRUE(fs::is_regular_file(d / f)) << f;
  std::printf("  demo checkpoint %.1f KB, Gemma %.1f KB\n",
              static_cast<double>(fs::file_size(d / "ltx2.3-tiny-demo.safetensors")) / 1024.0,
              static_cast<double>(fs::file_size(d / "gemma-3-tiny-demo/model.safetensors")) / 1024.0);
  const ltx2::CheckpointFiles f = ltx2::find_checkpoint(d.string());
  EXPECT_EQ(f.model_version, "2.3.0");
  EXPECT_EQ(fs::path(f.gemma_root).filename(), "gemma-3-tiny-demo");
  const engine::Resolved r = engine::resolve(d.string(), "");
  EXPECT_EQ(r.family->name(), "ltx2");
  EXPECT_EQ(r.variant.name, ltx2::k23TinyDemo);
  EXPECT_TRUE(r.variant.audio);
  expect_error([&] { engine::resolve(d.string(), ltx2::k23Dev); }, "make-demo` folder of ltx2.3-tiny-demo");

  // Without vidax_model.json the bundled checkpoint is the dev model's layout.
  const fs::path bare = test::scratch_dir("ltx2_family_bare");
  fs::copy(d / "ltx2.3-tiny-demo.safetensors", bare / "ltx-2.3-22b-dev.safetensors");
  expect_error([&] { engine::resolve(bare.string(), ""); }, "no Gemma-3 folder beside ltx-2.3-22b-dev.safetensors");
  fs::copy(d / "gemma-3-tiny-demo", bare / "gemma-3-12b-it-qat-q4_0-unquantized");
  EXPECT_EQ(engine::resolve(bare.string(), "").variant.name, ltx2::k23Dev);
  // Beside the distilled checkpoint (both downloaded into one folder), the dev one is taken.
  fs::copy(bare / "ltx-2.3-22b-dev.safetensors", bare / "ltx-2.3-22b-distilled-1.1.safetensors");
  EXPECT_EQ(fs::path(ltx2::find_checkpoint(bare.string()).checkpoint).filename(), "ltx-2.3-22b-dev.safetensors");
  fs::remove(bare / "ltx-2.3-22b-dev.safetensors");
  expect_error([&] { engine::resolve(bare.string(), ""); }, "distilled variant");
  fs::remove(bare / "ltx-2.3-22b-distilled-1.1.safetensors");
  {  // An LTX-2.0 checkpoint (model_version below 2.3) is refused by name.
    const io::Checkpoint ck = io::Checkpoint::open((d / "ltx2.3-tiny-demo.safetensors").string());
    std::map<std::string, Tensor> t;
    for (const auto& n : ck.names()) t[n] = ck.get(n);
    io::save_safetensors((bare / "ltx-2-19b-dev.safetensors").string(), t,
                         {{"config", ck.metadata().at("config")}, {"model_version", "2.0.0"}});
  }
  expect_error([&] { engine::resolve(bare.string(), ""); }, "model_version '2.0.0': an LTX-2.0 checkpoint");
  fs::remove(bare / "gemma-3-12b-it-qat-q4_0-unquantized" / "tokenizer.json");
  expect_error([&] { ltx2::find_checkpoint(bare.string()); }, "tokenizer.json");
}

// The family's run (through the generic entry run_generation) is the kind ltx2.pipeline.t2v's code
// path: given the contexts the family encodes, the kind reproduces its video and audio latents
// exactly (max abs 0), and a perturbed context fails it; the decodes are the kind's decode_video
// (the same generator) and decode_audio (with VocoderWithBWE), bit for bit.
TEST(Ltx2Family, TheRunIsThePipelineKindsCodePath) {
  const pipeline::LoadedModel loaded = load_demo();
  EXPECT_EQ(loaded.variant.name, ltx2::k23TinyDemo);
  ASSERT_TRUE(static_cast<bool>(loaded.parts.run));
  const pipeline::Request req = demo_request("a red panda in the snow", 42);
  int steps_seen = 0;
  pipeline::Events ev;
  ev.on_step = [&](int done, int total, double) {
    EXPECT_EQ(total, 2);
    steps_seen = done;
  };
  const pipeline::Result res = pipeline::run_generation(loaded.parts, req, ev, /*decode=*/true);
  EXPECT_EQ(steps_seen, 2);
  ASSERT_TRUE(res.taps.count("audio_latent"));
  EXPECT_EQ(res.latents.shape(), Shape({128, 2, 1, 2}));
  EXPECT_EQ(res.taps.at("audio_latent").shape(), Shape({8, 9, 16}));  // round(9 / 24 * 25) = 9
  EXPECT_EQ(res.video.shape(), Shape({3, 9, 32, 64}));
  EXPECT_EQ(res.audio.shape(), Shape({2, reference_audio_samples(9, 24)}));
  EXPECT_EQ(res.audio_sample_rate, 48000);
  EXPECT_EQ(res.negative_prompt, ltx2::default_negative_prompt());
  EXPECT_EQ(res.denoiser_calls, 2 * 4);  // cond, uncond, STG, modality batched per step

  // The kind's inputs: the same contexts, from a model loaded on its own.
  const ltx2::CheckpointFiles files = ltx2::find_checkpoint(demo_dir());
  const ltx2::Preset& preset = ltx2::preset(ltx2::k23TinyDemo);
  const auto m = ltx2::load_model(files, preset, DType::F32, pipeline::Residency::Resident);
  const ltx2::PromptContexts ctx = ltx2::encode_contexts(*m, req.prompt, res.negative_prompt);
  EXPECT_EQ(ctx.v_context_p.shape(), Shape({1, 1024, 32}));
  EXPECT_EQ(ctx.a_context_n.shape(), Shape({1, 1024, 16}));
  const ltx2::T2VRequest r = ltx2::t2v_request(preset, req);
  const fs::path d = test::scratch_dir("ltx2_family_kind");
  auto write_golden = [&](const std::string& path, double perturb) {
    const io::Checkpoint ck = io::Checkpoint::open(files.checkpoint);
    std::map<std::string, Tensor> t;
    for (const auto& n : ck.names())
      if (n.rfind("model.diffusion_model.", 0) == 0 && n.find("embeddings_connector.") == std::string::npos)
        t[n] = ck.get(n);
    t["input.v_context_p"] = perturb == 0 ? ctx.v_context_p : ops::add_scalar(ctx.v_context_p, perturb);
    t["input.a_context_p"] = ctx.a_context_p;
    t["input.v_context_n"] = ctx.v_context_n;
    t["input.a_context_n"] = ctx.a_context_n;
    t["output.video_latent"] = res.latents.unsqueeze(0);
    t["output.audio_latent"] = res.taps.at("audio_latent").unsqueeze(0);
    nlohmann::json c = {{"height", r.height},
                        {"width", r.width},
                        {"num_frames", r.num_frames},
                        {"frame_rate", r.frame_rate},
                        {"num_inference_steps", r.num_inference_steps},
                        {"seed", r.seed},
                        {"video_guider_params", r.video_guider.to_json()},
                        {"audio_guider_params", r.audio_guider.to_json()},
                        {"transformer", files.config.at("transformer")}};
    io::save_safetensors(path, t, {{"kind", "ltx2.pipeline.t2v"}, {"config", c.dump()}});
  };
  engine::register_builtins();
  write_golden((d / "same.safetensors").string(), 0);
  const parity::Report rep = parity::run((d / "same.safetensors").string(), parity::Options{});
  for (const auto& c : rep.rows) {
    std::printf("  family run vs ltx2.pipeline.t2v %-20s max_abs=%.3g\n", c.name.c_str(), c.max_abs);
    if (c.status != parity::Comparison::Status::Skip) EXPECT_EQ(c.max_abs, 0.0) << c.name;
  }
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(rep.compared, 2);
  write_golden((d / "perturbed.safetensors").string(), 0.05);
  const parity::Report bad = parity::run((d / "perturbed.safetensors").string(), parity::Options{});
  EXPECT_FALSE(bad.ok());  // the negative control: another context moves the latents past the bound

  // The decodes as the kind runs them: decode_video with the generator after both noise draws.
  TorchGenerator gen(r.seed);
  const ltx2::T2VLatents lat = ltx2::denoise_t2v(*m->dit, r, ctx, gen);
  EXPECT_EQ(max_abs(lat.video.select(0, 0), res.latents), 0.0);
  ltx2::DecoderConditioning cond;
  cond.generator = &gen;
  const Tensor video = ops::clamp(m->vae->forward(lat.video, {}, cond).select(0, 0), -1.0, 1.0);
  EXPECT_EQ(max_abs(video, res.video), 0.0);
  const Tensor audio = m->vocoder->forward(m->audio_vae->forward(lat.audio)).select(0, 0);
  EXPECT_EQ(max_abs(audio, res.audio), 0.0);
  EXPECT_TRUE(ops::all_finite(res.audio) && ops::all_finite(res.video));
}

TEST(Ltx2Family, SameSeedSameRunAnotherPromptOrSeedMoves) {
  const pipeline::LoadedModel loaded = load_demo();
  auto run = [&](const std::string& prompt, uint64_t seed) {
    return pipeline::run_generation(loaded.parts, demo_request(prompt, seed), {}, /*decode=*/false);
  };
  const pipeline::Result a = run("a cat", 3), b = run("a cat", 3), c = run("a dog on a beach", 3), s = run("a cat", 4);
  EXPECT_EQ(max_abs(a.latents, b.latents), 0.0);
  EXPECT_EQ(max_abs(a.taps.at("audio_latent"), b.taps.at("audio_latent")), 0.0);
  const double prompt_moves = max_abs(a.latents, c.latents), audio_moves = max_abs(a.taps.at("audio_latent"),
                                                                                  c.taps.at("audio_latent"));
  const double seed_moves = max_abs(a.latents, s.latents);
  std::printf("  another prompt moves the video latent %.3g, the audio latent %.3g; another seed %.3g\n",
              prompt_moves, audio_moves, seed_moves);
  EXPECT_GT(prompt_moves, 1e-4);
  EXPECT_GT(audio_moves, 1e-4);
  EXPECT_GT(seed_moves, 1e-2);
  EXPECT_FALSE(a.video.defined());  // decode = false stops after denoising
}

// Request::decode_audio false (the CLI's --no-audio without --audio-output): the video is decoded as
// with the audio, the waveform is not computed at all.
TEST(Ltx2Family, NoAudioDecodeLeavesTheVideoAsItIs) {
  const pipeline::LoadedModel loaded = load_demo();
  const pipeline::Result with = pipeline::run_generation(loaded.parts, demo_request("a cat", 5), {}, true);
  pipeline::Request q = demo_request("a cat", 5);
  q.decode_audio = false;
  const pipeline::Result without = pipeline::run_generation(loaded.parts, q, {}, true);
  ASSERT_TRUE(with.audio.defined());
  EXPECT_FALSE(without.audio.defined());
  ASSERT_TRUE(without.video.defined());
  EXPECT_EQ(max_abs(with.video, without.video), 0.0);
  EXPECT_EQ(max_abs(with.latents, without.latents), 0.0);
}

// PromptEncoder frees Gemma after encoding: under FreeAfterUse (the CLI's) it is gone after a run and
// read again by the next; Resident (a server's) keeps it. The outputs do not depend on it.
TEST(Ltx2Family, TheTextEncoderIsFreedAfterEncodingUnderFreeAfterUse) {
  const ltx2::CheckpointFiles files = ltx2::find_checkpoint(demo_dir());
  const ltx2::Preset& preset = ltx2::preset(ltx2::k23TinyDemo);
  const auto freed = ltx2::load_model(files, preset, DType::F32, pipeline::Residency::FreeAfterUse);
  const auto kept = ltx2::load_model(files, preset, DType::F32, pipeline::Residency::Resident);
  const pipeline::Request q = demo_request("a cat", 5);
  const pipeline::Result a = ltx2::run(*freed, q, {}, false);
  EXPECT_FALSE(freed->text.gemma->loaded());
  const pipeline::Result b = ltx2::run(*freed, q, {}, false);
  EXPECT_EQ(freed->text.gemma->loads(), 2);
  const pipeline::Result c = ltx2::run(*kept, q, {}, false);
  EXPECT_TRUE(kept->text.gemma->loaded());
  EXPECT_EQ(kept->text.gemma->loads(), 1);
  EXPECT_EQ(max_abs(a.latents, b.latents), 0.0);
  EXPECT_EQ(max_abs(a.latents, c.latents), 0.0);
}

TEST(Ltx2Family, RequestsItDoesNotTakeAreRefusedByName) {
  const pipeline::LoadedModel loaded = load_demo();
  auto refused = [&](const std::function<void(pipeline::Request&)>& change, const std::string& needle) {
    pipeline::Request r = demo_request("a cat", 1);
    change(r);
    expect_error([&] { pipeline::run_generation(loaded.parts, r, {}, false); }, needle);
  };
  refused([](pipeline::Request& r) { r.frames = 10; }, "9 or 17");
  refused([](pipeline::Request& r) { r.height = 48; }, "32 or 64");
  refused([](pipeline::Request& r) { r.width = 100; }, "96 or 128");
  refused([](pipeline::Request& r) { r.sampler = "unipc"; }, "--sampler unipc");
  refused([](pipeline::Request& r) { r.shift = 3; }, "--shift 3");
  refused([](pipeline::Request& r) { r.cfg_scale = 2; }, "--cfg-scale 2");
  refused([](pipeline::Request& r) { r.noise = Tensor::zeros({128, 2, 1, 2}, DType::F32); }, "--noise");
  refused(
      [](pipeline::Request& r) {
        r.image = Tensor::zeros({3, 32, 32}, DType::F32);
        r.last_image = Tensor::zeros({3, 32, 32}, DType::F32);
      },
      "--last-image");  // images: tests/ltx2/test_family_image.cpp
  pipeline::Events rec;
  rec.on_latent = [](int, const Tensor&) {};
  expect_error([&] { pipeline::run_generation(loaded.parts, demo_request("a cat", 1), rec, false); },
               "two latent streams (video, audio): it reports them through Events::on_stream_noise");
  auto load_refused = [&](const std::function<void(pipeline::LoadOptions&)>& change, const std::string& needle) {
    pipeline::LoadOptions lo;
    lo.weights_dir = demo_dir();
    change(lo);
    expect_error([&] { ltx2::family().load(lo); }, needle);
  };
  load_refused([](pipeline::LoadOptions& o) { o.offload = true; }, "--offload");
  load_refused([](pipeline::LoadOptions& o) { o.vae_tile = 256; }, "--vae-tile 256");
  load_refused([](pipeline::LoadOptions& o) { o.device = "pjrt"; }, "--device pjrt");
  load_refused([](pipeline::LoadOptions& o) { o.loras_high_noise = {{"x.safetensors", 1.0}}; }, "--lora-high-noise");
  load_refused([](pipeline::LoadOptions& o) { o.loras = {{"no-such-lora.safetensors", 1.0}}; }, "no-such-lora.safetensors");
  load_refused([](pipeline::LoadOptions& o) { o.files.diffusion_model = "x.safetensors"; }, "--diffusion-model");
  load_refused([](pipeline::LoadOptions& o) { o.precision = "fp16"; }, "--precision fp16");
}

// `vidax make-demo` then `vidax generate` on it, as a user runs them.
TEST(Ltx2Cli, MakeDemoThenGenerateVideoWithAudio) {
  namespace cli = vidax::test::cli;
  const fs::path d = test::scratch_dir("ltx2_cli");
  const std::string demo = (d / "demo").string();
  {
    const auto r = cli::run({"make-demo", demo, "--model", "ltx2.3-tiny-demo"}, {.timeout_s = 120});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::vector<std::string> base{"generate", "--weights", demo, "--prompt", "a cat", "--frames", "9",
                                      "--steps",  "2",         "--seed", "7", "--threads", "2"};
  auto gen = [&](std::vector<std::string> extra, bool out = false) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.capture_stdout = out, .timeout_s = 300});
  };
  const std::string mp4 = (d / "out.mp4").string(), wav = (d / "out.wav").string();
  const auto r = gen({"-o", mp4, "--audio-output", wav, "--json"}, true);
  ASSERT_EQ(r.code, 0) << r.err;
  const int64_t samples = reference_audio_samples(9, 24);  // 9 latent frames -> 33 mel frames -> 15840
  {
    io::Audio track;
    const io::VideoFileInfo info = io::read_video(mp4, nullptr, &track);
    EXPECT_EQ(info.frames, 9);
    EXPECT_EQ(info.fps, 24);
    EXPECT_EQ(info.width, 64);  // the demo's default size
    EXPECT_EQ(info.height, 64);
    EXPECT_EQ(info.video_streams, 1);
    EXPECT_EQ(info.audio_streams, 1);
    ASSERT_TRUE(info.audio.has_value()) << info.audio_error;
    EXPECT_EQ(info.audio->codec, "aac");
    EXPECT_EQ(info.audio->sample_rate, 48000);
    EXPECT_EQ(info.audio->channels, 2);
    std::printf("  mp4: %lld frames at %g fps; aac %lld Hz x %lld, %lld samples (%.4f s; the waveform %lld)\n",
                static_cast<long long>(info.frames), info.fps, static_cast<long long>(info.audio->sample_rate),
                static_cast<long long>(info.audio->channels), static_cast<long long>(info.audio->samples),
                info.audio->duration, static_cast<long long>(samples));
    EXPECT_NEAR(static_cast<double>(info.audio->samples), static_cast<double>(samples), 1024.0);  // AAC frames
    EXPECT_NEAR(info.audio->duration, static_cast<double>(samples) / 48000.0, 1e-3);  // the container's
  }
  {
    const io::Audio w = io::read_wav(wav);
    EXPECT_EQ(w.channels, 2);
    EXPECT_EQ(w.sample_rate, 48000);
    EXPECT_EQ(w.samples_per_channel(), samples);
    // The same samples as the in-process run of the same request (written to WAV the same way).
    const pipeline::LoadedModel loaded = load_demo(demo);
    pipeline::Request q = demo_request("a cat", 7);
    q.height = q.width = 64;
    const pipeline::Result res = pipeline::run_generation(loaded.parts, q, {}, true);
    const std::string mine = (d / "mine.wav").string();
    io::write_wav(mine, io::audio_from_tensor(res.audio, res.audio_sample_rate), io::WavSampleFormat::Pcm16);
    EXPECT_EQ(io::read_wav(mine).samples, w.samples);
  }
  {
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("family"), "ltx2");
    EXPECT_EQ(j.at("model"), "ltx2.3-tiny-demo");
    EXPECT_EQ(j.at("fps"), 24.0);
    EXPECT_EQ(j.at("audio").at("sample_rate"), 48000);
    EXPECT_EQ(j.at("audio").at("channels"), 2);
    EXPECT_EQ(j.at("audio").at("track"), "aac");
    EXPECT_EQ(j.at("audio").at("wav"), wav);
    EXPECT_NEAR(j.at("audio").at("seconds").get<double>(), static_cast<double>(samples) / 48000.0, 1e-9);
  }
  {  // --no-audio: no audio stream.
    const std::string silent = (d / "silent.mp4").string();
    const auto q = gen({"-o", silent, "--no-audio"});
    ASSERT_EQ(q.code, 0) << q.err;
    const io::VideoFileInfo info = io::read_video(silent);
    EXPECT_EQ(info.frames, 9);
    EXPECT_EQ(info.audio_streams, 0);
  }
  {  // Latents: the video latent; a latents run decodes nothing (no audio either).
    const std::string lat = (d / "lat.safetensors").string();
    const auto q = gen({"--output-format", "latents", "-o", lat});
    ASSERT_EQ(q.code, 0) << q.err;
    const io::Checkpoint ck = io::Checkpoint::open(lat);
    EXPECT_EQ(ck.get(ck.names().front()).shape(), Shape({128, 2, 2, 2}));
    const auto w = gen({"--output-format", "latents", "-o", lat, "--audio-output", wav});
    EXPECT_NE(w.code, 0);
    EXPECT_NE(w.err.find("a latents run decodes neither the video nor the audio"), std::string::npos) << w.err;
  }
}

TEST(Ltx2Cli, BadRequestsAndRefusedFlagsNameTheOption) {
  namespace cli = vidax::test::cli;
  const fs::path d = test::scratch_dir("ltx2_cli_bad");
  const std::string demo = demo_dir(), out = (d / "x.mp4").string();
  const std::string lora = (d / "l.safetensors").string(), noise = (d / "n.safetensors").string();
  std::ofstream(lora) << "x";
  io::save_safetensors(noise, {{"noise", Tensor::zeros({128, 2, 2, 2}, DType::F32)}});
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> a{"generate", "--weights", demo, "--prompt", "a cat", "--steps", "1", "-o", out};
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.timeout_s = 300});
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--frames", "10"}, "9 or 17"},
      {{"--height", "48"}, "32 or 64"},
      {{"--width", "80"}, "64 or 96"},
      {{"--sampler", "unipc"}, "--sampler unipc"},
      {{"--shift", "3"}, "--shift 3"},
      {{"--cfg-scale", "2"}, "--cfg-scale 2"},
      {{"--lora", lora}, lora},
      {{"--lora-high-noise", lora}, "--lora-high-noise / --lora-low-noise: LTX-2 has one DiT"},
      {{"--offload"}, "--offload"},
      {{"--vae-tile", "256"}, "--vae-tile 256"},
      {{"--device", "pjrt"}, "--device pjrt"},
      {{"--noise", noise}, "--noise"},
      {{"--replay", std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/wan_record_tiny"},
       "recorded with model wan2.1-tiny-demo but the weights are ltx2.3-tiny-demo"},
      {{"--model", "ltx2.3-tiny-demo", "--diffusion-model", lora}, "--diffusion-model"},
      {{"--model", "ltx2.3-22b-dev"}, "not ltx2.3-22b-dev"},
      {{"--preset", "lightx2v-4step"}, "lightx2v-4step"},
      {{"--two-stage"}, "--two-stage"},
  };
  for (const auto& [extra, needle] : cases) {
    const auto r = gen(extra);
    EXPECT_NE(r.code, 0) << extra.front();
    EXPECT_NE(r.err.find(needle), std::string::npos) << extra.front() << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(out));
}
