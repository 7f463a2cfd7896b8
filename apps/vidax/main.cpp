// vidax: command-line front end. No math here: each subcommand parses its
// arguments and calls the library.
#include <cstdio>
#include <vector>

#include "commands.h"
#include "core/error.h"
#include "dist/communicator.h"
#include "engine/builtin_kinds.h"

int main(int argc, char** argv) {
  CLI::App app{"vidax: inference engine for open video diffusion models"};
  app.set_version_flag("--version", std::string("vidax ") + VIDAX_VERSION);
  app.require_subcommand(1);
  std::vector<vidax::app::Command> cmds = {
      vidax::app::add_inspect(app),
      vidax::app::add_convert(app),
      vidax::app::add_parity(app),
      vidax::app::add_generate(app),
      vidax::app::add_make_demo(app),
      vidax::app::add_bench(app),
      vidax::app::add_models(app),
      vidax::app::add_serve(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    vidax::engine::register_builtins();  // every family's parity kinds and checkpoint components
    for (auto& c : cmds)
      if (c.sub->parsed()) return c.run();
  } catch (const vidax::Error& e) {
    // Under mpirun an error on any rank stops every rank, with its message.
    if (vidax::dist::launched_by_mpi() && vidax::dist::world().size() > 1) vidax::dist::world().abort(e.what());
    std::fprintf(stderr, "vidax: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    if (vidax::dist::launched_by_mpi() && vidax::dist::world().size() > 1)
      vidax::dist::world().abort(std::string("internal error: ") + e.what());
    std::fprintf(stderr, "vidax: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
