// Wan VACE: the mask and source rules against values worked out from the reference's own
// expressions (wan/vace.py, wan/utils/vace_processor.py), and `vidax generate --control-video
// --mask-video --reference-image` on the tiny demo with the bad inputs refused. The DiT and the
// conditioning are checked against the official code by their goldens (tests/golden/wan_dit_vace_*,
// wan_vace_conditioning: tests/wan_dit, tests/parity).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cli_child.h"
#include "core/error.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "io/video.h"
#include "models/wan/vace_conditioning.h"
#include "models/wan/vace_source.h"
#include "parity/parity.h"
#include "pipeline/scratch.h"

namespace fs = std::filesystem;
using namespace vidax;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A video of `frames` frames, h x w, distinct smooth values per frame; `white` = an all-white video.
io::RgbVideo rgb_video(int64_t frames, int64_t h, int64_t w, bool white = false) {
  io::RgbVideo v;
  v.frames = frames;
  v.height = h;
  v.width = w;
  v.rgb.resize(static_cast<size_t>(frames * h * w * 3));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < h * w; ++i)
      for (int64_t c = 0; c < 3; ++c)
        v.rgb[static_cast<size_t>((f * h * w + i) * 3 + c)] =
            white ? 255 : static_cast<uint8_t>((f * 40 + (i % w) * 3 + (i / w) * 5 + c * 60) % 256);
  return v;
}

std::string write_y4m(const fs::path& dir, const std::string& name, const io::RgbVideo& v) {
  const std::string p = (dir / name).string();
  io::write_y4m(p, v, {});
  return p;
}

const std::string kGolden = std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/wan_vace_tiny.safetensors";

// The golden with `edit` applied to its tensors and config (weights made absolute), run.
parity::Report run_edited(const std::string& name,
                          const std::function<void(std::map<std::string, Tensor>&, nlohmann::json&)>& edit) {
  io::Checkpoint g = io::Checkpoint::open(kGolden);
  std::map<std::string, Tensor> t;
  for (const auto& n : g.names()) t[n] = g.get(n).contiguous();
  std::map<std::string, std::string> meta = g.metadata();
  nlohmann::json cfg = nlohmann::json::parse(meta.at("config"));
  const fs::path dir = fs::path(kGolden).parent_path();
  cfg["weights"] = (dir / cfg["weights"].get<std::string>()).string();
  cfg["diffusion_model"] = (dir / cfg["diffusion_model"].get<std::string>()).string();
  edit(t, cfg);
  meta["config"] = cfg.dump();
  const std::string path = (vidax::test::scratch_dir("vace_golden") / (name + ".safetensors")).string();
  io::save_safetensors(path, t, meta);
  return parity::run(path, {});
}

double rel_l2_of(const parity::Report& r, const std::string& row) {
  for (const auto& c : r.rows)
    if (c.name == row) return c.rel_l2;
  return -1;
}

}  // namespace

// The official WanVace.generate on tiny weights (tools/golden/wan_vace_pipeline.py): a control
// video, a mask with kept, regenerated and mid-grey pixels, a reference image of another size, a
// control scale of 0.8, CFG over 3 UniPC steps; the latents include the reference's frame.
TEST(VaceGolden, MatchesOfficialGenerate) {
  engine::register_builtin_kinds();
  const parity::Report r = parity::run(kGolden, {});  // default fp32 bound 1e-5
  EXPECT_TRUE(r.ok());
  EXPECT_GE(rel_l2_of(r, "output.latents"), 0.0);
  EXPECT_LT(rel_l2_of(r, "output.latents"), 1e-5);
  EXPECT_LT(rel_l2_of(r, "inter.vace_context"), 1e-6);
  for (const auto& c : r.rows)
    if (c.name == "inter.noise" || c.name == "inter.timesteps") EXPECT_EQ(c.max_abs, 0.0) << c.name;
}

