// The runners of parity kinds sched.ltx2 (LTX2Scheduler.execute sigmas) and
// sched.ltx2_euler (EulerDiffusionStep over those sigmas), docs/sampling.md.
#include <string>

#include "parity/parity.h"
#include "sched/ltx2_schedule.h"
#include "sched/parity_runners.h"

namespace vidax::sched {
namespace {

Ltx2ScheduleOptions ltx2_options_from_config(const nlohmann::json& c) {
  static const char* kKnown[] = {"steps", "tokens", "default_number_of_tokens", "max_shift", "base_shift",
                                 "stretch", "terminal"};
  for (const auto& [key, _] : c.items()) {
    bool ok = false;
    for (const char* k : kKnown) ok = ok || key == k;
    VIDAX_CHECK(ok, "sched.ltx2: unknown config key '" << key << "'");
  }
  VIDAX_CHECK(c.contains("steps"), "sched.ltx2: config lacks steps");
  Ltx2ScheduleOptions o;
  o.steps = c.at("steps").get<int64_t>();
  // execute(): the latent's token count when one is passed, else default_number_of_tokens.
  o.tokens = c.contains("tokens") ? c.at("tokens").get<int64_t>() : c.value("default_number_of_tokens", o.tokens);
  o.max_shift = c.value("max_shift", o.max_shift);
  o.base_shift = c.value("base_shift", o.base_shift);
  o.stretch = c.value("stretch", o.stretch);
  o.terminal = c.value("terminal", o.terminal);
  return o;
}

}  // namespace

parity::Produced run_ltx2_schedule(const parity::Golden& g, const parity::Options&) {
  VIDAX_CHECK(g.config.contains("cases") && g.config.at("cases").is_array(), g.path << ": config lacks cases");
  parity::Produced out;
  const auto& cases = g.config.at("cases");
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto s = ltx2_sigmas(ltx2_options_from_config(cases[i]));
    out["output.sigmas." + std::to_string(i)] = Tensor::from_f32(s, {static_cast<int64_t>(s.size())});
  }
  return out;
}

parity::Produced run_ltx2_euler(const parity::Golden& g, const parity::Options&) {
  VIDAX_CHECK(g.config.contains("schedule"), g.path << ": config lacks schedule");
  const auto sigmas = ltx2_sigmas(ltx2_options_from_config(g.config.at("schedule")));
  auto input = [&](const std::string& name) {
    VIDAX_CHECK(g.file.contains("input." + name), g.path << ": lacks input." << name);
    return g.file.get("input." + name).to(DType::F32);
  };
  parity::Produced out;
  out["output.sigmas"] = Tensor::from_f32(sigmas, {static_cast<int64_t>(sigmas.size())});
  Tensor x = input("sample");
  for (int64_t i = 0; i + 1 < static_cast<int64_t>(sigmas.size()); ++i) {
    x = ltx2_euler_step(x, input("denoised." + std::to_string(i)), sigmas, i);
    out["output.sample." + std::to_string(i)] = x;
  }
  return out;
}

}  // namespace vidax::sched
