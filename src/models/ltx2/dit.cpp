#include "models/ltx2/dit.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <tuple>

#include "core/error.h"
#include "nn/cast.h"

namespace vidax::ltx2 {

namespace {

// Sample b of positions [B, n_axes, T, 2] as rope.h's bounds.
Positions sample_positions(const std::vector<float>& pos, int64_t b, int64_t n, int64_t T) {
  Positions p;
  p.n_axes = n;
  p.tokens = T;
  p.start.resize(static_cast<size_t>(n * T));
  p.end.resize(p.start.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t t = 0; t < T; ++t) {
      const size_t src = static_cast<size_t>(((b * n + a) * T + t) * 2);
      p.start[static_cast<size_t>(a * T + t)] = pos[src];
      p.end[static_cast<size_t>(a * T + t)] = pos[src + 1];
    }
  return p;
}

// RoPE tables for every sample (one set when all samples share their positions); axis0_only: the
// cross-modal temporal tables (positions[:, 0:1]).
StreamRope stream_rope(const Tensor& positions, const RopeSpec& spec, bool axis0_only) {
  const int64_t B = positions.size(0), n = positions.size(1), T = positions.size(2);
  const std::vector<float> pos = positions.to_f32_vector();
  std::vector<Positions> samples;
  for (int64_t b = 0; b < B; ++b) {
    Positions p = sample_positions(pos, b, n, T);
    samples.push_back(axis0_only ? temporal(p) : std::move(p));
  }
  bool same = true;
  for (const Positions& p : samples) same = same && p.start == samples[0].start && p.end == samples[0].end;
  StreamRope r;
  for (size_t b = 0; b < (same ? 1 : samples.size()); ++b) r.per_sample.push_back(rope_tables(samples[b], spec));
  return r;
}

// _prepare_attention_mask for an integer mask: (mask - 1) * finfo(f32).max added to the scores, so a
// masked key gets -FLT_MAX. Rows that are a prefix of tokens become kv_lens (the same values: such a
// key's weight is exp(-FLT_MAX - max) = 0 either way); anything else the bias [B, 1, Lq, L].
ops::AttentionOptions mask_options(const Tensor& mask, int64_t B, int64_t L, int64_t Lq, const char* stream) {
  VIDAX_CHECK(!dtype_is_float(mask.dtype()),
              "LTX-2 DiT: " << stream << " context_mask is " << dtype_name(mask.dtype())
                            << "; a float mask is an additive bias in the reference, and only integer / bool "
                               "masks (1 = token) are supported");
  VIDAX_CHECK(mask.dim() == 2 && mask.size(0) == B && mask.size(1) == L,
              "LTX-2 DiT: " << stream << " context_mask must be [" << B << ", " << L << "], got " << mask.str());
  const std::vector<double> m = mask.to_f64_vector();
  for (double v : m)
    VIDAX_CHECK(v == 0 || v == 1, "LTX-2 DiT: " << stream << " context_mask values must be 0 or 1, found " << v);
  ops::AttentionOptions o;
  bool prefix = true;
  std::vector<int64_t> lens(static_cast<size_t>(B), 0);
  for (int64_t b = 0; b < B; ++b) {
    int64_t n = 0;
    while (n < L && m[static_cast<size_t>(b * L + n)] == 1) ++n;
    for (int64_t j = n; j < L; ++j) prefix = prefix && m[static_cast<size_t>(b * L + j)] == 0;
    prefix = prefix && n > 0;
    lens[static_cast<size_t>(b)] = n;
  }
  if (prefix) {
    o.kv_lens = lens;
    return o;
  }
  std::vector<float> bias(static_cast<size_t>(B * Lq * L));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Lq; ++i)
      for (int64_t j = 0; j < L; ++j)
        bias[static_cast<size_t>((b * Lq + i) * L + j)] = m[static_cast<size_t>(b * L + j)] == 1 ? 0.0f : -FLT_MAX;
  o.bias = Tensor::from_f32(bias, {B, 1, Lq, L});
  return o;
}

// _prepare_self_attention_mask: a [0, 1] mask [B or 1, T or 1, T] -> the bias [B, 1, T, T]:
// log(max(m, FLT_MIN)) where m > 0, -FLT_MAX (finfo.min) elsewhere.
ops::AttentionOptions self_mask_options(const Tensor& mask, int64_t B, int64_t T, const char* stream) {
  VIDAX_CHECK(mask.dim() == 3 && (mask.size(0) == B || mask.size(0) == 1) && (mask.size(1) == T || mask.size(1) == 1) &&
                  mask.size(2) == T,
              "LTX-2 DiT: " << stream << " attention_mask must be [" << B << " or 1, " << T << " or 1, " << T
                            << "], got " << mask.str());
  const std::vector<float> m = ops::cast(mask, DType::F32).to_f32_vector();
  const int64_t mb = mask.size(0), mq = mask.size(1);
  std::vector<float> bias(static_cast<size_t>(B * T * T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        const float v = m[static_cast<size_t>(((mb == 1 ? 0 : b) * mq + (mq == 1 ? 0 : i)) * T + j)];
        VIDAX_CHECK(!std::isnan(v), "LTX-2 DiT: " << stream << " attention_mask has a NaN");
        bias[static_cast<size_t>((b * T + i) * T + j)] = v > 0 ? std::log(std::max(v, FLT_MIN)) : -FLT_MAX;
      }
  ops::AttentionOptions o;
  o.bias = Tensor::from_f32(bias, {B, 1, T, T});
  return o;
}

// This block's perturbation of one type: none when every sample keeps, `all` when none does.
Perturb block_perturb(const std::vector<float>& masks, int64_t type, int64_t block, int64_t layers, int64_t B) {
  std::vector<float> keep(static_cast<size_t>(B));
  bool any_perturbed = false, all_perturbed = true;
  for (int64_t b = 0; b < B; ++b) {
    const float k = masks[static_cast<size_t>((type * layers + block) * B + b)];
    keep[static_cast<size_t>(b)] = k;
    any_perturbed = any_perturbed || k == 0;
    all_perturbed = all_perturbed && k == 0;
  }
  Perturb p;
  if (all_perturbed) p.all = true;
  else if (any_perturbed) p.keep = Tensor::from_f32(keep, {B, 1, 1});
  return p;
}

// An AdaLN of n timesteps per sample (already scaled), evaluated once per distinct value:
// (the modulation, compact, [B, 1 or n, k * D]; the embedded timestep [B, 1 or n, D]), n collapsed
// to 1 when each sample has one value.
// tap: the reference's [B * n, k * D] (one row per timestep given).
std::pair<Modulation, Tensor> modulation(const AdaLNSingle& adaln, const std::vector<float>& t, int64_t B,
                                         Tensor* tap = nullptr) {
  const int64_t n = static_cast<int64_t>(t.size()) / B;
  std::vector<float> uniq(t);
  std::sort(uniq.begin(), uniq.end());
  uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
  std::vector<int64_t> ids;
  for (float v : t) ids.push_back(static_cast<int64_t>(std::lower_bound(uniq.begin(), uniq.end(), v) - uniq.begin()));
  bool constant = true;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 1; i < n; ++i) constant = constant && ids[static_cast<size_t>(b * n + i)] == ids[static_cast<size_t>(b * n)];
  std::vector<int64_t> rows;
  if (constant) {
    for (int64_t b = 0; b < B; ++b) rows.push_back(ids[static_cast<size_t>(b * n)]);
  } else {
    rows = ids;
  }
  const auto [mod, emb] = adaln(uniq);
  if (tap) *tap = ops::embedding(Tensor::from_i64(ids, {B * n}), mod);
  Modulation m{mod, Tensor::from_i64(rows, {B, constant ? 1 : n})};
  return {m, uniq.size() == 1 ? emb.unsqueeze(0) : ops::embedding(m.ids, emb)};
}

std::vector<float> scaled(const Tensor& t, float factor) {
  std::vector<float> v = t.to_f32_vector();
  for (float& x : v) x = x * factor;  // timestep * multiplier in fp32
  return v;
}

}  // namespace

