// The server against its OpenAPI document (docs/openapi.json): every route the server
// registers is in the document and every documented route is served; every documented
// status of every route is produced here and answers with the documented content type and
// shape (required fields, types, enums, no undocumented field); the events stream's data
// are Video objects; GET /openapi.json serves the document itself.
#include <fstream>
#include <map>
#include <set>

#include "openapi_check.h"
#include "serve/video_request.h"
#include "serve_fixture.h"

using namespace vidax;
using namespace vidax::test;

namespace {

const OpenApi& api() {
  static const OpenApi a = [] {
    std::ifstream in(std::string(VIDAX_TEST_DATA_DIR) + "/../docs/openapi.json");
    return OpenApi(json::parse(in));
  }();
  return a;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The answers seen, by (method, documented path, status).
struct Seen {
  std::set<std::tuple<std::string, std::string, std::string>> triples;

  // Checks one answer against the document and records it.
  void answer(const std::string& method, const std::string& path, const httplib::Result& r, int want) {
    ASSERT_TRUE(r) << method << " " << path << ": no answer";
    ASSERT_EQ(r->status, want) << method << " " << path << ": " << r->body.substr(0, 400);
    const std::string status = std::to_string(r->status);
    const json& op = api().doc().at("paths").at(path).at(lower(method));
    ASSERT_TRUE(op.at("responses").contains(status)) << method << " " << path << " answered " << status
                                                     << ", which the document does not list";
    std::string type = r->get_header_value("Content-Type");
    type = type.substr(0, type.find(';'));
    const json& resp = op["responses"][status];
    ASSERT_TRUE(resp.contains("content") && resp["content"].contains(type))
        << method << " " << path << " " << status << ": Content-Type " << type << " is not documented";
    if (type == "application/json") {
      const auto problems = api().check(resp["content"][type]["schema"], json::parse(r->body));
      for (const auto& p : problems) ADD_FAILURE() << method << " " << path << " " << status << ": " << p;
    }
    if (resp.contains("headers"))
      for (auto it = resp["headers"].begin(); it != resp["headers"].end(); ++it)
        EXPECT_TRUE(r->has_header(it.key())) << method << " " << path << " " << status << ": no " << it.key() << " header";
    triples.insert({lower(method), path, status});
  }
};

// Reads an event stream to its end; returns (event, data) pairs.
httplib::Result read_events(httplib::Client& c, const std::string& url, const httplib::Headers& h,
                            std::vector<std::pair<std::string, json>>& out) {
  std::string stream;
  httplib::Result result = c.Get(url.c_str(), h, [&](const char* d, size_t n) {
    stream.append(d, n);
    return true;
  });
  size_t at = 0;
  while ((at = stream.find("event: ", at)) != std::string::npos) {
    const size_t nl = stream.find('\n', at);
    const std::string name = stream.substr(at + 7, nl - at - 7);
    const size_t d = stream.find("data: ", nl);
    const size_t end = stream.find('\n', d);
    out.emplace_back(name, json::parse(stream.substr(d + 6, end - d - 6)));
    at = end;
  }
  return result;
}

}  // namespace

TEST(OpenApi, DocumentAndServerHaveTheSameRoutesAndRequestFields) {
  TestServer s(fresh_dir("openapi_routes"));
  std::set<std::pair<std::string, std::string>> served, documented;
  for (const auto& [m, p] : s.server->routes()) served.insert({lower(m), p});
  for (auto p = api().doc()["paths"].begin(); p != api().doc()["paths"].end(); ++p)
    for (auto m = p.value().begin(); m != p.value().end(); ++m)
      if (m.key() != "parameters") documented.insert({m.key(), p.key()});
  for (const auto& r : served) EXPECT_TRUE(documented.count(r)) << r.first << " " << r.second << " is served, not documented";
  for (const auto& r : documented) EXPECT_TRUE(served.count(r)) << r.first << " " << r.second << " is documented, not served";
  EXPECT_GE(served.size(), 11u);

  std::set<std::string> fields, doc_fields;
  for (const auto& f : serve::video_request_fields()) fields.insert(f);
  const json& req = api().resolve("#/components/schemas/VideoCreateRequest");
  for (auto it = req["properties"].begin(); it != req["properties"].end(); ++it) doc_fields.insert(it.key());
  EXPECT_EQ(fields, doc_fields);

  // The served document is the file.
  auto r = s.client->Get("/openapi.json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body), api().doc());
}

TEST(OpenApi, EveryDocumentedStatusAnswersWithItsShape) {
  const fs::path loras = fresh_dir("openapi_loras");
  write_demo_lora(loras / "style.safetensors");
  serve::ServeOptions opt;
  opt.api_key = "k3y";
  opt.max_queued = 1;
  opt.max_body_bytes = 64 * 1024;
  opt.lora_dir = loras.string();
  TestServer s(fresh_dir("openapi"), opt);
  Seen seen;
  httplib::Client& c = *s.client;
  const std::string absent = "video_0123456789abcdef0123456789abcdef";

  // No key: 401 on every guarded route.
  const httplib::Headers none;
  seen.answer("POST", "/v1/videos", c.Post("/v1/videos", none, small_job().dump(), "application/json"), 401);
  seen.answer("GET", "/v1/videos", c.Get("/v1/videos"), 401);
  seen.answer("GET", "/v1/videos/{video_id}", c.Get(("/v1/videos/" + absent).c_str()), 401);
  seen.answer("DELETE", "/v1/videos/{video_id}", c.Delete(("/v1/videos/" + absent).c_str()), 401);
  seen.answer("GET", "/v1/videos/{video_id}/content", c.Get(("/v1/videos/" + absent + "/content").c_str()), 401);
  seen.answer("GET", "/v1/videos/{video_id}/events", c.Get(("/v1/videos/" + absent + "/events").c_str()), 401);
  seen.answer("GET", "/v1/models", c.Get("/v1/models"), 401);
  seen.answer("GET", "/v1/loras", c.Get("/v1/loras"), 401);
  seen.answer("GET", "/metrics", c.Get("/metrics"), 401);
  // Open routes.
  seen.answer("GET", "/health", c.Get("/health"), 200);
  seen.answer("GET", "/", c.Get("/"), 200);
  seen.answer("GET", "/openapi.json", c.Get("/openapi.json"), 200);
  seen.answer("GET", "/v1/models", s.get("/v1/models"), 200);
  seen.answer("GET", "/v1/loras", s.get("/v1/loras"), 200);

  // A long job with a LoRA and a preset runs; one more waits; the next is refused (max_queued 1).
  json long_job = small_job(1000);
  long_job["lora"] = json::array({{{"name", "style"}, {"scale", 0.5}}});
  long_job["preset"] = "lightx2v-4step";
  auto p = s.post(long_job);
  seen.answer("POST", "/v1/videos", p, 200);
  const std::string running = json::parse(p->body)["id"];
  ASSERT_EQ(s.wait_for(running, "in_progress")["status"], "in_progress");
  p = s.post(small_job(1));
  seen.answer("POST", "/v1/videos", p, 200);
  const std::string queued = json::parse(p->body)["id"];
  seen.answer("POST", "/v1/videos", s.post(small_job(1)), 429);
  seen.answer("POST", "/v1/videos", s.post(json{{"prompt", 5}}), 400);
  seen.answer("POST", "/v1/videos", s.post(json{{"prompt", std::string(100000, 'a')}}), 413);
  seen.answer("GET", "/v1/videos/{video_id}", s.get("/v1/videos/" + running), 200);
  seen.answer("GET", "/v1/videos/{video_id}", s.get("/v1/videos/" + absent), 404);
  seen.answer("GET", "/v1/videos", s.get("/v1/videos?limit=1&order=asc"), 200);
  seen.answer("GET", "/v1/videos", s.get("/v1/videos?limit=0"), 400);
  seen.answer("GET", "/v1/videos/{video_id}/content", s.get("/v1/videos/" + running + "/content"), 409);
  seen.answer("GET", "/v1/videos/{video_id}/content", s.get("/v1/videos/" + running + "/content?variant=gif"), 400);
  seen.answer("GET", "/v1/videos/{video_id}/content", s.get("/v1/videos/" + absent + "/content"), 404);
  seen.answer("DELETE", "/v1/videos/{video_id}", s.del("/v1/videos/" + queued), 200);     // cancelled
  seen.answer("DELETE", "/v1/videos/{video_id}", s.del("/v1/videos/" + running), 202);    // stops at a step
  seen.answer("DELETE", "/v1/videos/{video_id}", s.del("/v1/videos/" + absent), 404);
  ASSERT_EQ(s.wait_for(running, "cancelled", 30)["status"], "cancelled");

  // A job to the end, watched on its events stream: every event's data is a Video.
  p = s.post(small_job(3));
  seen.answer("POST", "/v1/videos", p, 200);
  const std::string done = json::parse(p->body)["id"];
  std::vector<std::pair<std::string, json>> events;
  httplib::Result er = read_events(c, "/v1/videos/" + done + "/events", s.auth, events);
  seen.answer("GET", "/v1/videos/{video_id}/events", er, 200);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().first, "completed");
  const json& data_schemas =
      api().doc()["paths"]["/v1/videos/{video_id}/events"]["get"]["responses"]["200"]["content"]["text/event-stream"]
                 ["x-vidax-event-data"];
  bool saw_step = false;
  for (const auto& [name, data] : events) {
    ASSERT_TRUE(data_schemas.contains(name)) << "event " << name << " is not documented";
    for (const auto& problem : api().check(data_schemas[name], data)) ADD_FAILURE() << "event " << name << ": " << problem;
    saw_step = saw_step || data.contains("step");
  }
  EXPECT_TRUE(saw_step) << "no progress event carried the step";
  seen.answer("GET", "/v1/videos/{video_id}/events", s.get("/v1/videos/" + absent + "/events"), 404);
  seen.answer("GET", "/v1/videos/{video_id}/content", s.get("/v1/videos/" + done + "/content"), 200);
  seen.answer("GET", "/v1/videos/{video_id}/content", s.get("/v1/videos/" + done + "/content?variant=thumbnail"), 200);
  httplib::Headers range = s.auth;
  range.insert({"Range", "bytes=0-99"});
  seen.answer("GET", "/v1/videos/{video_id}/content", c.Get(("/v1/videos/" + done + "/content").c_str(), range), 206);
  range.erase("Range");
  range.insert({"Range", "bytes=99999999-"});
  seen.answer("GET", "/v1/videos/{video_id}/content", c.Get(("/v1/videos/" + done + "/content").c_str(), range), 416);
  seen.answer("GET", "/metrics", s.get("/metrics"), 200);
  seen.answer("DELETE", "/v1/videos/{video_id}", s.del("/v1/videos/" + done), 200);  // deleted
  // The cancelled job's record: its LoRA and preset as the job ran them.
  const json v = s.video(running);
  EXPECT_EQ(v["lora"], json::array({{{"path", "style.safetensors"}, {"scale", 0.5}}}));
  EXPECT_EQ(v["preset"], "lightx2v-4step");
  EXPECT_EQ(v["sampler"], "lightx2v");
  EXPECT_EQ(v["steps"], 1000);  // given explicitly: it wins over the preset's 4

  // Every documented status was produced (except those the document marks untestable).
  for (auto path = api().doc()["paths"].begin(); path != api().doc()["paths"].end(); ++path)
    for (auto m = path.value().begin(); m != path.value().end(); ++m) {
      if (m.key() == "parameters") continue;
      for (auto st = m.value()["responses"].begin(); st != m.value()["responses"].end(); ++st)
        if (!st.value().contains("x-vidax-untested"))
          EXPECT_TRUE(seen.triples.count({m.key(), path.key(), st.key()}))
              << m.key() << " " << path.key() << " " << st.key() << " is documented but no request here produced it";
    }
}

// The checker itself finds what the document does not allow (so the tests above can fail).
TEST(OpenApi, CheckerRefusesWhatTheDocumentDoesNot) {
  const json& video = api().resolve("#/components/schemas/Video");
  TestServer s(fresh_dir("openapi_checker"));
  const json good = json::parse(s.post(small_job(1))->body);
  EXPECT_TRUE(api().check(video, good).empty()) << api().check(video, good).front();
  json extra = good, bad_enum = good, missing = good, wrong_type = good;
  extra["colour"] = "red";
  bad_enum["status"] = "running";
  missing.erase("progress");
  wrong_type["created_at"] = "yesterday";
  for (const json& v : {extra, bad_enum, missing, wrong_type}) EXPECT_FALSE(api().check(video, v).empty()) << v.dump();
  const json& error = api().resolve("#/components/schemas/Error");
  EXPECT_FALSE(api().check(error, json{{"error", {{"message", "x"}, {"type", "oops"}, {"param", nullptr}, {"code", nullptr}}}})
                   .empty());
  EXPECT_EQ(s.wait_for(good["id"], "completed")["status"], "completed");
}
