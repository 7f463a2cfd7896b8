// `vidax bench` for LTX-2 (bench.h): the audio-video DiT steps and the video decode on random
// weights.
#include "models/ltx2/bench.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "backend/ops.h"
#include "core/rng.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/dit.h"
#include "models/ltx2/guidance.h"
#include "models/ltx2/presets.h"
#include "models/ltx2/prompt.h"
#include "models/ltx2/rope.h"
#include "models/ltx2/t2v.h"
#include "models/ltx2/t2v_run.h"
#include "models/ltx2/video_vae.h"
#include "pipeline/memory_plan.h"
#include "text/gemma3_config.h"
#include "text/gemma3_encoder.h"

namespace vidax::ltx2 {

using nlohmann::json;
using namespace vidax::pipeline;  // the bench helpers

namespace {

constexpr int64_t kVideoChannels = 128, kAudioChannels = 8 * 16;  // the pipeline's latent widths
constexpr double kAudioLatentsPerSecond = 25.0;                  // 16000 / 160 / 4
constexpr const char* kQuantizeHint =
    "use --weights-dtype q8_0 or q4_k for the DiT (its matrices quantized), or a machine with more memory";

// The Gemma-3 a variant runs: the demo's config.json, else Gemma-3-12B (gemma3_config.h's defaults)
// with its layer pattern: every 6th layer full attention, the others sliding.
text::Gemma3Config gemma_config(const Preset& p) {
  if (!p.gemma.is_null()) return text::Gemma3Config::from_json(p.gemma);
  text::Gemma3Config c;
  c.sliding.clear();
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) c.sliding.push_back((i + 1) % 6 != 0);
  return c;
}

}  // namespace

json bench_dit_config(const std::string& model) {
  const Preset& p = preset(model);
  if (!p.config.is_null()) return p.config.at("transformer");
  // ltx-2.3-22b-dev: LTXModel's widths (video 32 heads x 128, audio 32 x 64, 48 layers, contexts
  // 4096 / 2048: the published configs' and dit_config.h's defaults) with LTX-2.3's blocks (the
  // demo's structure, presets.cpp): gated attention, the cross-attention AdaLN, no FFN bias.
  json t = preset(k23TinyDemo).config.at("transformer");
  t["num_attention_heads"] = 32;
  t["attention_head_dim"] = 128;
  t["cross_attention_dim"] = 4096;
  t["audio_num_attention_heads"] = 32;
  t["audio_attention_head_dim"] = 64;
  t["audio_cross_attention_dim"] = 2048;
  t["num_layers"] = 48;
  return t;
}

