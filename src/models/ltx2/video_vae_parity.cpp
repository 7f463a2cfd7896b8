// Kinds ltx2.vae.decode / ltx2.vae.encode (docs/parity.md, docs/models/ltx2.md): the golden's
// ConvVideoDecoder / VideoEncoder built from __metadata__.config (the checkpoint's `vae` dict) and
// its parameters, strictly, under the official names: bare, or as the bundled checkpoint spells
// them (vae.decoder.* / vae.encoder.* and vae.per_channel_statistics.*), or the ComfyUI split files'
// decoder.* / encoder.* (the configurator's VAE_{DECODER,ENCODER}_COMFY_KEYS_FILTER renames);
// input.sample -> output, inter.<module path> (conv_in, up_blocks.i / down_blocks.i, conv_out).
#include <mutex>
#include <optional>
#include <string>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/video_vae.h"
#include "parity/parity.h"
#include "translate/inspect.h"

namespace vidax::ltx2 {
namespace {

DType compute_of(const parity::Options& opt, const std::string& kind) {
  if (opt.precision.empty() || opt.precision == "fp32") return DType::F32;
  if (opt.precision == "bf16") return DType::BF16;
  throw Error(msg() << kind << " parity: precision must be fp32 or bf16, found '" << opt.precision << "'");
}

// The configurator's renames: <vae.>{decoder|encoder}.X -> X, <vae.>per_channel_statistics.X kept.
std::string official_name(const std::string& n, const std::string& half) {
  for (const std::string& p : {"vae." + half + ".", half + "."})
    if (n.rfind(p, 0) == 0) return n.substr(p.size());
  if (n.rfind("vae.per_channel_statistics.", 0) == 0) return n.substr(4);
  return n;
}

parity::Produced run(const parity::Golden& g, const parity::Options& opt, bool decode) {
  const std::string kind = decode ? "ltx2.vae.decode" : "ltx2.vae.encode";
  VIDAX_CHECK(opt.mesh.empty(), kind << " parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  VIDAX_CHECK(opt.loras.empty() && opt.quantize.empty() && (opt.device.empty() || opt.device == "cpu"),
              kind << " parity: --lora, --quantize and --device are not supported for the video VAE");
  const DType compute = compute_of(opt, kind);
  const VideoVaeConfig cfg = VideoVaeConfig::from_json(g.config);
  std::map<std::string, Tensor> params;
  for (const std::string& n : g.file.names()) {
    if (translate::is_golden_io_key(n)) continue;
    const std::string name = official_name(n, decode ? "decoder" : "encoder");
    if (is_unused_checkpoint_buffer(name)) continue;
    VIDAX_CHECK(params.emplace(name, g.file.get(n)).second,
                g.path << ": parameter '" << name << "' is stored under two spellings (bare and prefixed)");
  }
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), g.path);
  parity::Produced out;
  const auto f32 = [](const Tensor& t) { return t.dtype() == DType::F32 ? t : ops::cast(t, DType::F32); };
  const VaeTap tap = [&out, &f32](const std::string& module, const Tensor& t) { out["inter." + module] = f32(t); };
  const Tensor x = g.input("sample");
  if (decode) {
    const VideoDecoder dec(cfg, src, "", compute);
    src.expect_all_taken();
    // forward(sample, timestep, generator): input.timestep [B] when given; the generator
    // torch.Generator().manual_seed(__metadata__.generator_seed) when the decoder draws noise.
    DecoderConditioning cond;
    if (g.has("input.timestep")) cond.timestep = g.input("timestep").to_f32_vector();
    std::optional<TorchGenerator> gen;
    if (auto it = g.file.metadata().find("generator_seed"); it != g.file.metadata().end()) {
      size_t used = 0;
      long long seed = 0;
      try {
        seed = std::stoll(it->second, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      VIDAX_CHECK(used > 0 && used == it->second.size(),
                  g.path << ": __metadata__.generator_seed '" << it->second << "' is not an integer");
      gen.emplace(static_cast<uint64_t>(seed));
      cond.generator = &*gen;
    }
    VIDAX_CHECK(!dec.uses_noise() || gen, g.path << ": this decoder draws noise; the golden needs "
                                                    "__metadata__.generator_seed (its torch.Generator's seed)");
    // __metadata__.tiling: tiled_decode with that TileSizeConfig (its tiles have no single module output).
    if (auto it = g.file.metadata().find("tiling"); it != g.file.metadata().end()) {
      out["output"] =
          f32(dec.tiled_decode(x.to(compute), VaeTiling::from_json(nlohmann::json::parse(it->second)), cond));
      return out;
    }
    out["output"] = f32(dec.forward(x.to(compute), tap, cond));
  } else {
    const VideoEncoder enc(cfg, src, "", compute);
    src.expect_all_taken();
    if (auto it = g.file.metadata().find("tiling"); it != g.file.metadata().end()) {  // tiled_encode
      out["output"] = f32(enc.tiled_encode(x.to(compute), VaeTiling::from_json(nlohmann::json::parse(it->second))));
      return out;
    }
    out["output"] = f32(enc.forward(x.to(compute), tap));
  }
  return out;
}

}  // namespace

void register_video_vae_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind("ltx2.vae.decode",
                          [](const parity::Golden& g, const parity::Options& o) { return run(g, o, true); });
    parity::register_kind("ltx2.vae.encode",
                          [](const parity::Golden& g, const parity::Options& o) { return run(g, o, false); });
  });
}

}  // namespace vidax::ltx2
