// Kinds ltx2.audio_vae.decode / ltx2.audio_vae.encode (docs/parity.md, docs/models/ltx2.md): the golden's
// AudioDecoder / AudioEncoder built from __metadata__.config (the checkpoint's `audio_vae` dict) and its
// parameters, strictly, under the official names: bare, or as the bundled checkpoint spells them
// (audio_vae.decoder.* / audio_vae.encoder.* and audio_vae.per_channel_statistics.*: the configurator's
// AUDIO_VAE_{DECODER,ENCODER}_COMFY_KEYS_FILTER renames); input.sample (decode) or input.spectrogram (encode)
// -> output, inter.<module path> (conv_in, mid.block_2, the last resnet of each up / down level, each
// upsample / downsample, conv_out). fp32 only.
#include <mutex>

#include "core/error.h"
#include "models/ltx2/audio_vae.h"
#include "parity/parity.h"
#include "translate/inspect.h"

namespace vidax::ltx2 {
namespace {

std::string official_name(const std::string& n, const std::string& half) {
  const std::string p = "audio_vae." + half + ".";
  if (n.rfind(p, 0) == 0) return n.substr(p.size());
  if (n.rfind("audio_vae.per_channel_statistics.", 0) == 0) return n.substr(10);
  return n;
}

parity::Produced run(const parity::Golden& g, const parity::Options& opt, bool decode) {
  const std::string kind = decode ? "ltx2.audio_vae.decode" : "ltx2.audio_vae.encode";
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32",
              kind << " parity: only fp32 is supported, found '" << opt.precision << "'");
  VIDAX_CHECK(opt.mesh.empty(), kind << " parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  VIDAX_CHECK(opt.loras.empty() && opt.quantize.empty() && (opt.device.empty() || opt.device == "cpu"),
              kind << " parity: --lora, --quantize and --device are not supported for the audio VAE");
  const AudioVaeConfig cfg = AudioVaeConfig::from_json(g.config);
  std::map<std::string, Tensor> params;
  for (const std::string& n : g.file.names()) {
    if (translate::is_golden_io_key(n)) continue;
    const std::string name = official_name(n, decode ? "decoder" : "encoder");
    VIDAX_CHECK(params.emplace(name, g.file.get(n)).second,
                g.path << ": parameter '" << name << "' is stored under two spellings (bare and prefixed)");
  }
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), g.path);
  parity::Produced out;
  const AudioVaeTap tap = [&out](const std::string& module, const Tensor& t) { out["inter." + module] = t; };
  if (decode) {
    const AudioDecoder dec(cfg, src);
    src.expect_all_taken();
    out["output"] = dec.forward(g.input("sample").to(DType::F32), tap);
  } else {
    const AudioEncoder enc(cfg, src);
    src.expect_all_taken();
    out["output"] = enc.forward(g.input("spectrogram").to(DType::F32), tap);
  }
  return out;
}

}  // namespace

void register_audio_vae_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind("ltx2.audio_vae.decode",
                          [](const parity::Golden& g, const parity::Options& o) { return run(g, o, true); });
    parity::register_kind("ltx2.audio_vae.encode",
                          [](const parity::Golden& g, const parity::Options& o) { return run(g, o, false); });
  });
}

}  // namespace vidax::ltx2
