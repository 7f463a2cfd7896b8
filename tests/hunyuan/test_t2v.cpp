// HunyuanVideo 1.0 text-to-video as a family: the whole run (denoise loop + decode) against the
// official HunyuanVideoPipeline.__call__ (tests/golden/pipeline/hunyuan_t2v_tiny.safetensors,
// tools/golden/hunyuan_pipeline.py), the same run through load_t2v from a weights folder,
// discovery of both layouts, the variants and their request checks, and the refusal to load
// without the text encoders.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "engine/families.h"
#include "io/checkpoint.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/family.h"
#include "models/hunyuan/pipeline_parity.h"
#include "models/hunyuan/prompt_encoder.h"
#include "models/hunyuan/t2v.h"
#include "models/hunyuan/weights.h"
#include "parity/parity.h"
#include "pipeline/generate.h"
#include "test_diff.h"
#include "text/clip_text.h"
#include "text/clip_tokenizer.h"
#include "pipeline/guidance.h"
#include "text/llama_config.h"
#include "translate/inspect.h"
#include "translate/source.h"

namespace vidax::hunyuan {
namespace {

namespace fs = std::filesystem;

const std::string kGolden = std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/hunyuan_t2v_tiny.safetensors";
const std::string kCfgGolden = std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/hunyuan_t2v_cfg_tiny.safetensors";

parity::Golden open_golden(const std::string& path = kGolden) {
  auto ck = io::Checkpoint::open(path);
  const auto& meta = ck.metadata();
  return parity::Golden{path, ck, meta.at("kind"), nlohmann::json::parse(meta.at("config"))};
}

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("vidax_test_hunyuan_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void touch(const fs::path& p, const std::string& text = "x") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The whole run at fp32 stays within the component bound (measured: latents and video 5.8e-7
// relative L2, max_abs 2e-6).
constexpr double kLatentsBound = 1e-5, kVideoBound = 1e-5;

TEST(HunyuanT2V, MatchesOfficialPipelineGolden) {
  const parity::Golden g = open_golden();
  ASSERT_EQ(g.kind, "hunyuan.pipeline.t2v");
  const parity::Produced out = run_t2v_golden(g, parity::Options{});
  // The noise and the schedule are exact: the same generator stream, the official scheduler's float32 math.
  EXPECT_EQ(test::diff(g.file.get("inter.noise"), out.at("inter.noise")).max_abs, 0.0);
  EXPECT_EQ(test::diff(g.file.get("inter.timesteps"), out.at("inter.timesteps")).max_abs, 0.0);
  const double lat = test::rel_l2(g.file.get("output.latents"), out.at("output.latents"));
  const double vid = test::rel_l2(g.file.get("output.video"), out.at("output.video"));
  std::printf("  hunyuan_t2v_tiny: latents rel_l2 %.3g (max_abs %.3g), video rel_l2 %.3g (max_abs %.3g)\n", lat,
              test::diff(g.file.get("output.latents"), out.at("output.latents")).max_abs, vid,
              test::diff(g.file.get("output.video"), out.at("output.video")).max_abs);
  EXPECT_LE(lat, kLatentsBound);
  EXPECT_LE(vid, kVideoBound);
}

// --cfg-scale 2.5 on top of the embedded guidance (the official pipeline's guidance_scale > 1: the
// [negative, prompt] batch, both with the embedded scale): fp32 within the same bound; the
// negative prompt's embeddings reach the result (the CFG-free golden's latents are far away).
TEST(HunyuanT2V, ClassifierFreeOnTopOfEmbeddedMatchesOfficial) {
  const parity::Golden g = open_golden(kCfgGolden);
  ASSERT_EQ(g.config.at("cfg_scale").get<double>(), 2.5);
  const parity::Produced out = run_t2v_golden(g, parity::Options{});
  const double lat = test::rel_l2(g.file.get("output.latents"), out.at("output.latents"));
  const double vid = test::rel_l2(g.file.get("output.video"), out.at("output.video"));
  std::printf("  hunyuan_t2v_cfg_tiny: latents rel_l2 %.3g (max_abs %.3g), video rel_l2 %.3g\n", lat,
              test::diff(g.file.get("output.latents"), out.at("output.latents")).max_abs, vid);
  EXPECT_LE(lat, kLatentsBound);
  EXPECT_LE(vid, kVideoBound);
  const parity::Golden plain = open_golden();
  EXPECT_GT(test::rel_l2(plain.file.get("output.latents"), out.at("output.latents")), 1e-3);
  // A CFG request without the negative embeddings is refused by the kind, not run on the prompt's.
  nlohmann::json c = g.config;
  c["negative_prompt"] = "";
  const parity::Golden bad{g.path, g.file, g.kind, c};
  EXPECT_NE(error_of([&] { (void)run_t2v_golden(bad, parity::Options{}); }).find("needs a negative_prompt"),
            std::string::npos);
}

// --cfg-scale belongs to embedded-guidance models: a classifier-free family refuses it by name,
// and a non-positive scale is refused before anything runs.
TEST(HunyuanT2V, CfgScaleIsForEmbeddedGuidanceOnly) {
  EXPECT_NE(error_of([] {
              (void)pipeline::make_guidance(pipeline::GuidanceKind::ClassifierFree, {5.0, 0, -1, 2.0});
            }).find("--cfg-scale 2: this model is guided by classifier-free guidance alone"),
            std::string::npos);
  auto e = pipeline::make_guidance(pipeline::GuidanceKind::Embedded, {6.0, 0, -1, 2.0});
  EXPECT_TRUE(e->needs_uncond(0, 4));
  EXPECT_EQ(e->embedded_scale(), 6.0);
  auto one = pipeline::make_guidance(pipeline::GuidanceKind::Embedded, {6.0, 0, -1, 1.0});
  EXPECT_FALSE(one->needs_uncond(0, 4));
}

TEST(HunyuanT2V, ParityKindIsRegisteredThroughTheFamily) {
  engine::register_builtins();
  const parity::Report rep = parity::run(kGolden, parity::Options{});  // fp32, 1e-5
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(rep.compared, 4);  // output.latents, output.video, inter.noise, inter.timesteps
}

TEST(HunyuanT2V, EmbeddedGuidanceAsThePipelineFormsIt) {
  EXPECT_EQ(embedded_guidance_value(6.0, DType::F32), 6000.0);
  // bf16: tensor([6.0]).to(bfloat16) * 1000.0 rounds 6000 to the bf16 grid (steps of 32 there), to even.
  EXPECT_EQ(embedded_guidance_value(6.0, DType::BF16), 6016.0);
  EXPECT_EQ(embedded_guidance_value(1.0, DType::BF16), 1000.0);
  EXPECT_EQ(embedded_guidance_value(3.3, DType::F32), static_cast<double>(3.3f * 1000.0f));
}

// A weights folder in diffusers' layout holding the golden's tiny DiT and VAE decoder.
fs::path tiny_diffusers_folder(const parity::Golden& g, bool with_text_encoders) {
  const fs::path d = scratch(with_text_encoders ? "diffusers" : "diffusers_no_te");
  std::map<std::string, Tensor> dit, vae;
  for (const auto& n : g.file.names()) {
    if (n.rfind("transformer.", 0) == 0) dit[n.substr(12)] = g.file.get(n);
    if (n.rfind("vae.", 0) == 0) vae[n.substr(4)] = g.file.get(n);
  }
  fs::create_directories(d / "transformer");
  fs::create_directories(d / "vae");
  io::save_safetensors((d / "transformer" / "diffusion_pytorch_model.safetensors").string(), dit);
  io::save_safetensors((d / "vae" / "diffusion_pytorch_model.safetensors").string(), vae);
  std::ofstream(d / "transformer" / "config.json") << g.config.at("dit").dump();
  std::ofstream(d / "vae" / "config.json") << g.config.at("vae").dump();
  std::ofstream(d / "model_index.json") << R"({"_class_name": "HunyuanVideoPipeline"})";
  if (with_text_encoders)
    for (const char* sub : {"text_encoder", "text_encoder_2", "tokenizer", "tokenizer_2"})
      fs::create_directories(d / sub);
  return d;
}

class FixedPrompt final : public PromptEncoder {
 public:
  explicit FixedPrompt(PromptEmbeds e) : e_(std::move(e)) {}
  PromptEmbeds encode(const std::string&) override { return e_; }

 private:
  PromptEmbeds e_;
};

TEST(HunyuanT2V, LoadsAFolderAndRunsAsTheGolden) {
  const parity::Golden g = open_golden();
  const fs::path dir = tiny_diffusers_folder(g, true);
  PromptEmbeds e;
  e.text_states = g.file.get("input.prompt_embeds").squeeze(0).contiguous();
  e.text_mask = g.file.get("input.attention_mask").squeeze(0).contiguous();
  e.text_states_2 = g.file.get("input.prompt_embeds_2").squeeze(0).contiguous();
  pipeline::LoadOptions lo;
  lo.weights_dir = dir.string();
  lo.precision = "fp32";
  LoadedT2V m = load_t2v(lo, std::make_shared<FixedPrompt>(e));
  EXPECT_EQ(m.files.layout, "diffusers");
  EXPECT_EQ(m.parts.guidance, pipeline::GuidanceKind::Embedded);
  EXPECT_EQ(m.parts.geometry.text_len, 256);
  const pipeline::Result res = pipeline::run_generation(m.parts, pipeline::request_from_json(g.config, ""));
  EXPECT_LE(test::rel_l2(g.file.get("output.latents"), res.latents), kLatentsBound);
  EXPECT_LE(test::rel_l2(g.file.get("output.video"), ops::add_scalar(ops::scale(res.video, 0.5), 0.5)), kVideoBound);

  // A VAE file with a stray key besides the encoder half it may leave unused: refused, naming it.
  std::map<std::string, Tensor> vae;
  for (const auto& n : g.file.names())
    if (n.rfind("vae.", 0) == 0) vae[n.substr(4)] = g.file.get(n);
  vae["encoder.conv_in.conv.weight"] = Tensor::zeros({4, 3, 3, 3, 3}, DType::F32);  // the encoder half: fine
  io::save_safetensors((dir / "vae" / "diffusion_pytorch_model.safetensors").string(), vae);
  EXPECT_NO_THROW(load_t2v(lo, std::make_shared<FixedPrompt>(e)));
  vae["decoder.stray.weight"] = Tensor::zeros({2}, DType::F32);
  io::save_safetensors((dir / "vae" / "diffusion_pytorch_model.safetensors").string(), vae);
  EXPECT_NE(error_of([&] { load_t2v(lo, std::make_shared<FixedPrompt>(e)); }).find("decoder.stray.weight"),
            std::string::npos);
}

TEST(HunyuanT2V, RefusesToLoadWithoutTokenizersBeforeReadingWeights) {
  const fs::path d = scratch("official");
  // The official ckpts/ layout, the DiT file garbage: the text side must fail first.
  touch(d / "hunyuan-video-t2v-720p" / "transformers" / "mp_rank_00_model_states.pt", "not a checkpoint");
  touch(d / "hunyuan-video-t2v-720p" / "vae" / "pytorch_model.pt", "not a checkpoint");
  fs::create_directories(d / "text_encoder");
  fs::create_directories(d / "text_encoder_2");
  EXPECT_EQ(detect_layout(d.string()), "original");
  const WeightFiles f = find_weights(d.string());
  EXPECT_EQ(f.dit, (d / "hunyuan-video-t2v-720p" / "transformers" / "mp_rank_00_model_states.pt").string());
  EXPECT_EQ(f.tokenizer_2, (d / "text_encoder_2").string());
  pipeline::LoadOptions lo;
  lo.weights_dir = d.string();
  // Empty text folders: the tokenizers' files are named, before the (garbage) DiT is read.
  const std::string err = error_of([&] { (void)family().load(lo); });
  EXPECT_NE(err.find((d / "text_encoder" / "tokenizer.json").string()), std::string::npos) << err;
  touch(d / "text_encoder" / "tokenizer.json");
  const std::string err2 = error_of([&] { (void)family().load(lo); });
  EXPECT_NE(err2.find((d / "text_encoder_2" / "vocab.json").string()), std::string::npos) << err2;
  EXPECT_NE(err2.find((d / "text_encoder_2" / "merges.txt").string()), std::string::npos) << err2;

  fs::remove_all(d / "text_encoder_2");
  const std::string missing = error_of([&] { (void)find_weights(d.string()); });
  EXPECT_NE(missing.find("text_encoder_2"), std::string::npos) << missing;
  EXPECT_EQ(detect_layout(scratch("empty").string()), "");
  EXPECT_NE(error_of([&] { (void)find_weights(scratch("empty2").string()); }).find("neither the official layout"),
            std::string::npos);
}

TEST(HunyuanT2V, DiffusersFolderIsDetectedAndNeedsItsTokenizers) {
  const parity::Golden g = open_golden();
  const fs::path d = tiny_diffusers_folder(g, false);
  engine::register_builtins();
  EXPECT_EQ(family().detect(d.string()), "hunyuanvideo-t2v-720p");
  const std::string err = error_of([&] { (void)find_weights(d.string()); });
  EXPECT_NE(err.find("text_encoder"), std::string::npos) << err;
  for (const char* sub : {"text_encoder", "text_encoder_2", "tokenizer", "tokenizer_2"}) fs::create_directories(d / sub);
  const engine::Resolved r = engine::resolve(d.string(), "");
  EXPECT_EQ(r.family->name(), "hunyuanvideo");
  EXPECT_EQ(r.variant.name, "hunyuanvideo-t2v-720p");
  // diffusers' tokenizers live in tokenizer/ and tokenizer_2/: those are the paths named.
  pipeline::LoadOptions lo;
  lo.weights_dir = d.string();
  lo.precision = "fp32";
  const std::string err2 = error_of([&] { (void)load_t2v(lo); });
  EXPECT_NE(err2.find((d / "tokenizer" / "tokenizer.json").string()), std::string::npos) << err2;
  touch(d / "tokenizer" / "tokenizer.json");
  const std::string err3 = error_of([&] { (void)load_t2v(lo); });
  EXPECT_NE(err3.find((d / "tokenizer_2" / "vocab.json").string()), std::string::npos) << err3;
}

TEST(HunyuanT2V, VariantsAndTheirRequestChecks) {
  engine::register_builtins();
  const std::string models = engine::models_text();
  EXPECT_NE(models.find("hunyuanvideo-t2v-720p"), std::string::npos);
  EXPECT_NE(models.find("hunyuanvideo-t2v-544p"), std::string::npos);
  const pipeline::Variant& v = family().variant("hunyuanvideo-t2v-720p");
  EXPECT_EQ(v.defaults.frames, 129);
  EXPECT_EQ(v.defaults.height, 720);
  EXPECT_EQ(v.defaults.width, 1280);
  EXPECT_EQ(v.defaults.steps, 50);
  EXPECT_EQ(v.defaults.shift, 7.0);
  EXPECT_EQ(v.defaults.guidance, 6.0);
  EXPECT_EQ(v.defaults.sampler, "flow_match_euler");
  EXPECT_EQ(family().variant("hunyuanvideo-t2v-544p").defaults.width, 960);

  const pipeline::Geometry geo = family().geometry("hunyuanvideo-t2v-720p");
  EXPECT_EQ(geo.z_dim, 16);
  EXPECT_EQ(geo.frame_multiple(), 4);
  EXPECT_EQ(geo.height_multiple(), 16);
  EXPECT_EQ(geo.text_len, 256);
  pipeline::Request r;
  r.frames = 129, r.height = 720, r.width = 1280, r.steps = 50, r.guidance = 6.0, r.shift = 7.0;
  r.sampler = "flow_match_euler";
  EXPECT_NO_THROW(pipeline::validate_request(geo, r));
  r.frames = 130;  // not 4k+1: the nearest valid counts are named
  std::string err = error_of([&] { pipeline::validate_request(geo, r); });
  EXPECT_NE(err.find("129"), std::string::npos) << err;
  EXPECT_NE(err.find("133"), std::string::npos) << err;
  r.frames = 129, r.height = 721;
  err = error_of([&] { pipeline::validate_request(geo, r); });
  EXPECT_NE(err.find("720"), std::string::npos) << err;
  EXPECT_NE(err.find("736"), std::string::npos) << err;
  r.height = 544, r.width = 970;
  err = error_of([&] { pipeline::validate_request(geo, r); });
  EXPECT_NE(err.find("960"), std::string::npos) << err;
  EXPECT_NE(err.find("976"), std::string::npos) << err;

  // The memory plan counts the 13B DiT and the 8B LLM (bf16: ~2 bytes per parameter, twice for the packed copy).
  r.width = 960;
  const pipeline::MemoryPlan plan = family().memory_plan("hunyuanvideo-t2v-544p", r, "bf16");
  EXPECT_GT(plan.peak_bytes(), 4.0 * 12.8e9);
  EXPECT_LT(plan.peak_bytes(), 4.0 * 20e9);
}

}  // namespace
}  // namespace vidax::hunyuan

namespace vidax::hunyuan {
namespace {

parity::Golden open_text_golden(const std::string& name) {
  const std::string path = std::string(VIDAX_TEST_DATA_DIR) + "/golden/hunyuan/" + name;
  auto ck = io::Checkpoint::open(path);
  return parity::Golden{path, ck, ck.metadata().at("kind"), nlohmann::json::parse(ck.metadata().at("config"))};
}

std::map<std::string, Tensor> golden_params(const parity::Golden& g, const translate::Component& comp,
                                            const nlohmann::json& cfg) {
  translate::MemorySource src(g.path);
  for (const auto& n : g.file.names())
    if (!translate::is_golden_io_key(n)) src.add(n, g.file.get(n));
  return translate::load(src, comp, cfg);
}

Tensor row0(const Tensor& t) { return t.slice(0, 0, 1).contiguous(); }

// The two text encoders' goldens (tools/golden/hunyuan_text.py, the official TextEncoder.encode)
// through HunyuanTextEncoders: the template applied to the stripped prompt, the LLM's cropped
// hidden state and mask, CLIP's pooled output, as PromptEmbeds (the tokenizers stand in: they
// hand back the goldens' first rows of ids).
TEST(HunyuanT2V, PromptEncoderWiresBothTextEncodersAsThePipeline) {
  const parity::Golden lg = open_text_golden("hunyuan_text_llama.safetensors");
  const parity::Golden cg = open_text_golden("hunyuan_text_clip.safetensors");
  const text::LlamaConfig lcfg = text::LlamaConfig::from_json(lg.config.at("text_encoder_config"));
  const auto lp = golden_params(lg, text::llama_component(), lcfg.to_json());
  auto llm = std::make_shared<const text::LlamaTextEncoder>(lcfg, [&](const std::string& n) { return lp.at(n); });
  const text::ClipTextConfig ccfg = text::ClipTextConfig::from_json(cg.config.at("text_encoder_config"));
  const auto cp = golden_params(cg, text::clip_text_component(), ccfg.to_json());
  auto clip = std::make_shared<const text::ClipTextEncoder>(ccfg, [&](const std::string& n) { return cp.at(n); });
  const LlmEncodeOptions opt = LlmEncodeOptions::from_json(lg.config);
  const PromptTemplate tmpl{lg.config.at("prompt_template").at("template").get<std::string>(),
                            lg.config.at("prompt_template").at("crop_start").get<int64_t>()};
  std::string llm_text, clip_text;
  Tokenize llm_tok = [&](const std::string& text, int64_t n) {
    llm_text = text;
    EXPECT_EQ(n, opt.max_length);
    return Tokenized{row0(lg.file.get("input.input_ids")), row0(lg.file.get("input.attention_mask")), false};
  };
  Tokenize clip_tok = [&](const std::string& text, int64_t n) {
    clip_text = text;
    return Tokenized{row0(cg.file.get("input.input_ids")), row0(cg.file.get("input.attention_mask")), true};
  };
  const int64_t clip_len = cg.file.get("input.input_ids").size(1);
  HunyuanTextEncoders enc(llm, opt, tmpl, llm_tok, clip, clip_tok, clip_len);
  const PromptEmbeds e = enc.encode("  a cat walks on the grass \n");
  EXPECT_EQ(clip_text, "a cat walks on the grass");
  EXPECT_EQ(llm_text, apply_template(tmpl.text, "a cat walks on the grass"));
  EXPECT_NE(llm_text.find("user<|end_header_id|>\n\na cat walks on the grass<|eot_id|>"), std::string::npos);
  EXPECT_TRUE(e.truncated);  // either tokenizer's truncation is reported
  const Tensor want_states = lg.file.get("output").slice(0, 0, 1).squeeze(0);
  EXPECT_LE(test::rel_l2(want_states, e.text_states), 1e-5);
  EXPECT_EQ(test::diff(lg.file.get("output.attention_mask").slice(0, 0, 1).squeeze(0).to(DType::F32),
                       e.text_mask.to(DType::F32)).max_abs, 0.0);
  EXPECT_LE(test::rel_l2(cg.file.get("output").slice(0, 0, 1).squeeze(0), e.text_states_2), 1e-5);
  // As the DiT takes them: the widths checked.
  const pipeline::EncodedPrompt p = to_encoded_prompt(e, lcfg.hidden_size, ccfg.hidden_size);
  EXPECT_EQ(&prompt_embeds_of(p).text_states_2, &static_cast<const PromptEmbeds*>(p.conditioning.get())->text_states_2);
  EXPECT_NE(error_of([&] { (void)to_encoded_prompt(e, lcfg.hidden_size + 1, ccfg.hidden_size); }).find("text_states"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)apply_template("no slot", "x"); }).find("{}"), std::string::npos);
}

// make_prompt_encoder on a weights folder in the official layout: text_encoder/ holds the
// end-to-end golden's tiny Llama (the official TextEncoder.forward with the real tokenizer loader,
// `model.*` + lm_head as save_pretrained writes a causal LM) and the tokenizer fixture
// tests/text/data/llama3_bpe; text_encoder_2/ a tiny CLIP text model (deterministic weights) and
// the CLIP fixture tests/text/data/clip_bpe. The LLM side must reproduce the golden prompt by
// prompt; the CLIP side must be encode_clip on the fixture tokenizer's ids.
fs::path text_folders(const std::string& name, const parity::Golden& lg, const text::ClipTextConfig& ccfg) {
  const fs::path d = scratch(name);
  touch(d / "hunyuan-video-t2v-720p" / "transformers" / "mp_rank_00_model_states.pt", "not read");
  touch(d / "hunyuan-video-t2v-720p" / "vae" / "pytorch_model.pt", "not read");
  const fs::path data = fs::path(VIDAX_TEST_DATA_DIR) / "text" / "data";
  fs::create_directories(d / "text_encoder");
  fs::create_directories(d / "text_encoder_2");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(data / "llama3_bpe" / f, d / "text_encoder" / f);
  for (const char* f : {"vocab.json", "merges.txt"}) fs::copy_file(data / "clip_bpe" / f, d / "text_encoder_2" / f);
  std::map<std::string, Tensor> llm;
  for (const auto& n : lg.file.names())
    if (!translate::is_golden_io_key(n)) llm[n] = lg.file.get(n);
  EXPECT_TRUE(llm.count("lm_head.weight"));
  io::save_safetensors((d / "text_encoder" / "model.safetensors").string(), llm);
  std::ofstream(d / "text_encoder" / "config.json") << lg.config.at("text_encoder_config").dump();
  std::map<std::string, Tensor> clip;
  int k = 0;
  for (const auto& p : text::clip_text_params(ccfg).params) {
    std::vector<float> v(static_cast<size_t>(shape_numel(p.shape)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.2f * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + k));
    clip[p.name] = Tensor::from_f32(v, p.shape);
    ++k;
  }
  io::save_safetensors((d / "text_encoder_2" / "model.safetensors").string(), clip);
  std::ofstream(d / "text_encoder_2" / "config.json") << ccfg.to_json().dump();
  return d;
}

TEST(HunyuanT2V, PromptEncoderFromTheWeightsFolders) {
  const parity::Golden lg = open_text_golden("hunyuan_text_llama_prompts.safetensors");
  text::ClipTextConfig ccfg;
  ccfg.vocab_size = 700;  // the CLIP fixture's vocabulary
  ccfg.hidden_size = 16;
  ccfg.intermediate_size = 32;
  ccfg.num_hidden_layers = 2;
  ccfg.num_attention_heads = 2;
  const fs::path d = text_folders("text_folders", lg, ccfg);
  const WeightFiles files = find_weights(d.string());
  const int64_t text_len = std::stoll(lg.file.metadata().at("text_len"));
  auto enc = make_prompt_encoder(files, "fp32", text_len, "dit-llm-encode");
  const auto prompts = nlohmann::json::parse(lg.file.metadata().at("prompts")).get<std::vector<std::string>>();
  ASSERT_EQ(prompts.size(), 3u);

  const text::ClipBpeTokenizer clip_tok = text::ClipBpeTokenizer::from_dir((d / "text_encoder_2").string());
  std::map<std::string, Tensor> clip_params;
  {
    auto ck = io::Checkpoint::open((d / "text_encoder_2" / "model.safetensors").string());
    for (const auto& n : ck.names()) clip_params[n] = ck.get(n);
  }
  const text::ClipTextEncoder clip(ccfg, [&](const std::string& n) { return clip_params.at(n); });
  std::vector<Tensor> pooled;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const PromptEmbeds e = enc->encode(prompts[i]);
    const Tensor want = lg.file.get("output").slice(0, static_cast<int64_t>(i), static_cast<int64_t>(i) + 1).squeeze(0);
    const test::Diff diff = test::diff(want, e.text_states);
    std::printf("  prompt %zu: text_states max_abs=%.3g rel_l2=%.3g\n", i, diff.max_abs, diff.rel_l2);
    EXPECT_LE(diff.max_abs, 1e-5) << i;
    EXPECT_EQ(e.text_mask.to(DType::F32).to_f64_vector(),
              lg.file.get("output.attention_mask").slice(0, static_cast<int64_t>(i), static_cast<int64_t>(i) + 1)
                  .squeeze(0).to(DType::F32).to_f64_vector())
        << i;
    EXPECT_EQ(e.truncated, i == 1) << i;  // the golden's second prompt is cut at text_len
    const text::TokenizedBatch c = clip_tok.encode_batch({prompts[i]}, 77);
    const Tensor want2 = encode_clip(clip, c.ids, c.mask).squeeze(0);
    EXPECT_EQ(test::diff(want2, e.text_states_2).max_abs, 0.0) << i;
    pooled.push_back(e.text_states_2);
  }
  EXPECT_GT(test::diff(pooled[0], pooled[1]).max_abs, 1e-3);  // the prompt reaches CLIP
  // The default (the video template at text_len 256) cuts nothing of a short prompt.
  const PromptEmbeds v = make_prompt_encoder(files, "fp32")->encode("a cat");
  EXPECT_EQ(v.text_states.size(0), 256);
  EXPECT_FALSE(v.truncated);

