// The LTX-2 checkpoints as the translator sees them (translate/component.h): the DiT (ltx-core's
// LTXModel, Lightricks/LTX-2 400fd31) with
//  - its config: the checkpoint metadata's `config.transformer` dict (given bare or as the whole
//    metadata config {"transformer": {...}, "vae": ...}) as DiTConfig::from_json reads it, or a
//    diffusers LTX2VideoTransformer3DModel config.json;
//  - the engine's parameters (the official names, LTXModel's own: recorded by building the model on
//    Meta tensors, so the list cannot drift from what the model takes);
//  - one key map per layout:
//      "original"   the official module names, bare (ltx-trainer's full checkpoints, golden files);
//      "comfyui"    the same under `model.diffusion_model.`: the official single file (ltx-core's
//                   LTXV_MODEL_COMFY_RENAMING_MAP strips it) and ComfyUI's split transformer files;
//                   the single file's text connectors (`model.diffusion_model.*_embeddings_connector.`)
//                   are the text side's, not the DiT's;
//      "diffusers"  LTX2VideoTransformer3DModel's names (diffusers 0.42.1 transformer_ltx2.py; the
//                   renames of its convert_ltx2_transformer_to_diffusers, plus 2.3's prompt AdaLN,
//                   prompt_adaln_single -> prompt_adaln, which that converter leaves out).
// LoRAs (docs/lora.md): ltx-trainer saves PEFT's lora_A / lora_B under `diffusion_model.` + the
// original module names, without alpha (ltx-core applies W += strength * B @ A): the generic reader's
// "comfyui" format through the "original" layout, factor 1 when no alpha is stored.
// Checked against the diffusers model's own state_dict names (tests/translate/data/ltx2_dit_*.txt,
// tools/golden/ltx2_keylists.py).
#pragma once
#include "models/ltx2/dit_config.h"
#include "models/ltx2/video_vae_config.h"
#include "translate/component.h"

