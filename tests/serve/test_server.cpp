// The server end to end, in-process on a loopback ephemeral port, on the tiny
// demo model: submit, poll, download and decode, the events stream, cancel a
// queued and a running job, delete, list with pagination, auth, the queue bound,
// a catalogue of malformed requests, and a restart with jobs left in the database.
#include <fstream>

#include "io/video.h"
#include "serve/job_store.h"
#include "serve/video_request.h"
#include "serve_fixture.h"

using namespace vidax;
using namespace vidax::test;

TEST(Serve, SubmitPollDownloadDecode) {
  const fs::path data = fresh_dir("submit");
  TestServer s(data);
  auto r = s.post(small_job(3));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json q = json::parse(r->body);
  EXPECT_EQ(q["object"], "video");
  EXPECT_EQ(q["status"], "queued");
  EXPECT_EQ(q["progress"], 0);
  EXPECT_EQ(q["model"], "wan2.1-tiny-demo");
  EXPECT_EQ(q["size"], "48x32");
  EXPECT_EQ(q["seconds"], "0.312");  // 5 frames at the demo's 16 fps
  EXPECT_EQ(q["prompt"], "a red panda");
  EXPECT_GT(q["created_at"].get<int64_t>(), 1600000000);
  EXPECT_TRUE(q.contains("result") && q["result"].is_null()) << "a queued job has no result yet: " << q.dump();
  const std::string id = q["id"];
  EXPECT_TRUE(serve::is_job_id(id)) << id;

  const json done = s.wait_for(id, "completed");
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["progress"], 100);
  EXPECT_TRUE(done["completed_at"].is_number());
  EXPECT_TRUE(done["error"].is_null());
  // The result: what was written, from the decoded video (here the request's size).
  const json want_result = {{"size", "48x32"}, {"width", 48},    {"height", 32},           {"frames", 5},
                            {"fps", 16.0},     {"seconds", "0.312"}, {"size_from", "request"}};
  EXPECT_EQ(done["result"], want_result) << done.dump();

  auto c = s.get("/v1/videos/" + id + "/content");
  ASSERT_TRUE(c);
  ASSERT_EQ(c->status, 200) << c->body;
  EXPECT_EQ(c->get_header_value("Content-Type"), "video/mp4");
  const fs::path got = data / "downloaded.mp4";
  std::ofstream(got, std::ios::binary) << c->body;
  io::VideoFileInfo info = io::read_video(got.string());
  EXPECT_EQ(info.frames, 5);
  EXPECT_EQ(info.width, 48);
  EXPECT_EQ(info.height, 32);
  EXPECT_EQ(json::parse(info.metadata["comment"])["job_id"], id);  // the run's parameters ride in the MP4
  // What the server keeps: the video (written by write_output: temp + rename) and its sidecar.
  EXPECT_TRUE(fs::is_regular_file(data / "videos" / (id + ".mp4")));
  EXPECT_TRUE(fs::is_regular_file(data / "videos" / (id + ".mp4.json")));
  json sidecar;
  std::ifstream(data / "videos" / (id + ".mp4.json")) >> sidecar;
  EXPECT_EQ(sidecar["result"], want_result) << sidecar.dump();
  // The job list carries the same result.
  auto l = s.get("/v1/videos");
  ASSERT_TRUE(l && l->status == 200);
  EXPECT_EQ(json::parse(l->body)["data"][0]["result"], want_result) << l->body;

  auto t = s.get("/v1/videos/" + id + "/content?variant=thumbnail");
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body;
  EXPECT_EQ(t->get_header_value("Content-Type"), "image/png");
  ASSERT_GT(t->body.size(), 8u);
  EXPECT_EQ(t->body.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));

  // A byte range (what a <video> element asks for when it seeks).
  httplib::Headers range = {{"Range", "bytes=0-99"}};
  auto part = s.client->Get(("/v1/videos/" + id + "/content").c_str(), range);
  ASSERT_TRUE(part);
  EXPECT_EQ(part->status, 206);
  EXPECT_EQ(part->body, c->body.substr(0, 100));
}

