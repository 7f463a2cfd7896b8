// The LTX-2 audio-video DiT against the official ltx_core LTXModel (tests/golden/ltx2/ltx2_dit_*.safetensors,
// tools/golden/ltx2_dit.py): both streams, the cross-modal attention and the text masks (ltx2_dit_av),
// the LTX-2.3 features (gated attention, cross-attention AdaLN, prompt AdaLN, bias-free FFN:
// ltx2_dit_av23), the video-only model with the 19B caption projection and interleaved RoPE
// (ltx2_dit_video), at fp32 through kind ltx2.dit, every per-block tap included.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <unistd.h>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/ltx2/dit.h"
#include "ltx2_golden.h"
#include "parity/parity.h"
#include "test_diff.h"
#include "translate/inspect.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

using test::ltx2::golden;

void expect_golden(const char* name, int outputs, const char* precision = "fp32", double bound = 1e-5) {
  const parity::Report rep = test::ltx2::expect_golden_rows(name, precision, bound);
  int compared_outputs = 0;
  for (const auto& c : rep.rows)
    if (c.name.rfind("output", 0) == 0) ++compared_outputs;
  EXPECT_EQ(compared_outputs, outputs);
}

}  // namespace

TEST(Ltx2DiTGolden, AudioVideoMaskedBatch2MatchesTheReferenceFp32) { expect_golden("ltx2_dit_av.safetensors", 2); }
TEST(Ltx2DiTGolden, AudioVideo23GatedCrossAdaLNMatchesTheReferenceFp32) {
  expect_golden("ltx2_dit_av23.safetensors", 2);
}
TEST(Ltx2DiTGolden, VideoOnlyCaptionProjectionInterleavedMatchesTheReferenceFp32) {
  expect_golden("ltx2_dit_video.safetensors", 1);
}
// The keyframe marker, self-attention masks (dense video, key-only audio) and STG perturbations
// (per sample, and all samples: the value pass-through and a skipped V2A).
TEST(Ltx2DiTGolden, ConditioningMasksAndPerturbationsMatchTheReferenceFp32) {
  expect_golden("ltx2_dit_av_cond.safetensors", 2);
}
TEST(Ltx2DiTGolden, AudioOnlyMatchesTheReferenceFp32) { expect_golden("ltx2_dit_audio.safetensors", 1); }
// Modality.enabled = False on one stream: not updated, still read by the other.
TEST(Ltx2DiTGolden, DisabledVideoMatchesTheReferenceFp32) { expect_golden("ltx2_dit_av_video_off.safetensors", 2); }
TEST(Ltx2DiTGolden, DisabledAudioMatchesTheReferenceFp32) { expect_golden("ltx2_dit_av_audio_off.safetensors", 2); }

// `vidax parity --precision bf16` on every file: every output and tap within the bf16 bound (rel L2 1e-2).
TEST(Ltx2DiTGolden, EveryFilePassesAtBf16) {
  expect_golden("ltx2_dit_av.safetensors", 2, "bf16", 1e-2);
  expect_golden("ltx2_dit_av23.safetensors", 2, "bf16", 1e-2);
  expect_golden("ltx2_dit_video.safetensors", 1, "bf16", 1e-2);
  expect_golden("ltx2_dit_av_cond.safetensors", 2, "bf16", 1e-2);
  expect_golden("ltx2_dit_audio.safetensors", 1, "bf16", 1e-2);
  expect_golden("ltx2_dit_av_video_off.safetensors", 2, "bf16", 1e-2);
  expect_golden("ltx2_dit_av_audio_off.safetensors", 2, "bf16", 1e-2);
}


