// The LTX-2 variants (presets.h).
#include "models/ltx2/presets.h"

#include "core/error.h"

namespace vidax::ltx2 {

namespace {

using nlohmann::json;

// MultiModalGuiderParams of LTX_2_3_PARAMS (utils/constants.py): LTX_2_PARAMS' guiders with
// stg_blocks [28].
GuiderParams guider(double cfg, std::vector<int64_t> stg_blocks) {
  GuiderParams g;
  g.cfg_scale = cfg;
  g.stg_scale = 1.0;
  g.rescale_scale = 0.7;
  g.modality_scale = 3.0;
  g.skip_step = 0;
  g.stg_blocks = std::move(stg_blocks);
  return g;
}

// The demo's architecture: tiny widths of the LTX-2.3 structure. The DiT is tools/golden/ltx2_dit.py's
// "av23" config (cross-attention AdaLN, gated attention, no FFN bias, the V2 feature extractor's
// keys) with the pipeline's fixed latent widths (128 video channels, 8 x 16 audio values) and the
// connector keys EmbeddingsProcessorConfigurator reads; the decoders are the pipeline golden's
// (tools/golden/ltx2_pipeline_t2v.py: 8x temporal, 32x spatial compression, a timestep-conditioned
// decoder with noise injection; the audio decoder to 64 mel bins); the vocoder is AMP1 with the
// bandwidth extension as LTX-2.3's (base at 16 kHz, upsampling 4 x 5 x 8 = the mel hop of 160, then
// x3 to 48 kHz).
json demo_config() {
  const json transformer = {
      {"dropout", 0.0}, {"attention_bias", true}, {"num_vector_embeds", nullptr},
      {"activation_fn", "gelu-approximate"}, {"num_embeds_ada_norm", 1000}, {"use_linear_projection", false},
      {"only_cross_attention", false}, {"cross_attention_norm", true}, {"double_self_attention", false},
      {"upcast_attention", false}, {"standardization_norm", "rms_norm"}, {"norm_elementwise_affine", false},
      {"qk_norm", "rms_norm"}, {"positional_embedding_type", "rope"}, {"use_audio_video_cross_attention", true},
      {"share_ff", false}, {"av_cross_ada_norm", true}, {"use_middle_indices_grid", true},
      {"num_attention_heads", 2}, {"attention_head_dim", 16}, {"in_channels", 128}, {"out_channels", 128},
      {"num_layers", 2}, {"cross_attention_dim", 32}, {"norm_eps", 1e-06}, {"positional_embedding_theta", 10000.0},
      {"positional_embedding_max_pos", {20, 2048, 2048}}, {"timestep_scale_multiplier", 1000},
      {"audio_num_attention_heads", 2}, {"audio_attention_head_dim", 8}, {"audio_in_channels", 128},
      {"audio_out_channels", 128}, {"audio_cross_attention_dim", 16}, {"audio_positional_embedding_max_pos", json::array({20})},
      {"av_ca_timestep_scale_multiplier", 1}, {"rope_type", "split"}, {"frequencies_precision", "float64"},
      {"apply_gated_attention", true}, {"cross_attention_adaln", true}, {"use_prompt_adaln_single", true},
      {"ff_bias", false},
      // FeatureExtractorV2 (_create_feature_extractor's _V2_EXPECTED_CONFIG).
      {"caption_proj_before_connector", true}, {"caption_projection_first_linear", false},
      {"caption_proj_input_norm", false}, {"caption_projection_second_linear", false},
      // The connectors (Embeddings1DConnectorConfigurator / AudioEmbeddings1DConnectorConfigurator):
      // their widths are the DiT's context widths, 2 x 16 and 2 x 8.
      {"connector_num_attention_heads", 2}, {"connector_attention_head_dim", 16}, {"connector_num_layers", 1},
      {"audio_connector_num_attention_heads", 2}, {"audio_connector_attention_head_dim", 8},
      {"audio_connector_num_layers", 1}, {"connector_positional_embedding_max_pos", json::array({1})},
      {"connector_apply_gated_attention", true}, {"connector_ff_bias", true}};
  const json vae = {{"_class_name", "CausalVideoAutoencoder"},
                    {"dims", 3},
                    {"latent_channels", 128},
                    {"out_channels", 3},
                    {"patch_size", 4},
                    {"norm_layer", "pixel_norm"},
                    {"causal_decoder", false},
                    {"timestep_conditioning", true},
                    {"spatial_padding_mode", "zeros"},
                    {"decoder_base_channels", 4},
                    // The encoder (image conditioning): conv_in to the 128 latent channels, three 2x
                    // space-and-time steps (32x, 8x as the decoder's), each one narrow convolution
                    // (multiplier 1: 16 outputs before the space-to-depth).
                    {"encoder_blocks",
                     json::array({json::array({"compress_all_res", {{"multiplier", 1}}}),
                                  json::array({"compress_all_res", {{"multiplier", 1}}}),
                                  json::array({"compress_all_res", {{"multiplier", 1}}})})},
                    {"decoder_blocks",
                     json::array({json::array({"res_x", {{"num_layers", 1}, {"inject_noise", true}}}),
                                  json::array({"compress_all", {{"residual", false}, {"multiplier", 1}}}),
                                  json::array({"compress_all", {{"residual", false}, {"multiplier", 1}}}),
                                  json::array({"compress_all", {{"residual", false}, {"multiplier", 1}}})})}};
  const json audio_vae = {
      {"model",
       {{"params",
         {{"ddconfig",
           {{"ch", 1}, {"z_channels", 8}, {"out_ch", 2}, {"ch_mult", {2, 4}}, {"num_res_blocks", 1},
            {"attn_resolutions", json::array()}, {"resolution", 64}, {"norm_type", "pixel"},
            {"causality_axis", "height"}, {"mid_block_add_attention", true}, {"mel_bins", 64}}},
          {"sampling_rate", 16000}}}}},
      {"preprocessing", {{"stft", {{"hop_length", 160}, {"causal", true}}}}}};
  const json vocoder = {
      {"vocoder",
       {{"resblock_kernel_sizes", json::array({3})}, {"upsample_rates", {4, 5, 8}}, {"upsample_kernel_sizes", {8, 11, 16}},
        {"resblock_dilation_sizes", json::array({json::array({1, 3, 5})})}, {"upsample_initial_channel", 16}, {"resblock", "AMP1"},
        {"activation", "snakebeta"}, {"stereo", true}}},
      {"bwe",
       {{"resblock_kernel_sizes", json::array({3})}, {"upsample_rates", {3, 4}}, {"upsample_kernel_sizes", {5, 8}},
        {"resblock_dilation_sizes", json::array({json::array({1, 3, 5})})}, {"upsample_initial_channel", 8}, {"resblock", "AMP1"},
        {"activation", "snakebeta"}, {"stereo", true}, {"apply_final_activation", false},
        {"input_sampling_rate", 16000}, {"output_sampling_rate", 48000}, {"hop_length", 4}, {"n_fft", 64},
        {"win_size", 64}, {"num_mels", 64}}}};
  return {{"transformer", transformer}, {"vae", vae}, {"audio_vae", audio_vae}, {"vocoder", vocoder}};
}

// The demo's Gemma-3: Gemma3ForConditionalGeneration's config.json as transformers writes it, with a
// 2-layer text model (sliding, full) of width 32 and 2048 rows (the demo tokenizer's ids fit).
json demo_gemma() {
  const json text = {{"model_type", "gemma3_text"},
                     {"vocab_size", 2048},
                     {"hidden_size", 32},
                     {"intermediate_size", 48},
                     {"num_hidden_layers", 2},
                     {"num_attention_heads", 4},
                     {"num_key_value_heads", 1},
                     {"head_dim", 8},
                     {"hidden_activation", "gelu_pytorch_tanh"},
                     {"max_position_embeddings", 1024},
                     {"rms_norm_eps", 1e-06},
                     {"pad_token_id", 0},
                     {"eos_token_id", 1},
                     {"bos_token_id", 2},
                     {"rope_parameters",
                      {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1000000.0}}},
                       {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}}},
                     {"attention_bias", false},
                     {"attention_dropout", 0.0},
                     {"query_pre_attn_scalar", 8},
                     {"sliding_window", 4},
                     {"layer_types", json::array({"sliding_attention", "full_attention"})},
                     {"final_logit_softcapping", nullptr},
                     {"attn_logit_softcapping", nullptr},
                     {"use_bidirectional_attention", false}};
  return {{"model_type", "gemma3"}, {"architectures", json::array({"Gemma3ForConditionalGeneration"})}, {"text_config", text}};
}

