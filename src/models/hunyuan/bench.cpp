// `vidax bench` for HunyuanVideo 1.0 (bench.h): the LLM text encoder, the DiT steps and the tiled
// VAE decode on random weights of the preset's shapes.
#include "models/hunyuan/bench.h"

#include <algorithm>

#include "core/error.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/dit.h"
#include "models/hunyuan/presets.h"
#include "models/hunyuan/rope.h"
#include "models/hunyuan/t2v.h"
#include "models/hunyuan/vae.h"
#include "pipeline/memory_plan.h"
#include "text/llama_config.h"
#include "text/llama_encoder.h"

namespace vidax::hunyuan {

using nlohmann::json;
using namespace vidax::pipeline;  // the bench helpers

namespace {

constexpr const char* kQuantizeHint =
    "use --weights-dtype q8_0 or q4_k for the DiT (its matrices quantized), or a machine with more memory";

constexpr double kEmbeddedGuidance = 6.0;  // the presets' --embedded-cfg-scale (presets.h)

DType compute_of(const std::string& precision) {
  VIDAX_CHECK(precision == "fp32" || precision == "bf16",
              "bench: --precision " << precision << ": HunyuanVideo runs fp32 or bf16");
  return precision == "bf16" ? DType::BF16 : DType::F32;
}

Tensor mask_of(int64_t n, int64_t valid) {  // [1, n] I64, the first `valid` entries 1
  std::vector<int64_t> m(static_cast<size_t>(n), 0);
  std::fill(m.begin(), m.begin() + std::min(n, valid), 1);
  return Tensor::from_i64(m, {1, n});
}

}  // namespace

json run_bench(const BenchOptions& opt, const BenchLog& log) {
  const Preset& preset = hunyuan::preset(opt.model);
  refuse_unsupported_options(opt, "HunyuanVideo");
  VIDAX_CHECK(opt.vae_tile == 0, "bench: --vae-tile " << opt.vae_tile
                                                      << ": HunyuanVideo's VAE decodes in the reference's tiles "
                                                         "(spatial and temporal, overlap 0.25); no other tile size");
  const DType compute = compute_of(opt.precision);
  const DiTConfig cfg = DiTConfig::from_json(preset.dit);
  const VAEConfig vcfg = VAEConfig::from_json(preset.vae);
  const BenchGrid grid = bench_grid(opt, geometry_of(cfg, vcfg, preset.text_len));
  const double available =
      opt.memory_limit_bytes > 0 ? opt.memory_limit_bytes : static_cast<double>(mem_available_bytes());
  const int64_t valid = std::min(opt.prompt_tokens, preset.text_len);

  json r = bench_report_header(opt, opt.precision, log);
  r["latent_shape"] = {cfg.in_channels, grid.lat_f, grid.lat_h, grid.lat_w};
  r["tokens"] = grid.tokens;
  r["text_tokens"] = {{"text", preset.text_len}, {"text_valid", valid}};
  r["cfg"] = opt.cfg;
  const uint64_t seed = opt.seed;

  // Text encoder: the LLM up to hidden_states[-3] (hidden_state_skip_layer 2, no final norm).
  if (opt.text_encoder) {
    const text::LlamaConfig lc =
        preset.llm.is_null() ? text::LlamaConfig::llava_llama3_8b() : text::LlamaConfig::from_json(preset.llm);
    const translate::ParamSpec spec = text::llama_params(lc);
    check_fits(opt.model + " text encoder (LLM) in " + opt.precision, param_bytes(spec, compute), available, kQuantizeHint);
    log("text encoder: random LLM weights (" + std::to_string(gb(param_bytes(spec, compute))) + " GB)");
    const text::LlamaTextEncoder enc(lc, random_lookup(spec, compute, seed + 11), compute);
    std::vector<int64_t> ids(static_cast<size_t>(preset.text_len));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(splitmix64(seed + i) % lc.vocab_size);
    const Tensor tid = Tensor::from_i64(ids, {1, preset.text_len});
    const Tensor tmask = mask_of(preset.text_len, valid);
    std::vector<Sample> s;
    for (int rep = 0; rep < opt.repeats; ++rep)
      s.push_back(timed([&] { (void)enc.hidden_state(tid, tmask, lc.num_hidden_layers - 2); }));
    r["text_encoder"] = stats(s);
    r["text_encoder"]["prompt_tokens"] = valid;
    r["text_encoder"]["batch_rows"] = preset.text_len;
    r["text_encoder"]["weights"] = "random (real shapes)";
    r["text_encoder_seconds"] = r["text_encoder"]["wall_median"];
    log("text encoder: " + std::to_string(r["text_encoder_seconds"].get<double>()) + " s (wall, median)");
  }

  if (opt.steps > 0) {
    const RandomWeights w = RandomWeights::parse(opt.weights_dtype, seed);
    const translate::ParamSpec spec = dit_params(cfg);
    const double weight_bytes = w.resident_bytes(param_shapes(spec), compute);
    const double act_bytes = 2.0 * 4.0 * static_cast<double>(grid.tokens + preset.text_len) *
                             static_cast<double>(cfg.mlp_hidden() + 8 * cfg.hidden_size);
    r["dit_parameters"] = spec.parameter_count();
    r["dit_memory_estimate_bytes"] = weight_bytes + act_bytes;
    r["weights_dtype"] = w.label();
    r["offload"] = false;
    check_fits(opt.model + " DiT in " + opt.precision + (w.narrow() ? " with " + w.type_name + " matrices" : ""),
               weight_bytes + act_bytes, available, kQuantizeHint);
    log("DiT: random weights of " + opt.model + " (about " + std::to_string(gb(weight_bytes)) + " GB resident)");
    nn::ParamSource src =
        nn::ParamSource::generated([&](const std::string& n, const Shape& s) { return w.draw(n, s); }, "random weights");
    const HunyuanDiT dit(cfg, src, compute);
    r["dit_weights"] = "random (real shapes)";

    auto inputs_at = [&](const Tensor& x, int context) {
      DiTInputs d;
      d.x = x;
      d.text_states = random_input({1, preset.text_len, cfg.text_states_dim}, seed + 1 + 6 * context);
      d.text_mask = mask_of(preset.text_len, valid);
      d.text_states_2 = random_input({1, cfg.text_states_dim_2}, seed + 5 + 6 * context);
      const RotaryTables tables = rotary_pos_embed(cfg.rope_dim_list, dit.patch_grid(x.shape()), cfg.rope_theta);
      d.freqs_cos = tables.cos;
      d.freqs_sin = tables.sin;
      if (cfg.guidance_embed) d.guidance = {embedded_guidance_value(kEmbeddedGuidance, compute)};
      return d;
    };
    const Tensor x = random_input({1, cfg.in_channels, grid.lat_f, grid.lat_h, grid.lat_w}, seed + 3);
    const Tensor tiny = random_input({1, cfg.in_channels, cfg.patch_size[0], cfg.patch_size[1], cfg.patch_size[2]}, seed + 2);
    std::vector<DiTInputs> contexts;  // the prompt's, and with --cfg the negative prompt's
    for (int c = 0; c < (opt.cfg ? 2 : 1); ++c) contexts.push_back(inputs_at(x, c));
    DiTInputs warm = inputs_at(tiny, 0);
    warm.t = {999.0};
    r["forwards_per_step"] = contexts.size();
    DitSteps steps;
    steps.warm_up = [&] { (void)dit.forward(warm); };
    steps.step = [&](double t) {
      Tensor y;
      for (DiTInputs d : contexts) {
        d.t = {t};
        y = dit.forward(d);
      }
      return y;
    };
    time_dit_steps(opt, compute, steps, r, log);
  }

  // VAE decode of the video's latent (fp32), tiled in space and time as the pipeline decodes.
  if (opt.vae) {
    const VAEParts parts{.encoder = false, .decoder = true};
    double vae_bytes = 0;
    for (const auto& [n, s] : HunyuanVAE::parameter_shapes(vcfg, parts)) vae_bytes += 4.0 * static_cast<double>(shape_numel(s));
    log("VAE: random fp32 decoder weights (" + std::to_string(gb(vae_bytes)) + " GB)");
    nn::ParamSource vsrc = nn::ParamSource::generated(
        [&](const std::string& n, const Shape& s) { return random_param(n, s, DType::F32, seed); }, "random weights");
    const HunyuanVAE vae(vcfg, vsrc, parts, DType::F32);
    const Tensor z = random_input({1, vcfg.latent_channels, grid.lat_f, grid.lat_h, grid.lat_w}, seed + 4);
    const VAETiling tiling{.spatial = true, .temporal = true};
    time_vae_decode(
        opt, [&] { return vae.decode_tiled(z, tiling); },
        [&](const Tensor& v) {
          VIDAX_CHECK(v.dim() == 5 && v.size(2) == opt.frames && v.size(3) == opt.height && v.size(4) == opt.width,
                      "bench: the VAE decode gave " << v.str() << ", expected [1, 3, " << opt.frames << ", "
                                                    << opt.height << ", " << opt.width << "]");
        },
        r, log);
    r["vae_weights"] = "random (real shapes)";
    r["vae_tiling"] = {{"spatial", true}, {"temporal", true}, {"overlap", VAETiling::kOverlap}};
  }

  r["peak_rss_bytes"] = peak_rss_bytes();
  r["machine"]["load_average_1min_end"] = load_average_1min();
  return r;
}

}  // namespace vidax::hunyuan
