// vidax parity FILE: run a component on a golden file and compare with the reference's tensors.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "backend/pjrt/plugin.h"
#include "commands.h"
#include "core/error.h"
#include "dist/communicator.h"
#include "dist/mesh.h"
#include "engine/builtin_kinds.h"
#include "parity/parity.h"

namespace vidax::app {

Command add_parity(CLI::App& app) {
  auto* sub = app.add_subcommand("parity", "Compare the engine with a reference dump (golden .safetensors file)");
  struct Args {
    std::string file;
    parity::Options opt;
    std::optional<double> rtol;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("file", a->file, "golden file (.safetensors with __metadata__.kind)")->required()->check(CLI::ExistingFile);
  sub->add_option("--precision", a->opt.precision, "compute precision (default: the golden file's)")->check(CLI::IsMember({"fp32", "bf16"}));
  sub->add_option("--rtol", a->rtol, "relative L2 bound, > 0 (default: 1e-5 fp32, 1e-2 bf16)");
  sub->add_option("--mesh", a->opt.mesh, "device mesh, e.g. sp=2 (needs mpirun)");
  sub->add_option("--lora", a->opt.loras,
                  "FILE[:SCALE]: merge a LoRA into the golden's parameters first (repeatable; docs/lora.md)");
  sub->add_flag("--lora-allow-unmatched", a->opt.lora_allow_unmatched,
                "apply a LoRA whose keys partly match no parameter (the keys are printed)");
  sub->add_option("--lora-mode", a->opt.lora_mode,
                  "merge (into the weights) | runtime (beside them, added in each Linear in fp32) | auto (runtime for "
                  "quantized weights); docs/lora.md")
      ->capture_default_str();
  sub->add_option("--quantize", a->opt.quantize,
                  "TYPE: quantize the golden's matrices (q8_0|q6_k|q5_k|q4_k|q5_0|q5_1|q4_0|q4_1|q3_k|q2_k, or "
                  "fp8|fp8_e5m2|int8 scaled weights) before the run, to measure the type's error (docs/quantization.md)")
      ->check(CLI::IsMember({"fp8", "fp8_e5m2", "int8", "q8_0", "q6_k", "q5_k", "q4_k", "q5_0", "q5_1", "q4_0", "q4_1", "q3_k", "q2_k"}));
  sub->add_option("--device", a->opt.device, "cpu (default) or pjrt (docs/pjrt.md)")->check(CLI::IsMember({"cpu", "pjrt"}));
  sub->add_option("--pjrt-plugin", a->opt.pjrt_plugin, "PJRT plugin .so for --device pjrt (default: $VIDAX_PJRT_PLUGIN)");
  sub->add_flag("--json", a->json, "print a JSON report");
  return {sub, [a]() {
            if (a->rtol) {
              VIDAX_CHECK(std::isfinite(*a->rtol) && *a->rtol > 0,
                          "--rtol " << *a->rtol << ": must be a positive finite number (a relative L2 bound)");
              a->opt.rtol = *a->rtol;
            }
            if (!a->opt.mesh.empty()) (void)dist::parse_mesh(a->opt.mesh);  // generate's parser: same rules, same message
            if (a->opt.device == "pjrt") a->opt.pjrt_plugin = pjrt::Plugin::resolve_path(a->opt.pjrt_plugin);
            engine::register_builtin_kinds();
            parity::Report rep = parity::run(a->file, a->opt);
            if (dist::world().rank() != 0) return rep.ok() ? 0 : 1;  // --mesh: rank 0 alone prints
            auto status = [](parity::Comparison::Status s) {
              return s == parity::Comparison::Status::Ok ? "OK" : s == parity::Comparison::Status::Fail ? "FAIL" : "SKIP";
            };
            if (a->json) {
              nlohmann::json j;
              j["kind"] = rep.kind;
              j["precision"] = rep.precision;
              j["rtol"] = rep.rtol;
              j["passed"] = rep.passed;
              j["compared"] = rep.compared;
              j["ok"] = rep.ok();
              for (const auto& c : rep.rows)
                j["rows"].push_back({{"name", c.name}, {"max_abs", c.max_abs}, {"mean_abs", c.mean_abs},
                                     {"rel_l2", c.rel_l2}, {"status", status(c.status)}, {"note", c.note}});
              std::printf("%s\n", j.dump(2).c_str());
            } else {
              for (const auto& c : rep.rows) {
                if (c.status == parity::Comparison::Status::Skip) {
                  std::printf("%s SKIP (%s)\n", c.name.c_str(), c.note.c_str());
                  continue;
                }
                std::printf("%s max_abs=%.3e mean_abs=%.3e rel_l2=%.3e %s%s%s\n", c.name.c_str(), c.max_abs,
                            c.mean_abs, c.rel_l2, status(c.status), c.note.empty() ? "" : " ", c.note.c_str());
              }
              std::printf("%s %d/%d (%s, rel_l2 <= %g)\n", rep.ok() ? "PASS" : "FAIL", rep.passed, rep.compared,
                          rep.precision.c_str(), rep.rtol);
            }
            return rep.ok() ? 0 : 1;
          }};
}

}  // namespace vidax::app