TEST(Serve, EventsStreamProgressThenCompleted) {
  TestServer s(fresh_dir("events"));
  const std::string id = s.submit(small_job(4));
  std::string stream;
  auto r = s.client->Get(("/v1/videos/" + id + "/events").c_str(), [&](const char* d, size_t n) {
    stream.append(d, n);
    return true;
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_NE(stream.find("event: progress\ndata: "), std::string::npos) << stream;
  EXPECT_NE(stream.find("\"steps\":4"), std::string::npos) << stream;
  EXPECT_NE(stream.find("\"eta_seconds\""), std::string::npos) << stream;
  const size_t end = stream.rfind("event: completed\ndata: ");
  ASSERT_NE(end, std::string::npos) << stream;
  const std::string last = stream.substr(end + 23, stream.find('\n', end + 23) - end - 23);
  EXPECT_EQ(json::parse(last)["status"], "completed");
  EXPECT_EQ(stream.find("event:", end + 1), std::string::npos);  // the stream ends with it
}

TEST(Serve, CancelQueuedAndRunningThenDelete) {
  const fs::path data = fresh_dir("cancel");
  TestServer s(data);
  const std::string running = s.submit(small_job(1000));  // long enough to be cancelled mid-run
  const std::string queued = s.submit(small_job(2));
  ASSERT_EQ(s.wait_for(running, "in_progress")["status"], "in_progress");
  // Denoising, not still encoding the prompts: progress 1 is step 10 of 1000.
  for (int i = 0; i < 3000 && s.video(running)["progress"].get<int>() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GE(s.video(running)["progress"].get<int>(), 1);

  auto q = s.del("/v1/videos/" + queued);
  ASSERT_TRUE(q);
  ASSERT_EQ(q->status, 200) << q->body;
  EXPECT_EQ(json::parse(q->body)["status"], "cancelled");

  auto r = s.del("/v1/videos/" + running);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(json::parse(r->body)["cancel_requested"], true);
  const json v = s.wait_for(running, "cancelled", 30);
  ASSERT_EQ(v["status"], "cancelled") << v.dump();
  EXPECT_EQ(v["error"]["code"], "cancelled");
  EXPECT_NE(v["error"]["message"].get<std::string>().find("during denoising step"), std::string::npos) << v.dump();
  EXPECT_LT(v["progress"].get<int>(), 100);
  EXPECT_EQ(s.video(queued)["status"], "cancelled");  // it never ran
  EXPECT_FALSE(fs::exists(data / "videos" / (running + ".mp4")));
  // A cancelled job has no content.
  auto c = s.get("/v1/videos/" + running + "/content");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 409);
  EXPECT_EQ(json::parse(c->body)["error"]["code"], "video_not_ready");

  // Deleting a finished job removes it and its files.
  const std::string done = s.submit(small_job(1));
  ASSERT_EQ(s.wait_for(done, "completed")["status"], "completed");
  ASSERT_TRUE(fs::exists(data / "videos" / (done + ".mp4")));
  for (const std::string& id : {running, queued, done}) {
    auto d = s.del("/v1/videos/" + id);
    ASSERT_TRUE(d);
    ASSERT_EQ(d->status, 200) << d->body;
    EXPECT_EQ(json::parse(d->body), (json{{"id", id}, {"object", "video.deleted"}, {"deleted", true}}));
    auto g = s.get("/v1/videos/" + id);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->status, 404);
  }
  EXPECT_FALSE(fs::exists(data / "videos" / (done + ".mp4")));
  EXPECT_FALSE(fs::exists(data / "videos" / (done + ".mp4.json")));
  EXPECT_FALSE(fs::exists(data / "videos" / (done + ".thumb")));
}

TEST(Serve, ListPaginatesBothWays) {
  const fs::path data = fresh_dir("list");
  // Five finished jobs straight into the database (nothing to run), oldest first.
  std::vector<std::string> ids;
  {
    serve::JobStore store((data / "jobs.sqlite").string());
    serve::VideoSpec spec = serve::parse_video_request(small_job(1), false, {demo_model()});
    for (int i = 0; i < 5; ++i) {
      serve::Job j;
      j.id = serve::new_job_id();
      j.status = serve::Status::Cancelled;
      j.model = spec.model;
      j.prompt = "job " + std::to_string(i);
      j.spec = serve::spec_to_json(spec);
      store.insert(j);
      ids.push_back(j.id);
    }
  }
  TestServer s(data);
  auto page = [&](const std::string& q) {
    auto r = s.get("/v1/videos" + q);
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    return json::parse(r->body);
  };
  auto ids_of = [](const json& p) {
    std::vector<std::string> v;
    for (const auto& o : p["data"]) v.push_back(o["id"]);
    return v;
  };
  json p = page("?limit=2&order=asc");
  EXPECT_EQ(p["object"], "list");
  EXPECT_EQ(ids_of(p), (std::vector<std::string>{ids[0], ids[1]}));
  EXPECT_EQ(p["has_more"], true);
  EXPECT_EQ(p["first_id"], ids[0]);
  EXPECT_EQ(p["last_id"], ids[1]);
  p = page("?limit=2&order=asc&after=" + ids[1]);
  EXPECT_EQ(ids_of(p), (std::vector<std::string>{ids[2], ids[3]}));
  p = page("?limit=2&order=asc&after=" + ids[3]);
  EXPECT_EQ(ids_of(p), (std::vector<std::string>{ids[4]}));
  EXPECT_EQ(p["has_more"], false);
  p = page("");  // default: newest first, 20
  EXPECT_EQ(ids_of(p), (std::vector<std::string>{ids[4], ids[3], ids[2], ids[1], ids[0]}));
  p = page("?limit=3&after=" + ids[4]);
  EXPECT_EQ(ids_of(p), (std::vector<std::string>{ids[3], ids[2], ids[1]}));
  EXPECT_EQ(p["has_more"], true);
  p = page("?after=" + ids[0]);
  EXPECT_TRUE(p["data"].empty());
  EXPECT_TRUE(p["first_id"].is_null());
}

TEST(Serve, ApiKeyRequiredWhenSet) {
  serve::ServeOptions opt;
  opt.api_key = "s3cret";
  TestServer s(fresh_dir("auth"), opt);
  for (const httplib::Headers& h : {httplib::Headers{}, httplib::Headers{{"Authorization", "Bearer wrong"}},
                                    httplib::Headers{{"Authorization", "s3cret"}}}) {
    for (const char* path : {"/v1/videos", "/v1/models", "/metrics"}) {
      auto r = s.client->Get(path, h);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 401) << path;
      const json e = json::parse(r->body)["error"];
      EXPECT_EQ(e["type"], "authentication_error");
      EXPECT_EQ(e["code"], "invalid_api_key");
    }
    auto p = s.client->Post("/v1/videos", h, small_job().dump(), "application/json");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->status, 401);
  }
  auto ok = s.get("/v1/models");  // with the key
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(json::parse(ok->body)["data"][0]["id"], "wan2.1-tiny-demo");
  auto health = s.client->Get("/health");  // open: a load balancer's probe carries no key
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto page = s.client->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<form id=\"f\">"), std::string::npos);
}

