#include "models/hunyuan/dit_parity.h"

#include <utility>

#include "backend/pjrt/session.h"
#include "backend/recording.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/dit.h"
#include "nn/synthetic_init.h"
#include "parity/parity.h"
#include "translate/component.h"
#include "translate/inspect.h"
#include "translate/source.h"

namespace vidax::hunyuan {

namespace {

// Engine tap name (official module path) -> diffusers module path, for a diffusers golden.
const std::pair<const char*, const char*> kDiffusersTaps[] = {
    {"img_in", "x_embedder"},
    {"txt_in", "context_embedder"},
    {"time_in", "time_text_embed.timestep_embedder"},
    {"vector_in", "time_text_embed.text_embedder"},
    {"guidance_in", "time_text_embed.guidance_embedder"},
    {"final_layer", "proj_out"},
};

std::string diffusers_tap(const std::string& name) {
  for (const auto& [e, d] : kDiffusersTaps)
    if (name == e) return d;
  for (const auto& [e, d] : {std::pair<std::string, std::string>{"double_blocks.", "transformer_blocks."},
                             std::pair<std::string, std::string>{"single_blocks.", "single_transformer_blocks."}})
    if (name.rfind(e, 0) == 0) return d + name.substr(e.size());
  return name;
}

}  // namespace

DType compute_of(const std::string& precision) {
  if (precision == "fp32" || precision == "f32" || precision == "float32") return DType::F32;
  if (precision == "bf16" || precision == "bfloat16") return DType::BF16;
  throw Error(msg() << "unknown precision '" << precision << "' (expected fp32 or bf16)");
}

std::map<std::string, Tensor> golden_params(const io::Checkpoint& file, const nlohmann::json& config,
                                            const std::string& path, const translate::Component& component) {
  translate::MemorySource src(path);
  for (const std::string& n : file.names())
    if (!translate::is_golden_io_key(n)) src.add(n, file.get(n));
  // Parameters the file describes instead of storing (a head dim of 128, the ByT5 mapper: megabytes).
  if (auto it = file.metadata().find("synthetic_params"); it != file.metadata().end())
    for (const auto& [n, t] : nn::synthetic_from_description(it->second, path)) {
      VIDAX_CHECK(!src.find(n), path << ": parameter '" << n << "' is both stored and synthetic");
      src.add(n, t);
    }
  return translate::load(src, component, config);
}

DiTInputs golden_inputs(const io::Checkpoint& file, const DiTConfig& cfg, const std::string& path) {
  for (const char* name : {"input.x", "input.t", "input.text_states", "input.text_mask", "input.text_states_2",
                           "input.freqs_cos", "input.freqs_sin"})
    VIDAX_CHECK(file.contains(name), path << ": hunyuan.dit golden file has no '" << name << "'");
  VIDAX_CHECK(!cfg.guidance_embed || file.contains("input.guidance"),
              path << ": a guidance_embed model's golden file needs 'input.guidance' (the scale * 1000 it embeds)");
  DiTInputs in;
  in.x = file.get("input.x");
  in.t = file.get("input.t").to_f64_vector();
  in.text_states = file.get("input.text_states");
  in.text_mask = file.get("input.text_mask");
  in.text_states_2 = file.get("input.text_states_2");
  in.freqs_cos = file.get("input.freqs_cos");
  in.freqs_sin = file.get("input.freqs_sin");
  if (cfg.guidance_embed) in.guidance = file.get("input.guidance").to_f64_vector();
  return in;
}

std::map<std::string, Tensor> run_dit_golden(const io::Checkpoint& file, const nlohmann::json& config,
                                             const std::string& precision, const std::string& path,
                                             const std::string& pjrt_plugin) {
  const DiTConfig cfg = DiTConfig::from_json(config);
  // Either layout, strictly: every parameter filled, every key used, shapes checked.
  const HunyuanDiT model =
      HunyuanDiT::from_weights(cfg, golden_params(file, config, path, dit_component()), compute_of(precision), path);
  const DiTInputs in = golden_inputs(file, cfg, path);

  Taps taps;
  std::map<std::string, Tensor> out;
  if (!pjrt_plugin.empty()) {
    // One recorded program: the latent and the text states are Meta inputs bound to the file's
    // values; what the forward reads on the host (the mask, the rope tables, the timestep
    // sinusoids and the embeddings computed from them alone) enters the program as constants.
    std::vector<std::pair<Tensor, Tensor>> bind;
    auto meta = [&bind](const Tensor& h) {
      bind.emplace_back(Tensor::empty(h.shape(), h.dtype(), Device::Meta), h);
      return bind.back().first;
    };
    DiTInputs recorded = in;
    recorded.x = meta(in.x);
    recorded.text_states = meta(in.text_states);
    recorded.text_states_2 = meta(in.text_states_2);
    Trace trace;
    Tensor y;
    {
      RecordingScope rec(trace);
      y = model.forward(recorded, &taps);
    }
    std::vector<Tensor> outs{y};
    std::vector<std::string> names{""};
    for (const auto& [name, tensor] : taps)
      if (tensor.device() == Device::Meta) outs.push_back(tensor), names.push_back(name);
    const std::vector<Tensor> got = pjrt::Session::get(pjrt_plugin).run(trace, outs, bind);
    out["output"] = got[0];
    for (size_t i = 1; i < got.size(); ++i) taps[names[i]] = got[i];
  } else {
    out["output"] = model.forward(in, &taps);
  }
  for (auto& [name, tensor] : taps)
    out["inter." + (cfg.layout == DiTLayout::Diffusers ? diffusers_tap(name) : name)] = tensor;
  return out;
}

void register_parity_kinds() {
  parity::register_kind("hunyuan.dit", [](const parity::Golden& g, const parity::Options& opt) {
    return run_dit_golden(g.file, g.config, opt.precision, g.path, opt.device == "pjrt" ? opt.pjrt_plugin : "");
  }, /*takes_loras=*/false, /*takes_quantize=*/false, /*takes_pjrt=*/true);
}

}  // namespace vidax::hunyuan