std::vector<Preset> make_presets() {
  std::vector<Preset> out;
  {
    Preset p;
    pipeline::Variant& v = p.variant;
    v.name = k23Dev;
    v.description = "LTX-2.3 22B dev (Lightricks/LTX-2.3 ltx-2.3-22b-dev.safetensors + Gemma-3-12B): text to video "
                    "with audio, one stage";
    v.tasks = {"t2v", "i2v"};  // i2v: images at chosen frames (Request::key_images), a first frame
    v.audio = true;
    v.key_images = true;
    v.reference_videos = true;  // the IC-LoRA pipeline (--reference-video / --video, ic_lora_run.h)
    pipeline::Defaults& d = v.defaults;
    d.width = 768;  // PipelineParams.stage_1_width
    d.height = 512;
    d.frames = 121;
    d.fps = 24.0;
    d.steps = 30;  // LTX_2_3_PARAMS.num_inference_steps
    d.guidance = 3.0;  // the video guider's cfg_scale (--video-cfg-guidance-scale)
    d.sampler = "euler";  // EulerDiffusionStep on LTX2Scheduler's sigmas (the family's own run)
    d.shift = 1.0;        // not used: LTX2Scheduler shifts by the token count itself (refused if set)
    d.precision = "bf16";  // TI2VidOneStagePipeline's dtype
    d.negative_prompt = default_negative_prompt();
    d.two_stage_height = 1024;  // default_2_stage_arg_parser: PipelineParams.stage_2_height / _width
    d.two_stage_width = 1536;
    p.video_guider = guider(3.0, {28});
    p.audio_guider = guider(7.0, {28});
    out.push_back(std::move(p));
  }
  {
    Preset p;
    pipeline::Variant& v = p.variant;
    v.name = k23TinyDemo;
    v.description = "LTX-2.3 architecture with tiny random weights (vidax make-demo): its video and audio are noise";
    v.tasks = {"t2v", "i2v"};  // i2v: images at chosen frames (Request::key_images), a first frame
    v.audio = true;
    v.key_images = true;
    v.reference_videos = true;  // the IC-LoRA pipeline (--reference-video / --video, ic_lora_run.h)
    v.demo = true;
    pipeline::Defaults& d = v.defaults;
    d.width = 64;
    d.height = 64;
    d.frames = 9;
    d.fps = 24.0;
    d.steps = 4;
    d.guidance = 3.0;
    d.sampler = "euler";
    d.shift = 1.0;
    d.precision = "fp32";
    d.negative_prompt = default_negative_prompt();
    d.two_stage_height = 128;  // --two-stage: stage 1 at the one-stage demo's 64 x 64
    d.two_stage_width = 128;
    p.video_guider = guider(3.0, {1});
    p.audio_guider = guider(7.0, {1});
    p.config = demo_config();
    p.gemma = demo_gemma();
    out.push_back(std::move(p));
  }
  {
    Preset p;
    pipeline::Variant& v = p.variant;
    v.name = k23Distilled;
    v.description = "LTX-2.3 22B distilled (Lightricks/LTX-2.3 ltx-2.3-22b-distilled-1.1.safetensors + Gemma-3-12B + "
                    "ltx-2.3-spatial-upscaler-x2-1.1.safetensors): DistilledPipeline, two stages of 8 + 3 steps, no "
                    "guidance";
    v.tasks = {"t2v", "i2v"};
    v.audio = true;
    v.key_images = true;
    pipeline::Defaults& d = v.defaults;
    d.width = 1536;  // default_2_stage_distilled_arg_parser: PipelineParams.stage_2_width / _height
    d.height = 1024;
    d.two_stage_width = 1536;
    d.two_stage_height = 1024;
    d.frames = 121;
    d.fps = 24.0;
    d.steps = kDistilledSteps;
    d.guidance = 1.0;  // SimpleDenoiser: no guidance
    d.sampler = "euler";
    d.shift = 1.0;
    d.precision = "bf16";  // DistilledPipeline's dtype
    p.distilled = true;
    out.push_back(std::move(p));
  }
  {
    Preset p;
    pipeline::Variant& v = p.variant;
    v.name = k23TinyDistilledDemo;
    v.description = "the tiny demo's random weights run as LTX-2.3 distilled (vidax make-demo): noise in two stages";
    v.tasks = {"t2v", "i2v"};
    v.audio = true;
    v.key_images = true;
    v.demo = true;
    pipeline::Defaults& d = v.defaults;
    d.width = d.two_stage_width = 128;
    d.height = d.two_stage_height = 128;
    d.frames = 9;
    d.fps = 24.0;
    d.steps = kDistilledSteps;
    d.guidance = 1.0;
    d.sampler = "euler";
    d.shift = 1.0;
    d.precision = "fp32";
    p.config = demo_config();
    p.gemma = demo_gemma();
    p.distilled = true;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = make_presets();
  return all;
}

const Preset& preset(const std::string& name) {
  std::string known;
  for (const Preset& p : presets()) {
    if (p.name() == name) return p;
    known += (known.empty() ? "" : ", ") + p.name();
  }
  throw Error(msg() << "unknown LTX-2 model '" << name << "'; known: " << known);
}

const std::string& default_negative_prompt() {
  static const std::string s =
      "has_subtitles, has_blurbox, transition from black, transition to black, speech_ending_short, "
      "blurry, out of focus, overexposed, underexposed, low contrast, washed out colors, excessive noise, "
      "grainy texture, poor lighting, flickering, motion blur, distorted proportions, unnatural skin tones, "
      "deformed facial features, asymmetrical face, missing facial features, extra limbs, disfigured hands, "
      "wrong hand count, artifacts around text, inconsistent perspective, camera shake, incorrect depth of "
      "field, background too sharp, background clutter, distracting reflections, harsh shadows, inconsistent "
      "lighting direction, color banding, cartoonish rendering, 3D CGI look, unrealistic materials, uncanny "
      "valley effect, incorrect ethnicity, wrong gender, exaggerated expressions, wrong gaze direction, "
      "mismatched lip sync, silent or muted audio, distorted voice, robotic voice, echo, background noise, "
      "off-sync audio, incorrect dialogue, added dialogue, repetitive speech, jittery movement, awkward "
      "pauses, incorrect timing, unnatural transitions, inconsistent framing, tilted camera, flat lighting, "
      "inconsistent tone, cinematic oversaturation, stylized filters, or AI artifacts.";
  return s;
}

}  // namespace vidax::ltx2
