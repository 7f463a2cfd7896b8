// `vidax serve` as a process: the real signal path. SIGTERM mid-job drains (exit 0, the job
// back in the queue); SIGKILL mid-job and a restart mark that job failed and run the queued one.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "serve/job_store.h"
#include "cli_child.h"
#include "serve_fixture.h"

extern char** environ;
using namespace vidax;
using namespace vidax::test;

namespace {

const std::string kVidax = std::string(VIDAX_BINARY_DIR) + "/bin/vidax";

struct ServeProcess {
  pid_t pid = -1;
  int port = 0;
  int out_fd = -1, err_fd = -1;

  explicit ServeProcess(const fs::path& data) {
    int out[2], err[2];
    EXPECT_EQ(pipe(out), 0);
    EXPECT_EQ(pipe(err), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    posix_spawn_file_actions_addclose(&fa, err[0]);
    const std::vector<std::string> args = {kVidax, "serve", "--weights", demo_weights_dir(), "--data",
                                           data.string(), "--port", "0"};
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid, kVidax.c_str(), &fa, nullptr, argv.data(), environ), 0) << kVidax;
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    close(err[1]);
    out_fd = out[0];
    err_fd = err[0];
    // The first stdout line names the address: "vidax serve: http://127.0.0.1:PORT/".
    std::string line;
    char c;
    while (read(out_fd, &c, 1) == 1 && c != '\n') line += c;
    const size_t colon = line.rfind(':');
    EXPECT_NE(colon, std::string::npos) << "no address line: '" << line << "'";
    if (colon != std::string::npos) port = std::atoi(line.c_str() + colon + 1);
  }
  ~ServeProcess() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    close(out_fd);
    close(err_fd);
  }
  // Exit code (128 + signal when killed) and stderr.
  std::pair<int, std::string> wait_exit() {
    std::string err;
    char buf[512];
    ssize_t n;
    while ((n = read(err_fd, buf, sizeof buf)) > 0) err.append(buf, static_cast<size_t>(n));
    int st = 0;
    waitpid(pid, &st, 0);
    pid = -1;
    return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), err};
  }
};

std::string submit(httplib::Client& c, const json& body) {
  auto r = c.Post("/v1/videos", body.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  return r ? json::parse(r->body).value("id", "") : "";
}

std::string status_of(httplib::Client& c, const std::string& id) {
  auto r = c.Get(("/v1/videos/" + id).c_str());
  return r && r->status == 200 ? json::parse(r->body).value("status", "") : "";
}

bool wait_status(httplib::Client& c, const std::string& id, const std::string& want, double seconds = 60) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (status_of(c, id) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

TEST(CliServe, SigtermDrainsAndExitsZeroWithTheJobQueuedAgain) {
  const fs::path data = fresh_dir("cli-term");
  ServeProcess p(data);
  ASSERT_GT(p.port, 0);
  httplib::Client c("127.0.0.1", p.port);
  const std::string id = submit(c, small_job(1000));
  ASSERT_TRUE(wait_status(c, id, "in_progress"));
  kill(p.pid, SIGTERM);
  const auto [code, err] = p.wait_exit();
  EXPECT_EQ(code, 0) << err;
  EXPECT_NE(err.find("got SIGTERM; draining"), std::string::npos) << err;
  EXPECT_NE(err.find("stopped for shutdown (cancelled during "), std::string::npos) << err;
  EXPECT_NE(err.find("); queued again"), std::string::npos) << err;
  serve::JobStore store((data / "jobs.sqlite").string());
  EXPECT_EQ(store.get(id)->status, serve::Status::Queued);
}

TEST(CliServe, SigkillThenRestartFailsTheRunningJobAndRunsTheQueued) {
  const fs::path data = fresh_dir("cli-kill");
  std::string running, queued;
  {
    ServeProcess p(data);
    ASSERT_GT(p.port, 0);
    httplib::Client c("127.0.0.1", p.port);
    running = submit(c, small_job(1000));
    queued = submit(c, small_job(1));
    ASSERT_TRUE(wait_status(c, running, "in_progress"));
    kill(p.pid, SIGKILL);
    EXPECT_EQ(p.wait_exit().first, 128 + SIGKILL);
  }
  ServeProcess p(data);
  ASSERT_GT(p.port, 0);
  httplib::Client c("127.0.0.1", p.port);
  EXPECT_EQ(status_of(c, running), "failed");
  EXPECT_TRUE(wait_status(c, queued, "completed"));
  auto v = c.Get(("/v1/videos/" + running).c_str());
  ASSERT_TRUE(v);
  EXPECT_EQ(json::parse(v->body)["error"]["code"], "server_restarted");
}

// --max-memory below the model's weights: refused at start, naming the model and the flag.
TEST(CliServe, MaxMemoryBelowAModelsWeightsIsRefusedAtStart) {
  const auto r = vidax::test::cli::run({"serve", "--weights", demo_weights_dir(), "--data",
                                        fresh_dir("cli_max_memory").string(), "--port", "0", "--max-memory", "1K"},
                                       {});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("exceed --max-memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wan2.1-tiny-demo"), std::string::npos) << r.err;
  const auto bad = vidax::test::cli::run({"serve", "--weights", demo_weights_dir(), "--data",
                                          fresh_dir("cli_max_memory_bad").string(), "--max-memory", "lots"},
                                         {});
  EXPECT_EQ(bad.code, 1) << bad.err;
  EXPECT_NE(bad.err.find("--max-memory"), std::string::npos) << bad.err;
}