namespace {

struct Loaded {
  io::Checkpoint file;
  ltx2::DiTConfig cfg;
  nlohmann::json config;
  std::map<std::string, Tensor> params;
  std::optional<ltx2::Modality> video, audio;
};

std::optional<ltx2::Modality> modality(const io::Checkpoint& f, const std::string& s) {
  const std::string p = "input." + s + ".";
  if (!f.contains(p + "latent")) return std::nullopt;
  ltx2::Modality m{f.get(p + "latent"), f.get(p + "sigma"), f.get(p + "timesteps"), f.get(p + "positions"),
                   f.get(p + "context"), std::nullopt, std::nullopt, std::nullopt, true};
  if (f.contains(p + "enabled")) m.enabled = f.get(p + "enabled").to_f64_vector()[0] != 0;
  if (f.contains(p + "context_mask")) m.context_mask = f.get(p + "context_mask");
  if (f.contains(p + "attention_mask")) m.attention_mask = f.get(p + "attention_mask");
  if (f.contains(p + "keyframes_mask")) m.keyframes_mask = f.get(p + "keyframes_mask");
  return m;
}

Loaded load(const char* name) {
  Loaded l{io::Checkpoint::open(golden(name)), {}, {}, {}, {}, {}};
  l.config = nlohmann::json::parse(l.file.metadata().at("config"));
  l.cfg = ltx2::DiTConfig::from_json(l.config);
  for (const std::string& n : l.file.names())
    if (!translate::is_golden_io_key(n)) l.params[n] = l.file.get(n);
  l.video = modality(l.file, "video");
  l.audio = modality(l.file, "audio");
  return l;
}

ltx2::LTXModel build(const Loaded& l, std::map<std::string, Tensor> params, DType compute = DType::F32) {
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
  ltx2::LTXModel m(l.cfg, src, compute);
  src.expect_all_taken();
  return m;
}

ltx2::DiTOutput run(const ltx2::LTXModel& m, const std::optional<ltx2::Modality>& v,
                    const std::optional<ltx2::Modality>& a, const Tensor* perturbations = nullptr) {
  return m.forward(v ? &*v : nullptr, a ? &*a : nullptr, perturbations);
}

double max_abs(const Tensor& want, const Tensor& got) { return test::diff(want, got).max_abs; }

// Every token of every sample at one position: RoPE then rotates all queries and keys alike, which
// leaves every dot product as it is (the identity rotation's attention).
Tensor constant_positions(const Tensor& p) { return ops::add_scalar(ops::scale(p, 0.0), 0.5); }

}  // namespace

// A changed cross-modal weight moves the other stream: audio -> video through audio_to_video_attn,
// video -> audio through video_to_audio_attn; a changed text mask moves its stream.
TEST(Ltx2DiT, ControlsFail) {
  const Loaded l = load("ltx2_dit_av.safetensors");
  const Tensor want_v = l.file.get("output.video"), want_a = l.file.get("output.audio");
  const ltx2::DiTOutput base = run(build(l, l.params), l.video, l.audio);
  EXPECT_LE(max_abs(want_v, base.video), 1e-5);
  EXPECT_LE(max_abs(want_a, base.audio), 1e-5);
  for (const char* key : {"transformer_blocks.1.audio_to_video_attn.to_k.weight",
                          "transformer_blocks.0.scale_shift_table_a2v_ca_audio"}) {
    auto params = l.params;
    params[key] = ops::scale(params.at(key), 1.2);
    EXPECT_GT(max_abs(want_v, run(build(l, params), l.video, l.audio).video), 1e-4) << key;
  }
  {
    auto params = l.params;
    const std::string key = "transformer_blocks.1.video_to_audio_attn.to_v.weight";
    params[key] = ops::scale(params.at(key), 1.2);
    const ltx2::DiTOutput y = run(build(l, params), l.video, l.audio);
    EXPECT_GT(max_abs(want_a, y.audio), 1e-4);
    EXPECT_LE(max_abs(want_v, y.video), 1e-5);  // block 1's V2A reaches the video stream nowhere
  }
  std::optional<ltx2::Modality> v = l.video;
  v->context_mask = Tensor::from_i64(std::vector<int64_t>(static_cast<size_t>(v->context_mask->numel()), 1),
                                     v->context_mask->shape());
  EXPECT_GT(max_abs(want_v, run(build(l, l.params), v, l.audio).video), 1e-4);  // the mask is not a no-op
}

