// The runner of parity kinds sched.flow_unipc, sched.flow_dpmpp and
// sched.flow_euler (DESIGN.md par. 4): replays the golden's recorded model outputs through the sampler
// and returns output.timesteps, output.sigmas and output.sample.<i>.
#include <string>

#include "parity/parity.h"
#include "sched/parity_runners.h"
#include "sched/sched_config.h"
#include "sched/torch_scalar_math.h"

namespace vidax::sched {

parity::Produced run_flow_sampler(const parity::Golden& g, const parity::Options&) {
  auto s = make_scheduler(options_from_config(g.kind, g.config));
  TorchGenerator gen(g.config.value("generator_seed", uint64_t(0)));
  s->set_generator(&gen);
  parity::Produced out;
  out["output.timesteps"] = s->timesteps_tensor();
  out["output.sigmas"] = s->sigmas_tensor();
  // Inputs through the file itself (not Golden::input) so the runner needs only io.
  auto input = [&](const std::string& name) {
    VIDAX_CHECK(g.file.contains("input." + name), g.path << ": lacks input." << name);
    return g.file.get("input." + name).to(DType::F32);
  };
  Tensor x = input("latent");
  for (int64_t i = 0; i < s->num_steps(); ++i) {
    x = s->step(input("model_output." + std::to_string(i)), i, x);
    out["output.sample." + std::to_string(i)] = x;
  }
  return out;
}

parity::Produced run_torch_scalar_math(const parity::Golden& g, const parity::Options&) {
  struct Fn {
    const char* name;
    float (*fn)(float);
  };
  static constexpr Fn kFns[] = {{"log", torch_logf}, {"exp", torch_expf}, {"expm1", torch_expm1f}};
  parity::Produced out;
  for (const auto& f : kFns) {
    const std::string in = std::string("input.") + f.name;
    if (!g.file.contains(in)) continue;
    const Tensor x = g.file.get(in);
    std::vector<float> y = x.to_f32_vector();
    for (float& v : y) v = f.fn(v);
    out[std::string("output.") + f.name] = Tensor::from_f32(y, x.shape());
  }
  return out;
}

}  // namespace vidax::sched
