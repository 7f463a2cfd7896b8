// The HunyuanVideo 1.0 VAE against the official AutoencoderKLCausal3D
// (tests/golden/hunyuan_vae_{decode,encode}.safetensors, tools/golden/hunyuan_vae.py): output and
// every inter.* tensor at fp32; the key table against the published VAE's state dict
// (tests/hunyuan/data/vae_keys.json, written by the same script from the official module);
// controls that must fail; bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/hunyuan/vae.h"
#include "models/hunyuan/vae_keys.h"
#include "parity/parity.h"
#include "test_diff.h"
#include "vae_test_support.h"
#include "translate/inspect.h"
#include "translate/source.h"
#include "translate/translate.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

std::string golden(const char* name) { return (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / name).string(); }

namespace hv = vidax::test::hunyuan_vae;
using Loaded = hv::Loaded<hunyuan::VAEConfig>;

Loaded load(const char* name, const translate::Component& comp) {
  return hv::load<hunyuan::VAEConfig>(golden(name), comp, /*normalized=*/false);
}

hunyuan::HunyuanVAE build(const Loaded& l, std::map<std::string, Tensor> params, hunyuan::VAEParts parts,
                          DType compute = DType::F32) {
  return hv::build<hunyuan::HunyuanVAE>(l, std::move(params), parts, compute);
}

constexpr hunyuan::VAEParts kDecoder{.encoder = false, .decoder = true};
constexpr hunyuan::VAEParts kEncoder{.encoder = true, .decoder = false};

std::map<std::string, Shape> published_keys() { return hv::key_list("vae_keys.json"); }

using hv::shapes_only;

// Every output* and inter.* tensor of the golden against what the kind produces (vidax parity's run).
void expect_golden(const char* name, const std::string& precision, double rel_bound, double abs_bound,
                   int min_compared = 6) {
  hv::expect_golden(golden(name), precision, rel_bound, abs_bound, min_compared, 32);
}

}  // namespace

TEST(HunyuanVAEGolden, DecodeMatchesTheReferenceFp32) {
  expect_golden("hunyuan_vae_decode.safetensors", "fp32", 1e-5, 1e-5);
}
TEST(HunyuanVAEGolden, EncodeMatchesTheReferenceFp32) {
  expect_golden("hunyuan_vae_encode.safetensors", "fp32", 1e-5, 1e-5);
}
// bf16 (not a reference mode) against the fp32 reference: measured rel L2 <= 1.6e-2, max_abs <= 0.08.
TEST(HunyuanVAEGolden, Bf16IsWithinItsBound) {
  expect_golden("hunyuan_vae_decode.safetensors", "bf16", 2e-2, 0.2);
  expect_golden("hunyuan_vae_encode.safetensors", "bf16", 2e-2, 0.2);
}

