// Finding the parts of a Wan 2.1 checkpoint in a weights directory, in the
// layout its publisher ships: the original repo (Wan-AI/Wan2.1-T2V-*) or
// diffusers (Wan-AI/Wan2.1-T2V-*-Diffusers). Also picks the model preset when
// the user did not name one. Filesystem only: nothing is read but JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/wan/presets.h"
#include "pipeline/family.h"
#include "translate/component.h"

namespace vidax::wan {

struct WeightFiles {
  std::string root;
  std::string layout;     // "original" | "diffusers"
  std::string dit;        // a .safetensors file, or a *.safetensors.index.json (two experts: the high-noise one)
  // Two experts (Preset::experts, Wan 2.2 A14B): the low-noise DiT (low_noise_model/ or transformer_2/)
  // and its config; `dit` and `dit_config` are the high-noise expert's (high_noise_model/ or transformer/).
  std::string dit_low_noise;
  nlohmann::json dit_low_noise_config;
  // Two experts in the diffusers layout: model_index.json's boundary_ratio (WanPipeline /
  // WanImageToVideoPipeline switch experts at t >= boundary_ratio x 1000); none when absent there.
  std::optional<double> boundary_ratio;
  std::string vae;        // Wan2.1_VAE.pth / .safetensors, or vae/diffusion_pytorch_model.safetensors
  std::string t5;         // models_t5_umt5-xxl-enc-bf16.pth / .safetensors, or text_encoder/ (file or index)
  std::string tokenizer;  // the directory holding spiece.model
  std::string clip;       // I2V / FLF2V: the CLIP checkpoint (models_clip_open-clip-*.pth); "" for text-to-video
  nlohmann::json dit_config;  // config.json (original: WanModel args; diffusers: transformer/config.json); null if absent
  nlohmann::json vae_config;  // diffusers vae/config.json; null if absent
  nlohmann::json t5_config;   // diffusers text_encoder/config.json; null if absent
  nlohmann::json vidax_model; // vidax_model.json (written by make-demo); null if absent
  // Parts given as single files (--diffusion-model, --vae, --text-encoder): their configs above
  // come from the file itself (its __metadata__ config, else its shapes), not the folder.
  bool dit_single = false, vae_single = false, t5_single = false;
};

// Throws naming the directory and every file it looked for when a part is missing. `over`
// replaces parts of the directory by single files; `dir` may be "" when `over` names the DiT,
// the VAE and the text encoder (the tokenizer is then --tokenizer, else found beside the text
// encoder's file).
WeightFiles find_weights(const std::string& dir, const Preset& preset, const pipeline::PartFiles& over = {});

// The preset a weights directory holds: vidax_model.json's "model", else the
// DiT config's size (dim 1536 -> 1.3B, 5120 -> 14B, 3072 -> TI2V-5B) and whether it has two experts
// (high_noise_model/ + low_noise_model/, or diffusers' transformer_2/: Wan 2.2 A14B). Empty when unknown.
std::string detect_model(const std::string& dir);
// The same with parts as single files: a --diffusion-model file decides by its tensors' shapes.
std::string detect_model(const std::string& dir, const pipeline::PartFiles& over);

// A single Wan 2.2 VAE file's stored config ("config" in its metadata), null when it has none (a
// run loads it with load_vae22, which checks its names as it loads, with the preset's config).
nlohmann::json vae22_file_config(const std::string& path);
// Checks that `path` (given with `flag`) holds the part `want` (the Wan DiT, a Wan 2.1 or 2.2 VAE
// or the UMT5 encoder, in any layout their key maps know) and returns its config: the file's
// __metadata__ config, else what its shapes say. Throws naming the flag, the file and what it looks like.
nlohmann::json single_file_config(const std::string& path, const translate::Component& want, const std::string& flag);
// The VAE component a --vae file's tensors are: wan2.2-vae when the translator detects the Wan 2.2
// VAE (its nested levels, in either layout), else wan2.1-vae (also for a path that is no file).
const translate::Component& vae_component_of(const std::string& path);

// The single files of `over` on their own, each checked by single_file_config (as find_weights
// does) under its flag, the --vae file against the VAE its tensors are (vae_component_of); the
// variant is detect_model("", over) (a --tokenizer is not a weights file and is not checked here).
// Throws when no weights file is given.
pipeline::PartsChecked check_wan_part_files(const pipeline::PartFiles& over);

// Checks that the DiT config in the weights (when there is one) has the
// preset's dimensions; throws naming both on a mismatch.
void check_preset_matches(const WeightFiles& files, const Preset& preset);

}  // namespace vidax::wan
