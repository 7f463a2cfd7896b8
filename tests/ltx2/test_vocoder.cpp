// The LTX-2 vocoder against the official ltx_core Vocoder (tests/golden/ltx2/ltx2_vocoder_*.safetensors,
// tools/golden/ltx2_vocoder.py): the waveform at fp32 through kind ltx2.vocoder; the bundled
// checkpoint's `vocoder.` prefix; controls that must fail (a changed resblock weight, a changed
// upsample bias; for AMP1 a Snake parameter, an anti-aliasing filter); bad config, input and parameters.
// The LTX-2.3 VocoderWithBWE (ltx2_vocoder_bwe*): output and its four intermediates, the bundled
// names through the kind, controls (the mel filterbank, the DFT bases, the BWE generator), the
// published config, bad configs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/ltx2/vocoder.h"
#include "models/ltx2/vocoder_bwe.h"
#include "parity/parity.h"
#include "ltx2_golden.h"
#include "test_diff.h"
#include "translate/inspect.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

using test::ltx2::golden;
using test::ltx2::max_abs_diff;

// The golden file and its parameters (ltx2_golden.h), with its config parsed.
struct Loaded : test::ltx2::GoldenParams {
  ltx2::VocoderConfig cfg;
};

Loaded load(const char* name) {
  Loaded l{test::ltx2::load_golden(name), {}};
  l.cfg = ltx2::VocoderConfig::from_json(l.config);
  return l;
}

Tensor run(const Loaded& l, std::map<std::string, Tensor> params, const std::string& prefix = "") {
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
  const ltx2::Vocoder v(l.cfg, src, prefix);
  src.expect_all_taken();
  return v.forward(l.file.get("input.x"));
}


void expect_golden(const char* name) { EXPECT_EQ(test::ltx2::expect_golden_rows(name).compared, 1); }

}  // namespace

TEST(Ltx2VocoderGolden, TanhMatchesTheReferenceFp32) { expect_golden("ltx2_vocoder_tiny.safetensors"); }
TEST(Ltx2VocoderGolden, ClampNoBiasBatch2MatchesTheReferenceFp32) {
  expect_golden("ltx2_vocoder_clamp_b2.safetensors");
}

// AMP1 (BigVGAN v2, the LTX-2.3 generator): anti-aliased Snake / SnakeBeta, filters from the state dict.
TEST(Ltx2VocoderGolden, AmpSnakeBetaMatchesTheReferenceFp32) {
  expect_golden("ltx2_vocoder_amp_snakebeta.safetensors");
}
TEST(Ltx2VocoderGolden, AmpSnakeNoFinalActivationBatch2MatchesTheReferenceFp32) {
  expect_golden("ltx2_vocoder_amp_snake.safetensors");
}

// A changed Snake parameter and a changed anti-aliasing filter must move the AMP1 output.
TEST(Ltx2Vocoder, AmpControlsFail) {
  const Loaded l = load("ltx2_vocoder_amp_snakebeta.safetensors");
  const Tensor want = l.file.get("output");
  EXPECT_LE(max_abs_diff(run(l, l.params), want), 1e-5);
  for (const char* key : {"resblocks.2.acts1.1.act.beta", "act_post.act.alpha", "resblocks.0.acts2.0.upsample.filter",
                          "act_post.downsample.lowpass.filter"}) {
    auto params = l.params;
    ASSERT_TRUE(params.count(key)) << key;
    params[key] = ops::add_scalar(params[key], 0.05);
    EXPECT_GT(max_abs_diff(run(l, params), want), 1e-4) << key;
  }
}

TEST(Ltx2Vocoder, OutputShapeAndBundledPrefix) {
  const Loaded l = load("ltx2_vocoder_tiny.safetensors");
  const Tensor want = l.file.get("output");
  std::map<std::string, Tensor> prefixed;
  for (const auto& [k, v] : l.params) prefixed["vocoder." + k] = v;
  const Tensor y = run(l, prefixed, "vocoder.");
  EXPECT_EQ(y.shape(), (Shape{1, 2, 6 * 2 * 3}));
  EXPECT_LE(max_abs_diff(y, want), 1e-5);
}

