// LTX2Scheduler.execute restated in the reference's dtype sequence (each
// float32 operation rounded once, no contraction into FMAs).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "sched/ltx2_schedule.h"

#include <cmath>

#include "core/error.h"
#include "sched/schedule.h"

namespace vidax::sched {

std::vector<float> ltx2_sigmas(const Ltx2ScheduleOptions& opt) {
  VIDAX_CHECK(opt.steps >= 1, "ltx2 schedule: steps must be >= 1, got " << opt.steps);
  VIDAX_CHECK(opt.tokens >= 1, "ltx2 schedule: token count must be >= 1, got " << opt.tokens);
  VIDAX_CHECK(std::isfinite(opt.max_shift) && std::isfinite(opt.base_shift),
              "ltx2 schedule: max_shift / base_shift must be finite");
  VIDAX_CHECK(!opt.stretch || (opt.terminal >= 0.0 && opt.terminal < 1.0),
              "ltx2 schedule: terminal must be in [0, 1), got " << opt.terminal);
  VIDAX_CHECK(!opt.stretch || opt.steps >= 2,
              "ltx2 schedule: stretch needs steps >= 2 (one step has no sigma below 1 to stretch)");
  constexpr double kBaseAnchor = 1024, kMaxAnchor = 4096;
  const double m = (opt.max_shift - opt.base_shift) / (kMaxAnchor - kBaseAnchor);
  const double b = opt.base_shift - m * kBaseAnchor;
  const double mu = static_cast<double>(opt.tokens) * m + b;
  const float e = static_cast<float>(std::exp(mu));  // the Python float, cast by the tensor ops
  VIDAX_CHECK(std::isfinite(e), "ltx2 schedule: exp(mu) overflows float32 (mu " << mu << ")");

  std::vector<float> s = torch_linspace_f32(1.0f, 0.0f, opt.steps + 1);
  for (float& v : s) {
    if (v == 0.0f) continue;
    const float u = (1.0f / v) - 1.0f;    // sigmas.reciprocal() * 1 - 1 (pow 1 is a copy)
    v = (1.0f / (e + u)) * e;             // e / t is t.reciprocal() * e in torch
  }
  if (opt.stretch) {
    float last = 0.0f;  // the last nonzero sigma
    for (float v : s)
      if (v != 0.0f) last = v;
    const float scale = (1.0f - last) / static_cast<float>(1.0 - opt.terminal);
    for (float& v : s)
      if (v != 0.0f) v = 1.0f - (1.0f - v) / scale;
  }
  return s;
}

namespace {
struct Table {
  const char* name;
  std::vector<float> sigmas;
};
// ltx_pipelines/utils/constants.py: DISTILLED_SIGMA_VALUES, STAGE_2_DISTILLED_SIGMA_VALUES,
// TDP_DISTILLED_SIGMAS (Python floats made float32 by torch.tensor).
const std::vector<Table>& tables() {
  static const std::vector<Table> t = {
      {"distilled", {1.0f, 0.99375f, 0.9875f, 0.98125f, 0.975f, 0.909375f, 0.725f, 0.421875f, 0.0f}},
      {"distilled_stage2", {0.909375f, 0.725f, 0.421875f, 0.0f}},
      {"distilled_tdp_stage2", {0.625f, 0.4f, 0.0f}},
  };
  return t;
}
}  // namespace

std::vector<float> ltx2_distilled_sigmas(const std::string& name) {
  std::string known;
  for (const auto& t : tables()) {
    if (name == t.name) return t.sigmas;
    known += std::string(known.empty() ? "" : ", ") + t.name;
  }
  throw Error((msg() << "ltx2 schedule: unknown distilled sigma table '" << name << "' (known: " << known << ")").str());
}

}  // namespace vidax::sched
