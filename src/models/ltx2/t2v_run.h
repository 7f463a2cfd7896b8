// The LTX-2 family's whole run (pipeline::Parts::run, parts.h): what TI2VidOneStagePipeline.__call__
// (images=[]) does from the prompt strings to the decoded video and waveform, on the parts of one
// bundled checkpoint and its Gemma folder (checkpoint.h):
//
//   1. the prompt, then the negative prompt, each through PromptEncoder: the Gemma tokenizer (LEFT
//      padding to 1024), Gemma-3's hidden states, the feature extractor, the embeddings connectors
//      (prompt.h encode_prompts); the text encoder is freed after when its residency says so;
//   2. denoise_t2v (t2v.h) with one torch generator seeded by --seed: LTX2Scheduler's sigmas, the
//      noise of both streams, the guided denoiser, Euler steps;
//   3. the video decode with the same generator (ConvVideoDecoder.decode_video, untiled), clamped
//      to [-1, 1] (the reference's to_rgb maps that to [0, 1]);
//   4. the audio: the audio VAE decoder, then the vocoder (VocoderWithBWE on LTX-2.3) -> a stereo
//      waveform at the vocoder's output rate (decode_audio).
//
// How vidax generate's options map: --frames / --height / --width / --fps / --steps / --seed are
// __call__'s num_frames / height / width / frame_rate / num_inference_steps / seed; --guidance is the
// video guider's cfg_scale (--video-cfg-guidance-scale); --negative-prompt. What the run does not take
// is refused naming the option: --sampler other than euler, --shift, --cfg-scale, guidance step
// ranges, per-denoiser scales, --noise, --record / --replay.
#pragma once
#include <functional>
#include <memory>
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

namespace vidax::ltx2 {

// The text side: Gemma-3 (where it lives between runs: residency), the tokenizer, the feature
// extractor and the connectors (kept: they are small).
struct TextParts {
  std::shared_ptr<const text::GemmaTokenizer> tokenizer;
  std::shared_ptr<pipeline::ResidentPart<const text::Gemma3TextEncoder>> gemma;
  std::shared_ptr<const FeatureExtractor> features;
  std::shared_ptr<const EmbeddingsConnector> video, audio;
};

struct Model {
  Preset preset;  // the variant, its defaults and guiders
  CheckpointFiles files;
  std::shared_ptr<const LTXModel> dit;
  std::shared_ptr<const VideoDecoder> vae;
  std::shared_ptr<const AudioDecoder> audio_vae;
  std::shared_ptr<const VocoderWithBwe> vocoder;
  TextParts text;
};

// Loads every part of `files` for `preset` (the DiT and Gemma computing in `compute`: F32 or BF16;
// the decoders and the vocoder in fp32). Throws naming the file and the tensor on a missing or
// mis-shaped parameter, and on one no part takes.
std::shared_ptr<Model> load_model(const CheckpointFiles& files, const Preset& preset, DType compute,
                                  pipeline::Residency text_encoder,
                                  const std::function<void(const std::string&)>& on_stage = {});

// The size rules: 8k + 1 frames, multiples of 32 (the VAE's 8x / 32x, patch 1), 128 latent channels.
pipeline::Geometry geometry();

// The reference's request from vidax's (the mapping above); throws naming a refused option, and
// check_t2v_request's errors (the nearest valid values).
T2VRequest t2v_request(const Preset& preset, const pipeline::Request& request);

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
