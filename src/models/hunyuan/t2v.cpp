#include "models/hunyuan/t2v.h"

#include <map>
#include <mutex>

#include "backend/ops.h"
#include "core/dtype.h"
#include "core/error.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/rope.h"
#include "models/hunyuan/vae_keys.h"
#include "pipeline/interrupt.h"
#include "translate/component.h"
#include "translate/source.h"

namespace vidax::hunyuan {

namespace {

DType compute_of(const std::string& precision) {
  if (precision == "fp32") return DType::F32;
  if (precision == "bf16") return DType::BF16;
  throw Error(msg() << "--precision " << precision << ": HunyuanVideo runs fp32 or bf16");
}

// The rotary tables per patch grid: every step of a run has the same latent size.
class RopeCache {
 public:
  explicit RopeCache(const DiTConfig& c) : dims_(c.rope_dim_list), theta_(c.rope_theta) {}
  RotaryTables get(std::array<int64_t, 3> grid) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tables_.find(grid);
    if (it == tables_.end()) it = tables_.emplace(grid, rotary_pos_embed(dims_, grid, theta_)).first;
    return it->second;
  }

 private:
  std::vector<int64_t> dims_;
  double theta_;
  std::mutex mu_;
  std::map<std::array<int64_t, 3>, RotaryTables> tables_;
};

// One part of a checkpoint through the translator, strictly; `allowed_unused`: a key prefix the
// part may leave (the VAE file's encoder half when only the decoder is built), every other key
// must be used.
std::map<std::string, Tensor> translate_part(const std::string& path, const translate::Component& comp,
                                             const nlohmann::json& config,
                                             const std::vector<std::string>& allowed_unused = {}) {
  auto src = translate::CheckpointSource::open(path);
  translate::Match m = translate::match(*src, comp, config);
  std::vector<std::string> unused;
  for (const auto& k : m.plan.unused_keys) {
    bool allowed = false;
    const std::string bare = k.rfind("vae.", 0) == 0 ? k.substr(4) : k;  // the "prefixed" layout's keys
    for (const auto& p : allowed_unused) allowed = allowed || bare.rfind(p, 0) == 0;
    if (!allowed) unused.push_back(k);
  }
  translate::TranslateOptions opts;
  if (unused.empty()) {
    opts.allow_unused = !m.plan.unused_keys.empty();
  } else {
    m.plan.unused_keys = unused;  // the report names only the keys that are really left over
  }
  translate::check(m.plan, opts, comp.name() + " from " + path);
  return translate::materialize(*src, m.plan, opts);
}

}  // namespace

double embedded_guidance_value(double scale, DType compute) {
  if (compute == DType::BF16) {
    const float g = bf16_to_f32(f32_to_bf16(static_cast<float>(scale)));
    return static_cast<double>(bf16_to_f32(f32_to_bf16(g * 1000.0f)));
  }
  return static_cast<double>(static_cast<float>(scale) * 1000.0f);
}

pipeline::Geometry geometry_of(const DiTConfig& dit, const VAEConfig& vae, int64_t text_len) {
  pipeline::Geometry g;
  g.vae_label = "the HunyuanVideo VAE";
  g.z_dim = vae.latent_channels;
  g.vae_stride_t = vae.temporal_factor();
  g.vae_stride_s = vae.spatial_factor();
  g.patch_t = dit.patch_size[0];
  g.patch_h = dit.patch_size[1];
  g.patch_w = dit.patch_size[2];
  g.text_len = text_len;
  return g;
}

pipeline::Parts make_t2v_parts(std::shared_ptr<const HunyuanDiT> dit, std::shared_ptr<const HunyuanVAE> vae,
                               VAETiling tiling, std::shared_ptr<PromptEncoder> encoder, int64_t text_len) {
  VIDAX_CHECK(dit && vae && encoder, "HunyuanVideo: the DiT, the VAE and the prompt encoder are all needed");
  const DiTConfig& c = dit->config();
  VIDAX_CHECK(c.in_channels == vae->config().latent_channels && c.out_channels == c.in_channels,
              "the HunyuanVideo DiT (in_channels " << c.in_channels << ", out_channels " << c.out_channels
                                                   << ") does not fit the VAE (latent_channels "
                                                   << vae->config().latent_channels << ")");
  pipeline::Parts p;
  p.geometry = geometry_of(c, vae->config(), text_len);
  p.prediction = pipeline::PredictionType::FlowVelocity;
  p.guidance = pipeline::GuidanceKind::Embedded;
  p.encode_prompt = [encoder, dim = c.text_states_dim, dim2 = c.text_states_dim_2](const std::string& prompt) {
    return to_encoded_prompt(encoder->encode(prompt), dim, dim2);
  };
  auto rope = std::make_shared<RopeCache>(c);
  p.predict = [dit, rope](const pipeline::DenoiseInput& in) {
    const PromptEmbeds& e = prompt_embeds_of(in.prompt);
    DiTInputs d;
    d.x = in.x.unsqueeze(0);
    d.t = {in.t};
    d.text_states = e.text_states.unsqueeze(0);
    d.text_mask = e.text_mask.unsqueeze(0);
    d.text_states_2 = e.text_states_2.unsqueeze(0);
    const RotaryTables tables = rope->get(dit->patch_grid(d.x.shape()));
    d.freqs_cos = tables.cos;
    d.freqs_sin = tables.sin;
    if (dit->config().guidance_embed) d.guidance = {embedded_guidance_value(in.embedded_guidance, dit->compute_dtype())};
    return dit->forward(d).squeeze(0);
  };
  p.decode = [vae, tiling](const Tensor& z, const pipeline::Parts::DecodeProgress& progress) {
    pipeline::throw_if_interrupted("VAE decoding");
    // latents / scaling_factor: a division, as the pipeline's (not a multiply by 1 / f).
    const Tensor scaled = ops::div(z.unsqueeze(0), Tensor::full({1}, vae->config().scaling_factor, z.dtype()));
    Tensor video = ops::clamp(vae->decode_tiled(scaled, tiling), -1.0, 1.0).squeeze(0);
    if (progress) progress(1, 1);
    return video.dtype() == DType::F32 ? video : ops::cast(video, DType::F32);
  };
  return p;
}

