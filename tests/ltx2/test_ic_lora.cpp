// The LTX-2 IC-LoRA reference-video conditioning and ICLoraPipeline's stage 1 (models/ltx2/
// reference_video.h, ic_lora.h; kinds ltx2.conditioning.reference_video and ltx2.pipeline.ic_lora)
// against the official ic_lora.py / iclora_utils.py (tools/golden/ltx2_ic_lora.py); negative
// controls and bad input.
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/ops.h"
#include "ltx2_golden.h"
#include "models/ltx2/ic_lora.h"
#include "models/ltx2/reference_video.h"

namespace vidax::test::ltx2 {
namespace {

using Status = parity::Comparison::Status;
using vidax::ltx2::ReferenceVideoConditioning;
using vidax::ltx2::VideoLatentState;
using vidax::ltx2::VideoTarget;

// Per row: noise, sigmas and the state taps exact (bit for bit); the preprocessed frames and the
// encoder's latents <= 2e-6 (torch's bilinear kernel against io::resize_bilinear, the encoder's fp32
// sums); the step taps and latents <= 2e-5 (8 DiT passes; measured <= 1.0e-5 on x0, 4.4e-6 on the
// latents); the decoded video / audio <= 2e-6.
parity::Report expect_ic_rows(const char* name) {
  engine::register_builtins();
  const parity::Report rep = parity::run(golden(name), parity::Options{});
  for (const auto& c : rep.rows) {
    std::printf("  %s %-32s max_abs=%.3g rel_l2=%.3g\n", name, c.name.c_str(), c.max_abs, c.rel_l2);
    EXPECT_EQ(c.status, Status::Ok) << c.name << " " << c.note;
    const bool exact = c.name.rfind("inter.noise", 0) == 0 || c.name.rfind("inter.state", 0) == 0 ||
                       c.name == "inter.sigmas" || c.name == "output.state.denoise_mask" ||
                       c.name == "output.state.positions" || c.name == "output.state.attention_mask" ||
                       c.name == "output.state.keyframes_mask";
    if (exact)
      EXPECT_EQ(c.max_abs, 0.0) << c.name;
    else if (c.name.rfind("inter.step", 0) == 0 || c.name.rfind("output.video_latent", 0) == 0 ||
             c.name.rfind("output.audio_latent", 0) == 0)
      EXPECT_LE(c.max_abs, 2e-5) << c.name;
    else
      EXPECT_LE(c.max_abs, 2e-6) << c.name;
  }
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
  return rep;
}

TEST(Ltx2ReferenceVideoGolden, ImageAndMaskedReferenceMatchTheReference) {
  const parity::Report rep = expect_ic_rows("ltx2_conditioning_reference_video.safetensors");
  EXPECT_EQ(rep.compared, 9);  // image + reference latents, the tap, 6 state tensors
}

TEST(Ltx2ReferenceVideoGolden, TemporalScaleAndTwoReferencesMatchTheReference) {
  const parity::Report rep = expect_ic_rows("ltx2_conditioning_reference_video_temporal.safetensors");
  EXPECT_EQ(rep.compared, 10);
}

TEST(Ltx2ICLoraGolden, StageOneWithDecodersMatchesTheReference) {
  const parity::Report rep = expect_ic_rows("ltx2_pipeline_ic_lora.safetensors");
  EXPECT_EQ(rep.compared, 18);
}

TEST(Ltx2ICLoraGolden, ImageAndAttentionStrengthMatchTheReference) {
  const parity::Report rep = expect_ic_rows("ltx2_pipeline_ic_lora_image.safetensors");
  EXPECT_EQ(rep.compared, 18);
}

// The pipeline files name their LoRA beside the golden; an edited copy lives elsewhere, so its config
// names the LoRA by its full path.
void lora_by_path(nlohmann::json& c) {
  for (auto& l : c["loras"]) l["file"] = golden(l.at("file").get<std::string>().c_str());
}

TEST(Ltx2ICLoraGolden, EachInputIsRead) {
  // Negative controls: each perturbed input fails where it should.
  const char* kPipe = "ltx2_pipeline_ic_lora.safetensors";
  const parity::Report ref = run_edited(kPipe, [](auto& t, auto& c) {
    lora_by_path(c);
    t.at("input.reference_latent.0") = ops::add_scalar(t.at("input.reference_latent.0"), 0.5);
  });
  EXPECT_EQ(row_status(ref, "inter.state.clean_latent"), Status::Fail);
  EXPECT_EQ(row_status(ref, "output.video_latent"), Status::Fail);
  EXPECT_EQ(row_status(ref, "inter.noise.audio"), Status::Ok);  // (the video noise holds the clean reference: mask 0)
  // Without the LoRA the DiT is the base one: the latents move, the state does not.
  const parity::Report no_lora = run_edited(kPipe, [](auto&, auto& c) { c["loras"] = nlohmann::json::array(); });
  EXPECT_EQ(row_status(no_lora, "output.video_latent"), Status::Fail);
  // The LoRA's metadata sets the downscale factor: the same file at strength 0 keeps the factor
  // (the state and its positions as before) but drops the LoRA's change.
  const parity::Report zero = run_edited(kPipe, [](auto&, auto& c) {
    lora_by_path(c);
    c["loras"][0]["strength"] = 0.0;
  });
  EXPECT_EQ(row_status(zero, "inter.state.positions"), Status::Ok);
  EXPECT_EQ(row_status(zero, "output.video_latent"), Status::Fail);
  // The reference strength is the denoise mask of its tokens.
  const parity::Report strength = run_edited(kPipe, [](auto&, auto& c) {
    lora_by_path(c);
    c["video_conditioning"][0]["strength"] = 0.5;
  });
  EXPECT_EQ(row_status(strength, "inter.state.denoise_mask"), Status::Fail);
  // An attention strength builds a mask the golden has none of: the latents move.
  const parity::Report attn = run_edited(kPipe, [](auto&, auto& c) {
    lora_by_path(c);
    c["conditioning_attention_strength"] = 0.3;
  });
  EXPECT_EQ(row_status(attn, "output.video_latent"), Status::Fail);
  // __call__'s pixel mask (conditioning_attention_mask) halves the attention to the reference.
  const parity::Report masked = run_edited(kPipe, [](auto& t, auto& c) {
    lora_by_path(c);
    t["input.conditioning_attention_mask"] = Tensor::full({1, 1, 9, 64, 64}, 0.5f, DType::F32);
  });
  EXPECT_EQ(row_status(masked, "inter.state.clean_latent"), Status::Ok);
  EXPECT_EQ(row_status(masked, "output.video_latent"), Status::Fail);
  const parity::Report pixels = run_edited("ltx2_conditioning_reference_video.safetensors", [](auto& t, auto&) {
    t.at("input.reference_video.0") = ops::add_scalar(t.at("input.reference_video.0"), 8.0);
  });
  EXPECT_EQ(row_status(pixels, "output.reference_latent.0"), Status::Fail);
  EXPECT_EQ(row_status(pixels, "output.image_latent.0"), Status::Ok);
  const parity::Report mask = run_edited("ltx2_conditioning_reference_video.safetensors", [](auto& t, auto&) {
    t.at("input.attention_mask") = ops::scale(t.at("input.attention_mask"), 0.5);
  });
  EXPECT_EQ(row_status(mask, "output.state.attention_mask"), Status::Fail);
  EXPECT_EQ(row_status(mask, "output.state.clean_latent"), Status::Ok);
  const parity::Report scale = run_edited("ltx2_conditioning_reference_video_temporal.safetensors", [](auto&, auto& c) {
    c["reference_temporal_scale_factor"] = 1;
  });
  EXPECT_EQ(row_status(scale, "output.state.positions"), Status::Fail);
}

// A small state by hand: two target tokens (1 x 1 x 2 grid), a reference of 1 x 1 x 1 appended with
// attention 0.25, then a second of 1 x 1 x 2 without a weight (the existing mask extended by ones).
TEST(Ltx2ReferenceVideo, AttentionMaskBlocksAsTheReferenceBuildsThem) {
  VideoTarget t;
  t.frames = 1;
  t.height = 1;
  t.width = 2;
  t.channels = 2;
  t.num_frames = 1;
  t.fps = 24;
  VideoLatentState s = vidax::ltx2::conditioned_video_state(t, {});
  ReferenceVideoConditioning a;
  a.latent = Tensor::full({1, 2, 1, 1, 1}, 3.0f, DType::F32);
  a.downscale_factor = 2;
  a.strength = 0.75;
  a.attention = vidax::ltx2::reference_attention(0.25, 1);
  vidax::ltx2::append_reference_video(s, t, a);
  ASSERT_EQ(s.tokens(), 3);
  EXPECT_EQ(s.attention_mask.to_f32_vector(), (std::vector<float>{1, 1, 0.25f, 1, 1, 0.25f, 0.25f, 0.25f, 1}));
  EXPECT_EQ(s.denoise_mask.to_f32_vector(), (std::vector<float>{1, 1, 0.25f}));
  EXPECT_EQ(s.positions.start[2 * 3 + 2], 0.0f);  // width axis of the reference token: [0, 32) x 2
  EXPECT_EQ(s.positions.end[2 * 3 + 2], 64.0f);
  ReferenceVideoConditioning b;
  b.latent = Tensor::full({1, 2, 1, 1, 2}, 1.0f, DType::F32);
  vidax::ltx2::append_reference_video(s, t, b);
  ASSERT_EQ(s.tokens(), 5);
  const std::vector<float> want{1,     1,     0.25f, 1, 1,  //
                                1,     1,     0.25f, 1, 1,  //
                                0.25f, 0.25f, 1,     0, 0,  // no attention between reference groups
                                1,     1,     0,     1, 1,  //
                                1,     1,     0,     1, 1};
  EXPECT_EQ(s.attention_mask.to_f32_vector(), want);
  // Without any weight no mask is built (full attention).
  VideoLatentState plain = vidax::ltx2::conditioned_video_state(t, {});
  vidax::ltx2::append_reference_video(plain, t, b);
  EXPECT_FALSE(plain.attention_mask.defined());
}

TEST(Ltx2ReferenceVideo, FramesAreCappedSubsampledAndCropped) {
  const Tensor frames = Tensor::full({12, 8, 8, 3}, 255.0f, DType::F32);
  EXPECT_EQ(vidax::ltx2::reference_video_input(frames, 9, 32, 32, 1).size(2), 9);   // frame_cap
  EXPECT_EQ(vidax::ltx2::reference_video_input(frames, 17, 32, 32, 1).size(2), 12);  // fewer: as they are
  EXPECT_EQ(vidax::ltx2::reference_video_input(frames, 17, 32, 32, 4).size(2), 4);   // 0, 1, 5, 9
  std::string warned;
  const Tensor v = vidax::ltx2::reference_video_input(frames, 17, 32, 32, 1);
  EXPECT_EQ(vidax::ltx2::crop_to_encoder_frames(v, 8, [&](const std::string& m) { warned = m; }).size(2), 9);
  EXPECT_NE(warned.find("cropping last 3 frames"), std::string::npos) << warned;
}

TEST(Ltx2ReferenceVideo, BadInputIsRefused) {
  using vidax::ltx2::reference_scale;
  expect_error([] { reference_scale({{"a.safetensors", {{"reference_downscale_factor", "2"}}},
                                     {"b.safetensors", {{"reference_downscale_factor", "4"}}}}); },
               "Conflicting reference_downscale_factor");
  expect_error([] { reference_scale({{"a.safetensors", {{"reference_temporal_scale_factor", "x"}}}}); },
               "must be a positive integer");
  EXPECT_EQ(reference_scale({{"a", {}}, {"b", {{"reference_downscale_factor", "2"}}}}).downscale, 2);
  int64_t h = 0, w = 0;
  expect_error([&] { vidax::ltx2::reference_size(96, 64, 3, &h, &w); }, "must be divisible by reference_downscale_factor (3)");
  expect_error([] { vidax::ltx2::reference_attention(1.5, 4); }, "conditioning_attention_strength must be in [0.0, 1.0]");
  expect_error([] { vidax::ltx2::preprocess_video({}, 32, 32); }, "empty frame generator");
  VideoTarget t;
  t.frames = t.height = t.width = 1;
  t.channels = 4;
  t.num_frames = 1;
  t.fps = 24;
  VideoLatentState s = vidax::ltx2::conditioned_video_state(t, {});
  ReferenceVideoConditioning c;
  c.latent = Tensor::zeros({1, 4, 1, 1, 1}, DType::F32);
  c.strength = 1.5;
  expect_error([&] { vidax::ltx2::append_reference_video(s, t, c); }, "strength 1.5 must be in [0, 1]");
  c.strength = 1.0;
  c.latent = Tensor::zeros({1, 3, 1, 1, 1}, DType::F32);
  expect_error([&] { vidax::ltx2::append_reference_video(s, t, c); }, "[1, 4, F, h, w] F32 latent");
  c.latent = Tensor::zeros({1, 4, 1, 1, 1}, DType::F32);
  c.attention = Tensor::full({2}, 0.5f, DType::F32);
  expect_error([&] { vidax::ltx2::append_reference_video(s, t, c); }, "must equal num_new_tokens (1)");
  expect_error([] { vidax::ltx2::downsample_mask_to_latent(Tensor::zeros({1, 1, 4, 8, 8}, DType::F32), 3, 1, 1); },
               "(f_pix - 1) must be divisible by (f_lat - 1)");
}

TEST(Ltx2ICLora, RequestRules) {
  vidax::ltx2::ICLoraRequest r;
  r.height = 128;
  r.width = 96;
  r.num_frames = 9;
  r.frame_rate = 24;
  r.skip_stage_2 = true;
  expect_error([&] { vidax::ltx2::check_ic_lora_request(r); }, "nearest valid: height 128, width 64 or 128");
  r.width = 128;
  r.num_frames = 10;
  expect_error([&] { vidax::ltx2::check_ic_lora_request(r); }, "9 or 17");
  r.num_frames = 9;
  r.conditioning_attention_strength = -0.1;
  expect_error([&] { vidax::ltx2::check_ic_lora_request(r); }, "conditioning_attention_strength");
  r.conditioning_attention_strength = 1.0;
  r.skip_stage_2 = false;
  expect_error([&] { vidax::ltx2::check_ic_lora_request(r); }, "stage 2");
  r.skip_stage_2 = true;
  vidax::ltx2::check_ic_lora_request(r);
  EXPECT_EQ(vidax::ltx2::stage_1_request(r).height, 64);
  EXPECT_EQ(vidax::ltx2::stage_1_request(r).num_inference_steps, 8);
  // The kind refuses a file without skip_stage_2 by name.
  expect_error(
      [] {
        run_edited("ltx2_pipeline_ic_lora_image.safetensors", [](auto&, auto& c) {
          lora_by_path(c);
          c["skip_stage_2"] = false;
        });
      },
      "skip_stage_2");
}

}  // namespace
}  // namespace vidax::test::ltx2
