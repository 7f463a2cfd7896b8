// Kind ltx2.vocoder (docs/parity.md): the golden's Vocoder built from __metadata__.config (Vocoder's
// init args), or, when the config holds "bwe" (VocoderConfigurator's rule), the LTX-2.3
// VocoderWithBWE from its nested dict; parameters under the official names, bare or all prefixed
// `vocoder.` (the bundled checkpoint's spelling), strictly; input.x -> output (fp32 only), the
// BWE's inter.vocoder / inter.mel / inter.residual / inter.skip.
#include <algorithm>
#include <mutex>

#include "core/error.h"
#include "models/ltx2/vocoder.h"
#include "models/ltx2/vocoder_bwe.h"
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
  // The bundled checkpoint's spelling: every name behind one `vocoder.` (stripped once, as
  // _strip_vocoder_prefix does: the BWE's vocoder.vocoder.conv_pre -> vocoder.conv_pre).
  const std::string prefix = "vocoder.";
  std::vector<std::string> names;
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n)) names.push_back(n);
  const bool bundled = !names.empty() && std::all_of(names.begin(), names.end(), [&](const std::string& n) {
    return n.rfind(prefix, 0) == 0;
  });
  std::map<std::string, Tensor> params;
  for (const std::string& n : names) params.emplace(bundled ? n.substr(prefix.size()) : n, g.file.get(n));
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), g.path);
  const Tensor x = g.input("x").to(DType::F32);
  if (VocoderBweConfig::is_bwe(g.config)) {
    const VocoderWithBwe vocoder(VocoderBweConfig::from_json(g.config), src);
    src.expect_all_taken();
    parity::Produced out;
    out["output"] = vocoder.forward(x, [&out](const std::string& name, const Tensor& t) { out["inter." + name] = t; });
    return out;
  }
  const Vocoder vocoder(VocoderConfig::from_json(g.config), src);
  src.expect_all_taken();
  return {{"output", vocoder.forward(x)}};
}

}  // namespace

void register_vocoder_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] { parity::register_kind("ltx2.vocoder", run_vocoder); });
}

}  // namespace vidax::ltx2