// Controls: a changed resblock weight and a changed input must move the output past the bound.
TEST(Ltx2Vocoder, ControlsFail) {
  const Loaded l = load("ltx2_vocoder_tiny.safetensors");
  const Tensor want = l.file.get("output");
  auto params = l.params;
  const std::string key = "resblocks.3.convs1.2.weight";  // the last stage's second resblock, dilation 4
  ASSERT_TRUE(params.count(key));
  params[key] = ops::scale(params[key], 1.1);
  EXPECT_GT(max_abs_diff(run(l, params), want), 1e-4);
  params = l.params;
  params["ups.1.bias"] = ops::add_scalar(params["ups.1.bias"], 0.01);
  EXPECT_GT(max_abs_diff(run(l, params), want), 1e-4);
}

TEST(Ltx2Vocoder, BadConfigAndInputAreErrors) {
  using nlohmann::json;
  EXPECT_THROW(ltx2::VocoderConfig::from_json(json{{"resblock", "2"}}), Error);
  EXPECT_THROW(ltx2::VocoderConfig::from_json(json{{"resblock", "AMP1"}, {"activation", "relu"}}), Error);
  EXPECT_THROW(ltx2::VocoderConfig::from_json(json{{"upsample_rates", {2, 2}}}), Error);  // 5 kernel sizes
  EXPECT_THROW(ltx2::VocoderConfig::from_json(json{{"no_such_arg", 1}}), Error);
  EXPECT_THROW(ltx2::VocoderConfig::from_json(json{{"resblock_dilation_sizes", {{1, 3}, {1, 3}, {1, 3}}}}), Error);
  EXPECT_THROW(ltx2::VocoderConfig::from_json(json{{"upsample_rates", {4}}, {"upsample_kernel_sizes", {2}}}), Error);
  const ltx2::VocoderConfig defaults = ltx2::VocoderConfig::from_json(json::object());
  EXPECT_EQ(defaults.upsample_initial_channel, 1024);
  EXPECT_EQ(defaults.final_channels(), 32);

  const Loaded l = load("ltx2_vocoder_tiny.safetensors");
  nn::ParamSource src = nn::ParamSource::from_map(l.params, "golden");
  const ltx2::Vocoder v(l.cfg, src);
  EXPECT_THROW(v.forward(ops::cast(l.file.get("input.x"), DType::BF16)), Error);
  EXPECT_THROW(v.forward(l.file.get("input.x").slice(3, 0, 32)), Error);   // 32 mel bins
  EXPECT_THROW(v.forward(l.file.get("input.x").select(1, 0)), Error);      // 3-D (mono): fails in the reference too
  EXPECT_THROW(v.forward(ops::concat({l.file.get("input.x").select(1, 0), l.file.get("input.x").select(1, 0)}, 2)),
               Error);  // [B, 2T, 64] is 3-D even with 128 = 2 x 64 values per frame
  // A missing parameter is an error naming it.
  auto params = l.params;
  params.erase("conv_post.bias");
  nn::ParamSource missing = nn::ParamSource::from_map(params, "golden");
  EXPECT_THROW(ltx2::Vocoder(l.cfg, missing), Error);
}

// ---- VocoderWithBWE (LTX-2.3) --------------------------------------------------------------------

