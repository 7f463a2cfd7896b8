// The LTX-2 multimodal guider and the X0 conversion (guidance.h).
#include "models/ltx2/guidance.h"

#include <algorithm>
#include <cmath>

#include "backend/ops.h"
#include "core/error.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

namespace {

// Python's math.isclose(a, b) with its defaults (rel_tol 1e-9, abs_tol 0).
bool isclose(double a, double b) {
  if (a == b) return true;
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

// torch's Tensor.std() (unbiased) of every value, rounded to fp32 as the 0-dim result is.
float std_of(const Tensor& t) {
  const std::vector<float> v = t.to_f32_vector();
  VIDAX_CHECK(v.size() >= 2, "LTX-2 guider: rescale needs at least two values, found " << t.str());
  double mean = 0;
  for (float x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (float x : v) ss += (x - mean) * (x - mean);
  return static_cast<float>(std::sqrt(ss / static_cast<double>(v.size() - 1)));
}

}  // namespace

GuiderParams GuiderParams::from_json(const nlohmann::json& j) {
  VIDAX_CHECK(j.is_object(),
              "LTX-2 guider params: expected a JSON object (MultiModalGuiderParams), found " << j.dump());
  static const std::vector<std::string> known{"cfg_scale",     "stg_scale",      "stg_blocks",
                                              "rescale_scale", "modality_scale", "skip_step"};
  for (const auto& [key, v] : j.items())
    VIDAX_CHECK(std::find(known.begin(), known.end(), key) != known.end(),
                "LTX-2 guider params: unknown field '"
                    << key
                    << "' (MultiModalGuiderParams: cfg_scale, stg_scale, stg_blocks, "
                       "rescale_scale, modality_scale, skip_step)");
  GuiderParams p;
  p.cfg_scale = translate::value_or(j, "cfg_scale", p.cfg_scale);
  p.stg_scale = translate::value_or(j, "stg_scale", p.stg_scale);
  p.rescale_scale = translate::value_or(j, "rescale_scale", p.rescale_scale);
  p.modality_scale = translate::value_or(j, "modality_scale", p.modality_scale);
  p.skip_step = translate::value_or(j, "skip_step", p.skip_step);
  if (j.contains("stg_blocks")) {
    if (j.at("stg_blocks").is_null())
      p.stg_blocks = std::nullopt;
    else
      p.stg_blocks = translate::strict_get<std::vector<int64_t>>(j.at("stg_blocks"), "stg_blocks");
  }
  VIDAX_CHECK(p.skip_step >= 0, "LTX-2 guider params: skip_step must be >= 0, found " << p.skip_step);
  if (p.stg_blocks)
    for (int64_t b : *p.stg_blocks)
      VIDAX_CHECK(b >= 0, "LTX-2 guider params: stg_blocks holds a negative block index " << b);
  return p;
}

nlohmann::json GuiderParams::to_json() const {
  nlohmann::json j{{"cfg_scale", cfg_scale},
                   {"stg_scale", stg_scale},
                   {"rescale_scale", rescale_scale},
                   {"modality_scale", modality_scale},
                   {"skip_step", skip_step}};
  j["stg_blocks"] = stg_blocks ? nlohmann::json(*stg_blocks) : nlohmann::json(nullptr);
  return j;
}

bool GuiderParams::do_unconditional() const { return !isclose(cfg_scale, 1.0); }
bool GuiderParams::do_perturbed() const { return !isclose(stg_scale, 0.0); }
bool GuiderParams::do_isolated_modality() const { return !isclose(modality_scale, 1.0); }

bool GuiderParams::should_skip_step(int64_t step) const {
  if (skip_step == 0) return false;
  return step % (skip_step + 1) != 0;
}

bool GuiderParams::perturbs_block(int64_t block) const {
  if (!stg_blocks) return true;
  return std::find(stg_blocks->begin(), stg_blocks->end(), block) != stg_blocks->end();
}

std::vector<Pass> guidance_passes(const GuiderParams& video, const GuiderParams& audio) {
  std::vector<Pass> passes{Pass::Cond};
  if (video.do_unconditional() || audio.do_unconditional()) passes.push_back(Pass::Uncond);
  if (video.do_perturbed() || audio.do_perturbed()) passes.push_back(Pass::Perturbed);
  if (video.do_isolated_modality() || audio.do_isolated_modality()) passes.push_back(Pass::Modality);
  return passes;
}

Tensor perturbation_masks(const std::vector<Pass>& passes, const GuiderParams& video, const GuiderParams& audio,
                          int64_t num_layers, int64_t samples) {
  const int64_t n = static_cast<int64_t>(passes.size()) * samples;
  std::vector<float> keep(static_cast<size_t>(4 * num_layers * n), 1.0f);
  auto at = [&](int64_t type, int64_t block, int64_t sample) -> float& {
    return keep[static_cast<size_t>((type * num_layers + block) * n + sample)];
  };
  for (size_t p = 0; p < passes.size(); ++p)
    for (int64_t s = 0; s < samples; ++s) {
      const int64_t col = static_cast<int64_t>(p) * samples + s;
      for (int64_t b = 0; b < num_layers; ++b) {
        if (passes[p] == Pass::Perturbed) {
          if (video.do_perturbed() && video.perturbs_block(b)) at(0, b, col) = 0.0f;  // SKIP_VIDEO_SELF_ATTN
          if (audio.do_perturbed() && audio.perturbs_block(b)) at(1, b, col) = 0.0f;  // SKIP_AUDIO_SELF_ATTN
        } else if (passes[p] == Pass::Modality) {
          at(2, b, col) = 0.0f;  // SKIP_A2V_CROSS_ATTN
          at(3, b, col) = 0.0f;  // SKIP_V2A_CROSS_ATTN
        }
      }
    }
  return Tensor::from_f32(keep, {4, num_layers, n});
}

Tensor guide(const GuiderParams& p, const Tensor& cond, const Tensor* uncond, const Tensor* perturbed,
             const Tensor* modality) {
  VIDAX_CHECK(cond.dtype() == DType::F32, "LTX-2 guider: expected F32 predictions, found " << cond.str());
  for (const Tensor* t : {uncond, perturbed, modality})
    VIDAX_CHECK(!t || (t->shape() == cond.shape() && t->dtype() == DType::F32),
                "LTX-2 guider: a pass's prediction " << t->str() << " does not match cond " << cond.str());
  // (cond - 0.0) where the pass did not run, as calculate() receives the float 0.0.
  const auto term = [&cond](const Tensor* other, double coeff) {
    return ops::scale(other ? ops::sub(cond, *other) : cond, coeff);
  };
  Tensor pred = ops::add(cond, term(uncond, p.cfg_scale - 1.0));
  pred = ops::add(pred, term(perturbed, p.stg_scale));
  pred = ops::add(pred, term(modality, p.modality_scale - 1.0));
  if (p.rescale_scale != 0.0) {
    float factor = std_of(cond) / std_of(pred);
    factor = static_cast<float>(p.rescale_scale) * factor + static_cast<float>(1.0 - p.rescale_scale);
    pred = ops::scale(pred, factor);
  }
  return pred;
}

Tensor to_denoised(const Tensor& sample, const Tensor& velocity, float sigma) {
  VIDAX_CHECK(sample.shape() == velocity.shape(),
              "LTX-2 to_denoised: sample " << sample.str() << " and velocity " << velocity.str() << " differ in shape");
  const Tensor x = sample.dtype() == DType::F32 ? sample : ops::cast(sample, DType::F32);
  const Tensor v = velocity.dtype() == DType::F32 ? velocity : ops::cast(velocity, DType::F32);
  return ops::sub(x, ops::scale(v, sigma));
}

}  // namespace vidax::ltx2
