// Parity kinds wan.vae.decode / wan.vae.encode (DESIGN.md §4): rebuild the VAE half a golden file
// exercises from its own parameters, run it as the WanVAE wrapper does, and hand back output and
// inter.<official module path> tensors.
#include <map>
#include <mutex>
#include <regex>
#include <set>

#include "backend/ops.h"
#include "models/wan/vae.h"
#include "parity/parity.h"

namespace vidax::wan {
namespace {

bool is_golden_data(const std::string& name) {
  return name.rfind("input.", 0) == 0 || name == "output" || name.rfind("output.", 0) == 0 ||
         name.rfind("inter.", 0) == 0 || name.rfind("scale.", 0) == 0;
}

// ---- diffusers AutoencoderKLWan -> official WanVAE_ names -------------------------------------
// TEMPORARY: the translator (src/translate) owns layout detection and key maps; this small table
// lets the diffusers-made golden files run until its Wan VAE map lands. The inverse of diffusers'
// scripts/convert_wan_to_diffusers.py convert_vae.
struct PrefixRename {
  std::string from, to;
  bool residual_block;  // the rest of the name is inside a WanResidualBlock
};
const std::vector<PrefixRename> kDiffusersPrefixes = {
    {"quant_conv.", "conv1.", false},
    {"post_quant_conv.", "conv2.", false},
    {"encoder.conv_in.", "encoder.conv1.", false},
    {"decoder.conv_in.", "decoder.conv1.", false},
    {"encoder.norm_out.", "encoder.head.0.", false},
    {"decoder.norm_out.", "decoder.head.0.", false},
    {"encoder.conv_out.", "encoder.head.2.", false},
    {"decoder.conv_out.", "decoder.head.2.", false},
    {"encoder.mid_block.resnets.0.", "encoder.middle.0.", true},
    {"encoder.mid_block.attentions.0.", "encoder.middle.1.", false},
    {"encoder.mid_block.resnets.1.", "encoder.middle.2.", true},
    {"decoder.mid_block.resnets.0.", "decoder.middle.0.", true},
    {"decoder.mid_block.attentions.0.", "decoder.middle.1.", false},
    {"decoder.mid_block.resnets.1.", "decoder.middle.2.", true},
};
// Inside a residual block (WanResidualBlock -> ResidualBlock.residual Sequential indices).
const std::vector<std::pair<std::string, std::string>> kDiffusersResidual = {
    {"norm1.", "residual.0."}, {"conv1.", "residual.2."},     {"norm2.", "residual.3."},
    {"conv2.", "residual.6."}, {"conv_shortcut.", "shortcut."},
};

std::string map_residual_inner(const std::string& inner) {
  for (const auto& [from, to] : kDiffusersResidual)
    if (inner.rfind(from, 0) == 0) return to + inner.substr(from.size());
  return inner;  // resample.1.*, time_conv.* keep their names
}

std::string diffusers_to_official(const std::string& name, const WanVAEConfig& cfg) {
  for (const auto& r : kDiffusersPrefixes) {
    if (name.rfind(r.from, 0) != 0) continue;
    const std::string rest = name.substr(r.from.size());
    return r.to + (r.residual_block ? map_residual_inner(rest) : rest);
  }
  static const std::regex down(R"(^encoder\.down_blocks\.(\d+)\.(.*)$)");
  static const std::regex up_res(R"(^decoder\.up_blocks\.(\d+)\.resnets\.(\d+)\.(.*)$)");
  static const std::regex up_sample(R"(^decoder\.up_blocks\.(\d+)\.upsamplers\.0\.(.*)$)");
  std::smatch m;
  if (std::regex_match(name, m, down)) return "encoder.downsamples." + m[1].str() + "." + map_residual_inner(m[2]);
  // Decoder levels are flattened: level i holds num_res_blocks + 1 residual blocks and a Resample.
  const int64_t per_level = cfg.num_res_blocks + 2;
  if (std::regex_match(name, m, up_res))
    return "decoder.upsamples." + std::to_string(std::stoll(m[1]) * per_level + std::stoll(m[2])) + "." +
           map_residual_inner(m[3]);
  if (std::regex_match(name, m, up_sample))
    return "decoder.upsamples." + std::to_string(std::stoll(m[1]) * per_level + cfg.num_res_blocks + 1) + "." +
           m[2].str();
  return name;
}

bool is_diffusers_layout(const nlohmann::json& config, const std::map<std::string, Tensor>& params) {
  if (config.contains("base_dim")) return true;
  for (const auto& [name, t] : params)
    if (name.rfind("quant_conv.", 0) == 0 || name.rfind("post_quant_conv.", 0) == 0 ||
        name.find(".conv_in.") != std::string::npos)
      return true;
  return false;
}

// ---- runner ---------------------------------------------------------------------------------

DType compute_dtype(const parity::Options& opt) {
  if (opt.precision == "fp32") return DType::F32;
  if (opt.precision == "bf16") return DType::BF16;
  throw Error(msg() << "wan.vae parity: precision must be fp32 or bf16, found '" << opt.precision << "'");
}

parity::Produced run_vae(const parity::Golden& g, const parity::Options& opt, bool decode) {
  VIDAX_CHECK(opt.mesh.empty(), "wan.vae parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  const WanVAEConfig cfg = WanVAEConfig::from_json(g.config);

  // Parameters = every tensor that is not golden data, under official names.
  std::map<std::string, Tensor> params;
  for (auto& [name, t] : g.with_prefix(""))
    if (!is_golden_data(name)) params.emplace(name, t);
  if (is_diffusers_layout(g.config, params)) {
    std::map<std::string, Tensor> renamed;
    for (auto& [name, t] : params) {
      std::string official = diffusers_to_official(name, cfg);
      VIDAX_CHECK(renamed.emplace(official, t).second,
                  g.path << ": two parameters map to " << official << " (second: " << name << ")");
    }
    params = std::move(renamed);
  }

  WanVAE::Parts parts{.encoder = !decode, .decoder = decode};
  const WeightLookup lookup = [&](const std::string& name) {
    auto it = params.find(name);
    VIDAX_CHECK(it != params.end(), g.path << ": the Wan VAE parameter " << name << " is not in the file");
    return it->second;
  };
  WanVAE vae(cfg, lookup, parts, compute_dtype(opt));

  // Strict coverage: every parameter in the file must be one the model read.
  std::set<std::string> used(vae.parameter_names().begin(), vae.parameter_names().end());
  std::string unused;
  for (const auto& [name, t] : params)
    if (!used.count(name)) unused += "\n  " + name + " " + shape_str(t.shape());
  VIDAX_CHECK(unused.empty(), g.path << ": parameters the Wan VAE " << (decode ? "decoder" : "encoder")
                                     << " does not use:" << unused);

  const LatentScale scale = LatentScale::from_tensors(g.file.get("scale.mean"), g.file.get("scale.std"));
  std::map<std::string, std::vector<Tensor>> taps;
  const Tap tap = [&](const std::string& module, const Tensor& out) { taps[module].push_back(out); };

  parity::Produced produced;
  produced["output"] = decode ? vae.decode_normalized(g.input("z"), scale, tap)
                              : vae.encode_normalized(g.input("video"), scale, tap);
  for (auto& [module, pieces] : taps) {
    Tensor t = pieces.size() == 1 ? pieces[0] : ops::concat(pieces, 2);  // chunks along time
    produced["inter." + module] = t.dtype() == DType::F32 ? t : ops::cast(t, DType::F32);
  }
  return produced;
}

}  // namespace

void register_vae_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind("wan.vae.decode",
                          [](const parity::Golden& g, const parity::Options& o) { return run_vae(g, o, true); });
    parity::register_kind("wan.vae.encode",
                          [](const parity::Golden& g, const parity::Options& o) { return run_vae(g, o, false); });
  });
}

}  // namespace vidax::wan
