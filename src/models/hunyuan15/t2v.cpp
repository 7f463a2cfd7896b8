#include "models/hunyuan15/t2v.h"

#include "backend/ops.h"
#include "core/error.h"
#include "pipeline/carried_embeddings.h"
#include "pipeline/interrupt.h"

namespace vidax::hunyuan15 {

namespace {

constexpr int64_t kByt5Width = 1472;  // the ByT5 encoder's width (the DiT's byt5_in input)

std::string shape_of(const Tensor& t) { return t.defined() ? t.str() : std::string("missing"); }

}  // namespace

pipeline::EncodedPrompt to_encoded_prompt(PromptEmbeds e, const DiTConfig& dit) {
  VIDAX_CHECK(e.text_states.defined() && e.text_states.dim() == 2 && e.text_states.size(1) == dit.text_states_dim,
              "HunyuanVideo 1.5 prompt: text_states " << shape_of(e.text_states) << ", expected [L, "
                                                      << dit.text_states_dim << "] (the LLM's hidden state)");
  const int64_t L = e.text_states.size(0);
  VIDAX_CHECK(L >= 1, "HunyuanVideo 1.5 prompt: text_states has no tokens");
  VIDAX_CHECK(e.text_mask.defined() && e.text_mask.dim() == 1 && e.text_mask.size(0) == L,
              "HunyuanVideo 1.5 prompt: text_mask " << shape_of(e.text_mask) << ", expected [" << L
                                                    << "] (one entry per text_states row)");
  if (dit.glyph_byT5_v2) {
    VIDAX_CHECK(e.byt5_states.defined() && e.byt5_states.dim() == 2 && e.byt5_states.size(1) == kByt5Width,
                "HunyuanVideo 1.5 prompt: byt5_states " << shape_of(e.byt5_states) << ", expected [Lb, " << kByt5Width
                                                        << "] (the ByT5 glyph encoder's output; zeros without glyph text)");
    VIDAX_CHECK(e.byt5_mask.defined() && e.byt5_mask.dim() == 1 && e.byt5_mask.size(0) == e.byt5_states.size(0),
                "HunyuanVideo 1.5 prompt: byt5_mask " << shape_of(e.byt5_mask) << ", expected [" << e.byt5_states.size(0)
                                                      << "] (one entry per byt5_states row)");
  }
  const Tensor context = e.text_states;
  const bool truncated = e.truncated;
  return pipeline::carry_embeddings(std::move(e), context, truncated);
}

const PromptEmbeds& prompt_embeds_of(const pipeline::EncodedPrompt& p) {
  return pipeline::carried_embeddings<PromptEmbeds>(p, "HunyuanVideo 1.5 predict");
}

pipeline::Geometry geometry_of(const DiTConfig& dit, const VAEConfig& vae, int64_t text_len) {
  pipeline::Geometry g;
  g.vae_label = "the HunyuanVideo 1.5 VAE";
  g.z_dim = vae.latent_channels;
  g.vae_stride_t = vae.ffactor_temporal;
  g.vae_stride_s = vae.ffactor_spatial;
  g.patch_t = dit.patch_size[0];
  g.patch_h = dit.patch_size[1];
  g.patch_w = dit.patch_size[2];
  g.text_len = text_len;
  return g;
}

pipeline::Parts make_t2v_parts(std::shared_ptr<const HunyuanVideo15DiT> dit, std::shared_ptr<const HunyuanVideo15VAE> vae,
                               std::shared_ptr<PromptEncoder> encoder, const T2VOptions& opt) {
  VIDAX_CHECK(dit && vae && encoder, "HunyuanVideo 1.5: the DiT, the VAE and the prompt encoder are all needed");
  const DiTConfig& c = dit->config();
  const VAEConfig& vc = vae->config();
  VIDAX_CHECK(c.in_channels == vc.latent_channels && c.out_channels == c.in_channels,
              "the HunyuanVideo 1.5 DiT (in_channels " << c.in_channels << ", out_channels " << c.out_channels
                                                       << ") does not fit the VAE (latent_channels "
                                                       << vc.latent_channels << ")");
  VIDAX_CHECK(!c.is_reshape_temporal_channels,
              "HunyuanVideo 1.5 t2v: is_reshape_temporal_channels DiTs are not built in the t2v loop");
  VIDAX_CHECK(!c.guidance_embed, "HunyuanVideo 1.5 t2v: a guidance-embedded (distilled) DiT needs the pipeline's "
                                 "embedded_guidance_scale, not built yet (guidance_embed must be false)");
  VIDAX_CHECK(opt.vision_tokens >= 1, "HunyuanVideo 1.5 t2v: vision_tokens " << opt.vision_tokens << ", must be >= 1");

  pipeline::Parts p;
  p.geometry = geometry_of(c, vc, opt.text_len);
  p.prediction = pipeline::PredictionType::FlowVelocity;
  p.guidance = pipeline::GuidanceKind::ClassifierFree;
  p.guidance_below_one_is_one = true;  // do_classifier_free_guidance: guidance_scale > 1
  p.encode_prompt = [encoder, c](const std::string& prompt) { return to_encoded_prompt(encoder->encode(prompt), c); };
  p.encode_negative_prompt = [encoder, c](const std::string& prompt) {
    return to_encoded_prompt(encoder->encode_negative(prompt), c);
  };
  // The zero vision states of a t2v run, made once.
  Tensor vision;
  if (c.vision_projection != "none") vision = Tensor::zeros({1, opt.vision_tokens, c.vision_states_dim}, DType::F32);
  p.predict = [dit, vision](const pipeline::DenoiseInput& in) {
    const DiTConfig& cfg = dit->config();
    const PromptEmbeds& e = prompt_embeds_of(in.prompt);
    Tensor x = in.x.unsqueeze(0);
    if (cfg.concat_condition) {
      // [latents, cond latents (zeros), mask (get_task_mask "t2v": zeros)] along the channels.
      const Shape& s = x.shape();
      x = ops::concat({x, Tensor::zeros({1, s[1], s[2], s[3], s[4]}, DType::F32),
                       Tensor::zeros({1, 1, s[2], s[3], s[4]}, DType::F32)},
                      1);
    }
    DiTInputs d;
    d.hidden_states = x;
    d.timestep = {in.t};
    if (cfg.use_meanflow) d.timestep_r = {in.t_next};  // timesteps[i + 1], 0 after the last step
    d.text_states = e.text_states.unsqueeze(0);
    d.encoder_attention_mask = e.text_mask.unsqueeze(0);
    d.vision_states = vision;
    d.mask_type = "t2v";
    if (cfg.glyph_byT5_v2) {
      d.byt5_text_states = e.byt5_states.unsqueeze(0);
      d.byt5_text_mask = e.byt5_mask.unsqueeze(0);
    }
    return dit->forward(d).squeeze(0);
  };
  p.decode = [vae, tiling = opt.tiling](const Tensor& z, const pipeline::Parts::DecodeProgress& progress) {
    pipeline::throw_if_interrupted("VAE decoding");
    const VAEConfig& vcfg = vae->config();
    // latents / scaling_factor (+ shift_factor when set and non-zero), as decode_scaled.
    Tensor latent = ops::div(z.unsqueeze(0), Tensor::full({1}, vcfg.scaling_factor, z.dtype()));
    if (vcfg.shift_factor && *vcfg.shift_factor != 0) latent = ops::add_scalar(latent, *vcfg.shift_factor);
    Tensor video = ops::clamp(vae->decode_tiled(latent, tiling), -1.0, 1.0).squeeze(0);
    if (progress) progress(1, 1);
    return video.dtype() == DType::F32 ? video : ops::cast(video, DType::F32);
  };
  return p;
}

}  // namespace vidax::hunyuan15
