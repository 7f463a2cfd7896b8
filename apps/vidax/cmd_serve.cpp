// `vidax serve`: the OpenAI-shaped video API on models loaded once (docs/serve.md).
// Loads every --weights directory (text encoder resident), opens the job
// database in --data, and answers until SIGINT or SIGTERM: then it stops taking
// requests, the running job stops at its next step and goes back to the queue,
// and the process exits 0. A second signal kills it at once.
// Under mpirun with --mesh, rank 0 does all that and every other rank follows it
// (serve::Follower): it computes each job with its part of the mesh, no HTTP.
#include <cmath>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "commands.h"
#include "core/error.h"
#ifdef VIDAX_HAVE_SERVE
#include "dist/mesh.h"
#include "pipeline/memory_plan.h"
#include "serve/follower.h"
#include "serve/server.h"
#endif

namespace vidax::app {

#ifndef VIDAX_HAVE_SERVE
// Built without `vidax serve` (VIDAX_SERVE=OFF or VIDAX_MINIMAL): the command exists and says so.
Command add_serve(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("serve", "HTTP video API (not in this build: VIDAX_SERVE=OFF)");
  sub->allow_extras();
  return {sub, []() -> int {
            throw Error("vidax serve: this vidax was built without it (VIDAX_SERVE=OFF or VIDAX_MINIMAL: no "
                        "cpp-httplib, no SQLite); rebuild with -DVIDAX_SERVE=ON");
          }};
}
#else

namespace {

struct ServeArgs {
  std::vector<std::string> weights, models;
  std::string host = "127.0.0.1", data = "vidax-data", api_key, api_key_file, lora_dir, lora_mode = "auto";
  int port = 8080;
  int max_queued = 100;
  double max_body_mb = 32;  // an input_reference image of a 720p video is a few MiB as PNG
  double job_timeout = 0;
  std::string max_memory;  // "" = every model loaded at start, for good
  std::string mesh;        // under mpirun: the device mesh every job runs on
};

std::string g_rank_prefix;  // "rank N: " on the ranks other than 0 of an mpirun job
void note(const std::string& s) { std::fprintf(stderr, "vidax serve: %s%s\n", g_rank_prefix.c_str(), s.c_str()); }

// SIGINT/SIGTERM: the handler only writes the signal number to a pipe; a thread reads it and
// drains the server (no locks or allocation in the handler). One-shot (SA_RESETHAND): a second
// signal kills the process. Not sigwait: OpenBLAS starts its threads before main, with the
// signals unblocked, so a blocked mask would not cover them.
int g_signal_pipe[2] = {-1, -1};
extern "C" void on_serve_stop_signal(int sig) {
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = write(g_signal_pipe[1], &b, 1);
}
void install_stop_handlers() {
  VIDAX_CHECK(pipe(g_signal_pipe) == 0, "cannot create the signal pipe");
  struct sigaction sa {};
  sa.sa_handler = on_serve_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int run_serve(const ServeArgs& a) {
  VIDAX_CHECK(a.models.empty() || a.models.size() == a.weights.size(),
              "give one --model per --weights (or none, to detect each): got " << a.weights.size() << " --weights and "
                                                                              << a.models.size() << " --model");
  VIDAX_CHECK(a.api_key.empty() || a.api_key_file.empty(), "give --api-key or --api-key-file, not both");
  serve::ServeOptions opt;
  opt.host = a.host;
  opt.port = a.port;
  opt.data_dir = a.data;
  opt.api_key = a.api_key;
  opt.lora_dir = a.lora_dir;
  if (!a.api_key_file.empty()) {
    std::ifstream in(a.api_key_file);
    VIDAX_CHECK(in && std::getline(in, opt.api_key) && !opt.api_key.empty(),
                "--api-key-file " << a.api_key_file << ": cannot read a key from its first line");
  }
  VIDAX_CHECK(a.port >= 0 && a.port <= 65535, "--port " << a.port << ": must be 0 to 65535");
  VIDAX_CHECK(a.max_queued >= 1, "--max-queue " << a.max_queued << ": must be at least 1");
  VIDAX_CHECK(a.max_body_mb > 0, "--max-body-mb " << a.max_body_mb << ": must be positive");
  opt.max_queued = a.max_queued;
  opt.max_body_bytes = static_cast<size_t>(a.max_body_mb * 1024 * 1024);
  VIDAX_CHECK(a.job_timeout >= 0 && std::isfinite(a.job_timeout),
              "--job-timeout " << a.job_timeout << ": must be a number of seconds >= 0 (0: none)");
  opt.job_timeout_seconds = a.job_timeout;
  if (!a.max_memory.empty()) opt.memory_budget_bytes = pipeline::parse_memory_size(a.max_memory, "--max-memory");
  opt.log = note;

  // Under mpirun: rank 0 serves and every rank computes each job with its part of the mesh.
  dist::Communicator& world = dist::world();
  VIDAX_CHECK(world.size() == 1 || !a.mesh.empty(),
              "launched with " << world.size() << " ranks but no --mesh (e.g. --mesh cfg=2 or sp=" << world.size()
                               << "); without one every rank would serve on its own");
  // A rank that fails inside the model's collectives wakes the others, and the server goes on
  // (docs/serve.md, "Under MPI"): on every rank, before the mesh's groups are made.
  if (world.size() > 1) world.enable_failure_recovery();
  std::unique_ptr<dist::Mesh> mesh;
  if (!a.mesh.empty()) mesh = std::make_unique<dist::Mesh>(world, dist::parse_mesh(a.mesh));
  if (world.rank() != 0) g_rank_prefix = "rank " + std::to_string(world.rank()) + ": ";

  std::vector<serve::ServedModel> models;
  // Resolved here (weights checked, nothing loaded); the server loads what is to be resident.
  for (size_t i = 0; i < a.weights.size(); ++i)
    models.push_back(serve::load_served_model(a.weights[i], a.models.empty() ? "" : a.models[i], note,
                                              translate::parse_lora_mode(a.lora_mode), /*load_now=*/false, mesh.get()));
  if (world.rank() != 0) {
    // A follower stops when rank 0 says so, after its drain; mpirun sends a signal to every rank,
    // so this one is ignored here (mpirun kills a rank that outlives its job).
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    serve::Follower follower(opt, std::move(models), world);
    follower.run();
    return 0;
  }
  if (opt.host != "127.0.0.1" && opt.host != "localhost" && opt.host != "::1")
    note("warning: listening on " + opt.host + ", reachable from other machines" +
         (opt.api_key.empty() ? " without an API key (--api-key)" : ""));
  install_stop_handlers();
  if (world.size() > 1) opt.ranks = &world;
  serve::Server server(opt, std::move(models));
  const int port = server.bind();
  std::printf("vidax serve: http://%s:%d/\n", opt.host.c_str(), port);
  if (world.size() > 1)
    std::printf("vidax serve: rank 0 of %d (pid %d) serves; every rank computes on the mesh %s\n", world.size(),
                static_cast<int>(getpid()), mesh->shape().str().c_str());
  std::fflush(stdout);

  std::thread waiter([&server] {
    unsigned char sig = 0;
    while (read(g_signal_pipe[0], &sig, 1) < 0 && errno == EINTR) {
    }
    if (sig == 0) return;  // the pipe was closed: serve() ended on its own
    note(std::string("got ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + "; draining (a second one kills the server)");
    server.stop();
  });
  server.serve();  // returns once stop() stopped the listener
  close(g_signal_pipe[1]);  // wakes the waiter when serve() ended without a signal
  waiter.join();
  return 0;
}

}  // namespace

Command add_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand("serve", "Serve OpenAI's Videos API (POST /v1/videos, ...) on loaded models");
  sub->add_option("--weights", a->weights, "Checkpoint directory to load and serve (repeat for several models)")
      ->required();
  sub->add_option("--model", a->models, "The variant of each --weights, in order (default: detected)");
  sub->add_option("--host", a->host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", a->port, "Port to listen on (0: any free one, printed)")->capture_default_str();
  sub->add_option("--data", a->data, "Folder for the job database and the videos")->capture_default_str();
  sub->add_option("--api-key", a->api_key, "Require `Authorization: Bearer KEY` on /v1/* and /metrics");
  sub->add_option("--api-key-file", a->api_key_file, "Read the API key from this file's first line");
  sub->add_option("--lora-dir", a->lora_dir,
                  "Folder of LoRA files a request's `lora` may name (only inside it; default: none accepted)");
  sub->add_option("--lora-mode", a->lora_mode,
                  "How a job's LoRAs reach the DiT: merge | runtime (beside the weights, in each Linear) | auto "
                  "(runtime for quantized weights); docs/lora.md")
      ->capture_default_str();
  sub->add_option("--max-queue", a->max_queued, "Queued jobs before POST answers 429")->capture_default_str();
  sub->add_option("--max-body-mb", a->max_body_mb, "Largest request body in MiB (413 above)")->capture_default_str();
  sub->add_option("--job-timeout", a->job_timeout,
                  "Seconds a job may run before it fails with code job_timeout (checked at each step; 0: none)")
      ->capture_default_str();
  sub->add_option("--max-memory", a->max_memory,
                  "Memory the served models' weights may take together (e.g. 20G): the models that fit load at "
                  "start, another loads when a job needs it, the least recently used unloaded first (default: all "
                  "loaded at start)");
  sub->add_option("--mesh", a->mesh,
                  "Device mesh under mpirun, e.g. cfg=2 or sp=2: rank 0 serves HTTP, every rank computes each job "
                  "(docs/serve.md, \"Under MPI\")");
  return {sub, [a]() -> int { return run_serve(*a); }};
}

#endif  // VIDAX_HAVE_SERVE

}  // namespace vidax::app
