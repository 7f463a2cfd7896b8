// The LTX-2 video VAE against the official ltx_core classes (tests/golden/ltx2/ltx2_vae_*.safetensors,
// tools/golden/ltx2_video_vae.py): ConvVideoDecoder.forward and VideoEncoder.forward at fp32 through
// kinds ltx2.vae.decode / ltx2.vae.encode, every intermediate tap too; the bundled checkpoint's key
// spellings; controls that must fail (a changed weight, the statistics, the padding mode, causality);
// bad config, input and parameters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/ltx2/video_vae.h"
#include "models/ltx2/video_vae_tiling.h"
#include "parity/parity.h"
#include "ltx2_golden.h"
#include "test_diff.h"
#include "translate/inspect.h"

using namespace vidax;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using test::ltx2::golden;
using test::ltx2::max_abs_diff;

using Loaded = test::ltx2::GoldenParams;
Loaded load(const char* name) { return test::ltx2::load_golden(name); }

Tensor decode(const Loaded& l, std::map<std::string, Tensor> params, const json& config, DType compute = DType::F32) {
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
  const ltx2::VideoDecoder d(ltx2::VideoVaeConfig::from_json(config), src, "", compute);
  src.expect_all_taken();
  return d.forward(l.file.get("input.sample"));
}

Tensor encode(const Loaded& l, std::map<std::string, Tensor> params, const json& config) {
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
  const ltx2::VideoEncoder e(ltx2::VideoVaeConfig::from_json(config), src);
  src.expect_all_taken();
  return e.forward(l.file.get("input.sample"));
}


// Every output and inter.* tensor of the file compared at fp32 (bound 1e-5 max abs).
void expect_golden(const char* name, int compared) {
  EXPECT_EQ(test::ltx2::expect_golden_rows(name).compared, compared);
}

}  // namespace

// The published LTX-2 decoder's block kinds: res_x, compress_all (residual, multiplier 2); reflect, non-causal.
TEST(Ltx2VideoVaeGolden, DecodeMatchesTheReferenceFp32) { expect_golden("ltx2_vae_decode.safetensors", 8); }
// compress_time / compress_space (plain), res_x_y, attn; causal, zero padding, B = 2.
TEST(Ltx2VideoVaeGolden, DecodeVariantsMatchTheReferenceFp32) {
  expect_golden("ltx2_vae_decode_variants.safetensors", 8);
}
// timestep_conditioning + inject_noise, called as the pipeline calls it (default decode_timestep, a
// seeded generator): the decode-time noise and each resnet's spatial noise drawn in torch's order.
TEST(Ltx2VideoVaeGolden, DecodeTimestepConditionedMatchesTheReferenceFp32) {
  expect_golden("ltx2_vae_decode_timestep.safetensors", 6);
}
// An explicit per-sample input.timestep, B = 2.
TEST(Ltx2VideoVaeGolden, DecodeExplicitTimestepBatch2MatchesTheReferenceFp32) {
  expect_golden("ltx2_vae_decode_timestep_b2.safetensors", 6);
}
// norm_layer group_norm, replicate padding.
TEST(Ltx2VideoVaeGolden, DecodeGroupNormMatchesTheReferenceFp32) {
  expect_golden("ltx2_vae_decode_groupnorm.safetensors", 4);
}
// The published LTX-2 encoder's block kinds: res_x, compress_space_res, compress_time_res, compress_all_res.
TEST(Ltx2VideoVaeGolden, EncodeMatchesTheReferenceFp32) { expect_golden("ltx2_vae_encode.safetensors", 10); }
// Strided compress_* convs, compress_all_x_y, res_x_y, attn; per_channel log variance, reflect padding, B = 2.
TEST(Ltx2VideoVaeGolden, EncodeVariantsMatchTheReferenceFp32) {
  expect_golden("ltx2_vae_encode_variants.safetensors", 10);
}

