#include "models/wan/dit_parity.h"
#include "models/wan/lora_runtime.h"

#include <array>
#include <cstdio>
#include <optional>
#include <utility>

#include "backend/ops.h"
#include "io/quant_policy.h"
#include "backend/pjrt/session.h"
#include "backend/recording.h"
#include "models/wan/dit.h"
#include "nn/synthetic_init.h"
#include "translate/component.h"
#include "translate/inspect.h"
#include "translate/source.h"
#include "models/wan/checkpoint_keys.h"

namespace vidax::wan {

namespace {

// Engine tap name -> diffusers module path (for inter.* of a diffusers golden).
const std::pair<const char*, const char*> kDiffusersTaps[] = {
    {"time_embedding", "condition_embedder.time_embedder"},
    {"time_projection", "condition_embedder.time_proj"},
    {"text_embedding", "condition_embedder.text_embedder"},
    {"head", "proj_out"},
};

std::map<std::string, Tensor> golden_params(const io::Checkpoint& file, const std::string& path,
                                            const io::QuantTarget& quantize = {}) {
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
    // --quantize: synthetic parameters take the type as the stored ones do (parity::run).
    if (!quantize.none() && quantize.decision(name, out[name].shape(), out[name].dtype()).quantize)
      out[name] = quantize.apply(out[name]);
  }
  return out;
}

// The batch entries of one cfg rank: [r*B/2, (r+1)*B/2) when the cfg axis is 2 and the
// file is a T2V batch of even size, else the whole batch (replicated on both cfg ranks).
struct BatchSplit {
  dist::Communicator* cfg = nullptr;  // set when split
  int64_t begin = 0, end = 0;         // this rank's batch entries, when split
  Tensor gather(const Tensor& t) const { return cfg ? cfg->all_gather(t, 0) : t; }
  // A per-sample input of the file (VACE's vace_context) cut as x was.
  Tensor local(const Tensor& t) const { return cfg ? ops::copy(t.slice(0, begin, end)) : t; }
};

BatchSplit split_batch(const dist::Mesh* mesh, const DiTConfig& cfg, Tensor& x, Tensor& ctx, std::vector<double>& t) {
  if (!mesh || mesh->shape().cfg == 1 || cfg.has_image_input() || x.dim() != 5) return {};
  const int64_t B = x.size(0), n = mesh->shape().cfg, r = mesh->cfg_rank();
  if (B % n != 0 || ctx.dim() != 3 || static_cast<int64_t>(t.size()) != B) return {};  // per-token t: whole batch
  const int64_t b = B / n;
  x = ops::copy(x.slice(0, r * b, (r + 1) * b));
  ctx = ops::copy(ctx.slice(0, r * b, (r + 1) * b));
  t = std::vector<double>(t.begin() + r * b, t.begin() + (r + 1) * b);
  return {&mesh->cfg(), r * b, (r + 1) * b};
}

}  // namespace