namespace vidax::ltx2 {

// DiTConfig as its canonical JSON: the metadata `transformer` dict (with the fixed values the
// official configurators check) plus "model_type"; DiTConfig::from_json reads it back to the same config.
translate::Json dit_config_json(const DiTConfig& c);
// The published LTX-2 19B transformer (ltx-2-19b-dev / -distilled): audio + video, 48 blocks,
// video 32 x 128, audio 32 x 64, the caption projection inside the transformer (Gemma 3's 3840).
DiTConfig dit_config_19b();
// A diffusers LTX2VideoTransformer3DModel config.json (its class name, else its own field names).
bool is_diffusers_dit_config(const translate::Json& j);
DiTConfig dit_config_from_diffusers(const translate::Json& j);

translate::ParamSpec dit_params(const DiTConfig& c);
translate::KeyMap dit_keymap(const std::string& layout);

const translate::Component& dit_component();  // "ltx2-dit"

// The video VAE (ltx_core VideoEncoder / ConvVideoDecoder, video_vae.h), as ltx-core's loader splits
// it: each half by its own names (VAE_ENCODER_COMFY_KEYS_FILTER / VAE_DECODER_COMFY_KEYS_FILTER) with
// the shared per_channel_statistics, and the whole file. Config: the metadata's `vae` dict (bare or as
// {"vae": {...}}); without one, the published LTX-2 VAE's (the shapes are not read back into a
// config). The checkpoint buffers no module has (per_channel_statistics.channel, .mean-of-stds,
// .mean-of-stds_over_std-of-means) are ignored by name, as the reference's non-strict load leaves them.
//  halves ("ltx2-video-vae-encoder" / "-decoder"), engine names = the half's own (conv_in.conv.weight,
//    per_channel_statistics.mean-of-means): layouts "original" (bare: the golden files), "split"
//    (`encoder.` / `decoder.` + names, per_channel_statistics.* bare: ComfyUI's split VAE file),
//    "checkpoint" (`vae.encoder.` / `vae.decoder.`, `vae.per_channel_statistics.`: the single file);
//  whole ("ltx2-video-vae"), engine names encoder.* / decoder.* / per_channel_statistics.*: layouts
//    "original" (the split file) and "checkpoint" (`vae.` + them).
translate::Json video_vae_published_config();  // the published LTX-2 `vae` dict
translate::ParamSpec video_vae_params(const VideoVaeConfig& c, const std::string& part);  // encoder | decoder | whole
const translate::Component& video_vae_component();          // "ltx2-video-vae"
const translate::Component& video_vae_encoder_component();  // "ltx2-video-vae-encoder"
const translate::Component& video_vae_decoder_component();  // "ltx2-video-vae-decoder"

// The audio VAE (ltx_core AudioEncoder / AudioDecoder, audio_vae.h), split the same way
// (AUDIO_VAE_{ENCODER,DECODER}_COMFY_KEYS_FILTER): halves "ltx2-audio-vae-encoder" / "-decoder" by
// their own names with the shared per_channel_statistics, layouts "original" (bare: the golden files)
// and "checkpoint" (`audio_vae.encoder.` / `audio_vae.decoder.`, `audio_vae.per_channel_statistics.`:
// the single file and the split audio VAE file alike); whole "ltx2-audio-vae" (encoder.* / decoder.* /
// per_channel_statistics.*), layouts "original" and "checkpoint" (`audio_vae.` + them). Config: the
// metadata's `audio_vae` dict (AudioVaeConfig::from_json), else the configurators' defaults.
const translate::Component& audio_vae_component();          // "ltx2-audio-vae"
const translate::Component& audio_vae_encoder_component();  // "ltx2-audio-vae-encoder"
const translate::Component& audio_vae_decoder_component();  // "ltx2-audio-vae-decoder"
// The vocoder: "ltx2-vocoder" (LTX-2's HiFi-GAN Vocoder) and "ltx2-vocoder-bwe" (LTX-2.3's
// VocoderWithBWE, whose config holds "bwe"), engine names the official ones, layouts "original" (bare)
// and "checkpoint" (`vocoder.`, which ltx-core's _strip_vocoder_prefix removes once). Config: the
// metadata's `vocoder` dict.
const translate::Component& vocoder_component();      // "ltx2-vocoder"
const translate::Component& vocoder_bwe_component();  // "ltx2-vocoder-bwe"

// The text side of the bundled checkpoint (checkpoint_keys_text.cpp), the parts ltx-core's
// EMBEDDINGS_PROCESSOR_KEY_OPS takes from it:
//  "ltx2-text-connectors": the two Embeddings1DConnectors under EmbeddingsProcessor's names
//    video_connector.* / audio_connector.*; layouts "original" (those names: the ltx2.text.connector
//    goldens) and "checkpoint" (`model.diffusion_model.video_embeddings_connector.` /
//    `.audio_embeddings_connector.`: the single file). Config {"video": {...}, "audio": {...}}
//    (Embeddings1DConnector's init args), read from the metadata config's transformer dict as the
//    loader reads it (video_connector_config / audio_connector_config), else from the shapes.
//  "ltx2-text-projection" (V2: video_ / audio_aggregate_embed, LTX-2.3) and
//    "ltx2-text-projection-v1" (V1: aggregate_embed, LTX-2.0), the feature extractor's projection
//    (two components, as the vocoder's, so that detection tells them apart); layouts "original"
//    (bare) and "checkpoint" (`text_embedding_projection.`). Config {"feature_extractor", "flat_dim",
//    ...} from the shapes (the flat width is Gemma's hidden x (layers + 1), which the metadata lacks).
const translate::Component& text_connectors_component();     // "ltx2-text-connectors"
const translate::Component& text_projection_component();     // "ltx2-text-projection"
const translate::Component& text_projection_v1_component();  // "ltx2-text-projection-v1"

}  // namespace vidax::ltx2
