// The HunyuanVideo 1.0 VAE as the translator sees it: the engine's parameters (names = the
// official state_dict's, hunyuan-video-t2v-720p/vae/pytorch_model.pt, which diffusers'
// AutoencoderKLHunyuanVideo keeps unchanged: its converter loads that state dict as it is) with
// shapes from the config, and the key maps: "original" (identity: the official file and diffusers'
// vae/diffusion_pytorch_model.safetensors) and "prefixed" (the same names under "vae.", which the
// official load_vae strips).
#pragma once
#include "models/hunyuan/vae.h"
#include "translate/component.h"

namespace vidax::hunyuan {

translate::ParamSpec vae_params(const VAEConfig& c, VAEParts parts = {});
translate::KeyMap vae_keymap(const std::string& layout);

const translate::Component& vae_component();          // "hunyuanvideo-vae"
const translate::Component& vae_encoder_component();  // "hunyuanvideo-vae-encoder": encoder.* + quant_conv.*
const translate::Component& vae_decoder_component();  // "hunyuanvideo-vae-decoder": decoder.* + post_quant_conv.*

}  // namespace vidax::hunyuan