// The controls: each input reaches the result (another control scale, no reference image, the
// mask inverted each fail the golden).
TEST(VaceGolden, EachInputReachesTheResult) {
  engine::register_builtin_kinds();
  const parity::Report scale = run_edited("scale", [](auto&, nlohmann::json& c) { c["control_scale"] = 1.0; });
  EXPECT_FALSE(scale.ok());
  EXPECT_GT(rel_l2_of(scale, "output.latents"), 1e-4);
  const parity::Report mask = run_edited("mask", [](std::map<std::string, Tensor>& t, auto&) {
    std::vector<float> m = t["input.mask_video"].to_f32_vector();
    for (float& v : m) v = -v;
    t["input.mask_video"] = Tensor::from_f32(m, t["input.mask_video"].shape());
  });
  EXPECT_FALSE(mask.ok());
  EXPECT_GT(rel_l2_of(mask, "inter.vace_context"), 1e-3);
  // Without the reference image the latent has one frame less: its shape differs (a failure).
  bool noref_ok = true;
  try {
    noref_ok = run_edited("noref", [](std::map<std::string, Tensor>& t, auto&) {
                 t.erase("input.reference_image.0");
               }).ok();
  } catch (const Error&) {  // a shape mismatch may be reported as an error
    noref_ok = false;
  }
  EXPECT_FALSE(noref_ok);
}

// vace_encode_masks: mask[0].view(F, h, 8, w, 8).permute(2, 4, 0, 1, 3) -> channel kh * 8 + kw,
// then nearest-exact from F = 5 to (5 + 3) // 4 = 2 frames: source frames floor((i + 0.5) * 5 / 2)
// = 1 and 3; a reference adds one zero frame first.
TEST(VaceMasks, EightByEightBlocksOnChannelsNearestExactInTime) {
  const int64_t F = 5, H = 16, W = 32;
  std::vector<float> m(static_cast<size_t>(F * H * W));
  for (int64_t i = 0; i < F * H * W; ++i) m[static_cast<size_t>(i)] = static_cast<float>(i);
  const Tensor mask = Tensor::from_f32(m, {1, F, H, W});
  const Tensor out = wan::vace_encode_masks(mask, /*refs=*/1);
  ASSERT_EQ(out.shape(), (Shape{64, 3, 2, 4}));
  const auto v = out.to_f32_vector();
  for (int64_t kh = 0; kh < 8; ++kh)
    for (int64_t kw = 0; kw < 8; ++kw)
      for (int64_t t = 0; t < 3; ++t)
        for (int64_t y = 0; y < 2; ++y)
          for (int64_t x = 0; x < 4; ++x) {
            const int64_t c = kh * 8 + kw;
            const float got = v[static_cast<size_t>(((c * 3 + t) * 2 + y) * 4 + x)];
            const int64_t src = t == 1 ? 1 : 3;
            const float want = t == 0 ? 0.0f : static_cast<float>((src * H + y * 8 + kh) * W + x * 8 + kw);
            ASSERT_EQ(got, want) << c << " " << t << " " << y << " " << x;
          }
  // The reference's view needs H and W multiples of 16.
  const std::string e = error_of([] { (void)wan::vace_encode_masks(Tensor::zeros({1, 5, 24, 32}, DType::F32), 0); });
  EXPECT_NE(e.find("multiples of 16"), std::string::npos) << e;
}

