// Named Wan models: the official sampling defaults (Wan-Video/Wan2.1
// generate.py + wan/configs) as the engine's Variant, the architecture of each
// part as its reference init args (the JSON the model and parity code read;
// sizes from the translator's configs, the one place they are written), and
// the file names of the original checkpoint layout.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/family.h"

namespace vidax::wan {

struct Preset {
  pipeline::Variant variant;  // name, description, tasks, sampling defaults
  const std::string& name() const { return variant.name; }

  // Architecture: WanModel, WanVAE_ and T5Encoder init args (official names).
  nlohmann::json dit;
  nlohmann::json vae;
  nlohmann::json t5;
  nlohmann::json clip;  // I2V / FLF2V: XLMRobertaCLIP init args (clip.h); null for text-to-video
  int64_t text_len = 512;

  // Original-layout file names (relative to the weights directory).
  std::string vae_file = "Wan2.1_VAE.pth";
  std::string t5_file = "models_t5_umt5-xxl-enc-bf16.pth";
  std::string tokenizer_dir = "google/umt5-xxl";
  std::string clip_file = "models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth";

  // The task its images serve: "" (text-to-video), "i2v" or "flf2v".
  std::string image_task() const;
};

// The official sample_neg_prompt of wan/configs/shared_config.py.
const std::string& wan21_default_negative_prompt();
// The I2V and FLF2V configs' sample_neg_prompt (each the shared one with a prefix).
const std::string& wan21_i2v_negative_prompt();
const std::string& wan21_flf2v_negative_prompt();

const std::vector<Preset>& presets();
// Throws listing the known names when `name` is not one.
const Preset& preset(const std::string& name);

// The published distilled models' sampling settings (`vidax generate --preset`).
const std::vector<pipeline::SamplingPreset>& sampling_presets();

// The tiny random-weight model `vidax make-demo` writes (same architecture,
// toy sizes). Its T5 vocabulary is the demo tokenizer's, so `t5.vocab` is
// filled in by the demo maker.
inline constexpr const char* kTinyDemoModel = "wan2.1-tiny-demo";
// The same for image-to-video and first-last-frame (a CLIP of the real width, no blocks).
inline constexpr const char* kTinyI2VDemoModel = "wan2.1-i2v-tiny-demo";
inline constexpr const char* kTinyFLF2VDemoModel = "wan2.1-flf2v-tiny-demo";

}  // namespace vidax::wan
