// `vidax serve --max-memory`: two models whose weights do not fit together. The first is loaded at
// start, the second when a job needs it (the first unloaded to make room), and back again; both jobs'
// frames are those of a server holding the model all along. A model that alone exceeds the budget
// is refused at start, naming it.
#include <map>
#include <mutex>

#include "io/video.h"
#include "serve/video_request.h"
#include "serve_fixture.h"

using namespace vidax;
using namespace vidax::test;

namespace {

// The tiny TI2V demo (tasks: t2v and ti2v): a second text-to-video model beside the Wan 2.1 demo.
const serve::ServedModel& ti2v_demo_model() {
  static const serve::ServedModel m = [] {
    const fs::path d = serve_scratch() / "ti2v-demo";
    pipeline::DemoOptions o;
    o.out_dir = d.string();
    o.spiece_model = std::string(VIDAX_TEST_DATA_DIR) + "/text/data/tiny_spiece.model";
    engine::family_of_model("wan2.2-ti2v-tiny-demo").make_demo("wan2.2-ti2v-tiny-demo", o);
    return serve::load_served_model(d.string(), "", nullptr);
  }();
  return m;
}

std::map<std::string, bool> loaded_models(TestServer& s) {
  auto r = s.get("/v1/models");
  EXPECT_TRUE(r && r->status == 200);
  std::map<std::string, bool> out;
  if (!r || r->status != 200) return out;
  const json l = json::parse(r->body);
  for (const auto& m : l["data"]) out[m["id"].get<std::string>()] = m["loaded"].get<bool>();
  return out;
}

// A finished job's first frame (the thumbnail PNG: the frame as computed, bit for bit; the MP4's
// frames are not compared: libx264 was seen to encode the same frames differently on a loaded host).
std::string first_frame(TestServer& s, const std::string& id) {
  EXPECT_EQ(s.wait_for(id, "completed", 120)["status"], "completed");
  auto r = s.get("/v1/videos/" + id + "/content?variant=thumbnail");
  EXPECT_TRUE(r && r->status == 200);
  return r && r->status == 200 ? r->body : "";
}

json job_for(const std::string& model, int seed) {
  json j = small_job(2);
  j["model"] = model;
  j["seed"] = seed;
  j["size"] = "64x64";  // the TI2V demo's VAE takes multiples of 32
  return j;
}

}  // namespace

TEST(ServeResidency, LoadsTheModelAJobNeedsAndUnloadsTheLeastRecentlyUsed) {
  const serve::ServedModel &a = demo_model(), &b = ti2v_demo_model();
  const double wa = a.weight_bytes(), wb = b.weight_bytes();
  ASSERT_GT(wa, 0);
  ASSERT_GT(wb, 0);
  serve::ServeOptions opt;
  opt.memory_budget_bytes = std::max(wa, wb) * 1.05;
  ASSERT_LT(opt.memory_budget_bytes, wa + wb) << "the two demos must not fit together for this test";

  // The first frames of servers that hold one model each, all along (no budget).
  std::string ref_a, ref_b;
  {
    TestServer one(fresh_dir("residency_ref_a"), {}, {a});
    ref_a = first_frame(one, one.submit(job_for(a.name, 3)));
  }
  {
    TestServer one(fresh_dir("residency_ref_b"), {}, {b});
    ref_b = first_frame(one, one.submit(job_for(b.name, 4)));
  }

  std::vector<std::string> log;
  std::mutex log_mu;
  opt.log = [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.push_back(l);
  };
  TestServer s(fresh_dir("residency"), opt, {a, b});
  EXPECT_EQ(loaded_models(s), (std::map<std::string, bool>{{a.name, true}, {b.name, false}}));
  const int loads_b = b.loads();

  // A job for the unloaded model: the other goes, it comes.
  const std::string vb = first_frame(s, s.submit(job_for(b.name, 4)));
  EXPECT_EQ(loaded_models(s), (std::map<std::string, bool>{{a.name, false}, {b.name, true}}));
  EXPECT_EQ(b.loads(), loads_b + 1);
  // And back.
  const std::string va = first_frame(s, s.submit(job_for(a.name, 3)));
  EXPECT_EQ(loaded_models(s), (std::map<std::string, bool>{{a.name, true}, {b.name, false}}));
  // The same first frames as the servers that never unloaded.
  EXPECT_FALSE(va.empty());
  EXPECT_FALSE(vb.empty());
  EXPECT_EQ(va, ref_a);
  EXPECT_EQ(vb, ref_b);

  // What the log said, and the metrics.
  bool said_unload = false;
  {
    std::lock_guard<std::mutex> lock(log_mu);
    for (const auto& l : log)
      said_unload = said_unload || (l.find("unloading " + a.name) != std::string::npos &&
                                    l.find("least recently used") != std::string::npos &&
                                    l.find("make room for " + b.name) != std::string::npos);
  }
  EXPECT_TRUE(said_unload);
  auto m = s.get("/metrics");
  ASSERT_TRUE(m && m->status == 200);
  EXPECT_NE(m->body.find("vidax_model_resident{model=\"" + a.name + "\"} 1"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("vidax_model_resident{model=\"" + b.name + "\"} 0"), std::string::npos) << m->body;
}

TEST(ServeResidency, AModelLargerThanTheBudgetIsRefusedAtStart) {
  serve::ServeOptions opt;
  opt.memory_budget_bytes = demo_model().weight_bytes() / 2;
  opt.data_dir = fresh_dir("residency_too_small").string();
  try {
    serve::Server s(opt, {demo_model()});
    FAIL() << "a budget below the model's weights was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("model " + demo_model().name), std::string::npos) << m;
    EXPECT_NE(m.find("exceed --max-memory"), std::string::npos) << m;
  }
}

