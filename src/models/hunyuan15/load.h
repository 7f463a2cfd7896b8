// Loading a HunyuanVideo 1.5 text-to-video checkpoint folder (weights.h) into the generic loop's
// parts (t2v.h make_t2v_parts), as create_pipeline builds the pipeline:
//   - the prompt encoder (TextEncoders): Qwen2.5-VL's tokenizer (text_encoder/llm/tokenizer.json) and
//     language model (text_encoder/llm: config.json and its weights, any of the text component's
//     layouts), the "li-dit-encode-video-json" template with its crop_start (text_encoder.h), text_len
//     1000, hidden_state_skip_layer 2, no final norm; the glyph ByT5 (text_byt5.h): ByT5's tokenizer
//     with the Glyph-SDXL-v2 color and font tokens added, the T5 encoder of byt5-small/config.json with
//     its vocabulary resized to the tokenizer's length (resize_token_embeddings), the weights of
//     checkpoints/byt5_model.* (T5Stack names, or create_byt5's {"state_dict": module.text_tower.encoder.*}
//     form, the prefix stripped); byt5_max_length 256;
//   - the DiT (transformer/<version>/) through the translator, strictly;
//   - the VAE decoder (vae/, load_vae), decoding tiled as get_vae_inference_config (256, 0.125);
//   - for an i2v variant also the VAE's encoder (the reference image's latent) and the SigLIP
//     (vision_encoder/siglip/, siglip.h), the parts made by make_i2v_parts (i2v.h).
// The negative prompt's glyph half is always zeros with an all-zero mask, as the pipeline's
// _prepare_byt5_embeddings encodes "" for it (its Qwen half is the negative prompt's).
#pragma once
#include <memory>
#include <string>

#include "models/hunyuan15/presets.h"
#include "models/hunyuan15/t2v.h"
#include "models/hunyuan15/weights.h"
#include "pipeline/family.h"

namespace vidax::hunyuan15 {

// The Qwen2.5-VL + ByT5 prompt encoder of a weights folder; every file checked before a weight is
// read. precision: fp32 | bf16 (the encoders' compute).
std::shared_ptr<PromptEncoder> make_prompt_encoder(const WeightFiles& files, const std::string& precision,
                                                   int64_t text_len);

struct LoadedT2V {
  Preset preset;  // with the architecture actually loaded (the folder's configs)
  WeightFiles files;
  std::string precision;
  pipeline::Parts parts;
};

// (Named for its first use; it loads the i2v variants too.) Refuses what is not built (--device other than cpu, --mesh, --offload, --lora, --vae-tile,
// single-file parts) naming the flag; then loads opt.weights_dir as opt.model (a variant name).
// `encoder`: a prompt encoder to use instead of the folder's (tests), null = the folder's.
LoadedT2V load_t2v(const pipeline::LoadOptions& opt, std::shared_ptr<PromptEncoder> encoder = nullptr);

}  // namespace vidax::hunyuan15
