// `vidax serve --mesh` under mpirun (docs/serve.md, "Under MPI"): rank 0 serves HTTP, both ranks
// compute. The server runs as `mpirun -np 2 vidax serve ...` (a child of the test, in its own
// process group); the test is the HTTP client. A job's first frame (the thumbnail, decoded) equals
// a single-process `vidax generate` of the same request; a cancel stops both ranks at the same
// step; a job that fails on one rank only fails with that rank's message and the next job runs;
// SIGTERM on rank 0 drains and every rank exits 0; --job-timeout; an I2V job under --max-memory.
// A rank that fails inside the DiT's collectives (VIDAX_TEST_FAULT) fails the job with its message
// on every rank, without a hang, and the next job runs; `vidax generate` under mpirun exits.
// Built as test_serve_mpi, run by ctest only where mpirun is (label "serve;mpi").
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <regex>
#include <sstream>

#include "cli_child.h"
#include "io/video.h"
#include "serve/job_store.h"
#include "serve_fixture.h"

extern char** environ;
using namespace vidax;
using namespace vidax::test;

namespace {

const std::string kVidax = std::string(VIDAX_BINARY_DIR) + "/bin/vidax";
// What tests/parallel/extra.cmake gives its mpirun runs (2 cores, root, no shared-memory copies).
const std::vector<std::string> kMpiEnv = {"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1",
                                          "OMPI_MCA_rmaps_base_oversubscribe=1", "OMPI_MCA_btl=self,vader",
                                          "OMPI_MCA_btl_vader_single_copy_mechanism=none"};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `vidax serve` under mpirun: `ranks` holds each rank's extra arguments (one entry per rank, an
// MPMD command line when they differ), after the common ones.
struct MpiServe {
  pid_t pid = -1;  // mpirun; its own process group
  int port = 0, rank0_pid = 0;
  fs::path out, err;

  // `extra_env`: more environment for every rank (e.g. VIDAX_TEST_FAULT, which names its rank).
  MpiServe(const fs::path& dir, const std::vector<std::string>& common, const std::vector<std::vector<std::string>>& ranks,
           const std::vector<std::string>& extra_env = {}) {
    out = dir / "stdout.txt";
    err = dir / "stderr.txt";
    std::vector<std::string> args = {VIDAX_MPIEXEC, "--allow-run-as-root", "--oversubscribe"};
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (r) args.push_back(":");
      for (const char* a : {"-np", "1"}) args.push_back(a);
      args.push_back(kVidax);
      args.insert(args.end(), common.begin(), common.end());
      args.insert(args.end(), ranks[r].begin(), ranks[r].end());
    }
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    std::vector<std::string> ours = kMpiEnv;
    ours.insert(ours.end(), extra_env.begin(), extra_env.end());
    env.insert(env.end(), ours.begin(), ours.end());  // later copies are ignored by getenv: put ours first
    std::rotate(env.begin(), env.end() - static_cast<long>(ours.size()), env.end());
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    EXPECT_EQ(posix_spawn(&pid, argv[0], &fa, &at, argv.data(), envp.data()), 0) << argv[0];
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
  }

