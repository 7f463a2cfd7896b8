// `vidax models`: every registered family, its variants and tasks, with the
// defaults `vidax generate` fills in (src/engine/families.h); `--system`: one line on the
// CPU tier the kernels run at, what the CPU has and why (src/backend/cpu/cpu_tier.h).
#include <cstdio>

#include "backend/cpu/cpu_tier.h"
#include "commands.h"
#include "engine/families.h"

namespace vidax::app {

Command add_models(CLI::App& app) {
  auto* sub = app.add_subcommand("models", "List the model families, variants and tasks with their defaults");
  auto json = std::make_shared<bool>(false);
  auto system = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print the list as JSON");
  sub->add_flag("--system", *system, "print one line: the CPU tier in use, what the CPU has, why");
  return {sub, [json, system]() {
            if (*system) {
              std::printf("%s\n", cpu::cpu_tier_report().c_str());
              return 0;
            }
            if (*json) std::printf("%s\n", engine::models_json().dump(2).c_str());
            else std::fputs(engine::models_text().c_str(), stdout);
            return 0;
          }};
}

}  // namespace vidax::app