TEST(Serve, FullQueueAnswers429WithRetryAfter) {
  serve::ServeOptions opt;
  opt.max_queued = 1;
  TestServer s(fresh_dir("full"), opt);
  const std::string running = s.submit(small_job(1000));
  ASSERT_EQ(s.wait_for(running, "in_progress")["status"], "in_progress");
  const std::string queued = s.submit(small_job(1));
  auto r = s.post(small_job(1));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(r->get_header_value("Retry-After"), "10");
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "queue_full");
  s.del("/v1/videos/" + queued);
  s.del("/v1/videos/" + running);
  EXPECT_EQ(s.wait_for(running, "cancelled", 30)["status"], "cancelled");
}

// Every malformed request is a 4xx naming the reason (and the field, when one is at fault),
// in OpenAI's error shape, and the server keeps serving.
TEST(Serve, MalformedRequestsAre4xxNamingTheReason) {
  serve::ServeOptions opt;
  opt.max_body_bytes = 64 * 1024;
  TestServer s(fresh_dir("malformed"), opt);
  struct Case {
    std::string what, method, path, body, content_type;
    int status;
    std::string param;    // "" = null
    std::string message;  // a substring of error.message
  };
  auto with = [](json j, const std::string& k, json v) {
    j[k] = std::move(v);
    return j.dump();
  };
  auto without = [](json j, const std::string& k) {
    j.erase(k);
    return j;
  };
  const json ok = small_job();
  const std::string json_t = "application/json";
  const std::vector<Case> cases = {
      {"bad JSON", "POST", "/v1/videos", "{\"prompt\": ", json_t, 400, "", "not valid JSON"},
      {"not an object", "POST", "/v1/videos", "[1, 2]", json_t, 400, "", "must be a JSON object"},
      {"invalid UTF-8", "POST", "/v1/videos", "{\"prompt\": \"caf\xc3\x28\"}", json_t, 400, "",
       "ill-formed UTF-8"},
      {"invalid UTF-8 in a broken body", "POST", "/v1/videos", "{\"prompt\": \xff\xfe", json_t, 400, "",
       "not valid JSON"},
      {"no prompt", "POST", "/v1/videos", without(ok, "prompt").dump(), json_t, 400, "prompt", "prompt is required"},
      {"empty prompt", "POST", "/v1/videos", with(ok, "prompt", ""), json_t, 400, "prompt", "must not be empty"},
      {"prompt a number", "POST", "/v1/videos", with(ok, "prompt", 5), json_t, 400, "prompt", "must be a string"},
      {"steps a string", "POST", "/v1/videos", with(ok, "steps", "many"), json_t, 400, "steps", "must be an integer"},
      {"steps fractional", "POST", "/v1/videos", with(ok, "steps", 2.5), json_t, 400, "steps", "must be an integer"},
      {"steps zero", "POST", "/v1/videos", with(ok, "steps", 0), json_t, 400, "steps", "--steps 0: must be 1..1000"},
      {"steps huge", "POST", "/v1/videos", with(ok, "steps", 1000000), json_t, 400, "steps", "at most 1000"},
      {"seed a float", "POST", "/v1/videos", with(ok, "seed", 1.5), json_t, 400, "seed", "must be an integer"},
      {"seed too big", "POST", "/v1/videos", with(ok, "seed", 1e30), json_t, 400, "seed", "must be an integer"},
      {"guidance a string", "POST", "/v1/videos", with(ok, "guidance", "high"), json_t, 400, "guidance",
       "must be a number"},
      {"shift negative", "POST", "/v1/videos", with(ok, "shift", -1), json_t, 400, "shift", "must be a positive number"},
      {"unknown sampler", "POST", "/v1/videos", with(ok, "sampler", "ddim"), json_t, 400, "sampler",
       "--sampler ddim: unknown; choose one of unipc, dpm++, euler"},
      {"frames off the 4k+1 rule", "POST", "/v1/videos", with(ok, "frames", 8), json_t, 400, "frames",
       "the Wan VAE needs 4k+1 frames (e.g. 5 or 9)"},
      {"width off the multiple", "POST", "/v1/videos", with(ok, "size", "50x32"), json_t, 400, "size",
       "--width 50: must be a positive multiple of 16"},
      {"height off the multiple", "POST", "/v1/videos", with(ok, "size", "48x100"), json_t, 400, "size",
       "--height 100: must be a positive multiple of 16"},
      {"size not WxH", "POST", "/v1/videos", with(ok, "size", "big"), json_t, 400, "size", "is not WIDTHxHEIGHT"},
      {"size beyond the machine", "POST", "/v1/videos", with(ok, "size", "16384x16384"), json_t, 400, "size",
       "does not fit this machine"},
      {"seconds and frames", "POST", "/v1/videos", with(ok, "seconds", "4"), json_t, 400, "seconds",
       "not both"},
      {"seconds not a number", "POST", "/v1/videos", with(without(ok, "frames"), "seconds", "soon"), json_t, 400,
       "seconds", "must be a number"},
      {"unknown model", "POST", "/v1/videos", with(ok, "model", "sora-2"), json_t, 400, "model",
       "model 'sora-2' is not served here (served: wan2.1-tiny-demo)"},
      {"unknown field", "POST", "/v1/videos", with(ok, "temperature", 1), json_t, 400, "temperature",
       "unknown field 'temperature'"},
      {"an input image for a T2V model", "POST", "/v1/videos", with(ok, "input_reference", "aGVsbG8="), json_t, 400,
       "input_reference", "takes no input image"},
      {"a LoRA", "POST", "/v1/videos", with(ok, "lora", json::array({{{"name", "x"}, {"scale", 1}}})), json_t, 400,
       "lora", "no LoRA folder"},
      {"fps zero", "POST", "/v1/videos", with(ok, "fps", 0), json_t, 400, "fps", "must be in (0, 240]"},
      {"huge body", "POST", "/v1/videos", with(ok, "prompt", std::string(100000, 'a')), json_t, 413, "",
       "larger than 65536 bytes"},
      {"path-traversal id", "GET", "/v1/videos/..%2F..%2Fjobs.sqlite", "", "", 404, "", "no such endpoint"},
      {"dotted id", "GET", "/v1/videos/video_..", "", "", 404, "video_id", "no video with id"},
      {"an id of the right shape that is not there", "GET", "/v1/videos/video_0123456789abcdef0123456789abcdef", "",
       "", 404, "video_id", "no video with id"},
      {"traversal on content", "GET", "/v1/videos/..%2Fjobs.sqlite/content", "", "", 404, "", "no such endpoint"},
      {"bad id on content", "GET", "/v1/videos/jobs.sqlite/content", "", "", 404, "video_id", "no video with id"},
      {"bad id on events", "GET", "/v1/videos/%2e%2e/events", "", "", 404, "video_id", "no video with id"},
      {"traversal on delete", "DELETE", "/v1/videos/..", "", "", 404, "video_id", "no video with id"},
      {"limit zero", "GET", "/v1/videos?limit=0", "", "", 400, "limit", "from 1 to 100"},
      {"limit text", "GET", "/v1/videos?limit=ten", "", "", 400, "limit", "from 1 to 100"},
      {"order sideways", "GET", "/v1/videos?order=up", "", "", 400, "order", "asc or desc"},
      {"after unknown", "GET", "/v1/videos?after=video_0123456789abcdef0123456789abcdef", "", "", 400, "after",
       "is not the id of a video here"},
      {"unknown endpoint", "GET", "/v1/images", "", "", 404, "", "no such endpoint: GET /v1/images"},
  };
  for (const auto& c : cases) {
    httplib::Result r = c.method == "POST"     ? s.client->Post(c.path.c_str(), c.body, c.content_type.c_str())
                        : c.method == "DELETE" ? s.client->Delete(c.path.c_str())
                                               : s.client->Get(c.path.c_str());
    ASSERT_TRUE(r) << c.what << ": no answer";
    EXPECT_EQ(r->status, c.status) << c.what << ": " << r->body;
    json e;
    try {
      e = json::parse(r->body).at("error");
    } catch (const std::exception& ex) {
      ADD_FAILURE() << c.what << ": not an OpenAI error body: " << r->body;
      continue;
    }
    EXPECT_NE(e.at("message").get<std::string>().find(c.message), std::string::npos)
        << c.what << ": expected '" << c.message << "' in " << e.dump();
    EXPECT_EQ(e.at("param"), c.param.empty() ? json() : json(c.param)) << c.what << ": " << e.dump();
    EXPECT_TRUE(e.at("type").is_string()) << c.what;
  }
  EXPECT_GE(cases.size(), 25u);
  // Nothing was queued, and the server still serves.
  auto list = s.get("/v1/videos");
  ASSERT_TRUE(list);
  EXPECT_TRUE(json::parse(list->body)["data"].empty()) << list->body;
  auto h = s.get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST(Serve, MultipartFormFieldsAreTakenAsTheJsonOnes) {
  TestServer s(fresh_dir("multipart"));
  httplib::MultipartFormDataItems items = {
      {"prompt", "a red panda", "", ""}, {"size", "48x32", "", ""}, {"seconds", "0.25", "", ""},
      {"steps", "1", "", ""}, {"seed", "3", "", ""}};
  auto r = s.client->Post("/v1/videos", items);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json v = json::parse(r->body);
  EXPECT_EQ(v["frames"], 5);  // 0.25 s at 16 fps = 4 frames -> the nearest 4k+1
  EXPECT_EQ(v["seconds"], "0.25");
  EXPECT_EQ(v["steps"], 1);
  EXPECT_EQ(v["seed"], 3);
  EXPECT_EQ(s.wait_for(v["id"], "completed")["status"], "completed");
  httplib::MultipartFormDataItems bad = {{"prompt", "x", "", ""}, {"steps", "two", "", ""}};
  auto b = s.client->Post("/v1/videos", bad);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, 400);
  EXPECT_EQ(json::parse(b->body)["error"]["param"], "steps");
  // Form fields are raw bytes (no JSON parser checked them): invalid UTF-8 is refused by name.
  httplib::MultipartFormDataItems bytes = {{"prompt", "caf\xc3\x28", "", ""}};
  auto u = s.client->Post("/v1/videos", bytes);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->status, 400) << u->body;
  EXPECT_EQ(json::parse(u->body)["error"]["param"], "prompt");
  EXPECT_EQ(json::parse(u->body)["error"]["message"], "prompt is not valid UTF-8");
}

