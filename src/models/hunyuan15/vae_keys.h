// The HunyuanVideo 1.5 VAE as the translator sees it: the engine's parameters (names = the official
// AutoencoderKLConv3D state_dict's, vae/diffusion_pytorch_model.safetensors of the published
// checkpoint) with shapes from the config, and the key maps: "original" (identity) and "diffusers"
// (AutoencoderKLHunyuanVideo15's names, a table: down.{i}.block.{j} <- down_blocks.{i}.resnets.{j},
// mid.attn_1.q <- mid_block.attentions.0.to_q, nin_shortcut <- conv_shortcut, ...).
#pragma once
#include "models/hunyuan15/vae.h"
#include "translate/component.h"

namespace vidax::hunyuan15 {

translate::ParamSpec vae_params(const VAEConfig& c, VAEParts parts = {});
translate::KeyMap vae_keymap(const std::string& layout);

// Not registered for detection (no HunyuanVideo 1.5 Family yet; the 1.0 VAE's diffusers names
// overlap these): used by name (load_vae, the parity kinds).
const translate::Component& vae_component();          // "hunyuanvideo1.5-vae"
const translate::Component& vae_encoder_component();  // "hunyuanvideo1.5-vae-encoder": encoder.*
const translate::Component& vae_decoder_component();  // "hunyuanvideo1.5-vae-decoder": decoder.*

}  // namespace vidax::hunyuan15
