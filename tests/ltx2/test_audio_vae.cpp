// The LTX-2 audio VAE decoder and encoder against the official ltx_core AudioDecoder / AudioEncoder
// (tests/golden/ltx2/ltx2_audio_vae_*.safetensors, tools/golden/ltx2_audio_vae.py): the spectrogram and the
// inter.* taps at fp32 through kinds ltx2.audio_vae.decode / .encode; the bundled checkpoint's
// audio_vae.decoder. / audio_vae.per_channel_statistics. names; controls that must fail (a changed statistic,
// attention weight, upsample / downsample bias); bad config, input and parameters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/ltx2/audio_vae.h"
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
  ltx2::AudioVaeConfig cfg;
};

Loaded load(const char* name) {
  Loaded l{test::ltx2::load_golden(name), {}};
  l.cfg = ltx2::AudioVaeConfig::from_json(l.config);
  return l;
}

Tensor run(const Loaded& l, std::map<std::string, Tensor> params, const std::string& prefix = "") {
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
  const ltx2::AudioDecoder d(l.cfg, src, prefix);
  src.expect_all_taken();
  return d.forward(l.file.get("input.sample"));
}


void expect_golden(const char* name, int taps) {
  EXPECT_EQ(test::ltx2::expect_golden_rows(name).compared, taps + 1);  // output + every inter.* tap
}

}  // namespace

// The published structure (pixel norm, causal along time, mid attention, 3 levels): conv_in, mid.block_2, 3
// level ends, 2 upsamples, conv_out.
TEST(Ltx2AudioVaeGolden, DecodeMatchesTheReferenceFp32) { expect_golden("ltx2_audio_vae_decode.safetensors", 8); }
// GroupNorm, non-causal, attention in the up path, zero padding to more mel bins / frames, B = 2.
TEST(Ltx2AudioVaeGolden, VariantsMatchTheReferenceFp32) {
  expect_golden("ltx2_audio_vae_decode_variants.safetensors", 6);
}
// Causal along the mel axis (width), no mid attention, the mel crop, B = 2.
TEST(Ltx2AudioVaeGolden, WidthCausalMatchesTheReferenceFp32) {
  expect_golden("ltx2_audio_vae_decode_width.safetensors", 6);
}

TEST(Ltx2AudioVae, OutputShapeAndBundledNames) {
  const Loaded l = load("ltx2_audio_vae_decode.safetensors");
  const Tensor want = l.file.get("output");
  std::map<std::string, Tensor> bundled;
  for (const auto& [k, v] : l.params)
    bundled[k.rfind("per_channel_statistics.", 0) == 0 ? "audio_vae." + k : "audio_vae.decoder." + k] = v;
  // The decoder reads one prefix; the parity kind maps the bundled spelling, so go through it.
  const std::string tmp =
      (fs::temp_directory_path() / ("ltx2_audio_vae_bundled_" + std::to_string(::getpid()) + ".safetensors")).string();
  std::map<std::string, Tensor> file = bundled;
  file["input.sample"] = l.file.get("input.sample");
  file["output"] = want;
  io::save_safetensors(tmp, file, {{"kind", "ltx2.audio_vae.decode"}, {"config", l.file.metadata().at("config")}});
  engine::register_builtins();
  parity::Options opt;
  opt.precision = "fp32";
  const parity::Report rep = parity::run(tmp, opt);
  fs::remove(tmp);
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(rep.compared, 1);
  const Tensor y = run(l, l.params);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 4 * 5 - 3, 16}));
  EXPECT_LE(max_abs_diff(want, y), 1e-5);
}

// Controls: a changed statistic, mid attention weight and upsample bias must move the output.
TEST(Ltx2AudioVae, ControlsFail) {
  const Loaded l = load("ltx2_audio_vae_decode.safetensors");
  const Tensor want = l.file.get("output");
  for (const char* key :
       {"per_channel_statistics.mean-of-means", "per_channel_statistics.std-of-means", "mid.attn_1.q.weight",
        "up.1.upsample.conv.conv.bias", "up.0.block.0.nin_shortcut.conv.weight"}) {
    auto params = l.params;
    ASSERT_TRUE(params.count(key)) << key;
    params[key] = ops::add_scalar(params[key], 0.05);
    EXPECT_GT(max_abs_diff(want, run(l, params)), 1e-4) << key;
  }
}