LTXModel::LTXModel(const DiTConfig& cfg, nn::ParamSource& params, DType compute) : cfg_(cfg), compute_(compute) {
  cfg_.validate();
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "LTX-2 DiT: compute dtype " << dtype_name(compute) << " (F32 or BF16)");
  if (cfg_.video()) video_ = load_stream(params, false);
  if (cfg_.audio()) audio_ = load_stream(params, true);
  for (int64_t i = 0; i < cfg_.num_layers; ++i)
    blocks_.push_back(AVBlock::load(params, "transformer_blocks." + std::to_string(i), cfg_, compute_));
}

void LTXModel::for_each_linear(const std::function<void(const std::string&, nn::Linear&)>& f) {
  // The names load_stream, AdaLNSingle::load, Attention::load, FeedForward::load and AVBlock::load give.
  auto lin = [&](const std::string& prefix, nn::Linear& l) { f(prefix + ".weight", l); };
  auto adaln = [&](const std::string& prefix, AdaLNSingle& a) {
    lin(prefix + ".emb.timestep_embedder.linear_1", a.linear_1);
    lin(prefix + ".emb.timestep_embedder.linear_2", a.linear_2);
    lin(prefix + ".linear", a.linear);
  };
  auto attention = [&](const std::string& prefix, Attention& a) {
    lin(prefix + ".to_q", a.to_q);
    lin(prefix + ".to_k", a.to_k);
    lin(prefix + ".to_v", a.to_v);
    if (a.to_gate_logits) lin(prefix + ".to_gate_logits", *a.to_gate_logits);
    lin(prefix + ".to_out.0", a.to_out);
  };
  for (std::optional<Stream>* so : {&video_, &audio_}) {
    if (!*so) continue;
    Stream& s = **so;
    const bool audio = so == &audio_;
    const std::string& p = s.prefix;
    lin(p + "patchify_proj", s.patchify_proj);
    if (s.caption_1) lin(p + "caption_projection.linear_1", *s.caption_1);
    if (s.caption_2) lin(p + "caption_projection.linear_2", *s.caption_2);
    if (s.adaln) adaln(p + "adaln_single", *s.adaln);
    if (s.prompt_adaln) adaln(p + "prompt_adaln_single", *s.prompt_adaln);
    lin(p + "proj_out", s.proj_out);
    const std::string m = audio ? "audio" : "video";
    if (s.cross_scale_shift) adaln("av_ca_" + m + "_scale_shift_adaln_single", *s.cross_scale_shift);
    if (s.cross_gate) adaln(audio ? "av_ca_v2a_gate_adaln_single" : "av_ca_a2v_gate_adaln_single", *s.cross_gate);
  }
  for (size_t i = 0; i < blocks_.size(); ++i) {
    AVBlock& b = blocks_[i];
    const std::string p = "transformer_blocks." + std::to_string(i) + ".";
    for (std::optional<AVBlock::Stream>* so : {&b.video, &b.audio}) {
      if (!*so) continue;
      const std::string a = so == &b.audio ? "audio_" : "";
      attention(p + a + "attn1", (*so)->attn1);
      attention(p + a + "attn2", (*so)->attn2);
      lin(p + a + "ff.net.0.proj", (*so)->ff.proj);
      lin(p + a + "ff.net.2", (*so)->ff.out);
    }
    if (b.audio_to_video_attn) attention(p + "audio_to_video_attn", *b.audio_to_video_attn);
    if (b.video_to_audio_attn) attention(p + "video_to_audio_attn", *b.video_to_audio_attn);
  }
}

