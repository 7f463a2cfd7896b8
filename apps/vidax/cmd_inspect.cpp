// vidax inspect PATH: which model, variant and layout a checkpoint is, what it
// holds (tensors, parameters, dtypes, bytes) and whether it covers the
// engine's parameters exactly. Reads headers only, unless --check-values asks
// for every value to be scanned for NaN and Inf.
#include <cstdio>

#include "commands.h"
#include <filesystem>

#include "translate/inspect.h"
#include "translate/lora.h"

namespace vidax::app {

Command add_inspect(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "inspect", "Report a checkpoint's family, variant, layout, dtypes and coverage of the engine's parameters");
  struct Args {
    std::string path;
    bool json = false;
    translate::InspectOptions opt;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("path", a->path,
                  "a .safetensors/.pth file, a *.safetensors.index.json, an original-layout folder or a diffusers "
                  "pipeline folder")
      ->required();
  sub->add_flag("--json", a->json, "print a JSON report");
  sub->add_flag("--check-values", a->opt.check_values,
                "also read every weight and report tensors holding NaN or Inf (reads the whole checkpoint)");
  return {sub, [a]() {
            // A LoRA file: its format, ranks, alphas, targets and coverage (docs/lora.md).
            if (std::filesystem::is_regular_file(a->path)) {
              auto src = translate::CheckpointSource::open(a->path);
              if (translate::looks_like_lora(*src)) {
                const translate::LoraInspection li = translate::inspect_lora(*src);
                std::fputs(li.to_text().c_str(), stdout);
                return li.plan.unmatched.empty() && li.plan.problems.empty() ? 0 : 1;
              }
            }
            translate::InspectReport r = translate::inspect(a->path, a->opt);
            if (a->json) std::printf("%s\n", r.to_json().dump(2).c_str());
            else std::fputs(r.to_text().c_str(), stdout);
            // Incomplete coverage or non-finite weights are an error: named above.
            return r.ok() ? 0 : 1;
          }};
}

}  // namespace vidax::app
