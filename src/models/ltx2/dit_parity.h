// Kind ltx2.dit (docs/parity.md): the golden's LTXModel built from __metadata__.config (dit_config.h)
// and its parameters under the official names, bare or with the bundled checkpoint's
// `model.diffusion_model.` prefix, strictly; the Modality inputs input.video.* / input.audio.*
// (latent, sigma, timesteps, positions, context, optional context_mask) -> output.video /
// output.audio and inter.* (dit.h's taps). precision fp32 (default) or bf16. --device pjrt: the
// forward recorded as one program (each stream's latent and context its inputs; what is computed from
// the host inputs alone, the AdaLN and the RoPE tables, enters it as constants) run through the plugin.
#pragma once

namespace vidax::ltx2 {

void register_dit_parity_kinds();

}  // namespace vidax::ltx2
