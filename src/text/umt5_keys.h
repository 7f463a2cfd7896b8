// The UMT5 / T5 v1.1 text encoder (the official T5Encoder, transformers'
// UMT5EncoderModel / T5EncoderModel) as the translator sees its checkpoints:
// its config in either spelling, its parameters, and its key maps for the
// layouts "original" (T5Encoder's names) and "diffusers" (transformers').
// Sources: Wan2.1 wan/modules/t5.py; transformers modeling_umt5.py. Checked
// against the key lists in tests/translate/data.
#pragma once
#include "translate/component.h"

namespace vidax::translate::t5 {

struct T5Config {
  int64_t vocab = 256384, dim = 4096, dim_attn = 4096, dim_ffn = 10240, num_heads = 64, num_layers = 24,
          num_buckets = 32;
  bool shared_pos = false;  // false: UMT5, a relative-position table per layer

  static T5Config umt5_xxl();
  // T5Encoder init args, or a transformers T5Config/UMT5Config (vocab_size, d_model, ...).
  static T5Config from_json(const Json& j);
  Json to_json() const;
  bool operator==(const T5Config&) const = default;
};

ParamSpec t5_params(const T5Config& c);
KeyMap t5_keymap(const std::string& layout);
const Component& umt5_component();  // "umt5-encoder"

}  // namespace vidax::translate::t5
