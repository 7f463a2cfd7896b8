// Kind ltx2.pipeline.t2v (docs/parity.md, docs/models/ltx2.md "Pipelines"): the one-stage
// text-to-video+audio run of TI2VidOneStagePipeline.__call__ (images=[]) from the prompt contexts on,
// against tools/golden/ltx2_pipeline_t2v.py.
//   config: __call__'s height, width, num_frames, frame_rate, num_inference_steps, seed,
//           video_guider_params / audio_guider_params (MultiModalGuiderParams fields); "transformer"
//           (the DiT config, dit_config.h), and optionally "vae", "audio_vae", "vocoder" (the
//           checkpoint's dicts: then the run decodes, as __call__ does, untiled)
//   parameters: model.diffusion_model.* (the DiT), vae.decoder.* + vae.per_channel_statistics.*,
//           audio_vae.decoder.* + audio_vae.per_channel_statistics.*, vocoder.* (the bundled
//           checkpoint's prefixes), every one used
//   input.v_context_p, input.a_context_p, input.v_context_n, input.a_context_n [1, L, D]
//   -> output.video_latent [1, 128, F', h, w], output.audio_latent [1, 8, T, 16]; with the decoders
//      output.video [F, H, W, 3] in [0, 1] (decode_video, with the pipeline's generator after the
//      noise) and output.audio [2, samples] (Audio.waveform); inter.sigmas, inter.noise.{video,audio},
//      inter.step<i>.{video,audio,video_denoised,audio_denoised,video_cond,audio_cond} (patchified). fp32 only.
// Kind ltx2.pipeline.i2v (docs/models/ltx2.md "Image conditioning"): the same run with __call__'s
// images, against tools/golden/ltx2_pipeline_i2v.py.
//   config: the t2v kind's plus "images": [{"frame_idx", "strength"}, ...]; parameters: the t2v
//           kind's, optionally vae.encoder.* (the video encoder; "vae" then holds its config)
//   per image input.image_latent.<i> [1, 128, 1, H/32, W/32] (the encoded picture) and / or
//   input.image.<i> (the decoded picture [h, w, 3] 0..255, or preprocessed [1, 3, 1, H, W]; without a
//   latent it is encoded by vae.encoder.*) -> the t2v kind's outputs; inter.image.<i> (preprocessed),
//   inter.image_latent.<i> (encoded here), inter.state.{clean_latent,denoise_mask,positions} (the
//   conditioned state, appended keyframe tokens included), the step taps over every token.
// Kind ltx2.conditioning.image: combined_image_conditionings with a real encoder, then
// create_noised_state on a VideoLatentTools of config latent_channels.
//   config: vae (the encoder's), height, width, num_frames, frame_rate, seed, latent_channels, images;
//   parameters: the encoder's (official names); input.image.<i> -> output.image_latent.<i>,
//   output.state.{latent,clean_latent,denoise_mask,positions}; inter.image.<i>. fp32 only.
#pragma once

namespace vidax::ltx2 {

void register_pipeline_parity_kinds();

}  // namespace vidax::ltx2