namespace {

Tensor run_bwe(const test::ltx2::GoldenParams& g, std::map<std::string, Tensor> params) {
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
  const ltx2::VocoderWithBwe v(ltx2::VocoderBweConfig::from_json(g.config), src);
  src.expect_all_taken();
  return v.forward(g.file.get("input.x"));
}

// The published LTX-2.3 checkpoint's config.vocoder (embedded metadata).
nlohmann::json published_bwe_config() {
  return nlohmann::json::parse(R"({
    "vocoder": {"upsample_initial_channel": 1536, "resblock": "AMP1", "upsample_rates": [5, 2, 2, 2, 2, 2],
                "resblock_kernel_sizes": [3, 7, 11], "upsample_kernel_sizes": [11, 4, 4, 4, 4, 4],
                "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]], "stereo": true,
                "use_tanh_at_final": false, "activation": "snakebeta", "use_bias_at_final": false},
    "bwe": {"upsample_initial_channel": 512, "resblock": "AMP1", "upsample_rates": [6, 5, 2, 2, 2],
            "resblock_kernel_sizes": [3, 7, 11], "upsample_kernel_sizes": [12, 11, 4, 4, 4],
            "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]], "stereo": true,
            "use_tanh_at_final": false, "activation": "snakebeta", "use_bias_at_final": false,
            "apply_final_activation": false, "input_sampling_rate": 16000, "output_sampling_rate": 48000,
            "hop_length": 80, "n_fft": 512, "win_size": 512, "num_mels": 64}})");
}

}  // namespace

// 16 -> 48 kHz, the base waveform padded 30 -> 32 samples for whole mel frames; B = 2 at x2, no padding.
TEST(Ltx2VocoderGolden, BweMatchesTheReferenceFp32) {
  EXPECT_EQ(test::ltx2::expect_golden_rows("ltx2_vocoder_bwe.safetensors").compared, 5);
}
TEST(Ltx2VocoderGolden, BweBatch2ClampMatchesTheReferenceFp32) {
  EXPECT_EQ(test::ltx2::expect_golden_rows("ltx2_vocoder_bwe_b2.safetensors").compared, 5);
}

// The bundled checkpoint spells every name vocoder.<name> (vocoder.vocoder.conv_pre.weight,
// vocoder.mel_stft.mel_basis): the kind strips the prefix once.
TEST(Ltx2VocoderBwe, BundledNamesThroughTheKind) {
  const auto g = test::ltx2::load_golden("ltx2_vocoder_bwe.safetensors");
  std::map<std::string, Tensor> file;
  for (const auto& [k, v] : g.params) file["vocoder." + k] = v;
  ASSERT_TRUE(file.count("vocoder.vocoder.conv_pre.weight"));
  file["input.x"] = g.file.get("input.x");
  file["output"] = g.file.get("output");
  const std::string tmp =
      (fs::temp_directory_path() / ("ltx2_vocoder_bwe_bundled_" + std::to_string(::getpid()) + ".safetensors"))
          .string();
  io::save_safetensors(tmp, file, {{"kind", "ltx2.vocoder"}, {"config", g.file.metadata().at("config")}});
  engine::register_builtins();
  parity::Options opt;
  opt.precision = "fp32";
  const parity::Report rep = parity::run(tmp, opt);
  fs::remove(tmp);
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(rep.compared, 1);
  const Tensor y = run_bwe(g, g.params);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 5 * 6 * 3}));  // T x prod(rates) x 48 / 16
}

