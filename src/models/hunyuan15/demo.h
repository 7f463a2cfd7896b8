// `vidax make-demo DIR --model hunyuanvideo1.5-t2v-tiny-demo`: a tiny random-weight HunyuanVideo 1.5
// t2v checkpoint in the official ckpts/ layout (weights.h: transformer/480p_t2v/, vae/,
// text_encoder/llm/, text_encoder/byt5-small/, text_encoder/Glyph-SDXL-v2/) that `vidax generate`
// runs end to end in seconds (its videos are noise). Each part is stored under the names the
// published files use: the DiT under the official state_dict names (q / k / v separate), the VAE
// with both halves, the Qwen2.5-VL text model as Qwen2_5_VLForConditionalGeneration saves it
// (model.*), the ByT5 encoder under T5Stack's names (as byt5_model.pt holds them; here a
// .safetensors). vidax_model.json names the variant (detection reads it).
// `--model hunyuanvideo1.5-i2v-tiny-demo` writes transformer/480p_i2v/ (ideal_task i2v) and a tiny
// SigLIP under vision_encoder/siglip/ (image_encoder/ with vision_model.* names, feature_extractor/).
//
// The tokenizers are made here, nothing is downloaded:
//  - text_encoder/llm/tokenizer.json: Qwen2's format (its NFC normalizer, its pre-tokenizer regex,
//    ByteLevel), a vocabulary of the 256 byte symbols plus, whole, every pre-tokenized piece of the
//    chat templates (ignore_merges: a piece in the vocabulary is one token, as Qwen2's vocabulary
//    holds those words), no merges (other text is one token per byte), and <|endoftext|> (the pad
//    token), <|im_start|>, <|im_end|>;
//  - ByT5's needs no file; the Glyph assets are four colors and four fonts (the official files'
//    format).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/family.h"

namespace vidax::hunyuan15 {

// Writes the demo Qwen2 tokenizer into `dir` (tokenizer.json, tokenizer_config.json); returns its
// id count (vocabulary + added tokens).
int64_t write_demo_qwen_tokenizer(const std::string& dir);

// The whole demo checkpoint of `model` (a demo variant) into opt.out_dir; returns what was written
// (also saved as vidax_model.json).
nlohmann::json make_demo_weights(const pipeline::DemoOptions& opt, const std::string& model);

}  // namespace vidax::hunyuan15
