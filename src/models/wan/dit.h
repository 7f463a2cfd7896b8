// Wan 2.1 DiT (official WanModel, wan/modules/model.py), T2V 1.3B and 14B.
//
// A request runs encode_context() once per prompt batch (text embedding and
// each block's cross-attention K/V), then forward() once per denoising step:
//   patchify -> patch embedding (the Conv3d as a linear on patches)
//   e = time_embedding(sinusoid(t)) (fp32), e0 = time_projection(e) -> [B, 6, dim]
//   blocks (dit_block.h), head (LN, 2-chunk modulation with e, linear; fp32), unpatchify.
// Parameters are taken by their official names (blocks.0.self_attn.q.weight, ...).
// Precision: F32 runs everything in fp32; BF16 casts what the reference's
// bf16 autocast casts (GEMM inputs, attention inputs) and keeps fp32 what it
// keeps fp32 (time embedding/projection, modulation, residual stream, norms, head).
#pragma once
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dist/mesh.h"
#include "models/wan/dit_block.h"
#include "models/wan/dit_config.h"
#include "models/wan/rope.h"
#include "models/wan/vace_dit.h"
#include "nn/linear.h"
#include "nn/params.h"
#include "nn/weight_stream.h"

namespace vidax::wan {

enum class Precision { F32, BF16 };
Precision parse_precision(const std::string& s);  // "fp32" | "bf16" (and f32/float32/bfloat16)
const char* precision_name(Precision p);

// Per-request conditioning (one per CFG branch): the prompt, and for I2V/FLF2V
// the image features and the conditioning latent.
struct TextContext {
  Tensor embedded;              // [B, text_len, dim] text_embedding output
  Tensor image;                 // I2V/FLF2V: [B, 257 or 514, dim] img_emb output; else undefined
  Tensor y;                     // I2V/FLF2V: [B, C_y, F, H, W], concatenated to x on channels each step
  std::vector<CrossKV> blocks;  // one per block
  // VACE: the embedded vace context [B, L, dim] (WanDiT::encode_vace, joined by with_vace), its
  // scale (vace_context_scale) and each vace block's prompt K/V; undefined / empty otherwise.
  Tensor vace;
  double vace_scale = 1.0;
  std::vector<CrossKV> vace_blocks;
  int64_t batch() const { return embedded.size(0); }
};

// The control half of a VACE request (WanDiT::encode_vace): the vace context's tokens, computed
// once per run and joined to each prompt's context with with_vace (tensor handles, no copies).
struct VaceContext {
  Tensor tokens;       // [B, L, dim]
  double scale = 1.0;  // vace_context_scale
};
TextContext with_vace(const TextContext& text, const VaceContext& vace);

// The image half of an I2V / FLF2V conditioning (WanDiT::encode_images): img_emb's output, the
// conditioning latent y and every block's image K/V. A run computes it once, joins it to each
// prompt's text half (with_images: tensor handles, no copies) and reuses both every step.
struct ImageContext {
  Tensor image;                                   // [B, 257 or 514, dim]
  Tensor y;                                       // [B, C_y, F, H, W]
  std::vector<std::pair<Tensor, Tensor>> blocks;  // (k_img, v_img) per block, [B, tokens, H, D]
};
TextContext with_images(const TextContext& text, const ImageContext& images);

// One batched context from per-request ones, in order (e.g. the CFG branches, so that
// cond and uncond run as one batch-2 forward with the latent stacked the same way).
TextContext concat_batch(const std::vector<TextContext>& parts);

// Intermediate activations by official module path ("blocks.0", "time_embedding", ...),
// filled when a map is passed. Layouts: time_embedding [B, dim], time_projection
// [B, 6*dim], text_embedding [B, text_len, dim], patch_embedding [B, L, dim] (tokens,
// not the Conv3d's [B, dim, F', H', W']), blocks.<i> [B, L, dim], head [B, L, prod(patch)*out_dim].
using Taps = std::map<std::string, Tensor>;

// Weight streaming (`--offload`, nn/weight_stream.h): the blocks are not held. Block i is
// built from `source(i)` (its tensors under their engine names, fresh zero-copy views of the
// mapped checkpoint) on a worker thread while block i - 1 runs, paged in and cast to the
// compute dtype, and dropped after use (its mapped pages given back). A VACE model streams its
// vace blocks too, in the order a step runs them: group j < V is vace_blocks.<j> (V =
// vace_layers.size()), group V + i is blocks.<i>; without VACE group i is blocks.<i>.
struct StreamedBlocks {
  std::function<std::map<std::string, Tensor>(int64_t group)> source;
  std::string origin;     // the checkpoint, for messages
  bool prefetch = true;   // false: each block is brought in on the compute thread (no overlap)
};

class WanDiT {
 public:
  // Takes every parameter from `params` by its official name (see the class comment);
  // call params.expect_all_taken() afterwards for a strict load.
  // mesh (optional, must outlive the model; docs/parallelism.md): this rank takes only its
  // tensor-parallel shard of each split weight (models/wan/dit_parallel.h), and forward()
  // runs its sequence-parallel chunk of the tokens. Every rank of the mesh makes the same calls.
  // With `streamed.source` set, `params` holds everything but the blocks (docs/models/wan.md, "Weight streaming").
  WanDiT(const DiTConfig& cfg, nn::ParamSource& params, Precision precision, const dist::Mesh* mesh = nullptr,
         StreamedBlocks streamed = {});
  // From an engine-name map (e.g. translate::load_component's result), strictly:
  // throws naming any missing, misshapen or unused tensor. `origin` names the source.
  // `adapters`: runtime LoRAs by weight name (translate::apply_loras with --lora-mode runtime).
  static WanDiT from_weights(const DiTConfig& cfg, std::map<std::string, Tensor> weights, Precision precision,
                             const std::string& origin = "weights", const dist::Mesh* mesh = nullptr,
                             nn::Adapters adapters = {});
  const dist::Mesh* mesh() const { return mesh_; }
  // Bytes of the parameters this rank holds (its shards and the replicated ones, stored dtype)
  // and of the same parameters unsplit.
  int64_t weight_bytes() const { return ledger_->bytes; }
  int64_t full_weight_bytes() const { return ledger_->full_bytes; }
  // Streaming: true when the blocks stream; their counters (loads, waits) when they do.
  bool streaming() const { return streamer_ != nullptr; }
  nn::WeightStreamStats stream_stats() const;

