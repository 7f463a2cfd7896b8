#include "models/wan/dit.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "backend/ops.h"
#include "models/wan/dit_parallel.h"
#include "models/wan/embeddings.h"
#include "nn/cast.h"

namespace vidax::wan {

Precision parse_precision(const std::string& s) {
  if (s == "fp32" || s == "f32" || s == "float32") return Precision::F32;
  if (s == "bf16" || s == "bfloat16") return Precision::BF16;
  throw Error(msg() << "unknown precision '" << s << "' (expected fp32 or bf16)");
}

const char* precision_name(Precision p) { return p == Precision::F32 ? "fp32" : "bf16"; }

TextContext concat_batch(const std::vector<TextContext>& parts) {
  VIDAX_CHECK(!parts.empty(), "Wan DiT: concat_batch of no contexts");
  // Concatenates one field over all parts along the batch dim (undefined stays undefined).
  auto cat = [&parts](auto field) -> Tensor {
    std::vector<Tensor> xs;
    for (const TextContext& p : parts) xs.push_back(field(p));
    VIDAX_CHECK(std::all_of(xs.begin(), xs.end(), [&](const Tensor& t) { return t.defined() == xs[0].defined(); }),
                "Wan DiT: concat_batch of text-only and image-conditioned contexts");
    return xs[0].defined() ? ops::concat(xs, 0) : Tensor();
  };
  TextContext out;
  out.embedded = cat([](const TextContext& p) { return p.embedded; });
  out.image = cat([](const TextContext& p) { return p.image; });
  out.y = cat([](const TextContext& p) { return p.y; });
  for (const TextContext& p : parts)
    VIDAX_CHECK(p.blocks.size() == parts[0].blocks.size(), "Wan DiT: concat_batch of contexts from different models");
  out.vace = cat([](const TextContext& p) { return p.vace; });
  for (const TextContext& p : parts)
    VIDAX_CHECK(p.vace_scale == parts[0].vace_scale && p.vace_blocks.size() == parts[0].vace_blocks.size(),
                "Wan DiT: concat_batch of contexts with different vace_context_scale or vace blocks");
  out.vace_scale = parts[0].vace_scale;
  out.vace_blocks.resize(parts[0].vace_blocks.size());
  for (size_t i = 0; i < out.vace_blocks.size(); ++i) {
    out.vace_blocks[i].k = cat([i](const TextContext& p) { return p.vace_blocks[i].k; });
    out.vace_blocks[i].v = cat([i](const TextContext& p) { return p.vace_blocks[i].v; });
  }
  out.blocks.resize(parts[0].blocks.size());
  for (size_t i = 0; i < out.blocks.size(); ++i) {
    out.blocks[i].k = cat([i](const TextContext& p) { return p.blocks[i].k; });
    out.blocks[i].v = cat([i](const TextContext& p) { return p.blocks[i].v; });
    out.blocks[i].k_img = cat([i](const TextContext& p) { return p.blocks[i].k_img; });
    out.blocks[i].v_img = cat([i](const TextContext& p) { return p.blocks[i].v_img; });
  }
  return out;
}

template <class F>
auto WanDiT::with_block(size_t i, F&& fn) const {
  if (!streamer_) return fn(blocks_[i]);
  const size_t group = streamed_vace_ + i;
  auto b = streamer_->acquire(group);
  auto out = fn(*b->block);
  streamer_->release(group, std::move(b));
  return out;
}

VaceBranch::WithBlock WanDiT::with_vace_block() const {
  if (!streamer_) return {};
  return [streamer = streamer_](size_t j, const VaceBranch::BlockFn& fn) {
    auto b = streamer->acquire(j);
    fn(*b->vace);
    streamer->release(j, std::move(b));
  };
}

nn::WeightStreamStats WanDiT::stream_stats() const {
  return streamer_ ? streamer_->stream().stats() : nn::WeightStreamStats{};
}

WanDiT::WanDiT(const DiTConfig& cfg, nn::ParamSource& source, Precision precision, const dist::Mesh* mesh,
               StreamedBlocks streamed)
    : cfg_(cfg), precision_(precision), compute_(precision == Precision::BF16 ? DType::BF16 : DType::F32) {
  cfg_.validate();
  mesh_ = mesh;
  VIDAX_CHECK(!streamed.source || !mesh_ || (mesh_->shape().tp == 1 && mesh_->shape().sp == 1),
              "Wan DiT: weight streaming (--offload) runs on one rank or with cfg parallelism only, not with the mesh "
                  << mesh_->shape().str());
  if (mesh_) check_mesh_fits(cfg_, mesh_->shape());
  // This rank's shard of every tensor-parallel weight (all of each on one rank).
  const nn::TensorParallel tp{mesh_ && mesh_->shape().tp > 1 ? &mesh_->tp() : nullptr};
  nn::ParamSource params = nn::shard_params(source, tp, dit_tensor_parallel_table(), ledger_);
  const int64_t d = cfg_.dim;
  const auto [pt, ph, pw] = cfg_.patch_size;
  const Tensor conv_w = params.take("patch_embedding.weight", {d, cfg_.in_dim, pt, ph, pw});
  const Tensor conv_b = params.take("patch_embedding.bias", {d});
  // Conv3d with kernel == stride is a linear map of each patch (features in (c, kt, kh, kw) order).
  patch_embedding_ = nn::Linear::make(conv_w.contiguous().view({d, cfg_.in_dim * cfg_.patch_volume()}), conv_b,
                                      compute_);
  patch_embedding_.adapters = params.take_adapters("patch_embedding.weight", d, cfg_.in_dim * cfg_.patch_volume());
  text_embedding_0_ = nn::Linear::load(params, "text_embedding.0", cfg_.text_dim, d, compute_);
  text_embedding_2_ = nn::Linear::load(params, "text_embedding.2", d, d, compute_);
  // The reference runs the time embedding, the projection and the head under autocast(fp32).
  time_embedding_0_ = nn::Linear::load(params, "time_embedding.0", cfg_.freq_dim, d, DType::F32);
  time_embedding_2_ = nn::Linear::load(params, "time_embedding.2", d, d, DType::F32);
  time_projection_ = nn::Linear::load(params, "time_projection.1", d, 6 * d, DType::F32);
  if (streamed.source) {
    // Built on the stream's worker: page the block's views in, cast what the compute dtype
    // needs, strictly (every tensor of the block taken).
    streamed_vace_ = cfg_.is_vace() ? cfg_.vace_layers.size() : 0;
    auto load = [src = streamed.source, origin = streamed.origin, cfg = cfg_, compute = compute_,
                 nv = streamed_vace_](size_t i, double* bytes) {
      auto b = std::make_shared<StreamedBlock>();
      b->views = src(static_cast<int64_t>(i));
      for (const auto& [name, t] : b->views) nn::page_in(t);
      nn::ParamSource ps = nn::ParamSource::from_map(b->views, origin);
      if (i < nv)
        b->vace = VaceBranch::load_block(ps, i, cfg, compute);
      else
        b->block = DiTBlock::load(ps, "blocks." + std::to_string(i - nv), cfg, compute);
      ps.expect_all_taken();
      double n = 0;
      for (const auto& [name, t] : b->views) n += static_cast<double>(t.numel() * dtype_size(t.dtype()));
      *bytes = n;
      return std::shared_ptr<const StreamedBlock>(std::move(b));
    };
    auto evict = [](size_t, const StreamedBlock& b) {
      for (const auto& [name, t] : b.views) nn::drop_pages(t);
    };
    streamer_ = std::make_shared<nn::BlockStreamer<StreamedBlock>>(streamed_vace_ + block_count(), load, evict,
                                                                   "Wan DiT blocks of " + streamed.origin);
    streamer_->stream().set_prefetch(streamed.prefetch);
  } else {
    blocks_.reserve(static_cast<size_t>(cfg_.num_layers));
    for (int64_t i = 0; i < cfg_.num_layers; ++i)
      blocks_.push_back(DiTBlock::load(params, "blocks." + std::to_string(i), cfg_, compute_, tp));
  }
  head_modulation_ = nn::to_dtype(params.take("head.modulation", {1, 2, d}), DType::F32);  // as blocks' (dit_block.cpp)
  head_ = nn::Linear::load(params, "head.head", d, cfg_.out_dim * cfg_.patch_volume(), DType::F32);
  if (cfg_.has_image_input()) {
    const int64_t c = cfg_.image_dim;
    ImageEmbedding m;
    m.norm_in_w = params.take("img_emb.proj.0.weight", {c});
    m.norm_in_b = params.take("img_emb.proj.0.bias", {c});
    m.fc1 = nn::Linear::load(params, "img_emb.proj.1", c, c, compute_);
    m.fc2 = nn::Linear::load(params, "img_emb.proj.3", c, d, compute_);
    m.norm_out_w = params.take("img_emb.proj.4.weight", {d});
    m.norm_out_b = params.take("img_emb.proj.4.bias", {d});
    if (cfg_.model_type == "flf2v") m.emb_pos = params.take("img_emb.emb_pos", {1, 2 * cfg_.image_tokens, c});
    img_emb_ = std::move(m);
  }
  if (cfg_.is_vace()) {
    vace_ = std::make_shared<const VaceBranch>(streamed.source ? VaceBranch::load_unheld(params, cfg_, compute_)
                                                               : VaceBranch::load(params, cfg_, compute_, tp));
  }
}

WanDiT WanDiT::from_weights(const DiTConfig& cfg, std::map<std::string, Tensor> weights, Precision precision,
                            const std::string& origin, const dist::Mesh* mesh, nn::Adapters adapters) {
  nn::ParamSource params = nn::ParamSource::from_map(std::move(weights), origin);
  if (!adapters.empty()) params.attach_adapters(std::move(adapters));
  WanDiT model(cfg, params, precision, mesh);
  params.expect_all_taken();
  return model;
}

std::array<int64_t, 3> WanDiT::patch_grid(const Shape& s) const {
  VIDAX_CHECK(s.size() == 4 || s.size() == 5,
              "Wan DiT: latent must be [C, F, H, W] or [B, C, F, H, W], got " << shape_str(s));
  const size_t c = s.size() - 4;
  VIDAX_CHECK(s[c] == cfg_.in_dim, "Wan DiT: latent " << shape_str(s) << " has " << s[c]
                                                      << " channels, the model expects in_dim = " << cfg_.in_dim);
  static const char* axis[3] = {"frames", "height", "width"};
  std::array<int64_t, 3> grid{};
  for (size_t a = 0; a < 3; ++a) {
    const int64_t n = s[c + 1 + a], p = cfg_.patch_size[a];
    VIDAX_CHECK(n > 0 && n % p == 0, "Wan DiT: latent " << axis[a] << " " << n << " (shape " << shape_str(s)
                                                        << ") is not a positive multiple of the patch size " << p);
    grid[a] = n / p;
  }
  return grid;
}

const RopeTables& WanDiT::rope_for(std::array<int64_t, 3> grid, Device device) const {
  std::lock_guard<std::mutex> lock(*rope_mutex_);
  const std::array<int64_t, 4> key{grid[0], grid[1], grid[2], static_cast<int64_t>(device)};
  auto it = rope_cache_.find(key);
  if (it == rope_cache_.end()) it = rope_cache_.emplace(key, rope_tables(cfg_, grid, device)).first;
  return it->second;
}

TextContext WanDiT::encode_context(const Tensor& context, Taps* taps) const {
  VIDAX_CHECK(!cfg_.has_image_input(), "Wan DiT: a " << cfg_.model_type
                                                     << " model needs clip_fea and y (encode_context with images)");
  return encode(context, Tensor(), Tensor(), taps);
}

TextContext WanDiT::encode_context(const Tensor& context, const Tensor& clip_fea, const Tensor& y, Taps* taps) const {
  VIDAX_CHECK(cfg_.has_image_input(), "Wan DiT: clip_fea / y given to a " << cfg_.model_type << " model");
  VIDAX_CHECK(clip_fea.defined() && y.defined(), "Wan DiT: " << cfg_.model_type << " needs both clip_fea and y");
  return encode(context, clip_fea, y, taps);
}

TextContext WanDiT::encode_text(const Tensor& context) const {
  const Tensor c3 = context.dim() == 2 ? context.unsqueeze(0) : context;
  VIDAX_CHECK(c3.dim() == 3 && c3.size(2) == cfg_.text_dim && c3.size(1) >= 1 && c3.size(1) <= cfg_.text_len,
              "Wan DiT: context " << context.str() << ", expected [L, " << cfg_.text_dim << "] with L <= "
                                  << cfg_.text_len);
  const int64_t L = c3.size(1);
  const Tensor padded = L < cfg_.text_len ? ops::pad(c3, {0, 0, 0, cfg_.text_len - L}) : c3;
  TextContext out;
  out.embedded = text_embedding_2_(ops::gelu(text_embedding_0_(padded), ops::GeluMode::Tanh));
  out.blocks.reserve(block_count());
  for (size_t i = 0; i < block_count(); ++i)
    out.blocks.push_back(with_block(i, [&](const DiTBlock& b) { return b.text_kv(out.embedded, cfg_); }));
  if (vace_) out.vace_blocks = vace_->text_kv(out.embedded, cfg_, with_vace_block());
  return out;
}

VaceContext WanDiT::encode_vace(const Tensor& vace_context, double scale, Taps* taps) const {
  VIDAX_CHECK(vace_, "Wan DiT: a vace context given to a " << cfg_.model_type << " model (VACE models only)");
  VaceContext out{vace_->embed(vace_context, cfg_), scale};
  if (taps) (*taps)["vace_patch_embedding"] = out.tokens;
  return out;
}

TextContext with_vace(const TextContext& text, const VaceContext& vace) {
  VIDAX_CHECK(!text.vace.defined(), "Wan DiT: with_vace on a context that already has a vace context");
  VIDAX_CHECK(!text.vace_blocks.empty(), "Wan DiT: with_vace on the context of a model without vace blocks");
  VIDAX_CHECK(vace.tokens.size(0) == text.batch(),
              "Wan DiT: with_vace: vace context batch " << vace.tokens.size(0) << " vs prompt batch " << text.batch());
  TextContext out = text;
  out.vace = vace.tokens;
  out.vace_scale = vace.scale;
  return out;
}

ImageContext WanDiT::encode_images(const Tensor& clip_fea, const Tensor& y) const {
  VIDAX_CHECK(cfg_.has_image_input(), "Wan DiT: images given to a " << cfg_.model_type << " model");
  const Tensor y5 = y.dim() == 4 ? y.unsqueeze(0) : y;
  VIDAX_CHECK(y5.dim() == 5, "Wan DiT: y " << y.str() << " must be [C, F, H, W] or [B, C, F, H, W]");
  ImageContext out;
  out.image = embed_image(clip_fea, y5.size(0));
  out.y = y5;
  out.blocks.reserve(block_count());
  for (size_t i = 0; i < block_count(); ++i)
    out.blocks.push_back(with_block(i, [&](const DiTBlock& b) { return b.image_kv(out.image, cfg_); }));
  return out;
}

TextContext with_images(const TextContext& text, const ImageContext& images) {
  VIDAX_CHECK(!text.image.defined(), "Wan DiT: with_images on a context that already has images");
  VIDAX_CHECK(text.blocks.size() == images.blocks.size(),
              "Wan DiT: with_images of a text and an image context from different models");
  VIDAX_CHECK(images.image.size(0) == text.batch(), "Wan DiT: with_images: image batch " << images.image.size(0)
                                                                                        << " vs text batch " << text.batch());
  TextContext out = text;
  out.image = images.image;
  out.y = images.y;
  for (size_t i = 0; i < out.blocks.size(); ++i) std::tie(out.blocks[i].k_img, out.blocks[i].v_img) = images.blocks[i];
  return out;
}

TextContext WanDiT::encode(const Tensor& context, const Tensor& clip_fea, const Tensor& y, Taps* taps) const {
  VIDAX_CHECK(context.dim() == 2 || context.dim() == 3,
              "Wan DiT: context must be [L, text_dim] or [B, L, text_dim], got " << context.str());
  const Tensor c3 = context.dim() == 2 ? context.unsqueeze(0) : context;
  const int64_t L = c3.size(1);
  VIDAX_CHECK(c3.size(2) == cfg_.text_dim, "Wan DiT: context " << context.str() << " has dim " << c3.size(2)
                                                               << ", the model expects text_dim = " << cfg_.text_dim);
  VIDAX_CHECK(L >= 1 && L <= cfg_.text_len, "Wan DiT: context has " << L << " rows, expected 1.." << cfg_.text_len
                                                                    << " (text_len)");
  // Zero-pad to text_len rows *before* the projection, as WanModel.forward does.
  const Tensor padded = L < cfg_.text_len ? ops::pad(c3, {0, 0, 0, cfg_.text_len - L}) : c3;
  TextContext out;
  out.embedded = text_embedding_2_(ops::gelu(text_embedding_0_(padded), ops::GeluMode::Tanh));
  if (taps) (*taps)["text_embedding"] = out.embedded;
  if (clip_fea.defined()) {
    out.image = embed_image(clip_fea, c3.size(0));
    if (taps) (*taps)["img_emb"] = out.image;
    const Tensor y5 = y.dim() == 4 ? y.unsqueeze(0) : y;
    VIDAX_CHECK(y5.dim() == 5 && y5.size(0) == c3.size(0),
                "Wan DiT: y " << y.str() << " must be [C, F, H, W] or [B, C, F, H, W] with the prompt batch "
                              << c3.size(0));
    out.y = y5;
  }
  out.blocks.reserve(block_count());
  for (size_t i = 0; i < block_count(); ++i)
    out.blocks.push_back(with_block(i, [&](const DiTBlock& b) { return b.cross_kv(out.embedded, out.image, cfg_); }));
  if (vace_) out.vace_blocks = vace_->text_kv(out.embedded, cfg_, with_vace_block());
  return out;
}

Tensor WanDiT::embed_image(const Tensor& clip_fea, int64_t batch) const {
  const ImageEmbedding& m = *img_emb_;
  const int64_t images = cfg_.model_type == "flf2v" ? 2 : 1, n = cfg_.image_tokens, c = cfg_.image_dim;
  const Tensor f3 = clip_fea.dim() == 2 ? clip_fea.unsqueeze(0) : clip_fea;
  VIDAX_CHECK(f3.dim() == 3 && f3.size(0) == batch * images && f3.size(1) == n && f3.size(2) == c,
              "Wan DiT: clip_fea " << clip_fea.str() << ", expected [" << batch * images << ", " << n << ", " << c
                                   << "] (" << images << " image(s) per sample, batch " << batch << ")");
  // fp32 from here: the reference's LayerNorms run in fp32 (autocast keeps layer_norm in fp32).
  Tensor h = nn::to_dtype(f3.is_contiguous() ? f3 : ops::copy(f3), DType::F32);
  if (m.emb_pos) h = ops::add(h.view({batch, images * n, c}), *m.emb_pos);  // FLF2V: both images, one sequence
  h = ops::layer_norm(h, m.norm_in_w, m.norm_in_b, 1e-5);
  h = m.fc2(ops::gelu(m.fc1(h), ops::GeluMode::Erf));
  return ops::layer_norm(nn::to_dtype(h, DType::F32), m.norm_out_w, m.norm_out_b, 1e-5);
}

Tensor WanDiT::forward(const Tensor& x, const std::vector<double>& t, const TextContext& text, Taps* taps) const {
  const int64_t B = x.dim() == 5 ? x.size(0) : 1;
  if (static_cast<int64_t>(t.size()) == B) return forward(x, timestep_sinusoid(t, cfg_.freq_dim), text, taps);
  return forward_per_token(x, t, text, taps);
}

Tensor WanDiT::forward(const Tensor& x, const Tensor& t_sinusoid, const TextContext& text, Taps* taps) const {
  const int64_t B = x.dim() == 5 ? x.size(0) : 1, d = cfg_.dim;
  VIDAX_CHECK(t_sinusoid.dim() == 2 && t_sinusoid.size(0) == B && t_sinusoid.size(1) == cfg_.freq_dim,
              "Wan DiT: timestep embedding input " << t_sinusoid.str() << " does not match batch " << B
                                                   << " x freq_dim " << cfg_.freq_dim << " (one timestep per sample)");
  // Time embedding and projection in fp32.
  const Tensor e = time_embedding_2_(ops::silu(time_embedding_0_(nn::to_dtype(t_sinusoid, DType::F32))));
  const Tensor e0_flat = time_projection_(ops::silu(e));  // [B, 6*dim]
  if (taps) {
    (*taps)["time_embedding"] = e;
    (*taps)["time_projection"] = e0_flat;
  }
  return run(x, e, e0_flat.view({B, 6, d}), text, taps);
}

Tensor WanDiT::forward_per_token(const Tensor& x, const std::vector<double>& t, const TextContext& text,
                                 Taps* taps) const {
  VIDAX_CHECK(x.dim() == 4 || x.dim() == 5,
              "Wan DiT: latent must be [C, F, H, W] or [B, C, F, H, W], got " << x.str());
  const int64_t B = x.dim() == 5 ? x.size(0) : 1, d = cfg_.dim, n = x.dim();
  int64_t L = 1;
  for (int64_t a = 0; a < 3; ++a) L *= x.size(n - 3 + a) / cfg_.patch_size[static_cast<size_t>(a)];
  VIDAX_CHECK(static_cast<int64_t>(t.size()) == B * L,
              "Wan DiT: " << t.size() << " timestep values for the latent " << x.str() << ": expected one per sample (batch "
                          << B << ") or one per token (B x L = " << B << " x " << L << ")");
  // The distinct values (two in a TI2V step: 0 and t), each evaluated once, then gathered per token.
  std::map<double, int64_t> index;
  std::vector<double> values;
  std::vector<int64_t> ids(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    auto [it, fresh] = index.emplace(t[i], static_cast<int64_t>(values.size()));
    if (fresh) values.push_back(t[i]);
    ids[i] = it->second;
  }
  const Tensor sin = timestep_sinusoid(values, cfg_.freq_dim);
  const Tensor eu = time_embedding_2_(ops::silu(time_embedding_0_(sin)));  // [U, dim] fp32
  const Tensor e0u = time_projection_(ops::silu(eu));                       // [U, 6*dim]
  const Tensor tok = Tensor::from_i64(ids, {B, L});
  const Tensor e = ops::embedding(tok, eu);       // [B, L, dim]
  const Tensor e0_flat = ops::embedding(tok, e0u);  // [B, L, 6*dim]
  if (taps) {
    (*taps)["time_embedding"] = e;
    (*taps)["time_projection"] = e0_flat;
  }
  // [B, L, 6, dim] -> [B, 6, L, dim]: each block's six chunks are then contiguous per sample.
  return run(x, e, ops::copy(e0_flat.view({B, L, 6, d}).permute({0, 2, 1, 3})), text, taps);
}

Tensor WanDiT::run(const Tensor& x, const Tensor& e, const Tensor& e0_all, const TextContext& text, Taps* taps) const {
  VIDAX_CHECK(x.dim() == 4 || x.dim() == 5,
              "Wan DiT: latent must be [C, F, H, W] or [B, C, F, H, W], got " << x.str());
  Tensor x5 = x.dim() == 4 ? x.unsqueeze(0) : x;
  VIDAX_CHECK(text.y.defined() == cfg_.has_image_input(),
              "Wan DiT: a " << cfg_.model_type << " model " << (text.y.defined() ? "got" : "needs")
                            << " the conditioning latent y (encode_context with images)");
  if (text.y.defined()) {
    const Tensor& y = text.y;
    VIDAX_CHECK(y.size(0) == x5.size(0) && y.size(2) == x5.size(2) && y.size(3) == x5.size(3) &&
                    y.size(4) == x5.size(4),
                "Wan DiT: conditioning latent y " << y.str() << " does not match the latent " << x.str());
    x5 = ops::concat({x5, nn::to_dtype(y, x5.dtype())}, 1);  // torch.cat([x, y], dim=0) per sample
  }
  const std::array<int64_t, 3> grid = patch_grid(x5.shape());
  const int64_t B = x5.size(0), C = cfg_.in_dim;
  const auto [pt, ph, pw] = cfg_.patch_size;
  const auto [Fp, Hp, Wp] = grid;
  const int64_t L = Fp * Hp * Wp;
  const bool per_token = e0_all.dim() == 4;
  VIDAX_CHECK(e0_all.size(0) == B && (!per_token || e0_all.size(2) == L),
              "Wan DiT: time projection " << e0_all.str() << " does not match batch " << B << " / " << L << " tokens");
  VIDAX_CHECK(text.vace.defined() == cfg_.is_vace(),
              "Wan DiT: a " << cfg_.model_type << " model " << (text.vace.defined() ? "got" : "needs")
                            << " a vace context (encode_vace and with_vace)");
  VIDAX_CHECK(text.batch() == B && text.blocks.size() == block_count(),
              "Wan DiT: text context batch " << text.batch() << " (" << text.blocks.size()
                                             << " blocks) does not match latent batch " << B << " ("
                                             << block_count() << " blocks)");

  const Tensor patches = patchify(x5, cfg_.patch_size);  // [B, L, C*pt*ph*pw]
  // Ulysses: this rank embeds and carries its chunk of the (padded) tokens (nn/ulysses.h).
  const nn::SequenceParallel sp{mesh_ && mesh_->shape().sp > 1 ? &mesh_->sp() : nullptr, L};
  Tensor h = patch_embedding_(sp.local(patches, 1));  // [B, L, dim], compute dtype (bf16 under autocast)
  if (taps) (*taps)["patch_embedding"] = sp.gather(h, 1);

  // Per token, this rank's tokens of the modulation too.
  const Tensor e0 = per_token ? sp.local(e0_all, 2) : e0_all;

  // Recorded (Meta): host tables, read by the Meta rope as params (the PJRT path uploads them).
  const RopeTables& all_rope = rope_for(grid, x.device() == Device::Meta ? Device::CPU : x.device());
  const RopeTables rope{sp.local(all_rope.cos, 0), sp.local(all_rope.sin, 0)};
  // VACE: every vace block's hint, from the vace context and the embedded latent.
  std::vector<Tensor> hints;
  if (vace_) hints = vace_->hints(h, sp.local(text.vace, 1), e0, rope, text.vace_blocks, cfg_, sp, taps, with_vace_block());
  for (size_t i = 0; i < block_count(); ++i) {
    h = with_block(i, [&](const DiTBlock& b) { return b.forward(h, e0, rope, text.blocks[i], cfg_, sp); });
    // The tap of a block that takes a hint: after it in VaceWanModel (BaseWanAttentionBlock adds it),
    // before it in diffusers' WanVACETransformer3DModel (the model adds it after the block).
    const std::string tap = "blocks." + std::to_string(i);
    const int64_t j = vace_ ? vace_->hint_for(static_cast<int64_t>(i)) : -1;
    if (taps && j >= 0 && cfg_.layout == DiTLayout::Diffusers) (*taps)[tap] = sp.gather(h, 1);
    if (j >= 0)  // x + hints[j] * context_scale: the product rounds to the hint's dtype, the sum is fp32.
      h = ops::add(h, ops::scale(hints[static_cast<size_t>(j)], text.vace_scale));
    if (taps && !(j >= 0 && cfg_.layout == DiTLayout::Diffusers)) (*taps)[tap] = sp.gather(h, 1);
  }

  // Head: (head.modulation + e).chunk(2): shift, scale; fp32.
  Tensor shift, scale;
  if (per_token) {  // (modulation.unsqueeze(0) + e.unsqueeze(2)).chunk(2, dim=2): [B, L, dim] each
    const Tensor el = sp.local(e, 1);
    shift = ops::add(head_modulation_.slice(1, 0, 1), el);
    scale = ops::add(head_modulation_.slice(1, 1, 2), el);
  } else {
    const Tensor hm = ops::add(head_modulation_, e.unsqueeze(1));  // [B, 2, dim]
    shift = hm.slice(1, 0, 1);
    scale = hm.slice(1, 1, 2);
  }
  // The head on this rank's tokens, then all tokens (gathered after the head: 64 features, not dim).
  const Tensor y = sp.gather(head_(norm_modulate(h, shift, scale, cfg_.eps)), 1);
  if (taps) (*taps)["head"] = y;

  // Unpatchify: feature (kt, kh, kw, c) of token (f, h, w) -> out[c, f*pt+kt, h*ph+kh, w*pw+kw].
  const int64_t Co = cfg_.out_dim;
  const Tensor out = ops::copy(y.view({B, Fp, Hp, Wp, pt, ph, pw, Co}).permute({0, 7, 1, 4, 2, 5, 3, 6}))
                         .view({B, Co, Fp * pt, Hp * ph, Wp * pw});
  return x.dim() == 4 ? out.squeeze(0) : out;
}

}  // namespace vidax::wan