TEST(Ltx2AudioVae, BadConfigAndInputAreErrors) {
  using nlohmann::json;
  const auto dd = [](json d) { return json{{"model", {{"params", {{"ddconfig", d}}}}}}; };
  EXPECT_THROW(ltx2::AudioVaeConfig::from_json(dd({{"no_such_key", 1}})), Error);
  EXPECT_THROW(ltx2::AudioVaeConfig::from_json(dd({{"norm_type", "batch"}})), Error);
  EXPECT_THROW(ltx2::AudioVaeConfig::from_json(dd({{"causality_axis", "time"}})), Error);
  EXPECT_THROW(ltx2::AudioVaeConfig::from_json(dd({{"norm_type", "group"}})), Error);  // causal + group
  EXPECT_THROW(ltx2::AudioVaeConfig::from_json(dd({{"ch", 2.5}})), Error);
  EXPECT_THROW(ltx2::AudioVaeConfig::from_json(dd({{"attn_type", "flash"}})), Error);
  const ltx2::AudioVaeConfig defaults = ltx2::AudioVaeConfig::from_json(json::object());
  EXPECT_EQ(defaults.ch, 128);
  EXPECT_EQ(defaults.z_channels, 8);
  EXPECT_FALSE(defaults.mel_bins.has_value());
  const ltx2::AudioVaeConfig nested = ltx2::AudioVaeConfig::from_json(
      json{{"audio_vae", {{"preprocessing", {{"mel", {{"n_mel_channels", 64}}}}}, {"variables", {{"mel_bins", 32}}}}}});
  EXPECT_EQ(nested.mel_bins.value_or(0),
            64);  // mel.n_mel_channels before variables.mel_bins

  const Loaded l = load("ltx2_audio_vae_decode.safetensors");
  nn::ParamSource src = nn::ParamSource::from_map(l.params, "golden");
  const ltx2::AudioDecoder d(l.cfg, src);
  const Tensor x = l.file.get("input.sample");
  EXPECT_THROW(d.forward(x.slice(3, 0, 2)),
               Error);                                     // 2 latent mel bins: 2 x 2 != ch 8
  EXPECT_THROW(d.forward(x.select(0, 0)), Error);          // 3-D
  EXPECT_THROW(d.forward(ops::concat({x, x}, 1)), Error);  // 4 channels
  auto params = l.params;
  params.erase("mid.attn_1.proj_out.bias");
  nn::ParamSource missing = nn::ParamSource::from_map(params, "golden");
  EXPECT_THROW(ltx2::AudioDecoder(l.cfg, missing), Error);
  ltx2::AudioVaeConfig odd = l.cfg;
  odd.ch = 9;  // not a multiple of z_channels 2
  nn::ParamSource src2 = nn::ParamSource::from_map(l.params, "golden");
  EXPECT_THROW(ltx2::AudioDecoder(odd, src2), Error);
}

// The encoder: the published structure (causal along time, 3 levels, double_z): conv_in, 3 level ends, 2
// downsamples, mid.block_2, conv_out.
TEST(Ltx2AudioVaeGolden, EncodeMatchesTheReferenceFp32) { expect_golden("ltx2_audio_vae_encode.safetensors", 8); }
// GroupNorm, non-causal, down-path attention, average pooling, double_z false, B = 2.
TEST(Ltx2AudioVaeGolden, EncodeVariantsMatchTheReferenceFp32) {
  expect_golden("ltx2_audio_vae_encode_variants.safetensors", 6);
}
// Causal along width, attn_type none (no attention anywhere), B = 2.
TEST(Ltx2AudioVaeGolden, EncodeWidthCausalMatchesTheReferenceFp32) {
  expect_golden("ltx2_audio_vae_encode_width.safetensors", 6);
}

TEST(Ltx2AudioVae, EncoderControlsAndErrors) {
  const Loaded l = load("ltx2_audio_vae_encode.safetensors");
  const Tensor want = l.file.get("output");
  const Tensor x = l.file.get("input.spectrogram");
  const auto encode = [&](std::map<std::string, Tensor> params, const Tensor& in) {
    nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
    const ltx2::AudioEncoder e(l.cfg, src);
    src.expect_all_taken();
    return e.forward(in);
  };
  const Tensor y = encode(l.params, x);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 5, 4}));
  EXPECT_LE(max_abs_diff(want, y), 1e-5);
  for (const char* key : {"per_channel_statistics.mean-of-means", "per_channel_statistics.std-of-means",
                          "down.0.downsample.conv.bias", "mid.attn_1.v.weight", "conv_out.conv.bias"}) {
    auto params = l.params;
    ASSERT_TRUE(params.count(key)) << key;
    params[key] = ops::add_scalar(params[key], 0.05);
    EXPECT_GT(max_abs_diff(want, encode(params, x)), 1e-4) << key;
  }
  EXPECT_THROW(encode(l.params, x.slice(3, 0, 8)),
               Error);                                            // 8 mel bins: 2 x 2 latent values != ch 8
  EXPECT_THROW(encode(l.params, x.select(0, 0)), Error);          // 3-D
  EXPECT_THROW(encode(l.params, ops::concat({x, x}, 1)), Error);  // 4 channels
  ltx2::AudioVaeConfig linear = l.cfg;
  linear.attn_type = "linear";
  nn::ParamSource src = nn::ParamSource::from_map(l.params, "golden");
  EXPECT_THROW(ltx2::AudioEncoder(linear, src), Error);
  ltx2::AudioVaeConfig pooled = l.cfg;  // average pooling with a causal axis:
                                        // refused as the reference does
  pooled.resamp_with_conv = false;
  nn::ParamSource src2 = nn::ParamSource::from_map(l.params, "golden");
  EXPECT_THROW(ltx2::AudioEncoder(pooled, src2), Error);
}
