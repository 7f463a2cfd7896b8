// `vidax make-demo DIR --model ltx2.3-tiny-demo`: a tiny random-weight LTX-2.3 model in the official
// single-folder layout (checkpoint.h), which `vidax generate --weights DIR` runs end to end in seconds
// (its video and audio are noise):
//
//   DIR/ltx2.3-tiny-demo.safetensors   every part under the bundled checkpoint's prefixes (the
//                                      video VAE encoder too, for --image: drawn last), the
//                                      metadata "config" (presets.h's demo architecture) and
//                                      "model_version" 2.3.0
//   DIR/gemma-3-tiny-demo/             config.json (Gemma3ForConditionalGeneration's), model.safetensors
//                                      (google/gemma-3's language_model.model.* names), tokenizer.json,
//                                      tokenizer_config.json
//   DIR/<variant>-ic-lora.safetensors  a tiny random IC-LoRA in ltx-trainer's format for
//                                      --reference-video / --video (ic_lora_run.h demo_ic_lora)
//   DIR/vidax_model.json               names the variant (detection reads it)
//   DIR/ltx-2.3-spatial-upscaler-x2-1.1.safetensors, DIR/ltx-2.3-22b-distilled-lora-384-1.1.safetensors
//                                      the two-stage pipeline's upsampler and stage-2 LoRA, tiny and random,
//                                      under their published names (`--two-stage` finds them; two_stage_run.h)
//
// The weights are drawn by the modules themselves: each is built once from a generated parameter
// source (every name it asks for, with its shape), so the files hold exactly what the loaders take.
// Norm weights 1 and biases 0 (names with "norm"), other 1-D tensors ~ N(0, 0.02^2), matrices
// ~ N(0, 1 / fan_in); splitmix64 + Box-Muller from the seed.
//
// The tokenizer is made here (nothing is downloaded): Gemma's tokenizer.json format (BPE with byte
// fallback, the " " -> U+2581 normalizer, the <bos> template) with the special tokens <pad> <eos>
// <bos> <unk> <start_of_turn> <end_of_turn>, the 256 byte pieces, U+2581, the printable ASCII
// characters, and the words of the default negative prompt and of some common prompts (with and
// without the leading U+2581), each built by left-to-right merges of its prefixes: those words are
// one token each, other ASCII text one per character, anything else one per byte.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "models/ltx2/presets.h"
#include "pipeline/family.h"

namespace vidax::ltx2 {

inline constexpr const char* kDemoGemmaFolder = "gemma-3-tiny-demo";

// Writes the demo tokenizer (tokenizer.json, tokenizer_config.json) into `dir`; returns its id count.
int64_t write_demo_tokenizer(const std::string& dir);

// The demo's random weights: the bundled checkpoint's tensors and Gemma's (language_model.model.*).
struct DemoWeights {
  std::map<std::string, Tensor> checkpoint, gemma;
};
DemoWeights demo_weights(const Preset& preset, uint64_t seed);

// The whole demo folder; returns what vidax_model.json says.
nlohmann::json make_demo_weights(const pipeline::DemoOptions& opt, const std::string& model);

}  // namespace vidax::ltx2
