// What the serve tests share: the tiny demo model (written and loaded once per
// process), a scratch folder, a server on an ephemeral loopback port, and an
// HTTP client with helpers that poll a job to a status.
#pragma once
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "engine/families.h"
#include "io/checkpoint.h"
#include "serve/server.h"

namespace vidax::test {

namespace fs = std::filesystem;
using nlohmann::json;

inline const fs::path& serve_scratch() {
  struct Root {
    fs::path path;
    Root() {
      path = fs::temp_directory_path() / ("vidax_test_serve_" + std::to_string(::getpid()));
      fs::remove_all(path);
      fs::create_directories(path);
    }
    ~Root() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static Root root;
  return root.path;
}

inline fs::path fresh_dir(const std::string& name) {
  const fs::path d = serve_scratch() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

inline const std::string& demo_weights_dir() {
  static const std::string dir = [] {
    const fs::path d = serve_scratch() / "demo-weights";
    pipeline::DemoOptions o;
    o.out_dir = d.string();
    o.spiece_model = std::string(VIDAX_TEST_DATA_DIR) + "/text/data/tiny_spiece.model";
    engine::family_of_model("wan2.1-tiny-demo").make_demo("wan2.1-tiny-demo", o);
    return d.string();
  }();
  return dir;
}

// Loaded once; every server of the suite shares it (the worker is the only user at a time:
// one server runs jobs at once in these tests).
inline const serve::ServedModel& demo_model() {
  static const serve::ServedModel m = serve::load_served_model(demo_weights_dir(), "", nullptr);
  return m;
}

// The tiny image-to-video demo (tasks: i2v), written and loaded once per process.
inline const serve::ServedModel& i2v_demo_model() {
  static const serve::ServedModel m = [] {
    const fs::path d = serve_scratch() / "i2v-demo";
    pipeline::DemoOptions o;
    o.out_dir = d.string();
    o.spiece_model = std::string(VIDAX_TEST_DATA_DIR) + "/text/data/tiny_spiece.model";
    engine::family_of_model("wan2.1-i2v-tiny-demo").make_demo("wan2.1-i2v-tiny-demo", o);
    return serve::load_served_model(d.string(), "", nullptr);
  }();
  return m;
}

// A LoRA (ComfyUI keys) for the demo DiT on block 0's self-attention q and cross-attention k:
// the second changes what the prompt cache holds (the text's K), so a switch that kept the
// cache would show. `amp` scales it.
inline void write_demo_lora(const fs::path& path, float amp = 0.5f) {
  json model;
  std::ifstream(fs::path(demo_weights_dir()) / "vidax_model.json") >> model;
  const int64_t dim = model.at("dit").at("dim").get<int64_t>();
  auto ramp = [amp](int64_t rows, int64_t cols, float phase) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < v.size(); ++i) v[i] = amp * std::sin(0.37f * static_cast<float>(i) + phase);
    return Tensor::from_f32(v, {rows, cols});
  };
  std::map<std::string, Tensor> t;
  for (const char* m : {"blocks.0.self_attn.q", "blocks.0.cross_attn.k"}) {
    const std::string k = std::string("diffusion_model.") + m;
    t[k + ".lora_down.weight"] = ramp(4, dim, 0.1f);
    t[k + ".lora_up.weight"] = ramp(dim, 4, 0.7f);
    t[k + ".alpha"] = Tensor::from_f32({4.0f}, {});
  }
  fs::create_directories(path.parent_path());
  io::save_safetensors(path.string(), t);
}

// A small, quick job on the demo model (48x32, 5 frames).
inline json small_job(int steps = 2) {
  return {{"prompt", "a red panda"}, {"size", "48x32"}, {"frames", 5}, {"steps", steps}, {"seed", 7}};
}

struct TestServer {
  std::unique_ptr<serve::Server> server;
  std::unique_ptr<httplib::Client> client;
  int port = 0;
  httplib::Headers auth;

  explicit TestServer(const fs::path& data, serve::ServeOptions opt = {},
                      std::vector<serve::ServedModel> models = {demo_model()}) {
    opt.host = "127.0.0.1";
    opt.port = 0;
    opt.data_dir = data.string();
    server = std::make_unique<serve::Server>(opt, std::move(models));
    port = server->start();
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
    client->set_read_timeout(60, 0);
    if (!opt.api_key.empty()) auth = {{"Authorization", "Bearer " + opt.api_key}};
  }

  httplib::Result post(const json& body) { return client->Post("/v1/videos", auth, body.dump(), "application/json"); }
  httplib::Result get(const std::string& path) { return client->Get(path.c_str(), auth); }
  httplib::Result del(const std::string& path) { return client->Delete(path.c_str(), auth); }

  std::string submit(const json& body) {
    auto r = post(body);
    EXPECT_TRUE(r) << "no answer";
    if (!r) return "";
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body).value("id", "");
  }

  json video(const std::string& id) {
    auto r = get("/v1/videos/" + id);
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    return r && r->status == 200 ? json::parse(r->body) : json::object();
  }

  // Polls until the job's status is `status` (or a finished one), at most `seconds`.
  json wait_for(const std::string& id, const std::string& status, double seconds = 60) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    json v;
    while (std::chrono::steady_clock::now() < deadline) {
      v = video(id);
      const std::string s = v.value("status", "");
      if (s == status || s == "completed" || s == "failed" || s == "cancelled") return v;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "job " << id << " not " << status << " after " << seconds << " s: " << v.dump();
    return v;
  }
};

}  // namespace vidax::test
