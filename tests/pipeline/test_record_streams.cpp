// Record and replay of runs with several latent streams (pipeline/record.h, format version 2) on a
// stand-in family that owns its run (Parts::run, as LTX-2's): the index and files, an exact
// round trip, a foreign draw injected in the order drawn, a perturbed stream stopping the replay at
// its step and naming the stream, another stream set or a record of one latent refused naming
// both, and the version-1 records (one latent) still read and replayed as before.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "core/error.h"
#include "core/rng.h"
#include "error_of.h"
#include "io/checkpoint.h"
#include "pipeline/generate.h"
#include "pipeline/record.h"
#include "scratch.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::pipeline;
using test::error_of;

namespace {

// A stand-in family run with two streams, "video" [6, 4] and "audio" [3, 4]: the video's noise
// drawn first, then the audio's, from one generator seeded by the request; each step mixes them
// (x <- 0.9 x + 0.1 * mean of the other stream + 0.01 * step), so a change in one stream moves
// both later; the timesteps are 1 - i / steps. `names` renames the streams (another stream set).
Parts stream_parts(std::vector<std::string> names = {"video", "audio"}) {
  Parts p;
  p.geometry.z_dim = 16;
  p.run = [names](const Request& q, const Events& ev, bool) {
    TorchGenerator gen(q.seed);
    auto draw = [&](const std::string& s, const Shape& shape) {
      Tensor t = gen.randn(shape);
      return ev.on_stream_noise ? ev.on_stream_noise(s, t) : t;
    };
    Tensor v = draw(names[0], {6, 4}).clone();
    Tensor a = draw(names[1], {3, 4}).clone();
    Result res;
    for (int64_t i = 0; i < q.steps; ++i) {
      const double t = 1.0 - static_cast<double>(i) / static_cast<double>(q.steps);
      res.timesteps.push_back(t);
      auto mean = [](const Tensor& x) {
        double m = 0;
        for (float f : x.to_f32_vector()) m += f;
        return m / static_cast<double>(x.numel());
      };
      const double mv = mean(v), ma = mean(a);
      v = ops::add_scalar(ops::scale(v, 0.9), 0.1 * ma + 0.01 * static_cast<double>(i + 1));
      a = ops::add_scalar(ops::scale(a, 0.9), 0.1 * mv + 0.01 * static_cast<double>(i + 1));
      if (ev.on_stream_latents) ev.on_stream_latents(static_cast<int>(i + 1), t, {{names[0], v}, {names[1], a}});
    }
    res.latents = v.reshape({1, 1, 6, 4});
    res.taps["audio_latent"] = a.reshape({3, 4});
    if (ev.on_stream_final) ev.on_stream_final({{names[0], res.latents}, {names[1], res.taps["audio_latent"]}});
    return res;
  };
  return p;
}

Request request(int64_t steps = 3) {
  Request r;
  r.prompt = "cond";
  r.frames = 1;
  r.height = 16;
  r.width = 16;
  r.steps = steps;
  r.seed = 11;
  r.guidance = 3.0;
  r.shift = 1.0;
  r.sampler = "euler";
  return r;
}

RecordHeader header(const Request& r) {
  RecordHeader h;
  h.producer = {{"name", "test"}};
  h.model = "standin-av";
  h.family = "test";
  h.precision = "fp32";
  h.request = request_to_json(r);
  return h;
}

fs::path fresh(const std::string& name) {
  static const fs::path root = test::scratch_dir("record_streams");
  fs::remove_all(root / name);
  return root / name;
}

Result record_run(const fs::path& dir, const Request& r, const Parts& parts = stream_parts(), Events ev = {}) {
  RecordWriter w(dir.string());
  w.attach(ev);
  Result res = run_generation(parts, r, ev, false);
  w.commit(header(r), res);
  return res;
}

ReplayReport replay(const fs::path& dir, const Parts& parts = stream_parts(), double tol = 1e-5) {
  const Record rec = read_record(dir.string());
  Request r = record_request(rec, "");
  Replayer rp(rec, r, tol);
  Events ev;
  rp.attach(ev);
  const Result res = run_generation(parts, r, ev, false);
  rp.finish(res);
  return rp.report();
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}
void write_json(const fs::path& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(1); }

void rewrite(const fs::path& file, const std::string& name, const Tensor& t) {
  io::Checkpoint c = io::Checkpoint::open(file.string());
  std::map<std::string, Tensor> all;
  for (const auto& n : c.names()) all[n] = c.get(n).clone();
  all[name] = t;
  io::save_safetensors(file.string(), all);
}

}  // namespace

