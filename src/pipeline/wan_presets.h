// Named Wan text-to-video models: the official sampling defaults
// (Wan-Video/Wan2.1 generate.py + wan/configs), the architecture of each part
// as its reference init args (the JSON the model and parity code read), and the
// file names of the original checkpoint layout.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vidax::pipeline {

struct WanT2VPreset {
  std::string name;         // "wan2.1-t2v-1.3b"
  std::string description;  // one line for --help and errors

  // Sampling defaults (generate.py _validate_args / WanT2V.generate).
  int64_t frames = 81;
  int64_t height = 480, width = 832;
  int64_t steps = 50;
  double shift = 5.0;
  double guidance = 5.0;
  std::string sampler = "unipc";
  double fps = 16;  // sample_fps
  std::string precision = "bf16";  // the reference runs the DiT under autocast(bf16)
  std::string negative_prompt;     // sample_neg_prompt (used when --negative-prompt is empty)

  // Architecture: WanModel, WanVAE_ and T5Encoder init args (official names).
  nlohmann::json dit;
  nlohmann::json vae;
  nlohmann::json t5;
  int64_t text_len = 512;

  // Original-layout file names (relative to the weights directory).
  std::string vae_file = "Wan2.1_VAE.pth";
  std::string t5_file = "models_t5_umt5-xxl-enc-bf16.pth";
  std::string tokenizer_dir = "google/umt5-xxl";
};

// The official sample_neg_prompt of wan/configs/shared_config.py.
const std::string& wan21_default_negative_prompt();

const std::vector<WanT2VPreset>& wan_t2v_presets();
// Throws listing the known names when `name` is not one.
const WanT2VPreset& wan_t2v_preset(const std::string& name);

// The tiny random-weight model `vidax make-demo` writes (same architecture,
// toy sizes). Its T5 vocabulary is the demo tokenizer's, so `t5.vocab` is
// filled in by the demo maker.
inline constexpr const char* kTinyDemoModel = "wan2.1-tiny-demo";

}  // namespace vidax::pipeline
