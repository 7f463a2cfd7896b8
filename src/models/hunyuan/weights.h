// Finding the parts of a HunyuanVideo 1.0 checkpoint in a weights directory, in the two layouts
// users have (nothing is read but JSON):
//  - "original": the official ckpts/ folder (huggingface tencent/HunyuanVideo, hyvideo/constants.py,
//    ckpts/README.md): hunyuan-video-t2v-720p/transformers/mp_rank_00_model_states.pt (the DiT's
//    state dict under "module", as inference.py's load_state_dict reads it with --load-key module),
//    hunyuan-video-t2v-720p/vae/pytorch_model.pt + config.json, text_encoder/ (the LLM part of
//    llava-llama-3-8b, which the README's preprocess script writes) and text_encoder_2/ (CLIP-L/14),
//    each a transformers folder with its tokenizer;
//  - "diffusers": hunyuanvideo-community/HunyuanVideo (HunyuanVideoPipeline): model_index.json,
//    transformer/ (config.json + diffusion_pytorch_model*.safetensors), vae/, text_encoder/,
//    text_encoder_2/, tokenizer/, tokenizer_2/.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace vidax::hunyuan {

struct WeightFiles {
  std::string root;
  std::string layout;  // "original" | "diffusers"
  std::string dit;     // a file, a *.safetensors.index.json, or a folder of shards
  std::string vae;     // a file
  std::string text_encoder, text_encoder_2;  // folders (the LLM, CLIP-L)
  std::string tokenizer, tokenizer_2;        // folders (original: the encoders' own folders)
  nlohmann::json dit_config;  // diffusers transformer/config.json; null when absent (the original has none)
  nlohmann::json vae_config;  // vae/config.json; null when absent
};

// The layout of `dir` ("original" | "diffusers"), "" when it is neither.
std::string detect_layout(const std::string& dir);
// Throws naming the directory and every path it looked for when a part is missing.
WeightFiles find_weights(const std::string& dir);

}  // namespace vidax::hunyuan
