#include "models/hunyuan15/pipeline_parity.h"

#include <map>

#include "backend/ops.h"
#include "core/error.h"
#include "io/video.h"
#include "models/hunyuan15/checkpoint_keys.h"
#include "models/hunyuan15/i2v.h"
#include "models/hunyuan15/t2v.h"
#include "models/hunyuan15/vae_keys.h"
#include "nn/synthetic_init.h"
#include "pipeline/generate.h"
#include "translate/component.h"
#include "translate/source.h"

namespace vidax::hunyuan15 {

namespace {

constexpr const char* kKind = "hunyuan1.5.pipeline.t2v";
constexpr const char* kI2VKind = "hunyuan1.5.pipeline.i2v";

// The golden's embeddings, for the prompts it names (the prompt, and the negative prompt when it
// runs classifier-free guidance).
class GoldenPrompt final : public PromptEncoder {
 public:
  explicit GoldenPrompt(std::map<std::string, PromptEmbeds> e) : e_(std::move(e)) {}
  PromptEmbeds encode(const std::string& prompt) override {
    const auto it = e_.find(prompt);
    VIDAX_CHECK(it != e_.end(), kKind << ": the golden holds no embeddings for '" << prompt << "'");
    return it->second;
  }

 private:
  std::map<std::string, PromptEmbeds> e_;
};

// The input's name in the file: `name`, or the pipeline's own spelling of it (__call__'s
// prompt_embeds / prompt_mask for text_states / text_mask).
std::string input_name(const parity::Golden& g, const std::string& name) {
  static const std::pair<const char*, const char*> kAliases[] = {{"text_states", "prompt_embeds"},
                                                                 {"text_mask", "prompt_mask"}};
  if (g.file.contains("input." + name)) return "input." + name;
  for (const auto& [ours, theirs] : kAliases) {
    const size_t at = name.rfind(ours);
    if (at != std::string::npos && at + std::string(ours).size() == name.size()) {
      const std::string alt = "input." + name.substr(0, at) + theirs;
      if (g.file.contains(alt)) return alt;
    }
  }
  throw Error(msg() << g.path << ": " << kKind << " needs input." << name);
}

Tensor first_of_batch(const parity::Golden& g, const std::string& name, int64_t dims) {
  const Tensor t = g.file.get(input_name(g, name));
  VIDAX_CHECK(t.dim() == dims + 1 && t.size(0) == 1,
              g.path << ": input." << name << " " << t.str() << ": expected a batch of one, " << dims + 1 << " dims");
  return t.squeeze(0).contiguous();
}

PromptEmbeds embeds_of(const parity::Golden& g, const std::string& p, bool glyphs) {
  PromptEmbeds e;
  e.text_states = first_of_batch(g, p + "text_states", 2);
  e.text_mask = first_of_batch(g, p + "text_mask", 1).to(DType::I64);
  if (glyphs) {
    e.byt5_states = first_of_batch(g, p + "byt5_text_states", 2);
    e.byt5_mask = first_of_batch(g, p + "byt5_text_mask", 1).to(DType::I64);
  }
  return e;
}

// The DiT: __metadata__.synthetic_params (official names) and transformer.* tensors, strictly.
std::shared_ptr<const HunyuanVideo15DiT> golden_dit(const parity::Golden& g, const nlohmann::json& config,
                                                    DType compute) {
  translate::MemorySource src(g.path + " transformer.*");
  for (const std::string& n : g.file.names())
    if (n.rfind("transformer.", 0) == 0) src.add(n.substr(12), g.file.get(n));
  if (auto it = g.file.metadata().find("synthetic_params"); it != g.file.metadata().end())
    for (const auto& [n, t] : nn::synthetic_from_description(it->second, g.path)) {
      VIDAX_CHECK(!src.find(n), g.path << ": DiT parameter '" << n << "' is both stored and synthetic");
      src.add(n, t);
    }
  const DiTConfig cfg = DiTConfig::from_json(config);
  return std::make_shared<const HunyuanVideo15DiT>(
      HunyuanVideo15DiT::from_weights(cfg, translate::load(src, dit_component(), config), compute, g.path));
}

// The VAE decoder: vae.* tensors (official names), strictly.
std::shared_ptr<const HunyuanVideo15VAE> golden_vae(const parity::Golden& g, const VAEConfig& cfg) {
  translate::MemorySource src(g.path + " vae.*");
  for (const std::string& n : g.file.names())
    if (n.rfind("vae.", 0) == 0) src.add(n.substr(4), g.file.get(n));
  nn::ParamSource params =
      nn::ParamSource::from_map(translate::load(src, vae_decoder_component(), cfg.to_json()), g.path);
  auto vae = std::make_shared<const HunyuanVideo15VAE>(cfg, params, VAEParts{.encoder = false, .decoder = true},
                                                       DType::F32);
  params.expect_all_taken();
  return vae;
}

}  // namespace

namespace {

// What both kinds read from a golden: the DiT, the request, the prompts' embeddings, the t2v options.
struct GoldenSetup {
  std::shared_ptr<const HunyuanVideo15DiT> dit;
  DType compute = DType::F32;
  T2VOptions t2v;
  pipeline::Request request;
  std::shared_ptr<PromptEncoder> prompts;
};

GoldenSetup setup_of(const parity::Golden& g, const parity::Options& opt, const char* kind) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": " << kind << " runs on a single rank");
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("dit") && c.contains("vae"), g.path << ": config needs \"dit\" and \"vae\" (init args)");
  GoldenSetup s;
  if (opt.precision == "bf16") s.compute = DType::BF16;
  else VIDAX_CHECK(opt.precision == "fp32" || opt.precision.empty(), kind << ": precision must be fp32 or bf16");
  s.dit = golden_dit(g, c.at("dit"), s.compute);
  s.t2v.vision_tokens = c.value("vision_num_semantic_tokens", s.t2v.vision_tokens);
  // The decode runs in vae.memory_efficient_context() (spatial tiling on) with the tile the VAE
  // instance holds: "vae_tiling" (what set_tile_sample_min_size set), else the constructor's
  // (the config's sample_size, overlap 0.25).
  s.t2v.tiling = VAETiling{true, 0, 0.25};
  if (c.contains("vae_tiling")) {
    const nlohmann::json& t = c.at("vae_tiling");
    s.t2v.tiling = VAETiling{true, t.at("sample_size").get<int64_t>(), t.at("overlap").get<double>()};
  }
  // The request under request_from_json's names, or __call__'s (guidance_scale, flow_shift,
  // video_length, num_inference_steps); the sampler is the pipeline's flow_match_euler by default.
  nlohmann::json rc = c;
  for (const auto& [ours, theirs] : {std::pair<const char*, const char*>{"guidance", "guidance_scale"},
                                     {"shift", "flow_shift"}, {"frames", "video_length"},
                                     {"steps", "num_inference_steps"}})
    if (!rc.contains(ours) && rc.contains(theirs)) rc[ours] = rc.at(theirs);
  if (!rc.contains("sampler")) rc["sampler"] = "flow_match_euler";
  s.request = pipeline::request_from_json(rc, "");
  pipeline::Request& r = s.request;
  // do_classifier_free_guidance is guidance_scale > 1: a smaller scale runs the prompt alone, which
  // the loop's classifier-free guidance does at exactly 1.
  if (r.guidance < 1.0) r.guidance = 1.0;
  const bool glyphs = s.dit->config().glyph_byT5_v2;
  std::map<std::string, PromptEmbeds> prompts{{r.prompt, embeds_of(g, "", glyphs)}};
  if (r.guidance > 1.0) {
    VIDAX_CHECK(!r.negative_prompt.empty() && r.negative_prompt != r.prompt,
                g.path << ": guidance " << r.guidance << " needs a negative_prompt naming input.negative_*");
    prompts[r.negative_prompt] = embeds_of(g, "negative_", glyphs);
  }
  s.prompts = std::make_shared<GoldenPrompt>(std::move(prompts));
  return s;
}

