// The single-file options every subcommand that reads a model takes (generate, bench, inspect,
// convert): --diffusion-model, --vae, --text-encoder (and --tokenizer where a run needs one),
// declared once here so that their names, help and checks are the same everywhere. What the
// files are is decided by the library (engine::resolve for a run, engine::check_part_files for
// the files on their own), never here.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/family.h"

namespace vidax::app {

struct PartOptions {
  CLI::Option *diffusion_model = nullptr, *vae = nullptr, *text_encoder = nullptr, *tokenizer = nullptr;
};

enum class PartStyle {
  Run,    // generate: the three files and --tokenizer
  Files,  // inspect, convert: the three files
  Bench,  // bench: --vae and --text-encoder also alone (no FILE: time that part on random weights)
};

PartOptions add_part_options(CLI::App* sub, pipeline::PartFiles& files, PartStyle style);

// The parts given, as (flag, file), in flag order.
std::vector<std::pair<std::string, std::string>> given_parts(const pipeline::PartFiles& files);

}  // namespace vidax::app
