// The LTX-2 vocoder against the official ltx_core Vocoder (tests/golden/ltx2/ltx2_vocoder_*.safetensors,
// tools/golden/ltx2_vocoder.py): the waveform at fp32 through kind ltx2.vocoder; the bundled
// checkpoint's `vocoder.` prefix; controls that must fail (a changed resblock weight, a changed
// upsample bias; for AMP1 a Snake parameter, an anti-aliasing filter); bad config, input and parameters.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/ltx2/vocoder.h"
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
