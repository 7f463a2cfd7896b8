// `vidax serve`'s queue overhead per job (issue 23: target under 5 ms besides the generation):
// an in-process server on a loopback port with the tiny demo model, one-step 48x32x5 jobs
// submitted one after the other and polled without pause. Prints the medians (and maxima) of
//   POST answered             parse, validate, memory plan, SQLite insert, the 200
//   submit -> in_progress     the POST plus the worker claiming the job, as a poller sees it
//   finish -> completed seen  from the worker's "completed" log line (it follows the store's
//                             finish by microseconds) to a poller reading `completed`
// Overhead per job = the last two. No peer runs this measurement: the figure is absolute,
// against the target (docs/benchmarks.md).
//
//   build/bench/bench_serve [--weights DIR] [--jobs N]
// Without --weights it writes the wan2.1-tiny-demo model (random weights) to a scratch folder.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <unistd.h>

#include "engine/families.h"
#include "serve/server.h"
#include "serve/video_request.h"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string status_of(httplib::Client& c, const std::string& id) {
  auto r = c.Get(("/v1/videos/" + id).c_str());
  if (!r || r->status != 200) throw std::runtime_error("GET /v1/videos/" + id + " failed");
  return json::parse(r->body).at("status").get<std::string>();
}

}  // namespace

int main(int argc, char** argv) {
  std::string weights;
  int jobs = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--weights") && i + 1 < argc) weights = argv[++i];
    else if (!std::strcmp(argv[i], "--jobs") && i + 1 < argc) jobs = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--weights DIR] [--jobs N]\n", argv[0]);
      return 2;
    }
  }
  const fs::path scratch = fs::temp_directory_path() / ("vidax_bench_serve_" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  try {
    if (weights.empty()) {
      vidax::pipeline::DemoOptions o;
      o.out_dir = (scratch / "demo").string();
      o.spiece_model = std::string(VIDAX_SOURCE_DIR) + "/tests/text/data/tiny_spiece.model";
      vidax::engine::family_of_model("wan2.1-tiny-demo").make_demo("wan2.1-tiny-demo", o);
      weights = o.out_dir;
    }
    std::mutex mu;
    std::map<std::string, Clock::time_point> finished;
    vidax::serve::ServeOptions opt;
    opt.host = "127.0.0.1";
    opt.port = 0;
    opt.data_dir = (scratch / "data").string();
    opt.log = [&](const std::string& line) {
      const auto now = Clock::now();
      if (line.find(": completed in ") == std::string::npos) return;
      std::lock_guard<std::mutex> lock(mu);
      finished[line.substr(4, line.find(':') - 4)] = now;  // "job <id>: completed in ..."
    };
    std::vector<vidax::serve::ServedModel> models;
    models.push_back(vidax::serve::load_served_model(weights, "", nullptr));
    vidax::serve::Server server(opt, std::move(models));
    const int port = server.start();
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60, 0);
    const json job = {{"prompt", "a red panda"}, {"size", "48x32"}, {"frames", 5}, {"steps", 1}, {"seed", 7}};
    std::vector<double> post_ms, start_ms, visible_ms;
    for (int i = 0; i < jobs; ++i) {
      const auto t0 = Clock::now();
      auto r = c.Post("/v1/videos", job.dump(), "application/json");
      if (!r || r->status != 200) throw std::runtime_error("POST /v1/videos: " + (r ? r->body : std::string("no answer")));
      post_ms.push_back(ms_since(t0));
      const std::string id = json::parse(r->body).at("id");
      while (status_of(c, id) == "queued") {
      }
      start_ms.push_back(ms_since(t0));
      for (std::string s; (s = status_of(c, id)) != "completed";)
        if (s == "failed" || s == "cancelled") throw std::runtime_error("job " + id + " " + s);
      const auto seen = Clock::now();
      Clock::time_point fin{};
      for (int k = 0; k < 10000 && fin == Clock::time_point{}; ++k) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (finished.count(id)) fin = finished[id];
        }
        if (fin == Clock::time_point{}) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (fin == Clock::time_point{}) throw std::runtime_error("job " + id + ": no completed line in the log");
      visible_ms.push_back(std::max(0.0, std::chrono::duration<double, std::milli>(seen - fin).count()));
    }
    server.stop();
    for (auto* v : {&post_ms, &start_ms, &visible_ms}) std::sort(v->begin(), v->end());
    const size_t m = post_ms.size() / 2;
    std::printf("jobs %d (one step, 48x32, 5 frames, tiny demo), medians (max):\n", jobs);
    std::printf("  POST answered            %7.2f ms (%.2f)\n", post_ms[m], post_ms.back());
    std::printf("  submit -> in_progress    %7.2f ms (%.2f)\n", start_ms[m], start_ms.back());
    std::printf("  finish -> completed seen %7.2f ms (%.2f)\n", visible_ms[m], visible_ms.back());
    std::printf("queue overhead per job: %.2f ms (target < 5 ms)\n", start_ms[m] + visible_ms[m]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_serve: %s\n", e.what());
    fs::remove_all(scratch);
    return 1;
  }
  fs::remove_all(scratch);
  return 0;
}
