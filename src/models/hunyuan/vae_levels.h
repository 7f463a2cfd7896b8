// What the two HunyuanVideo VAEs' translator components share (vae_keys.cpp here and in
// src/models/hunyuan15/): the whole / encoder / decoder parts and the level widths and depth the
// checkpoint's keys tell. Only the key names differ (1.0: encoder.down_blocks.{i}.resnets.{j},
// 1.5: encoder.down.{i}.block.{j}). Internal to the two families' VAE components.
#pragma once
#include <string>
#include <vector>

#include "models/hunyuan/vae.h"
#include "translate/config_fields.h"

namespace vidax::hunyuan::vae_levels {

enum class Part { Whole, Encoder, Decoder };

inline VAEParts parts_of(Part p) { return {.encoder = p != Part::Decoder, .decoder = p != Part::Encoder}; }

// The component's name for a part: `whole`, `whole`-encoder, `whole`-decoder.
inline std::string part_name(const std::string& whole, Part p) {
  return p == Part::Whole ? whole : p == Part::Encoder ? whole + "-encoder" : whole + "-decoder";
}

// Where the levels' resnets stand: "<encoder>{i}<block>{j}.conv1.conv.weight" (encoder level i,
// its first level widest-last) and "<decoder>{i}<block>{j}.conv1.conv.weight" (decoder level i,
// the widths in reverse, one resnet more per level).
struct LevelKeys {
  std::string encoder;  // "encoder.down_blocks." / "encoder.down."
  std::string decoder;  // "decoder.up_blocks." / "decoder.up."
  std::string block;    // "resnets." / "block."
};

// Sets c.block_out_channels (each level's first conv1 output) and c.layers_per_block from the
// encoder's levels, else the decoder's; leaves them when the source has neither.
template <class Config>
void infer_levels(const translate::TensorSource& src, const translate::KeyMap& m, const LevelKeys& k, Config& c) {
  const std::string conv1 = ".conv1.conv.weight";
  const auto level_width = [&](const std::string& half, int64_t i) {
    return translate::find_param(src, m, half + std::to_string(i) + "." + k.block + "0" + conv1)->shape[0];
  };
  std::vector<int64_t> widths;
  if (const int64_t n = translate::count_layers(src, m, k.block + "0" + conv1, k.encoder); n > 0) {
    for (int64_t i = 0; i < n; ++i) widths.push_back(level_width(k.encoder, i));
    c.layers_per_block = translate::count_layers(src, m, conv1.substr(1), k.encoder + "0." + k.block);
  } else if (const int64_t n = translate::count_layers(src, m, k.block + "0" + conv1, k.decoder); n > 0) {
    for (int64_t i = n - 1; i >= 0; --i) widths.push_back(level_width(k.decoder, i));
    c.layers_per_block = translate::count_layers(src, m, conv1.substr(1), k.decoder + "0." + k.block) - 1;
  }
  if (!widths.empty()) c.block_out_channels = widths;
}

}  // namespace vidax::hunyuan::vae_levels