// The mel filterbank, the DFT bases and a BWE generator weight must move the output; the inverse
// STFT bases (loaded, never read by the forward) must not.
TEST(Ltx2VocoderBwe, ControlsFail) {
  const auto g = test::ltx2::load_golden("ltx2_vocoder_bwe.safetensors");
  const Tensor want = g.file.get("output");
  EXPECT_LE(max_abs_diff(run_bwe(g, g.params), want), 1e-5);
  for (const char* key : {"mel_stft.mel_basis", "mel_stft.stft_fn.forward_basis", "bwe_generator.conv_pre.weight",
                          "bwe_generator.resblocks.1.convs2.0.weight"}) {
    auto params = g.params;
    ASSERT_TRUE(params.count(key)) << key;
    params[key] = ops::scale(params[key].to(DType::F32), 1.2);
    EXPECT_GT(max_abs_diff(run_bwe(g, params), want), 1e-4) << key;
  }
  auto params = g.params;
  params["mel_stft.stft_fn.inverse_basis"] = ops::scale(params["mel_stft.stft_fn.inverse_basis"].to(DType::F32), 2.0);
  EXPECT_EQ(max_abs_diff(run_bwe(g, params), want), max_abs_diff(run_bwe(g, g.params), want));
  params = g.params;
  params.erase("mel_stft.mel_basis");
  nn::ParamSource missing = nn::ParamSource::from_map(params, "golden");
  EXPECT_THROW(ltx2::VocoderWithBwe(ltx2::VocoderBweConfig::from_json(g.config), missing), Error);
}

TEST(Ltx2VocoderBwe, PublishedConfigParses) {
  const nlohmann::json j = published_bwe_config();
  ASSERT_TRUE(ltx2::VocoderBweConfig::is_bwe(j));
  EXPECT_FALSE(ltx2::VocoderBweConfig::is_bwe(j["vocoder"]));
  const auto c = ltx2::VocoderBweConfig::from_json(j);
  EXPECT_EQ(c.ratio(), 3);
  EXPECT_EQ(c.n_freqs(), 257);
  EXPECT_EQ(c.vocoder.upsample_initial_channel, 1536);
  EXPECT_TRUE(c.vocoder.apply_final_activation);  // the configurator's default for the base
  EXPECT_FALSE(c.vocoder.use_tanh_at_final);      // clamp
  EXPECT_FALSE(c.bwe.apply_final_activation);
  EXPECT_EQ(c.vocoder.output_sampling_rate, 16000);
  EXPECT_EQ(c.bwe.output_sampling_rate, 48000);
  const auto again = ltx2::VocoderBweConfig::from_json(c.to_json());
  EXPECT_EQ(again.to_json(), c.to_json());
}

TEST(Ltx2VocoderBwe, BadConfigsAreErrors) {
  using test::ltx2::expect_error;
  auto with = [](const char* part, const char* key, const nlohmann::json& v) {
    nlohmann::json j = published_bwe_config();
    if (v.is_null())
      j[part].erase(key);
    else
      j[part][key] = v;
    return j;
  };
  auto parse = [](const nlohmann::json& j) { return [j] { ltx2::VocoderBweConfig::from_json(j); }; };
  expect_error(parse(with("bwe", "resblock", "1")), "bwe.resblock");
  expect_error(parse(with("vocoder", "activation", "snake")), "vocoder.activation");
  expect_error(parse(with("vocoder", "stereo", nullptr)), "vocoder.stereo");
  expect_error(parse(with("bwe", "hop_length", nullptr)), "hop_length");
  expect_error(parse(with("bwe", "num_mels", 80)), "num_mels");
  expect_error(parse(with("bwe", "win_size", 400)), "win_size");
  expect_error(parse(with("bwe", "apply_final_activation", true)), "apply_final_activation");
  expect_error(parse(with("bwe", "hop_length", 160)), "upsamples x240");
  expect_error(parse(with("bwe", "no_such_arg", 1)), "no_such_arg");
  nlohmann::json top = published_bwe_config();
  top["mel"] = 1;
  expect_error(parse(top), "unknown key 'mel'");

  const auto g = test::ltx2::load_golden("ltx2_vocoder_bwe.safetensors");
  nn::ParamSource src = nn::ParamSource::from_map(g.params, "golden");
  const ltx2::VocoderWithBwe v(ltx2::VocoderBweConfig::from_json(g.config), src);
  EXPECT_THROW(v.forward(g.file.get("input.x").slice(3, 0, 32)), Error);  // 32 mel bins
  EXPECT_THROW(v.forward(g.file.get("input.x").select(1, 0)), Error);     // mono
}