// The reference's spatial + temporal tiling (enable_tiling; __metadata__.tiling): two temporal
// tiles, each 2 x 2 spatial tiles, blended. The untiled run differs from the tiled one by up to 3.3
// (decode) / 2.3 (encode) (the generator prints it), so these pass only if the tiles, truncations
// and blends are the reference's. The raw tiled decode (no halving, no clamp) measures max_abs
// 1.6e-5 (rel L2 1.8e-6): bound 4e-5.
TEST(HunyuanVAEGolden, TiledDecodeMatchesTheReferenceFp32) {
  expect_golden("hunyuan_vae_tiled_decode.safetensors", "fp32", 1e-5, 4e-5, 1);
}
TEST(HunyuanVAEGolden, TiledEncodeMatchesTheReferenceFp32) {
  expect_golden("hunyuan_vae_tiled_encode.safetensors", "fp32", 1e-5, 1e-5, 1);
}
TEST(HunyuanVAEGolden, TilingChangesTheResult) {
  const Loaded dec = load("hunyuan_vae_tiled_decode.safetensors", hunyuan::vae_decoder_component());
  const hunyuan::HunyuanVAE vae = build(dec, dec.params, kDecoder);
  const Tensor z = dec.file.get("input.z");
  EXPECT_GT(test::rel_l2(dec.file.get("output"), vae.decode(z)), 1e-2);
  // Spatial tiling alone and temporal alone are other results again.
  EXPECT_GT(test::rel_l2(dec.file.get("output"), vae.decode_tiled(z, {.spatial = true})), 1e-3);
  EXPECT_GT(test::rel_l2(dec.file.get("output"), vae.decode_tiled(z, {.temporal = true})), 1e-3);
  // A frame that fits one spatial tile (3 x 4 latent pixels, tiles of 4) is not tiled.
  const Loaded small = load("hunyuan_vae_decode.safetensors", hunyuan::vae_decoder_component());
  const hunyuan::HunyuanVAE v2 = build(small, small.params, kDecoder);
  EXPECT_LE(test::rel_l2(small.file.get("output"),
                         v2.decode_tiled(small.file.get("input.z"), {.spatial = true})),
            1e-5);
  // Its temporal tiles (sample_tsize 8: 2 latent frames stepping by int(1.5) = 1) do not add up to
  // the clip: the reference would return 11 frames for 9; an error here.
  try {
    v2.decode_tiled(small.file.get("input.z"), {.temporal = true});
    ADD_FAILURE() << "a tiling that does not cover the clip was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sample_tsize 8"), std::string::npos) << e.what();
  }
}

// Shapes of the golden runs: 3 latent frames <-> 9 video frames, 8x space; encode's output is the
// (unscaled) mean half of the moments.
TEST(HunyuanVAEGolden, Shapes) {
  const Loaded enc = load("hunyuan_vae_encode.safetensors", hunyuan::vae_encoder_component());
  const hunyuan::HunyuanVAE vae = build(enc, enc.params, kEncoder);
  const Tensor video = enc.file.get("input.x");
  EXPECT_EQ(video.shape(), (Shape{1, 3, 9, 24, 32}));
  const Tensor moments = vae.encode_moments(video);
  EXPECT_EQ(moments.shape(), (Shape{1, 32, 3, 3, 4}));
  EXPECT_LE(test::rel_l2(enc.file.get("output"), ops::copy(moments.slice(1, 0, 16))), 1e-5);
  EXPECT_EQ(enc.cfg.spatial_factor(), 8);
  EXPECT_EQ(enc.cfg.temporal_factor(), 4);
}

// The pipeline's scaling around the raw forward (not in the parity kinds): encode_scaled = mode() *
// 0.476986; decode_scaled(z) = (decode(z / 0.476986) / 2 + 0.5).clamp(0, 1), from the raw goldens.
TEST(HunyuanVAEGolden, PipelineScalingWrapsTheRawForward) {
  const Loaded enc = load("hunyuan_vae_encode.safetensors", hunyuan::vae_encoder_component());
  const hunyuan::HunyuanVAE e = build(enc, enc.params, kEncoder);
  const Tensor scaled = e.encode_scaled(enc.file.get("input.x"));
  EXPECT_LE(test::rel_l2(ops::scale(enc.file.get("output"), 0.476986), scaled), 1e-5);
  EXPECT_GT(test::rel_l2(enc.file.get("output"), scaled), 0.4);  // the factor is really applied
  const Loaded dec = load("hunyuan_vae_decode.safetensors", hunyuan::vae_decoder_component());
  const hunyuan::HunyuanVAE d = build(dec, dec.params, kDecoder);
  const Tensor raw = dec.file.get("output");
  const Tensor want = ops::clamp(ops::add_scalar(ops::scale(raw, 0.5), 0.5), 0.0, 1.0);
  const Tensor video = d.decode_scaled(ops::scale(dec.file.get("input.z"), 0.476986));
  EXPECT_LE(test::diff(want, video).max_abs, 1e-5);
  const std::vector<float> v = video.to_f32_vector();
  EXPECT_EQ(*std::min_element(v.begin(), v.end()), 0.0f);  // the clamp bites on this random VAE
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 1.0f);
}

