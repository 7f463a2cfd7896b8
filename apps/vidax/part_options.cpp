#include "part_options.h"

namespace vidax::app {

PartOptions add_part_options(CLI::App* sub, pipeline::PartFiles& files, PartStyle style) {
  PartOptions o;
  const bool bench = style == PartStyle::Bench;
  o.diffusion_model = sub->add_option(
      "--diffusion-model", files.diffusion_model,
      std::string("The DiT as one file (.safetensors, .pth or .gguf; original, diffusers, ComfyUI or GGUF names)") +
          (style == PartStyle::Run ? "; replaces --weights' DiT" : bench ? "; its steps are timed on its weights" : ""));
  o.vae = sub->add_option("--vae", files.vae,
                          bench ? "Also time a VAE decode of the video's latent (fp32): on random weights, or on "
                                  "the VAE FILE given"
                                : std::string("The VAE as one file (e.g. wan_2.1_vae.safetensors)") +
                                      (style == PartStyle::Run ? "; replaces --weights' VAE" : ""));
  o.text_encoder = sub->add_option(
      "--text-encoder", files.text_encoder,
      bench ? "Also time the UMT5 text encoder (bf16, 512 rows): on random weights, or on the encoder FILE given"
            : std::string("The UMT5 text encoder as one file (safetensors, .pth or a UMT5 GGUF)") +
                  (style == PartStyle::Run ? "; replaces --weights' encoder" : ""));
  if (bench) {
    // `--vae` alone (no value) keeps its older meaning: time the part on random weights.
    o.vae->expected(0, 1)->type_name("[FILE]");
    o.text_encoder->expected(0, 1)->type_name("[FILE]");
  }
  if (style == PartStyle::Run)
    o.tokenizer = sub->add_option("--tokenizer", files.tokenizer,
                                  "Folder holding the UMT5 spiece.model (default: --weights', else beside --text-encoder)");
  return o;
}

std::vector<std::pair<std::string, std::string>> given_parts(const pipeline::PartFiles& files) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!files.diffusion_model.empty()) out.emplace_back("--diffusion-model", files.diffusion_model);
  if (!files.vae.empty()) out.emplace_back("--vae", files.vae);
  if (!files.text_encoder.empty()) out.emplace_back("--text-encoder", files.text_encoder);
  return out;
}

}  // namespace vidax::app
