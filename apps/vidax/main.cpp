// vidax: command-line front end. No math here: each subcommand parses its
// arguments and calls the library. Exit codes (docs/generate.md): 0 success,
// 1 bad input or a failed run (a vidax::Error, out of memory), 2 an internal
// error (a bug), 128+N stopped by signal N.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "core/error.h"
#include "dist/communicator.h"
#include "engine/builtin_kinds.h"

namespace {
// Under mpirun an error on any rank stops every rank, with its message (MPI_Abort; no return).
void abort_other_ranks(const std::string& message) {
  if (vidax::dist::launched_by_mpi() && vidax::dist::world().size() > 1) vidax::dist::world().abort(message);
}
}  // namespace

int main(int argc, char** argv) {
  // `vidax inspect ... | head` must not die of SIGPIPE: a closed stdout or stderr
  // fails the writes instead, and the command finishes with its own status.
  std::signal(SIGPIPE, SIG_IGN);
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
  if (argc > 1 && argv[1][0] != '-') {
    // CLI11 says only "A subcommand is required" for a mistyped one: name it and list them.
    bool known = false;
    std::string names;
    for (const auto& c : cmds) {
      known |= c.sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + c.sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "vidax: error: unknown command '%s'; commands: %s (vidax --help)\n", argv[1], names.c_str());
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every malformed command line is bad input (1),
    // not one of CLI11's own codes (105-114), so the table in docs/generate.md holds.
    return app.exit(e) == 0 ? 0 : 1;
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
  } catch (const std::bad_alloc&) {
    // Under mpirun too: returning would leave this rank in MPI_Finalize and the others waiting in
    // their collective (docs/bugs.md row 130).
    abort_other_ranks("out of memory");
    std::fprintf(stderr, "vidax: error: out of memory; use a smaller size or model\n");
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the OS refused (a link loop, no permission): the user's input, not a bug.
    abort_other_ranks(e.what());
    std::fprintf(stderr, "vidax: error: %s\n", e.what());
    return 1;
  } catch (const nlohmann::json::exception& e) {
    // Every JSON reader names its file and field (a vidax::Error); one that slips
    // through is still bad input, not a crash.
    abort_other_ranks(std::string("a JSON value of the wrong type or shape: ") + e.what());
    std::fprintf(stderr, "vidax: error: a JSON value of the wrong type or shape: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    if (vidax::dist::launched_by_mpi() && vidax::dist::world().size() > 1)
      vidax::dist::world().abort(std::string("internal error: ") + e.what());
    std::fprintf(stderr, "vidax: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
