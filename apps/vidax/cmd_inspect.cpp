// vidax inspect PATH: which model, variant and layout a checkpoint is, what it
// holds (tensors, parameters, dtypes, bytes) and whether it covers the
// engine's parameters exactly. Reads headers only, unless --check-values asks
// for every value to be scanned for NaN and Inf. The parts of a model as
// single files (--diffusion-model, --vae, --text-encoder) are each checked to
// be the part their flag names (engine::check_part_files, the check a run
// makes) and reported the same way.
#include <cstdio>

#include "commands.h"
#include <filesystem>

#include "core/error.h"
#include "engine/families.h"
#include "part_options.h"
#include "translate/inspect.h"
#include "translate/lora.h"

namespace vidax::app {

Command add_inspect(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "inspect", "Report a checkpoint's family, variant, layout, dtypes and coverage of the engine's parameters");
  struct Args {
    std::string path, model;
    bool json = false;
    translate::InspectOptions opt;
    pipeline::PartFiles files;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("path", a->path,
                  "a .safetensors/.pth/.gguf file, a *.safetensors.index.json, an original-layout folder or a "
                  "diffusers pipeline folder (or give the parts as files: the next options)");
  add_part_options(sub, a->files, PartStyle::Files);
  sub->add_option("--model", a->model, "with part files: the model they are for (default: detected from the DiT file)");
  sub->add_flag("--json", a->json, "print a JSON report");
  sub->add_flag("--check-values", a->opt.check_values,
                "also read every weight and report tensors holding NaN or Inf (reads the whole checkpoint)");
  return {sub, [a]() {
            const bool parts = a->files.any();
            VIDAX_CHECK(!a->path.empty() || parts,
                        "inspect: a path is required (a file, index or folder), or the parts as files (--diffusion-model, "
                        "--vae, --text-encoder)");
            VIDAX_CHECK(a->path.empty() || !parts,
                        "inspect: a PATH and part files (" << given_parts(a->files).front().first
                                                           << ") together; inspect one or the other");
            VIDAX_CHECK(a->model.empty() || parts, "inspect: --model is for part files (--diffusion-model, ...)");
            if (parts) {
              const engine::PartsResolved pr = engine::check_part_files(a->model, a->files);
              nlohmann::json out{{"family", pr.family->name()},
                                 {"variant", pr.checked.variant.empty() ? nlohmann::json() : nlohmann::json(pr.checked.variant)},
                                 {"parts", nlohmann::json::array()}};
              bool ok = true;
              std::string text;
              for (const auto& p : pr.checked.parts) {
                translate::InspectReport r = translate::inspect(p.path, a->opt);
                ok = ok && r.ok();
                out["parts"].push_back({{"flag", p.flag}, {"component", p.component}, {"report", r.to_json()}});
                text += p.flag + " " + p.path + ": " + p.component + "\n" + r.to_text();
              }
              if (!a->model.empty() || !pr.checked.variant.empty())
                text = "model: " + (a->model.empty() ? pr.checked.variant : a->model) + " (" + pr.family->name() +
                       ")\n" + text;
              if (a->json) std::printf("%s\n", out.dump(2).c_str());
              else std::fputs(text.c_str(), stdout);
              return ok ? 0 : 1;
            }
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
