// Image-to-video through POST /v1/videos: OpenAI's input_reference (and our last_frame) as files
// of a multipart form, on the tiny I2V demo; the job runs as `vidax generate --image` does, and
// every misuse is a 400 naming the field. LTX-2's keyframes (`images`) too, against the CLI's
// --image / --image-frame / --image-strength.
#include <cmath>
#include <fstream>

#include "io/video.h"
#include "cli_child.h"
#include "serve_fixture.h"

using namespace vidax;
using namespace vidax::test;

namespace {

// A 56x40 PNG's bytes (written through the io layer).
std::string png_bytes() {
  io::RgbVideo v;
  v.frames = 1;
  v.height = 40;
  v.width = 56;
  v.rgb.resize(v.frame_bytes());
  for (size_t i = 0; i < v.rgb.size(); ++i) v.rgb[i] = static_cast<uint8_t>((i * 13) % 256);
  const fs::path dir = serve_scratch() / "png";
  fs::remove_all(dir);
  io::write_png_frames(dir.string(), v, {});
  std::ifstream in(dir / "frame_00000.png", std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

httplib::MultipartFormDataItems form(std::vector<httplib::MultipartFormData> extra) {
  httplib::MultipartFormDataItems f = {{"prompt", "a red panda", "", ""}, {"size", "48x32", "", ""},
                                       {"frames", "5", "", ""}, {"steps", "2", "", ""}, {"seed", "3", "", ""}};
  f.insert(f.end(), extra.begin(), extra.end());
  return f;
}

json error_of(const httplib::Result& r) { return r ? json::parse(r->body).value("error", json::object()) : json(); }

}  // namespace

TEST(ServeImage, InputReferenceRunsImageToVideoAndIsKeptUntilDeleted) {
  const fs::path data = fresh_dir("image_input");
  TestServer s(data, {}, {i2v_demo_model()});
  auto r = s.client->Post("/v1/videos", form({{"input_reference", png_bytes(), "cat.png", "image/png"}}));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string id = json::parse(r->body)["id"];
  const json done = s.wait_for(id, "completed");
  EXPECT_EQ(done["status"], "completed");
  // `size` stays the request's; `result` is what the image gave, in the job, the list and the sidecar.
  EXPECT_EQ(done["size"], "48x32");
  const json want_result = {{"size", "32x32"}, {"width", 32},        {"height", 32},
                            {"frames", 5},     {"fps", done["fps"]}, {"seconds", done["seconds"]},
                            {"size_from", "input_reference"}};
  EXPECT_EQ(done["result"], want_result) << done.dump();
  auto l = s.get("/v1/videos");
  ASSERT_TRUE(l && l->status == 200);
  EXPECT_EQ(json::parse(l->body)["data"][0]["result"], want_result) << l->body;
  json sidecar;
  std::ifstream(data / "videos" / (id + ".mp4.json")) >> sidecar;
  EXPECT_EQ(sidecar["result"], want_result) << sidecar.dump();
  // The sidecar's width and height are the video's (they were the request's: docs/bugs.md row 91).
  EXPECT_EQ(sidecar["width"], 32);
  EXPECT_EQ(sidecar["height"], 32);
  EXPECT_EQ(sidecar["requested_size"], "48x32");
  auto c = s.get("/v1/videos/" + id + "/content");
  ASSERT_TRUE(c && c->status == 200);
  const fs::path mp4 = serve_scratch() / "i2v.mp4";
  std::ofstream(mp4, std::ios::binary) << c->body;
  const io::VideoFileInfo info = io::read_video(mp4.string());
  // The 56x40 image at the area of 48x32: 32x32 (image2video.py's rule), 5 frames.
  EXPECT_EQ(info.width, 32);
  EXPECT_EQ(info.height, 32);
  EXPECT_EQ(info.frames, 5);
  EXPECT_TRUE(fs::exists(data / "videos" / (id + ".input_reference")));
  auto d = s.del("/v1/videos/" + id);
  ASSERT_TRUE(d && d->status == 200);
  EXPECT_FALSE(fs::exists(data / "videos" / (id + ".input_reference")));
}

TEST(ServeImage, MisusesAre400NamingTheField) {
  TestServer s(fresh_dir("image_bad"), {}, {i2v_demo_model()});
  struct Bad {
    std::string what;
    httplib::MultipartFormDataItems items;
    std::string param, code, says;
  };
  for (const Bad& b : std::vector<Bad>{
           {"no image for an I2V model", form({}), "input_reference", "missing_required_parameter",
            "generates from an image"},
           {"the image as a text field", form({{"input_reference", "aGVsbG8=", "", ""}}), "input_reference",
            "invalid_type", "must be an image file in a multipart/form-data request"},
           {"a file that is no picture", form({{"input_reference", "not an image at all", "x.png", "image/png"}}),
            "input_reference", "invalid_image", "is not a decodable image"},
           {"a last frame for an I2V model",
            form({{"input_reference", png_bytes(), "a.png", "image/png"}, {"last_frame", png_bytes(), "b.png", "image/png"}}),
            "last_frame", "unsupported_value", "takes no last frame"},
       }) {
    auto r = s.client->Post("/v1/videos", b.items);
    ASSERT_TRUE(r) << b.what;
    EXPECT_EQ(r->status, 400) << b.what << ": " << r->body;
    const json e = error_of(r);
    EXPECT_EQ(e.value("param", ""), b.param) << b.what << ": " << r->body;
    EXPECT_EQ(e.value("code", ""), b.code) << b.what << ": " << r->body;
    EXPECT_NE(e.value("message", "").find(b.says), std::string::npos) << b.what << ": " << r->body;
  }
  auto list = s.get("/v1/videos");
  ASSERT_TRUE(list);
  EXPECT_TRUE(json::parse(list->body)["data"].empty()) << "a refused request queued a job: " << list->body;
}

// --job-timeout: a job past it fails with code job_timeout at a step boundary; the next one runs.
TEST(ServeTimeout, AJobPastTheLimitFailsAndTheNextRuns) {
  serve::ServeOptions opt;
  opt.job_timeout_seconds = 0.05;
  TestServer s(fresh_dir("timeout"), opt);
  json long_job = small_job(200);
  long_job["size"] = "96x64";
  const std::string a = s.submit(long_job);
  const json v = s.wait_for(a, "failed", 120);
  EXPECT_EQ(v["status"], "failed");
  EXPECT_EQ(v["error"]["code"], "job_timeout") << v.dump();
  EXPECT_NE(v["error"]["message"].get<std::string>().find("--job-timeout 0.05"), std::string::npos) << v.dump();
}

// timeout_seconds: a request's own limit, as --job-timeout for that job only; the server's limit
// caps it; a bad value is a 400 naming the field.
TEST(ServeTimeout, ARequestsTimeoutSecondsStopsItAndTheServersLimitCapsIt) {
  json long_job = small_job(200);
  long_job["size"] = "96x64";
  {
    TestServer s(fresh_dir("timeout_request"));
    json j = long_job;
    j["timeout_seconds"] = 0.05;
    const std::string a = s.submit(j);
    const json v = s.wait_for(a, "failed", 120);
    EXPECT_EQ(v["error"]["code"], "job_timeout") << v.dump();
    EXPECT_NE(v["error"]["message"].get<std::string>().find("the job ran past its timeout_seconds 0.05 s"),
              std::string::npos)
        << v.dump();
    // Another job, without one, is not limited by it.
    const std::string b = s.submit(small_job(2));
    EXPECT_EQ(s.wait_for(b, "completed", 120)["status"], "completed");
    for (const json& bad : {json(0), json(-1), json("soon"), json(1e9)}) {
      json k = small_job(2);
      k["timeout_seconds"] = bad;
      auto r = s.client->Post("/v1/videos", k.dump(), "application/json");
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 400) << bad.dump() << ": " << r->body;
      EXPECT_EQ(json::parse(r->body)["error"].value("param", ""), "timeout_seconds") << r->body;
    }
  }
  serve::ServeOptions opt;
  opt.job_timeout_seconds = 0.05;
  TestServer s(fresh_dir("timeout_capped"), opt);
  json j = long_job;
  j["timeout_seconds"] = 3600;  // more than the server allows: the server's limit holds
  const json v = s.wait_for(s.submit(j), "failed", 120);
  EXPECT_EQ(v["error"]["code"], "job_timeout") << v.dump();
  EXPECT_NE(v["error"]["message"].get<std::string>().find("the job ran past --job-timeout 0.05 s"), std::string::npos)
      << v.dump();
}

// LTX-2 (images at chosen frames): input_reference reaches Request::image, which the family runs as
// an image at frame 0 with strength 1 (the same run as `vidax generate --image FILE`:
// tests/ltx2/test_family_image.cpp checks Request::image against key_images {frame 0, strength 1}
// bit for bit). Here: the job completes at the request's size (LTX-2 crops the image to it) and its
// video is not the one the same request makes without the image.
TEST(ServeImage, Ltx2TakesInputReferenceAsTheFirstFrame) {
  static const serve::ServedModel ltx = [] {
    const fs::path d = serve_scratch() / "ltx2-demo";
    pipeline::DemoOptions o;
    o.out_dir = d.string();
    engine::family_of_model("ltx2.3-tiny-demo").make_demo("ltx2.3-tiny-demo", o);
    return serve::load_served_model(d.string(), "", nullptr);
  }();
  const fs::path data = fresh_dir("image_ltx2");
  TestServer s(data, {}, {ltx});
  auto frames_of = [&](const std::string& id, const std::string& name) {
    auto c = s.get("/v1/videos/" + id + "/content");
    EXPECT_TRUE(c && c->status == 200);
    const fs::path mp4 = serve_scratch() / name;
    std::ofstream(mp4, std::ios::binary) << (c ? c->body : std::string());
    io::RgbVideo v;
    const io::VideoFileInfo info = io::read_video(mp4.string(), &v);
    EXPECT_EQ(info.width, 64);
    EXPECT_EQ(info.height, 32);
    EXPECT_EQ(info.frames, 9);
    return v.rgb;
  };
  auto ltx_form = [](std::vector<httplib::MultipartFormData> extra) {
    httplib::MultipartFormDataItems f = {{"prompt", "a red panda", "", ""}, {"size", "64x32", "", ""},
                                         {"frames", "9", "", ""}, {"steps", "2", "", ""}, {"seed", "3", "", ""}};
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  };
  auto r = s.client->Post("/v1/videos", ltx_form({{"input_reference", png_bytes(), "cat.png", "image/png"}}));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string id = json::parse(r->body)["id"];
  const json done = s.wait_for(id, "completed", 120);
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["result"]["width"], 64) << done.dump();
  EXPECT_EQ(done["result"]["height"], 32) << done.dump();
  // The image is fitted to the request's size (resize and centre crop), so the size is the request's.
  EXPECT_EQ(done["result"]["size_from"], "request") << done.dump();
  auto r2 = s.client->Post("/v1/videos", ltx_form({}));
  ASSERT_TRUE(r2);
  ASSERT_EQ(r2->status, 200) << r2->body;
  const std::string id2 = json::parse(r2->body)["id"];
  ASSERT_EQ(s.wait_for(id2, "completed", 120)["status"], "completed");
  EXPECT_NE(frames_of(id, "ltx2_image.mp4"), frames_of(id2, "ltx2_plain.mp4"));
}

