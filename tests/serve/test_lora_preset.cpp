// `lora` and `preset` in POST /v1/videos: LoRAs from --lora-dir merged per job on the
// resident model (the base weights restored for the next job, bit for bit), the same
// frames as a model loaded with the LoRA merged at load, every bad name, path and scale
// a 400 naming the field, and presets with the CLI's semantics (explicit fields win).
#include <fstream>

#include "io/video.h"
#include "serve/video_request.h"
#include "serve_fixture.h"

using namespace vidax;
using namespace vidax::test;

namespace {

// The decoded frames of a finished job's MP4.
std::vector<uint8_t> frames_of(TestServer& s, const std::string& id) {
  EXPECT_EQ(s.wait_for(id, "completed")["status"], "completed");
  auto c = s.get("/v1/videos/" + id + "/content");
  EXPECT_TRUE(c && c->status == 200);
  if (!c || c->status != 200) return {};
  const fs::path f = serve_scratch() / (id + ".mp4");
  std::ofstream(f, std::ios::binary) << c->body;
  io::RgbVideo rgb;
  io::read_video(f.string(), &rgb);
  return rgb.rgb;
}

fs::path lora_folder() {
  static const fs::path d = [] {
    const fs::path dir = fresh_dir("loras");
    write_demo_lora(dir / "style.safetensors", 0.5f);
    write_demo_lora(dir / "sub" / "strong.safetensors", 1.0f);
    write_demo_lora(serve_scratch() / "outside.safetensors", 0.5f);
    fs::create_symlink(serve_scratch() / "outside.safetensors", dir / "escape.safetensors");
    io::save_safetensors((dir / "bad.safetensors").string(),
                         {{"diffusion_model.blocks.0.self_attn.qx.diff_b", Tensor::from_f32({1, 2}, {2})}});
    std::ofstream(dir / "notes.txt") << "not a LoRA";
    return dir;
  }();
  return d;
}

json with_lora(json j, json lora) {
  j["lora"] = std::move(lora);
  return j;
}

}  // namespace

TEST(ServeLora, SwitchesPerJobRestoresTheBaseAndMatchesAMergeAtLoad) {
  serve::ServeOptions opt;
  opt.lora_dir = lora_folder().string();
  TestServer s(fresh_dir("lora_switch"), opt);
  const json base = small_job(2);  // the same prompt and seed throughout: the prompt cache is hit
  const json style = with_lora(base, json::array({{{"name", "style"}}}));
  const auto a = frames_of(s, s.submit(base));
  const auto b = frames_of(s, s.submit(style));
  const auto c = frames_of(s, s.submit(base));
  const auto d = frames_of(s, s.submit(style));
  const auto e = frames_of(s, s.submit(with_lora(
      base, json::array({{{"name", "style"}, {"scale", 0.5}}, {{"path", "sub/strong.safetensors"}, {"scale", -0.25}}}))));
  ASSERT_FALSE(a.empty());
  EXPECT_NE(a, b) << "the LoRA changed nothing";
  EXPECT_EQ(a, c) << "a LoRA outlived its job: the base weights were not restored";
  EXPECT_EQ(b, d);
  EXPECT_NE(b, e);

  // The switched-in LoRA gives the latents of a model loaded with it merged at load (as
  // `vidax generate --lora` loads), to the bit, also after a base run filled the prompt cache
  // (its DiT half depends on the LoRA: the switch must empty it).
  const engine::Resolved r = engine::resolve(demo_weights_dir(), "");
  pipeline::LoadOptions lo;
  lo.weights_dir = demo_weights_dir();
  lo.model = r.variant.name;
  const std::vector<translate::LoraSpec> loras = {{(lora_folder() / "style.safetensors").string(), 1.0}};
  lo.loras = loras;
  const pipeline::LoadedModel merged = r.family->load(lo);
  const pipeline::Request req =
      serve::to_pipeline_request(serve::parse_video_request(base, false, {demo_model()}), r.variant.defaults);
  const std::vector<float> want = pipeline::run_generation(merged.parts, req, {}, false).latents.to_f32_vector();
  const pipeline::Parts& parts = demo_model().loaded()->parts;
  parts.use_loras({});
  const std::vector<float> plain = pipeline::run_generation(parts, req, {}, false).latents.to_f32_vector();
  parts.use_loras(loras);
  const std::vector<float> got = pipeline::run_generation(parts, req, {}, false).latents.to_f32_vector();
  parts.use_loras({});
  EXPECT_NE(plain, want);
  EXPECT_EQ(got, want) << "a LoRA switched in differs from one merged at load";
  // A bad file leaves the base weights in use.
  EXPECT_THROW(parts.use_loras({{(lora_folder() / "bad.safetensors").string(), 1.0}}), Error);
  EXPECT_EQ(pipeline::run_generation(parts, req, {}, false).latents.to_f32_vector(), plain);
}

