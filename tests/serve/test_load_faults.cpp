// Load and faults: 200 jobs from 20 concurrent clients all complete with valid MP4s, none
// lost or duplicated; polling at 50 requests per second while a job runs costs the step
// little; a full output folder (a small tmpfs) fails the job with a clear error and the
// server keeps serving; the queue's own overhead per job (submit -> start, finish -> visible).
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <set>

#include "io/video.h"
#include "serve_fixture.h"

using namespace vidax;
using namespace vidax::test;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The step seconds the server reports, summed (vidax_step_seconds_sum / _count from /metrics).
std::pair<double, int64_t> step_metrics(TestServer& s) {
  auto m = s.get("/metrics");
  EXPECT_TRUE(m && m->status == 200);
  auto field = [&](const std::string& name) {
    const size_t at = m->body.find("\n" + name + " ");
    return at == std::string::npos ? 0.0 : std::stod(m->body.substr(at + name.size() + 2));
  };
  return {field("vidax_step_seconds_sum"), static_cast<int64_t>(field("vidax_step_seconds_count"))};
}

}  // namespace

TEST(ServeLoad, TwoHundredJobsFromTwentyClientsAllCompleteOnce) {
  serve::ServeOptions opt;
  opt.max_queued = 200;
  const fs::path data = fresh_dir("load");
  TestServer s(data, opt);
  constexpr int kClients = 20, kPerClient = 10;
  std::mutex mu;
  std::vector<std::string> ids;
  std::atomic<int> refused{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      // Connections opened 5 ms apart, then kept: cpp-httplib 0.11 listens with a backlog of 5,
      // and a burst of 20 connects overflows it (docs/bugs.md row 80).
      std::this_thread::sleep_for(std::chrono::milliseconds(5 * c));
      httplib::Client cl("127.0.0.1", s.port);
      cl.set_read_timeout(60, 0);
      cl.set_keep_alive(true);
      for (int k = 0; k < kPerClient; ++k) {
        json job = small_job(1);
        job["seed"] = c * kPerClient + k;
        job["prompt"] = "job " + std::to_string(c * kPerClient + k);
        auto r = cl.Post("/v1/videos", job.dump(), "application/json");
        if (!r || r->status != 200) {
          std::lock_guard<std::mutex> lock(mu);
          ADD_FAILURE() << "client " << c << ": " << (r ? r->body : httplib::to_string(r.error()));
          ++refused;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        ids.push_back(json::parse(r->body)["id"]);
      }
    });
  for (auto& t : clients) t.join();
  const double submit_s = seconds_since(t0);
  ASSERT_EQ(refused.load(), 0);
  ASSERT_EQ(ids.size(), 200u);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 200u) << "an id was given twice";
  // All complete: the list (newest first, 100 a page) ends with every id exactly once, completed.
  std::multiset<std::string> listed;
  const auto deadline = Clock::now() + std::chrono::seconds(600);
  for (;;) {
    listed.clear();
    int completed = 0;
    std::string after;
    for (;;) {
      auto r = s.get("/v1/videos?limit=100&order=asc" + (after.empty() ? "" : "&after=" + after));
      ASSERT_TRUE(r && r->status == 200);
      const json page = json::parse(r->body);
      for (const auto& v : page["data"]) {
        listed.insert(v["id"]);
        completed += v["status"] == "completed";
        ASSERT_NE(v["status"], "failed") << v.dump();
      }
      if (!page["has_more"].get<bool>()) break;
      after = page["last_id"];
    }
    if (completed == 200 || Clock::now() > deadline) {
      EXPECT_EQ(completed, 200);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double total_s = seconds_since(t0);
  EXPECT_EQ(listed.size(), 200u);
  for (const auto& id : ids) EXPECT_EQ(listed.count(id), 1u) << id;
  // Every MP4 decodes to the job's frames and carries its own job id.
  for (const auto& id : ids) {
    const fs::path f = data / "videos" / (id + ".mp4");
    io::VideoFileInfo info = io::read_video(f.string());
    EXPECT_EQ(info.frames, 5) << id;
    EXPECT_EQ(json::parse(info.metadata["comment"])["job_id"], id);
  }
  std::printf("[ load ] 200 jobs from 20 clients: submitted in %.2f s, all completed in %.2f s (%.1f ms a job)\n",
              submit_s, total_s, 1000 * total_s / 200);
}

// Polling at 50 requests per second while a job runs: the step time with and without it.
TEST(ServeLoad, PollingAtFiftyPerSecondBarelySlowsTheSteps) {
  TestServer s(fresh_dir("poll"));
  json job = small_job(15);
  job["size"] = "384x256";  // steps of some tens of ms: long enough to time, short enough for CI
  job["frames"] = 9;
  auto run = [&](bool poll) {
    const auto before = step_metrics(s);
    const std::string id = s.submit(job);
    std::atomic<bool> done{false};
    std::atomic<int> polls{0};
    std::thread poller;
    if (poll)
      poller = std::thread([&] {
        httplib::Client cl("127.0.0.1", s.port);
        auto next = Clock::now();
        while (!done) {
          auto r = cl.Get(("/v1/videos/" + id).c_str());
          if (r && r->status == 200) ++polls;
          next += std::chrono::milliseconds(20);  // 50 a second
          std::this_thread::sleep_until(next);
        }
      });
    const auto t0 = Clock::now();
    EXPECT_EQ(s.wait_for(id, "completed", 300)["status"], "completed");
    const double wall = seconds_since(t0);
    done = true;
    if (poller.joinable()) poller.join();
    const auto after = step_metrics(s);
    const double per_step = (after.first - before.first) / static_cast<double>(after.second - before.second);
    if (poll) EXPECT_GE(polls.load(), static_cast<int>(30 * wall)) << "the poller did not reach ~50/s";
    return per_step;
  };
  // Interleaved, best of three each: a loaded 2-core machine's noise is larger than the effect.
  double quiet = 1e9, polled = 1e9;
  for (int i = 0; i < 3; ++i) {
    quiet = std::min(quiet, run(false));
    polled = std::min(polled, run(true));
  }
  const double slowdown = polled / quiet - 1;
  std::printf("[ poll ] step %.2f ms quiet, %.2f ms with 50 polls/s: %+.1f%%\n", 1000 * quiet, 1000 * polled,
              100 * slowdown);
  // The target is 5%; the bound leaves room for a shared CI machine's noise.
  EXPECT_LT(slowdown, 0.25);
}

// The output folder fills up (a 256 KiB tmpfs over <data>/videos): the job fails naming the
// write, no partial file is left, the server keeps serving, and once there is room jobs complete.
TEST(ServeFaults, FullOutputFolderFailsTheJobAndTheServerKeepsServing) {
  const fs::path data = fresh_dir("full_disk");
  const fs::path videos = data / "videos";
  fs::create_directories(videos);
  if (mount("tmpfs", videos.c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << "): needs root or CAP_SYS_ADMIN";
  struct Unmount {
    fs::path p;
    ~Unmount() { umount2(p.c_str(), MNT_DETACH); }
  } unmount{videos};
  // Fill it but for a few KiB.
  {
    std::ofstream fill(videos / "filler.bin", std::ios::binary);
    const std::string block(4096, 'x');
    while (fill.write(block.data(), block.size()) && fill.flush()) {
    }
  }
  fs::resize_file(videos / "filler.bin", fs::file_size(videos / "filler.bin") - 8192);
  TestServer s(data);
  json big = small_job(1);
  big["size"] = "192x128";
  big["frames"] = 9;  // an MP4 of ~70 KB
  const std::string id = s.submit(big);
  const json v = s.wait_for(id, "failed");
  ASSERT_EQ(v["status"], "failed") << v.dump();
  EXPECT_EQ(v["error"]["code"], "generation_failed");
  const std::string msg = v["error"]["message"];
  EXPECT_TRUE(msg.find("No space left") != std::string::npos || msg.find("space") != std::string::npos ||
              msg.find("write") != std::string::npos)
      << msg;
  for (const auto& e : fs::directory_iterator(videos))
    EXPECT_EQ(e.path().filename(), "filler.bin") << "left behind: " << e.path();
  auto h = s.get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  fs::remove(videos / "filler.bin");
  const std::string ok = s.submit(big);
  EXPECT_EQ(s.wait_for(ok, "completed")["status"], "completed");
  std::printf("[ full disk ] %s\n", msg.c_str());
}
