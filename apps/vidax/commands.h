// Each subcommand lives in its own cmd_<name>.cpp and registers itself here.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace vidax::app {

// Adds the subcommand to `app`; the returned callback runs it and gives the exit code.
using CommandRunner = std::function<int()>;
struct Command {
  CLI::App* sub;
  CommandRunner run;
};

// One line per subcommand (cmd_<name>.cpp); main.cpp lists them in the same order.
Command add_inspect(CLI::App& app);
Command add_convert(CLI::App& app);
Command add_parity(CLI::App& app);
Command add_generate(CLI::App& app);
Command add_make_demo(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_models(CLI::App& app);
Command add_serve(CLI::App& app);

}  // namespace vidax::app