TEST(ServeLora, BadNamesPathsScalesAndFilesAre400sNamingTheField) {
  serve::ServeOptions opt;
  opt.lora_dir = lora_folder().string();
  opt.max_body_bytes = 64 * 1024;
  TestServer s(fresh_dir("lora_bad"), opt);
  struct Case {
    std::string what;
    json lora;
    std::string param, code, message;
  };
  const std::vector<Case> cases = {
      {"not a list", "style", "lora", "invalid_type", "lora must be a list"},
      {"an entry not an object", json::array({1}), "lora[0]", "invalid_type", "must be an object"},
      {"name and path", json::array({{{"name", "style"}, {"path", "style.safetensors"}}}), "lora[0]",
       "missing_required_parameter", "exactly one of name and path"},
      {"neither", json::array({{{"scale", 1}}}), "lora[0]", "missing_required_parameter", "exactly one of name and path"},
      {"unknown key", json::array({{{"name", "style"}, {"weight", 1}}}), "lora[0].weight", "unknown_parameter",
       "unknown field 'weight'"},
      {"name not a string", json::array({{{"name", 7}}}), "lora[0].name", "invalid_type", "must be a string"},
      {"name with a folder", json::array({{{"name", "sub/strong"}}}), "lora[0].name", "invalid_value",
       "is not a LoRA name"},
      {"name climbing out", json::array({{{"name", "../outside"}}}), "lora[0].name", "invalid_value",
       "is not a LoRA name"},
      {"unknown name", json::array({{{"name", "nope"}}}), "lora[0].name", "lora_not_found",
       "no LoRA 'nope' in the LoRA folder"},
      {"path climbing out", json::array({{{"path", "../outside.safetensors"}}}), "lora[0].path", "invalid_value",
       "must be a relative path inside the LoRA folder"},
      {"path climbing in and out", json::array({{{"path", "sub/../../outside.safetensors"}}}), "lora[0].path",
       "invalid_value", "no '..'"},
      {"absolute path", json::array({{{"path", (serve_scratch() / "outside.safetensors").string()}}}), "lora[0].path",
       "invalid_value", "no leading '/'"},
      {"a link leading out", json::array({{{"path", "escape.safetensors"}}}), "lora[0].path", "invalid_value",
       "leads out of the LoRA folder"},
      {"not a .safetensors", json::array({{{"path", "notes.txt"}}}), "lora[0].path", "invalid_value",
       "must name a .safetensors file"},
      {"second entry bad", json::array({{{"name", "style"}}, {{"name", "nope"}}}), "lora[1].name", "lora_not_found",
       "no LoRA 'nope'"},
      {"scale a string", json::array({{{"name", "style"}, {"scale", "big"}}}), "lora[0].scale", "invalid_type",
       "must be a number"},
      {"scale huge", json::array({{{"name", "style"}, {"scale", 1000}}}), "lora[0].scale", "invalid_value",
       "must be in [-100, 100]"},
      {"too many", json(std::vector<json>(9, {{"name", "style"}})), "lora", "invalid_value", "at most 8"},
      {"keys of no parameter", json::array({{{"name", "bad"}}}), "lora", "invalid_value",
       "diffusion_model.blocks.0.self_attn.qx.diff_b"},
  };
  for (const auto& c : cases) {
    auto r = s.post(with_lora(small_job(1), c.lora));
    ASSERT_TRUE(r) << c.what;
    EXPECT_EQ(r->status, 400) << c.what << ": " << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["param"], c.param) << c.what << ": " << e.dump();
    EXPECT_EQ(e["code"], c.code) << c.what << ": " << e.dump();
    EXPECT_NE(e["message"].get<std::string>().find(c.message), std::string::npos) << c.what << ": " << e.dump();
  }
  // Presets: an unknown one lists the family's; a wrong type is named.
  json p = small_job(1);
  p["preset"] = "turbo";
  auto r = s.post(p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "preset");
  EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find(
                "preset turbo: unknown for the wan family; choose one of lightx2v-4step"),
            std::string::npos)
      << r->body;
  p["preset"] = 4;
  r = s.post(p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["message"], "preset must be a string, got a number");
  // An oversize multipart upload (an image field, say) is a 413 like an oversize JSON body.
  httplib::MultipartFormDataItems big = {{"prompt", "a red panda", "", ""},
                                         {"input_reference", std::string(100000, 'x'), "cat.png", "image/png"}};
  r = s.client->Post("/v1/videos", big);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "request_too_large");
  // Nothing was queued; the server still serves, and a form's lora (its JSON text) is taken.
  auto list = s.get("/v1/videos");
  ASSERT_TRUE(list);
  EXPECT_TRUE(json::parse(list->body)["data"].empty()) << list->body;
  httplib::MultipartFormDataItems form = {{"prompt", "a red panda", "", ""}, {"size", "48x32", "", ""},
                                          {"frames", "5", "", ""}, {"steps", "1", "", ""},
                                          {"lora", R"([{"name": "style", "scale": 0.75}])", "", ""}};
  r = s.client->Post("/v1/videos", form);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json v = json::parse(r->body);
  EXPECT_EQ(v["lora"], json::array({{{"path", "style.safetensors"}, {"scale", 0.75}}}));
  EXPECT_EQ(s.wait_for(v["id"], "completed")["status"], "completed");
}

