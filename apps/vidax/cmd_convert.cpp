// vidax convert IN OUT.safetensors: rewrite a checkpoint as one safetensors
// file. By default a pure format conversion (same names, dtypes and values);
// --dtype casts floating-point tensors, --layout engine writes the engine's
// parameter names after a strict translation.
#include <cstdio>

#include "commands.h"
#include "translate/inspect.h"

namespace vidax::app {

Command add_convert(CLI::App& app) {
  auto* sub = app.add_subcommand("convert", "Convert a checkpoint to one .safetensors file");
  struct Args {
    std::string in, out;
    translate::ConvertOptions opt;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("in", a->in, "input file, index or folder")->required();
  sub->add_option("out", a->out, "output .safetensors file")->required();
  sub->add_option("--dtype", a->opt.dtype, "floating-point dtype of the output")
      ->check(CLI::IsMember({"keep", "f32", "bf16", "f16"}));
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
            return 0;
          }};
}

}  // namespace vidax::app
