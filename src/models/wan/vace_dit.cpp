#include "models/wan/vace_dit.h"

#include "backend/ops.h"
#include "nn/cast.h"

namespace vidax::wan {

VaceBranch VaceBranch::load_unheld(nn::ParamSource& params, const DiTConfig& cfg, DType compute) {
  VIDAX_CHECK(cfg.is_vace(), "Wan DiT: vace blocks for a " << cfg.model_type << " model");
  VaceBranch v;
  const int64_t d = cfg.dim;
  const auto [pt, ph, pw] = cfg.patch_size;
  const Tensor conv_w = params.take("vace_patch_embedding.weight", {d, cfg.vace_in_dim, pt, ph, pw});
  const Tensor conv_b = params.take("vace_patch_embedding.bias", {d});
  v.patch_embedding_ =
      nn::Linear::make(conv_w.contiguous().view({d, cfg.vace_in_dim * cfg.patch_volume()}), conv_b, compute);
  v.layers_ = cfg.vace_layers;
  return v;
}

VaceBlock VaceBranch::load_block(nn::ParamSource& params, size_t j, const DiTConfig& cfg, DType compute,
                                 const nn::TensorParallel& tp) {
  VIDAX_CHECK(j < cfg.vace_layers.size(), "Wan DiT: vace block " << j << " of " << cfg.vace_layers.size());
  const std::string prefix = "vace_blocks." + std::to_string(j);
  const int64_t d = cfg.dim;
  VaceBlock b;
  // A VaceWanAttentionBlock is a WanAttentionBlock (t2v cross-attention) with two projections.
  b.block = DiTBlock::load(params, prefix, cfg, compute, tp);
  if (cfg.vace_layers[j] == 0) b.before_proj = nn::Linear::load(params, prefix + ".before_proj", d, d, compute);
  b.after_proj = nn::Linear::load(params, prefix + ".after_proj", d, d, compute);
  return b;
}

VaceBranch VaceBranch::load(nn::ParamSource& params, const DiTConfig& cfg, DType compute,
                            const nn::TensorParallel& tp) {
  VaceBranch v = load_unheld(params, cfg, compute);
  for (size_t j = 0; j < cfg.vace_layers.size(); ++j) v.blocks_.push_back(load_block(params, j, cfg, compute, tp));
  return v;
}

void VaceBranch::visit(size_t j, const WithBlock& with, const BlockFn& fn) const {
  if (!blocks_.empty()) return fn(blocks_[j]);
  VIDAX_CHECK(with, "Wan VACE DiT: the vace blocks are streamed, and no stream was given");
  with(j, fn);
}

Tensor VaceBranch::embed(const Tensor& vace_context, const DiTConfig& cfg) const {
  const Tensor c5 = vace_context.dim() == 4 ? vace_context.unsqueeze(0) : vace_context;
  VIDAX_CHECK(c5.dim() == 5 && c5.size(1) == cfg.vace_in_dim,
              "Wan VACE DiT: vace_context " << vace_context.str() << ", expected [" << cfg.vace_in_dim
                                            << ", F, H, W] or [B, " << cfg.vace_in_dim << ", F, H, W] (vace_in_dim)");
  return patch_embedding_(patchify(c5, cfg.patch_size));
}

std::vector<CrossKV> VaceBranch::text_kv(const Tensor& embedded, const DiTConfig& cfg, const WithBlock& with) const {
  std::vector<CrossKV> out;
  out.reserve(size());
  for (size_t j = 0; j < size(); ++j)
    visit(j, with, [&](const VaceBlock& b) { out.push_back(b.block.text_kv(embedded, cfg)); });
  return out;
}

std::vector<Tensor> VaceBranch::hints(const Tensor& x, const Tensor& tokens, const Tensor& e0, const RopeTables& rope,
                                      const std::vector<CrossKV>& kv, const DiTConfig& cfg,
                                      const nn::SequenceParallel& sp, std::map<std::string, Tensor>* taps,
                                      const WithBlock& with) const {
  VIDAX_CHECK(kv.size() == size(), "Wan VACE DiT: the context has " << kv.size() << " vace blocks' K/V, the "
                                                                    << "model " << size());
  VIDAX_CHECK(tokens.size(0) == x.size(0) && tokens.size(1) == x.size(1),
              "Wan VACE DiT: the vace context has " << tokens.size(1) << " tokens (batch " << tokens.size(0)
                                                    << "), the latent " << x.size(1) << " (batch " << x.size(0)
                                                    << "): the control latent must have the noise latent's frames "
                                                       "and size");
  std::vector<Tensor> out;
  out.reserve(size());
  Tensor c = tokens;
  for (size_t j = 0; j < size(); ++j) {
    visit(j, with, [&](const VaceBlock& b) {
      // before_proj(c) + x: the compute dtype (both are GEMM outputs under autocast).
      if (b.before_proj) c = ops::add((*b.before_proj)(c), nn::to_dtype(x, b.before_proj->compute));
      c = b.block.forward(c, e0, rope, kv[j], cfg, sp);  // fp32 residual stream
      out.push_back(b.after_proj(c));                   // compute dtype
    });
    if (taps) {
      const std::string name = "vace_blocks." + std::to_string(j);
      (*taps)[name] = sp.gather(c, 1);
      (*taps)[name + ".after_proj"] = sp.gather(out.back(), 1);
    }
  }
  return out;
}

int64_t VaceBranch::hint_for(int64_t layer) const {
  for (size_t j = 0; j < layers_.size(); ++j)
    if (layers_[j] == layer) return static_cast<int64_t>(j);
  return -1;
}

}  // namespace vidax::wan
