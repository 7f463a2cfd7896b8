// The LTX-2 latent upsampler against the official ltx_core LatentUpsampler
// (tests/golden/ltx2/ltx2_upsampler_*.safetensors, tools/golden/ltx2_upsampler.py): output and every
// module tap at fp32 through kind ltx2.upsampler (spatial x2, rational x1.5, temporal x2, both x2, dims 2);
// upsample_video's un-normalize / normalize sides; controls that must fail; bad config and input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/ltx2/upsampler.h"
#include "parity/parity.h"
#include "test_diff.h"
#include "translate/inspect.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

std::string golden(const char* name) {
  return (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "ltx2" / name).string();
}

struct Loaded {
  io::Checkpoint file;
  ltx2::UpsamplerConfig cfg;
  std::map<std::string, Tensor> params;
};

Loaded load(const char* name) {
  Loaded l{io::Checkpoint::open(golden(name)), {}, {}};
  l.cfg = ltx2::UpsamplerConfig::from_json(nlohmann::json::parse(l.file.metadata().at("config")));
  for (const std::string& n : l.file.names())
    if (!translate::is_golden_io_key(n)) l.params[n] = l.file.get(n);
  return l;
}

Tensor run(const Loaded& l, std::map<std::string, Tensor> params) {
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
  const ltx2::LatentUpsampler up(l.cfg, src);
  src.expect_all_taken();
  return up.forward(l.file.get("input.latent"));
}

double max_abs_diff(const Tensor& want, const Tensor& got) {
  EXPECT_EQ(want.shape(), got.shape());
  return test::diff(want, got).max_abs;
}

void expect_golden(const char* name, int compared) {
  engine::register_builtins();
  parity::Options opt;
  opt.precision = "fp32";
  opt.rtol = 1e-5;
  const parity::Report rep = parity::run(golden(name), opt);
  for (const auto& c : rep.rows) {
    std::printf("  %s %-32s max_abs=%.3g rel_l2=%.3g\n", name, c.name.c_str(), c.max_abs, c.rel_l2);
    EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << c.name << " " << c.note;
    EXPECT_LE(c.max_abs, 1e-5) << c.name;
  }
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
  EXPECT_EQ(rep.compared, compared);
}

}  // namespace

// output + initial_conv, res_blocks.0, upsampler, post_upsample_res_blocks.0, final_conv
TEST(Ltx2UpsamplerGolden, SpatialX2MatchesTheReferenceFp32) { expect_golden("ltx2_upsampler_x2.safetensors", 6); }
TEST(Ltx2UpsamplerGolden, RationalX1_5Batch2MatchesTheReferenceFp32) {
  expect_golden("ltx2_upsampler_rational.safetensors", 4);
}
TEST(Ltx2UpsamplerGolden, TemporalX2MatchesTheReferenceFp32) {
  expect_golden("ltx2_upsampler_temporal.safetensors", 4);
}
TEST(Ltx2UpsamplerGolden, Dims2PerFrameBatch2MatchesTheReferenceFp32) {
  expect_golden("ltx2_upsampler_2d.safetensors", 6);
}

// Spatial and temporal x2 (Conv3d to 8 C + 3-D shuffle); the parameters stored as F16 (fp16 values).
TEST(Ltx2UpsamplerGolden, SpatioTemporalX2MatchesTheReferenceFp32) {
  expect_golden("ltx2_upsampler_st.safetensors", 4);
}

// The other rational scales: x0.75 (blur at stride 4) and x4 (stride 1: no blur); F16 parameters.
TEST(Ltx2UpsamplerGolden, RationalX0_75MatchesTheReferenceFp32) {
  expect_golden("ltx2_upsampler_rational_x0_75.safetensors", 4);
}
TEST(Ltx2UpsamplerGolden, RationalX4MatchesTheReferenceFp32) {
  expect_golden("ltx2_upsampler_rational_x4.safetensors", 4);
}

TEST(Ltx2Upsampler, OutputShapes) {
  const Loaded x2 = load("ltx2_upsampler_x2.safetensors");
  EXPECT_EQ(run(x2, x2.params).shape(), (Shape{1, 4, 2, 8, 6}));
  const Loaded r = load("ltx2_upsampler_rational.safetensors");
  EXPECT_EQ(run(r, r.params).shape(), (Shape{2, 4, 2, 6, 9}));  // 4 x 1.5, 6 x 1.5
  const Loaded t = load("ltx2_upsampler_temporal.safetensors");
  EXPECT_EQ(run(t, t.params).shape(), (Shape{1, 4, 5, 3, 4}));  // 2 F - 1
  const Loaded r075 = load("ltx2_upsampler_rational_x0_75.safetensors");
  EXPECT_EQ(run(r075, r075.params).shape(), (Shape{1, 4, 1, 6, 4}));  // 8 x 0.75, ceil(5 x 0.75)
  const Loaded st = load("ltx2_upsampler_st.safetensors");
  EXPECT_EQ(run(st, st.params).shape(), (Shape{1, 4, 3, 6, 4}));  // 2 F - 1, 2 H, 2 W
}