// posterior_of: the DiagonalGaussianDistribution's halves, logvar clamped to [-30, 20].
TEST(HunyuanVAEGolden, PosteriorMatchesTheReference) {
  const Loaded enc = load("hunyuan_vae_encode.safetensors", hunyuan::vae_encoder_component());
  const hunyuan::VAEPosterior post = hunyuan::posterior_of(enc.file.get("inter.quant_conv"));
  EXPECT_LE(test::diff(enc.file.get("output.mean"), post.mean).max_abs, 0.0);
  EXPECT_LE(test::diff(enc.file.get("output.logvar"), post.logvar).max_abs, 0.0);
  const hunyuan::VAEPosterior big = hunyuan::posterior_of(Tensor::full({1, 2, 1, 1, 1}, 50.0, DType::F32));
  EXPECT_EQ(big.mean.to_f32_vector()[0], 50.0f);
  EXPECT_EQ(big.logvar.to_f32_vector()[0], 20.0f);
  EXPECT_THROW(hunyuan::posterior_of(Tensor::zeros({1, 3, 1, 1, 1}, DType::F32)), Error);
}

// The controls: a perturbed parameter of the attention, of a time-upsampling conv and of a
// down-sampling conv each moves the output far past the bound (so the golden test can fail).
TEST(HunyuanVAEControls, APerturbedParameterFails) {
  const Loaded dec = load("hunyuan_vae_decode.safetensors", hunyuan::vae_decoder_component());
  const Tensor z = ops::scale(dec.file.get("input.z"), 1.0);
  ASSERT_LE(test::rel_l2(dec.file.get("output"), build(dec, dec.params, kDecoder).decode(z)), 1e-5);
  for (const char* name : {"decoder.mid_block.attentions.0.to_v.weight", "decoder.up_blocks.1.upsamplers.0.conv.conv.bias",
                           "post_quant_conv.weight"}) {
    auto p = dec.params;
    std::vector<float> v = p.at(name).to_f32_vector();
    v[v.size() / 3] += 0.5f;
    p[name] = Tensor::from_f32(v, p.at(name).shape());
    EXPECT_GT(test::rel_l2(dec.file.get("output"), build(dec, p, kDecoder).decode(z)), 1e-4) << name;
  }
  const Loaded enc = load("hunyuan_vae_encode.safetensors", hunyuan::vae_encoder_component());
  for (const char* name : {"encoder.down_blocks.2.downsamplers.0.conv.conv.weight", "encoder.mid_block.attentions.0.to_q.bias"}) {
    auto p = enc.params;
    std::vector<float> v = p.at(name).to_f32_vector();
    v[v.size() / 2] += 0.5f;
    p[name] = Tensor::from_f32(v, p.at(name).shape());
    const Tensor moments = build(enc, p, kEncoder).encode_moments(enc.file.get("input.x"));
    EXPECT_GT(test::rel_l2(enc.file.get("output"), hunyuan::posterior_of(moments).mean), 1e-4)
        << name;
  }
}

// A single latent frame (an image) decodes to a single frame: every upsampler's first frame is
// upsampled in space only.
TEST(HunyuanVAEGolden, OneLatentFrameDecodesToOneFrame) {
  const Loaded dec = load("hunyuan_vae_decode.safetensors", hunyuan::vae_decoder_component());
  const hunyuan::HunyuanVAE vae = build(dec, dec.params, kDecoder);
  const Tensor one = vae.decode(ops::copy(dec.file.get("input.z").slice(2, 0, 1)));
  EXPECT_EQ(one.shape(), (Shape{1, 3, 1, 24, 32}));
}

TEST(HunyuanVAEKeys, TheSpecIsThePublishedStateDict) {
  const auto keys = published_keys();
  std::map<std::string, Shape> ours;
  for (const auto& p : hunyuan::vae_params(hunyuan::VAEConfig{}).params) ours[p.name] = p.shape;
  EXPECT_EQ(ours, keys);
  EXPECT_EQ(hunyuan::vae_params(hunyuan::VAEConfig{}).parameter_count(), 246478803);
}

