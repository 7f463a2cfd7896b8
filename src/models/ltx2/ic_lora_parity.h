// Kind ltx2.conditioning.reference_video (docs/parity.md, docs/models/ltx2.md "IC-LoRA and
// video-to-video"): combined_image_conditionings (images optional) + append_ic_lora_reference_video_
// conditionings with a real encoder, then create_noised_state, against tools/golden/ltx2_ic_lora.py.
//   config: vae (the encoder's), height, width (the target), num_frames, frame_rate, seed,
//           latent_channels, images (optional), video_conditioning [{"strength"}],
//           reference_downscale_factor, reference_temporal_scale_factor, conditioning_attention_strength
//   parameters: the encoder's (official names); input.image.<i> [h, w, 3], input.reference_video.<i>
//   [F, h, w, 3] (the decoded 8-bit frames), optionally input.attention_mask (or
//   input.conditioning_attention_mask) [1, 1, F, H, W] (a pixel mask, times the strength) -> output.image_latent.<i>, output.reference_latent.<i>,
//   output.state.{latent,clean_latent,denoise_mask,positions,attention_mask,keyframes_mask};
//   inter.reference_video.<i> (the encoder's input, before its frame crop). fp32 only.
// Kind ltx2.pipeline.ic_lora: ICLoraPipeline.__call__ with skip_stage_2 from the prompt contexts on.
//   config: height, width (the full target), num_frames, frame_rate, seed, skip_stage_2 (must be
//           true), conditioning_attention_strength, optional stage_1_sigmas; transformer; optionally
//           vae / audio_vae / vocoder (then decoded at the stage-1 size); images (optional),
//           video_conditioning [{"strength"}]; loras [{"file" (beside the golden), "strength"}]: merged
//           into the DiT, their metadata's reference_downscale_factor / reference_temporal_scale_factor
//   parameters: model.diffusion_model.*, vae.decoder.* / vae.encoder.* + vae.per_channel_statistics.*,
//           audio_vae.*, vocoder.*
//   input.v_context_p, input.a_context_p; per image input.image_latent.<i> and / or input.image.<i>;
//   per reference input.reference_latent.<i> and / or input.reference_video.<i> (encoded by
//   vae.encoder.* without a latent), optionally input.conditioning_attention_mask [1, 1, F, H, W]
//   (__call__'s pixel mask, times the strength) -> output.video_latent, output.audio_latent (stage 1's), with the
//   decoders output.video [F, H/2, W/2, 3], output.audio; inter.sigmas, inter.noise.*, inter.state.*,
//   inter.image.<i>, inter.reference_video.<i>, inter.step<i>.{video,audio,video_denoised,audio_denoised}.
#pragma once

namespace vidax::ltx2 {

void register_ic_lora_parity_kinds();

}  // namespace vidax::ltx2
