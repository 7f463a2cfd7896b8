// The job database on its own: ids, queue order, claim, cancel, the restart rule, WAL mode.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "serve/job_store.h"
#include "serve_fixture.h"

using namespace vidax;
using namespace vidax::serve;

namespace {
Job job(const std::string& prompt) {
  Job j;
  j.id = new_job_id();
  j.model = "m";
  j.prompt = prompt;
  j.spec = {{"prompt", prompt}};
  return j;
}
}  // namespace

TEST(JobStore, IdsAreServerShapedAndCheckedStrictly) {
  const std::string a = new_job_id(), b = new_job_id();
  EXPECT_NE(a, b);
  EXPECT_TRUE(is_job_id(a));
  EXPECT_EQ(a.size(), 38u);
  for (const std::string bad : {"", "video_", "video_..", "../jobs.sqlite", "video_0123456789ABCDEF0123456789abcdef",
                                "video_0123456789abcdef0123456789abcde", "video_0123456789abcdef0123456789abcdef0",
                                "video_0123456789abcdef/123456789abcdef", "movie_0123456789abcdef0123456789abcdef"})
    EXPECT_FALSE(is_job_id(bad)) << bad;
}

TEST(JobStore, ClaimsInOrderCancelsOnlyQueuedAndFailsLeftovers) {
  const auto path = (test::fresh_dir("store") / "jobs.sqlite").string();
  Job a = job("a"), b = job("b"), c = job("c");
  {
    JobStore s(path);
    s.insert(a);
    s.insert(b);
    s.insert(c);
    EXPECT_LT(a.seq, b.seq);
    const auto first = s.claim_next();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->id, a.id);
    EXPECT_EQ(first->status, Status::InProgress);
    EXPECT_FALSE(s.cancel_if_queued(a.id, "x"));  // running: not this way
    EXPECT_TRUE(s.cancel_if_queued(b.id, "by the test"));
    EXPECT_EQ(s.get(b.id)->status, Status::Cancelled);
    EXPECT_EQ(s.get(b.id)->error_message, "by the test");
    EXPECT_EQ(s.claim_next()->id, c.id);  // b is skipped
    EXPECT_FALSE(s.claim_next());
    s.set_progress(c.id, 40);
    s.finish(c.id, Status::Completed);
    EXPECT_EQ(s.get(c.id)->progress, 100);
    EXPECT_GT(s.get(c.id)->completed_at, 0);
    const auto counts = s.count_by_status();
    EXPECT_EQ(counts.at("in_progress"), 1);
    EXPECT_EQ(counts.at("cancelled"), 1);
    EXPECT_EQ(counts.at("completed"), 1);
    EXPECT_EQ(counts.at("queued"), 0);
  }
  JobStore again(path);  // the next start
  EXPECT_EQ(again.fail_in_progress("died"), 1);
  const auto f = again.get(a.id);
  EXPECT_EQ(f->status, Status::Failed);
  EXPECT_EQ(f->error_code, "server_restarted");
  EXPECT_EQ(f->error_message, "died");
  EXPECT_EQ(f->spec, (nlohmann::json{{"prompt", "a"}}));
  EXPECT_TRUE(again.remove(a.id));
  EXPECT_FALSE(again.get(a.id));
  // WAL mode is the database's own setting: a plain connection sees it.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(JobStore, KeepsACompletedJobsResultAndOpensADatabaseFromBeforeResults) {
  const auto path = (test::fresh_dir("store_result") / "jobs.sqlite").string();
  // The schema before `result`, with one finished job in it.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
                         " status TEXT NOT NULL, model TEXT NOT NULL, prompt TEXT NOT NULL, spec TEXT NOT NULL,"
                         " progress INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,"
                         " completed_at INTEGER NOT NULL DEFAULT 0, error_code TEXT NOT NULL DEFAULT '',"
                         " error_message TEXT NOT NULL DEFAULT '');"
                         "INSERT INTO jobs (id, status, model, prompt, spec, progress, created_at, completed_at)"
                         " VALUES ('video_00000000000000000000000000000001', 'completed', 'm', 'old', '{}', 100, 1, 2)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  JobStore s(path);
  const auto old = s.get("video_00000000000000000000000000000001");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->status, Status::Completed);
  EXPECT_TRUE(old->result.is_null());
  Job a = job("a");
  s.insert(a);
  ASSERT_TRUE(s.claim_next());  // the old job is finished: a is next
  EXPECT_THROW(s.finish(a.id, Status::Failed, "generation_failed", "x", {{"width", 1}}), Error);
  const nlohmann::json r = {{"width", 32}, {"height", 32}, {"frames", 5}};
  s.finish(a.id, Status::Completed, "", "", r);
  EXPECT_EQ(s.get(a.id)->result, r);
  EXPECT_EQ(s.list("", 10, false).jobs.back().result, r);
}

TEST(VideoRequest, SecondsBecomeTheNearestValidFrameCountAndDefaultsFillIn) {
  const auto& m = test::demo_model();
  serve::VideoSpec s = serve::parse_video_request({{"prompt", "p"}, {"seconds", "5"}}, false, {m});
  EXPECT_EQ(s.frames, 81);  // 5 s x 16 fps = 80 -> 4k+1
  EXPECT_EQ(s.seconds, "5");
  EXPECT_EQ(s.size(), "96x64");  // the demo variant's defaults
  EXPECT_EQ(s.steps, 8);
  EXPECT_EQ(s.sampler, "unipc");
  EXPECT_LT(s.seed, 2147483648u);  // drawn, recorded
  s = serve::parse_video_request({{"prompt", "p"}, {"seconds", 1}, {"fps", 8}}, false, {m});
  EXPECT_EQ(s.frames, 9);
  EXPECT_EQ(serve::spec_to_json(serve::spec_from_json(serve::spec_to_json(s))), serve::spec_to_json(s));
}

// A two-expert variant's per-expert guidance (Wan 2.2 A14B, [low noise, high noise]) travels
// with the job: kept in the stored spec, handed to the run; an older job without it has none.
TEST(VideoRequest, PerExpertGuidanceIsKeptInTheSpecAndReachesTheRun) {
  serve::VideoSpec s;
  s.model = "wan2.2-t2v-a14b";
  s.guidance = 4.0;
  s.guidance_scales = {3.0, 4.0};
  const serve::VideoSpec back = serve::spec_from_json(serve::spec_to_json(s));
  EXPECT_EQ(back.guidance_scales, (std::vector<double>{3.0, 4.0}));
  EXPECT_EQ(serve::to_pipeline_request(back, {}).guidance_scales, (std::vector<double>{3.0, 4.0}));
  nlohmann::json old = serve::spec_to_json(s);
  old.erase("guidance_scales");
  EXPECT_TRUE(serve::spec_from_json(old).guidance_scales.empty());
}