// The bundled checkpoint's spellings (vae.decoder.*, vae.per_channel_statistics.*) and the ComfyUI
// split file's (decoder.*, bare per_channel_statistics.*) load through the kind as the bare names do.
TEST(Ltx2VideoVae, BundledCheckpointSpellingsThroughTheKind) {
  engine::register_builtins();
  for (const char* name : {"ltx2_vae_decode_variants.safetensors", "ltx2_vae_encode.safetensors"}) {
    const Loaded l = load(name);
    const bool dec = std::string(name).find("decode") != std::string::npos;
    const std::string half = dec ? "decoder." : "encoder.";
    for (const bool bundled : {true, false}) {
      std::map<std::string, Tensor> out;
      for (const auto& [k, v] : l.params) {
        const bool stats = k.rfind("per_channel_statistics.", 0) == 0;
        out[bundled ? "vae." + (stats ? k : half + k) : stats ? k : half + k] = v;
      }
      // The LTX-2.0 checkpoint's statistics buffers no module has (dropped as the reference's
      // non-strict load leaves them).
      const std::string stats = bundled ? "vae.per_channel_statistics." : "per_channel_statistics.";
      out[stats + "channel"] = Tensor::from_f32(std::vector<float>(4, 0.0f), {4});
      out[stats + "mean-of-stds"] = Tensor::from_f32(std::vector<float>(4, 1.0f), {4});
      out["input.sample"] = l.file.get("input.sample");
      out["output"] = l.file.get("output");
      const fs::path tmp =
          fs::temp_directory_path() / ("ltx2_vae_prefix_" + std::to_string(::getpid()) + ".safetensors");
      io::save_safetensors(tmp.string(), out, l.file.metadata());
      parity::Options opt;
      opt.precision = "fp32";
      const parity::Report rep = parity::run(tmp.string(), opt);
      fs::remove(tmp);
      EXPECT_TRUE(rep.ok()) << name << (bundled ? " bundled" : " comfy");
      EXPECT_EQ(rep.compared, 1);
    }
  }
}

// Controls: a changed weight, changed statistics, another padding mode, causality and the residual
// path must each move the decoded video past the bound.
TEST(Ltx2VideoVae, DecoderControlsFail) {
  const Loaded l = load("ltx2_vae_decode.safetensors");
  const Tensor want = l.file.get("output");
  EXPECT_LE(max_abs_diff(want, decode(l, l.params, l.config)), 1e-5);
  for (const char* key : {"up_blocks.1.conv.conv.weight", "up_blocks.2.res_blocks.1.conv2.conv.bias",
                          "per_channel_statistics.std-of-means", "per_channel_statistics.mean-of-means"}) {
    auto params = l.params;
    ASSERT_TRUE(params.count(key)) << key;
    params[key] = ops::add_scalar(ops::scale(params[key], 1.1), 0.01);
    EXPECT_GT(max_abs_diff(want, decode(l, params, l.config)), 1e-4) << key;
  }
  json cfg = l.config;
  cfg["spatial_padding_mode"] = "zeros";
  EXPECT_GT(max_abs_diff(want, decode(l, l.params, cfg)), 1e-4) << "padding";
  cfg = l.config;
  cfg["causal_decoder"] = true;
  EXPECT_GT(max_abs_diff(want, decode(l, l.params, cfg)), 1e-4) << "causal";
  cfg = l.config;
  cfg["decoder_blocks"][1][1]["residual"] = false;
  EXPECT_GT(max_abs_diff(want, decode(l, l.params, cfg)), 1e-4) << "residual";
}

TEST(Ltx2VideoVae, EncoderControlsFail) {
  const Loaded l = load("ltx2_vae_encode.safetensors");
  const Tensor want = l.file.get("output");
  EXPECT_LE(max_abs_diff(want, encode(l, l.params, l.config)), 1e-5);
  for (const char* key : {"down_blocks.3.conv.conv.weight", "conv_out.conv.bias", "per_channel_statistics.std-of-means",
                          "per_channel_statistics.mean-of-means"}) {
    auto params = l.params;
    ASSERT_TRUE(params.count(key)) << key;
    params[key] = ops::add_scalar(ops::scale(params[key], 1.1), 0.01);
    EXPECT_GT(max_abs_diff(want, encode(l, params, l.config)), 1e-4) << key;
  }
  json cfg = l.config;
  cfg["encoder_spatial_padding_mode"] = "replicate";
  EXPECT_GT(max_abs_diff(want, encode(l, l.params, cfg)), 1e-4) << "padding";
  // The shared spatial_padding_mode key wins over encoder_spatial_padding_mode, as in the configurator.
  cfg["spatial_padding_mode"] = "zeros";
  EXPECT_LE(max_abs_diff(want, encode(l, l.params, cfg)), 1e-5) << "shared key";
}