// A server that died (SIGKILL, a crash) left one job in_progress and one queued: on the next
// start the first is failed with a clear error and the second runs.
TEST(Serve, RestartFailsTheInterruptedJobAndRunsTheQueued) {
  const fs::path data = fresh_dir("restart");
  std::string interrupted, waiting;
  {
    serve::JobStore store((data / "jobs.sqlite").string());
    const json spec = serve::spec_to_json(serve::parse_video_request(small_job(2), false, {demo_model()}));
    for (std::string* id : {&interrupted, &waiting}) {
      serve::Job j;
      j.id = *id = serve::new_job_id();
      j.model = "wan2.1-tiny-demo";
      j.prompt = "left over";
      j.spec = spec;
      store.insert(j);
    }
    ASSERT_EQ(store.claim_next()->id, interrupted);  // what the dead server was running
  }
  TestServer s(data);
  const json f = s.video(interrupted);
  EXPECT_EQ(f["status"], "failed");
  EXPECT_EQ(f["error"]["code"], "server_restarted");
  EXPECT_NE(f["error"]["message"].get<std::string>().find("the server stopped while this job was running"),
            std::string::npos);
  EXPECT_EQ(s.wait_for(waiting, "completed")["status"], "completed");
  EXPECT_TRUE(fs::is_regular_file(data / "videos" / (waiting + ".mp4")));
}

