// vidax convert IN OUT: rewrite a checkpoint as one safetensors (or GGUF)
// file. By default a pure format conversion (same names, dtypes and values);
// --dtype casts floating-point tensors (dequantizing a GGUF's block types) or,
// with a GGUF block type (q8_0, q4_k, ...), writes a GGUF whose matrices take
// it and says which tensors kept a wider type; --layout engine writes the
// engine's parameter names after a strict translation.
#include <cstdio>

#include "commands.h"
#include "translate/inspect.h"

namespace vidax::app {

Command add_convert(CLI::App& app) {
  auto* sub = app.add_subcommand("convert", "Convert a checkpoint to one .safetensors or .gguf file");
  struct Args {
    std::string in, out;
    translate::ConvertOptions opt;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("in", a->in, "input file, index or folder")->required();
  sub->add_option("out", a->out, "output .safetensors file (.gguf for a block type, or when named so)")->required();
  sub->add_option("--dtype", a->opt.dtype,
                  "output dtype: f32|bf16|f16 (dequantizing any input, GGUF included), or a GGUF block type "
                  "(q8_0|q6_k|q5_k|q4_k|q5_0|q5_1|q4_0|q4_1|q3_k|q2_k) for the matrices, or scaled weights in safetensors: "
                  "fp8 (e4m3fn, one scale per tensor, ComfyUI's scaled fp8), fp8_e5m2, int8 (one scale per row)")
      ->check(CLI::IsMember({"keep", "f32", "bf16", "f16", "fp8", "fp8_e5m2", "int8", "q8_0", "q6_k", "q5_k", "q4_k", "q5_0", "q5_1", "q4_0",
                             "q4_1", "q3_k", "q2_k"}));
  sub->add_option("--layout", a->opt.layout, "keep the names, or write the engine's names")
      ->check(CLI::IsMember({"keep", "engine"}));
  sub->add_flag("--allow-unused", a->opt.translate.allow_unused,
                "--layout engine: drop checkpoint keys no engine parameter uses (default: fail, naming them)");
  sub->add_flag("--allow-missing", a->opt.translate.allow_missing,
                "--layout engine: write what is there when engine parameters are missing (default: fail)");
  return {sub, [a]() {
            translate::ConvertResult r = translate::convert(a->in, a->out, a->opt);
            std::printf("wrote %s: %zu tensors, %llu bytes%s%s\n", a->out.c_str(), r.tensors,
                        static_cast<unsigned long long>(r.bytes), r.component.empty() ? "" : ", engine names of ",
                        r.component.c_str());
            if (!r.kept_wide.empty() || r.quantized > 0) {
              size_t kept = 0;
              for (const auto& [why, names] : r.kept_wide) kept += names.size();
              std::printf("%zu tensors in %s, %zu kept a wider type:\n", r.quantized, a->opt.dtype.c_str(), kept);
              for (const auto& [why, names] : r.kept_wide) {
                std::printf("  %s (%zu):", why.c_str(), names.size());
                for (size_t i = 0; i < names.size() && i < 6; ++i) std::printf(" %s", names[i].c_str());
                std::printf("%s\n", names.size() > 6 ? " ..." : "");
              }
            }
            return 0;
          }};
}

}  // namespace vidax::app
