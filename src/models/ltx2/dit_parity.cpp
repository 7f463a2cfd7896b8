#include "models/ltx2/dit_parity.h"

#include <cstdio>
#include <mutex>
#include <utility>

#include "backend/pjrt/session.h"
#include "backend/recording.h"
#include "core/error.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/dit.h"
#include "parity/parity.h"
#include "translate/inspect.h"
#include "translate/lora.h"

namespace vidax::ltx2 {
namespace {

DType compute_of(const std::string& precision) {
  if (precision.empty() || precision == "fp32" || precision == "f32" || precision == "float32") return DType::F32;
  if (precision == "bf16" || precision == "bfloat16") return DType::BF16;
  throw Error(msg() << "ltx2.dit parity: unknown precision '" << precision << "' (expected fp32 or bf16)");
}

// input.<stream>.* as a Modality, or nullopt when the file has no such stream.
std::optional<Modality> read_modality(const parity::Golden& g, const std::string& stream) {
  const std::string p = stream + ".";
  if (!g.has("input." + p + "latent")) return std::nullopt;
  Modality m;
  m.latent = g.input(p + "latent");
  m.sigma = g.input(p + "sigma");
  m.timesteps = g.input(p + "timesteps");
  m.positions = g.input(p + "positions");
  m.context = g.input(p + "context");
  if (g.has("input." + p + "context_mask")) m.context_mask = g.input(p + "context_mask");
  if (g.has("input." + p + "attention_mask")) m.attention_mask = g.input(p + "attention_mask");
  if (g.has("input." + p + "keyframes_mask")) m.keyframes_mask = g.input(p + "keyframes_mask");
  if (g.has("input." + p + "enabled")) {
    const Tensor e = g.input(p + "enabled");
    VIDAX_CHECK(e.numel() == 1, g.path << ": input." << p << "enabled must hold one value (Modality.enabled)");
    const double on = e.to_f64_vector()[0];
    VIDAX_CHECK(on == 0 || on == 1, g.path << ": input." << p << "enabled must be 0 or 1, found " << on);
    m.enabled = on == 1;
  }
  return m;
}

parity::Produced run_dit(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), "ltx2.dit parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  VIDAX_CHECK(opt.quantize.empty(), "ltx2.dit parity: --quantize is not supported for the LTX-2 DiT yet");
  VIDAX_CHECK(opt.device.empty() || opt.device == "cpu" || opt.device == "pjrt",
              "ltx2.dit parity: device '" << opt.device << "' (cpu or pjrt)");
  const DiTConfig cfg = DiTConfig::from_json(g.config);
  // The golden's parameters through the translator (checkpoint_keys.h): any layout (official names
  // bare or under `model.diffusion_model.`, diffusers'), strictly: every parameter filled, every key
  // used, shapes checked.
  translate::MemorySource mem(g.path);
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n)) mem.add(n, g.file.get(n));
  const translate::Json config = dit_config_json(cfg);
  std::map<std::string, Tensor> params = translate::load(mem, dit_component(), config);
  // --lora: merged (or kept beside the weights at run time) through the same component.
  translate::LoraOptions lora_opt;
  lora_opt.allow_unmatched = opt.lora_allow_unmatched;
  lora_opt.mode = translate::parse_lora_mode(opt.lora_mode);
  std::vector<translate::LoraSpec> loras;
  for (const std::string& l : opt.loras) loras.push_back(translate::parse_lora_spec(l));
  translate::LoraDeltas runtime;
  translate::apply_loras(params, loras, dit_component(), config, lora_opt,
                         [](const std::string& m) { std::fprintf(stderr, "warning: %s\n", m.c_str()); }, &runtime);
  VIDAX_CHECK(runtime.empty() || opt.device != "pjrt",
              g.path << ": --device pjrt with runtime LoRAs: the recorded program has no LoRA branch; use --lora-mode merge");
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), g.path);
  if (!runtime.empty()) {
    nn::Adapters adapters;
    for (auto& [name, list] : runtime)
      for (auto& d : list) adapters[name].push_back(nn::LowRankAdapter{std::move(d.down), std::move(d.up), std::move(d.label)});
    src.attach_adapters(std::move(adapters));
  }
  const LTXModel model(cfg, src, compute_of(opt.precision));
  src.expect_all_taken();

  const std::optional<Modality> video = read_modality(g, "video"), audio = read_modality(g, "audio");
  VIDAX_CHECK(video || audio, g.path << ": ltx2.dit golden file has neither input.video.latent nor input.audio.latent");
  Taps taps;
  std::optional<Tensor> perturbations;
  if (g.has("input.perturbations")) perturbations = g.input("perturbations");
  const Tensor* pert = perturbations ? &*perturbations : nullptr;
  parity::Produced out;
  if (opt.device == "pjrt") {
    // One recorded program: each stream's latent and context are Meta inputs bound to the file's
    // values; what the forward reads on the host (timesteps, sigmas, positions, masks,
    // perturbations, the RoPE tables and AdaLN rows built from them) enters it as constants.
    std::vector<std::pair<Tensor, Tensor>> bind;
    auto meta = [&bind](const Tensor& h) {
      bind.emplace_back(Tensor::empty(h.shape(), h.dtype(), Device::Meta), h);
      return bind.back().first;
    };
    std::optional<Modality> rv = video, ra = audio;
    for (std::optional<Modality>* m : {&rv, &ra})
      if (*m) {
        (*m)->latent = meta((*m)->latent);
        (*m)->context = meta((*m)->context);
      }
    Trace trace;
    DiTOutput y;
    {
      RecordingScope rec(trace);
      y = model.forward(rv ? &*rv : nullptr, ra ? &*ra : nullptr, pert, &taps);
    }
    std::vector<Tensor> outs;
    std::vector<std::string> names;
    if (y.video.defined()) outs.push_back(y.video), names.push_back("output.video");
    if (y.audio.defined()) outs.push_back(y.audio), names.push_back("output.audio");
    for (const auto& [name, t] : taps) {
      if (t.device() == Device::Meta) outs.push_back(t), names.push_back("inter." + name);
      else out["inter." + name] = t;  // computed on the host from host inputs (the AdaLN rows)
    }
    const std::vector<Tensor> got = pjrt::Session::get(opt.pjrt_plugin).run(trace, outs, bind);
    for (size_t i = 0; i < got.size(); ++i) out[names[i]] = got[i];
    return out;
  }
  const DiTOutput y = model.forward(video ? &*video : nullptr, audio ? &*audio : nullptr, pert, &taps);
  if (y.video.defined()) out["output.video"] = y.video;
  if (y.audio.defined()) out["output.audio"] = y.audio;
  for (auto& [name, t] : taps) out["inter." + name] = t;
  return out;
}

}  // namespace

void register_dit_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind("ltx2.dit", run_dit, /*takes_loras=*/true, /*takes_quantize=*/false, /*takes_pjrt=*/true);
  });
}

}  // namespace vidax::ltx2