// stop() (what SIGTERM does): the running job stops at a step boundary and goes back to the
// queue; the next server runs it to the end.
TEST(Serve, StopRequeuesTheRunningJobAndTheNextServerRunsIt) {
  const fs::path data = fresh_dir("drain");
  std::string id;
  {
    TestServer s(data);
    id = s.submit(small_job(1000));
    ASSERT_EQ(s.wait_for(id, "in_progress")["status"], "in_progress");
    s.server->stop();
  }
  {
    serve::JobStore store((data / "jobs.sqlite").string());
    const auto j = store.get(id);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->status, serve::Status::Queued);
    EXPECT_EQ(j->progress, 0);
    // A short job now, so the test does not wait 1000 steps: the spec is what the worker runs.
    json spec = j->spec;
    spec["steps"] = 1;
    store.remove(id);
    serve::Job k = *j;
    k.spec = spec;
    store.insert(k);
  }
  TestServer s(data);
  EXPECT_EQ(s.wait_for(id, "completed")["status"], "completed");
}

TEST(Serve, MetricsAndModels) {
  TestServer s(fresh_dir("metrics"));
  const std::string id = s.submit(small_job(2));
  ASSERT_EQ(s.wait_for(id, "completed")["status"], "completed");
  auto m = s.get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("vidax_jobs{status=\"completed\"} 1\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("vidax_queue_depth 0\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("vidax_step_seconds_count 2\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("vidax_peak_rss_bytes "), std::string::npos) << m->body;
  auto models = s.get("/v1/models");
  ASSERT_TRUE(models);
  const json d = json::parse(models->body)["data"][0];
  EXPECT_EQ(d["object"], "model");
  EXPECT_EQ(d["owned_by"], "wan");
  EXPECT_EQ(d["defaults"]["size"], "96x64");
}

// A client that leaves mid-download: the content provider's write fails, the server drops that
// response and keeps serving (the next download is whole).
TEST(Serve, ClientLeavingMidDownloadLeavesTheServerServing) {
  TestServer s(fresh_dir("leave"));
  json big = small_job(1);
  big["size"] = "192x128";
  big["frames"] = 9;
  const std::string id = s.submit(big);
  ASSERT_EQ(s.wait_for(id, "completed")["status"], "completed");
  auto whole = s.get("/v1/videos/" + id + "/content");
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200);
  ASSERT_GT(whole->body.size(), 64000u) << "too small to leave mid-way";
  for (int i = 0; i < 3; ++i) {
    size_t got = 0;
    auto r = s.client->Get(("/v1/videos/" + id + "/content").c_str(), [&](const char*, size_t n) {
      got += n;
      return got < 4096;  // false: the client hangs up
    });
    EXPECT_FALSE(r);  // cancelled by the receiver
    EXPECT_LT(got, whole->body.size());
  }
  auto again = s.get("/v1/videos/" + id + "/content");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(again->body, whole->body);
}
