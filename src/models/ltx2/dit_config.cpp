#include "models/ltx2/dit_config.h"

#include <algorithm>

#include "core/error.h"

namespace vidax::ltx2 {

namespace {

using Json = nlohmann::json;

template <typename T>
T value_or(const Json& j, const char* key, const T& fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  try {
    return it->get<T>();
  } catch (const Json::exception&) {
    throw Error(msg() << "LTX-2 DiT config: '" << key << "' has the wrong type: " << it->dump());
  }
}

// check_config_value: the key must hold exactly this value (an absent key reads None).
void expect_value(const Json& j, const char* key, const Json& expected) {
  auto it = j.find(key);
  const Json actual = it == j.end() ? Json() : *it;
  const bool same = actual.is_number() && expected.is_number() ? actual.get<double>() == expected.get<double>()
                                                               : actual == expected;
  VIDAX_CHECK(same, "LTX-2 DiT config: " << key << " is " << actual.dump() << ", expected " << expected.dump()
                                         << " (the official configurator's check)");
}

ModelType parse_model_type(const std::string& s) {
  for (ModelType t : {ModelType::AudioVideo, ModelType::VideoOnly, ModelType::AudioOnly})
    if (s == model_type_name(t)) return t;
  throw Error(msg() << "LTX-2 DiT config: model_type '" << s
                    << "' (LTXModelType: \"ltx av model\", \"ltx video only model\" or \"ltx audio only model\")");
}

}  // namespace

const char* model_type_name(ModelType t) {
  switch (t) {
    case ModelType::AudioVideo: return "ltx av model";
    case ModelType::VideoOnly: return "ltx video only model";
    case ModelType::AudioOnly: return "ltx audio only model";
  }
  return "?";
}

DiTConfig DiTConfig::from_json(const Json& in) {
  VIDAX_CHECK(in.is_object(), "LTX-2 DiT config: expected a JSON object, found " << in.dump());
  const Json& j = in.contains("transformer") ? in.at("transformer") : in;
  VIDAX_CHECK(j.is_object(), "LTX-2 DiT config: 'transformer' must be an object");
  DiTConfig c;
  c.model_type = parse_model_type(value_or<std::string>(in, "model_type", value_or<std::string>(j, "model_type", "ltx av model")));

  // The checks every configurator makes, then the AV configurator's own.
  expect_value(j, "dropout", 0.0);
  expect_value(j, "attention_bias", true);
  expect_value(j, "num_vector_embeds", Json());
  expect_value(j, "activation_fn", "gelu-approximate");
  expect_value(j, "num_embeds_ada_norm", 1000);
  expect_value(j, "use_linear_projection", false);
  expect_value(j, "only_cross_attention", false);
  expect_value(j, "cross_attention_norm", true);
  expect_value(j, "double_self_attention", false);
  expect_value(j, "upcast_attention", false);
  expect_value(j, "standardization_norm", "rms_norm");
  expect_value(j, "norm_elementwise_affine", false);
  expect_value(j, "qk_norm", "rms_norm");
  expect_value(j, "positional_embedding_type", "rope");
  expect_value(j, "use_middle_indices_grid", true);
  if (c.model_type == ModelType::AudioVideo) {
    expect_value(j, "use_audio_video_cross_attention", true);
    expect_value(j, "share_ff", false);
    expect_value(j, "av_cross_ada_norm", true);
    VIDAX_CHECK(j.contains("num_attention_heads") && j.contains("audio_num_attention_heads") &&
                    j.at("num_attention_heads") == j.at("audio_num_attention_heads"),
                "LTX-2 DiT config: num_attention_heads must equal audio_num_attention_heads (the official "
                "configurator's check)");
  }

  const bool av = c.model_type == ModelType::AudioVideo, vo = c.model_type == ModelType::VideoOnly;
  c.num_layers = value_or(j, "num_layers", c.num_layers);
  c.norm_eps = value_or(j, "norm_eps", c.norm_eps);
  c.timestep_scale_multiplier = value_or(j, "timestep_scale_multiplier", c.timestep_scale_multiplier);
  const std::string rope = value_or<std::string>(j, "rope_type", "split");
  VIDAX_CHECK(rope == "split" || rope == "interleaved",
              "LTX-2 DiT config: rope_type '" << rope << "' (split or interleaved)");
  c.rope_type = rope == "split" ? RopeLayout::Split : RopeLayout::Interleaved;
  // frequencies_precision: "float64" selects generate_freq_grid_np; anything else the fp32 build.
  auto fp = j.find("frequencies_precision");
  c.double_precision_rope = fp != j.end() && fp->is_string() && fp->get<std::string>() == "float64";
  c.apply_gated_attention = value_or(j, "apply_gated_attention", c.apply_gated_attention);
  c.cross_attention_adaln = value_or(j, "cross_attention_adaln", c.cross_attention_adaln);
  if (c.video()) {
    c.num_attention_heads = value_or(j, "num_attention_heads", c.num_attention_heads);
    c.attention_head_dim = value_or(j, "attention_head_dim", c.attention_head_dim);
    c.in_channels = value_or(j, "in_channels", c.in_channels);
    c.out_channels = value_or(j, "out_channels", c.out_channels);
    c.cross_attention_dim = value_or(j, "cross_attention_dim", c.cross_attention_dim);
    c.positional_embedding_theta = value_or(j, "positional_embedding_theta", c.positional_embedding_theta);
    c.positional_embedding_max_pos = value_or(j, "positional_embedding_max_pos", c.positional_embedding_max_pos);
    c.ff_bias = value_or(j, "ff_bias", c.ff_bias);
    c.use_prompt_adaln_single = value_or(j, "use_prompt_adaln_single", c.use_prompt_adaln_single);
    c.use_keyframes_abs_pos_embedding =
        value_or(j, "use_keyframes_abs_pos_embedding", c.use_keyframes_abs_pos_embedding);
  }
  if (c.audio()) {
    c.audio_num_attention_heads = value_or(j, "audio_num_attention_heads", c.audio_num_attention_heads);
    c.audio_attention_head_dim = value_or(j, "audio_attention_head_dim", c.audio_attention_head_dim);
    c.audio_in_channels = value_or(j, "audio_in_channels", c.audio_in_channels);
    c.audio_out_channels = value_or(j, "audio_out_channels", c.audio_out_channels);
    c.audio_cross_attention_dim = value_or(j, "audio_cross_attention_dim", c.audio_cross_attention_dim);
    c.audio_positional_embedding_max_pos =
        value_or(j, "audio_positional_embedding_max_pos", c.audio_positional_embedding_max_pos);
    if (av) {
      c.av_ca_timestep_scale_multiplier = value_or(j, "av_ca_timestep_scale_multiplier", c.av_ca_timestep_scale_multiplier);
      c.audio_ff_bias = value_or(j, "audio_ff_bias", c.audio_ff_bias);
    }
  }
  (void)vo;
  // _build_caption_projections: the 19B layout keeps the caption projection in the transformer.
  c.caption_projection = !value_or(j, "caption_proj_before_connector", false);
  if (c.caption_projection) {
    VIDAX_CHECK(j.contains("caption_channels"),
                "LTX-2 DiT config: caption_proj_before_connector is false (the caption projection is in the "
                "transformer) but caption_channels is missing");
    c.caption_channels = value_or<int64_t>(j, "caption_channels", 0);
  }
  c.validate();
  return c;
}

int64_t DiTConfig::cross_pe_max_pos() const {
  return std::max(positional_embedding_max_pos.at(0), audio_positional_embedding_max_pos.at(0));
}

void DiTConfig::validate() const {
  VIDAX_CHECK(num_layers >= 1, "LTX-2 DiT config: num_layers " << num_layers);
  VIDAX_CHECK(norm_eps > 0, "LTX-2 DiT config: norm_eps " << norm_eps);
  VIDAX_CHECK(timestep_scale_multiplier > 0 && av_ca_timestep_scale_multiplier > 0,
              "LTX-2 DiT config: the timestep scale multipliers must be positive");
  VIDAX_CHECK(double_precision_rope,
              "LTX-2 DiT config: frequencies_precision is not \"float64\"; only the fp64 frequency build "
              "(generate_freq_grid_np, the published checkpoints' setting) is implemented");
  if (video()) {
    VIDAX_CHECK(num_attention_heads >= 1 && attention_head_dim >= 2 && attention_head_dim % 2 == 0,
                "LTX-2 DiT config: video heads " << num_attention_heads << " x " << attention_head_dim
                                                 << " (head dim even)");
    VIDAX_CHECK(in_channels >= 1 && out_channels >= 1, "LTX-2 DiT config: video in/out channels must be positive");
    VIDAX_CHECK(cross_attention_dim == inner_dim(),
                "LTX-2 DiT config: cross_attention_dim " << cross_attention_dim << " must equal the video inner dim "
                                                         << inner_dim() << " (the reference views the context as [B, L, "
                                                         << inner_dim() << "])");
    VIDAX_CHECK(positional_embedding_max_pos.size() == 3,
                "LTX-2 DiT config: positional_embedding_max_pos needs 3 entries (time, height, width)");
  }
  if (audio()) {
    VIDAX_CHECK(audio_num_attention_heads >= 1 && audio_attention_head_dim >= 2 && audio_attention_head_dim % 2 == 0,
                "LTX-2 DiT config: audio heads " << audio_num_attention_heads << " x " << audio_attention_head_dim);
    VIDAX_CHECK(audio_in_channels >= 1 && audio_out_channels >= 1,
                "LTX-2 DiT config: audio in/out channels must be positive");
    VIDAX_CHECK(audio_cross_attention_dim == audio_inner_dim(),
                "LTX-2 DiT config: audio_cross_attention_dim " << audio_cross_attention_dim
                                                               << " must equal the audio inner dim " << audio_inner_dim());
    VIDAX_CHECK(audio_positional_embedding_max_pos.size() == 1,
                "LTX-2 DiT config: audio_positional_embedding_max_pos needs 1 entry (time)");
  }
  if (caption_projection) VIDAX_CHECK(caption_channels >= 1, "LTX-2 DiT config: caption_channels " << caption_channels);
}

}  // namespace vidax::ltx2
