#include "models/hunyuan15/dit_parity.h"

#include <utility>

#include "models/hunyuan/dit_parity.h"
#include "models/hunyuan15/checkpoint_keys.h"
#include "parity/parity.h"

namespace vidax::hunyuan15 {

namespace {

// Engine tap name (official module path) -> diffusers module path, for a diffusers golden.
const std::pair<const char*, const char*> kDiffusersTaps[] = {
    {"img_in", "x_embedder"},         {"txt_in", "context_embedder"},   {"byt5_in", "context_embedder_2"},
    {"vision_in", "image_embedder"},  {"time_in", "time_embed"},        {"final_layer", "proj_out"},
};

std::string diffusers_tap(const std::string& name) {
  for (const auto& [e, d] : kDiffusersTaps)
    if (name == e) return d;
  const std::string blocks = "double_blocks.";
  if (name.rfind(blocks, 0) == 0) return "transformer_blocks." + name.substr(blocks.size());
  return name;
}

}  // namespace

std::map<std::string, Tensor> golden_params(const io::Checkpoint& file, const nlohmann::json& config,
                                            const std::string& path) {
  return hunyuan::golden_params(file, config, path, dit_component());
}

DiTInputs golden_inputs(const io::Checkpoint& file, const std::string& path) {
  for (const char* name : {"input.hidden_states", "input.timestep", "input.text_states", "input.encoder_attention_mask"})
    VIDAX_CHECK(file.contains(name), path << ": hunyuan1.5.dit golden file has no '" << name << "'");
  auto opt = [&](const char* name) { return file.contains(name) ? file.get(name) : Tensor(); };
  DiTInputs in;
  in.hidden_states = file.get("input.hidden_states");
  in.timestep = file.get("input.timestep").to_f64_vector();
  in.text_states = file.get("input.text_states");
  in.encoder_attention_mask = file.get("input.encoder_attention_mask");
  in.text_states_2 = opt("input.text_states_2");
  if (file.contains("input.timestep_r")) in.timestep_r = file.get("input.timestep_r").to_f64_vector();
  in.vision_states = opt("input.vision_states");
  in.freqs_cos = opt("input.freqs_cos");
  in.freqs_sin = opt("input.freqs_sin");
  if (file.contains("input.guidance")) in.guidance = file.get("input.guidance").to_f64_vector();
  in.byt5_text_states = opt("input.byt5_text_states");
  in.byt5_text_mask = opt("input.byt5_text_mask");
  if (auto it = file.metadata().find("mask_type"); it != file.metadata().end()) in.mask_type = it->second;
  return in;
}

std::map<std::string, Tensor> run_dit_golden(const io::Checkpoint& file, const nlohmann::json& config,
                                             const std::string& precision, const std::string& path) {
  const DiTConfig cfg = DiTConfig::from_json(config);
  const HunyuanVideo15DiT model =
      HunyuanVideo15DiT::from_weights(cfg, golden_params(file, config, path), hunyuan::compute_of(precision), path);
  Taps taps;
  std::map<std::string, Tensor> out;
  out["output"] = model.forward(golden_inputs(file, path), &taps);
  for (auto& [name, tensor] : taps)
    out["inter." + (cfg.layout == DiTLayout::Diffusers ? diffusers_tap(name) : name)] = tensor;
  return out;
}

void register_dit_parity_kinds() {
  parity::register_kind("hunyuan1.5.dit", [](const parity::Golden& g, const parity::Options& opt) {
    return run_dit_golden(g.file, g.config, opt.precision, g.path);
  });
}

}  // namespace vidax::hunyuan15