// Runs the parts through the loop and collects what the golden holds.
parity::Produced run_parts(const pipeline::Parts& parts, const pipeline::Request& r) {
  Tensor first, last;
  pipeline::Events ev;
  ev.on_latent = [&](int step, const Tensor& latent) {
    if (step == 1) first = latent.clone();
    if (step == r.steps) last = latent.clone();
  };
  const pipeline::Result res = pipeline::run_generation(parts, r, ev);

  parity::Produced out;
  out["output.latents"] = res.latents;
  // The pipeline's (video / 2 + 0.5).clamp(0, 1): the same values as this of the clamped video.
  out["output.video"] = ops::add_scalar(ops::scale(res.video, 0.5), 0.5);
  pipeline::Request sized = r;
  sized.height = res.height;
  sized.width = res.width;
  out["inter.noise"] = pipeline::draw_noise(r.seed, pipeline::latent_shape(parts.geometry, sized));
  out["inter.timesteps"] = Tensor::from_f64(res.timesteps, {static_cast<int64_t>(res.timesteps.size())});
  out["inter.latents_step0"] = first;
  out["inter.latents_last"] = last;
  for (const auto& [n, t] : res.taps) out[n] = t;
  return out;
}

}  // namespace

parity::Produced run_t2v_golden(const parity::Golden& g, const parity::Options& opt) {
  const GoldenSetup s = setup_of(g, opt, kKind);
  auto vae = golden_vae(g, VAEConfig::from_json(g.config.at("vae")));
  return run_parts(make_t2v_parts(s.dit, vae, s.prompts, s.t2v), s.request);
}

