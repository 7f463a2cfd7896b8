// `vidax make-demo`: a tiny random-weight Wan 2.1 checkpoint in the ORIGINAL
// layout, so the whole prompt -> MP4 path runs in seconds with no download:
//
//   OUTDIR/config.json                                  WanModel init args (tiny)
//   OUTDIR/diffusion_pytorch_model.safetensors          DiT, official names, F32
//   OUTDIR/Wan2.1_VAE.safetensors                       WanVAE_, official names, F32
//   OUTDIR/models_t5_umt5-xxl-enc-bf16.safetensors      T5Encoder (UMT5), official names, BF16
//   OUTDIR/google/umt5-xxl/spiece.model                 a small SentencePiece model
//   OUTDIR/vidax_model.json                             {"model": "wan2.1-tiny-demo", dit/vae/t5 configs}
//
// The VAE and text encoder are .safetensors where the publisher ships .pth
// (pickles); the loader accepts either name.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "models/wan/param_shapes.h"
#include "models/wan/presets.h"
#include "pipeline/family.h"

namespace vidax::wan {

// Writes the checkpoint of the demo model `model` (creating out_dir); returns the vidax_model.json
// written. kTinyA14BDemoModel writes the Wan 2.2 A14B layout: high_noise_model/ and
// low_noise_model/, each a config.json and a DiT (two random draws); kTinyTI2VDemoModel the TI2V
// DiT and Wan2.2_VAE.safetensors (the Wan 2.2 VAE, 48 latent channels).
nlohmann::json make_demo_weights(const pipeline::DemoOptions& opt, const std::string& model = kTinyDemoModel);

}  // namespace vidax::wan
