// Parity kinds sched.flow_unipc, sched.flow_dpmpp, sched.flow_euler (DESIGN.md
// par. 4): replays the golden's recorded model outputs through the sampler
// and returns output.timesteps, output.sigmas and output.sample.<i>.
#include <string>

#include "parity/parity.h"
#include "sched/parity_kinds.h"
#include "sched/sched_config.h"

namespace vidax::sched {
namespace {

parity::Produced run_flow_sampler(const parity::Golden& g, const parity::Options&) {
  auto s = make_scheduler(options_from_config(g.kind, g.config));
  TorchGenerator gen(g.config.value("generator_seed", uint64_t(0)));
  s->set_generator(&gen);
  parity::Produced out;
  out["output.timesteps"] = s->timesteps_tensor();
  out["output.sigmas"] = s->sigmas_tensor();
  Tensor x = g.input("latent").to(DType::F32);
  for (int64_t i = 0; i < s->num_steps(); ++i) {
    const std::string v = "model_output." + std::to_string(i);
    VIDAX_CHECK(g.has("input." + v), g.path << ": lacks input." << v << " (one per step, "
                                            << s->num_steps() << " steps)");
    x = s->step(g.input(v).to(DType::F32), i, x);
    out["output.sample." + std::to_string(i)] = x;
  }
  return out;
}

}  // namespace

void register_parity_kinds() {
  for (const char* kind : {"sched.flow_unipc", "sched.flow_dpmpp", "sched.flow_euler"})
    parity::register_kind(kind, run_flow_sampler);
}

}  // namespace vidax::sched
