// `vidax make-demo DIR --model hunyuanvideo-t2v-tiny-demo`: a tiny random-weight HunyuanVideo 1.0
// checkpoint in diffusers' folder layout (weights.h's discovery: model_index.json, transformer/,
// vae/, text_encoder/, text_encoder_2/, tokenizer/, tokenizer_2/) that `vidax generate` runs end to
// end in seconds (its videos are noise). The DiT is stored under the official state_dict names
// with its HYVideoDiffusionTransformer init args as config.json (the translator detects the
// layout from the keys, either is read), the VAE with both halves as the published file, the LLM
// under LlamaModel's names (diffusers' text_encoder/), CLIP under transformers 5's CLIPTextModel
// names (the `bare` layout: no text_model. prefix). vidax_model.json names the variant
// (detection reads it).
//
// The tokenizers are made here, nothing is downloaded:
//  - tokenizer/tokenizer.json: Llama-3's format (its pre-tokenizer regex, ByteLevel, the
//    <|begin_of_text|> template), a vocabulary of the 256 byte symbols plus, whole, every
//    pre-tokenized piece of the two prompt templates (ignore_merges: a piece in the vocabulary is
//    one token, as Llama-3's own vocabulary holds those common words; so "dit-llm-encode-video"
//    keeps about its crop_start tokens before the prompt), no merges (any other text is one token
//    per byte), and the special tokens the templates use plus <pad>;
//  - tokenizer_2/vocab.json + merges.txt: CLIP's format with the 256 byte symbols, each also with
//    "</w>", <|startoftext|> and <|endoftext|> (514 ids), no merges.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "pipeline/family.h"

namespace vidax::hunyuan {

// Write the demo Llama-3-style tokenizer into `dir` (tokenizer.json, tokenizer_config.json);
// returns its id count (vocabulary + added tokens).
int64_t write_demo_llm_tokenizer(const std::string& dir);
// Write the demo CLIP tokenizer into `dir` (vocab.json, merges.txt); returns its id count.
int64_t write_demo_clip_tokenizer(const std::string& dir);

// The demo tokenizers' building blocks (also HunyuanVideo 1.5's demo): `text` cut at `cuts` (which
// are dropped); a UTF-8 string in the byte-level BPE alphabet (GPT-2's byte symbols); a text file
// written (its folder made), an error naming it when it cannot be.
std::vector<std::string> demo_plain_chunks(std::string text, const std::vector<std::string>& cuts);
std::string demo_byte_symbols(const std::string& utf8);
void demo_write_text(const std::string& path, const std::string& text);

// The demo's random weights for `shapes` from `seed` (splitmix64 + Box-Muller, portable): norm
// weights 1 and their biases 0, other biases ~ N(0, 0.02^2), matrices ~ N(0, 1 / fan_in). Also
// HunyuanVideo 1.5's demo (models/hunyuan15/demo.h).
std::map<std::string, Tensor> demo_random_weights(const std::vector<std::pair<std::string, Shape>>& shapes,
                                                  uint64_t seed);

// The whole demo checkpoint of `model` (a demo variant) into opt.out_dir; returns what was written
// (also saved as vidax_model.json).
nlohmann::json make_demo_weights(const pipeline::DemoOptions& opt, const std::string& model);

}  // namespace vidax::hunyuan
