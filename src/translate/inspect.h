// `vidax inspect` and `vidax convert` as library calls: open what a publisher
// ships (a file, a sharded index, an original-layout directory holding DiT, VAE
// and text encoder files, or a diffusers pipeline directory), find which
// component each file is, in which layout, and check it strictly against the
// engine's parameters. Only headers are read: tensor data stays on disk.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "translate/component.h"

namespace vidax::translate {

struct DTypeStats {
  size_t tensors = 0;
  int64_t parameters = 0;
  uint64_t bytes = 0;
};

// A tensor holding non-finite values, and how many of each.
struct NonFinite {
  std::string name;
  int64_t nan = 0, inf = 0;
};

// One component found in the input (or a group of files nothing recognizes).
struct Unit {
  std::string label;                     // the file(s) or folder it came from
  std::shared_ptr<const TensorSource> source;  // its tensors (golden-file inputs/outputs excluded)
  const Component* comp = nullptr;       // nullptr: unrecognized
  Match match;                           // valid when comp != nullptr
  size_t excluded_golden = 0;            // input./output/inter./scale. tensors of a golden file

  size_t tensors = 0;
  int64_t parameters = 0;
  uint64_t bytes = 0;
  std::map<std::string, DTypeStats> dtypes;
  // InspectOptions::check_values: the tensors holding NaN or Inf (name order).
  bool values_checked = false;
  std::vector<NonFinite> non_finite;
  bool complete() const { return comp && match.plan.complete(); }
};

struct InspectReport {
  std::string path;
  std::vector<Unit> units;
  bool complete() const;
  bool values_ok() const;  // no NaN or Inf found (true when values were not checked)
  bool ok() const { return complete() && values_ok(); }
  Json to_json() const;
  std::string to_text() const;
};

struct InspectOptions {
  // Also read every floating-point value and count NaN and Inf per tensor
  // (`vidax inspect --check-values`). Off by default: the default reads headers
  // only and answers at once at any size, while the values are the whole file
  // (docs/translate.md has the measured scan rate: from a cold disk the disk's).
  bool check_values = false;
};

// Opens `path` and matches every component in it (data is not read unless
// opts.check_values).
InspectReport inspect(const std::string& path, const InspectOptions& opts = {});

// NaN and Inf among a tensor's values (floating-point dtypes; 0 for others).
NonFinite count_non_finite(const Tensor& t);

struct ConvertOptions {
  // keep | f32 | bf16 | f16 (floating-point tensors, a GGUF's block-quantized ones dequantized),
  // or a GGUF block type (q8_0, q6_k, q5_k, q4_k, q5_0, q5_1, q4_0, q4_1, q3_k, q2_k): a GGUF
  // file whose matrices take the type (translate/quant_policy.h says which stay wide). An OUT
  // ending in .gguf is written as GGUF whatever the dtype.
  std::string dtype = "keep";
  std::string layout = "keep";  // keep: same names; engine: the engine's names (strict translation)
  TranslateOptions translate;   // engine layout: allow_unused / allow_missing (cast comes from dtype)
};
// Writes `in` as one safetensors or GGUF file (temporary file renamed into place).
// Returns what was written, for the CLI to report.
struct ConvertResult {
  size_t tensors = 0;
  uint64_t bytes = 0;
  std::string component;  // engine layout only
  std::string format;     // "safetensors" or "gguf"
  size_t quantized = 0;   // tensors written in the block type
  // A block-type conversion: the tensors that kept a wider type, by reason (name (TYPE)).
  std::map<std::string, std::vector<std::string>> kept_wide;
};
ConvertResult convert(const std::string& in, const std::string& out, const ConvertOptions& opts);

// What a model calls to get its weights: finds `comp` in `path` (any layout,
// any of the inputs inspect() accepts), matches it strictly against the
// engine's parameters for `config` (when given; else the file's metadata or
// config.json, else the shapes) and returns engine name -> Tensor (zero-copy
// views where the stored tensor is used as is). Throws naming every unused key,
// missing parameter and shape mismatch.
std::map<std::string, Tensor> load_component(const std::string& path, const Component& comp,
                                             const std::optional<Json>& config = std::nullopt,
                                             const TranslateOptions& opts = {});

// Golden files (DESIGN.md §4) hold the run's inputs and outputs next to the
// parameters; these are not parameters.
bool is_golden_io_key(const std::string& name);

}  // namespace vidax::translate
