#include "models/wan/dit_parity.h"

#include <optional>

#include <array>
#include <utility>

#include "backend/ops.h"
#include "models/wan/dit.h"
#include "nn/params.h"
#include "nn/synthetic_init.h"

namespace vidax::wan {

namespace {

// Original -> diffusers prefixes (diffusers' convert_wan_transformer_to_diffusers, inverted).
// Block-local entries apply after "blocks.<i>.". Longest match first.
const std::pair<const char*, const char*> kTopLevelNames[] = {
    {"text_embedding.0.", "condition_embedder.text_embedder.linear_1."},
    {"text_embedding.2.", "condition_embedder.text_embedder.linear_2."},
    {"time_embedding.0.", "condition_embedder.time_embedder.linear_1."},
    {"time_embedding.2.", "condition_embedder.time_embedder.linear_2."},
    {"time_projection.1.", "condition_embedder.time_proj."},
    {"head.modulation", "scale_shift_table"},
    {"head.head.", "proj_out."},
    {"patch_embedding.", "patch_embedding."},
};
const std::pair<const char*, const char*> kBlockNames[] = {
    {"modulation", "scale_shift_table"},
    {"self_attn.q.", "attn1.to_q."},         {"self_attn.k.", "attn1.to_k."},
    {"self_attn.v.", "attn1.to_v."},         {"self_attn.o.", "attn1.to_out.0."},
    {"self_attn.norm_q.", "attn1.norm_q."},  {"self_attn.norm_k.", "attn1.norm_k."},
    {"cross_attn.q.", "attn2.to_q."},        {"cross_attn.k.", "attn2.to_k."},
    {"cross_attn.v.", "attn2.to_v."},        {"cross_attn.o.", "attn2.to_out.0."},
    {"cross_attn.norm_q.", "attn2.norm_q."}, {"cross_attn.norm_k.", "attn2.norm_k."},
    {"norm3.", "norm2."},  // the cross-attention LayerNorm: original norm3 is diffusers norm2
    {"ffn.0.", "ffn.net.0.proj."},           {"ffn.2.", "ffn.net.2."},
};
// Engine tap name -> diffusers module path (for inter.* of a diffusers golden).
const std::pair<const char*, const char*> kDiffusersTaps[] = {
    {"time_embedding", "condition_embedder.time_embedder"},
    {"time_projection", "condition_embedder.time_proj"},
    {"text_embedding", "condition_embedder.text_embedder"},
    {"head", "proj_out"},
};

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

std::map<std::string, Tensor> golden_params(const io::Checkpoint& file, const std::string& path) {
  std::map<std::string, Tensor> out;
  for (const std::string& n : file.names())
    if (!starts_with(n, "input.") && !starts_with(n, "output") && !starts_with(n, "inter.")) out[n] = file.get(n);
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

// Renames with a prefix table, in either direction; names that match nothing are kept
// (and then reported as unused by the strict load).
std::string rename(const std::string& name, bool to_diffusers) {
  auto apply = [to_diffusers](const std::string& s, const auto& table) -> std::optional<std::string> {
    for (const auto& [o, dn] : table) {
      const std::string from = to_diffusers ? o : dn, to = to_diffusers ? dn : o;
      if (starts_with(s, from)) return to + s.substr(from.size());
    }
    return std::nullopt;
  };
  if (starts_with(name, "blocks.")) {
    const size_t dot = name.find('.', 7);
    if (dot == std::string::npos) return name;
    auto r = apply(name.substr(dot + 1), kBlockNames);
    return r ? name.substr(0, dot + 1) + *r : name;
  }
  auto r = apply(name, kTopLevelNames);
  return r ? *r : name;
}

}  // namespace

std::string dit_diffusers_name(const std::string& original) { return rename(original, true); }

std::map<std::string, Tensor> run_dit_golden(const io::Checkpoint& file, const nlohmann::json& config,
                                             const std::string& precision, const std::string& path) {
  const DiTConfig cfg = DiTConfig::from_json(config);
  std::map<std::string, Tensor> tensors = golden_params(file, path);
  std::string origin = path;
  if (cfg.layout == DiTLayout::Diffusers) {
    std::map<std::string, Tensor> renamed;
    for (auto& [name, t] : tensors) renamed[rename(name, false)] = t;
    tensors = std::move(renamed);
    origin += " (diffusers names)";
  }
  nn::ParamSource params = nn::ParamSource::from_map(std::move(tensors), origin);
  const WanDiT model(cfg, params, parse_precision(precision));
  // Strict, like the translator: a golden with parameters the model does not use fails.
  params.expect_all_taken();

  VIDAX_CHECK(!file.contains("input.y") && !file.contains("input.clip_fea"),
              path << ": input.y / input.clip_fea (I2V) are not supported by the T2V DiT");
  for (const char* name : {"input.x", "input.t", "input.context"})
    VIDAX_CHECK(file.contains(name), path << ": wan.dit golden file has no '" << name << "'");
  const Tensor x = file.get("input.x");
  const Tensor ctx = file.get("input.context");
  const std::vector<double> t = file.get("input.t").to_f64_vector();

  Taps taps;
  const TextContext text = model.encode_context(ctx, &taps);
  std::map<std::string, Tensor> out;
  out["output"] = model.forward(x, t, text, &taps);

  // patch_embedding is compared in the Conv3d's layout [B, dim, F', H', W'].
  if (auto it = taps.find("patch_embedding"); it != taps.end()) {
    const auto [Fp, Hp, Wp] = model.patch_grid(x.shape());
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