  // Missing pieces are named, before any weight is read.
  fs::remove(d / "text_encoder_2" / "model.safetensors");
  EXPECT_NE(error_of([&] { (void)make_prompt_encoder(files, "fp32"); }).find("holds no weights"), std::string::npos);
  fs::remove(d / "text_encoder" / "config.json");
  EXPECT_NE(error_of([&] { (void)make_prompt_encoder(files, "fp32"); }).find((d / "text_encoder" / "config.json").string()),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)make_prompt_encoder(files, "fp16"); }).find("fp16"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)make_prompt_encoder(files, "fp32", 256, "dit-llm-encode-x"); }).find("unknown prompt template"),
            std::string::npos);
}

}  // namespace
}  // namespace vidax::hunyuan

namespace vidax::hunyuan {
namespace {

// mp_rank_00_model_states.pt nests the state dict under "module": the DiT component's layout
// "module" reads it (detected from the keys), strictly.
TEST(HunyuanT2V, DiTUnderModuleIsTheOfficialCheckpointsLayout) {
  const parity::Golden g = open_golden();
  translate::MemorySource src("module.*");
  for (const auto& n : g.file.names())
    if (n.rfind("transformer.", 0) == 0) src.add("module." + n.substr(12), g.file.get(n));
  const translate::Match m = translate::match(src, dit_component(), g.config.at("dit"));
  EXPECT_EQ(m.layout, "module");
  EXPECT_TRUE(m.plan.complete()) << m.plan.problems();
  src.add("module.stray.weight", Tensor::zeros({2}, DType::F32));
  EXPECT_NE(error_of([&] { (void)translate::load(src, dit_component(), g.config.at("dit")); }).find("module.stray.weight"),
            std::string::npos);
}

}  // namespace
}  // namespace vidax::hunyuan
