// The LTX-2 DiT's configuration, read as the official configurators read it
// (ltx_core/model/transformer/model_configurator.py, Lightricks/LTX-2 400fd31): the checkpoint
// metadata's `transformer` dict, given bare or inside {"transformer": {...}} (the metadata's
// `config`), with LTXModel's defaults for what it leaves out. Which configurator runs is the model
// type: "model_type" (LTXModelType's value: "ltx av model" (default), "ltx video only model",
// "ltx audio only model"; not a key of the published config, the loader's choice in the reference).
// Like the configurators: the fixed values they check (dropout 0, rms_norm, rope, ...) must be
// present with that value; keys the configurators do not read are ignored (published configs carry
// many); each configurator reads only its own keys (the audio-only one keeps LTXModel's defaults
// for the FFN biases and the prompt AdaLN).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/ltx2/rope.h"

namespace vidax::ltx2 {

enum class ModelType { AudioVideo, VideoOnly, AudioOnly };
const char* model_type_name(ModelType t);  // LTXModelType's value

struct DiTConfig {
  ModelType model_type = ModelType::AudioVideo;
  // Video stream.
  int64_t num_attention_heads = 32, attention_head_dim = 128;
  int64_t in_channels = 128, out_channels = 128;
  int64_t cross_attention_dim = 4096;  // the video text context's width (= the video inner dim)
  std::vector<int64_t> positional_embedding_max_pos{20, 2048, 2048};
  bool ff_bias = true;
  bool use_keyframes_abs_pos_embedding = false;  // the generated-keyframe marker [1, D]
  // Audio stream.
  int64_t audio_num_attention_heads = 32, audio_attention_head_dim = 64;
  int64_t audio_in_channels = 128, audio_out_channels = 128;
  int64_t audio_cross_attention_dim = 2048;  // the audio text context's width and the cross-modal RoPE's
  std::vector<int64_t> audio_positional_embedding_max_pos{20};
  bool audio_ff_bias = true;
  // Shared.
  int64_t num_layers = 48;
  double norm_eps = 1e-6;
  double positional_embedding_theta = 10000.0;
  int64_t timestep_scale_multiplier = 1000;
  int64_t av_ca_timestep_scale_multiplier = 1;
  RopeLayout rope_type = RopeLayout::Split;
  bool double_precision_rope = false;  // frequencies_precision == "float64"
  bool apply_gated_attention = false;
  bool cross_attention_adaln = false;  // LTX-2.3+: 9 modulation rows, the text K/V modulated
  bool use_prompt_adaln_single = true;  // with cross_attention_adaln: the K/V modulation from sigma
  // LTX-2.0 (19B): the caption projection inside the transformer (caption_proj_before_connector false).
  bool caption_projection = false;
  int64_t caption_channels = 0;

  static DiTConfig from_json(const nlohmann::json& j);
  void validate() const;  // throws naming what this build does not run or what is inconsistent

  bool video() const { return model_type != ModelType::AudioOnly; }
  bool audio() const { return model_type != ModelType::VideoOnly; }
  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  int64_t audio_inner_dim() const { return audio_num_attention_heads * audio_attention_head_dim; }
  // AdaLN rows per block: 6, or 9 with the cross-attention AdaLN (adaln_embedding_coefficient).
  int64_t adaln_coefficient() const { return cross_attention_adaln ? 9 : 6; }
  bool prompt_adaln() const { return cross_attention_adaln && use_prompt_adaln_single; }
  // The cross-modal temporal RoPE's max position: max of the two streams' first.
  int64_t cross_pe_max_pos() const;
};

}  // namespace vidax::ltx2
