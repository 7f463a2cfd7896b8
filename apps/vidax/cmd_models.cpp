// `vidax models`: every registered family, its variants and tasks, with the
// defaults `vidax generate` fills in (src/engine/families.h); `--system`: one line on the
// CPU tier the kernels run at, what the CPU has and why (src/backend/cpu/cpu_tier.h), and one
// on PJRT: the plugin given (--pjrt-plugin) or found ($VIDAX_PJRT_PLUGIN) with its platform,
// devices, PJRT API and StableHLO versions (docs/pjrt.md), or why there is none.
#include <cstdio>
#include <cstdlib>

#include "backend/cpu/cpu_tier.h"
#include "backend/pjrt/plugin.h"
#include "commands.h"
#include "engine/families.h"

namespace vidax::app {

namespace {

// The PJRT line of --system. A plugin that was asked for but does not load is an error (exit 1).
std::string pjrt_report(const std::string& flag) {
  if (!pjrt::available()) return "PJRT: not built (no PJRT C API header at configure time; docs/pjrt.md)";
  std::string path = flag;
  if (path.empty())
    if (const char* e = std::getenv("VIDAX_PJRT_PLUGIN"); e && *e) path = e;
  if (path.empty())
    return "PJRT: built (header API " + pjrt::header_api_version() +
           "); no plugin given (--pjrt-plugin FILE or VIDAX_PJRT_PLUGIN)";
  pjrt::Client client(pjrt::Plugin::load(path));
  const pjrt::PluginInfo& i = client.info();
  std::string s = "PJRT: " + i.str() + ", " + std::to_string(client.device_count()) + " device(s)";
  if (!i.platform_version.empty()) s += ", platform version " + i.platform_version;
  if (!i.stablehlo_minimum.empty()) s += ", StableHLO accepted from " + i.stablehlo_minimum;
  if (!i.xla_version.empty()) s += ", XLA " + i.xla_version;
  return s + "; header API " + pjrt::header_api_version();
}

}  // namespace

Command add_models(CLI::App& app) {
  auto* sub = app.add_subcommand("models", "List the model families, variants and tasks with their defaults");
  auto json = std::make_shared<bool>(false);
  auto system = std::make_shared<bool>(false);
  auto plugin = std::make_shared<std::string>();
  sub->add_flag("--json", *json, "print the list as JSON");
  sub->add_flag("--system", *system,
                "print the CPU tier in use, what the CPU has and why; and the PJRT plugin's platform and versions");
  sub->add_option("--pjrt-plugin", *plugin, "with --system: the PJRT plugin .so to report (default: $VIDAX_PJRT_PLUGIN)");
  return {sub, [json, system, plugin]() {
            if (*system) {
              std::printf("%s\n", cpu::cpu_tier_report().c_str());
              std::printf("%s\n", pjrt_report(*plugin).c_str());
              return 0;
            }
            if (*json) std::printf("%s\n", engine::models_json().dump(2).c_str());
            else std::fputs(engine::models_text().c_str(), stdout);
            return 0;
          }};
}

}  // namespace vidax::app
