// Guidance strategies the denoise loop calls (generate.h): how many denoiser
// passes a step needs and how their outputs combine.
//   ClassifierFree  v = v_uncond + s * (v_cond - v_uncond) (Wan). At s = 1 that
//                   is v_cond, so the unconditional pass is skipped (as diffusers
//                   and stable-diffusion.cpp do): one forward per step. Optionally
//                   only on a step range (truncated CFG); outside it, v_cond.
//   Embedded        one pass; the scale is an input of the denoiser
//                   (HunyuanVideo's guidance embedding, distilled LTX). With a
//                   classifier-free scale too (cfg_scale > 1: HunyuanVideo's
//                   --cfg-scale), both passes take the embedded scale and combine
//                   as ClassifierFree at cfg_scale.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor.h"

namespace vidax::pipeline {

enum class GuidanceKind { ClassifierFree, Embedded };
const char* guidance_kind_name(GuidanceKind k);  // "classifier-free" | "embedded"

struct GuidanceOptions {
  double scale = 5.0;
  // Classifier-free only: CFG runs on steps [cfg_from_step, cfg_to_step) (0-based);
  // cfg_to_step < 0 = to the end. Outside the range a step makes one pass.
  int64_t cfg_from_step = 0;
  int64_t cfg_to_step = -1;
  // Embedded only: a classifier-free scale on top of the embedded one (1 = none: one pass).
  double cfg_scale = 1.0;
};

class Guidance {
 public:
  virtual ~Guidance() = default;
  virtual GuidanceKind kind() const = 0;
  // Whether step `step` (0-based) of `total` runs the unconditional pass.
  virtual bool needs_uncond(int64_t step, int64_t total) const = 0;
  // The guided prediction; `uncond` is undefined when needs_uncond was false.
  virtual Tensor combine(const Tensor& cond, const Tensor& uncond, int64_t step, int64_t total) const = 0;
  // The scale the denoiser takes as an input (Embedded), else 0.
  virtual double embedded_scale() const { return 0; }
};

// Throws on a non-finite scale or an empty/negative step range.
std::unique_ptr<Guidance> make_guidance(GuidanceKind kind, const GuidanceOptions& opt);

}  // namespace vidax::pipeline
