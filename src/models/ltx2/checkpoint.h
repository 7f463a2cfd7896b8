// The LTX-2 checkpoint as the official pipelines load it (ltx_pipelines ModelPaths.from_monolith,
// Lightricks/LTX-2 400fd31): one bundled .safetensors holding every part under its prefix, its
// __metadata__ "config" (the "transformer", "vae", "audio_vae", "vocoder" dicts the configurators
// read) and "model_version"; and a Gemma-3 folder (gemma_root: config.json, the weights, tokenizer.json,
// tokenizer_config.json). The parts, by the prefixes the configurators' SDOps take and rename:
//
//   model.diffusion_model.*                     the DiT (LTXV_MODEL_COMFY_RENAMING_MAP), but for
//   model.diffusion_model.video_embeddings_connector.*, .audio_embeddings_connector.*
//                                               the connectors (EMBEDDINGS_PROCESSOR_KEY_OPS)
//   text_embedding_projection.*                 the feature extractor (V1 aggregate_embed, V2
//                                               video_ / audio_aggregate_embed)
//   vae.decoder.*, vae.per_channel_statistics.* the video VAE decoder (VAE_DECODER_COMFY_KEYS_FILTER)
//   audio_vae.decoder.*, audio_vae.per_channel_statistics.*   the audio VAE decoder
//   vocoder.*                                   the vocoder (VOCODER_COMFY_KEYS_FILTER)
//
// Other keys (the VAE encoders, the audio encoder) are not read, as a one-stage text-to-video run
// does not load them.
//
// A weights folder (`vidax generate --weights DIR`) holds the checkpoint and the Gemma folder side by
// side, as MODELS-LTX-2.3.md has them downloaded: DIR/<name>.safetensors (the one file whose
// metadata config has a "transformer"; upscalers and LoRAs beside it are not; beside a distilled one,
// the one whose name does not say "distilled") and DIR/<gemma>/ (the
// one subfolder whose config.json is a Gemma-3 config). `vidax make-demo` writes the same layout.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/ltx2/dit.h"
#include "models/ltx2/text_connector.h"
#include "models/ltx2/text_encoder.h"
#include "text/gemma3_config.h"

namespace vidax::ltx2 {

struct CheckpointFiles {
  std::string checkpoint;     // the bundled .safetensors
  std::string gemma_root;     // the Gemma-3 folder
  nlohmann::json config;      // the checkpoint's metadata "config"
  std::string model_version;  // its metadata "model_version" ("" when unset)
};

// The official layout in `dir`; throws naming every file looked for and what was found instead.
// With `distilled` (the distilled variant), of a dev and a distilled checkpoint side by side the one
// whose name says "distilled" is taken (else the other).
CheckpointFiles find_checkpoint(const std::string& dir, bool distilled = false);
// The metadata "config" and "model_version" of one .safetensors ("config" null when it has none).
CheckpointFiles read_checkpoint_header(const std::string& path);
// detect_model_version: "2.3.0" -> {2, 3, 0}; "" or unparseable -> {} (below every version).
std::vector<int64_t> parse_model_version(const std::string& version);

// The connectors' init args from the checkpoint config's "transformer" dict, as
// Embeddings1DConnectorConfigurator / AudioEmbeddings1DConnectorConfigurator read them
// (connector_* keys, the audio_connector_* ones falling back to them; 128 registers).
ConnectorConfig video_connector_config(const nlohmann::json& transformer);
ConnectorConfig audio_connector_config(const nlohmann::json& transformer);
// _create_feature_extractor's choice: V1 when none of the V2 keys is in the transformer config, V2
// when all are with the expected values; anything else is refused naming the keys.
FeatureExtractorVersion feature_extractor_version_of(const nlohmann::json& transformer);

// A Gemma folder's config.json (Gemma3ForConditionalGeneration's, or a bare Gemma3TextConfig).
text::Gemma3Config read_gemma_config(const std::string& gemma_root);
// The folder's weights (model.safetensors.index.json, else every tensor file in it) as
// Gemma3TextModel's names, through the translator's gemma3 key maps (vision tower and lm_head
// ignored by name; anything else left over is an error).
std::map<std::string, Tensor> read_gemma_weights(const std::string& gemma_root, const text::Gemma3Config& cfg);

}  // namespace vidax::ltx2