// RoPE is not a no-op (the port bug class of issue 20): with every token at one position the self
// and cross RoPE rotate all q and k alike, and each output must move well past the bound; moving
// only the audio positions moves the video output through the cross-modal RoPE's k_pe.
TEST(Ltx2DiT, RopeIsNotANoOp) {
  const Loaded l = load("ltx2_dit_av23.safetensors");
  const ltx2::LTXModel m = build(l, l.params);
  const Tensor want_v = l.file.get("output.video"), want_a = l.file.get("output.audio");
  std::optional<ltx2::Modality> v = l.video, a = l.audio;
  v->positions = constant_positions(v->positions);
  a->positions = constant_positions(a->positions);
  const ltx2::DiTOutput flat = run(m, v, a);
  EXPECT_GT(max_abs(want_v, flat.video), 1e-3);
  EXPECT_GT(max_abs(want_a, flat.audio), 1e-3);
  // Audio positions shifted by 0.3 s: audio self-attention only sees relative positions (no change
  // there), the cross-modal attention sees the audio against the video timeline.
  a = l.audio;
  a->positions = ops::add_scalar(a->positions, 0.3);
  const ltx2::DiTOutput shifted = run(m, l.video, a);
  EXPECT_GT(max_abs(want_v, shifted.video), 1e-4);
}

// A video-only run of the audio-video model (the reference allows audio=None) skips the
// cross-modal attention: the same as the video-only golden's model is not, so check it against the
// AV model's own output with the A2V attention's output projection zeroed.
TEST(Ltx2DiT, VideoAloneOnTheAudioVideoModelSkipsCrossModal) {
  const Loaded l = load("ltx2_dit_av23.safetensors");
  const ltx2::DiTOutput alone = run(build(l, l.params), l.video, std::nullopt);
  EXPECT_FALSE(alone.audio.defined());
  auto params = l.params;
  for (int i = 0; i < 2; ++i) {
    const std::string p = "transformer_blocks." + std::to_string(i) + ".audio_to_video_attn.to_out.0.";
    params[p + "weight"] = ops::scale(params.at(p + "weight"), 0.0);
    params[p + "bias"] = ops::scale(params.at(p + "bias"), 0.0);
  }
  const ltx2::DiTOutput zeroed = run(build(l, params), l.video, l.audio);
  EXPECT_LE(max_abs(zeroed.video, alone.video), 1e-6);
  EXPECT_GT(max_abs(l.file.get("output.video"), alone.video), 1e-4);
}

// The bundled checkpoint's spelling (`model.diffusion_model.` prefix) loads through the kind.
TEST(Ltx2DiT, BundledPrefixLoads) {
  engine::register_builtins();
  const Loaded l = load("ltx2_dit_video.safetensors");
  std::map<std::string, Tensor> t;
  for (const std::string& n : l.file.names())
    t[translate::is_golden_io_key(n) ? n : "model.diffusion_model." + n] = l.file.get(n);
  const fs::path p = fs::temp_directory_path() / ("ltx2_dit_prefixed_" + std::to_string(::getpid()) + ".safetensors");
  io::save_safetensors(p.string(), t, l.file.metadata());
  const parity::Report rep = parity::run(p.string(), parity::Options{});
  fs::remove(p);
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
}

// bf16 compute (the linears in bf16, AdaLN / norms / softmax / residuals in fp32): a stated bound.
TEST(Ltx2DiT, Bf16WithinItsBound) {
  for (const char* name : {"ltx2_dit_av.safetensors", "ltx2_dit_av23.safetensors"}) {
    const Loaded l = load(name);
    const ltx2::DiTOutput y = run(build(l, l.params, DType::BF16), l.video, l.audio);
    const double rv = test::rel_l2(l.file.get("output.video"), y.video);
    const double ra = test::rel_l2(l.file.get("output.audio"), y.audio);
    std::printf("  %s bf16 rel_l2 video %.3g audio %.3g\n", name, rv, ra);
    EXPECT_LE(rv, 1e-2);
    EXPECT_LE(ra, 1e-2);
    EXPECT_GT(rv, 1e-6);  // bf16 is really used
  }
}