json run_bench(const BenchOptions& opt, const BenchLog& log) {
  const Preset& preset = ltx2::preset(opt.model);
  refuse_unsupported_options(opt, "LTX-2");
  VIDAX_CHECK(!opt.vae || !preset.config.is_null(),
              "bench: LTX-2: --vae on " << opt.model << ": its VAE's config is in its checkpoint, not in the preset "
                                                        "(the demo's VAE is benchmarked)");
  VIDAX_CHECK(opt.vae_tile == 0, "bench: LTX-2: --vae-tile " << opt.vae_tile
                                                             << ": the pipeline decodes the video untiled");
  VIDAX_CHECK(opt.precision == "fp32" || opt.precision == "bf16",
              "bench: --precision " << opt.precision << ": LTX-2 runs fp32 or bf16");
  const DType compute = opt.precision == "bf16" ? DType::BF16 : DType::F32;
  const json tjson = bench_dit_config(opt.model);
  const DiTConfig cfg = DiTConfig::from_json(tjson);
  const BenchGrid grid = bench_grid(opt, geometry());
  const double fps = preset.variant.defaults.fps;
  const int64_t audio_tokens =
      static_cast<int64_t>(std::llround(static_cast<double>(opt.frames) / fps * kAudioLatentsPerSecond));
  const double available =
      opt.memory_limit_bytes > 0 ? opt.memory_limit_bytes : static_cast<double>(mem_available_bytes());

  json r = bench_report_header(opt, opt.precision, log);
  r["latent_shape"] = {kVideoChannels, grid.lat_f, grid.lat_h, grid.lat_w};
  r["tokens"] = grid.tokens;
  r["audio_tokens"] = audio_tokens;
  r["text_tokens"] = kPromptMaxLength;
  r["cfg"] = opt.cfg;
  const uint64_t seed = opt.seed;

  // Text encoder: Gemma-3's forward on one kPromptMaxLength-row batch (the prompt's tokens valid),
  // every hidden state out (what the feature extractor reads; the extractor and the connectors,
  // small beside it, are not timed).
  if (opt.text_encoder) {
    const text::Gemma3Config gc = gemma_config(preset);
    const translate::ParamSpec spec = text::gemma3_params(gc);
    check_fits(opt.model + " text encoder (Gemma-3) in " + opt.precision, param_bytes(spec, compute), available,
               kQuantizeHint);
    log("text encoder: random Gemma-3 weights (" + std::to_string(gb(param_bytes(spec, compute))) + " GB)");
    const text::Gemma3TextEncoder enc(gc, random_lookup(spec, compute, seed + 11), compute);
    const int64_t L = kPromptMaxLength, valid = std::min(opt.prompt_tokens, L);
    std::vector<int64_t> ids(static_cast<size_t>(L)), mask(static_cast<size_t>(L), 0);
    for (int64_t i = 0; i < L; ++i) {
      ids[static_cast<size_t>(i)] = static_cast<int64_t>(splitmix64(seed + static_cast<uint64_t>(i)) % static_cast<uint64_t>(gc.vocab_size));
      mask[static_cast<size_t>(i)] = i < valid ? 1 : 0;
    }
    const Tensor tid = Tensor::from_i64(ids, {1, L}), tmask = Tensor::from_i64(mask, {1, L});
    std::vector<Sample> s;
    for (int rep = 0; rep < opt.repeats; ++rep) s.push_back(timed([&] { (void)enc.hidden_states(tid, tmask); }));
    r["text_encoder"] = stats(s);
    r["text_encoder"]["prompt_tokens"] = valid;
    r["text_encoder"]["batch_rows"] = L;
    r["text_encoder"]["weights"] = "random (real shapes)";
    r["text_encoder_seconds"] = r["text_encoder"]["wall_median"];
    log("text encoder: " + std::to_string(r["text_encoder_seconds"].get<double>()) + " s (wall, median)");
  }

  if (opt.steps > 0) {
    const RandomWeights w = RandomWeights::parse(opt.weights_dtype, seed);
    const translate::ParamSpec spec = dit_params(cfg);
    const double weight_bytes = w.resident_bytes(param_shapes(spec), compute);
    // The passes of one step: 1, or with --cfg every guider pass of the variant, batched.
    const std::vector<Pass> passes =
        opt.cfg ? guidance_passes(preset.video_guider, preset.audio_guider) : std::vector<Pass>{Pass::Cond};
    const int64_t n = static_cast<int64_t>(passes.size());
    const double act_bytes = static_cast<double>(n) * 4.0 *
                             (10.0 * static_cast<double>(grid.tokens * cfg.inner_dim() + audio_tokens * cfg.audio_inner_dim()) +
                              4.0 * kPromptMaxLength * static_cast<double>(cfg.inner_dim() + cfg.audio_inner_dim()));
    r["dit_parameters"] = spec.parameter_count();
    r["dit_memory_estimate_bytes"] = weight_bytes + act_bytes;
    r["weights_dtype"] = w.label();
    r["offload"] = false;
    check_fits(opt.model + " DiT in " + opt.precision + (w.narrow() ? " with " + w.type_name + " matrices" : ""),
               weight_bytes + act_bytes, available, kQuantizeHint);
    log("DiT: random weights of " + opt.model + " (" + std::to_string(spec.parameter_count() / 1e9) +
        " B parameters, about " + std::to_string(gb(weight_bytes)) + " GB resident)");
    nn::ParamSource src =
        nn::ParamSource::generated([&](const std::string& name, const Shape& s) { return w.draw(name, s); }, "random weights");
    const LTXModel model(cfg, src, compute);
    r["dit_weights"] = "random (real shapes)";

    auto repeat = [](const Tensor& x, int64_t b) { return b == 1 ? x : ops::concat(std::vector<Tensor>(b, x), 0); };
    const Positions vpos = video_positions(grid.lat_f, grid.lat_h, grid.lat_w, fps);
    const Positions apos = audio_positions(audio_tokens);
    const Tensor vctx = random_input({1, kPromptMaxLength, cfg.inner_dim()}, seed + 1);
    const Tensor actx = random_input({1, kPromptMaxLength, cfg.audio_inner_dim()}, seed + 5);
    const Tensor video = repeat(random_input({1, grid.tokens, kVideoChannels}, seed + 3), n);
    const Tensor audio = repeat(random_input({1, audio_tokens, kAudioChannels}, seed + 6), n);
    const Tensor vpos_t = positions_tensor(vpos, n), apos_t = positions_tensor(apos, n);
    const Tensor vctx_n = repeat(vctx, n), actx_n = repeat(actx, n);
    const Tensor masks = perturbation_masks(passes, preset.video_guider, preset.audio_guider, cfg.num_layers, 1);
    const bool perturbs = std::any_of(passes.begin(), passes.end(),
                                      [](Pass p) { return p == Pass::Perturbed || p == Pass::Modality; });
    r["forwards_per_step"] = 1;
    r["passes_per_forward"] = n;
    auto forward = [&](const Tensor& v, const Tensor& vp, const Tensor& a, const Tensor& ap, const Tensor& vc,
                       const Tensor& ac, int64_t b, double t) {
      const Tensor sig = Tensor::full({b}, t / 1000.0, DType::F32);
      Modality vm{v, sig, sig, vp, vc};
      Modality am{a, sig, sig, ap, ac};
      const DiTOutput y = model.forward(&vm, &am, perturbs && b == n ? &masks : nullptr);
      return y.video;
    };
    // Warm-up: one video token and one audio token (packs every weight).
    const Positions v1 = video_positions(1, 1, 1, fps), a1 = audio_positions(1);
    const Tensor tv = random_input({1, 1, kVideoChannels}, seed + 2), ta = random_input({1, 1, kAudioChannels}, seed + 2);
    DitSteps steps;
    steps.warm_up = [&] { (void)forward(tv, positions_tensor(v1, 1), ta, positions_tensor(a1, 1), vctx, actx, 1, 999.0); };
    steps.step = [&](double t) { return forward(video, vpos_t, audio, apos_t, vctx_n, actx_n, n, t); };
    time_dit_steps(opt, compute, steps, r, log);
  }

  // The demo's video decode (fp32, the whole latent as the pipeline decodes it).
  if (opt.vae) {
    const json vjson = preset.config.at("vae");
    log("VAE: random fp32 video decoder weights");
    nn::ParamSource vsrc = nn::ParamSource::generated(
        [&](const std::string& name, const Shape& s) { return random_param(name, s, DType::F32, seed); }, "random weights");
    const VideoDecoder vae(VideoVaeConfig::from_json(vjson), vsrc, "", DType::F32);
    const Tensor z = random_input({1, kVideoChannels, grid.lat_f, grid.lat_h, grid.lat_w}, seed + 4);
    const Shape expect = vae.output_shape(z.shape());
    time_vae_decode(
        opt,
        [&] {
          TorchGenerator gen(seed);
          DecoderConditioning cond;
          cond.generator = &gen;
          return vae.forward(z, {}, cond);
        },
        [&](const Tensor& v) {
          VIDAX_CHECK(v.shape() == expect && v.size(2) == opt.frames && v.size(3) == opt.height && v.size(4) == opt.width,
                      "bench: the VAE decode gave " << v.str() << ", expected [1, 3, " << opt.frames << ", " << opt.height
                                                    << ", " << opt.width << "]");
        },
        r, log);
    r["vae_weights"] = "random (real shapes)";
  }

  r["peak_rss_bytes"] = peak_rss_bytes();
  r["machine"]["load_average_1min_end"] = load_average_1min();
  return r;
}

}  // namespace vidax::ltx2
