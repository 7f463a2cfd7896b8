// The LTX-2 audio-video DiT (official LTXModel, ltx_core/model/transformer/model.py and
// transformer_args.py, Lightricks/LTX-2 400fd31): one velocity forward for the video stream, the
// audio stream, or both.
//
// Per stream (TransformerArgsPreprocessor.prepare):
//   x = patchify_proj(latent) [+ keyframe marker]              tokens [B, T, in] -> [B, T, D]
//   (modulation, embedded) = adaln_single(1000 * timesteps)    per token or per sample
//   prompt_timestep = prompt_adaln_single(1000 * sigma)        (cross_attention_adaln + prompt AdaLN)
//   context = caption_projection(context) (19B) or as given    [B, L, D]
//   context_mask (integer, 1 = token) -> additive -FLT_MAX on the masked keys
//   pe = RoPE of the positions' patch midpoints (rope.h), split or interleaved
// With both streams (MultiModalTransformerArgsPreprocessor): the cross-modal RoPE (temporal axis,
// width audio_cross_attention_dim, this stream's heads), the cross scale-shift AdaLN on this
// stream's timesteps and the cross gate AdaLN on the OTHER stream's sigma (* av_ca multiplier / 1000).
// Blocks (dit_blocks.h), then per stream: LayerNorm(x)(1 + scale) + shift with (shift, scale) =
// scale_shift_table + embedded, proj_out.
// Parameters by their official names (patchify_proj.weight, transformer_blocks.0.attn1.to_q.weight,
// ...). Precision: F32 runs everything in fp32; BF16 runs the block and projection linears with bf16
// inputs (fp32 accumulation) and keeps the AdaLN, the norms, the softmax and the residual streams in
// fp32. Also: the self-attention mask (Modality.attention_mask -> log-space bias), the keyframe
// marker (x += [keyframes_mask > 0] * keyframes_abs_pos_embedding after patchify_proj, video only),
// STG perturbations per block (the attention's output blended with its values / a cross-modal
// direction's output times the keep mask). Not supported (refused with a message): the fp32 RoPE
// frequency build, a float (additive) text mask.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/ltx2/dit_blocks.h"
#include "models/ltx2/dit_config.h"
#include "nn/params.h"

namespace vidax::ltx2 {

// Intermediate activations by official module path: patchify_proj / audio_patchify_proj [B, T, D],
// adaln_single / audio_adaln_single [B * n, k * D] (the modulation, one row per timestep given),
// transformer_blocks.<i>.video / .audio [B, T, D].
using Taps = std::map<std::string, Tensor>;

// One stream's input (Modality).
struct Modality {
  Tensor latent;     // [B, T, in_channels]
  Tensor sigma;      // [B]
  Tensor timesteps;  // [B, T] or [B, T, 1] (per token) or [B] / [B, 1] (per sample)
  Tensor positions;  // [B, n_axes, T, 2]: [start, end) bounds (video: 3 axes, audio: 1)
  Tensor context;    // [B, L, D] (or [B, L, caption_channels] with the caption projection)
  std::optional<Tensor> context_mask;  // [B, L] integer / bool, 1 = token
  // [B or 1, T or 1, T] in [0, 1] (1 = full attention, 0 = none): the self-attention's log-space bias.
  std::optional<Tensor> attention_mask;
  // [B, T, 1] (or [B, T]): non-zero on single-pixel-frame tokens, which get the keyframe marker
  // (video, a model with use_keyframes_abs_pos_embedding; ignored otherwise, as in the reference).
  std::optional<Tensor> keyframes_mask;
  // false: the blocks leave this stream as it is (no self / text attention, no FFN, no update from
  // the other stream), though the other stream still reads it; its output is still produced (the
  // official denoiser's skip of a modality's pass).
  bool enabled = true;
};

struct DiTOutput {
  Tensor video, audio;  // [B, T, out_channels] F32, undefined for an absent stream
};

class LTXModel {
 public:
  // compute: F32 or BF16 (the file comment). Takes every parameter by its official name; call
  // params.expect_all_taken() afterwards for a strict load.
  LTXModel(const DiTConfig& cfg, nn::ParamSource& params, DType compute);
  const DiTConfig& config() const { return cfg_; }

  // Either modality may be null (not both); a stream the model lacks is an error. perturbations:
  // BatchedPerturbationConfig.block_masks [4 (PerturbationType), num_layers, B], 1 = keep (STG);
  // nullptr = none perturbed.
  DiTOutput forward(const Modality* video, const Modality* audio, const Tensor* perturbations = nullptr,
                    Taps* taps = nullptr) const;

  // Every Linear of the model with its weight's official name (e.g.
  // transformer_blocks.0.attn1.to_q.weight), in load order: where runtime LoRA adapters are patched in
  // and out after the load (the two-stage pipeline's stage-2 LoRA, two_stage.h).
  void for_each_linear(const std::function<void(const std::string& weight_name, nn::Linear& linear)>& f);

 private:
  struct Stream {
    const char* name;  // "video" / "audio"
    std::string prefix;  // "" / "audio_"
    int64_t dim = 0, heads = 0, in_channels = 0;
    std::vector<int64_t> max_pos;
    nn::Linear patchify_proj, proj_out;
    std::optional<nn::Linear> caption_1, caption_2;  // caption_projection.linear_{1,2}
    std::optional<AdaLNSingle> adaln, prompt_adaln, cross_scale_shift, cross_gate;
    Tensor scale_shift_table;  // [2, D]
    Tensor keyframes_embedding;  // [1, D] (video, use_keyframes_abs_pos_embedding) or undefined
  };
  Stream load_stream(nn::ParamSource& params, bool audio) const;
  StreamArgs prepare(const Stream& s, const Modality& m, const Modality* cross, Taps* taps) const;
  Tensor output(const Stream& s, const StreamArgs& a) const;

  DiTConfig cfg_;
  DType compute_;
  std::optional<Stream> video_, audio_;
  std::vector<AVBlock> blocks_;
};

}  // namespace vidax::ltx2