// The conditioned decoder: another seed, another timestep, no noise scale or no table each move the
// output; without a generator it is an error, as is a timestep for an unconditioned decoder.
TEST(Ltx2VideoVae, ConditionedDecoderControlsFail) {
  const Loaded l = load("ltx2_vae_decode_timestep.safetensors");
  const Tensor want = l.file.get("output");
  const ltx2::VideoVaeConfig cfg = ltx2::VideoVaeConfig::from_json(l.config);
  const auto run = [&](std::map<std::string, Tensor> params, uint64_t seed, std::optional<std::vector<float>> t) {
    nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
    const ltx2::VideoDecoder d(cfg, src);
    src.expect_all_taken();
    TorchGenerator gen(seed);
    return d.forward(l.file.get("input.sample"), {}, {.timestep = t, .generator = &gen});
  };
  ASSERT_EQ(l.file.metadata().at("generator_seed"), "7");
  EXPECT_LE(max_abs_diff(want, run(l.params, 7, std::nullopt)), 1e-5);
  EXPECT_LE(max_abs_diff(want, run(l.params, 7, std::vector<float>{0.05f})), 1e-5);  // the default, explicit
  EXPECT_GT(max_abs_diff(want, run(l.params, 8, std::nullopt)), 1e-4) << "seed";
  EXPECT_GT(max_abs_diff(want, run(l.params, 7, std::vector<float>{0.2f})), 1e-4) << "timestep";
  for (const char* key : {"up_blocks.0.res_blocks.1.per_channel_scale2", "up_blocks.2.res_blocks.0.scale_shift_table",
                          "last_scale_shift_table", "up_blocks.2.time_embedder.timestep_embedder.linear_2.bias",
                          "timestep_scale_multiplier"}) {
    auto params = l.params;
    ASSERT_TRUE(params.count(key)) << key;
    params[key] = ops::add_scalar(ops::scale(params[key], 1.1), 0.05);
    EXPECT_GT(max_abs_diff(want, run(params, 7, std::nullopt)), 1e-4) << key;
  }
  nn::ParamSource src = nn::ParamSource::from_map(l.params, "golden");
  const ltx2::VideoDecoder d(cfg, src);
  EXPECT_TRUE(d.uses_noise());
  EXPECT_THROW(d.forward(l.file.get("input.sample")), Error);  // no generator
  TorchGenerator gen(7);
  EXPECT_THROW(
      d.forward(l.file.get("input.sample"), {}, {.timestep = std::vector<float>{0.1f, 0.2f}, .generator = &gen}),
      Error);  // 2 timesteps for a batch of 1
  const Loaded plain = load("ltx2_vae_decode.safetensors");
  nn::ParamSource ps = nn::ParamSource::from_map(plain.params, "golden");
  const ltx2::VideoDecoder pd(ltx2::VideoVaeConfig::from_json(plain.config), ps);
  EXPECT_FALSE(pd.uses_noise());
  EXPECT_THROW(pd.forward(plain.file.get("input.sample"), {}, {.timestep = std::vector<float>{0.05f}}), Error);
}

// bf16 compute (parameters cast, norms in fp32): close to the fp32 reference, not equal.
TEST(Ltx2VideoVae, Bf16DecodeIsClose) {
  const Loaded l = load("ltx2_vae_decode.safetensors");
  const Tensor want = l.file.get("output");
  const test::Diff d = test::diff(want, decode(l, l.params, l.config, DType::BF16));
  std::printf("  bf16 decode max_abs=%.3g rel_l2=%.3g\n", d.max_abs, d.rel_l2);
  EXPECT_LE(d.rel_l2, 2e-2);
  EXPECT_GT(d.max_abs, 1e-6);
}

