// `vidax models`: every registered family, its variants and tasks, with the
// defaults `vidax generate` fills in (src/engine/families.h).
#include <cstdio>

#include "commands.h"
#include "engine/families.h"

namespace vidax::app {

Command add_models(CLI::App& app) {
  auto* sub = app.add_subcommand("models", "List the model families, variants and tasks with their defaults");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print the list as JSON");
  return {sub, [json]() {
            if (*json) std::printf("%s\n", engine::models_json().dump(2).c_str());
            else std::fputs(engine::models_text().c_str(), stdout);
            return 0;
          }};
}

}  // namespace vidax::app
