// The LTX-2 image conditioning (models/ltx2/conditioning.h, denoise_t2v with images; kinds
// ltx2.pipeline.i2v and ltx2.conditioning.image) against the official TI2VidOneStagePipeline.__call__
// with images (tools/golden/ltx2_pipeline_i2v.py): frame 0 at strength 1 and 0.6, keyframes appended
// at later frames, the real encoder's conditioning; negative controls and bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "backend/ops.h"
#include "io/checkpoint.h"
#include "ltx2_golden.h"
#include "models/ltx2/conditioning.h"
#include "models/ltx2/t2v.h"
#include "models/ltx2/video_vae.h"

namespace vidax::test::ltx2 {
namespace {

using vidax::ltx2::ImageConditioning;
using vidax::ltx2::VideoTarget;

// The file through its kind at the default fp32 bound (rel L2 1e-5), then per row: the sigmas, the
// initial state (noise, clean latent, mask, positions) exact; the preprocessed images max abs <= 5e-6
// (torch's bilinear kernel against io::resize_bilinear: 1.7e-6 measured at most, 2e-4 of an 8-bit
// level); the latents and step taps <= 2e-5 (the t2v kind's bound: the guidance scales the DiT's fp32
// differences); the decoded video / audio <= 2e-6 (the latents' ~9e-6 through the tiny decoder).
parity::Report expect_i2v_rows(const char* name) {
  engine::register_builtins();
  const parity::Report rep = parity::run(golden(name), parity::Options{});
  for (const auto& c : rep.rows) {
    std::printf("  %s %-32s max_abs=%.3g rel_l2=%.3g\n", name, c.name.c_str(), c.max_abs, c.rel_l2);
    EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << c.name << " " << c.note;
    if (c.name.rfind("inter.noise", 0) == 0 || c.name.rfind("inter.state", 0) == 0 ||
        c.name.rfind("output.state", 0) == 0 || c.name == "inter.sigmas")
      EXPECT_EQ(c.max_abs, 0.0) << c.name;
    else if (c.name.rfind("inter.image", 0) == 0)
      EXPECT_LE(c.max_abs, 5e-6) << c.name;
    else if (c.name == "output.video" || c.name == "output.audio")
      EXPECT_LE(c.max_abs, 2e-6) << c.name;
    else
      EXPECT_LE(c.max_abs, 2e-5) << c.name;
  }
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
  return rep;
}

using Status = parity::Comparison::Status;

TEST(Ltx2I2VGolden, FirstFrameWithDecodersMatchesTheReference) {
  const parity::Report rep = expect_i2v_rows("ltx2_pipeline_i2v.safetensors");
  // latents, video + audio, sigmas + 2 noises + 3 state taps + 1 image, 2 steps x 6 taps
  EXPECT_EQ(rep.compared, 2 + 2 + 3 + 3 + 1 + 2 * 6);
}

TEST(Ltx2I2VGolden, FirstFrameStrengthMatchesTheReference) {
  const parity::Report rep = expect_i2v_rows("ltx2_pipeline_i2v_strength.safetensors");
  EXPECT_EQ(rep.compared, 2 + 3 + 3 + 1 + 3 * 6);
}

TEST(Ltx2I2VGolden, KeyframesMatchTheReference) {
  const parity::Report rep = expect_i2v_rows("ltx2_pipeline_i2v_keyframes.safetensors");
  EXPECT_EQ(rep.compared, 2 + 3 + 3 + 3 + 2 * 6);
}

TEST(Ltx2I2VGolden, KeyframeMarkerMatchesTheReference) {
  // (d) a DiT with use_keyframes_abs_pos_embedding: the marker on the first latent frame's tokens
  // (not on the appended keyframe's) adds the embedding there.
  const parity::Report rep = expect_i2v_rows("ltx2_pipeline_i2v_marker.safetensors");
  EXPECT_EQ(rep.compared, 2 + 3 + 3 + 2 + 2 * 6);
  // The embedding is read and applied: moved, the latents fail, the state does not.
  const parity::Report moved = run_edited("ltx2_pipeline_i2v_marker.safetensors", [](auto& t, auto&) {
    Tensor& e = t.at("model.diffusion_model.keyframes_abs_pos_embedding");
    e = ops::add_scalar(e, 0.5);
  });
  EXPECT_EQ(row_status(moved, "output.video_latent"), Status::Fail);
  EXPECT_EQ(row_status(moved, "inter.state.clean_latent"), Status::Ok);
}

TEST(Ltx2I2VGolden, RealEncoderConditioningMatchesTheReference) {
  // The encoder's latents as the ltx2.vae.encode kind's bound (1e-5); the state exact.
  engine::register_builtins();
  const parity::Report rep = parity::run(golden("ltx2_conditioning_image.safetensors"), parity::Options{});
  for (const auto& c : rep.rows) {
    std::printf("  conditioning %-32s max_abs=%.3g rel_l2=%.3g\n", c.name.c_str(), c.max_abs, c.rel_l2);
    EXPECT_EQ(c.status, Status::Ok) << c.name << " " << c.note;
    EXPECT_LE(c.max_abs, c.name.rfind("inter.image", 0) == 0 ? 5e-6 : 1e-5) << c.name;
  }
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(rep.compared, 2 + 2 + 4);  // 2 images, 2 latents, the state's 4 tensors
}

TEST(Ltx2I2V, StrengthOneKeepsTheFirstLatentFrame) {
  // Mask 0 on the image's tokens: the state starts at the clean latent and every step keeps it, so
  // the output's first latent frame is the image latent exactly (in the reference's file too).
  const GoldenParams g = load_golden("ltx2_pipeline_i2v.safetensors");
  const Tensor image = g.file.get("input.image_latent.0");
  const Tensor want = g.file.get("output.video_latent").slice(2, 0, 1).contiguous();
  EXPECT_EQ(max_abs_diff(want, image), 0.0);
  // At strength 0.6 the first frame moves away from the image.
  const GoldenParams s = load_golden("ltx2_pipeline_i2v_strength.safetensors");
  EXPECT_GT(max_abs_diff(s.file.get("output.video_latent").slice(2, 0, 1).contiguous(),
                         s.file.get("input.image_latent.0")),
            1e-2);
}

TEST(Ltx2I2V, EachInputIsRead) {
  // The strength from the config: the latents move, the noise draw does not.
  parity::Report rep = run_edited("ltx2_pipeline_i2v_strength.safetensors",
                                  [](auto&, auto& c) { c["images"][0]["strength"] = 0.9; });
  EXPECT_EQ(row_status(rep, "output.video_latent"), Status::Fail);
  EXPECT_EQ(row_status(rep, "inter.state.denoise_mask"), Status::Fail);
  EXPECT_EQ(row_status(rep, "inter.sigmas"), Status::Ok);
  // A keyframe's frame index moves its positions (and so the result) only.
  rep = run_edited("ltx2_pipeline_i2v_keyframes.safetensors", [](auto&, auto& c) { c["images"][2]["frame_idx"] = 16; });
  EXPECT_EQ(row_status(rep, "inter.state.positions"), Status::Fail);
  EXPECT_EQ(row_status(rep, "inter.state.clean_latent"), Status::Ok);
  EXPECT_EQ(row_status(rep, "output.video_latent"), Status::Fail);
  // The encoded image is the clean latent.
  rep = run_edited("ltx2_pipeline_i2v_keyframes.safetensors", [](auto& t, auto&) {
    Tensor& l = t.at("input.image_latent.1");
    l = ops::add_scalar(l, 0.1);
  });
  EXPECT_EQ(row_status(rep, "inter.state.clean_latent"), Status::Fail);
  EXPECT_EQ(row_status(rep, "output.video_latent"), Status::Fail);
  // The picture is preprocessed into the image tap; the latent does not depend on it here (the
  // golden's encoder is a stand-in).
  rep = run_edited("ltx2_pipeline_i2v.safetensors", [](auto& t, auto&) {
    Tensor& p = t.at("input.image.0");
    p = ops::add_scalar(p, 3.0);
  });
  EXPECT_EQ(row_status(rep, "inter.image.0"), Status::Fail);
  EXPECT_EQ(row_status(rep, "output.video_latent"), Status::Ok);
  // Through the real encoder a picture change reaches the latent and the state.
  rep = run_edited("ltx2_conditioning_image.safetensors", [](auto& t, auto&) {
    Tensor& p = t.at("input.image.1");
    p = ops::add_scalar(p, 3.0);
  });
  EXPECT_EQ(row_status(rep, "output.image_latent.1"), Status::Fail);
  EXPECT_EQ(row_status(rep, "output.image_latent.0"), Status::Ok);
  EXPECT_EQ(row_status(rep, "output.state.clean_latent"), Status::Fail);
  // The seed is the noiser's.
  rep = run_edited("ltx2_conditioning_image.safetensors", [](auto&, auto& c) { c["seed"] = 22; });
  EXPECT_EQ(row_status(rep, "output.state.latent"), Status::Fail);
  EXPECT_EQ(row_status(rep, "output.state.clean_latent"), Status::Ok);
}

TEST(Ltx2I2V, ConditionedStateAsTheReferenceBuildsIt) {
  // 17 frames 32 x 64 at 25 fps: latent 3 x 1 x 2, 6 target tokens; frame 0 replaces tokens 0-1,
  // frame 12 appends 2 tokens whose frame bounds are [12, 13) / 25.
  VideoTarget t;
  t.frames = 3;
  t.height = 1;
  t.width = 2;
  t.channels = 2;
  t.num_frames = 17;
  t.fps = 25;
  const Tensor a = Tensor::from_f32({1, 2, 3, 4}, {1, 2, 1, 1, 2});  // channels x (h w)
  const Tensor b = Tensor::from_f32({5, 6, 7, 8}, {1, 2, 1, 1, 2});
  const vidax::ltx2::VideoLatentState s =
      vidax::ltx2::conditioned_video_state(t, {ImageConditioning{a, 0, 0.75}, ImageConditioning{b, 12, 1.0}});
  ASSERT_EQ(s.tokens(), 8);
  EXPECT_EQ(s.target_tokens, 6);
  const std::vector<float> clean = s.clean_latent.to_f32_vector();
  EXPECT_EQ(clean, (std::vector<float>{1, 3, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0, 5, 7, 6, 8}));  // patchified (c last)
  EXPECT_EQ(s.denoise_mask.to_f32_vector(), (std::vector<float>{0.25f, 0.25f, 1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(s.keyframes_mask.to_f32_vector(), (std::vector<float>{1, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_FLOAT_EQ(s.positions.start[6], 12.0f / 25.0f);
  EXPECT_FLOAT_EQ(s.positions.end[6], 13.0f / 25.0f);
  EXPECT_FLOAT_EQ(s.positions.start[2], 1.0f / 25.0f);  // the causal fix on the grid: frame 1 -> [1, 9)
  EXPECT_FLOAT_EQ(s.positions.start[8 + 7], 0.0f);      // height axis of the keyframe's second token
  EXPECT_FLOAT_EQ(s.positions.start[16 + 7], 32.0f);    // width axis: column 1
  // The noiser keeps a mask-0 token clean and takes the noise where the mask is 1.
  vidax::ltx2::VideoLatentState n = s;
  const Tensor noise = Tensor::full({1, 8, 2}, 2.0, DType::F32);
  vidax::ltx2::add_noise(n, noise);
  const std::vector<float> l = n.latent.to_f32_vector();
  EXPECT_FLOAT_EQ(l[0], 1.0f + 0.25f * (2.0f - 1.0f));
  EXPECT_EQ(l[4], 2.0f);
  EXPECT_EQ(l[12], 5.0f);
}

TEST(Ltx2I2V, PreprocessResizesAndCropsTheCentre) {
  // A 2 x 4 picture to 2 x 2: scale max(1, 0.5) = 1, no resize; the centre columns 1-2 kept.
  std::vector<float> px;
  for (int h = 0; h < 2; ++h)
    for (int w = 0; w < 4; ++w)
      for (int c = 0; c < 3; ++c) px.push_back(static_cast<float>(10 * w + c + 100 * h));
  const Tensor out = vidax::ltx2::preprocess_image(Tensor::from_f32(px, {2, 4, 3}), 2, 2);
  ASSERT_EQ(out.shape(), (Shape{1, 3, 1, 2, 2}));
  const std::vector<float> v = out.to_f32_vector();
  EXPECT_FLOAT_EQ(v[0], 10.0f / 127.5f - 1.0f);  // channel 0, row 0, column 1
  EXPECT_FLOAT_EQ(v[1], 20.0f / 127.5f - 1.0f);
  EXPECT_FLOAT_EQ(v[4 + 2], 111.0f / 127.5f - 1.0f);  // channel 1, row 1, column 1
}

TEST(Ltx2I2V, TheKindEncodesPicturesWithTheFilesEncoder) {
  // The pipeline kind's encoder path (vae.encoder.* in the file, no input.image_latent.<i>) is the
  // latent path fed VideoEncoder(preprocess(picture)): a 128-channel encoder (patch 4, three 2x
  // spatial steps) with seeded weights, its outputs run through denoise_t2v directly, written as the
  // expected rows of an edited keyframes file. (The encoder itself is checked against the reference
  // by ltx2.conditioning.image and ltx2.vae.encode.)
  nlohmann::json vae = {{"_class_name", "CausalVideoAutoencoder"}, {"dims", 3}, {"in_channels", 3},
                              {"latent_channels", 128}, {"patch_size", 4}, {"norm_layer", "pixel_norm"},
                              {"latent_log_var", "uniform"}, {"encoder_spatial_padding_mode", "zeros"},
                              {"encoder_blocks", nlohmann::json::array()}};
  for (int b = 0; b < 3; ++b) vae["encoder_blocks"].push_back(nlohmann::json::array({"compress_space", 1}));
  TorchGenerator wgen(5);
  std::map<std::string, Tensor> enc_params;
  auto conv = [&](const std::string& name, int64_t out, int64_t in) {
    enc_params[name + ".conv.weight"] = ops::scale(wgen.randn({out, in, 3, 3, 3}), 0.05);
    enc_params[name + ".conv.bias"] = ops::scale(wgen.randn({out}), 0.1);
  };
  conv("conv_in", 128, 48);
  for (int b = 0; b < 3; ++b) conv("down_blocks." + std::to_string(b), 128, 128);
  conv("conv_out", 129, 128);
  enc_params["per_channel_statistics.mean-of-means"] = ops::scale(wgen.randn({128}), 0.5);
  enc_params["per_channel_statistics.std-of-means"] = ops::add_scalar(ops::scale(wgen.randn({128}), 0.1), 1.0);
  nn::ParamSource esrc = nn::ParamSource::from_map(enc_params, "test encoder");
  const vidax::ltx2::VideoEncoder enc(vidax::ltx2::VideoVaeConfig::from_json(vae), esrc, "", DType::F32);
  esrc.expect_all_taken();

  const char* name = "ltx2_pipeline_i2v_keyframes.safetensors";
  const GoldenParams g = load_golden(name);
  std::map<std::string, Tensor> dit_params;
  for (const auto& [n, t] : g.params) dit_params[n.substr(std::string("model.diffusion_model.").size())] = t;
  nn::ParamSource dsrc = nn::ParamSource::from_map(std::move(dit_params), name);
  const vidax::ltx2::LTXModel dit(vidax::ltx2::DiTConfig::from_json(g.config.at("transformer")), dsrc, DType::F32);
  const vidax::ltx2::T2VRequest r = vidax::ltx2::T2VRequest::from_json(g.config);
  const vidax::ltx2::PromptContexts ctx{g.file.get("input.v_context_p"), g.file.get("input.a_context_p"),
                                        g.file.get("input.v_context_n"), g.file.get("input.a_context_n")};
  std::vector<ImageConditioning> images;
  for (size_t i = 0; i < g.config.at("images").size(); ++i) {
    const auto& spec = g.config.at("images")[i];
    const Tensor px = vidax::ltx2::preprocess_image(g.file.get("input.image." + std::to_string(i)), r.height, r.width);
    images.push_back({enc.forward(px), spec.at("frame_idx").get<int64_t>(), spec.at("strength").get<double>()});
  }
  TorchGenerator gen(r.seed);
  const vidax::ltx2::T2VLatents want = vidax::ltx2::denoise_t2v(dit, r, ctx, gen, false, images);
  EXPECT_GT(max_abs_diff(g.file.get("output.video_latent"), want.video), 1e-3);  // other latents, other result

  auto with_encoder = [&](double bias_shift) {
    return run_edited(name, [&](auto& t, auto& c) {
      for (auto it = t.begin(); it != t.end();)
        it = (it->first.rfind("inter.", 0) == 0 || it->first.rfind("input.image_latent.", 0) == 0) ? t.erase(it) : ++it;
      for (const auto& [n, p] : enc_params)
        t[n.rfind("per_channel_statistics.", 0) == 0 ? "vae." + n : "vae.encoder." + n] = p;
      t["vae.encoder.conv_out.conv.bias"] = ops::add_scalar(enc_params.at("conv_out.conv.bias"), bias_shift);
      t["output.video_latent"] = want.video;
      t["output.audio_latent"] = want.audio;
      for (size_t i = 0; i < images.size(); ++i) t["inter.image_latent." + std::to_string(i)] = images[i].latent;
      c["vae"] = vae;
    });
  };
  parity::Report rep = with_encoder(0.0);
  for (const auto& c : rep.rows) {
    EXPECT_EQ(c.status, Status::Ok) << c.name << " " << c.note;
    EXPECT_EQ(c.max_abs, 0.0) << c.name;
  }
  EXPECT_EQ(rep.compared, 2 + 3);
  rep = with_encoder(0.2);  // the file's encoder is the one that runs
  EXPECT_EQ(row_status(rep, "inter.image_latent.0"), Status::Fail);
  EXPECT_EQ(row_status(rep, "output.video_latent"), Status::Fail);
}

TEST(Ltx2I2V, BadInputIsRefused) {
  VideoTarget t;
  t.frames = 2;
  t.height = 1;
  t.width = 2;
  t.channels = 128;
  t.num_frames = 9;
  t.fps = 24;
  const Tensor latent = Tensor::zeros({1, 128, 1, 1, 2}, DType::F32);
  using vidax::ltx2::conditioned_video_state;
  expect_error([&] { conditioned_video_state(t, {ImageConditioning{latent, 9, 1.0}}); },
               "frame index 9 is outside the video's frames [0, 9)");
  expect_error([&] { conditioned_video_state(t, {ImageConditioning{latent, -1, 1.0}}); }, "frame index -1");
  expect_error([&] { conditioned_video_state(t, {ImageConditioning{latent, 0, 1.5}}); }, "strength 1.5 must be in [0, 1]");
  expect_error([&] { conditioned_video_state(t, {ImageConditioning{latent, 8, -0.1}}); }, "strength -0.1");
  expect_error([&] { conditioned_video_state(t, {ImageConditioning{Tensor::zeros({1, 128, 1, 2, 2}, DType::F32), 0, 1.0}}); },
               "[1, 128, 1, 1, 2] F32 latent");
  expect_error([&] { conditioned_video_state(t, {ImageConditioning{Tensor::zeros({1, 64, 1, 1, 2}, DType::F32), 0, 1.0}}); },
               "F32[1, 64, 1, 1, 2]");
  // Images of the wrong rank or channel count.
  using vidax::ltx2::preprocess_image;
  expect_error([] { preprocess_image(Tensor::zeros({1, 8, 8, 3}, DType::F32), 32, 32); }, "[height, width, 3] RGB");
  expect_error([] { preprocess_image(Tensor::zeros({8, 8, 4}, DType::F32), 32, 32); }, "[height, width, 3] RGB");
  expect_error([] { preprocess_image(Tensor::zeros({8, 8}, DType::F32), 32, 32); }, "[height, width, 3] RGB");
  // Through the kind: the request's frames, the file's images.
  expect_error([] {
    run_edited("ltx2_pipeline_i2v_keyframes.safetensors", [](auto&, auto& c) { c["images"][1]["frame_idx"] = 17; });
  }, "frame index 17 is outside the video's frames [0, 17)");
  expect_error([] {
    run_edited("ltx2_pipeline_i2v.safetensors", [](auto&, auto& c) { c["images"][0]["strength"] = 2; });
  }, "strength 2 must be in [0, 1]");
  expect_error([] {
    run_edited("ltx2_pipeline_i2v.safetensors", [](auto& t, auto&) { t["input.image.0"] = Tensor::zeros({40, 56, 4}, DType::F32); });
  }, "[height, width, 3] RGB");
  expect_error([] {
    run_edited("ltx2_pipeline_i2v.safetensors", [](auto& t, auto&) { t["input.image.0"] = Tensor::zeros({1, 3, 1, 16, 64}, DType::F32); });
  }, "[1, 3, 1, 32, 64]");
  expect_error([] {
    run_edited("ltx2_pipeline_i2v.safetensors", [](auto& t, auto&) { t.erase("input.image_latent.0"); });
  }, "input.image_latent.0");
  expect_error([] { run_edited("ltx2_pipeline_i2v.safetensors", [](auto&, auto& c) { c.erase("images"); }); },
               "\"images\"");
  expect_error([] {
    run_edited("ltx2_pipeline_i2v.safetensors", [](auto&, auto& c) { c["images"][0] = {{"frame", 0}, {"strength", 1}}; });
  }, "frame_idx");
}

}  // namespace
}  // namespace vidax::test::ltx2