TEST(Ltx2DiT, BadConfigIsAnError) {
  const Loaded l = load("ltx2_dit_av.safetensors");
  auto with = [&](const char* key, const nlohmann::json& v) {
    nlohmann::json j = l.config;
    if (v.is_discarded()) j.erase(key);
    else j[key] = v;
    return j;
  };
  const nlohmann::json gone = nlohmann::json(nlohmann::json::value_t::discarded);
  EXPECT_NO_THROW(ltx2::DiTConfig::from_json(l.config));
  EXPECT_NO_THROW(ltx2::DiTConfig::from_json(nlohmann::json{{"transformer", l.config}}));  // the metadata form
  EXPECT_THROW(ltx2::DiTConfig::from_json(with("frequencies_precision", gone)), Error);  // fp32 build: not here
  EXPECT_THROW(ltx2::DiTConfig::from_json(with("dropout", 0.1)), Error);
  EXPECT_THROW(ltx2::DiTConfig::from_json(with("qk_norm", gone)), Error);  // checked like the configurator
  EXPECT_THROW(ltx2::DiTConfig::from_json(with("audio_num_attention_heads", 4)), Error);
  EXPECT_THROW(ltx2::DiTConfig::from_json(with("cross_attention_dim", 48)), Error);
  EXPECT_THROW(ltx2::DiTConfig::from_json(with("rope_type", "complex")), Error);
  EXPECT_THROW(ltx2::DiTConfig::from_json(with("model_type", "ltx image model")), Error);
  EXPECT_THROW(ltx2::DiTConfig::from_json(with("caption_proj_before_connector", false)), Error);  // no caption_channels
  EXPECT_THROW(ltx2::DiTConfig::from_json(with("num_layers", "two")), Error);
  // A missing parameter is an error naming it; so is an unused one.
  auto params = l.params;
  params.erase("transformer_blocks.1.audio_to_video_attn.k_norm.weight");
  EXPECT_THROW(build(l, params), Error);
  params = l.params;
  params["transformer_blocks.2.attn1.to_q.weight"] = params.at("transformer_blocks.1.attn1.to_q.weight");
  EXPECT_THROW(build(l, params), Error);
}

TEST(Ltx2DiT, BadInputIsAnError) {
  const Loaded l = load("ltx2_dit_av.safetensors");
  const ltx2::LTXModel m = build(l, l.params);
  EXPECT_THROW(run(m, std::nullopt, std::nullopt), Error);
  auto bad = [&](auto edit, bool on_video = true) {
    std::optional<ltx2::Modality> v = l.video, a = l.audio;
    edit(on_video ? *v : *a);
    EXPECT_THROW(run(m, v, a), Error);
  };
  bad([](ltx2::Modality& x) { x.latent = x.latent.slice(2, 0, 8); });              // channels
  bad([](ltx2::Modality& x) { x.sigma = x.sigma.slice(0, 0, 1); });                // one sigma for B = 2
  bad([](ltx2::Modality& x) { x.timesteps = x.timesteps.slice(1, 0, 3); });        // neither per sample nor per token
  bad([](ltx2::Modality& x) { x.positions = x.positions.slice(2, 0, 4); });        // tokens
  bad([](ltx2::Modality& x) { x.positions = x.positions.slice(1, 0, 1); }, true);  // 1 axis for video
  bad([](ltx2::Modality& x) { x.context = x.context.slice(2, 0, 8); });            // width
  bad([](ltx2::Modality& x) { x.context_mask = ops::cast(*x.context_mask, DType::F32); });  // float (additive) mask
  bad([](ltx2::Modality& x) {  // a value 2
    std::vector<int64_t> m(static_cast<size_t>(x.context_mask->numel()), 1);
    m[1] = 2;
    x.context_mask = Tensor::from_i64(m, x.context_mask->shape());
  });
  bad([](ltx2::Modality& x) { x.context_mask = x.context_mask->slice(1, 0, 3); }, false);   // length
  // Audio into the video-only model.
  const Loaded vo = load("ltx2_dit_video.safetensors");
  EXPECT_THROW(run(build(vo, vo.params), vo.video, l.audio), Error);
}