LTXModel::Stream LTXModel::load_stream(nn::ParamSource& params, bool audio) const {
  Stream s;
  s.name = audio ? "audio" : "video";
  s.prefix = audio ? "audio_" : "";
  s.dim = audio ? cfg_.audio_inner_dim() : cfg_.inner_dim();
  s.heads = audio ? cfg_.audio_num_attention_heads : cfg_.num_attention_heads;
  s.in_channels = audio ? cfg_.audio_in_channels : cfg_.in_channels;
  s.max_pos = audio ? cfg_.audio_positional_embedding_max_pos : cfg_.positional_embedding_max_pos;
  const int64_t out = audio ? cfg_.audio_out_channels : cfg_.out_channels;
  const std::string& p = s.prefix;
  s.patchify_proj = nn::Linear::load(params, p + "patchify_proj", s.in_channels, s.dim, compute_);
  if (!audio && cfg_.use_keyframes_abs_pos_embedding)
    s.keyframes_embedding = params.take("keyframes_abs_pos_embedding", {1, s.dim});
  if (cfg_.caption_projection) {
    s.caption_1 = nn::Linear::load(params, p + "caption_projection.linear_1", cfg_.caption_channels, s.dim, compute_);
    s.caption_2 = nn::Linear::load(params, p + "caption_projection.linear_2", s.dim, s.dim, compute_);
  }
  s.adaln = AdaLNSingle::load(params, p + "adaln_single", s.dim, cfg_.adaln_coefficient());
  if (cfg_.prompt_adaln()) s.prompt_adaln = AdaLNSingle::load(params, p + "prompt_adaln_single", s.dim, 2);
  s.scale_shift_table = params.take(p + "scale_shift_table", {2, s.dim});
  s.proj_out = nn::Linear::load(params, p + "proj_out", s.dim, out, compute_);
  if (cfg_.video() && cfg_.audio()) {
    const std::string m = audio ? "audio" : "video";
    s.cross_scale_shift = AdaLNSingle::load(params, "av_ca_" + m + "_scale_shift_adaln_single", s.dim, 4);
    s.cross_gate = AdaLNSingle::load(params, audio ? "av_ca_v2a_gate_adaln_single" : "av_ca_a2v_gate_adaln_single",
                                     s.dim, 1);
  }
  return s;
}