TEST(RecordStreams, WritesVersionTwoWithEveryStream) {
  const fs::path d = fresh("index");
  const Result res = record_run(d, request());
  const nlohmann::json j = read_json(d / "record.json");
  EXPECT_EQ(j["format_version"], 2);
  ASSERT_EQ(j["streams"].size(), 2u);
  EXPECT_EQ(j["streams"][0]["name"], "video");
  EXPECT_EQ(j["streams"][0]["shape"], nlohmann::json({6, 4}));
  EXPECT_EQ(j["streams"][0]["final_shape"], nlohmann::json({1, 1, 6, 4}));
  EXPECT_EQ(j["streams"][1]["name"], "audio");
  // The draws in the order the run made them: video, then audio.
  ASSERT_EQ(j["noise"].size(), 2u);
  EXPECT_EQ(j["noise"][0]["stream"], "video");
  EXPECT_EQ(j["noise"][1]["stream"], "audio");
  EXPECT_EQ(j["timesteps"].get<std::vector<double>>(), res.timesteps);
  EXPECT_EQ(j["steps"][1]["latents"]["audio"]["file"], "step_0002.safetensors");
  EXPECT_FALSE(j.contains("latent_shape"));
  const Record rec = read_record(d.string());
  ASSERT_TRUE(rec.has_streams());
  EXPECT_EQ(rec.stream_names(), "video, audio");
  TorchGenerator g(11);
  const Tensor v = g.randn({6, 4}), a = g.randn({3, 4});
  EXPECT_EQ(rec.stream_noise[0].second.to_f32_vector(), v.to_f32_vector());
  EXPECT_EQ(rec.stream_noise[1].second.to_f32_vector(), a.to_f32_vector());
  EXPECT_EQ(rec.stream_final.at("audio").to_f32_vector(), res.taps.at("audio_latent").to_f32_vector());
  EXPECT_EQ(rec.stream_latents.back().at("video").to_f32_vector(), res.latents.to_f32_vector());
}

TEST(RecordStreams, ReplayOfItsOwnRecordIsExactPerStepAndStream) {
  const fs::path d = fresh("roundtrip");
  record_run(d, request());
  const ReplayReport rep = replay(d);
  ASSERT_EQ(rep.steps.size(), 6u);  // 3 steps x 2 streams
  for (const auto& s : rep.steps) {
    EXPECT_EQ(s.max_abs, 0.0) << s.step << " " << s.stream;
    EXPECT_TRUE(s.ok);
  }
  EXPECT_EQ(rep.steps[0].stream, "video");
  EXPECT_EQ(rep.steps[1].stream, "audio");
  ASSERT_EQ(rep.finals.size(), 2u);
  EXPECT_EQ(rep.finals[1].stream, "audio");
  EXPECT_EQ(rep.final->max_abs, 0.0);
  EXPECT_TRUE(rep.noise_matches_seed);
  EXPECT_EQ(rep.to_json()["ok"], true);
  EXPECT_EQ(rep.to_json()["steps"][1]["stream"], "audio");
}

// Another generator's draws (a CUDA record): injected in place of the run's own, both streams.
TEST(RecordStreams, ForeignDrawsAreInjected) {
  const fs::path d = fresh("foreign");
  TorchGenerator other(999);
  Events ev;
  ev.on_stream_noise = [&](const std::string&, const Tensor& t) { return other.randn(t.shape()); };
  const Result foreign = record_run(d, request(), stream_parts(), ev);
  const ReplayReport rep = replay(d);
  EXPECT_FALSE(rep.noise_matches_seed);
  for (const auto& s : rep.steps) EXPECT_EQ(s.max_abs, 0.0) << s.step << " " << s.stream;
  // Control: the seed's own draws give other latents.
  const Result own = run_generation(stream_parts(), request(), {}, false);
  EXPECT_NE(own.latents.to_f32_vector(), foreign.latents.to_f32_vector());
}