// Each conditioning input is not a no-op: without the keyframe marker, a self-attention mask or the
// perturbations, the outputs move past the bound; a wrong-shaped one is an error.
TEST(Ltx2DiT, ConditioningControlsFail) {
  const Loaded l = load("ltx2_dit_av_cond.safetensors");
  const ltx2::LTXModel m = build(l, l.params);
  const Tensor want_v = l.file.get("output.video"), want_a = l.file.get("output.audio");
  const Tensor pert = l.file.get("input.perturbations");
  const ltx2::DiTOutput y = run(m, l.video, l.audio, &pert);
  EXPECT_LE(max_abs(want_v, y.video), 1e-5);
  EXPECT_LE(max_abs(want_a, y.audio), 1e-5);
  std::optional<ltx2::Modality> v = l.video, a = l.audio;
  v->keyframes_mask.reset();
  EXPECT_GT(max_abs(want_v, run(m, v, l.audio, &pert).video), 1e-4);
  v = l.video;
  v->attention_mask.reset();
  EXPECT_GT(max_abs(want_v, run(m, v, l.audio, &pert).video), 1e-4);
  a->attention_mask.reset();
  EXPECT_GT(max_abs(want_a, run(m, l.video, a, &pert).audio), 1e-4);
  const ltx2::DiTOutput none = run(m, l.video, l.audio, nullptr);
  EXPECT_GT(max_abs(want_v, none.video), 1e-4);
  EXPECT_GT(max_abs(want_a, none.audio), 1e-4);
  // Sample 0 keeps its video self-attention and A2V everywhere: with sample 1's video perturbations
  // lifted, sample 0's video output stays (within 1e-5) and sample 1's moves.
  std::vector<float> keep = pert.to_f32_vector();  // [4, 2, 2]
  for (int t : {0, 2})
    for (int blk = 0; blk < 2; ++blk) keep[static_cast<size_t>((t * 2 + blk) * 2 + 1)] = 1.0f;
  const Tensor lifted = Tensor::from_f32(keep, pert.shape());
  const Tensor yl = run(m, l.video, l.audio, &lifted).video;
  EXPECT_LE(max_abs(want_v.slice(0, 0, 1), yl.slice(0, 0, 1)), 1e-5);
  EXPECT_GT(max_abs(want_v.slice(0, 1, 2), yl.slice(0, 1, 2)), 1e-4);
  // Bad shapes.
  EXPECT_THROW(run(m, l.video, l.audio, &l.params.at("scale_shift_table")), Error);  // not [4, 2, 2]
  v = l.video;
  v->attention_mask = v->attention_mask->slice(2, 0, 4);
  EXPECT_THROW(run(m, v, l.audio, &pert), Error);
  v = l.video;
  v->keyframes_mask = v->keyframes_mask->slice(1, 0, 3);
  EXPECT_THROW(run(m, v, l.audio, &pert), Error);
  // The marker's parameter is required when the config says so.
  auto params = l.params;
  params.erase("keyframes_abs_pos_embedding");
  EXPECT_THROW(build(l, params), Error);
}

// A text mask equals dropping the masked tokens: a prefix mask (run as kv_lens) and a gapped one
// (run as the -FLT_MAX bias) against the unmasked run on the kept tokens alone.
TEST(Ltx2DiT, TextMaskEqualsDroppedTokens) {
  const Loaded l = load("ltx2_dit_av.safetensors");
  const ltx2::LTXModel m = build(l, l.params);
  const int64_t L = l.video->context.size(1);
  ASSERT_EQ(L, 5);
  auto kept_only = [&](const std::vector<int64_t>& keep) {
    std::vector<Tensor> cols;
    for (int64_t j : keep) cols.push_back(l.video->context.slice(1, j, j + 1));
    std::optional<ltx2::Modality> v = l.video;
    v->context = ops::concat(cols, 1);
    v->context_mask.reset();
    return run(m, v, l.audio).video;
  };
  auto masked = [&](const std::vector<int64_t>& row) {
    std::optional<ltx2::Modality> v = l.video;
    std::vector<int64_t> mm;
    for (int b = 0; b < 2; ++b) mm.insert(mm.end(), row.begin(), row.end());
    v->context_mask = Tensor::from_i64(mm, {2, L});
    return run(m, v, l.audio).video;
  };
  EXPECT_LE(max_abs(kept_only({0, 1, 2}), masked({1, 1, 1, 0, 0})), 1e-5);  // kv_lens
  EXPECT_LE(max_abs(kept_only({0, 2, 3, 4}), masked({1, 0, 1, 1, 1})), 1e-5);  // bias
  EXPECT_GT(max_abs(kept_only({0, 1, 2}), masked({1, 1, 1, 1, 1})), 1e-4);
}