TEST(Ltx2VideoVae, BadConfigIsAnError) {
  using C = ltx2::VideoVaeConfig;
  const auto expect_error = [](const json& j, const char* needle) {
    try {
      C::from_json(j);
      ADD_FAILURE() << "no error for " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({{"_class_name", "CausalDiffusionVAE"}}, "DiffusionVideoDecoder");
  expect_error({{"decoder", json::object()}}, "DiffusionVideoDecoder");
  expect_error({{"dims", 2}}, "dims");
  expect_error({{"dims", {2, 1}}}, "DualConv3d");
  const auto blocks = [](const std::string& name, const json& params) {
    return json::array({json::array({name, params})});
  };
  expect_error({{"decoder_blocks", blocks("attn_res_x", {{"num_layers", 1}, {"attention_head_dim", 4}})}},
               "UNetMidBlock3D takes no attention_head_dim");
  expect_error({{"latent_log_var", "none"}}, "none");
  expect_error({{"decoder_blocks", blocks("res_x_y", {{"inject_noise", true}})}}, "narrower output");
  expect_error({{"decoder_blocks", blocks("compress_time", {{"residual", true}})}}, "decoder_blocks[0].residual");
  expect_error({{"decoder_blocks", blocks("compress_all_res", 1)}}, "unknown block");
  expect_error({{"decoder_blocks", json::array({"res_x", 1})}}, "must be [name, params]");
  expect_error({{"encoder_blocks", blocks("res_x", 2.5)}}, "integer");
  expect_error({{"norm_layer", "layer_norm"}}, "norm_layer");
  expect_error({{"spatial_padding_mode", "mirror"}}, "spatial_padding_mode");
  expect_error({{"no_such_key", 1}}, "unknown key");
  // The metadata config's "vae" section is read too; the configurator's defaults.
  const C c = C::from_json({{"vae", {{"encoder_blocks", blocks("compress_all_res", {{"multiplier", 2}})}}}});
  EXPECT_EQ(c.latent_channels, 128);
  EXPECT_TRUE(c.timestep_conditioning);
  EXPECT_EQ(c.decoder_padding, ltx2::VaePadding::Reflect);
  EXPECT_EQ(c.encoder_padding, ltx2::VaePadding::Zeros);
  EXPECT_EQ(c.encoder_space_factor(), 8);
  EXPECT_EQ(c.encoder_time_factor(), 2);
  // timestep_conditioning is the configurator's default: the unconditioned golden's parameters then
  // lack the conditioned decoder's, which the strict load names.
  const Loaded l = load("ltx2_vae_decode.safetensors");
  json cfg = l.config;
  cfg.erase("timestep_conditioning");
  nn::ParamSource src = nn::ParamSource::from_map(l.params, "golden");
  try {
    ltx2::VideoDecoder(C::from_json(cfg), src);
    ADD_FAILURE() << "timestep_conditioning built without its parameters";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("time_embedder"), std::string::npos) << e.what();
  }
}

TEST(Ltx2VideoVae, BadInputAndParametersAreErrors) {
  const Loaded d = load("ltx2_vae_decode.safetensors");
  nn::ParamSource src = nn::ParamSource::from_map(d.params, "golden");
  const ltx2::VideoDecoder dec(ltx2::VideoVaeConfig::from_json(d.config), src);
  const Tensor z = d.file.get("input.sample");
  EXPECT_EQ(dec.output_shape(z.shape()), (Shape{1, 3, 9, 48, 32}));
  EXPECT_THROW(dec.forward(z.slice(1, 0, 4)), Error);  // 4 of 8 latent channels
  EXPECT_THROW(dec.forward(z.select(0, 0)), Error);    // 4-D
  EXPECT_THROW(dec.forward(z.slice(4, 0, 1)), Error);  // reflect padding of a 1-pixel-wide latent
  auto missing = d.params;
  missing.erase("up_blocks.1.conv.conv.bias");
  nn::ParamSource m = nn::ParamSource::from_map(missing, "golden");
  EXPECT_THROW(ltx2::VideoDecoder(ltx2::VideoVaeConfig::from_json(d.config), m), Error);
  auto extra = d.params;
  extra["up_blocks.9.conv.conv.bias"] = extra["up_blocks.1.conv.conv.bias"];
  nn::ParamSource x = nn::ParamSource::from_map(extra, "golden");
  const ltx2::VideoDecoder unused(ltx2::VideoVaeConfig::from_json(d.config), x);
  EXPECT_THROW(x.expect_all_taken(), Error);

  const Loaded e = load("ltx2_vae_encode.safetensors");
  nn::ParamSource es = nn::ParamSource::from_map(e.params, "golden");
  const ltx2::VideoEncoder enc(ltx2::VideoVaeConfig::from_json(e.config), es);
  const Tensor v = e.file.get("input.sample");  // [1, 3, 9, 32, 48], factors 4 (time) and 16 (space)
  EXPECT_EQ(enc.output_shape(v.shape()), (Shape{1, 4, 3, 2, 3}));
  try {
    enc.forward(v.slice(2, 0, 7));
    ADD_FAILURE() << "7 frames accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("nearest: 5 or 9"), std::string::npos) << err.what();
  }
  EXPECT_THROW(enc.forward(v.slice(3, 0, 24)), Error);  // 24 rows: not a multiple of 16
  EXPECT_THROW(enc.forward(v.slice(1, 0, 2)), Error);   // 2 channels
}

// ConvVideoDecoder.tiled_decode with a TileSizeConfig (__metadata__.tiling): two causal temporal
// tiles, three row tiles; complementary masks (sums only) and, with the conditioned decoder drawing
// its noise tile after tile, masks that overlap (divided by the summed weights).
TEST(Ltx2VideoVaeGolden, TiledDecodeMatchesTheReferenceFp32) { expect_golden("ltx2_vae_tiled_decode.safetensors", 1); }
TEST(Ltx2VideoVaeGolden, TiledDecodeWeightedConditionedMatchesTheReferenceFp32) {
  expect_golden("ltx2_vae_tiled_decode_weighted.safetensors", 1);
}

// VideoEncoder.tiled_encode: frames (20, 16) -> 3 causal temporal tiles, width (80, 64) -> 2 tiles.
TEST(Ltx2VideoVaeGolden, TiledEncodeMatchesTheReferenceFp32) { expect_golden("ltx2_vae_tiled_encode.safetensors", 1); }

TEST(Ltx2VideoVae, TiledEncodeControlsAndErrors) {
  const Loaded l = load("ltx2_vae_tiled_encode.safetensors");
  const Tensor want = l.file.get("output");
  nn::ParamSource src = nn::ParamSource::from_map(l.params, "golden");
  const ltx2::VideoEncoder e(ltx2::VideoVaeConfig::from_json(l.config), src);
  const Tensor v = l.file.get("input.sample");
  const ltx2::VaeTiling tiling = ltx2::VaeTiling::from_json(json::parse(l.file.metadata().at("tiling")));
  EXPECT_LE(max_abs_diff(want, e.tiled_encode(v, tiling)), 1e-5);
  const Tensor whole = e.forward(v);
  EXPECT_GT(max_abs_diff(want, whole), 1e-4) << "tiled == untiled";
  EXPECT_EQ(max_abs_diff(whole, e.tiled_encode(v, ltx2::VaeTiling{})), 0.0) << "no tiling is forward";
  ltx2::VaeTiling only_w = tiling;
  only_w.frames = {};
  EXPECT_GT(max_abs_diff(want, e.tiled_encode(v, only_w)), 1e-4) << "frames tiling";
  for (const json& bad : {json{{"width", {80, 48}}}, json{{"frames", {20, 12}}}, json{{"width", {72, 64}}}})
    EXPECT_THROW(e.tiled_encode(v, ltx2::VaeTiling::from_json(bad)), Error) << bad.dump();
}

// The tiling changes the result near the seams (so it tiled), no tiling is forward exactly, another
// overlap moves it, and sizes the reference refuses are errors.
TEST(Ltx2VideoVae, TiledDecodeControlsAndErrors) {
  const Loaded l = load("ltx2_vae_tiled_decode.safetensors");
  const Tensor want = l.file.get("output");
  nn::ParamSource src = nn::ParamSource::from_map(l.params, "golden");
  const ltx2::VideoDecoder d(ltx2::VideoVaeConfig::from_json(l.config), src);
  const Tensor z = l.file.get("input.sample");
  const ltx2::VaeTiling tiling = ltx2::VaeTiling::from_json(json::parse(l.file.metadata().at("tiling")));
  EXPECT_EQ(tiling.frames.tile_size, 12);
  EXPECT_EQ(tiling.height.overlap, 16);
  EXPECT_LE(max_abs_diff(want, d.tiled_decode(z, tiling)), 1e-5);
  const Tensor whole = d.forward(z);
  EXPECT_GT(max_abs_diff(want, whole), 1e-3) << "tiled == untiled";
  EXPECT_EQ(max_abs_diff(whole, d.tiled_decode(z, ltx2::VaeTiling{})), 0.0) << "no tiling is forward";
  ltx2::VaeTiling other = tiling;
  other.height.overlap = 0;
  EXPECT_GT(max_abs_diff(want, d.tiled_decode(z, other)), 1e-4) << "overlap";
  for (const json& bad : {json{{"height", {24, 0}}}, json{{"height", {16, 0}}}, json{{"height", {32, 8}}},
                          json{{"height", {32, 32}}}, json{{"frames", {0, 4}}}, json{{"frames", {6, 0}}}}) {
    EXPECT_THROW(d.tiled_decode(z, ltx2::VaeTiling::from_json(bad)), Error) << bad.dump();
  }
  EXPECT_THROW(ltx2::VaeTiling::from_json(json{{"time", {8, 0}}}), Error);
  EXPECT_THROW(ltx2::VaeTiling::from_json(json{{"height", {32}}}), Error);
}

// The blending masks and splits by value (compute_trapezoidal_mask_1d, split_by_size, the causal split).
TEST(Ltx2VideoVae, TileMasksAndSplits) {
  using namespace ltx2::vae;
  const std::vector<float> m = trapezoid_mask(5, 2, 2, false);  // linspace(0, 1, 4)[1:-1], linspace(1, 0, 4)[1:-1]
  ASSERT_EQ(m.size(), 5u);
  EXPECT_FLOAT_EQ(m[0], 1.0f / 3);
  EXPECT_FLOAT_EQ(m[1], 2.0f / 3);
  EXPECT_EQ(m[2], 1.0f);
  EXPECT_FLOAT_EQ(m[4], 1.0f / 3);
  const std::vector<float> c = trapezoid_mask(4, 2, 0, true);  // linspace(0, 1, 3)[:-1]: 0, 0.5
  EXPECT_EQ(c[0], 0.0f);
  EXPECT_EQ(c[1], 0.5f);
  EXPECT_EQ(c[3], 1.0f);
  const auto s = split_by_size(7, 3, 1);  // [0,3) [2,5) [4,7)
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].start, 2);
  EXPECT_EQ(s[2].end, 7);
  EXPECT_EQ(s[2].right_ramp, 0);
  const auto t = split_temporal_causal(7, 3, 1);  // later tiles one frame earlier, ramp + 1
  EXPECT_EQ(t[1].start, 1);
  EXPECT_EQ(t[1].left_ramp, 2);
  EXPECT_EQ(t[0].start, 0);
  const auto tiles = axis_tiles(6, 48, 8, 32, 24, false, "height");  // the weighted golden's rows: overlapping ramps
  EXPECT_EQ(tiles.size(), 3u);
  EXPECT_FALSE(complementary(tiles, 48));
  EXPECT_TRUE(complementary(axis_tiles(4, 64, 16, 32, 16, false, "height"), 64));
}