TEST(RecordStreams, PerturbedStreamStopsTheReplayAtItsStepNamingIt) {
  const fs::path d = fresh("perturbed");
  record_run(d, request(4));
  const Record rec = read_record(d.string());
  rewrite(d / "step_0003.safetensors", "audio", ops::scale(rec.stream_latents[2].at("audio"), 1.0001));
  const Record rec2 = read_record(d.string());
  Request r = record_request(rec2, "");
  Replayer rp(rec2, r, 1e-5);
  Events ev;
  rp.attach(ev);
  const std::string e = error_of([&] { run_generation(stream_parts(), r, ev, false); });
  EXPECT_NE(e.find("replay diverged at step 3/4"), std::string::npos) << e;
  EXPECT_NE(e.find("the audio latent's rel_l2"), std::string::npos) << e;
  const ReplayReport& rep = rp.report();
  EXPECT_EQ(rep.diverged_at, 3);
  ASSERT_EQ(rep.steps.size(), 6u);  // both streams of step 3 measured, then stopped
  EXPECT_TRUE(rep.steps[4].ok);     // step 3 video
  EXPECT_FALSE(rep.steps[5].ok);    // step 3 audio
  EXPECT_NEAR(rep.steps[5].rel_l2, 1e-4, 1e-6);
  // A looser bound lets it through; the later steps run from the engine's own latents: exact.
  const ReplayReport loose = replay(d, stream_parts(), 1e-3);
  EXPECT_EQ(loose.diverged_at, 0);
  EXPECT_EQ(loose.steps[7].max_abs, 0.0);
}

// A record of another stream set, a record of one latent replayed by a run of streams, and the
// reverse: each refused naming what the record holds and what the run has.
TEST(RecordStreams, AnotherStreamSetOrOneLatentIsRefusedNamingBoth) {
  const fs::path d = fresh("set");
  record_run(d, request());
  const std::string other = error_of([&] { replay(d, stream_parts({"video", "sound"})); });
  EXPECT_NE(other.find("draw 2 of this run is the sound noise, the record's is the audio noise"), std::string::npos)
      << other;
  // A stream renamed in the whole index: refused at the first step naming both sets.
  {
    nlohmann::json j = read_json(d / "record.json");
    const fs::path e = fresh("set_edit");
    fs::copy(d, e, fs::copy_options::recursive);
    j["streams"][1]["name"] = "sound";
    j["noise"][1]["stream"] = "sound";
    for (auto& s : j["steps"]) s["latents"]["sound"] = s["latents"]["audio"], s["latents"].erase("audio");
    j["final"]["sound"] = j["final"]["audio"];
    j["final"].erase("audio");
    write_json(e / "record.json", j);
    const std::string err = error_of([&] { replay(e); });
    EXPECT_NE(err.find("draw 2 of this run is the audio noise, the record's is the sound noise (streams video, sound)"),
              std::string::npos)
        << err;
  }
  // One latent (a generic-loop run) against a record of streams.
  Parts loop;
  loop.encode_prompt = [](const std::string&) {
    EncodedPrompt e;
    e.context = Tensor::zeros({2, 4}, DType::F32);
    return e;
  };
  loop.predict = [](const DenoiseInput& in) { return ops::scale(in.x, 0.5); };
  const std::string one = error_of([&] { replay(d, loop); });
  EXPECT_NE(one.find("the record holds the streams video, audio (format_version 2) but this run has one latent"),
            std::string::npos)
      << one;
  // A record of one latent (version 1) replayed by a run of streams.
  const fs::path v1 = fresh("v1");
  {
    RecordWriter w(v1.string());
    Events ev;
    w.attach(ev);
    Request r = request();
    r.sampler = "unipc";
    r.shift = 5.0;
    r.guidance = 1.0;
    const Result res = run_generation(loop, r, ev, false);
    w.commit(header(r), res);
  }
  const Record rec1 = read_record(v1.string());
  EXPECT_FALSE(rec1.has_streams());
  Request r1 = record_request(rec1, "");
  Replayer rp(rec1, r1, 1e-5);
  Events ev;
  rp.attach(ev);
  const std::string rev = error_of([&] { run_generation(stream_parts(), r1, ev, false); });
  EXPECT_NE(rev.find("the record holds one latent (format_version 1) but this run has the streams video"),
            std::string::npos)
      << rev;
}

