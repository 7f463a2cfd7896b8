// The model families this build knows (one registration line each, in
// families.cpp) and the look-ups the CLI and the server dispatch through:
// by variant name (--model), by what a weights directory holds, by family name.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/bench.h"
#include "pipeline/family.h"

namespace vidax::engine {

const std::vector<const pipeline::Family*>& families();
// Throws listing the families.
const pipeline::Family& family(const std::string& name);
// The family with variant `model`; throws listing every variant.
const pipeline::Family& family_of_model(const std::string& model);

struct Resolved {
  const pipeline::Family* family = nullptr;
  pipeline::Variant variant;
};
// The family and variant for a weights directory: `model`'s family when given
// (its resolve checks the weights), else the first family that detects the
// directory; throws naming the directory and every variant otherwise.
Resolved resolve(const std::string& weights_dir, const std::string& model);
// The same with parts given as single files (pipeline::PartFiles); weights_dir may then be "".
// Without --model, the family is the first whose detect_parts recognises the tensors.
Resolved resolve(const std::string& weights_dir, const std::string& model, const pipeline::PartFiles& files);

// Parts given as single files on their own (`vidax inspect`, `convert`, `bench`): the family's
// check_part_files, the check its load makes. With `model`, that model's family; else the first
// family that takes the files (the first family's error when none does).
struct PartsResolved {
  const pipeline::Family* family = nullptr;
  pipeline::PartsChecked checked;
};
PartsResolved check_part_files(const std::string& model, const pipeline::PartFiles& files);

// Every variant's name, comma-separated (for --help and errors).
std::string variant_names();

// `vidax bench`: the bench of opt.model's family.
nlohmann::json run_bench(const pipeline::BenchOptions& opt, const std::function<void(const std::string&)>& log);

// `vidax models`: every family, variant and task with its defaults.
nlohmann::json models_json();
std::string models_text();

}  // namespace vidax::engine