// The published LTX-2 structure (tests/ltx2/data/video_vae_keys.json: the official classes' state
// dict names and shapes for the PUBLISHED config of tools/golden/ltx2_video_vae.py, which the script
// checks against diffusers' AutoencoderKLLTX2Video): both halves take exactly those parameters.
TEST(Ltx2VideoVae, PublishedStructureTakesTheOfficialKeys) {
  std::ifstream f(fs::path(VIDAX_TEST_DATA_DIR) / "ltx2" / "data" / "video_vae_keys.json");
  ASSERT_TRUE(f.good());
  const json j = json::parse(f);
  const ltx2::VideoVaeConfig cfg = ltx2::VideoVaeConfig::from_json(j.at("config"));
  EXPECT_EQ(cfg.decoder_bottleneck_channels(), 1024);
  EXPECT_EQ(cfg.decoder_time_factor(), 8);
  EXPECT_EQ(cfg.decoder_space_factor(), 32);
  EXPECT_EQ(cfg.encoder_time_factor(), 8);
  EXPECT_EQ(cfg.encoder_space_factor(), 32);
  for (const char* half : {"decoder", "encoder"}) {
    std::map<std::string, Tensor> shapes;  // shape-only (Meta) tensors under the official names
    for (const auto& [k, v] : j.at(half).items()) shapes[k] = Tensor::empty(v.get<Shape>(), DType::F32, Device::Meta);
    nn::ParamSource src = nn::ParamSource::from_map(shapes, half);
    if (std::string(half) == "decoder") {
      const ltx2::VideoDecoder d(cfg, src);
      EXPECT_EQ(d.output_shape({1, 128, 5, 16, 24}), (Shape{1, 3, 33, 512, 768}));
    } else {
      const ltx2::VideoEncoder e(cfg, src);
      EXPECT_EQ(e.output_shape({1, 3, 33, 512, 768}), (Shape{1, 128, 5, 16, 24}));
    }
    EXPECT_NO_THROW(src.expect_all_taken()) << half;
    EXPECT_EQ(src.taken_in_order().size(), j.at(half).size()) << half;
  }
}
