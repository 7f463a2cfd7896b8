// The LTX-2 family's whole run (pipeline::Parts::run, parts.h): what TI2VidOneStagePipeline.__call__
// does from the prompt strings (and images) to the decoded video and waveform, on the parts of one
// bundled checkpoint and its Gemma folder (checkpoint.h):
//
//   1. the prompt, then the negative prompt, each through PromptEncoder: the Gemma tokenizer (LEFT
//      padding to 1024), Gemma-3's hidden states, the feature extractor, the embeddings connectors
//      (prompt.h encode_prompts); the text encoder is freed after when its residency says so;
//   1b. with images (--image FILE [--image-frame N] [--image-strength S]; Request::image is frame 0
//      strength 1): encode_images, as combined_image_conditionings (conditioning.h), crf 0;
//   2. denoise_t2v (t2v.h) with the conditionings and one torch generator seeded by --seed:
//      LTX2Scheduler's sigmas, the noise of both streams, the guided denoiser, Euler steps, the
//      appended keyframe tokens dropped;
//   3. the video decode with the same generator (ConvVideoDecoder.decode_video, untiled), clamped
//      to [-1, 1] (the reference's to_rgb maps that to [0, 1]);
//   4. the audio: the audio VAE decoder, then the vocoder (VocoderWithBWE on LTX-2.3) -> a stereo
//      waveform at the vocoder's output rate (decode_audio).
//
// How vidax generate's options map: --frames / --height / --width / --fps / --steps / --seed are
// __call__'s num_frames / height / width / frame_rate / num_inference_steps / seed; --guidance is the
// video guider's cfg_scale (--video-cfg-guidance-scale); --negative-prompt. What the run does not take
// is refused naming the option: --sampler other than euler, --shift, --cfg-scale, guidance step
// ranges, per-denoiser scales, --noise, --last-image (an image at the last
// frame is --image FILE --image-frame N). --record / --replay: the two streams go through
// Events::on_stream_noise / on_stream_latents / on_stream_final (pipeline/record.h, format 2).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "models/ltx2/audio_vae.h"
#include "models/ltx2/checkpoint.h"
#include "models/ltx2/dit.h"
#include "models/ltx2/presets.h"
#include "models/ltx2/prompt.h"
#include "models/ltx2/t2v.h"
#include "models/ltx2/video_vae.h"
#include "models/ltx2/vocoder_bwe.h"
#include "pipeline/generate.h"
#include "pipeline/residency.h"
#include "text/gemma3_encoder.h"
#include "text/gemma_tokenizer.h"
#include "translate/lora.h"

namespace vidax::ltx2 {

// The text side: Gemma-3 (where it lives between runs: residency), the tokenizer, the feature
// extractor and the connectors (kept: they are small).
struct TextParts {
  std::shared_ptr<const text::GemmaTokenizer> tokenizer;
  std::shared_ptr<pipeline::ResidentPart<const text::Gemma3TextEncoder>> gemma;
  std::shared_ptr<const FeatureExtractor> features;
  std::shared_ptr<const EmbeddingsConnector> video, audio;
};

// The DiT's LoRAs (docs/lora.md; vidax generate --lora FILE[:SCALE], --lora-mode,
// --lora-allow-unmatched): applied where the DiT's parameters have their engine names, through the
// DiT component (checkpoint_keys.h), as the kind ltx2.dit applies them.
struct DitLoras {
  std::vector<translate::LoraSpec> loras;
  translate::LoraOptions options;
};

// What the DiT is built from: its base weights (views of the mapped checkpoint, unmerged) and
// config, so that Parts::use_loras builds it again with other LoRAs without reading the file.
struct DitSource {
  std::map<std::string, Tensor> base;  // engine names (the checkpoint's minus model.diffusion_model.)
  nlohmann::json config;               // the DiT component's config (dit_config_json)
  DType compute = DType::F32;
  std::string origin;                  // the checkpoint, for messages
  std::mutex mu;                       // held while the DiT is rebuilt (use_loras)
  std::vector<translate::LoraSpec> loras;  // the LoRAs the current DiT carries
  translate::LoraOptions options;
  std::function<void(const std::string&)> on_stage;  // the load's: each switch reports its LoRAs there
};

struct Model {
  Preset preset;  // the variant, its defaults and guiders
  CheckpointFiles files;
  std::shared_ptr<const LTXModel> dit;
  std::shared_ptr<DitSource> dit_source;
  std::shared_ptr<const VideoDecoder> vae;
  // ImageConditioner's VideoEncoder (vae.encoder.* with the shared statistics); null when the
  // checkpoint carries none (a run with images is then refused).
  std::shared_ptr<const VideoEncoder> encoder;
  std::shared_ptr<const AudioDecoder> audio_vae;
  std::shared_ptr<const VocoderWithBwe> vocoder;
  TextParts text;
};

// Loads every part of `files` for `preset` (the DiT and Gemma computing in `compute`: F32 or BF16;
// the decoders and the vocoder in fp32), the DiT with `loras`. Throws naming the file and the tensor on a missing or
// mis-shaped parameter, and on one no part takes.
std::shared_ptr<Model> load_model(const CheckpointFiles& files, const Preset& preset, DType compute,
                                  pipeline::Residency text_encoder,
                                  const std::function<void(const std::string&)>& on_stage = {},
                                  const DitLoras& loras = {});

// The DiT of `src` with `loras` (merged or kept at run time, as src.options says; every LoRA's line
// told to on_stage). Throws naming a bad file, an unmatched key (unless allowed) or a Wan LoRA.
std::shared_ptr<const LTXModel> build_dit(const DitSource& src, const std::vector<translate::LoraSpec>& loras,
                                          const std::function<void(const std::string&)>& on_stage = {});

// The size rules: 8k + 1 frames, multiples of 32 (the VAE's 8x / 32x, patch 1), 128 latent channels.
pipeline::Geometry geometry();

// The reference's request from vidax's (the mapping above); throws naming a refused option, and
// check_t2v_request's errors (the nearest valid values).
T2VRequest t2v_request(const Preset& preset, const pipeline::Request& request);

// The request's images in the order the pipeline applies them (Request::image as frame 0 strength 1
// first, then Request::key_images), each decoded picture recovered as its 8-bit values, then
// preprocess_image to the request's size and m.encoder -> ImageConditioning; check_image_conditioning
// on each. Throws when there are images and m has no encoder.
std::vector<ImageConditioning> encode_images(const Model& m, const pipeline::Request& q, const T2VRequest& r);

// Step 1: the positive and negative contexts, [1, 1024, D] each.
PromptContexts encode_contexts(const Model& m, const std::string& prompt, const std::string& negative_prompt,
                               bool* prompt_truncated = nullptr, bool* negative_truncated = nullptr);

// The whole run (steps 1-4): Result::latents the video latent [128, F', h, w], taps["audio_latent"]
// the audio latent [8, T, 16], video [3, F, H, W] in [-1, 1] and audio [2, samples] at
// audio_sample_rate when `decode`.
pipeline::Result run(const Model& m, const pipeline::Request& request, const pipeline::Events& events, bool decode);

// The parts the generic pipeline takes: geometry and run (parts.h).
pipeline::Parts make_parts(std::shared_ptr<Model> m);

}  // namespace vidax::ltx2
