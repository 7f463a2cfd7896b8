// Named Wan models: the official sampling defaults (Wan-Video/Wan2.1
// generate.py + wan/configs) as the engine's Variant, the architecture of each
// part as its reference init args (the JSON the model and parity code read;
// sizes from the translator's configs, the one place they are written), and
// the file names of the original checkpoint layout.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
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

  // Wan 2.2 A14B (wan/text2video.py of Wan2.2): two DiTs of one architecture (`dit`), the
  // high-noise expert for the steps with t >= boundary * num_train_timesteps, the low-noise one
  // below. Original layout: each in its own folder; diffusers: transformer/ is the high-noise
  // expert, transformer_2/ the low-noise one (diffusers' WanPipeline). Unset: one DiT.
  struct Experts {
    double boundary = 0.875;  // wan_t2v_A14B.py
    std::string high_noise_dir = "high_noise_model", low_noise_dir = "low_noise_model";
    // The timestep from which the high-noise expert runs (boundary * num_train_timesteps, 1000).
    double boundary_timestep() const { return boundary * 1000.0; }
  };
  std::optional<Experts> experts;
  // Which autoencoder `vae` describes: "wan2.1" (WanVAE_ of vae.py / vae2_1.py, 16 channels,
  // stride 4x8x8) or "wan2.2" (WanVAE_ of vae2_2.py, 48 channels, stride 4x16x16; TI2V-5B).
  std::string vae_version = "wan2.1";

  // Original-layout file names (relative to the weights directory).
  std::string vae_file = "Wan2.1_VAE.pth";
  std::string t5_file = "models_t5_umt5-xxl-enc-bf16.pth";
  std::string tokenizer_dir = "google/umt5-xxl";
  std::string clip_file = "models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth";

  // The task its images serve: "" (text-to-video), "i2v" or "flf2v".
  std::string image_task() const;
  // Whether its images go through the CLIP image encoder: Wan 2.1 I2V / FLF2V. Wan 2.2 I2V-A14B
  // (wan/image2video.py of Wan2.2) has none: its WanModel (model_type 'i2v') has no img_emb and
  // text-only cross-attention, the image enters only through y on the input channels.
  bool uses_clip() const { return !image_task().empty() && !clip.is_null(); }
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
// The same for VACE (control video, mask, reference images).
inline constexpr const char* kTinyVaceDemoModel = "wan2.1-vace-tiny-demo";
// The same for the Wan 2.2 tasks: two tiny experts (A14B's layout) and the TI2V-5B architecture
// with the Wan 2.2 VAE.
inline constexpr const char* kTinyA14BDemoModel = "wan2.2-t2v-a14b-tiny-demo";
inline constexpr const char* kTinyTI2VDemoModel = "wan2.2-ti2v-tiny-demo";
inline constexpr const char* kTinyI2VA14BDemoModel = "wan2.2-i2v-a14b-tiny-demo";
// The tiny demo with a DiT 256 wide (two heads of the published head_dim 128): its matrices' rows
// take GGUF's K-quants (256-value blocks) and its DiT file, with no config stored, is read on its
// own (--diffusion-model), as the published files are.
inline constexpr const char* kTinyWideDemoModel = "wan2.1-tiny-wide-demo";

}  // namespace vidax::wan
