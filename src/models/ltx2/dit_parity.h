// Kind ltx2.dit (docs/parity.md): the golden's LTXModel built from __metadata__.config (dit_config.h)
// and its parameters through the translator's ltx2-dit component (checkpoint_keys.h): the official
// names bare, with the bundled checkpoint's `model.diffusion_model.` prefix, or diffusers' names,
// strictly; --lora FILE[:SCALE] merged (or, --lora-mode runtime, kept beside the weights) first;
// the Modality inputs input.video.* / input.audio.* (latent, sigma, timesteps, positions, context,
// optional context_mask) -> output.video / output.audio and inter.* (dit.h's taps). precision fp32
// (default) or bf16. --device pjrt: the forward recorded as one program (each stream's latent and
// context its inputs; what is computed from the host inputs alone, the AdaLN and the RoPE tables,
// enters it as constants) run through the plugin.
#pragma once

namespace vidax::ltx2 {

void register_dit_parity_kinds();

}  // namespace vidax::ltx2