  const DiTConfig& config() const { return cfg_; }
  Precision precision() const { return precision_; }
  DType compute_dtype() const { return compute_; }

  // context [L, text_dim] or [B, L, text_dim], L <= text_len, unpadded: zero-padded
  // to text_len rows here (the padded rows take part in cross-attention, as in the reference).
  TextContext encode_context(const Tensor& context, Taps* taps = nullptr) const;
  // I2V / FLF2V: also clip_fea [B*images, 257, image_dim] (or [257, image_dim]; FLF2V: two
  // images per sample, first and last frame) and y [C_y, F, H, W] or [B, C_y, F, H, W]
  // (mask and image latent; x and y together have in_dim channels).
  TextContext encode_context(const Tensor& context, const Tensor& clip_fea, const Tensor& y,
                             Taps* taps = nullptr) const;
  // The same in two halves, for a pipeline that encodes each prompt once and the images once:
  // the text half of any model (an image-conditioned model's forward needs with_images first)
  // and the image half (clip_fea and y as above, batch 1 or B).
  TextContext encode_text(const Tensor& context) const;
  ImageContext encode_images(const Tensor& clip_fea, const Tensor& y) const;
  // VACE: vace_context [vace_in_dim, F, H, W] or [B, vace_in_dim, F, H, W] (vace_latent's output,
  // the latent's frames and size) and vace_context_scale. A vace model's forward needs with_vace.
  VaceContext encode_vace(const Tensor& vace_context, double scale = 1.0, Taps* taps = nullptr) const;

