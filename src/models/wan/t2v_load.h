// Loading a Wan 2.1 T2V checkpoint into the parts the generic pipeline runs
// (pipeline/parts.h): the UMT5 encoder + tokenizer, the DiT and the VAE
// decoder, each through the translator (original or diffusers layout; strict:
// every key consumed, every parameter filled).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/wan/dit.h"
#include "models/wan/presets.h"
#include "models/wan/vae22.h"
#include "models/wan/weights.h"
#include "pipeline/family.h"

namespace vidax::wan {

struct LoadedT2V {
  // Two-expert models: how often each expert was loaded (index as expert_index), for tests and
  // the residency record. Empty for one DiT.
  std::function<std::vector<int>()> expert_loads;
  std::function<std::vector<bool>()> experts_loaded;
  Preset preset;  // with the architecture actually loaded (configs from the weights)
  WeightFiles files;
  std::string precision;
  pipeline::Parts parts;  // owns the loaded models
};

// The geometry of a Wan DiT + VAE pair from their configs (reference init args); vae_version as
// Preset::vae_version ("wan2.1" | "wan2.2").
pipeline::Geometry geometry_of(const nlohmann::json& dit, const nlohmann::json& vae,
                               const std::string& vae_version = "wan2.1");

// Two experts (Preset::experts): the index of the expert that denoises at model timestep t, in the
// order of the reference's guide_scale tuple: 0 = the low-noise expert, 1 = the high-noise one
// (t >= boundary * num_train_timesteps, as Wan2.2 text2video.py's _prepare_model_for_timestep).
size_t expert_index(const Preset::Experts& e, double t);
inline constexpr size_t kLowNoiseExpert = 0, kHighNoiseExpert = 1;

// The preset for a weights directory: `model` when given (checked against the
// weights' config), else detected; throws naming the known models otherwise.
const Preset& resolve_preset(const std::string& weights_dir, const std::string& model);
// The same with parts as single files (weights_dir may be "" when they name every part).
const Preset& resolve_preset(const std::string& weights_dir, const std::string& model,
                             const pipeline::PartFiles& files);

LoadedT2V load_t2v(const pipeline::LoadOptions& opt);

// One part of a checkpoint file through the translator, strictly (every key used, every
// parameter filled, shapes checked): engine name -> tensor; *layout (when given) the layout found.
std::map<std::string, Tensor> translate_part(const std::string& path, const translate::Component& comp,
                                             const nlohmann::json& config, std::string* layout = nullptr);

// The Wan 2.2 VAE of f.vae (original names, or diffusers' AutoencoderKLWan with is_residual, told
// apart by the names; strict): its decoder, and its encoder when `with_encoder`.
std::shared_ptr<Wan22VAE> load_vae22(const WeightFiles& f, const Wan22VAEConfig& cfg, int64_t vae_tile,
                                     bool with_encoder);

// The DiT of `path` with its blocks streamed (--offload): the rest materialized now, each block
// from the mapped file per use (dit.h StreamedBlocks). Strict as a resident load.
WanDiT load_streamed_dit(const std::string& path, const nlohmann::json& config, const DiTConfig& cfg,
                         Precision precision, const dist::Mesh* mesh = nullptr, bool prefetch = true);

}  // namespace vidax::wan