std::map<std::string, Tensor> run_dit_golden(const io::Checkpoint& file, const nlohmann::json& config,
                                             const std::string& precision, const std::string& path,
                                             const dist::Mesh* mesh, const std::vector<translate::LoraSpec>& loras,
                                             const translate::LoraOptions& lora_opt, const io::QuantTarget& quantize,
                                             const std::string& pjrt_plugin) {
  const DiTConfig cfg = DiTConfig::from_json(config);
  // The golden's parameters (stored, or synthetic) through the translator: either layout,
  // strict (every parameter filled, every key used, shapes checked).
  translate::MemorySource src(path);
  for (const auto& [name, t] : golden_params(file, path, quantize)) src.add(name, t);
  auto params = translate::load(src, translate::wan::dit_component(), config);
  translate::LoraDeltas runtime;  // --lora-mode runtime / auto: kept beside the weights
  translate::apply_loras(params, loras, translate::wan::dit_component(), config, lora_opt,
                         [](const std::string& m) { std::fprintf(stderr, "warning: %s\n", m.c_str()); }, &runtime);
  VIDAX_CHECK(runtime.empty() || pjrt_plugin.empty(),
              path << ": --device pjrt with runtime LoRAs: the lowered step has no LoRA branch; use --lora-mode merge");
  // The model must use every parameter the translator produced (and every runtime LoRA).
  const WanDiT model =
      WanDiT::from_weights(cfg, std::move(params), parse_precision(precision), path, mesh, to_adapters(std::move(runtime)));

  for (const char* name : {"input.x", "input.t", "input.context"})
    VIDAX_CHECK(file.contains(name), path << ": wan.dit golden file has no '" << name << "'");
  Tensor x = file.get("input.x");
  Tensor ctx = file.get("input.context");
  // [B] (one timestep per sample) or [B, L] (Wan 2.2: one per token), flattened in token order.
  std::vector<double> t = file.get("input.t").to_f64_vector();
  // Wan 2.2's WanModel expands a [B] t per token (t.expand(B, seq_len)): a file made by it records
  // its time embedding per token ([B, L, dim]), and is run per token to give the same tensors.
  if (file.contains("inter.time_embedding") && file.get("inter.time_embedding").dim() == 3 &&
      static_cast<int64_t>(t.size()) == (x.dim() == 5 ? x.size(0) : 1)) {
    const int64_t L = file.get("inter.time_embedding").size(1);
    std::vector<double> per_token;
    for (double v : t) per_token.insert(per_token.end(), static_cast<size_t>(L), v);
    t = std::move(per_token);
  }
  // CFG parallelism on a batch: this cfg rank's half of the batch entries (dit_parallel.h).
  const BatchSplit split = split_batch(mesh, cfg, x, ctx, t);

  Taps taps;
  const bool image = file.contains("input.clip_fea") || file.contains("input.y");
  VIDAX_CHECK(image == cfg.has_image_input(), path << ": a " << cfg.model_type << " golden file "
                                                   << (image ? "with" : "without") << " input.clip_fea / input.y");
  // VACE: input.vace_context (and optionally input.vace_context_scale [1], default 1.0 as the reference).
  VIDAX_CHECK(file.contains("input.vace_context") == cfg.is_vace(),
              path << ": a " << cfg.model_type << " golden file " << (cfg.is_vace() ? "without" : "with")
                   << " input.vace_context");
  VIDAX_CHECK(cfg.is_vace() || !file.contains("input.vace_context_scale"),
              path << ": input.vace_context_scale in a " << cfg.model_type << " golden file");
  double vace_scale = 1.0;
  if (file.contains("input.vace_context_scale")) {
    const std::vector<double> v = file.get("input.vace_context_scale").to_f64_vector();
    VIDAX_CHECK(v.size() == 1, path << ": input.vace_context_scale must hold one value, has " << v.size());
    vace_scale = v[0];
  }
  // The prompt context, joined to the vace context for a VACE model.
  auto encode = [&](const Tensor& c, auto&& input) {
    TextContext text = image ? model.encode_context(c, input(file.get("input.clip_fea")), input(file.get("input.y")), &taps)
                             : model.encode_context(c, &taps);
    if (cfg.is_vace()) {
      const Tensor v = file.get("input.vace_context");  // [B, C, F, H, W] cut as x under cfg=2, or [C, F, H, W]
      text = with_vace(text, model.encode_vace(input(v.dim() == 5 ? split.local(v) : v), vace_scale, &taps));
    }
    return text;
  };
  std::map<std::string, Tensor> out;
  if (!pjrt_plugin.empty()) {
    VIDAX_CHECK(!mesh, path << ": --device pjrt with --mesh: the PJRT path shards inside one plugin (docs/pjrt.md)");
    // One recorded program: the inputs are Meta tensors bound to the file's values.
    std::vector<std::pair<Tensor, Tensor>> bind;
    auto meta = [&](const Tensor& h) {
      bind.emplace_back(Tensor::empty(h.shape(), h.dtype(), Device::Meta), h);
      return bind.back().first;
    };
    const Tensor mx = meta(x), mctx = meta(ctx);
    Trace trace;
    Tensor y;
    {
      RecordingScope rec(trace);
      const TextContext text = encode(mctx, meta);
      y = model.forward(mx, t, text, &taps);
    }
    std::vector<Tensor> outs{y};
    std::vector<std::string> names{""};
    for (const auto& [name, tensor] : taps)
      if (tensor.device() == Device::Meta) outs.push_back(tensor), names.push_back(name);
    pjrt::Session& session = pjrt::Session::get(pjrt_plugin);
    const std::vector<Tensor> got = session.run(trace, outs, bind);
    out["output"] = got[0];
    for (size_t i = 1; i < got.size(); ++i) taps[names[i]] = got[i];
  } else {
    const TextContext text = encode(ctx, [](const Tensor& t) { return t; });
    out["output"] = split.gather(model.forward(x, t, text, &taps));
    for (auto& [name, tensor] : taps) tensor = split.gather(tensor);
  }

  // patch_embedding (and vace_patch_embedding) are compared in the Conv3d's layout [B, dim, F', H', W'].
  for (const char* conv : {"patch_embedding", "vace_patch_embedding"}) {
    auto it = taps.find(conv);
    if (it == taps.end()) continue;
    const int64_t n = x.dim();  // x [.., C, F, H, W] (without y: only its grid matters here)
    const int64_t Fp = x.size(n - 3) / cfg.patch_size[0], Hp = x.size(n - 2) / cfg.patch_size[1],
                  Wp = x.size(n - 1) / cfg.patch_size[2];
    const Tensor tok = it->second;
    it->second = ops::copy(tok.view({tok.size(0), Fp, Hp, Wp, cfg.dim}).permute({0, 4, 1, 2, 3}));
  }
  for (auto& [name, tensor] : taps) {
    std::string golden_name = name;
    if (cfg.layout == DiTLayout::Diffusers) {
      for (const auto& [e, dn] : kDiffusersTaps)
        if (name == e) golden_name = dn;
      // WanVACETransformer3DModel's hint is vace_blocks.<j>.proj_out (after_proj in VaceWanModel).
      const std::string after = ".after_proj";
      if (name.rfind("vace_blocks.", 0) == 0 && name.size() > after.size() &&
          name.compare(name.size() - after.size(), after.size(), after) == 0)
        golden_name = name.substr(0, name.size() - after.size()) + ".proj_out";
    }
    out["inter." + golden_name] = tensor;
  }
  return out;
}

}  // namespace vidax::wan