namespace {

// A 56x40 PNG of another pattern than png_bytes(): a keyframe.
std::string key_png_bytes(int mult, const std::string& name) {
  io::RgbVideo v;
  v.frames = 1;
  v.height = 40;
  v.width = 56;
  v.rgb.resize(v.frame_bytes());
  for (size_t i = 0; i < v.rgb.size(); ++i) v.rgb[i] = static_cast<uint8_t>((i * static_cast<size_t>(mult) + i / 7) % 256);
  const fs::path dir = serve_scratch() / name;
  fs::remove_all(dir);
  io::write_png_frames(dir.string(), v, {});
  std::ifstream in(dir / "frame_00000.png", std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string base64(const std::string& s) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    const uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8) | uint8_t(s[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += t[(v >> k) & 63];
  }
  if (i < s.size()) {
    const uint32_t v = (uint8_t(s[i]) << 16) | (i + 1 < s.size() ? uint8_t(s[i + 1]) << 8 : 0);
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += i + 1 < s.size() ? t[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

const serve::ServedModel& ltx2_demo_model() {
  static const serve::ServedModel m = [] {
    const fs::path d = serve_scratch() / "ltx2-demo-keys";
    pipeline::DemoOptions o;
    o.out_dir = d.string();
    engine::family_of_model("ltx2.3-tiny-demo").make_demo("ltx2.3-tiny-demo", o);
    return serve::load_served_model(d.string(), "", nullptr);
  }();
  return m;
}

fs::path write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

}  // namespace

// LTX-2 keyframes through `images`: input_reference at frame 0, one keyframe as a form file part
// and one as a data URL. The job's first frame (its thumbnail) equals `vidax generate --image REF
// --image A --image-frame 4 --image-strength 0.6 --image B --image-frame 8 --image-strength 0.8`
// pixel for pixel, and the video differs from the job with input_reference alone.
TEST(ServeImage, Ltx2KeyframesThroughImagesMatchTheCliRun) {
  const serve::ServedModel& ltx = ltx2_demo_model();
  const fs::path data = fresh_dir("image_ltx2_keys");
  const std::string ref = png_bytes(), a = key_png_bytes(29, "key_a"), b = key_png_bytes(71, "key_b");
  const fs::path cli_dir = fresh_dir("image_ltx2_keys_cli");
  const auto r = vidax::test::cli::run(
      {"generate", "--weights", ltx.weights, "--prompt", "a red panda", "--width", "64", "--height", "32", "--frames",
       "9", "--steps", "2", "--seed", "3", "--image", write_bytes(cli_dir / "ref.png", ref).string(), "--image",
       write_bytes(cli_dir / "a.png", a).string(), "--image-frame", "4", "--image-strength", "0.6", "--image",
       write_bytes(cli_dir / "b.png", b).string(), "--image-frame", "8", "--image-strength", "0.8", "-o",
       (cli_dir / "frames").string(), "--audio-output", (cli_dir / "audio.wav").string()});  // the server decodes audio too
  ASSERT_EQ(r.code, 0) << r.err;
  const Tensor want = io::read_image((cli_dir / "frames" / "frame_00000.png").string(), "the CLI's first frame");

  TestServer s(data, {}, {ltx});
  const json images = json::array({{{"image", "key_a"}, {"frame", 4}, {"strength", 0.6}},
                                    {{"image", "data:image/png;base64," + base64(b)}, {"frame", 8}, {"strength", 0.8}}});
  const httplib::MultipartFormDataItems f = {
      {"prompt", "a red panda", "", ""}, {"size", "64x32", "", ""},    {"frames", "9", "", ""},
      {"steps", "2", "", ""},           {"seed", "3", "", ""},        {"input_reference", ref, "ref.png", "image/png"},
      {"key_a", a, "a.png", "image/png"}, {"images", images.dump(), "", ""}};
  auto res = s.client->Post("/v1/videos", f);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::string id = json::parse(res->body)["id"];
  EXPECT_TRUE(fs::exists(data / "videos" / (id + ".image_0")));
  EXPECT_TRUE(fs::exists(data / "videos" / (id + ".image_1")));
  ASSERT_EQ(s.wait_for(id, "completed", 180)["status"], "completed");
  auto thumb = s.get("/v1/videos/" + id + "/content?variant=thumbnail");
  ASSERT_TRUE(thumb && thumb->status == 200);
  const Tensor got = io::read_image(write_bytes(serve_scratch() / "keys_thumb.png", thumb->body).string(), "thumbnail");
  ASSERT_EQ(got.shape(), want.shape());
  double d = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    d = std::max(d, static_cast<double>(std::fabs(got.data<float>()[i] - want.data<float>()[i])));
  EXPECT_EQ(d, 0.0) << "the keyframed job's first frame differs from the CLI's";

  // input_reference alone: another video (the keyframes reached the model).
  const httplib::MultipartFormDataItems plain = {
      {"prompt", "a red panda", "", ""}, {"size", "64x32", "", ""}, {"frames", "9", "", ""},
      {"steps", "2", "", ""},           {"seed", "3", "", ""},     {"input_reference", ref, "ref.png", "image/png"}};
  auto res2 = s.client->Post("/v1/videos", plain);
  ASSERT_TRUE(res2 && res2->status == 200) << (res2 ? res2->body : "");
  const std::string id2 = json::parse(res2->body)["id"];
  ASSERT_EQ(s.wait_for(id2, "completed", 180)["status"], "completed");
  auto t2 = s.get("/v1/videos/" + id2 + "/content?variant=thumbnail");
  ASSERT_TRUE(t2 && t2->status == 200);
  EXPECT_NE(t2->body, thumb->body) << "the keyframes changed nothing";
  // Deleting the job removes its keyframes.
  auto del = s.client->Delete(("/v1/videos/" + id).c_str());
  ASSERT_TRUE(del && del->status == 200);
  EXPECT_FALSE(fs::exists(data / "videos" / (id + ".image_0")));
}

// Every misuse of `images` is a 400 naming the field (the CLI's messages for frame and strength),
// and nothing is queued.
TEST(ServeImage, BadKeyframesAreRefusedNamingTheField) {
  const serve::ServedModel& ltx = ltx2_demo_model();
  const fs::path data = fresh_dir("image_ltx2_bad_keys");
  TestServer s(data, {}, {ltx, demo_model()});
  const std::string ref = png_bytes(), a = key_png_bytes(29, "key_a_bad");
  const std::string url = "data:image/png;base64," + base64(a);
  struct Case {
    std::string what;
    json images;
    bool with_reference;
    std::vector<httplib::MultipartFormData> files;
    std::string param, code, message;  // message: a part of it
    std::string model = "ltx2.3-tiny-demo";
  };
  const std::vector<Case> cases = {
      {"a frame past the video", json::array({{{"image", url}, {"frame", 9}}}), true, {}, "images[0].frame",
       "invalid_value", "--image-frame 9 (image 2): outside the video's frames [0, 9) (--frames 9)"},
      {"a negative frame", json::array({{{"image", url}, {"frame", -1}}}), false, {}, "images[0].frame",
       "invalid_value", "--image-frame -1 (image 1): outside the video's frames [0, 9)"},
      {"a strength above 1", json::array({{{"image", url}, {"frame", 4}}, {{"image", url}, {"frame", 8}, {"strength", 1.5}}}),
       true, {}, "images[1].strength", "invalid_value",
       "--image-strength 1.5 (image 3): must be in [0, 1] (1 keeps the image, 0 lets it be denoised)"},
      {"no frame after input_reference", json::array({{{"image", url}}}), true, {}, "images[0].frame",
       "missing_required_parameter", "only the first image (input_reference, else images[0]) defaults to frame 0"},
      {"no frame on the second", json::array({{{"image", url}}, {{"image", url}, {"strength", 0.5}}}), false, {},
       "images[1].frame", "missing_required_parameter", "images[1] has no frame"},
      {"a missing file part", json::array({{{"image", "nope"}, {"frame", 4}}}), true, {}, "images[0].image",
       "invalid_value", "images[0].image 'nope': no file part of that name in this form"},
      {"bad base64", json::array({{{"image", "data:image/png;base64,@@@"}, {"frame", 4}}}), true, {},
       "images[0].image", "invalid_encoding", "not a data:image/...;base64 URL with valid base64"},
      {"a data URL that is no picture", json::array({{{"image", "data:image/png;base64," + base64("not a png")}, {"frame", 4}}}),
       true, {}, "images[0].image", "invalid_image", "images[0].image is not a decodable image"},
      {"a file part no entry names", json::array({{{"image", url}, {"frame", 4}}}), true,
       {{"stray", a, "stray.png", "image/png"}}, "stray", "unknown_parameter", "unknown field 'stray'"},
      {"an unknown key", json::array({{{"image", url}, {"frame", 4}, {"weight", 1}}}), true, {}, "images[0].weight",
       "unknown_parameter", "unknown field 'weight' in images[0]"},
      {"not a list", json::object({{"image", url}}), true, {}, "images", "invalid_type", "images must be a list"},
      {"a Wan model", json::array({{{"image", url}, {"frame", 4}}}), false, {}, "images", "unsupported_value",
       "takes no images at chosen frames (its tasks: t2v); a first frame is input_reference, a last frame last_frame",
       demo_model().name},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    httplib::MultipartFormDataItems f = {{"model", c.model, "", ""}, {"prompt", "a red panda", "", ""},
                                         {"size", c.model == demo_model().name ? "48x32" : "64x32", "", ""},
                                         {"frames", c.model == demo_model().name ? "5" : "9", "", ""},
                                         {"steps", "2", "", ""}, {"images", c.images.dump(), "", ""}};
    if (c.with_reference) f.push_back({"input_reference", ref, "ref.png", "image/png"});
    f.insert(f.end(), c.files.begin(), c.files.end());
    auto r = s.client->Post("/v1/videos", f);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    const json e = error_of(r);
    EXPECT_EQ(e.value("param", ""), c.param) << r->body;
    EXPECT_EQ(e.value("code", ""), c.code) << r->body;
    EXPECT_NE(e.value("message", "").find(c.message), std::string::npos) << r->body;
  }
  // A JSON body takes data URLs only.
  const json body = {{"model", "ltx2.3-tiny-demo"}, {"prompt", "a red panda"}, {"size", "64x32"}, {"frames", 9},
                     {"images", json::array({{{"image", "a.png"}, {"frame", 4}}})}};
  auto r = s.client->Post("/v1/videos", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(error_of(r).value("param", ""), "images[0].image") << r->body;
  auto list = s.get("/v1/videos");
  ASSERT_TRUE(list && list->status == 200);
  EXPECT_TRUE(json::parse(list->body)["data"].empty()) << "a refused request was queued";
}