parity::Produced run_i2v_golden(const parity::Golden& g, const parity::Options& opt) {
  GoldenSetup s = setup_of(g, opt, kI2VKind);
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("siglip") && c.at("siglip").contains("vision"),
              g.path << ": " << kI2VKind << " config needs \"siglip\" {\"vision\", \"processor\"}");
  // The VAE's encoder and decoder: vae.* (official names), strictly.
  const VAEConfig vcfg = VAEConfig::from_json(c.at("vae"));
  translate::MemorySource vsrc(g.path + " vae.*");
  for (const std::string& n : g.file.names())
    if (n.rfind("vae.", 0) == 0) vsrc.add(n.substr(4), g.file.get(n));
  nn::ParamSource vparams = nn::ParamSource::from_map(translate::load(vsrc, vae_component(), vcfg.to_json()), g.path);
  auto vae = std::make_shared<const HunyuanVideo15VAE>(vcfg, vparams, VAEParts{.encoder = true, .decoder = true},
                                                       DType::F32);
  vparams.expect_all_taken();
  // The SigLIP: vision_encoder.* (transformers names), strictly; its processor config.
  const SiglipVisionConfig scfg = SiglipVisionConfig::from_json(c.at("siglip").at("vision"));
  translate::MemorySource ssrc(g.path + " vision_encoder.*");
  for (const std::string& n : g.file.names())
    if (n.rfind("vision_encoder.", 0) == 0) ssrc.add(n.substr(15), g.file.get(n));
  nn::ParamSource sparams =
      nn::ParamSource::from_map(translate::load(ssrc, siglip_component(), scfg.to_json()), g.path);
  auto siglip = std::make_shared<SiglipEncoder>();
  siglip->processor = SiglipProcessorConfig::from_json(c.at("siglip").value("processor", SiglipProcessorConfig{}.to_json()));
  siglip->model = std::make_shared<const SiglipVision>(scfg, sparams, s.compute);
  sparams.expect_all_taken();

  I2VOptions i2v;
  i2v.t2v = s.t2v;
  i2v.bucket_base = c.value("bucket_hw_base_size", 0.0);
  // input.image: the picture's bytes [H, W, 3] (PIL's), as the CLI hands an image file to the loop.
  const Tensor pic = g.input("image");
  VIDAX_CHECK(pic.dim() == 3 && pic.size(2) == 3 && pic.dtype() == DType::U8,
              g.path << ": input.image " << pic.str() << ", expected [H, W, 3] U8");
  s.request.image = io::picture_to_tensor(pic);
  if (i2v.bucket_base == 0) {  // the pipeline's base for ideal_resolution, from the request's area
    VIDAX_CHECK(s.request.height > 0 && s.request.width > 0, g.path << ": needs bucket_hw_base_size or height/width");
  }
  return run_parts(make_i2v_parts(s.dit, vae, siglip, s.prompts, i2v), s.request);
}

void register_pipeline_parity_kinds() {
  parity::register_kind(kKind, run_t2v_golden);
  parity::register_kind(kI2VKind, run_i2v_golden);
}

}  // namespace vidax::hunyuan15