StreamArgs LTXModel::prepare(const Stream& s, const Modality& m, const Modality* cross, Taps* taps) const {
  const std::string who = std::string("LTX-2 DiT: ") + s.name + " ";
  VIDAX_CHECK(m.latent.dim() == 3 && m.latent.size(2) == s.in_channels,
              who << "latent must be [B, T, " << s.in_channels << "], got " << m.latent.str());
  const int64_t B = m.latent.size(0), T = m.latent.size(1);
  VIDAX_CHECK(B >= 1 && T >= 1, who << "latent " << m.latent.str() << " is empty");
  VIDAX_CHECK(m.sigma.numel() == B, who << "sigma has " << m.sigma.numel() << " values for a batch of " << B);
  const int64_t nt = m.timesteps.numel();
  VIDAX_CHECK(nt == B || nt == B * T,
              who << "timesteps " << m.timesteps.str() << ": one per sample or one per token (" << B << " x " << T << ")");
  const int64_t n_axes = static_cast<int64_t>(s.max_pos.size());
  VIDAX_CHECK(m.positions.dim() == 4 && m.positions.size(0) == B && m.positions.size(1) == n_axes &&
                  m.positions.size(2) == T && m.positions.size(3) == 2,
              who << "positions must be [" << B << ", " << n_axes << ", " << T << ", 2] ([start, end) bounds), got "
                  << m.positions.str());
  const int64_t ctx_dim = cfg_.caption_projection ? cfg_.caption_channels : s.dim;
  VIDAX_CHECK(m.context.dim() == 3 && m.context.size(0) == B && m.context.size(2) == ctx_dim,
              who << "context must be [" << B << ", L, " << ctx_dim << "], got " << m.context.str());

  StreamArgs a;
  a.enabled = m.enabled;
  a.x = linear_f32(s.patchify_proj, m.latent);
  if (taps) (*taps)[s.prefix + "patchify_proj"] = a.x;
  if (s.keyframes_embedding.defined() && m.keyframes_mask) {
    // apply_keyframes_absolute_embedding: x + (keyframes_mask > 0) * embedding.
    const Tensor& km = *m.keyframes_mask;
    VIDAX_CHECK(km.numel() == B * T && (km.dim() == 2 || (km.dim() == 3 && km.size(2) == 1)) && km.size(0) == B &&
                    km.size(1) == T,
                who << "keyframes_mask must be [" << B << ", " << T << ", 1], got " << km.str());
    std::vector<float> marked;
    for (double x : km.to_f64_vector()) marked.push_back(x > 0 ? 1.0f : 0.0f);
    a.x = ops::add(a.x, ops::mul(Tensor::from_f32(marked, {B, T, 1}), s.keyframes_embedding));
  }
  const float mult = static_cast<float>(cfg_.timestep_scale_multiplier);
  const std::vector<float> t = scaled(m.timesteps, mult);
  Tensor tap;
  std::tie(a.timesteps, a.embedded_timestep) = modulation(*s.adaln, t, B, taps ? &tap : nullptr);
  if (taps) (*taps)[s.prefix + "adaln_single"] = tap;
  if (s.prompt_adaln) a.prompt_timestep = modulation(*s.prompt_adaln, scaled(m.sigma, mult), B).first;
  a.context = s.caption_1 ? linear_f32(*s.caption_2, ops::gelu(linear_f32(*s.caption_1, m.context), ops::GeluMode::Tanh))
                          : nn::to_dtype(m.context, DType::F32);
  if (m.context_mask) a.context_mask = mask_options(*m.context_mask, B, m.context.size(1), T, s.name);
  if (m.attention_mask) a.self_mask = self_mask_options(*m.attention_mask, B, T, s.name);
  const RopeSpec self{s.dim, s.heads, cfg_.positional_embedding_theta, s.max_pos, cfg_.rope_type};
  a.pe = stream_rope(m.positions, self, false);

  if (cross && s.cross_scale_shift) {
    VIDAX_CHECK(cross->sigma.numel() == B,
                who << "the other stream's sigma has " << cross->sigma.numel() << " values for a batch of " << B);
    const RopeSpec spec{cfg_.audio_cross_attention_dim, s.heads, cfg_.positional_embedding_theta,
                        {cfg_.cross_pe_max_pos()}, cfg_.rope_type};
    a.cross_pe = stream_rope(m.positions, spec, true);
    a.cross_scale_shift_timestep = modulation(*s.cross_scale_shift, t, B).first;
    // sigma * multiplier * (av_ca multiplier / multiplier): each product rounded to fp32.
    const float av_factor = static_cast<float>(static_cast<double>(cfg_.av_ca_timestep_scale_multiplier) /
                                               static_cast<double>(cfg_.timestep_scale_multiplier));
    std::vector<float> g = scaled(cross->sigma, mult);
    for (float& x : g) x = x * av_factor;
    a.cross_gate_timestep = modulation(*s.cross_gate, g, B).first;
    a.has_cross = true;
  }
  return a;
}

