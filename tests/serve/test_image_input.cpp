// Image-to-video through POST /v1/videos: OpenAI's input_reference (and our last_frame) as files
// of a multipart form, on the tiny I2V demo; the job runs as `vidax generate --image` does, and
// every misuse is a 400 naming the field.
#include <fstream>

#include "io/video.h"
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
