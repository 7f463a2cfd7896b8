// Loading a Wan 2.1 T2V checkpoint into the parts the generic pipeline runs
// (pipeline/parts.h): the UMT5 encoder + tokenizer, the DiT and the VAE
// decoder, each through the translator (original or diffusers layout; strict:
// every key consumed, every parameter filled).
#pragma once
#include <string>

#include "models/wan/dit.h"
#include "models/wan/presets.h"
#include "models/wan/weights.h"
#include "pipeline/family.h"

namespace vidax::wan {

struct LoadedT2V {
  Preset preset;  // with the architecture actually loaded (configs from the weights)
  WeightFiles files;
  std::string precision;
  pipeline::Parts parts;  // owns the loaded models
};

// The geometry of a Wan DiT + VAE pair from their configs (reference init args).
pipeline::Geometry geometry_of(const nlohmann::json& dit, const nlohmann::json& vae);

// The preset for a weights directory: `model` when given (checked against the
// weights' config), else detected; throws naming the known models otherwise.
const Preset& resolve_preset(const std::string& weights_dir, const std::string& model);
// The same with parts as single files (weights_dir may be "" when they name every part).
const Preset& resolve_preset(const std::string& weights_dir, const std::string& model,
                             const pipeline::PartFiles& files);

LoadedT2V load_t2v(const pipeline::LoadOptions& opt);

// The DiT of `path` with its blocks streamed (--offload): the rest materialized now, each block
// from the mapped file per use (dit.h StreamedBlocks). Strict as a resident load.
WanDiT load_streamed_dit(const std::string& path, const nlohmann::json& config, const DiTConfig& cfg,
                         Precision precision, const dist::Mesh* mesh = nullptr, bool prefetch = true);

}  // namespace vidax::wan
