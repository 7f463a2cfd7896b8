// The page at `/` in a real browser: headless Chromium (over the DevTools protocol on a pipe,
// headless_chromium.h) against an in-process server on loopback. It types a prompt, submits the
// form, and waits for the page to show the finished job with its video loaded; a second test
// uploads a first frame (I2V demo), then a first and a last frame (FLF2V demo), through the
// form's file inputs. Screenshots go to build/test-artefacts/. Without chromium (scripts/install-deps.sh installs it) the tests skip.
#include <csignal>
#include <fstream>

#include "headless_chromium.h"
#include "io/video.h"
#include "serve_fixture.h"

using namespace vidax;
using namespace vidax::test;

namespace {

std::string chromium_or_empty() {
  std::signal(SIGPIPE, SIG_IGN);  // a browser that died: the write fails and the test says so
  return HeadlessChromium::find();
}

// The page loaded, the model list filled in.
std::string open_served_page(HeadlessChromium& b, int port) {
  const std::string page = b.open_page();
  b.call("Page.enable", nlohmann::json::object(), page);
  b.call("Page.navigate", {{"url", "http://127.0.0.1:" + std::to_string(port) + "/"}}, page);
  EXPECT_TRUE(b.wait_until(page, "document.readyState === 'complete' && document.getElementById('model').options.length > 0",
                           60))
      << "the page did not load its models (" << b.log_path() << ")";
  return page;
}

// Types the prompt (focused, then inserted as keyboard text) and fills the small-job fields.
void fill_form(HeadlessChromium& b, const std::string& page, const std::string& prompt, const std::string& size) {
  b.eval(page, "document.getElementById('prompt').focus()");
  b.call("Input.insertText", {{"text", prompt}}, page);
  b.eval(page, "(() => { const set = (id, v) => { document.getElementById(id).value = v; };"
               " set('size', '" + size + "'); set('frames', '5'); set('steps', '2'); set('seed', '11'); })()");
}

// The one job the server has, once the page's submit made it.
std::string only_job(TestServer& s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = s.get("/v1/videos");
    if (r && r->status == 200) {
      const json l = json::parse(r->body);
      if (!l["data"].empty()) {
        EXPECT_EQ(l["data"].size(), 1u) << r->body;
        return l["data"][0]["id"];
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "the page's submit made no job";
  return "";
}

// The finished entry of job `id` in the page: completed, its <video> holding the downloaded MP4
// with its metadata decoded. Returns what the page shows of it.
json finished_entry(HeadlessChromium& b, const std::string& page, const std::string& id) {
  const std::string entry = "document.getElementById('job-" + id + "')";
  const bool shown = b.wait_until(page,
                                  entry + " && " + entry + ".querySelector('.status').textContent === 'completed' && " +
                                      entry + ".querySelector('video') && " + entry + ".querySelector('video').readyState >= 1",
                                  120);
  EXPECT_TRUE(shown) << "the page shows no loaded video for " << id << ": "
                     << b.eval(page, "document.getElementById('jobs').innerHTML").dump().substr(0, 600);
  if (!shown) return json::object();
  return b.eval(page, "(() => { const e = " + entry + ", v = e.querySelector('video');"
                      " return {text: e.textContent, size: e.querySelector('.size').textContent,"
                      " src: v.getAttribute('src') || '', width: v.videoWidth, height: v.videoHeight,"
                      " error: v.error ? v.error.code : null}; })()");
}

void save_screenshot(HeadlessChromium& b, const std::string& page, const std::string& name) {
  const json shot = b.call("Page.captureScreenshot", {{"format", "png"}}, page);
  const std::string png = base64_decode(shot.at("data"));
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  const fs::path dir = fs::path(VIDAX_BINARY_DIR) / "test-artefacts";
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << png;
  EXPECT_EQ(fs::file_size(dir / name), png.size());
}

}  // namespace

TEST(ServeWebPage, ChromiumSubmitsThePromptAndShowsTheFinishedVideo) {
  const std::string exe = chromium_or_empty();
  if (exe.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it): no browser to test the page in";
  TestServer s(fresh_dir("web_page"));
  HeadlessChromium b(exe, serve_scratch() / "chromium-t2v");
  const std::string page = open_served_page(b, s.port);
  EXPECT_EQ(b.eval(page, "document.getElementById('model').value"), "wan2.1-tiny-demo");
  EXPECT_EQ(b.eval(page, "document.getElementById('images').hidden"), true) << "a text-to-video model takes no image";

  fill_form(b, page, "a red panda in a browser", "48x32");
  b.eval(page, "document.querySelector('#f button[type=submit]').click()");
  const std::string id = only_job(s);
  ASSERT_FALSE(id.empty());
  const json v = s.wait_for(id, "completed", 120);
  ASSERT_EQ(v["status"], "completed") << v.dump();
  EXPECT_EQ(v["prompt"], "a red panda in a browser");  // what was typed
  EXPECT_EQ(v["seed"], 11);
  EXPECT_EQ(v["steps"], 2);

  const json e = finished_entry(b, page, id);
  EXPECT_NE(e.value("text", "").find("a red panda in a browser"), std::string::npos) << e.dump();
  EXPECT_EQ(e.value("size", ""), "48x32") << e.dump();
  EXPECT_EQ(e.value("src", "").rfind("blob:", 0), 0u) << "the video is fetched as a blob: " << e.dump();
  EXPECT_EQ(e.value("width", 0), 48) << e.dump();  // Chromium decoded the MP4's metadata
  EXPECT_EQ(e.value("height", 0), 32) << e.dump();
  EXPECT_TRUE(e.value("error", json(0)).is_null()) << e.dump();
  save_screenshot(b, page, "serve_web_page.png");
}

namespace {

// A picture of h x w as a PNG file; returns its absolute path.
fs::path write_picture(const fs::path& dir, int64_t h, int64_t w, int salt) {
  io::RgbVideo pic;
  pic.frames = 1;
  pic.height = h;
  pic.width = w;
  pic.rgb.resize(pic.frame_bytes());
  for (size_t i = 0; i < pic.rgb.size(); ++i) pic.rgb[i] = static_cast<uint8_t>((i * 7 + salt) % 256);
  io::write_png_frames(dir.string(), pic, {});
  return fs::absolute(dir / "frame_00000.png");
}

// The file chooser, as a user's pick: DOM.setFileInputFiles on the input element `input_id`.
void choose_file(HeadlessChromium& b, const std::string& page, const std::string& input_id, const fs::path& file) {
  const json input =
      b.call("Runtime.evaluate", {{"expression", "document.getElementById('" + input_id + "')"}}, page);
  b.call("DOM.setFileInputFiles", {{"files", {file.string()}}, {"objectId", input["result"]["objectId"]}}, page);
  EXPECT_EQ(b.eval(page, "document.getElementById('" + input_id + "').files[0].name"), file.filename().string());
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const serve::ServedModel& flf2v_demo_model() {
  static const serve::ServedModel m = [] {
    const fs::path d = serve_scratch() / "flf2v-demo";
    pipeline::DemoOptions o;
    o.out_dir = d.string();
    o.spiece_model = std::string(VIDAX_TEST_DATA_DIR) + "/text/data/tiny_spiece.model";
    engine::family_of_model("wan2.1-flf2v-tiny-demo").make_demo("wan2.1-flf2v-tiny-demo", o);
    return serve::load_served_model(d.string(), "", nullptr);
  }();
  return m;
}

}  // namespace

// The I2V demo takes a first frame; the FLF2V demo a first and a last one. Both go up through the
// form's file inputs, as a multipart form.
TEST(ServeWebPage, ChromiumUploadsTheFirstAndLastFramesForImageToVideo) {
  const std::string exe = chromium_or_empty();
  if (exe.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it): no browser to test the page in";
  const fs::path data = fresh_dir("web_page_i2v");
  // 56x40 at the area of 48x32 makes a 32x32 video (the size comes from the image).
  const fs::path first = write_picture(data / "first", 40, 56, 0), last = write_picture(data / "last", 40, 56, 99);

  TestServer s(data, {}, {i2v_demo_model(), flf2v_demo_model()});
  HeadlessChromium b(exe, serve_scratch() / "chromium-i2v");
  const std::string page = open_served_page(b, s.port);
  const std::string i2v = i2v_demo_model().name, flf2v = flf2v_demo_model().name;
  ASSERT_EQ(b.eval(page, "document.getElementById('model').value"), i2v);
  EXPECT_EQ(b.eval(page, "document.getElementById('images').hidden"), false) << "an I2V model takes an image";
  EXPECT_EQ(b.eval(page, "document.getElementById('last_frame_row').hidden"), true) << "plain I2V takes no last frame";
  EXPECT_EQ(b.eval(page, "document.getElementById('input_reference').required"), true)
      << "an I2V-only model needs the image";

  fill_form(b, page, "a red panda from a picture", "48x32");
  choose_file(b, page, "input_reference", first);
  b.eval(page, "document.querySelector('#f button[type=submit]').click()");
  const std::string id = only_job(s);
  ASSERT_FALSE(id.empty());
  json v = s.wait_for(id, "completed", 120);
  ASSERT_EQ(v["status"], "completed") << v.dump();
  EXPECT_EQ(v["model"], i2v);
  EXPECT_EQ(v["size"], "48x32");
  EXPECT_EQ(v["result"]["size"], "32x32") << v.dump();
  EXPECT_EQ(v["result"]["size_from"], "input_reference") << v.dump();
  // The server kept the uploaded bytes: the file the browser read.
  EXPECT_EQ(file_bytes(first), file_bytes(data / "videos" / (id + ".input_reference")));
  json e = finished_entry(b, page, id);
  EXPECT_EQ(e.value("size", ""), "32x32 (from the image)") << e.dump();
  EXPECT_EQ(e.value("width", 0), 32) << e.dump();
  EXPECT_EQ(e.value("height", 0), 32) << e.dump();
  save_screenshot(b, page, "serve_web_page_i2v.png");

  // The first-last-frame model: its last frame shows, required.
  b.eval(page, "(() => { const m = document.getElementById('model'); m.value = '" + flf2v +
                   "'; m.dispatchEvent(new Event('change')); })()");
  EXPECT_EQ(b.eval(page, "document.getElementById('last_frame_row').hidden"), false);
  EXPECT_EQ(b.eval(page, "document.getElementById('last_frame').required"), true);
  choose_file(b, page, "last_frame", last);  // the first frame is still chosen
  b.eval(page, "document.querySelector('#f button[type=submit]').click()");
  std::string id2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (id2.empty() && std::chrono::steady_clock::now() < deadline) {
    auto r = s.get("/v1/videos?order=desc&limit=1");
    if (r && r->status == 200 && json::parse(r->body)["data"][0]["id"] != id) id2 = json::parse(r->body)["data"][0]["id"];
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(id2.empty()) << "the page's second submit made no job: "
                            << b.eval(page, "document.getElementById('formerr').textContent").dump();
  v = s.wait_for(id2, "completed", 120);
  ASSERT_EQ(v["status"], "completed") << v.dump();
  EXPECT_EQ(v["model"], flf2v);
  EXPECT_EQ(v["result"]["size"], "32x32") << v.dump();
  EXPECT_EQ(file_bytes(first), file_bytes(data / "videos" / (id2 + ".input_reference")));
  EXPECT_EQ(file_bytes(last), file_bytes(data / "videos" / (id2 + ".last_frame")));
  e = finished_entry(b, page, id2);
  EXPECT_EQ(e.value("width", 0), 32) << e.dump();
  save_screenshot(b, page, "serve_web_page_flf2v.png");
}

// The LoRA picker: the folder's files as GET /v1/loras lists them; one added with its scale (and one
// added and removed again) goes up in the job's `lora`, and the finished entry says so.
TEST(ServeWebPage, ChromiumPicksALoraForTheJob) {
  const std::string exe = chromium_or_empty();
  if (exe.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it): no browser to test the page in";
  const fs::path loras = fresh_dir("web_page_loras");
  write_demo_lora(loras / "style.safetensors", 0.5f);
  write_demo_lora(loras / "sub" / "strong.safetensors", 1.0f);
  serve::ServeOptions opt;
  opt.lora_dir = loras.string();
  TestServer s(fresh_dir("web_page_lora"), opt);
  HeadlessChromium b(exe, serve_scratch() / "chromium-lora");
  const std::string page = open_served_page(b, s.port);
  ASSERT_TRUE(b.wait_until(page, "document.getElementById('lora_pick').options.length === 2", 30));
  EXPECT_EQ(b.eval(page, "document.getElementById('loras').hidden"), false) << "the demo switches LoRAs per job";
  EXPECT_EQ(b.eval(page, "[...document.getElementById('lora_pick').options].map(o => o.text).join(',')"), "style,sub/strong.safetensors");

  fill_form(b, page, "a red panda with a style", "48x32");
  b.eval(page, "(() => { const $ = id => document.getElementById(id);"
               " $('lora_pick').value = 'sub/strong.safetensors'; $('lora_add').click();"
               " $('lora_pick').value = 'style.safetensors'; $('lora_scale').value = '0.75'; $('lora_add').click();"
               " document.querySelector('[data-unlora=\"0\"]').click(); })()");
  EXPECT_EQ(b.eval(page, "document.querySelectorAll('#lora_rows .lora').length"), 1);
  b.eval(page, "document.querySelector('#f button[type=submit]').click()");
  const std::string id = only_job(s);
  ASSERT_FALSE(id.empty());
  const json v = s.wait_for(id, "completed", 120);
  ASSERT_EQ(v["status"], "completed") << v.dump();
  EXPECT_EQ(v["lora"], json::array({{{"path", "style.safetensors"}, {"scale", 0.75}}})) << v.dump();
  const json e = finished_entry(b, page, id);
  EXPECT_NE(e.value("text", "").find("LoRA style.safetensors × 0.75"), std::string::npos) << e.dump();
  save_screenshot(b, page, "serve_web_page_lora.png");
}