Tensor LTXModel::output(const Stream& s, const StreamArgs& a) const {
  // _process_output: (shift, scale) = scale_shift_table + embedded; LN(x)(1 + scale) + shift; proj_out.
  const Tensor shift = ops::add(s.scale_shift_table.select(0, 0), a.embedded_timestep);
  const Tensor scale = ops::add(s.scale_shift_table.select(0, 1), a.embedded_timestep);
  return linear_f32(s.proj_out, ops::layer_norm_modulate(a.x, shift, scale, cfg_.norm_eps));
}

DiTOutput LTXModel::forward(const Modality* video, const Modality* audio, const Tensor* perturbations,
                            Taps* taps) const {
  VIDAX_CHECK(video || audio, "LTX-2 DiT: at least one of video or audio must be given");
  VIDAX_CHECK(!video || video_, "LTX-2 DiT: video is not enabled for this model (" << model_type_name(cfg_.model_type) << ")");
  VIDAX_CHECK(!audio || audio_, "LTX-2 DiT: audio is not enabled for this model (" << model_type_name(cfg_.model_type) << ")");
  if (video && audio)
    VIDAX_CHECK(video->latent.size(0) == audio->latent.size(0),
                "LTX-2 DiT: video batch " << video->latent.size(0) << " and audio batch " << audio->latent.size(0));
  std::optional<StreamArgs> v, a;
  if (video) v = prepare(*video_, *video, audio, taps);
  if (audio) a = prepare(*audio_, *audio, video, taps);
  const int64_t B = (video ? video : audio)->latent.size(0), layers = cfg_.num_layers;
  std::vector<float> masks;
  if (perturbations) {
    VIDAX_CHECK(perturbations->dim() == 3 && perturbations->size(0) == 4 && perturbations->size(1) == layers &&
                    perturbations->size(2) == B,
                "LTX-2 DiT: perturbations must be [4, " << layers << ", " << B
                                                        << "] (type, block, sample; 1 = keep), got " << perturbations->str());
    masks = ops::cast(*perturbations, DType::F32).to_f32_vector();
  }
  for (size_t i = 0; i < blocks_.size(); ++i) {
    BlockPerturbations p;
    if (perturbations) {
      const int64_t blk = static_cast<int64_t>(i);
      // PerturbationType: SKIP_VIDEO_SELF_ATTN, SKIP_AUDIO_SELF_ATTN, SKIP_A2V_CROSS_ATTN, SKIP_V2A_CROSS_ATTN.
      p.video_self = block_perturb(masks, 0, blk, layers, B);
      p.audio_self = block_perturb(masks, 1, blk, layers, B);
      p.a2v = block_perturb(masks, 2, blk, layers, B);
      p.v2a = block_perturb(masks, 3, blk, layers, B);
    }
    blocks_[i].forward(v ? &*v : nullptr, a ? &*a : nullptr, p);
    const std::string name = "transformer_blocks." + std::to_string(i);
    if (taps && v) (*taps)[name + ".video"] = v->x;
    if (taps && a) (*taps)[name + ".audio"] = a->x;
  }
  DiTOutput out;
  if (v) out.video = output(*video_, *v);
  if (a) out.audio = output(*audio_, *a);
  return out;
}

}  // namespace vidax::ltx2
