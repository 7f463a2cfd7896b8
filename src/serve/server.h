// `vidax serve`: OpenAI's Videos API over HTTP (docs/serve.md) on models held
// loaded (all of them, or those a memory budget allows, the others loaded when a
// job needs them). One worker thread runs the queued jobs in order; the jobs live
// in SQLite in the data folder (job_store.h), the videos under <data>/videos/.
//
// Routes: POST/GET /v1/videos, GET/DELETE /v1/videos/{id},
// GET /v1/videos/{id}/content[?variant=thumbnail], GET /v1/videos/{id}/events
// (server-sent events), GET /v1/models, GET /v1/loras, GET /health, GET /metrics, GET / (the page),
// GET /openapi.json (docs/openapi.json, the API's description).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "serve/video_request.h"

namespace vidax::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 8080;                 // 0 = any free port (tests)
  std::string data_dir;            // the job database and the videos; created when missing
  std::string api_key;             // non-empty: /v1/* and /metrics need `Authorization: Bearer <key>`
  size_t max_body_bytes = 32 << 20;  // larger request bodies get 413 (an uploaded image fits)
  double job_timeout_seconds = 0;    // > 0: a job running longer fails (code job_timeout) at its next step
  int max_queued = 100;             // more queued jobs get 429 with Retry-After
  std::string lora_dir;             // the folder `lora` entries resolve in ("" = no LoRAs accepted)
  // > 0 (`--max-memory`): the served models' weights together stay within this many bytes. The
  // models that fit are loaded at start, in order; a job for another one loads it, first unloading
  // the least recently used models until it fits. 0: every model loaded at start, for good.
  double memory_budget_bytes = 0;
  std::function<void(const std::string&)> log;  // one line per event (nullptr: quiet)
  // Under mpirun (docs/serve.md, "Under MPI"): the world, this process being rank 0. Every job is
  // then sent to the other ranks (their serve::Follower), which compute it with this one; its
  // cancel, errors and the models loaded are agreed with them. Null or one rank: alone.
  dist::Communicator* ranks = nullptr;
};

class Server {
 public:
  // Opens the database and recovers it: jobs left in_progress by a dead server become failed.
  // Loads the models that are to be resident at start (all of them without a memory budget);
  // throws naming a model whose weights alone exceed the budget.
  Server(ServeOptions opt, std::vector<ServedModel> models);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port (throws naming them when it cannot) and starts the worker; returns the port.
  int bind();
  // Answers requests until stop(); call after bind().
  void serve();
  // bind() + serve() on a thread of its own (tests); returns the port.
  int start();
  // Stops taking requests; the running job stops at its next step boundary and goes back to
  // the queue (it runs again, from the start, on the next start); waits for the worker. Idempotent,
  // callable from any thread (the CLI's signal thread).
  void stop();

  // Every route the server answers, as the OpenAPI document (docs/openapi.json) writes it:
  // {"GET", "/v1/videos/{video_id}"}, ... (tests check the two agree).
  std::vector<std::pair<std::string, std::string>> routes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The page at `/` (web_page.cpp).
const std::string& web_page_html();
// docs/openapi.json, built in (served at /openapi.json).
const std::string& openapi_json();

}  // namespace vidax::serve
