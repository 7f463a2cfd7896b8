// The HunyuanVideo 1.5 VAE against the official AutoencoderKLConv3D
// (tests/golden/hunyuan15/hy15_vae_*.safetensors, tools/golden/hunyuan15_vae.py) through the parity
// kinds hunyuan1.5.vae.decode / .encode: output and every inter.* tensor at fp32, the bf16 bound,
// the reference's spatial tiling, diffusers' AutoencoderKLHunyuanVideo15 layout; the key tables
// against the published VAE's state dicts (tests/hunyuan/data/hy15_vae{,_diffusers}_keys.json,
// written by the same script from both modules); the pipeline's scaling; the published folder
// layout; controls that must fail; bad input and bad configs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/hunyuan15/vae.h"
#include "models/hunyuan15/vae_keys.h"
#include "parity/parity.h"
#include "test_diff.h"
#include "vae_test_support.h"
#include "translate/inspect.h"
#include "translate/source.h"
#include "translate/translate.h"

using namespace vidax;
namespace fs = std::filesystem;
namespace h15 = vidax::hunyuan15;

namespace {

std::string golden(const char* name) {
  return (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan15" / name).string();
}

namespace hv = vidax::test::hunyuan_vae;
using Loaded = hv::Loaded<h15::VAEConfig>;

Loaded load(const char* name, const translate::Component& comp) {
  return hv::load<h15::VAEConfig>(golden(name), comp, /*normalized=*/true);
}

constexpr h15::VAEParts kDecoder{.encoder = false, .decoder = true};
constexpr h15::VAEParts kEncoder{.encoder = true, .decoder = false};

h15::HunyuanVideo15VAE build(const Loaded& l, std::map<std::string, Tensor> params, h15::VAEParts parts,
                             DType compute = DType::F32) {
  return hv::build<h15::HunyuanVideo15VAE>(l, std::move(params), parts, compute);
}

Loaded dec_golden() { return load("hy15_vae_decode.safetensors", h15::vae_decoder_component()); }
Loaded enc_golden() { return load("hy15_vae_encode.safetensors", h15::vae_encoder_component()); }

// Every output* and inter.* tensor of the golden against what the kind produces (vidax parity's run).
void expect_golden(const char* name, const std::string& precision, double rel_bound, double abs_bound,
                   int min_compared) {
  hv::expect_golden(golden(name), precision, rel_bound, abs_bound, min_compared, 34);
}

using hv::key_list;
using hv::shapes_only;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// fp32: every compared tensor within 1e-5 max abs of the official module.
TEST(Hunyuan15VAEGolden, DecodeMatchesTheReferenceFp32) { expect_golden("hy15_vae_decode.safetensors", "fp32", 1e-5, 1e-5, 12); }
TEST(Hunyuan15VAEGolden, EncodeMatchesTheReferenceFp32) { expect_golden("hy15_vae_encode.safetensors", "fp32", 1e-5, 1e-5, 14); }
// downsample/upsample_match_channel false: the samplers keep the width, the resnets' nin_shortcut
// 1x1 convs change it; one frame <-> one frame (the temporal samplers' first-frame paths alone).
TEST(Hunyuan15VAEGolden, NoMatchChannelMatchesTheReferenceFp32) {
  expect_golden("hy15_vae_nomatch_decode.safetensors", "fp32", 1e-5, 1e-5, 12);
  expect_golden("hy15_vae_nomatch_encode.safetensors", "fp32", 1e-5, 1e-5, 14);
}
// The reference's spatial tiling (set_tile_sample_min_size(32, 0.5) + enable_spatial_tiling).
TEST(Hunyuan15VAEGolden, TiledDecodeMatchesTheReferenceFp32) {
  expect_golden("hy15_vae_tiled_decode.safetensors", "fp32", 1e-5, 1e-5, 1);
}
TEST(Hunyuan15VAEGolden, TiledEncodeMatchesTheReferenceFp32) {
  expect_golden("hy15_vae_tiled_encode.safetensors", "fp32", 1e-5, 1e-5, 3);
}
// diffusers' AutoencoderKLHunyuanVideo15, its names and its config (through the "diffusers" table).
TEST(Hunyuan15VAEGolden, DiffusersLayoutMatchesTheReferenceFp32) {
  expect_golden("hy15_vae_diffusers_decode.safetensors", "fp32", 1e-5, 1e-5, 1);
  expect_golden("hy15_vae_diffusers_encode.safetensors", "fp32", 1e-5, 1e-5, 3);
}
// bf16 (the official pipeline runs fp16 autocast; bf16 is this engine's half precision) against the
// fp32 reference, every activation rounded to bf16: measured output rel L2 1.3e-2 (decode, max_abs
// 0.12) and 2.1e-2 (encode), the worst tensor inter.encoder.conv_out at 2.9e-2: bound 4e-2, 0.25.
TEST(Hunyuan15VAEGolden, Bf16IsWithinItsBound) {
  expect_golden("hy15_vae_decode.safetensors", "bf16", 4e-2, 0.25, 12);
  expect_golden("hy15_vae_encode.safetensors", "bf16", 4e-2, 0.25, 14);
}

// Tiling changes the result (the golden above then pins the reference's tiles, truncations and
// blends); an input that fits one tile is not tiled.
TEST(Hunyuan15VAEGolden, TilingChangesTheResultAndOneTileIsUntiled) {
  const Loaded dec = load("hy15_vae_tiled_decode.safetensors", h15::vae_decoder_component());
  const h15::HunyuanVideo15VAE vae = build(dec, dec.params, kDecoder);
  const Tensor z = dec.file.get("input.z");
  const double untiled = test::rel_l2(dec.file.get("output"), vae.decode(z));
  std::printf("  tiled vs untiled decode: rel_l2 %.3g\n", untiled);
  EXPECT_GT(untiled, 0.1);
  // Other tiles are another result (48-pixel tiles of 3 latent pixels stepping by 2, blend 16).
  EXPECT_GT(test::rel_l2(dec.file.get("output"), vae.decode_tiled(z, {true, 48, 1.0 / 3})), 1e-3);
  const Loaded small = dec_golden();  // a 2 x 2 latent: one tile of 32 pixels
  const h15::HunyuanVideo15VAE v2 = build(small, small.params, kDecoder);
  EXPECT_LE(test::diff(small.file.get("output"), v2.decode_tiled(small.file.get("input.z"), {true, 32, 0.5})).max_abs,
            1e-5);
  // A latent overlap that is not whole is refused, as set_tile_sample_min_size asserts.
  const std::string e = error_of([&] { vae.decode_tiled(z, {true, 48, 0.25}); });
  EXPECT_NE(e.find("whole number"), std::string::npos) << e;
}

// Shapes: 3 latent frames <-> 9 video frames, 16x space; the moments are [mean; logvar].
TEST(Hunyuan15VAEGolden, ShapesAndPosterior) {
  const Loaded enc = enc_golden();
  const h15::HunyuanVideo15VAE vae = build(enc, enc.params, kEncoder);
  const Tensor moments = vae.encode_moments(enc.file.get("input.x"));
  EXPECT_EQ(moments.shape(), (Shape{1, 8, 3, 2, 2}));
  const h15::VAEPosterior post = h15::posterior_of(moments);
  EXPECT_LE(test::diff(enc.file.get("output.logvar"), post.logvar).max_abs, 1e-5);
  const Loaded dec = dec_golden();
  const h15::HunyuanVideo15VAE d = build(dec, dec.params, kDecoder);
  EXPECT_EQ(d.decode(ops::copy(dec.file.get("input.z").slice(2, 0, 1))).shape(), (Shape{1, 3, 1, 32, 32}));
}

// The pipeline's scaling around the raw forward: encode_scaled = mode() * 1.03682;
// decode_scaled(z) = (decode(z / 1.03682) / 2 + 0.5).clamp(0, 1) (+ shift_factor before the decode
// when the config sets one).
TEST(Hunyuan15VAEGolden, PipelineScalingWrapsTheRawForward) {
  const Loaded enc = enc_golden();
  const h15::HunyuanVideo15VAE e = build(enc, enc.params, kEncoder);
  EXPECT_DOUBLE_EQ(enc.cfg.scaling_factor, 1.03682);
  const Tensor scaled = e.encode_scaled(enc.file.get("input.x"));
  EXPECT_LE(test::diff(ops::scale(enc.file.get("output"), 1.03682), scaled).max_abs, 1e-5);
  EXPECT_GT(test::diff(enc.file.get("output"), scaled).max_abs, 1e-3);  // the factor is really applied
  const Loaded dec = dec_golden();
  const h15::HunyuanVideo15VAE d = build(dec, dec.params, kDecoder);
  const Tensor raw = dec.file.get("output");
  const Tensor want = ops::clamp(ops::add_scalar(ops::scale(raw, 0.5), 0.5), 0.0, 1.0);
  const Tensor video = d.decode_scaled(ops::scale(dec.file.get("input.z"), 1.03682));
  EXPECT_LE(test::diff(want, video).max_abs, 1e-5);
  EXPECT_GT(test::diff(raw, video).max_abs, 0.1);  // the mapping is really applied
  // The clamp: with conv_out's bias moved to +-1.5 the raw video leaves [-1, 1] on both sides; the
  // pipeline's stays in [0, 1], equal to the clamped raw one.
  auto params = dec.params;
  params["decoder.conv_out.conv.bias"] = Tensor::from_f32({1.5f, -1.5f, 0.0f}, {3});
  const h15::HunyuanVideo15VAE biased = build(dec, params, kDecoder);
  const Tensor z = ops::scale(dec.file.get("input.z"), 1.03682);
  const Tensor out = biased.decode_scaled(z, {});
  const std::vector<float> v = out.to_f32_vector();
  EXPECT_EQ(*std::min_element(v.begin(), v.end()), 0.0f);
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 1.0f);
  EXPECT_LE(test::diff(ops::clamp(ops::add_scalar(ops::scale(biased.decode(dec.file.get("input.z")), 0.5), 0.5), 0.0, 1.0),
                       out).max_abs,
            1e-5);
  // A shift moves the decoded latent: decode_scaled(z) with shift s = the unshifted one of z + s * f.
  Loaded shifted = dec_golden();
  shifted.cfg.shift_factor = 0.25;
  const h15::HunyuanVideo15VAE ds = build(shifted, shifted.params, kDecoder);
  const Tensor zs = dec.file.get("input.z");
  const Tensor a = ds.decode_scaled(zs, {});
  const Tensor b = d.decode_scaled(ops::add_scalar(zs, 0.25 * 1.03682), {});
  EXPECT_LE(test::diff(b, a).max_abs, 1e-4);
  EXPECT_GT(test::diff(d.decode_scaled(zs, {}), a).max_abs, 1e-3);
}

// The controls: a perturbed parameter of the attention, of a temporal upsampler, of a downsampler,
// of an RMS norm, or a perturbed input, moves the result far past the bound.
TEST(Hunyuan15VAEControls, APerturbedParameterOrInputFails) {
  const Loaded dec = dec_golden();
  const Tensor z = dec.file.get("input.z");
  ASSERT_LE(test::diff(dec.file.get("output"), build(dec, dec.params, kDecoder).decode(z)).max_abs, 1e-5);
  for (const char* name : {"decoder.mid.attn_1.v.weight", "decoder.up.0.upsample.conv.conv.bias", "decoder.norm_out.gamma",
                           "decoder.up.3.block.1.conv2.conv.weight"}) {
    auto p = dec.params;
    std::vector<float> v = p.at(name).to_f32_vector();
    v[v.size() / 3] += 0.5f;
    p[name] = Tensor::from_f32(v, p.at(name).shape());
    EXPECT_GT(test::rel_l2(dec.file.get("output"), build(dec, p, kDecoder).decode(z)), 1e-4) << name;
  }
  std::vector<float> zv = z.to_f32_vector();
  zv[zv.size() / 2] += 0.1f;
  EXPECT_GT(test::diff(dec.file.get("output"), build(dec, dec.params, kDecoder).decode(Tensor::from_f32(zv, z.shape()))).max_abs,
            1e-3);
  const Loaded enc = enc_golden();
  for (const char* name : {"encoder.down.2.downsample.conv.conv.weight", "encoder.mid.attn_1.q.bias", "encoder.down.0.block.0.norm1.gamma"}) {
    auto p = enc.params;
    std::vector<float> v = p.at(name).to_f32_vector();
    v[v.size() / 2] += 0.5f;
    p[name] = Tensor::from_f32(v, p.at(name).shape());
    EXPECT_GT(test::rel_l2(enc.file.get("output"), h15::posterior_of(build(enc, p, kEncoder).encode_moments(enc.file.get("input.x"))).mean),
              1e-4)
        << name;
  }
}

// The spec is the published official state dict (names and shapes), and the diffusers table maps
// every key of diffusers' published state dict onto it.
TEST(Hunyuan15VAEKeys, TheSpecIsThePublishedStateDictInBothLayouts) {
  const auto official = key_list("hy15_vae_keys.json");
  std::map<std::string, Shape> ours;
  for (const auto& p : h15::vae_params(h15::VAEConfig{}).params) ours[p.name] = p.shape;
  EXPECT_EQ(ours, official);
  EXPECT_EQ(h15::vae_params(h15::VAEConfig{}).parameter_count(), 1260634115);  // both modules' count
  for (const auto& [layout, file] : {std::pair{"original", "hy15_vae_keys.json"}, std::pair{"diffusers", "hy15_vae_diffusers_keys.json"}}) {
    const auto keys = key_list(file);
    const translate::MemorySource src = shapes_only(keys);
    const translate::Plan p = translate::plan(src, h15::vae_params(h15::VAEConfig{}), h15::vae_keymap(layout));
    EXPECT_TRUE(p.missing.empty() && p.unused_keys.empty() && p.mismatches.empty()) << layout << p.problems();
    EXPECT_EQ(p.consumed_keys, keys.size()) << layout;
    const translate::Component& c = h15::vae_component();
    EXPECT_EQ(c.variant(c.infer_config(src, layout)), "16x4-32c") << layout;
    EXPECT_EQ(translate::match(src, c).layout, layout);  // the layout is detected from the names
  }
}

TEST(Hunyuan15VAEKeys, AMissingOrStrayKeyFailsNamingIt) {
  auto keys = key_list("hy15_vae_diffusers_keys.json");
  const std::string victim = "decoder.up_blocks.1.upsamplers.0.conv.conv.weight";
  const Shape shape = keys.at(victim);
  keys.erase(victim);
  keys["decoder.up_blocks.1.upsampler.0.conv.conv.weight"] = shape;  // renamed
  const translate::Plan p = translate::plan(shapes_only(keys), h15::vae_params(h15::VAEConfig{}), h15::vae_keymap("diffusers"));
  EXPECT_FALSE(p.complete());
  EXPECT_NE(p.problems().find(victim), std::string::npos) << p.problems();
  EXPECT_NE(p.problems().find("decoder.up_blocks.1.upsampler.0.conv.conv.weight"), std::string::npos) << p.problems();
  // The model refuses a missing parameter by name.
  const Loaded dec = dec_golden();
  auto params = dec.params;
  params.erase("decoder.mid.attn_1.norm.gamma");
  const std::string e = error_of([&] { build(dec, params, kDecoder); });
  EXPECT_NE(e.find("decoder.mid.attn_1.norm.gamma"), std::string::npos) << e;
}

// The published folder (vae/config.json + diffusion_pytorch_model.safetensors), official names.
TEST(Hunyuan15VAEKeys, LoadsAPublishedVaeFolder) {
  const Loaded dec = dec_golden();
  const Loaded enc = enc_golden();
  const fs::path dir = fs::temp_directory_path() / "vidax_hy15_vae_folder";
  fs::create_directories(dir);
  std::map<std::string, Tensor> all = dec.params;
  for (const auto& [k, v] : enc.params) all[k] = v;
  io::save_safetensors((dir / "diffusion_pytorch_model.safetensors").string(), all);
  nlohmann::json cfg = nlohmann::json::parse(dec.file.metadata().at("config"));
  cfg["_class_name"] = "AutoencoderKLConv3D";
  std::ofstream(dir / "config.json") << cfg.dump();
  const h15::HunyuanVideo15VAE vae = h15::load_vae(dir.string());
  EXPECT_LE(test::diff(dec.file.get("output"), vae.decode(dec.file.get("input.z"))).max_abs, 1e-5);
  EXPECT_EQ(vae.encode_moments(enc.file.get("input.x")).shape(), (Shape{1, 8, 3, 2, 2}));
  // A stray key in the file is an error naming it.
  all["decoder.extra.weight"] = Tensor::zeros({2}, DType::F32);
  io::save_safetensors((dir / "diffusion_pytorch_model.safetensors").string(), all);
  const std::string e = error_of([&] { h15::load_vae(dir.string()); });
  EXPECT_NE(e.find("decoder.extra.weight"), std::string::npos) << e;
  fs::remove(dir / "config.json");
  const std::string e2 = error_of([&] { h15::load_vae(dir.string()); });
  EXPECT_NE(e2.find("config.json"), std::string::npos) << e2;
  fs::remove_all(dir);
}

TEST(Hunyuan15VAEConfig, OfficialAndDiffusersConfigsRead) {
  const auto diffusers = h15::VAEConfig::from_json(nlohmann::json::parse(R"({
    "_class_name": "AutoencoderKLHunyuanVideo15", "_diffusers_version": "0.36.0", "block_out_channels":
    [128, 256, 512, 1024, 1024], "in_channels": 3, "out_channels": 3, "latent_channels": 32,
    "layers_per_block": 2, "spatial_compression_ratio": 16, "temporal_compression_ratio": 4,
    "downsample_match_channel": true, "upsample_match_channel": true, "scaling_factor": 1.03682})"));
  EXPECT_EQ(diffusers, h15::VAEConfig{});
  const auto official = h15::VAEConfig::from_json(nlohmann::json::parse(R"({
    "_class_name": "AutoencoderKLConv3D", "block_out_channels": [128, 256, 512, 1024, 1024],
    "in_channels": 3, "out_channels": 3, "latent_channels": 32, "layers_per_block": 2,
    "ffactor_spatial": 16, "ffactor_temporal": 4, "sample_size": 256, "sample_tsize": 64,
    "scaling_factor": 1.03682, "shift_factor": null})"));
  EXPECT_EQ(official, h15::VAEConfig{});
  EXPECT_EQ(h15::VAEConfig::from_json(h15::VAEConfig{}.to_json()), h15::VAEConfig{});
  auto bad = [](const char* js, const char* needle) {
    const std::string e = error_of([&] { h15::VAEConfig::from_json(nlohmann::json::parse(js)); });
    EXPECT_NE(e.find(needle), std::string::npos) << js << ": " << e;
  };
  bad(R"({"ffactor_spatial": 12})", "ffactor_spatial must be a power of two");
  bad(R"({"ffactor_temporal": 32})", "exceeds ffactor_spatial");
  bad(R"({"block_out_channels": [128, 256, 512, 1024]})", "4 levels");
  bad(R"({"latent_channels": 24})", "2 * latent_channels");
  bad(R"({"block_out_channels": [128, 256, 512, 1020, 1024]})", "1024 -> 1020 channels");
  bad(R"({"layers_per_block": 2.5})", "layers_per_block");
  bad(R"({"norm_num_groups": 32})", "norm_num_groups");
  bad(R"({"_class_name": "AutoencoderKLCausal3D"})", "AutoencoderKLCausal3D");
  bad(R"({"use_quant_conv": true})", "unknown field 'use_quant_conv'");
  bad(R"({"sample_size": 0})", "sample_size must be >= 1");
}

TEST(Hunyuan15VAEBadInput, SizesThatBreakTheVAERulesNameTheNearestValidOnes) {
  const Loaded enc = enc_golden();
  const h15::HunyuanVideo15VAE vae = build(enc, enc.params, kEncoder);
  auto fails = [&](const Shape& s, std::vector<const char*> needles) {
    const std::string e = error_of([&] { vae.encode_scaled(Tensor::zeros(s, DType::F32)); });
    EXPECT_FALSE(e.empty()) << shape_str(s) << " was accepted";
    for (const char* n : needles) EXPECT_NE(e.find(n), std::string::npos) << e;
  };
  fails({1, 3, 8, 32, 32}, {"8 frames", "4k+1", "5 or 9"});
  fails({1, 3, 9, 40, 32}, {"height 40", "multiple of 16", "32 or 48"});
  fails({1, 3, 9, 32, 8}, {"width 8", "16"});
  fails({1, 4, 9, 32, 32}, {"4 channels", "takes 3"});
  fails({3, 9, 32, 32}, {"[B, C, F, H, W]"});
  const Loaded dec = dec_golden();
  const h15::HunyuanVideo15VAE d = build(dec, dec.params, kDecoder);
  const std::string e = error_of([&] { d.decode_scaled(Tensor::zeros({1, 8, 3, 2, 2}, DType::F32)); });
  EXPECT_NE(e.find("8 channels"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { d.encode_scaled(Tensor::zeros({1, 3, 9, 32, 32}, DType::F32)); }).find("encoder was not loaded"),
            std::string::npos);
}

// The same control through the kind: a golden file whose weight or input is perturbed FAILS `vidax parity`.
TEST(Hunyuan15VAEControls, APerturbedGoldenFailsTheKind) {
  engine::register_builtins();
  for (const auto& [file, victim] : {std::pair{"hy15_vae_decode.safetensors", "decoder.up.1.upsample.conv.conv.weight"},
                                     std::pair{"hy15_vae_encode.safetensors", "input.x"}}) {
    const io::Checkpoint src = io::Checkpoint::open(golden(file));
    std::map<std::string, Tensor> tensors;
    for (const std::string& n : src.names()) tensors[n] = src.get(n);
    std::vector<float> v = tensors.at(victim).to_f32_vector();
    v[v.size() / 2] += 0.25f;
    tensors[victim] = Tensor::from_f32(v, tensors.at(victim).shape());
    const std::string path = (fs::temp_directory_path() / "vidax_hy15_vae_perturbed.safetensors").string();
    io::save_safetensors(path, tensors, src.metadata());
    const parity::Report rep = parity::run(path, parity::Options{});
    EXPECT_FALSE(rep.ok()) << file << " with " << victim << " perturbed passed";
    fs::remove(path);
  }
}