std::shared_ptr<PromptEncoder> make_prompt_encoder(const WeightFiles& files, const std::string&) {
  // The encoders themselves exist (text::LlamaTextEncoder, text::ClipTextEncoder; HunyuanTextEncoders
  // in prompt_encoder.h wires them); what a prompt still needs is its token ids.
  throw Error(msg() << "HunyuanVideo: the prompt's tokenizers are not in this build yet: the Llama-3 byte-level BPE "
                       "tokenizer ("
                    << files.tokenizer << ") and CLIP's BPE tokenizer (" << files.tokenizer_2
                    << "); the text encoders (" << files.text_encoder << ", " << files.text_encoder_2
                    << "), the DiT, the VAE and the sampler are ready (docs/models/hunyuanvideo.md)");
}

LoadedT2V load_t2v(const pipeline::LoadOptions& opt, std::shared_ptr<PromptEncoder> encoder) {
  auto stage = [&](const std::string& s) {
    if (opt.on_stage) opt.on_stage(s);
  };
  VIDAX_CHECK(opt.device.empty() || opt.device == "cpu",
              "--device " << opt.device << ": HunyuanVideo runs on the CPU backend only so far");
  VIDAX_CHECK(!opt.mesh, "--mesh: HunyuanVideo runs on a single rank so far");
  VIDAX_CHECK(!opt.offload, "--offload: HunyuanVideo's DiT is not streamed yet");
  VIDAX_CHECK(opt.vae_tile == 0, "--vae-tile " << opt.vae_tile
                                               << ": HunyuanVideo's VAE tiles as the reference does (the VAE config's "
                                                  "sample_size / sample_tsize, always on); no other tile size yet");
  VIDAX_CHECK(opt.loras.empty() && opt.loras_high_noise.empty() && opt.loras_low_noise.empty(),
              "--lora: HunyuanVideo LoRAs are not supported yet");
  VIDAX_CHECK(!opt.files.any(), "--diffusion-model / --vae / --text-encoder: HunyuanVideo takes a weights folder "
                                "(the official ckpts/ or diffusers' layout) so far");
  LoadedT2V out;
  out.files = find_weights(opt.weights_dir);
  out.preset = preset(opt.model.empty() ? kT2V720p : opt.model);
  out.precision = opt.precision.empty() ? out.preset.variant.defaults.precision : opt.precision;
  const DType compute = compute_of(out.precision);
  if (!out.files.dit_config.is_null()) out.preset.dit = out.files.dit_config;
  if (!out.files.vae_config.is_null()) out.preset.vae = out.files.vae_config;
  const DiTConfig dit_cfg = DiTConfig::from_json(out.preset.dit);
  const VAEConfig vae_cfg = VAEConfig::from_json(out.preset.vae);
  // The text side first: a missing encoder fails before gigabytes of DiT are read.
  if (!encoder) encoder = make_prompt_encoder(out.files, out.precision);

  stage("loading the DiT " + out.files.dit);
  auto dit = std::make_shared<const HunyuanDiT>(
      HunyuanDiT::from_weights(dit_cfg, translate_part(out.files.dit, dit_component(), dit_cfg.to_json()), compute,
                               out.files.dit));
  stage("loading the VAE decoder " + out.files.vae);
  // The published VAE file holds both halves; the pipeline decodes only.
  nn::ParamSource vae_params = nn::ParamSource::from_map(
      translate_part(out.files.vae, vae_decoder_component(), vae_cfg.to_json(), {"encoder.", "quant_conv."}),
      out.files.vae);
  auto vae = std::make_shared<const HunyuanVAE>(vae_cfg, vae_params, VAEParts{.encoder = false, .decoder = true},
                                                DType::F32);
  vae_params.expect_all_taken();
  out.parts = make_t2v_parts(dit, vae, VAETiling{.spatial = true, .temporal = true}, encoder, out.preset.text_len);
  return out;
}

}  // namespace vidax::hunyuan
