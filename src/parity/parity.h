// The parity contract (DESIGN.md §4): a golden file made by the official
// PyTorch code holds the config, the parameters under the reference's own
// names, input.* tensors and the expected output* / inter.* tensors. A runner
// per kind rebuilds the component from the file, runs it, and returns the
// tensors it produced under the golden names; compare() measures each one.
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/checkpoint.h"

namespace vidax::parity {

struct Options {
  // fp32 | bf16; "" = the golden's own: __metadata__.precision, else "bf16" for a
  // file named *_bf16.safetensors, else fp32.
  std::string precision;
  double rtol = -1;                // relative L2 bound; <0 = default for the precision
  std::string mesh;                // "" = single rank
  // --lora FILE[:SCALE] (docs/lora.md): merged into the golden's parameters before the run, so
  // that a golden made with fused weights is checked against its base weights + the LoRA
  // files. Kinds of models without LoRA support refuse a non-empty list.
  std::vector<std::string> loras;
  bool lora_allow_unmatched = false;
  std::string lora_mode = "auto";  // --lora-mode merge | runtime | auto (docs/lora.md)
  // --quantize TYPE (q8_0, q4_k, ...; docs/quantization.md): the golden's matrices are
  // block-quantized in the engine (io::quant_decision picks which, as `vidax convert` does)
  // before the run, so that the comparison measures the type's error against the reference.
  std::string quantize;
  // --device pjrt (docs/pjrt.md): run the component's recorded program through the PJRT plugin
  // at pjrt_plugin (kinds registered with takes_pjrt; the others refuse it). "" / "cpu": the CPU.
  std::string device;
  std::string pjrt_plugin;
};

struct Golden {
  std::string path;
  io::Checkpoint file;
  std::string kind;
  nlohmann::json config;  // __metadata__.config parsed
  // Tensors whose names start with prefix (e.g. "input.", "param." or ""), prefix stripped.
  std::map<std::string, Tensor> with_prefix(const std::string& prefix) const;
  Tensor input(const std::string& name) const;  // "input.<name>", throws if absent
  bool has(const std::string& name) const { return file.contains(name); }
};

// Produced tensors keyed by golden name: "output", "output.<x>", "inter.<x>".
using Produced = std::map<std::string, Tensor>;
using Runner = std::function<Produced(const Golden&, const Options&)>;

// The kind registry. It starts empty: this layer sits just above io and knows no family; the
// kinds are registered from the top (engine::register_builtin_kinds(), or a test's own).
// takes_loras: the runner merges Options::loras (else run() refuses a non-empty list).
// takes_quantize: the runner reads its parameters through Golden::file (so Options::quantize
// reaches them) or applies it to the parameters it makes (else run() refuses --quantize).
// takes_pjrt: the runner runs on --device pjrt (else run() refuses it).
void register_kind(const std::string& kind, Runner runner, bool takes_loras = false, bool takes_quantize = false,
                   bool takes_pjrt = false);
std::vector<std::string> registered_kinds();

struct Comparison {
  std::string name;
  double max_abs = 0, mean_abs = 0, rel_l2 = 0;
  enum class Status { Ok, Fail, Skip } status = Status::Skip;
  std::string note;  // why skipped / failed (e.g. shape mismatch)
};

struct Report {
  std::string kind;
  std::string precision;
  double rtol = 0;
  std::vector<Comparison> rows;
  int passed = 0, compared = 0;
  bool ok() const { return compared > 0 && passed == compared; }
};

// The precision a golden file is checked at when none is asked for.
std::string golden_precision(const Golden& g);

// Loads the golden file, runs its kind's runner, compares every output* (must
// be produced) and inter.* (SKIP when not produced) tensor.
Report run(const std::string& path, const Options& opt);
Comparison compare(const std::string& name, const Tensor& expected, const Tensor& got, double rtol);
double default_rtol(const std::string& precision);  // fp32 1e-5, bf16 1e-2

}  // namespace vidax::parity
