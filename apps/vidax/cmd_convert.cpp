// vidax convert IN OUT: rewrite a checkpoint as one safetensors (or GGUF)
// file. By default a pure format conversion (same names, dtypes and values);
// --dtype casts floating-point tensors (dequantizing a GGUF's block types) or,
// with a GGUF block type (q8_0, q4_k, ...), writes a GGUF whose matrices take
// it and says which tensors kept a wider type; --layout engine writes the
// engine's parameter names after a strict translation. The input may instead
// be one part given as a file (`vidax convert --diffusion-model FILE OUT`),
// checked to be that part as a run checks it (engine::check_part_files).
#include <cstdio>

#include "commands.h"
#include "core/error.h"
#include "engine/families.h"
#include "part_options.h"
#include "translate/inspect.h"

namespace vidax::app {

Command add_convert(CLI::App& app) {
  auto* sub = app.add_subcommand("convert", "Convert a checkpoint to one .safetensors or .gguf file");
  struct Args {
    std::vector<std::string> paths;  // IN OUT, or OUT with a part file
    std::string model;
    translate::ConvertOptions opt;
    pipeline::PartFiles files;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("paths", a->paths,
                  "IN OUT: the input file, index or folder, and the output .safetensors file (.gguf for a block "
                  "type, or when named so); with a part file (next options) only OUT")
      ->required()
      ->expected(1, 2);
  add_part_options(sub, a->files, PartStyle::Files);
  sub->add_option("--model", a->model, "with a part file: the model it is for (default: detected from a DiT file)");
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
            const auto parts = given_parts(a->files);
            std::string in, out;
            if (parts.empty()) {
              VIDAX_CHECK(a->paths.size() == 2, "convert: the out path is required: give IN and OUT (or one part as a "
                                                "file, e.g. --diffusion-model FILE, and OUT)");
              VIDAX_CHECK(a->model.empty(), "convert: --model is for a part file (--diffusion-model, ...)");
              in = a->paths[0];
              out = a->paths[1];
            } else {
              VIDAX_CHECK(parts.size() == 1, "convert: one part at a time (" << parts[0].first << " and "
                                                                              << parts[1].first << " given)");
              VIDAX_CHECK(a->paths.size() == 1, "convert: with " << parts[0].first << " " << parts[0].second
                                                                   << " give only OUT (got " << a->paths.size()
                                                                   << " paths)");
              const engine::PartsResolved pr = engine::check_part_files(a->model, a->files);
              in = pr.checked.parts.front().path;
              out = a->paths[0];
              std::fprintf(stderr, "%s %s: %s%s\n", parts[0].first.c_str(), in.c_str(),
                           pr.checked.parts.front().component.c_str(),
                           pr.checked.variant.empty() ? "" : (" of " + pr.checked.variant).c_str());
            }
            translate::ConvertResult r = translate::convert(in, out, a->opt);
            std::printf("wrote %s: %zu tensors, %llu bytes%s%s\n", out.c_str(), r.tensors,
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