  // x [C, F, H, W] or [B, C, F, H, W] (latent, any float dtype); t_sinusoid [B, freq_dim]
  // F32 (timestep_sinusoid(), or a Meta tensor when recording). Returns fp32 of x's rank.
  Tensor forward(const Tensor& x, const Tensor& t_sinusoid, const TextContext& text, Taps* taps = nullptr) const;
  // The same with timestep values: one per batch entry, or (Wan 2.2, textimage2video.py) one per
  // token, B * L values in token order (L = the patch grid's size), where the first frame's tokens
  // carry t = 0 when the image conditions them. Per-token, the time embedding and projection are
  // evaluated once per distinct value and gathered per token (the same rows the reference
  // evaluates per token); e0 is then [B, 6, L, dim] and every modulation per token.
  Tensor forward(const Tensor& x, const std::vector<double>& t, const TextContext& text, Taps* taps = nullptr) const;

  // Grid (F', H', W') of a model input shape [.., C, F, H, W] (I2V: x and y concatenated);
  // throws a clear error when the channel count is wrong or F/H/W are not multiples of the patch.
  std::array<int64_t, 3> patch_grid(const Shape& input_shape) const;

 private:
  const RopeTables& rope_for(std::array<int64_t, 3> grid, Device device) const;
  TextContext encode(const Tensor& context, const Tensor& clip_fea, const Tensor& y, Taps* taps) const;
  // e [B, dim] and e0 [B, 6, dim] (one timestep per sample) or e [B, L, dim] and e0 [B, 6, L, dim].
  Tensor run(const Tensor& x, const Tensor& e, const Tensor& e0, const TextContext& text, Taps* taps) const;
  Tensor forward_per_token(const Tensor& x, const std::vector<double>& t, const TextContext& text, Taps* taps) const;
  Tensor embed_image(const Tensor& clip_fea, int64_t batch) const;

  DiTConfig cfg_;
  Precision precision_;
  DType compute_;
  nn::Linear patch_embedding_;               // Conv3d weight viewed [dim, C*pt*ph*pw]
  nn::Linear text_embedding_0_, text_embedding_2_;
  nn::Linear time_embedding_0_, time_embedding_2_, time_projection_;  // fp32
  std::vector<DiTBlock> blocks_;
  // Streaming: one block's weights and the file views they were built from (dropped after use).
  struct StreamedBlock {
    std::optional<DiTBlock> block;  // a main block's group
    std::optional<VaceBlock> vace;  // a vace block's group
    std::map<std::string, Tensor> views;
  };
  size_t streamed_vace_ = 0;  // the vace blocks' groups, first in the stream (StreamedBlocks)
  // Runs fn(vace block j) on a streamed one (VaceBranch::WithBlock).
  VaceBranch::WithBlock with_vace_block() const;
  std::shared_ptr<nn::BlockStreamer<StreamedBlock>> streamer_;
  // Runs fn(block i) on a held or a streamed block.
  template <class F>
  auto with_block(size_t i, F&& fn) const;
  size_t block_count() const { return static_cast<size_t>(cfg_.num_layers); }
  Tensor head_modulation_;                   // [1, 2, dim]
  nn::Linear head_;                          // fp32
  // I2V/FLF2V img_emb (MLPProj): LN(image_dim), Linear, GELU(erf), Linear(-> dim), LN(dim); eps 1e-5.
  struct ImageEmbedding {
    Tensor norm_in_w, norm_in_b, norm_out_w, norm_out_b;
    nn::Linear fc1, fc2;
    std::optional<Tensor> emb_pos;  // FLF2V: [1, 2*257, image_dim]
  };
  std::optional<ImageEmbedding> img_emb_;
  std::shared_ptr<const VaceBranch> vace_;  // VACE only (models/wan/vace_dit.h)

  const dist::Mesh* mesh_ = nullptr;
  std::shared_ptr<nn::WeightLedger> ledger_ = std::make_shared<nn::WeightLedger>();
  std::shared_ptr<std::mutex> rope_mutex_ = std::make_shared<std::mutex>();  // keeps WanDiT movable
  mutable std::map<std::array<int64_t, 4>, RopeTables> rope_cache_;
};

}  // namespace vidax::wan