TEST(HunyuanVAEKeys, EveryLayoutFillsEveryParameterAndUsesEveryKey) {
  const auto keys = published_keys();
  for (const auto& [layout, prefix] : {std::pair{"original", ""}, std::pair{"prefixed", "vae."}}) {
    const translate::MemorySource src = shapes_only(keys, prefix);
    const translate::Plan p = translate::plan(src, hunyuan::vae_params(hunyuan::VAEConfig{}), hunyuan::vae_keymap(layout));
    EXPECT_TRUE(p.missing.empty() && p.unused_keys.empty() && p.mismatches.empty()) << layout << p.problems();
    EXPECT_EQ(p.consumed_keys, keys.size()) << layout;
    const translate::Component& c = hunyuan::vae_component();
    EXPECT_EQ(c.variant(c.infer_config(src, layout)), "884-16c-hy") << layout;
  }
}

TEST(HunyuanVAEKeys, AMissingOrRenamedKeyFailsNamingIt) {
  auto keys = published_keys();
  const std::string victim = "decoder.up_blocks.2.upsamplers.0.conv.conv.weight";
  const Shape shape = keys.at(victim);
  keys.erase(victim);
  {
    const translate::Plan p = translate::plan(shapes_only(keys), hunyuan::vae_params(hunyuan::VAEConfig{}),
                                              hunyuan::vae_keymap("original"));
    EXPECT_FALSE(p.complete());
    EXPECT_NE(p.problems().find(victim), std::string::npos) << p.problems();
  }
  keys["decoder.up_blocks.2.upsampler.0.conv.conv.weight"] = shape;  // renamed
  const translate::Plan p = translate::plan(shapes_only(keys), hunyuan::vae_params(hunyuan::VAEConfig{}),
                                            hunyuan::vae_keymap("original"));
  EXPECT_FALSE(p.complete());
  EXPECT_NE(p.problems().find(victim), std::string::npos) << p.problems();
  EXPECT_NE(p.problems().find("decoder.up_blocks.2.upsampler.0.conv.conv.weight"), std::string::npos) << p.problems();
  // And the model itself refuses a missing parameter by name.
  const Loaded dec = load("hunyuan_vae_decode.safetensors", hunyuan::vae_decoder_component());
  auto params = dec.params;
  params.erase("decoder.mid_block.attentions.0.group_norm.bias");
  try {
    build(dec, params, kDecoder);
    FAIL() << "a missing parameter was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("decoder.mid_block.attentions.0.group_norm.bias"), std::string::npos) << e.what();
  }
}