// _get_frameid_bbox_adjust_last: a 9-frame 16 fps video at a 2-latent-frame budget keeps 5 frames
// spread over its duration (times linspace(0, 8.5 / 16, 5) -> frames 0, 2, 4, 6, 8); a 5-frame one
// keeps all; its size follows its aspect ratio inside the area.
TEST(VaceSource, SamplesFramesAndSizesAsTheReference) {
  const int64_t seq5 = 2 * 6;  // (32 * 48 / 256) tokens x 2 latent frames
  auto p = wan::vace_source_plan(9, 16.0, 32, 48, 32 * 48, seq5);
  EXPECT_EQ(p.frame_ids, (std::vector<int64_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(p.height, 32);
  EXPECT_EQ(p.width, 48);
  p = wan::vace_source_plan(5, 16.0, 32, 48, 32 * 48, seq5);
  EXPECT_EQ(p.frame_ids, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  p = wan::vace_source_plan(3, 16.0, 32, 48, 32 * 48, seq5);  // shorter than 4k+1: 1 frame
  EXPECT_EQ(p.frame_ids, (std::vector<int64_t>{0}));
  p = wan::vace_source_plan(5, 16.0, 40, 48, 32 * 48, seq5);  // round(sqrt(6 * 40 / 48)) = 2 rows of tokens
  EXPECT_EQ(p.height, 32);
  EXPECT_EQ(p.width, 48);
  // 480x832 at the reference's seq_len 32760 (81 frames): its own size, 81 frames of 81.
  p = wan::vace_source_plan(81, 16.0, 480, 832, 480 * 832, 32760);
  EXPECT_EQ(p.height, 480);
  EXPECT_EQ(p.width, 832);
  EXPECT_EQ(p.frame_ids.size(), 81u);
  EXPECT_EQ(p.frame_ids.back(), 80);
}

// prepare_source: no control video = zeros with an all-ones mask at the request's size; the mask
// video's first channel mapped to [0, 1]; a video of another size resized to the plan's.
TEST(VaceSource, PreparesTheSourceOrSaysWhatToGive) {
  pipeline::Geometry g;
  pipeline::ControlInputs in;
  in.frames = 5;
  in.height = 32;
  in.width = 48;
  wan::VaceSource s = wan::vace_prepare_source(in, g);
  EXPECT_EQ(s.frames.shape(), (Shape{3, 5, 32, 48}));
  EXPECT_EQ(s.mask.shape(), (Shape{1, 5, 32, 48}));
  for (float v : s.frames.to_f32_vector()) ASSERT_EQ(v, 0.0f);
  for (float v : s.mask.to_f32_vector()) ASSERT_EQ(v, 1.0f);
  // A mask of levels 0, 64, 255 on channel 0 (other channels differ: only the first counts).
  std::vector<float> mv(static_cast<size_t>(3 * 5 * 32 * 48));
  for (size_t i = 0; i < mv.size(); ++i) {
    const bool first = i < mv.size() / 3;
    const int level = first ? static_cast<int>(i % 3 == 0 ? 0 : i % 3 == 1 ? 64 : 255) : 200;
    mv[i] = static_cast<float>(level) / 127.5f - 1.0f;
  }
  in.video = Tensor::zeros({3, 5, 32, 48}, DType::F32);
  in.fps = 16;
  in.mask = Tensor::from_f32(mv, {3, 5, 32, 48});
  s = wan::vace_prepare_source(in, g);
  const auto m = s.mask.to_f32_vector();
  ASSERT_EQ(m.size(), mv.size() / 3);
  for (size_t i = 0; i < m.size(); ++i) ASSERT_EQ(m[i], std::clamp((mv[i] + 1.0f) / 2.0f, 0.0f, 1.0f)) << i;
  // A 48x40 video at the 48x32 area: resized and cropped to the plan's 48x32, and said so.
  in.mask = Tensor();
  in.video = Tensor::full({3, 5, 40, 48}, -1.0, DType::F32);  // level 0 (0.0 is no 8-bit level)
  s = wan::vace_prepare_source(in, g);
  EXPECT_EQ(s.frames.shape(), (Shape{3, 5, 32, 48}));
  EXPECT_EQ(s.mask.shape(), (Shape{1, 5, 32, 48}));
  bool said = false;
  for (const std::string& n : s.notes) said = said || n.find("centre-cropped from 48x40 to 48x32") != std::string::npos;
  EXPECT_TRUE(said);
  // Values that are not decoded 8-bit levels cannot be resized as the reference resizes bytes.
  in.video = Tensor::full({3, 5, 40, 48}, 0.001, DType::F32);
  const std::string e = error_of([&] { (void)wan::vace_prepare_source(in, g); });
  EXPECT_NE(e.find("--control-video: value"), std::string::npos) << e;
}

// VaceVideoProcessor.resize_crop of the official code on 8-bit frames (tools/golden/wan_vace_resize.py:
// up, down, aspect changes needing a crop on either axis), equal to its fp32 result exactly.
TEST(VaceSource, ResizeCropEqualsTheOfficialOnBytes) {
  const io::Checkpoint g = io::Checkpoint::open(std::string(VIDAX_TEST_DATA_DIR) + "/golden/wan/vace_resize.safetensors");
  int cases = 0;
  for (int i = 0; g.contains("case." + std::to_string(i) + ".input"); ++i, ++cases) {
    const std::string c = "case." + std::to_string(i);
    const Tensor thwc = g.get(c + ".input");  // [T, H, W, 3] U8, as decord gives frames
    const int64_t T = thwc.size(0), H = thwc.size(1), W = thwc.size(2);
    std::vector<float> v(static_cast<size_t>(3 * T * H * W));
    const uint8_t* b = thwc.data<uint8_t>();
    for (int64_t t = 0; t < T; ++t)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x)
          for (int64_t ch = 0; ch < 3; ++ch)
            v[static_cast<size_t>(((ch * T + t) * H + y) * W + x)] =
                static_cast<float>(b[((t * H + y) * W + x) * 3 + ch]) / 127.5f - 1.0f;
    const std::vector<float> size = g.get(c + ".size").to(DType::F32).to_f32_vector();
    const Tensor got = wan::vace_resize_crop(Tensor::from_f32(v, {3, T, H, W}), static_cast<int64_t>(size[0]),
                                             static_cast<int64_t>(size[1]), "--control-video");
    const Tensor want = g.get(c + ".output");
    ASSERT_EQ(got.shape(), want.shape()) << c;
    const std::vector<float> a = got.to_f32_vector(), w = want.to_f32_vector();
    int64_t differ = 0;
    for (size_t k = 0; k < a.size(); ++k) differ += a[k] != w[k];
    EXPECT_EQ(differ, 0) << c << ": " << H << "x" << W << " -> " << size[0] << "x" << size[1];
  }
  EXPECT_EQ(cases, 5);
}

// `vidax generate` on the tiny VACE demo: a control video, its mask and a reference image of
// another size; the output has the control video's frames (the reference's latent frame is not
// decoded); a control video of another size is resized as the reference does. Bad inputs are
// refused with the option named.
TEST(VaceCli, GeneratesOnTheTinyDemoAndRefusesBadInputs) {
  namespace cli = vidax::test::cli;
  const fs::path d = vidax::test::scratch_dir("vace_cli");
  const std::string vace = (d / "vace").string(), t2v = (d / "t2v").string();
  for (const auto& [dir, model] : std::vector<std::pair<std::string, std::string>>{
           {vace, "wan2.1-vace-tiny-demo"}, {t2v, "wan2.1-tiny-demo"}}) {
    const auto r = cli::run({"make-demo", dir, "--model", model, "--tokenizer", cli::tiny_spiece()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::string control = write_y4m(d, "control.y4m", rgb_video(5, 32, 48));
  const std::string mask = write_y4m(d, "mask.y4m", rgb_video(5, 32, 48, /*white=*/true));
  const std::string long_control = write_y4m(d, "long.y4m", rgb_video(9, 32, 48));
  const std::string short_mask = write_y4m(d, "short_mask.y4m", rgb_video(3, 32, 48, true));
  const std::string wide = write_y4m(d, "wide.y4m", rgb_video(5, 32, 64));
  io::RgbVideo pic = rgb_video(1, 20, 30);
  io::write_png_frames((d / "ref").string(), pic, {});
  const std::string ref = (d / "ref" / "frame_00000.png").string();
  const std::vector<std::string> base{"generate", "--prompt", "a cat", "--seed", "3", "--steps", "2"};
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.timeout_s = 300});
  };
  {
    const std::string out = (d / "vace.y4m").string();
    const auto r = gen({"--weights", vace, "--control-video", control, "--mask-video", mask, "--reference-image", ref,
                        "--control-scale", "0.8", "-o", out});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("a reference image of 30x20 is scaled (bilinear) onto a white 48x32 canvas"),
              std::string::npos) << r.err;
    const io::VideoFileInfo info = io::read_video(out);
    EXPECT_EQ(info.frames, 5);
    EXPECT_EQ(info.width, 48);
    EXPECT_EQ(info.height, 32);
  }
  {  // a longer control video is sampled over its duration to the requested length
    const auto r = gen({"--weights", vace, "--control-video", long_control, "-o", (d / "long_out.y4m").string()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("the control video's 9 frames were sampled to 5"), std::string::npos) << r.err;
    EXPECT_EQ(io::read_video((d / "long_out.y4m").string()).frames, 5);
  }
  {  // a 64x32 control video at the 48x32 area: resized (antialiased bicubic) and centre-cropped, and said so
    const auto r = gen({"--weights", vace, "--control-video", wide, "-o", (d / "wide_out.y4m").string()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("resized (antialiased bicubic) and centre-cropped from 64x32 to 48x32"), std::string::npos)
        << r.err;
    const io::VideoFileInfo info = io::read_video((d / "wide_out.y4m").string());
    EXPECT_EQ(info.width, 48);
    EXPECT_EQ(info.height, 32);
  }
  struct Bad {
    std::vector<std::string> args;
    std::string says;
    bool before_loading = true;
  };
  const std::string junk = (d / "junk.mp4").string();
  { std::ofstream(junk) << "not a video"; }
  for (const Bad& b : std::vector<Bad>{
           {{"--weights", vace, "--control-video", control, "--mask-video", short_mask},
            "--mask-video has 3 frames but --control-video has 5"},
           {{"--weights", t2v, "--control-video", control}, "wan2.1-tiny-demo takes no control video"},
           {{"--weights", t2v, "--reference-image", ref}, "wan2.1-tiny-demo takes no control video"},
           {{"--weights", vace, "--mask-video", mask}, "--mask-video needs --control-video"},
           {{"--weights", vace, "--control-video", junk}, "cannot read the --control-video " + junk},
           {{"--weights", vace, "--control-video", control, "--mask-video", junk}, "cannot read the --mask-video"},
           {{"--weights", vace, "--reference-image", junk}, "cannot read the --reference-image"},
           {{"--weights", vace, "--image", ref}, "takes no image"},
       }) {
    std::vector<std::string> a = b.args;
    a.insert(a.end(), {"-o", (d / "bad.y4m").string()});
    const auto r = gen(a);
    EXPECT_NE(r.code, 0) << b.says;
    EXPECT_NE(r.err.find(b.says), std::string::npos) << "expected '" << b.says << "' in: " << r.err;
    if (b.before_loading)
      EXPECT_EQ(r.err.find("loading the DiT"), std::string::npos) << "refused only after loading: " << r.err;
    EXPECT_FALSE(fs::exists(d / "bad.y4m"));
  }
}

// --offload streams the vace blocks with the main ones (groups vace_blocks.0.. first, then
// blocks.0..; models/wan/dit.h StreamedBlocks): the latents equal the resident run's bit for bit.
// The strict load (every tensor of the file taken once) would fail if a vace block were both
// resident and streamed, or neither. The control: another control scale moves the latents.
TEST(VaceCli, OffloadStreamsTheVaceBlocksAndGivesTheResidentLatents) {
  namespace cli = vidax::test::cli;
  const fs::path d = vidax::test::scratch_dir("vace_offload");
  const std::string vace = (d / "vace").string();
  {
    const auto r = cli::run({"make-demo", vace, "--model", "wan2.1-vace-tiny-demo", "--tokenizer", cli::tiny_spiece()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::string control = write_y4m(d, "control.y4m", rgb_video(5, 32, 48));
  auto latents = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> a{"generate", "--weights", vace, "--prompt", "a cat", "--seed", "3", "--steps", "2",
                               "--control-video", control, "-o", (d / (name + ".safetensors")).string()};
    a.insert(a.end(), extra.begin(), extra.end());
    const auto r = cli::run(a, {.timeout_s = 300});
    EXPECT_EQ(r.code, 0) << r.err;
    return io::Checkpoint::open((d / (name + ".safetensors")).string()).get("latents").to_f32_vector();
  };
  const std::vector<float> resident = latents("resident", {});
  const std::vector<float> streamed = latents("streamed", {"--offload"});
  ASSERT_FALSE(resident.empty());
  EXPECT_EQ(streamed, resident);
  EXPECT_NE(latents("scaled", {"--offload", "--control-scale", "0.5"}), resident);
}
