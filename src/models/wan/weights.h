// Finding the parts of a Wan 2.1 checkpoint in a weights directory, in the
// layout its publisher ships: the original repo (Wan-AI/Wan2.1-T2V-*) or
// diffusers (Wan-AI/Wan2.1-T2V-*-Diffusers). Also picks the model preset when
// the user did not name one. Filesystem only: nothing is read but JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/wan/presets.h"

namespace vidax::wan {

struct WeightFiles {
  std::string root;
  std::string layout;     // "original" | "diffusers"
  std::string dit;        // a .safetensors file, or a *.safetensors.index.json
  std::string vae;        // Wan2.1_VAE.pth / .safetensors, or vae/diffusion_pytorch_model.safetensors
  std::string t5;         // models_t5_umt5-xxl-enc-bf16.pth / .safetensors, or text_encoder/ (file or index)
  std::string tokenizer;  // the directory holding spiece.model
  nlohmann::json dit_config;  // config.json (original: WanModel args; diffusers: transformer/config.json); null if absent
  nlohmann::json vae_config;  // diffusers vae/config.json; null if absent
  nlohmann::json t5_config;   // diffusers text_encoder/config.json; null if absent
  nlohmann::json vidax_model; // vidax_model.json (written by make-demo); null if absent
};

// Throws naming the directory and every file it looked for when a part is missing.
WeightFiles find_weights(const std::string& dir, const Preset& preset);

// The preset a weights directory holds: vidax_model.json's "model", else the
// DiT config's size (dim 1536 -> 1.3B, 5120 -> 14B). Empty when unknown.
std::string detect_model(const std::string& dir);

// Checks that the DiT config in the weights (when there is one) has the
// preset's dimensions; throws naming both on a mismatch.
void check_preset_matches(const WeightFiles& files, const Preset& preset);

}  // namespace vidax::wan
