#include "pipeline/guidance.h"

#include <cmath>

#include "backend/ops.h"
#include "core/error.h"

namespace vidax::pipeline {

const char* guidance_kind_name(GuidanceKind k) {
  return k == GuidanceKind::ClassifierFree ? "classifier-free" : "embedded";
}

namespace {

class ClassifierFree final : public Guidance {
 public:
  explicit ClassifierFree(const GuidanceOptions& o) : o_(o) {}
  GuidanceKind kind() const override { return GuidanceKind::ClassifierFree; }
  bool needs_uncond(int64_t step, int64_t total) const override {
    // s = 1 gives v_cond exactly in real arithmetic: skip the pass (diffusers: do_classifier_free_guidance).
    if (o_.scale == 1.0) return false;
    const int64_t to = o_.cfg_to_step < 0 ? total : o_.cfg_to_step;
    return step >= o_.cfg_from_step && step < to;
  }
  Tensor combine(const Tensor& cond, const Tensor& uncond, int64_t step, int64_t total) const override {
    if (!needs_uncond(step, total)) return cond;
    VIDAX_CHECK(uncond.defined(), "classifier-free guidance: no unconditional prediction at step " << step + 1);
    // noise_pred_uncond + guide_scale * (noise_pred_cond - noise_pred_uncond), in that order (the reference's).
    return ops::add(uncond, ops::scale(ops::sub(cond, uncond), o_.scale));
  }

 private:
  GuidanceOptions o_;
};

// The embedded scale is the denoiser's input on every pass; cfg_scale > 1 adds the unconditional
// pass, combined as classifier-free guidance (pipeline_hunyuan_video.py: guidance_expand on both
// halves of the batch, then noise_pred_uncond + guidance_scale * (noise_pred_text - noise_pred_uncond)).
class Embedded final : public Guidance {
 public:
  explicit Embedded(const GuidanceOptions& o)
      : scale_(o.scale), cfg_({o.cfg_scale, o.cfg_from_step, o.cfg_to_step, 1.0}) {}
  GuidanceKind kind() const override { return GuidanceKind::Embedded; }
  bool needs_uncond(int64_t step, int64_t total) const override { return cfg_.needs_uncond(step, total); }
  Tensor combine(const Tensor& cond, const Tensor& uncond, int64_t step, int64_t total) const override {
    return cfg_.combine(cond, uncond, step, total);
  }
  double embedded_scale() const override { return scale_; }

 private:
  double scale_;
  ClassifierFree cfg_;
};

}  // namespace

std::unique_ptr<Guidance> make_guidance(GuidanceKind kind, const GuidanceOptions& o) {
  VIDAX_CHECK(std::isfinite(o.scale), "--guidance " << o.scale << ": must be a finite number");
  VIDAX_CHECK(o.cfg_from_step >= 0 && (o.cfg_to_step < 0 || o.cfg_to_step > o.cfg_from_step),
              "guidance step range [" << o.cfg_from_step << ", " << o.cfg_to_step << ") is empty or negative");
  VIDAX_CHECK(std::isfinite(o.cfg_scale), "--cfg-scale " << o.cfg_scale << ": must be a finite number");
  VIDAX_CHECK(kind == GuidanceKind::Embedded || o.cfg_scale == 1.0,
              "--cfg-scale " << o.cfg_scale << ": this model is guided by classifier-free guidance alone, whose scale "
                             << "is --guidance (--cfg-scale is the classifier-free scale of models with embedded "
                             << "guidance)");
  if (kind == GuidanceKind::Embedded) return std::make_unique<Embedded>(o);
  return std::make_unique<ClassifierFree>(o);
}

}  // namespace vidax::pipeline
