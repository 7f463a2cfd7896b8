// Kind ltx2.vocoder (docs/parity.md): the golden's Vocoder built from __metadata__.config (Vocoder's
// init args) and its parameters under the official names, bare or prefixed `vocoder.` (the
// bundled LTX-2 checkpoint's spelling), strictly; input.x -> output (fp32 only).
#include <mutex>

#include "core/error.h"
#include "models/ltx2/vocoder.h"
#include "parity/parity.h"
#include "translate/inspect.h"

namespace vidax::ltx2 {
namespace {

parity::Produced run_vocoder(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32",
              "ltx2.vocoder parity: only fp32 is supported (the reference runs the vocoder in fp32), found '"
                  << opt.precision << "'");
  VIDAX_CHECK(opt.mesh.empty(), "ltx2.vocoder parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  VIDAX_CHECK(opt.loras.empty() && opt.quantize.empty() && (opt.device.empty() || opt.device == "cpu"),
              "ltx2.vocoder parity: --lora, --quantize and --device are not supported for the vocoder");
  const VocoderConfig cfg = VocoderConfig::from_json(g.config);
  std::map<std::string, Tensor> params;
  const std::string prefix = "vocoder.";
  for (const std::string& n : g.file.names()) {
    if (translate::is_golden_io_key(n)) continue;
    const std::string name = n.rfind(prefix, 0) == 0 ? n.substr(prefix.size()) : n;
    VIDAX_CHECK(params.emplace(name, g.file.get(n)).second,
                g.path << ": parameter '" << name << "' is stored both with and without the 'vocoder.' prefix");
  }
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), g.path);
  const Vocoder vocoder(cfg, src);
  src.expect_all_taken();
  return {{"output", vocoder.forward(g.input("x").to(DType::F32))}};
}

}  // namespace

void register_vocoder_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] { parity::register_kind("ltx2.vocoder", run_vocoder); });
}

}  // namespace vidax::ltx2
