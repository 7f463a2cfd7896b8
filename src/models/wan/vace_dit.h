// Wan VACE (official VaceWanModel, wan/modules/vace_model.py): a second stack of Wan blocks that
// reads the vace context (the control video's latents and its mask, models/wan/vace_conditioning.h)
// and hints the main blocks, top to bottom:
//   c = vace_patch_embedding(vace_context) as tokens          (Conv3d as a linear on patches)
//   vace block j:  c = before_proj(c) + x   (only the block at layer 0; x = the patch-embedded latent)
//                  c = WanAttentionBlock(c) (same e0, RoPE and prompt as the main blocks)
//                  hint_j = after_proj(c)
//   main block vace_layers[j]:  x = block(x) + hint_j * vace_context_scale
// The hints depend on x, so they are recomputed every step; the context tokens are not.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/wan/dit_block.h"
#include "models/wan/dit_config.h"
#include "models/wan/rope.h"
#include "nn/linear.h"
#include "nn/params.h"
#include "nn/ulysses.h"

namespace vidax::wan {

struct VaceBlock {
  DiTBlock block;
  std::optional<nn::Linear> before_proj;  // the vace block at layer 0 only
  nn::Linear after_proj;
};

class VaceBranch {
 public:
  // Takes vace_patch_embedding.* and vace_blocks.<j>.* by their official names; under tensor
  // parallelism `params` hands out this rank's shards of the vace blocks' attention and FFN (the
  // main blocks' table matches them by suffix), and the projections stay whole.
  static VaceBranch load(nn::ParamSource& params, const DiTConfig& cfg, DType compute,
                         const nn::TensorParallel& tp = {});
  // Weight streaming (--offload): the patch embedding only; the blocks are brought in by the
  // owner's stream (load_block) and handed to text_kv / hints through `WithBlock`.
  static VaceBranch load_unheld(nn::ParamSource& params, const DiTConfig& cfg, DType compute);
  // vace_blocks.<j>.* (the block, before_proj at vace layer 0, after_proj).
  static VaceBlock load_block(nn::ParamSource& params, size_t j, const DiTConfig& cfg, DType compute,
                              const nn::TensorParallel& tp = {});

  using BlockFn = std::function<void(const VaceBlock&)>;
  // with(j, fn): runs fn on vace block j brought in by the owner (a streamed branch's blocks).
  using WithBlock = std::function<void(size_t j, const BlockFn& fn)>;

  // vace_context [C_vace, F, H, W] or [B, C_vace, F, H, W] -> tokens [B, L, dim] (compute dtype);
  // a clear error for a channel count other than vace_in_dim or sizes not multiples of the patch.
  Tensor embed(const Tensor& vace_context, const DiTConfig& cfg) const;
  // Each vace block's cross-attention K/V of the embedded prompt.
  std::vector<CrossKV> text_kv(const Tensor& embedded, const DiTConfig& cfg, const WithBlock& with = {}) const;
  // hint_j for every vace block: x [B, L, dim] the patch-embedded latent tokens, tokens the
  // embedded vace context (both this rank's chunk), e0 and rope as the main blocks take them.
  // taps (optional): vace_blocks.<j> (c) and vace_blocks.<j>.after_proj (the hint), gathered by `gather`.
  std::vector<Tensor> hints(const Tensor& x, const Tensor& tokens, const Tensor& e0, const RopeTables& rope,
                            const std::vector<CrossKV>& kv, const DiTConfig& cfg, const nn::SequenceParallel& sp,
                            std::map<std::string, Tensor>* taps, const WithBlock& with = {}) const;
  // The hint index for main layer `layer`, or -1 when that block takes none.
  int64_t hint_for(int64_t layer) const;
  size_t size() const { return layers_.size(); }

 private:
  // fn(block j): a held block, else through `with` (a streamed branch).
  void visit(size_t j, const WithBlock& with, const BlockFn& fn) const;
  nn::Linear patch_embedding_;  // Conv3d weight viewed [dim, C_vace*pt*ph*pw]
  std::vector<VaceBlock> blocks_;  // empty when streamed
  std::vector<int64_t> layers_;
};

}  // namespace vidax::wan
