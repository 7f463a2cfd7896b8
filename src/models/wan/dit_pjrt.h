// The Wan DiT's denoiser step through a PJRT plugin (`--device pjrt`, docs/pjrt.md): one step
// (forward with one timestep per sample) is recorded once per (DiT, prompt conditioning, latent
// shape) with the latent and the timestep's sinusoid as the program's inputs, lowered to
// StableHLO and compiled once (the compile cache on disk serves a second process); the weights
// and the prompt's cross-attention K/V are uploaded once and stay resident. Every later step
// uploads only the latent and the sinusoid, runs, and reads the output back.
//
// A compile (or cache load) after the first one for a latent shape is a recompilation: it is
// counted and warned about (it means the recorded program changed between steps).
// encode_context runs on the CPU backend (its results are the resident inputs); the text
// encoder and the VAE are not lowered yet (the pipeline runs them on the CPU).
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/pjrt/session.h"
#include "models/wan/dit.h"

namespace vidax::wan {

class PjrtDiT {
 public:
  // plugin_path: the PJRT plugin (pjrt::Plugin::resolve_path); warn: how a recompilation is said.
  // lower: the lowering's options (dot precision HIGHEST by default, as validation needs).
  PjrtDiT(const std::string& plugin_path, std::function<void(const std::string&)> warn = {},
          pjrt::LowerOptions lower = {});
  ~PjrtDiT();
  PjrtDiT(const PjrtDiT&) = delete;
  PjrtDiT& operator=(const PjrtDiT&) = delete;

  // One step: x [C, F, H, W] or [B, C, F, H, W] (F32, on the CPU), t one timestep per sample
  // (size B), text from dit->encode_context. The same values as dit->forward(x, t, text) up to
  // the plugin's arithmetic (fp32 dots at HIGHEST precision). dit is held only weakly: a DiT
  // that is freed and loaded again is recorded again.
  Tensor forward(const std::shared_ptr<const WanDiT>& dit, const Tensor& x, const std::vector<double>& t,
                 const TextContext& text);

  const pjrt::PluginInfo& info() const { return session_->client().info(); }
  const pjrt::SessionStats& session_stats() const { return session_->stats(); }
  int64_t recompilations() const { return recompilations_; }
  int64_t recordings() const { return recordings_; }
  double record_s() const { return record_s_; }
  // {plugin, platform, api, stablehlo, compiles, cache_hits, recompilations, ...} for a run's record.
  nlohmann::json stats_json() const;
  // "PJRT (cpu, PJRT API 0.81, StableHLO 1.13.3): 1 program compiled in 2.1 s, ..." for a stage message.
  std::string summary() const;

 private:
  struct Recorded;
  pjrt::Session* session_;
  std::function<void(const std::string&)> warn_;
  pjrt::LowerOptions lower_;
  std::vector<std::unique_ptr<Recorded>> recorded_;   // the most recent few, newest last
  std::vector<std::pair<Shape, int64_t>> loads_per_shape_;  // compiles + cache loads per latent shape
  int64_t recompilations_ = 0, recordings_ = 0;
  double record_s_ = 0;
};

}  // namespace vidax::wan