TEST(ServePreset, ReplacesTheDefaultsAndExplicitFieldsWin) {
  TestServer s(fresh_dir("preset"));
  json j = small_job();
  j.erase("steps");
  j["preset"] = "lightx2v-4step";
  const json v = json::parse(s.post(j)->body);
  EXPECT_EQ(v["preset"], "lightx2v-4step");
  EXPECT_EQ(v["steps"], 4);
  EXPECT_EQ(v["sampler"], "lightx2v");
  EXPECT_EQ(v["guidance"], 1.0);
  EXPECT_EQ(v["shift"], 5.0);
  j["steps"] = 2;
  j["guidance"] = 3.0;
  const json w = json::parse(s.post(j)->body);
  EXPECT_EQ(w["steps"], 2);
  EXPECT_EQ(w["guidance"], 3.0);
  EXPECT_EQ(w["sampler"], "lightx2v");
  EXPECT_EQ(s.wait_for(v["id"], "completed")["status"], "completed");
  EXPECT_EQ(s.wait_for(w["id"], "completed")["status"], "completed");
  // The MP4's parameters record the preset.
  auto c = s.get("/v1/videos/" + v["id"].get<std::string>() + "/content");
  ASSERT_TRUE(c);
  const fs::path f = serve_scratch() / "preset.mp4";
  std::ofstream(f, std::ios::binary) << c->body;
  const json params = json::parse(io::read_video(f.string()).metadata["comment"]);
  EXPECT_EQ(params["preset"], "lightx2v-4step");
  EXPECT_EQ(params["steps"], 4);
  // Without a LoRA folder, lora is refused by name.
  auto r = s.post(with_lora(small_job(1), json::array({{{"name", "style"}}})));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "lora");
}

// GET /v1/loras (the page's picker): the folder's LoRA files as a request names them; the link
// leading out, the text file and hidden entries are not listed; every listed one is accepted.
TEST(ServeLora, ListsTheFolderAsRequestsNameIt) {
  fs::create_directories(lora_folder() / ".cache");
  write_demo_lora(lora_folder() / ".cache" / "hidden.safetensors", 0.5f);
  serve::ServeOptions opt;
  opt.lora_dir = lora_folder().string();
  TestServer s(fresh_dir("lora_list"), opt);
  auto r = s.get("/v1/loras");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json l = json::parse(r->body);
  EXPECT_EQ(l["configured"], true);
  std::vector<std::string> paths;
  for (const auto& e : l["data"]) paths.push_back(e["path"]);
  EXPECT_EQ(paths, (std::vector<std::string>{"bad.safetensors", "style.safetensors", "sub/strong.safetensors"})) << r->body;
  EXPECT_EQ(l["data"][1]["name"], "style");
  EXPECT_FALSE(l["data"][2].contains("name"));  // in a subfolder: only `path` reaches it
  EXPECT_EQ(l["data"][1]["bytes"].get<int64_t>(), static_cast<int64_t>(fs::file_size(lora_folder() / "style.safetensors")));
  for (const auto& e : l["data"])
    EXPECT_EQ(serve::resolve_lora_file(opt.lora_dir, {{"path", e["path"]}}, "lora"), e["path"].get<std::string>());

  // Without a folder: an empty list that says so.
  TestServer none(fresh_dir("lora_list_none"));
  r = none.get("/v1/loras");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(json::parse(r->body), (json{{"object", "list"}, {"configured", false}, {"data", json::array()}}));
}