// upsample_video: normalized in, normalized out, the upsampler between on the raw latent.
TEST(Ltx2Upsampler, UpsampleVideoUnNormalizesAndNormalizes) {
  const Loaded l = load("ltx2_upsampler_x2.safetensors");
  nn::ParamSource src = nn::ParamSource::from_map(l.params, "golden");
  const ltx2::LatentUpsampler up(l.cfg, src);
  ltx2::vae::PerChannelStatistics stats;
  stats.mean = Tensor::from_f32({0.5f, -1.0f, 0.25f, 2.0f}, {1, 4, 1, 1, 1});
  stats.std = Tensor::from_f32({2.0f, 0.5f, 1.5f, 3.0f}, {1, 4, 1, 1, 1});
  const Tensor raw = l.file.get("input.latent");
  const Tensor y = ltx2::upsample_video(stats.normalize(raw), stats, up);
  EXPECT_LE(max_abs_diff(stats.normalize(l.file.get("output")), y), 1e-5);
  // Feeding the normalized latent straight to the upsampler is not the same thing.
  EXPECT_GT(max_abs_diff(stats.normalize(l.file.get("output")), up.forward(stats.normalize(raw))), 1e-3);
}

// Controls: a changed post-upsample norm, upsampler bias and blur kernel must move the output.
TEST(Ltx2Upsampler, ControlsFail) {
  const Loaded l = load("ltx2_upsampler_x2.safetensors");
  const Tensor want = l.file.get("output");
  EXPECT_LE(max_abs_diff(run(l, l.params), want), 1e-5);
  for (const char* key : {"post_upsample_res_blocks.0.norm1.weight", "upsampler.0.bias", "res_blocks.0.conv2.weight"}) {
    auto params = l.params;
    ASSERT_TRUE(params.count(key)) << key;
    params[key] = ops::add_scalar(params[key], 0.05);
    EXPECT_GT(max_abs_diff(run(l, params), want), 1e-4) << key;
  }
  const Loaded r = load("ltx2_upsampler_rational.safetensors");
  auto params = r.params;
  params["upsampler.blur_down.kernel"] = ops::scale(params["upsampler.blur_down.kernel"], 1.1);
  EXPECT_GT(max_abs_diff(run(r, params), r.file.get("output")), 1e-4);
}

TEST(Ltx2Upsampler, BadConfigAndInputAreErrors) {
  using nlohmann::json;
  using C = ltx2::UpsamplerConfig;
  const C d = C::from_json(json::object());
  EXPECT_EQ(d.in_channels, 128);
  EXPECT_EQ(d.mid_channels, 512);
  EXPECT_EQ(d.num_blocks_per_stage, 4);
  EXPECT_EQ(d.dims, 3);
  EXPECT_NO_THROW(C::from_json(json{{"_class_name", "LatentUpsampler"}}));
  EXPECT_THROW(C::from_json(json{{"_class_name", "VideoEncoder"}}), Error);
  EXPECT_THROW(C::from_json(json{{"no_such_key", 1}}), Error);
  EXPECT_THROW(C::from_json(json{{"mid_channels", 48}}), Error);  // GroupNorm(32)
  EXPECT_THROW(C::from_json(json{{"dims", 1}}), Error);
  EXPECT_THROW(C::from_json(json{{"spatial_upsample", false}}), Error);
  EXPECT_THROW(C::from_json(json{{"rational_resampler", true}, {"spatial_scale", 3.0}}), Error);
  EXPECT_NO_THROW(C::from_json(json{{"rational_resampler", true}, {"spatial_scale", 0.75}}));
  EXPECT_THROW(C::from_json(json{{"dims", 2}, {"temporal_upsample", true}}), Error);
  EXPECT_THROW(C::from_json(json{{"dims", 2}, {"rational_resampler", true}, {"spatial_scale", 1.5}}), Error);
  EXPECT_THROW(C::from_json(json{{"temporal_upsample", true}, {"rational_resampler", true}}), Error);
  EXPECT_THROW(C::from_json(json{{"in_channels", "128"}}), Error);

  const Loaded l = load("ltx2_upsampler_x2.safetensors");
  nn::ParamSource src = nn::ParamSource::from_map(l.params, "golden");
  const ltx2::LatentUpsampler up(l.cfg, src);
  const Tensor x = l.file.get("input.latent");
  EXPECT_THROW(up.forward(ops::cast(x, DType::BF16)), Error);
  EXPECT_THROW(up.forward(x.slice(1, 0, 3)), Error);  // 3 channels
  EXPECT_THROW(up.forward(x.select(2, 0)), Error);    // 4-D
  auto params = l.params;
  params.erase("post_upsample_res_blocks.0.norm2.bias");
  nn::ParamSource missing = nn::ParamSource::from_map(params, "golden");
  EXPECT_THROW(ltx2::LatentUpsampler(l.cfg, missing), Error);
}