  // Waits for rank 0's two lines: the address and its pid. False (with the output) when the
  // job ended or took over two minutes.
  bool wait_ready() {
    const std::regex url(R"(vidax serve: http://127\.0\.0\.1:([0-9]+)/)"), rank0(R"(rank 0 of 2 \(pid ([0-9]+)\))");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string o = read_file(out);
      std::smatch a, b;
      if (std::regex_search(o, a, url) && std::regex_search(o, b, rank0)) {
        port = std::stoi(a[1]);
        rank0_pid = std::stoi(b[1]);
        return true;
      }
      if (waitpid(pid, nullptr, WNOHANG) == pid) {
        pid = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "no server: stdout '" << read_file(out) << "' stderr '" << read_file(err) << "'";
    return false;
  }

  // mpirun's exit code (128 + N when signal N ended it), within `seconds`; -1 when it is still running.
  int wait_exit(double seconds = 60) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      if (waitpid(pid, &st, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

  ~MpiServe() {
    if (pid <= 0) return;
    kill(-pid, SIGKILL);  // mpirun and every rank: the group it leads
    waitpid(pid, nullptr, 0);
  }
};

// CPU seconds (user + system) a process has used so far (/proc/PID/stat, fields 14 and 15).
double cpu_seconds(int pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(stat.substr(close + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && in >> f; ++i)
    if (i >= 14) ticks += std::stod(f);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A job that is still denoising when the test acts on it (a cancel, SIGTERM, --job-timeout 1):
// 1000 steps (pipeline::kMaxSteps) over 1280 tokens, not small_job's 12, which a fast idle CPU
// finished within the second these tests wait (bugs row 114).
json slow_job() {
  json j = small_job(pipeline::kMaxSteps);
  j["size"] = "256x256";
  j["frames"] = 17;
  return j;
}

std::vector<std::string> common_args(const fs::path& data) {
  return {"serve", "--weights", demo_weights_dir(), "--data", data.string(), "--port", "0", "--mesh", "cfg=2"};
}

// The first frame of a single-process `vidax generate` of small_job(2): the reference.
const Tensor& reference_frame() {
  static const Tensor t = [] {
    const fs::path dir = fresh_dir("mpi-reference");
    const json j = small_job(2);
    cli::ChildOptions env;
    env.env = kMpiEnv;
    const auto r = cli::run({"generate", "--weights", demo_weights_dir(), "--prompt", j["prompt"], "--width", "48",
                             "--height", "32", "--frames", "5", "--steps", "2", "--seed", "7", "--threads", "1", "-o",
                             (dir / "frames").string()},
                            env);
    EXPECT_EQ(r.code, 0) << r.err;
    return io::read_image((dir / "frames" / "frame_00000.png").string(), "the reference's first frame");
  }();
  return t;
}

// A 56x40 PNG (written through the io layer): an image-to-video job's first frame.
fs::path write_png(const fs::path& dir) {
  io::RgbVideo v;
  v.frames = 1;
  v.height = 40;
  v.width = 56;
  v.rgb.resize(v.frame_bytes());
  for (size_t i = 0; i < v.rgb.size(); ++i) v.rgb[i] = static_cast<uint8_t>((i * 13) % 256);
  io::write_png_frames((dir / "image").string(), v, {});
  return dir / "image" / "frame_00000.png";
}

// The job's thumbnail against `want` (default: the reference): the largest difference in pixel
// levels (0 = equal).
double thumbnail_diff(httplib::Client& c, const std::string& id, const fs::path& dir,
                      const Tensor* want_frame = nullptr) {
  auto t = c.Get(("/v1/videos/" + id + "/content?variant=thumbnail").c_str());
  EXPECT_TRUE(t && t->status == 200) << (t ? t->body : "no answer");
  if (!t || t->status != 200) return 1e9;
  const fs::path p = dir / (id + ".png");
  std::ofstream(p, std::ios::binary) << t->body;
  const Tensor got = io::read_image(p.string(), "the thumbnail");
  const Tensor& want = want_frame ? *want_frame : reference_frame();
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return 1e9;
  double d = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    d = std::max(d, static_cast<double>(std::fabs(got.data<float>()[i] - want.data<float>()[i])));
  return d * 255;  // read_image gives [0, 1]
}

std::string submit(httplib::Client& c, const json& body) {
  auto r = c.Post("/v1/videos", body.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  return r && r->status == 200 ? json::parse(r->body).value("id", "") : "";
}

json video(httplib::Client& c, const std::string& id) {
  auto r = c.Get(("/v1/videos/" + id).c_str());
  return r && r->status == 200 ? json::parse(r->body) : json::object();
}

// Polls until `done(video)` holds, at most `seconds`; returns the last object seen.
template <class F>
json wait_until(httplib::Client& c, const std::string& id, F done, double seconds = 120) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  json v;
  while (std::chrono::steady_clock::now() < deadline) {
    v = video(c, id);
    if (done(v)) return v;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "job " << id << ": condition not met after " << seconds << " s: " << v.dump();
  return v;
}

bool finished(const json& v) {
  const std::string s = v.value("status", "");
  return s == "completed" || s == "failed" || s == "cancelled";
}

}  // namespace

TEST(MpiServe, JobsMatchASingleProcessRunACancelStopsBothRanksAndSigtermExitsZero) {
  const fs::path dir = fresh_dir("mpi-serve");
  (void)reference_frame();  // before the server takes the cores
  const fs::path loras = dir / "loras";
  write_demo_lora(loras / "style.safetensors");
  std::vector<std::string> args = common_args(dir / "data");
  args.insert(args.end(), {"--lora-dir", loras.string()});
  MpiServe s(dir, args, {{}, {}});
  ASSERT_TRUE(s.wait_ready());
  httplib::Client c("127.0.0.1", s.port);
  c.set_read_timeout(60, 0);

  // Idle, rank 1 waits for the next job asleep, not spinning in MPI (Communicator::broadcast_patient).
  std::smatch follower;
  const std::string started = read_file(s.err);
  ASSERT_TRUE(std::regex_search(started, follower, std::regex(R"(rank 1: waiting for rank 0's jobs \(pid ([0-9]+)\))")))
      << started;
  const int rank1 = std::stoi(follower[1]);
  const double cpu0 = cpu_seconds(rank1);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double idle_cpu = cpu_seconds(rank1) - cpu0;
  EXPECT_LT(idle_cpu, 0.3) << "rank 1 used " << idle_cpu << " CPU seconds in 2 s of waiting";

  const std::string first = submit(c, small_job(2));
  json v = wait_until(c, first, finished);
  ASSERT_EQ(v["status"], "completed") << v.dump();
  auto mp4 = c.Get(("/v1/videos/" + first + "/content").c_str());
  ASSERT_TRUE(mp4 && mp4->status == 200);
  EXPECT_GT(mp4->body.size(), 100u);
  EXPECT_EQ(mp4->body.substr(4, 4), "ftyp");
  EXPECT_EQ(thumbnail_diff(c, first, dir), 0.0) << "the cfg=2 job's first frame differs from vidax generate's";

  // A long job, cancelled once both ranks are in its steps: both stop at the same step. Behind it
  // waits a job whose LoRA file goes away before it runs: it fails on both ranks alike.
  const std::string long_job = submit(c, slow_job());
  (void)wait_until(c, long_job, [](const json& j) { return j.value("progress", 0) >= 1 || finished(j); });
  json with_lora = small_job(2);
  with_lora["lora"] = json::array({{{"name", "style"}, {"scale", 1.0}}});
  const std::string lora_job = submit(c, with_lora);
  fs::remove(loras / "style.safetensors");
  auto d = c.Delete(("/v1/videos/" + long_job).c_str());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 202) << d->body;
  v = wait_until(c, long_job, finished);
  ASSERT_EQ(v["status"], "cancelled") << v.dump();
  const std::string message = v["error"]["message"];
  std::smatch step;
  ASSERT_TRUE(std::regex_search(message, step, std::regex(R"(denoising step ([0-9]+)/1000)"))) << message;
  v = wait_until(c, lora_job, finished);
  ASSERT_EQ(v["status"], "failed") << v.dump();
  const std::string lora_message = v["error"]["message"];
  EXPECT_NE(lora_message.find("style.safetensors"), std::string::npos) << lora_message;
  EXPECT_EQ(lora_message.find("rank "), std::string::npos) << "both ranks failed alike: " << lora_message;

  // The next job runs on both ranks again, and gives the same frame.
  const std::string next = submit(c, small_job(2));
  v = wait_until(c, next, finished);
  ASSERT_EQ(v["status"], "completed") << v.dump();
  EXPECT_EQ(thumbnail_diff(c, next, dir), 0.0);

  ASSERT_EQ(kill(s.rank0_pid, SIGTERM), 0);
  EXPECT_EQ(s.wait_exit(), 0) << read_file(s.err);
  const std::string err = read_file(s.err);
  // Rank 1 stopped at rank 0's step, and left when rank 0 said so.
  EXPECT_NE(err.find("rank 1: job " + long_job + ": stopped (cancelled during denoising step " + step[1].str() + "/1000)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("rank 1: job " + next + ": done"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 1: job " + lora_job + ": failed before its run: " + lora_message), std::string::npos) << err;
  EXPECT_NE(err.find("got SIGTERM; draining"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 1: rank 0 said stop"), std::string::npos) << err;
}

// Rank 1's LoRA folder holds a broken file of the name rank 0's holds a good one of: the request
// passes rank 0's checks, the job fails on rank 1 with its message, and the server goes on.
// Then SIGTERM to mpirun mid-job: the job goes back to the queue and both ranks end. On --mesh sp=2.
TEST(MpiServe, AJobThatFailsOnOneRankFailsWithItsMessageAndTheServerGoesOn) {
  const fs::path dir = fresh_dir("mpi-serve-fail");
  (void)reference_frame();
  const fs::path good = dir / "loras-rank0", bad = dir / "loras-rank1";
  write_demo_lora(good / "style.safetensors");
  fs::create_directories(bad);
  std::ofstream(bad / "style.safetensors") << "not a safetensors file";
  std::vector<std::string> args = common_args(dir / "data");
  args.back() = "sp=2";  // the sequence split: the same frame too (Ulysses' exchange is exact here)
  MpiServe s(dir, args, {{"--lora-dir", good.string()}, {"--lora-dir", bad.string()}});
  ASSERT_TRUE(s.wait_ready());
  httplib::Client c("127.0.0.1", s.port);
  c.set_read_timeout(60, 0);

  json with_lora = small_job(2);
  with_lora["lora"] = json::array({{{"name", "style"}, {"scale", 1.0}}});
  const std::string failing = submit(c, with_lora);
  json v = wait_until(c, failing, finished);
  ASSERT_EQ(v["status"], "failed") << v.dump();
  EXPECT_EQ(v["error"]["code"], "generation_failed");
  const std::string message = v["error"]["message"];
  EXPECT_EQ(message.rfind("rank 1: ", 0), 0u) << message;
  EXPECT_NE(message.find("style.safetensors"), std::string::npos) << message;
  EXPECT_EQ(message.find("rank 0"), std::string::npos) << message;

  const std::string next = submit(c, small_job(2));
  v = wait_until(c, next, finished);
  ASSERT_EQ(v["status"], "completed") << v.dump();
  EXPECT_EQ(thumbnail_diff(c, next, dir), 0.0) << "the LoRA of the failed job outlived it";

  const std::string running = submit(c, slow_job());
  (void)wait_until(c, running, [](const json& j) { return j.value("status", "") == "in_progress" || finished(j); });
  // SIGTERM to mpirun, which forwards it to both ranks: rank 1 ignores it and rank 0 drains, as
  // when rank 0 alone is signalled. mpirun itself reports the signal (Open MPI 4.1 exits 1).
  ASSERT_EQ(kill(s.pid, SIGTERM), 0);
  EXPECT_NE(s.wait_exit(), -1) << "still running: " << read_file(s.err);
  const std::string err = read_file(s.err);
  EXPECT_NE(err.find("job " + running + ": stopped for shutdown"), std::string::npos) << err;
  EXPECT_NE(err.find("vidax serve: stopped"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 1: rank 0 said stop"), std::string::npos) << err;
  serve::JobStore store((dir / "data" / "jobs.sqlite").string());
  EXPECT_EQ(store.get(running)->status, serve::Status::Queued);
}

TEST(MpiServe, SeveralRanksWithoutAMeshAreRefusedAtStart) {
  const fs::path dir = fresh_dir("mpi-serve-nomesh");
  std::vector<std::string> args = common_args(dir / "data");
  args.resize(args.size() - 2);  // no --mesh
  MpiServe s(dir, args, {{}, {}});
  const int code = s.wait_exit(120);
  EXPECT_NE(code, 0);
  EXPECT_NE(code, -1) << "still running";
  const std::string err = read_file(s.err);
  EXPECT_NE(err.find("launched with 2 ranks but no --mesh"), std::string::npos) << err;
  EXPECT_EQ(read_file(s.out).find("http://"), std::string::npos) << "a rank served without a mesh";
}

// Two models that do not fit --max-memory together, the I2V one unloaded at start: its job makes
// both ranks unload the T2V model (rank 0's choice) and load it, and its image (decoded on rank 0,
// sent to rank 1) gives the frame of a single-process `vidax generate --image`.
TEST(MpiServe, AnImageToVideoJobUnderABudgetLoadsTheSameModelOnBothRanks) {
  const fs::path dir = fresh_dir("mpi-serve-i2v");
  const serve::ServedModel &t2v = demo_model(), &i2v = i2v_demo_model();
  const double budget = std::max(t2v.weight_bytes(), i2v.weight_bytes()) * 1.05;
  ASSERT_LT(budget, t2v.weight_bytes() + i2v.weight_bytes()) << "the two demos must not fit together for this test";
  const fs::path png = write_png(dir);
  Tensor want;
  {
    cli::ChildOptions env;
    env.env = kMpiEnv;
    const auto r = cli::run({"generate", "--weights", i2v.weights, "--prompt", "a red panda", "--image", png.string(),
                             "--width", "48", "--height", "32", "--frames", "5", "--steps", "2", "--seed", "3",
                             "--threads", "1", "-o", (dir / "ref").string()},
                            env);
    ASSERT_EQ(r.code, 0) << r.err;
    want = io::read_image((dir / "ref" / "frame_00000.png").string(), "the reference's first frame");
  }
  const std::vector<std::string> args = {"serve",     "--weights", t2v.weights, "--weights",
                                         i2v.weights, "--data",    (dir / "data").string(), "--port", "0",
                                         "--mesh",    "cfg=2",     "--max-memory",
                                         std::to_string(static_cast<int64_t>(budget))};
  MpiServe s(dir, args, {{}, {}});
  ASSERT_TRUE(s.wait_ready());
  httplib::Client c("127.0.0.1", s.port);
  c.set_read_timeout(60, 0);

  json first = small_job(2);
  first["model"] = t2v.name;
  json v = wait_until(c, submit(c, first), finished);
  ASSERT_EQ(v["status"], "completed") << v.dump();
  EXPECT_EQ(thumbnail_diff(c, v["id"], dir), 0.0);

  std::ifstream in(png, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const httplib::MultipartFormDataItems form = {{"model", i2v.name, "", ""},  {"prompt", "a red panda", "", ""},
                                                {"size", "48x32", "", ""},    {"frames", "5", "", ""},
                                                {"steps", "2", "", ""},       {"seed", "3", "", ""},
                                                {"input_reference", bytes, "cat.png", "image/png"}};
  auto r = c.Post("/v1/videos", form);
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  const std::string id = json::parse(r->body)["id"];
  v = wait_until(c, id, finished);
  ASSERT_EQ(v["status"], "completed") << v.dump();
  EXPECT_EQ(v["result"]["size"], "32x32");
  EXPECT_EQ(thumbnail_diff(c, id, dir, &want), 0.0) << "the image-to-video job differs from vidax generate --image";

  ASSERT_EQ(kill(s.rank0_pid, SIGTERM), 0);
  EXPECT_EQ(s.wait_exit(), 0) << read_file(s.err);
  const std::string err = read_file(s.err);
  EXPECT_NE(err.find("rank 1: unloading " + t2v.name + " (rank 0's choice, to make room for " + i2v.name + ")"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("rank 1: loaded " + i2v.name), std::string::npos) << err;
  EXPECT_NE(err.find("rank 1: job " + id + ": done"), std::string::npos) << err;
}

// --job-timeout: rank 0's decision at a step, sent as a cancel, stops both ranks there; the job
// fails with job_timeout (slow_job: far more than a second of steps).
TEST(MpiServe, AJobPastItsTimeoutStopsOnBothRanks) {
  const fs::path dir = fresh_dir("mpi-serve-timeout");
  std::vector<std::string> args = common_args(dir / "data");
  args.insert(args.end(), {"--job-timeout", "1"});
  MpiServe s(dir, args, {{}, {}});
  ASSERT_TRUE(s.wait_ready());
  httplib::Client c("127.0.0.1", s.port);
  c.set_read_timeout(60, 0);
  const std::string id = submit(c, slow_job());
  const json v = wait_until(c, id, finished);
  ASSERT_EQ(v["status"], "failed") << v.dump();
  EXPECT_EQ(v["error"]["code"], "job_timeout");
  const std::string message = v["error"]["message"];
  std::smatch step;
  ASSERT_TRUE(std::regex_search(message, step, std::regex(R"(denoising step ([0-9]+)/1000)"))) << message;
  ASSERT_EQ(kill(s.rank0_pid, SIGTERM), 0);
  EXPECT_EQ(s.wait_exit(), 0) << read_file(s.err);
  const std::string err = read_file(s.err);
  EXPECT_NE(err.find("rank 1: job " + id + ": stopped (cancelled during denoising step " + step[1].str() + "/1000)"),
            std::string::npos)
      << err;
}

// One rank fails in the middle of a denoising step, inside the DiT forward (VIDAX_TEST_FAULT:
// its first collective of step 2 throws instead of being entered), while the other waits in
// that collective (sp=2: the attention's all-to-all). The waiting rank abandons it on the
// failing rank's notice, the job fails with the failing rank's message, both ranks continue on
// fresh communicators and the next job gives the single-process frame. Once with rank 1 failing
// (rank 0, the server, waits), once with rank 0 failing (rank 1 waits).
TEST(MpiServe, ARankThatFailsInsideTheModelsCollectivesFailsTheJobAndTheServerGoesOn) {
  (void)reference_frame();
  for (int failing : {1, 0}) {
    SCOPED_TRACE("failing rank " + std::to_string(failing));
    const fs::path dir = fresh_dir("mpi-serve-fault-" + std::to_string(failing));
    std::vector<std::string> args = common_args(dir / "data");
    args.back() = "sp=2";
    MpiServe s(dir, args, {{}, {}}, {"VIDAX_TEST_FAULT=" + std::to_string(failing) + ":2"});
    ASSERT_TRUE(s.wait_ready());
    httplib::Client c("127.0.0.1", s.port);
    c.set_read_timeout(60, 0);

    const std::string failed = submit(c, small_job(3));
    json v = wait_until(c, failed, finished);
    ASSERT_EQ(v["status"], "failed") << v.dump() << read_file(s.err);
    EXPECT_EQ(v["error"]["code"], "generation_failed");
    const std::string message = v["error"]["message"];
    const std::string want = "rank " + std::to_string(failing) + ": VIDAX_TEST_FAULT: rank " + std::to_string(failing) +
                             " failed on purpose inside the model's collectives at denoising step 2";
    EXPECT_EQ(message, want);

    // The next jobs run on both ranks, on the renewed communicators, with the single-process frame.
    for (int k = 0; k < 2; ++k) {
      const std::string next = submit(c, small_job(2));
      v = wait_until(c, next, finished);
      ASSERT_EQ(v["status"], "completed") << v.dump() << read_file(s.err);
      EXPECT_EQ(thumbnail_diff(c, next, dir), 0.0);
    }

    ASSERT_EQ(kill(s.rank0_pid, SIGTERM), 0);
    EXPECT_EQ(s.wait_exit(), 0) << read_file(s.err);
    const std::string err = read_file(s.err);
    EXPECT_NE(err.find("rank 1: job " + failed + ": failed: " + want), std::string::npos) << err;
    // The other rank was waiting in the collective the failing one never entered, and left it.
    const std::string waiter = failing == 1 ? "" : "rank 1: ";
    EXPECT_NE(err.find(waiter + "job " + failed + ": abandoned a collective: rank " + std::to_string(failing) +
                       " failed while this rank waited in a collective: VIDAX_TEST_FAULT"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("rank 1: rank 0 said stop"), std::string::npos) << err;
  }
}

// `vidax generate` under mpirun, one rank failing mid-step: no hang, every rank ends (MPI_Abort
// from the failing rank, main.cpp) and mpirun exits non-zero with the rank's message.
TEST(MpiServe, GenerateUnderMpirunEndsWhenOneRankFailsMidStep) {
  const fs::path dir = fresh_dir("mpi-generate-fault");
  const std::vector<std::string> args = {"generate",  "--weights", demo_weights_dir(), "--prompt", "a red panda",
                                         "--width",   "48",        "--height",         "32",       "--frames",
                                         "5",         "--steps",   "3",                "--seed",   "7",
                                         "--mesh",    "sp=2",      "-o",               (dir / "frames").string()};
  const auto t0 = std::chrono::steady_clock::now();
  MpiServe s(dir, args, {{}, {}}, {"VIDAX_TEST_FAULT=1:2"});
  const int code = s.wait_exit(120);
  EXPECT_NE(code, -1) << "still running after 120 s: " << read_file(s.err);
  EXPECT_NE(code, 0);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 120);
  const std::string err = read_file(s.err);
  EXPECT_NE(err.find("VIDAX_TEST_FAULT: rank 1 failed on purpose inside the model's collectives at denoising step 2"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(dir / "frames" / "frame_00000.png")) << "a failed run wrote frames";
}