// A batch whose samples have different positions (per-sample RoPE tables) equals each sample run
// alone; with one set of positions for both samples, both equal the first.
TEST(Ltx2DiT, PerSamplePositionsEqualSeparateRuns) {
  const Loaded l = load("ltx2_dit_av23.safetensors");
  const ltx2::LTXModel m = build(l, l.params);
  // Stretched positions: the relative distances change, so the self-attention RoPE matters too.
  auto shifted = [](const ltx2::Modality& x, double by) {
    ltx2::Modality y = x;
    y.positions = ops::scale(x.positions, by);
    return y;
  };
  auto batch2 = [](const ltx2::Modality& a, const ltx2::Modality& b) {
    ltx2::Modality y = a;
    y.latent = ops::concat({a.latent, b.latent}, 0);
    y.sigma = ops::concat({a.sigma, b.sigma}, 0);
    y.timesteps = ops::concat({a.timesteps, b.timesteps}, 0);
    y.positions = ops::concat({a.positions, b.positions}, 0);
    y.context = ops::concat({a.context, b.context}, 0);
    return y;
  };
  const ltx2::Modality v1 = shifted(*l.video, 1.5), a1 = shifted(*l.audio, 0.75);
  const ltx2::DiTOutput first = run(m, l.video, l.audio), second = run(m, v1, a1);
  const ltx2::DiTOutput both = run(m, batch2(*l.video, v1), batch2(*l.audio, a1));
  EXPECT_LE(max_abs(first.video, both.video.slice(0, 0, 1)), 1e-5);
  EXPECT_LE(max_abs(second.video, both.video.slice(0, 1, 2)), 1e-5);
  EXPECT_LE(max_abs(first.audio, both.audio.slice(0, 0, 1)), 1e-5);
  EXPECT_LE(max_abs(second.audio, both.audio.slice(0, 1, 2)), 1e-5);
  EXPECT_GT(max_abs(first.video, second.video), 1e-4);  // the stretch matters
  EXPECT_GT(max_abs(first.audio, second.audio), 1e-4);
  // Video-only through the same model (no cross-modal RoPE): the self-attention tables alone.
  const Tensor v_first = run(m, l.video, std::nullopt).video, v_second = run(m, v1, std::nullopt).video;
  const Tensor v_both = run(m, batch2(*l.video, v1), std::nullopt).video;
  EXPECT_LE(max_abs(v_first, v_both.slice(0, 0, 1)), 1e-5);
  EXPECT_LE(max_abs(v_second, v_both.slice(0, 1, 2)), 1e-5);
  EXPECT_GT(max_abs(v_first, v_second), 1e-4);
}

// A disabled stream's own blocks do not run: its output is the projection of its patchified
// input alone (the same with the other stream changed), and enabling it moves the output.
TEST(Ltx2DiT, DisabledStreamIsNotUpdated) {
  const Loaded l = load("ltx2_dit_av_video_off.safetensors");
  ASSERT_TRUE(l.file.contains("input.video.enabled"));
  const ltx2::LTXModel m = build(l, l.params);
  std::optional<ltx2::Modality> v = l.video, a = l.audio;
  v->enabled = false;
  const ltx2::DiTOutput off = run(m, v, a);
  EXPECT_LE(max_abs(l.file.get("output.video"), off.video), 1e-5);
  EXPECT_LE(max_abs(l.file.get("output.audio"), off.audio), 1e-5);
  a->latent = ops::scale(a->latent, 0.5);
  EXPECT_LE(max_abs(off.video, run(m, v, a).video), 1e-6);   // nothing reaches a disabled stream
  EXPECT_GT(max_abs(off.audio, run(m, v, a).audio), 1e-4);
  v->enabled = true;
  EXPECT_GT(max_abs(off.video, run(m, v, l.audio).video), 1e-4);
}
