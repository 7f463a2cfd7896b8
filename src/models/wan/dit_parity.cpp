#include "models/wan/dit_parity.h"

#include <array>
#include <optional>
#include <utility>

#include "backend/ops.h"
#include "models/wan/dit.h"
#include "nn/synthetic_init.h"
#include "translate/component.h"
#include "translate/inspect.h"
#include "translate/source.h"
#include "translate/wan.h"

namespace vidax::wan {

namespace {

// Engine tap name -> diffusers module path (for inter.* of a diffusers golden).
const std::pair<const char*, const char*> kDiffusersTaps[] = {
    {"time_embedding", "condition_embedder.time_embedder"},
    {"time_projection", "condition_embedder.time_proj"},
    {"text_embedding", "condition_embedder.text_embedder"},
    {"head", "proj_out"},
};

std::map<std::string, Tensor> golden_params(const io::Checkpoint& file, const std::string& path) {
  std::map<std::string, Tensor> out;
  for (const std::string& n : file.names())
    if (!translate::is_golden_io_key(n)) out[n] = file.get(n);
  const auto& meta = file.metadata();
  auto it = meta.find("synthetic_params");
  if (it == meta.end()) return out;
  nlohmann::json sp;
  try {
    sp = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw Error(msg() << path << ": __metadata__.synthetic_params is not JSON: " << e.what());
  }
  VIDAX_CHECK(sp.value("generator", "") == "splitmix64_uniform_v1",
              path << ": unknown synthetic parameter generator " << sp.value("generator", "(none)"));
  const uint64_t seed = sp.at("seed").get<uint64_t>();
  for (const auto& [name, d] : sp.at("tensors").items()) {
    VIDAX_CHECK(!out.count(name), path << ": parameter '" << name << "' is both stored and synthetic");
    out[name] = nn::synthetic_uniform(seed, name, d.at("shape").get<Shape>(), d.at("bound").get<double>(),
                                      d.value("offset", 0.0));
  }
  return out;
}

}  // namespace

std::map<std::string, Tensor> run_dit_golden(const io::Checkpoint& file, const nlohmann::json& config,
                                             const std::string& precision, const std::string& path) {
  const DiTConfig cfg = DiTConfig::from_json(config);
  // The golden's parameters (stored, or synthetic) through the translator: either layout,
  // strict (every parameter filled, every key used, shapes checked).
  translate::MemorySource src(path);
  for (const auto& [name, t] : golden_params(file, path)) src.add(name, t);
  // The model must use every parameter the translator produced.
  const WanDiT model = WanDiT::from_weights(cfg, translate::load(src, translate::wan::dit_component(), config),
                                            parse_precision(precision), path);

  for (const char* name : {"input.x", "input.t", "input.context"})
    VIDAX_CHECK(file.contains(name), path << ": wan.dit golden file has no '" << name << "'");
  const Tensor x = file.get("input.x");
  const Tensor ctx = file.get("input.context");
  const std::vector<double> t = file.get("input.t").to_f64_vector();

  Taps taps;
  const bool image = file.contains("input.clip_fea") || file.contains("input.y");
  VIDAX_CHECK(image == cfg.has_image_input(), path << ": a " << cfg.model_type << " golden file "
                                                   << (image ? "with" : "without") << " input.clip_fea / input.y");
  const TextContext text = image ? model.encode_context(ctx, file.get("input.clip_fea"), file.get("input.y"), &taps)
                                 : model.encode_context(ctx, &taps);
  std::map<std::string, Tensor> out;
  out["output"] = model.forward(x, t, text, &taps);

  // patch_embedding is compared in the Conv3d's layout [B, dim, F', H', W'].
  if (auto it = taps.find("patch_embedding"); it != taps.end()) {
    const int64_t n = x.dim();  // x [.., C, F, H, W] (without y: only its grid matters here)
    const int64_t Fp = x.size(n - 3) / cfg.patch_size[0], Hp = x.size(n - 2) / cfg.patch_size[1],
                  Wp = x.size(n - 1) / cfg.patch_size[2];
    const Tensor tok = it->second;
    it->second = ops::copy(tok.view({tok.size(0), Fp, Hp, Wp, cfg.dim}).permute({0, 4, 1, 2, 3}));
  }
  for (auto& [name, tensor] : taps) {
    std::string golden_name = name;
    if (cfg.layout == DiTLayout::Diffusers)
      for (const auto& [e, dn] : kDiffusersTaps)
        if (name == e) golden_name = dn;
    out["inter." + golden_name] = tensor;
  }
  return out;
}

}  // namespace vidax::wan