TEST(HunyuanVAEConfig, OfficialAndDiffusersConfigsRead) {
  const auto diffusers = hunyuan::VAEConfig::from_json(nlohmann::json::parse(R"({
    "_class_name": "AutoencoderKLHunyuanVideo", "_diffusers_version": "0.32.0", "act_fn": "silu",
    "block_out_channels": [128, 256, 512, 512], "down_block_types": ["HunyuanVideoDownBlock3D",
    "HunyuanVideoDownBlock3D", "HunyuanVideoDownBlock3D", "HunyuanVideoDownBlock3D"], "in_channels": 3,
    "latent_channels": 16, "layers_per_block": 2, "mid_block_add_attention": true, "norm_num_groups": 32,
    "out_channels": 3, "scaling_factor": 0.476986, "spatial_compression_ratio": 8,
    "temporal_compression_ratio": 4, "up_block_types": ["HunyuanVideoUpBlock3D", "HunyuanVideoUpBlock3D",
    "HunyuanVideoUpBlock3D", "HunyuanVideoUpBlock3D"]})"));
  EXPECT_EQ(diffusers, hunyuan::VAEConfig{});
  EXPECT_EQ(hunyuan::VAEConfig::from_json(hunyuan::VAEConfig{}.to_json()), hunyuan::VAEConfig{});
  auto bad = [](const char* js, const char* needle) {
    try {
      hunyuan::VAEConfig::from_json(nlohmann::json::parse(js));
      ADD_FAILURE() << js << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  bad(R"({"time_compression_ratio": 8})", "time_compression_ratio");
  bad(R"({"act_fn": "gelu"})", "act_fn");
  bad(R"({"norm_num_groups": 24})", "norm_num_groups");
  bad(R"({"down_block_types": ["DownBlock2D", "DownBlock2D", "DownBlock2D", "DownBlock2D"]})", "DownBlock2D");
  bad(R"({"layers_per_block": 2.5})", "layers_per_block");
  bad(R"({"use_post_quant_conv": false})", "use_post_quant_conv");
}

TEST(HunyuanVAEBadInput, SizesThatBreakTheVAERulesNameTheNearestValidOnes) {
  const Loaded enc = load("hunyuan_vae_encode.safetensors", hunyuan::vae_encoder_component());
  const hunyuan::HunyuanVAE vae = build(enc, enc.params, kEncoder);
  auto fails = [&](const Shape& s, std::vector<const char*> needles) {
    try {
      vae.encode_scaled(Tensor::zeros(s, DType::F32));
      ADD_FAILURE() << shape_str(s) << " was accepted";
    } catch (const Error& e) {
      for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  };
  fails({1, 3, 8, 24, 32}, {"8 frames", "4k+1", "5 or 9"});
  fails({1, 3, 9, 30, 32}, {"height 30", "24 or 32"});
  fails({1, 3, 9, 24, 4}, {"width 4", "8"});
  fails({1, 4, 9, 24, 32}, {"4 channels"});
  fails({3, 9, 24, 32}, {"[B, C, F, H, W]"});
  const Loaded dec = load("hunyuan_vae_decode.safetensors", hunyuan::vae_decoder_component());
  const hunyuan::HunyuanVAE d = build(dec, dec.params, kDecoder);
  try {
    d.decode_scaled(Tensor::zeros({1, 8, 3, 3, 4}, DType::F32));
    ADD_FAILURE() << "an 8-channel latent was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("8 channels"), std::string::npos) << e.what();
  }
  EXPECT_THROW(d.encode_scaled(Tensor::zeros({1, 3, 9, 24, 32}, DType::F32)), Error);  // no encoder loaded
}

// The encode kind's input is the reference's encode(x) argument, input.x; input.video (the older
// name) is accepted as an alias, both at once is refused, and neither names what is missing.
TEST(HunyuanVAEBadInput, EncodeInputIsXOrItsVideoAlias) {
  engine::register_builtins();
  const io::Checkpoint file = io::Checkpoint::open(golden("hunyuan_vae_encode.safetensors"));
  std::vector<std::string> written;
  auto write = [&](const char* dst, const std::vector<const char*>& inputs) {
    std::map<std::string, Tensor> tensors;
    for (const std::string& n : file.names())
      if (n != "input.x") tensors.emplace(n, file.get(n));
    for (const char* in : inputs) tensors.emplace(in, file.get("input.x"));
    // Unique per process: ctest runs this binary once per CPU tier at the same time (docs/bugs.md row 106).
    const std::string path = std::string(VIDAX_BINARY_DIR) + "/" + std::to_string(::getpid()) + "_" + dst;
    io::save_safetensors(path, tensors, file.metadata());
    written.push_back(path);
    return path;
  };
  const parity::Report alias = parity::run(write("hunyuan_vae_encode_video_alias.safetensors", {"input.video"}), {});
  EXPECT_TRUE(alias.ok()) << alias.passed << "/" << alias.compared;
  EXPECT_GE(alias.compared, 9);
  auto fails = [](const std::string& path, const char* needle) {
    try {
      parity::run(path, {});
      ADD_FAILURE() << path << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  fails(write("hunyuan_vae_encode_both_inputs.safetensors", {"input.x", "input.video"}), "both 'input.x' and 'input.video'");
  fails(write("hunyuan_vae_encode_no_input.safetensors", {}), "'input.x' (or its alias 'input.video')");
  for (const std::string& p : written) std::remove(p.c_str());
}