// Version-1 records (one latent: the Wan loop's, and the official WanT2V.generate's committed
// ones) read as before: no streams, the same fields; a one-latent run still writes version 1.
TEST(RecordStreams, VersionOneRecordsStillReadAndOneLatentRunsWriteThem) {
  for (const char* name : {"wan_record_tiny", "wan_record_tiny_dpmpp"}) {
    const Record rec = read_record(std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/" + name);
    EXPECT_FALSE(rec.has_streams()) << name;
    EXPECT_EQ(rec.index["format_version"], 1) << name;
    EXPECT_EQ(rec.latent_shape, Shape({16, 2, 4, 6})) << name;
    EXPECT_EQ(rec.latents.size(), rec.timesteps.size()) << name;
    EXPECT_TRUE(rec.final_latents.defined()) << name;
    EXPECT_EQ(rec.stream_names(), "one latent");
  }
  const std::string bad = error_of([&] {
    const fs::path d = fresh("v9");
    fs::copy(std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/wan_record_tiny", d, fs::copy_options::recursive);
    nlohmann::json j = read_json(d / "record.json");
    j["format_version"] = 3;
    write_json(d / "record.json", j);
    read_record(d.string());
  });
  EXPECT_NE(bad.find("format_version 3; this vidax reads version 1 (one latent) and 2 (several streams)"),
            std::string::npos)
      << bad;
}

TEST(RecordStreams, BadStreamIndexesHaveClearErrors) {
  const fs::path good = fresh("good");
  record_run(good, request());
  struct Edit {
    std::function<void(nlohmann::json&)> edit;
    std::string message;
  };
  const std::vector<Edit> edits = {
      {[](nlohmann::json& j) { j["streams"] = nlohmann::json::array(); }, "'streams' is empty"},
      {[](nlohmann::json& j) { j["streams"][1]["name"] = "video"; }, "the stream 'video' is listed twice"},
      {[](nlohmann::json& j) { j["streams"][0]["shape"] = {6, 5}; },
       "the video noise (noise.safetensors:video) is [6, 4], the record's latent_shape is [6, 5]"},
      {[](nlohmann::json& j) { j["noise"].erase(1); }, "'noise' holds 1 draws for 2 streams"},
      {[](nlohmann::json& j) { j["noise"][1]["stream"] = "sound"; },
       "'noise' names the stream 'sound', which 'streams' does not list (video, audio)"},
      {[](nlohmann::json& j) { j["steps"][1]["latents"].erase("audio"); }, "step 2's latents has no 'audio' latent"},
      {[](nlohmann::json& j) { j["steps"][0]["noise"] = {{"file", "noise.safetensors"}, {"tensor", "video"}}; },
       "step 1 holds a sampler draw"},
      {[](nlohmann::json& j) { j["final"]["audio"]["tensor"] = "video"; },
       "the final latents (audio) (final.safetensors:video) is [1, 1, 6, 4]"},
  };
  int i = 0;
  for (const auto& e : edits) {
    const fs::path d = fresh("edit" + std::to_string(i++));
    fs::copy(good, d, fs::copy_options::recursive);
    nlohmann::json j = read_json(d / "record.json");
    e.edit(j);
    write_json(d / "record.json", j);
    const std::string err = error_of([&] { read_record(d.string()); });
    EXPECT_NE(err.find(e.message), std::string::npos) << err;
  }
}

// The writer refuses what no replay could take: a draw of no stream, a stream drawn twice, a run
// that reports one latent and streams.
TEST(RecordStreams, TheWriterRefusesDrawsTheStepsDoNotMatch) {
  Parts extra = stream_parts();
  const Parts::Run inner = extra.run;
  extra.run = [inner](const Request& q, const Events& ev, bool d) {
    (void)ev.on_stream_noise("depth", Tensor::zeros({2, 2}, DType::F32));
    return inner(q, ev, d);
  };
  const fs::path a = fresh("extra_draw");
  EXPECT_NE(error_of([&] { record_run(a, request(), extra); }).find("drew 3 initial noise tensors for 2 streams"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(a));  // nothing left
  Parts twice = stream_parts();
  twice.run = [inner](const Request& q, const Events& ev, bool d) {
    (void)ev.on_stream_noise("video", Tensor::zeros({6, 4}, DType::F32));
    return inner(q, ev, d);
  };
  EXPECT_NE(error_of([&] { record_run(fresh("twice"), request(), twice); })
                .find("the run drew the video stream's noise twice"),
            std::string::npos);
  Parts both = stream_parts();
  both.run = [inner](const Request& q, const Events& ev, bool d) {
    ev.on_noise(0, Tensor::zeros({1, 1, 6, 4}, DType::F32));
    return inner(q, ev, d);
  };
  EXPECT_NE(error_of([&] { record_run(fresh("both"), request(), both); })
                .find("the run reported one latent and several streams"),
            std::string::npos);
}
