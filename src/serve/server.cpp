#include "serve/server.h"

#include <httplib.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "io/video.h"
#include "pipeline/output.h"
#include "serve/api_error.h"
#include "serve/job_store.h"
#include "serve/mesh_channel.h"
#include "serve/model_residency.h"

namespace vidax::serve {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A job stopped by --job-timeout: failed, not cancelled (nobody asked for it) nor requeued.
class JobTimeout : public Error {
 public:
  using Error::Error;
};


using Clock = std::chrono::steady_clock;

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  // replace: a message quoting a client's invalid UTF-8 (a JSON parse error does) must still be sent.
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  if (e.status() == 429) res.set_header("Retry-After", "10");
  send_json(res, e.status(), e.body());
}

// Constant-time comparison: the time to refuse a key says nothing about how much of it matched.
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || b.empty()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  return diff == 0;
}

// What a file holds, streamed (Range requests work: httplib asks for offset and length).
// A range that starts past the end is a 416 here: httplib 0.11 answers it 206 with a
// Content-Length that wrapped around below zero (docs/bugs.md row 78).
void send_file(const httplib::Request& req, httplib::Response& res, const fs::path& path, const std::string& type) {
  auto in = std::make_shared<std::ifstream>(path, std::ios::binary);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!*in || ec) throw ApiError(500, "cannot read " + path.filename().string(), "", "file_unreadable");
  for (const auto& [first, last] : req.ranges) {
    const bool ok = first < 0 ? last > 0  // "-N": the last N bytes
                              : static_cast<uintmax_t>(first) < size && (last < 0 || last >= first);
    if (!ok) {
      res.set_header("Content-Range", "bytes */" + std::to_string(size));
      // httplib cuts whatever body is sent to the request's ranges, the error's JSON too (to
      // nothing, with a second, wrapped Content-Range): the ranges go. The Request is httplib's
      // own non-const object, handed to handlers as const.
      const_cast<httplib::Request&>(req).ranges.clear();
      throw ApiError(416, "the range " + req.get_header_value("Range").substr(0, 64) + " is outside the file (" +
                              std::to_string(size) + " bytes)", "", "range_not_satisfiable");
    }
  }
  res.set_content_provider(static_cast<size_t>(size), type, [in](size_t offset, size_t length, httplib::DataSink& sink) {
    std::vector<char> buf(std::min<size_t>(length, 1 << 16));
    in->clear();
    in->seekg(static_cast<std::streamoff>(offset));
    in->read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<size_t>(in->gcount());
    return got > 0 && sink.write(buf.data(), got);  // false: a read error or the client left
  });
}

}  // namespace

struct Server::Impl {
  ServeOptions opt;
  std::vector<ServedModel> models;
  fs::path videos_dir;
  std::unique_ptr<JobStore> store;
  httplib::Server http;
  std::vector<std::pair<std::string, std::string>> route_list;  // (method, OpenAPI path), as registered
  int port = -1;
  std::thread worker, serve_thread;
  std::atomic<bool> stopping{false};
  std::mutex stop_mu;
  bool stopped = false;

  // The worker and DELETE: which job runs, whether its cancel was asked; the worker waits on work_cv.
  std::mutex run_mu;
  std::condition_variable work_cv;
  std::string running_id;
  bool cancel_running = false;

  // Live state of the running job for the events stream and metrics; every change bumps version.
  std::mutex live_mu;
  std::condition_variable live_cv;
  uint64_t version = 0;
  std::string live_id;
  int live_step = 0, live_steps = 0;
  double live_step_seconds = 0, live_elapsed = 0;
  double step_seconds_sum = 0;
  int64_t step_count = 0;

  void log(const std::string& s) const {
    if (opt.log) opt.log(s);
  }
  void bump() {
    {
      std::lock_guard<std::mutex> lock(live_mu);
      ++version;
    }
    live_cv.notify_all();
  }

  fs::path video_path(const std::string& id) const { return videos_dir / (id + ".mp4"); }
  // An uploaded image of job `id` (field input_reference or last_frame), kept until the job is deleted.
  fs::path input_path(const std::string& id, const std::string& field) const { return videos_dir / (id + "." + field); }
  void remove_inputs(const std::string& id) const {
    std::error_code ec;
    for (const char* f : {"input_reference", "last_frame"}) fs::remove(input_path(id, f), ec);
    for (size_t k = 0; k < kMaxKeyImages; ++k) fs::remove(input_path(id, "image_" + std::to_string(k)), ec);
  }
  fs::path thumb_dir(const std::string& id) const { return videos_dir / (id + ".thumb"); }
  fs::path thumb_path(const std::string& id) const { return thumb_dir(id) / "frame_00000.png"; }

  // --- residency (ServeOptions::memory_budget_bytes) ---
  uint64_t jobs_started = 0;  // the worker's job counter: a model's last_used

  static std::string gb(double b) { return gb_text(b); }
  // Under mpirun: the other ranks, which run every job with this one (null: alone).
  std::unique_ptr<MeshChannel> mesh;
  bool followers_stopped = false;

  const ServedModel* find_model(const std::string& name) const {
    for (const auto& m : models)
      if (m.name == name) return &m;
    return nullptr;
  }

  json video_json(const Job& j) const {
    const VideoSpec s = spec_from_json(j.spec);
    json o = {{"id", j.id},
              {"object", "video"},
              {"model", j.model},
              {"status", status_name(j.status)},
              {"progress", j.progress},
              {"created_at", j.created_at},
              {"completed_at", j.completed_at ? json(j.completed_at) : json()},
              {"expires_at", json()},
              {"size", s.size()},
              {"seconds", s.seconds},
              {"prompt", j.prompt},
              {"remixed_from_video_id", json()},
              {"error", j.error_code.empty() ? json() : json{{"code", j.error_code}, {"message", j.error_message}}},
              // Extensions: what the job runs with, every default filled in.
              {"frames", s.frames},
              {"fps", s.fps},
              {"steps", s.steps},
              {"seed", s.seed},
              {"guidance", s.guidance},
              {"shift", s.shift},
              {"sampler", s.sampler},
              {"negative_prompt", s.negative_prompt},
              {"lora", json::array()},
              {"preset", s.preset.empty() ? json() : json(s.preset)},
              {"result", j.result}};
    for (const auto& l : s.loras) o["lora"].push_back({{"path", l.path}, {"scale", l.scale}});
    return o;
  }

  // A completed job's `result`: what it wrote, which for an image-to-video job whose model sizes the
  // video from its image (Wan I2V / FLF2V / TI2V: Parts::condition_on_images) is the size its image
  // gave, not the request's `size`; a model that fits the image to the request (LTX-2) keeps it.
  static json result_json(const VideoSpec& s, const io::RgbVideo& v, bool size_from_image) {
    VIDAX_CHECK(v.frames > 0 && v.height > 0 && v.width > 0 && s.fps > 0,
                "the job made an empty video (" << v.frames << " frames of " << v.width << "x" << v.height << ")");
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3g", static_cast<double>(v.frames) / s.fps);  // as `seconds`
    return {{"size", std::to_string(v.width) + "x" + std::to_string(v.height)},
            {"width", v.width},
            {"height", v.height},
            {"frames", v.frames},
            {"fps", s.fps},
            {"seconds", secs},
            {"size_from", size_from_image ? "input_reference" : "request"}};
  }

  // The job named by a path segment: checked to be a server-made id before any query or path.
  Job job_of(const std::string& id) {
    if (!is_job_id(id)) throw ApiError(404, "no video with id '" + id.substr(0, 64) + "'", "video_id", "video_not_found");
    auto j = store->get(id);
    if (!j) throw ApiError(404, "no video with id '" + id + "'", "video_id", "video_not_found");
    return *j;
  }

  // --- the worker ---

  void worker_loop() {
    work();
    stop_followers();
  }

  // Under mpirun, once no job follows: the other ranks' loops end. From the worker's thread (the
  // one that talks to them while it runs), or from stop() when the worker never ran.
  void stop_followers() {
    if (!mesh || followers_stopped) return;
    followers_stopped = true;
    mesh->send_stop();
    log("told the other " + std::to_string(mesh->size() - 1) + " rank(s) to stop");
  }

  void work() {
    while (!stopping) {
      std::optional<Job> job;
      {
        std::unique_lock<std::mutex> lock(run_mu);
        // Claimed under run_mu, so a DELETE sees the job either queued or running, never between.
        job = store->claim_next();
        if (!job) {
          work_cv.wait_for(lock, std::chrono::seconds(1));
          continue;
        }
        running_id = job->id;
        cancel_running = false;
      }
      bump();
      run_job(*job);
      {
        std::lock_guard<std::mutex> lock(run_mu);
        running_id.clear();
        cancel_running = false;
      }
      {
        std::lock_guard<std::mutex> lock(live_mu);
        live_id.clear();
        live_step = live_steps = 0;
      }
      bump();
    }
  }

  void run_job(const Job& job) {
    const auto t0 = Clock::now();
    const std::string& id = job.id;
    log("job " + id + ": running");
    try {
      const VideoSpec spec = spec_from_json(job.spec);
      const ServedModel* m = find_model(spec.model);
      if (!m) throw Error("model " + spec.model + " is not served by this server (it was when the job was queued)");
      pipeline::Request req = to_pipeline_request(spec, m->variant().defaults);
      // Residency: the least recently used models go until this one fits (--max-memory).
      m->residence->last_used = ++jobs_started;
      const std::vector<const ServedModel*> evict = lru_evictions(models, *m, opt.memory_budget_bytes);
      if (mesh) {  // the other ranks run the job too: its spec, the decision and the decoded images
        MeshJob mj;
        mj.id = id;
        mj.spec = spec_to_json(spec);
        mj.spec["image"] = mj.spec["last_image"] = "";
        for (auto& k : mj.spec["images"]) k["path"] = "";
        for (const pipeline::KeyImage& k : req.key_images) mj.key_images.push_back(k.image);
        for (const ServedModel* e : evict) mj.unload.push_back(e->name);
        mj.image = req.image;
        mj.last_image = req.last_image;
        mesh->send_job(mj);
      }
      // From here on every rank runs the job: each phase's errors are agreed on before the next.
      auto on_every_rank = [&](const std::function<void()>& f) {
        if (mesh)
          mesh->run_agreed(f);
        else
          f();
      };
      std::shared_ptr<pipeline::LoadedModel> loaded;  // held to the job's end
      on_every_rank([&] {
        for (const ServedModel* e : evict) {
          log("unloading " + e->name + " (" + gb(e->weight_bytes()) + ", the least recently used) to make room for " +
              m->name + " (" + gb(m->weight_bytes()) + "; --max-memory " + gb(opt.memory_budget_bytes) + ")");
          e->unload();
        }
        loaded = ready_for_job(*m, spec, opt.lora_dir, opt.log);
      });
      {
        std::lock_guard<std::mutex> lock(live_mu);
        live_id = id;
        live_step = 0;
        live_steps = static_cast<int>(spec.steps);
      }
      pipeline::Events ev;
      ev.on_step = [&](int done, int total, double secs) {
        store->set_progress(id, std::min(99, done * 100 / std::max(1, total)));  // 100 once written
        {
          std::lock_guard<std::mutex> lock(live_mu);
          live_step = done;
          live_steps = total;
          live_step_seconds = secs;
          live_elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
          step_seconds_sum += secs;
          ++step_count;
        }
        bump();
      };
      ev.warn = [&](const std::string& w) { log("job " + id + ": warning: " + w); };
      bool timed_out = false;
      // The job's limit: its timeout_seconds, capped by --job-timeout.
      double limit = opt.job_timeout_seconds;
      std::string limit_name = "--job-timeout";
      if (spec.timeout_seconds > 0 && (limit <= 0 || spec.timeout_seconds < limit)) {
        limit = spec.timeout_seconds;
        limit_name = "its timeout_seconds";
      }
      auto cancel_now = [&] {
        if (stopping) return true;
        if (limit > 0 && std::chrono::duration<double>(Clock::now() - t0).count() > limit) {
          timed_out = true;
          return true;
        }
        std::lock_guard<std::mutex> lock(run_mu);
        return cancel_running;
      };
      // Under mpirun the decision is made once per step, here, and sent to every rank, so all stop
      // at the same step boundary; the run's other checks see the last decision.
      bool cancel_agreed = false;
      if (mesh) {
        ev.on_step = [&, progress = ev.on_step](int done, int total, double secs) {
          // An error here (the job store's) must not skip the broadcast the others wait in: it
          // stops every rank at this step, and fails the job once they agree.
          std::string error;
          try {
            progress(done, total, secs);
          } catch (const std::exception& e) {
            error = std::string("recording the job's progress: ") + e.what();
          }
          cancel_agreed = mesh->agree_cancel(!error.empty() || cancel_now());
          if (!error.empty()) throw Error(error);
        };
        ev.cancelled = [&] { return cancel_agreed; };
      } else {
        ev.cancelled = cancel_now;
      }
      pipeline::Result res;
      try {
        on_every_rank([&] { res = pipeline::run_generation(loaded->parts, req, ev, true); });  // decode: rank 0
      } catch (const pipeline::Cancelled& e) {
        if (!timed_out) throw;
        throw JobTimeout(msg() << "the job ran past " << limit_name << " " << limit << " s (" << e.what()
                               << ")");
      }

      // What the job made: an image-to-video job's size comes from its image (at the area of `size`).
      io::RgbVideo rgb = io::rgb_from_video_tensor(res.video);
      const json result = result_json(spec, rgb, !spec.image.empty() && static_cast<bool>(loaded->parts.condition_on_images));
      json params{{"model", spec.model},         {"family", m->family->name()},
                  {"weights", m->weights},       {"job_id", id},
                  {"prompt", spec.prompt},       {"negative_prompt", res.negative_prompt},
                  {"seed", spec.seed},           {"frames", rgb.frames},
                  {"height", rgb.height},        {"width", rgb.width},
                  {"requested_size", spec.size()}, {"result", result},
                  {"steps", spec.steps},         {"sampler", spec.sampler},
                  {"shift", spec.shift},         {"guidance", spec.guidance},
                  {"precision", loaded->precision}, {"fps", spec.fps},
                  {"loras", spec_to_json(spec).at("lora")},
                  {"preset", spec.preset.empty() ? json() : json(spec.preset)},
                  {"seconds", {{"text", res.seconds_text}, {"denoise", res.seconds_denoise}, {"decode", res.seconds_decode}}}};
      pipeline::OutputRequest out;
      out.path = video_path(id).string();
      out.format = pipeline::OutputFormat::Mp4;
      out.fps = spec.fps;
      out.params = params;
      out.warn = ev.warn;
      out.audio.waveform = res.audio;  // a model with audio (Variant::audio): the MP4's track
      out.audio.sample_rate = res.audio_sample_rate;
      pipeline::write_output(out, res.video, res.latents);
      // The thumbnail: the first frame as PNG (written under a temporary name and renamed, as the video).
      rgb.rgb.resize(rgb.frame_bytes());
      rgb.frames = 1;
      io::write_png_frames(thumb_dir(id).string(), rgb, {});
      store->finish(id, Status::Completed, "", "", result);
      log("job " + id + ": completed in " +
          std::to_string(std::chrono::duration<double>(Clock::now() - t0).count()) + " s");
    } catch (const pipeline::Cancelled& e) {
      bool by_delete;
      {
        std::lock_guard<std::mutex> lock(run_mu);
        by_delete = cancel_running;
      }
      if (by_delete) {
        store->finish(id, Status::Cancelled, "cancelled", std::string("cancelled by DELETE: ") + e.what());
        log("job " + id + ": cancelled");
      } else {
        // The server is draining: the job goes back to the queue and runs again from the start.
        store->requeue(id);
        log("job " + id + ": stopped for shutdown (" + e.what() + "); queued again");
      }
    } catch (const JobTimeout& e) {
      store->finish(id, Status::Failed, "job_timeout", e.what());
      log("job " + id + ": failed: " + e.what());
    } catch (const std::exception& e) {
      store->finish(id, Status::Failed, "generation_failed", e.what());
      if (mesh && !mesh->abandoned().empty()) log("job " + id + ": abandoned a collective: " + mesh->abandoned());
      log("job " + id + ": failed: " + e.what());
    }
  }

  // --- the HTTP handlers ---

  void post_video(const httplib::Request& req, httplib::Response& res) {
    json body;
    bool from_form = false;
    std::map<std::string, std::string> image_files;  // input_reference / last_frame: the uploaded bytes
    UploadedImages uploaded;
    if (req.is_multipart_form_data()) {
      from_form = true;
      body = json::object();
      for (const auto& [name, part] : req.files) {
        if (body.contains(name) || image_files.count(name)) throw bad_field(name, "field '" + name + "' is given twice");
        if ((name == "input_reference" || name == "last_frame") && !part.filename.empty()) {
          image_files[name] = part.content;
          (name == "input_reference" ? uploaded.input_reference : uploaded.last_frame) = true;
        } else if (!part.filename.empty() && std::find(video_request_fields().begin(), video_request_fields().end(),
                                                       name) == video_request_fields().end()) {
          if (uploaded.other_files.count(name)) throw bad_field(name, "field '" + name + "' is given twice");
          uploaded.other_files[name] = part.content;  // a file an `images` entry names (else refused)
        } else {
          body[name] = part.content;
        }
      }
    } else {
      try {
        body = json::parse(req.body);
      } catch (const json::exception& e) {
        throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what(), "", "invalid_json");
      }
    }
    VideoSpec spec = parse_video_request(body, from_form, models, opt.lora_dir, uploaded);
    if (store->count(Status::Queued) >= opt.max_queued)
      throw ApiError(429, "the queue is full (" + std::to_string(opt.max_queued) + " jobs waiting); retry later", "",
                     "queue_full");
    Job j;
    j.id = new_job_id();
    // The images are kept beside the job's video until it is deleted, each decoded now: a file that
    // is not a picture is a 400 naming the field, not a failed job.
    for (const auto& [field, bytes] : image_files) {
      const fs::path path = input_path(j.id, field);
      try {
        io::PendingOutput out(path.string());
        {
          std::ofstream f(out.temp_path(), std::ios::binary);
          f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
          VIDAX_CHECK(f.good(), "cannot write " << out.temp_path());
        }
        (void)io::read_image(out.temp_path(), field);
        out.commit();
      } catch (const Error& e) {
        remove_inputs(j.id);
        throw bad_field(field, field + " is not a decodable image: " + e.what(), "invalid_image");
      }
      (field == "input_reference" ? spec.image : spec.last_image) = path.string();
    }
    // The keyframes (`images`), saved and decoded the same way.
    for (size_t k = 0; k < spec.key_images.size(); ++k) {
      KeyImageUse& u = spec.key_images[k];
      const std::string field = "images[" + std::to_string(k) + "].image";
      const fs::path path = input_path(j.id, "image_" + std::to_string(k));
      try {
        io::PendingOutput out(path.string());
        {
          std::ofstream f(out.temp_path(), std::ios::binary);
          f.write(u.bytes.data(), static_cast<std::streamsize>(u.bytes.size()));
          VIDAX_CHECK(f.good(), "cannot write " << out.temp_path());
        }
        (void)io::read_image(out.temp_path(), field);
        out.commit();
      } catch (const Error& e) {
        remove_inputs(j.id);
        throw bad_field(field, field + " is not a decodable image: " + e.what(), "invalid_image");
      }
      u.path = path.string();
      u.bytes.clear();
    }
    j.model = spec.model;
    j.prompt = spec.prompt;
    j.spec = spec_to_json(spec);
    store->insert(j);
    log("job " + j.id + ": queued (" + spec.model + ", " + spec.size() + ", " + std::to_string(spec.frames) +
        " frames, " + std::to_string(spec.steps) + " steps)");
    // Taking run_mu orders this wake-up after the worker's empty look or before its next one: none is lost.
    { std::lock_guard<std::mutex> lock(run_mu); }
    work_cv.notify_all();
    bump();
    send_json(res, 200, video_json(j));
  }

  void list_videos(const httplib::Request& req, httplib::Response& res) {
    std::string after;
    if (req.has_param("after")) {
      after = req.get_param_value("after");
      if (!is_job_id(after) || !store->get(after))
        throw bad_field("after", "after '" + after.substr(0, 64) + "' is not the id of a video here");
    }
    int limit = 20;
    if (req.has_param("limit")) {
      const std::string l = req.get_param_value("limit");
      if (l.empty() || l.size() > 3 || l.find_first_not_of("0123456789") != std::string::npos ||
          (limit = std::stoi(l)) < 1 || limit > 100)
        throw bad_field("limit", "limit '" + l.substr(0, 16) + "' must be an integer from 1 to 100");
    }
    bool descending = true;
    if (req.has_param("order")) {
      const std::string o = req.get_param_value("order");
      if (o != "asc" && o != "desc") throw bad_field("order", "order '" + o.substr(0, 16) + "' must be asc or desc");
      descending = o == "desc";
    }
    const JobStore::Page page = store->list(after, limit, descending);
    json data = json::array();
    for (const auto& j : page.jobs) data.push_back(video_json(j));
    send_json(res, 200,
              {{"object", "list"},
               {"data", data},
               {"first_id", page.jobs.empty() ? json() : json(page.jobs.front().id)},
               {"last_id", page.jobs.empty() ? json() : json(page.jobs.back().id)},
               {"has_more", page.has_more}});
  }

  void delete_video(const std::string& id, httplib::Response& res) {
    Job j = job_of(id);
    if (store->cancel_if_queued(id, "cancelled by DELETE before it ran")) {
      bump();
      send_json(res, 200, video_json(*store->get(id)));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(run_mu);
      if (running_id == id) {
        cancel_running = true;  // the worker stops at the next step boundary
        j = *store->get(id);
        json o = video_json(j);
        o["cancel_requested"] = true;
        send_json(res, 202, o);
        return;
      }
    }
    j = *store->get(id);
    if (!is_finished(j.status))  // claimed and released between the two looks: ask again
      throw ApiError(409, "video " + id + " is " + status_name(j.status) + "; retry the DELETE", "video_id", "conflict");
    std::error_code ec;
    fs::remove(video_path(id), ec);
    fs::remove(fs::path(video_path(id).string() + ".json"), ec);
    fs::remove_all(thumb_dir(id), ec);
    remove_inputs(id);
    store->remove(id);
    bump();
    send_json(res, 200, {{"id", id}, {"object", "video.deleted"}, {"deleted", true}});
  }

  void content(const std::string& id, const httplib::Request& req, httplib::Response& res) {
    const Job j = job_of(id);
    const std::string variant = req.has_param("variant") ? req.get_param_value("variant") : "video";
    if (variant != "video" && variant != "thumbnail")
      throw bad_field("variant", "variant '" + variant.substr(0, 32) + "' must be video or thumbnail" +
                                     (variant == "spritesheet" ? " (no spritesheets here)" : ""));
    if (j.status != Status::Completed)
      throw ApiError(409, "video " + id + " is " + status_name(j.status) + ", not completed", "video_id",
                     "video_not_ready");
    if (variant == "thumbnail")
      send_file(req, res, thumb_path(id), "image/png");
    else
      send_file(req, res, video_path(id), "video/mp4");
  }

  // Server-sent events: `progress` on every change (with the step, the steps and an ETA while it
  // runs), then one `completed`, `failed` or `cancelled` with the video object, and the stream ends.
  void events(const std::string& id, httplib::Response& res) {
    (void)job_of(id);  // 404 before the stream starts
    auto cur = std::make_shared<Cursor>();
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream", [this, id, cur](size_t, httplib::DataSink& sink) {
      // httplib calls this outside its handler's try: an exception here would end the process.
      try {
        return next_event(id, *cur, sink);
      } catch (const std::exception& e) {
        log("events stream of " + id + ": " + e.what());
        return false;
      }
    });
  }

  struct Cursor {
    uint64_t seen = ~uint64_t{0};
    std::string last;
  };

  // Writes the stream's next event (or a keep-alive comment) after waiting up to a second for a change.
  bool next_event(const std::string& id, Cursor& c, httplib::DataSink& sink) {
    Cursor* cur = &c;
    {
      std::unique_lock<std::mutex> lock(live_mu);
      live_cv.wait_for(lock, std::chrono::seconds(1), [&] { return version != cur->seen || stopping; });
      cur->seen = version;
    }
    if (stopping) {
      sink.done();
      return true;
    }
    const auto j = store->get(id);
    if (!j) {  // deleted while watched
      const std::string e = "event: deleted\ndata: " + json{{"id", id}}.dump() + "\n\n";
      sink.write(e.data(), e.size());
      sink.done();
      return true;
    }
    json data = video_json(*j);
    if (is_finished(j->status)) {
      const std::string e = std::string("event: ") + status_name(j->status) + "\ndata: " + data.dump() + "\n\n";
      sink.write(e.data(), e.size());
      sink.done();
      return true;
    }
    {
      std::lock_guard<std::mutex> lock(live_mu);
      if (live_id == id && live_steps > 0) {
        data["step"] = live_step;
        data["steps"] = live_steps;
        data["step_seconds"] = live_step_seconds;
        data["eta_seconds"] = live_step > 0 ? json(live_elapsed / live_step * (live_steps - live_step)) : json();
      }
    }
    const std::string payload = data.dump();
    if (payload == cur->last) return sink.write(": waiting\n\n", 11);  // a comment keeps the stream alive
    cur->last = payload;
    const std::string e = "event: progress\ndata: " + payload + "\n\n";
    return sink.write(e.data(), e.size());
  }

  json models_json() const {
    json data = json::array();
    for (const auto& m : models) {
      const auto& d = m.variant().defaults;
      json presets = json::array();
      for (const auto& p : m.family->sampling_presets()) presets.push_back(p.name);
      data.push_back({{"id", m.name},
                      {"object", "model"},
                      {"created", 0},
                      {"owned_by", m.family->name()},
                      {"loaded", m.resident()},
                      {"description", m.variant().description},
                      {"tasks", m.variant().tasks},
                      {"precision", m.precision()},
                      {"defaults",
                       {{"size", std::to_string(d.width) + "x" + std::to_string(d.height)},
                        {"frames", d.frames},
                        {"fps", d.fps},
                        {"steps", d.steps},
                        {"guidance", d.guidance},
                        {"shift", d.shift},
                        {"sampler", d.sampler}}},
                      {"presets", presets},
                      {"loras", m.switches_loras() && !opt.lora_dir.empty()}});
    }
    return {{"object", "list"}, {"data", data}};
  }

  std::string metrics_text() {
    std::string s;
    s += "# HELP vidax_jobs Jobs in the database by status.\n# TYPE vidax_jobs gauge\n";
    for (const auto& [st, n] : store->count_by_status())
      s += "vidax_jobs{status=\"" + st + "\"} " + std::to_string(n) + "\n";
    s += "# HELP vidax_queue_depth Jobs waiting to run.\n# TYPE vidax_queue_depth gauge\n";
    s += "vidax_queue_depth " + std::to_string(store->count(Status::Queued)) + "\n";
    {
      std::lock_guard<std::mutex> lock(live_mu);
      s += "# HELP vidax_step_seconds Denoising step time since start.\n# TYPE vidax_step_seconds summary\n";
      s += "vidax_step_seconds_sum " + std::to_string(step_seconds_sum) + "\n";
      s += "vidax_step_seconds_count " + std::to_string(step_count) + "\n";
    }
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    s += "# HELP vidax_model_resident Whether a served model's weights are loaded (--max-memory).\n"
         "# TYPE vidax_model_resident gauge\n";
    for (const auto& m : models) s += "vidax_model_resident{model=\"" + m.name + "\"} " + (m.resident() ? "1" : "0") + "\n";
    s += "# HELP vidax_model_loads_total Loads of a served model's weights, at start included.\n"
         "# TYPE vidax_model_loads_total counter\n";
    for (const auto& m : models)
      s += "vidax_model_loads_total{model=\"" + m.name + "\"} " + std::to_string(m.loads()) + "\n";
    s += "# HELP vidax_peak_rss_bytes Peak resident memory of the server.\n# TYPE vidax_peak_rss_bytes gauge\n";
    s += "vidax_peak_rss_bytes " + std::to_string(static_cast<int64_t>(ru.ru_maxrss) * 1024) + "\n";
    return s;
  }

  // Runs a handler, turning ApiError into its JSON answer.
  template <class F>
  void guarded(httplib::Response& res, F&& f) {
    try {
      f();
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  }

  void routes() {
    http.set_payload_max_length(opt.max_body_bytes);
    // httplib's default pool is max(8, cores - 1) threads, and each open events stream or
    // keep-alive client holds one: 20 clients at once had requests dropped (docs/bugs.md row 80).
    http.new_task_queue = [] { return new httplib::ThreadPool(64); };
    http.set_keep_alive_max_count(1000);
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const bool guarded_path = req.path.rfind("/v1/", 0) == 0 || req.path == "/metrics";
      if (opt.api_key.empty() || !guarded_path) return httplib::Server::HandlerResponse::Unhandled;
      const std::string auth = req.get_header_value("Authorization");
      if (auth.rfind("Bearer ", 0) == 0 && same_secret(auth.substr(7), opt.api_key))
        return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, ApiError(401,
                               auth.empty() ? "missing API key: send Authorization: Bearer <key>"
                                            : "incorrect API key in the Authorization header",
                               "", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    });
    // Answers httplib makes itself (404 for an unknown route, 413 for a too-large body, 400 for a bad
    // request line) get the same JSON error shape as ours.
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 413)
        send_error(res, ApiError(413, "the request body is larger than " + std::to_string(opt.max_body_bytes) + " bytes",
                                 "", "request_too_large"));
      else if (res.status == 404)
        send_error(res, ApiError(404, "no such endpoint: " + req.method + " " + req.path.substr(0, 128), "",
                                 "unknown_url"));
      else
        send_error(res, ApiError(res.status, "request refused (HTTP " + std::to_string(res.status) + ")", "",
                                 res.status == 416 ? "range_not_satisfiable" : "bad_request"));
    });
    http.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      log(std::string("internal error: ") + what);
      send_error(res, ApiError(500, "internal error: " + what, "", "internal_error"));
    });

    using H = std::function<void(const httplib::Request&, httplib::Response&)>;
    // Registers a route under its OpenAPI path ("{video_id}" becomes the segment's capture).
    auto on = [this](const std::string& method, const std::string& path, H h) {
      route_list.emplace_back(method, path);
      std::string re = path;
      const size_t at = re.find("{video_id}");
      if (at != std::string::npos) re.replace(at, 10, "([^/]+)");
      auto g = [this, h](const httplib::Request& req, httplib::Response& res) { guarded(res, [&] { h(req, res); }); };
      if (method == "GET") http.Get(re, g);
      else if (method == "POST") http.Post(re, g);
      else if (method == "DELETE") http.Delete(re, g);
      else throw Error("route " + method + " " + path + ": no such method here");
    };
    on("POST", "/v1/videos", [this](const httplib::Request& req, httplib::Response& res) { post_video(req, res); });
    on("GET", "/v1/videos", [this](const httplib::Request& req, httplib::Response& res) { list_videos(req, res); });
    on("GET", "/v1/videos/{video_id}", [this](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, video_json(job_of(req.matches[1])));
    });
    on("DELETE", "/v1/videos/{video_id}",
       [this](const httplib::Request& req, httplib::Response& res) { delete_video(req.matches[1], res); });
    on("GET", "/v1/videos/{video_id}/content",
       [this](const httplib::Request& req, httplib::Response& res) { content(req.matches[1], req, res); });
    on("GET", "/v1/videos/{video_id}/events",
       [this](const httplib::Request& req, httplib::Response& res) { events(req.matches[1], res); });
    on("GET", "/v1/models", [this](const httplib::Request&, httplib::Response& res) { send_json(res, 200, models_json()); });
    on("GET", "/v1/loras", [this](const httplib::Request&, httplib::Response& res) {
      json data = json::array();
      for (const auto& f : list_lora_files(opt.lora_dir)) {
        json e = {{"object", "lora"}, {"path", f.path}, {"bytes", f.bytes}};
        if (!f.name.empty()) e["name"] = f.name;
        data.push_back(e);
      }
      send_json(res, 200, {{"object", "list"}, {"configured", !opt.lora_dir.empty()}, {"data", data}});
    });
    on("GET", "/health", [this](const httplib::Request&, httplib::Response& res) {
      json names = json::array();
      for (const auto& m : models) names.push_back(m.name);
      send_json(res, 200, {{"status", stopping ? "stopping" : "ok"}, {"models", names}});
    });
    on("GET", "/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_text(), "text/plain; version=0.0.4");
    });
    on("GET", "/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(web_page_html(), "text/html; charset=utf-8");
    });
    on("GET", "/openapi.json", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(openapi_json(), "application/json");
    });
  }
};

Server::Server(ServeOptions opt, std::vector<ServedModel> models) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  VIDAX_CHECK(!models.empty(), "vidax serve needs at least one model (--weights)");
  VIDAX_CHECK(!opt.data_dir.empty(), "vidax serve needs a data folder (--data)");
  if (!opt.lora_dir.empty()) {
    std::error_code ec;
    VIDAX_CHECK(fs::is_directory(opt.lora_dir, ec), "--lora-dir " << opt.lora_dir << ": not a folder");
  }
  s.opt = std::move(opt);
  s.models = std::move(models);
  for (size_t i = 0; i < s.models.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      VIDAX_CHECK(s.models[i].name != s.models[k].name,
                  "model " << s.models[i].name << " is given twice (" << s.models[k].weights << " and "
                           << s.models[i].weights << ")");
  // Resident at start: every model without a budget; with one, those that fit, in the order given.
  // Under mpirun every rank makes the same choice (serve::Follower), and serves the same models.
  if (s.opt.ranks && s.opt.ranks->size() > 1) {
    s.mesh = std::make_unique<MeshChannel>(*s.opt.ranks);
    VIDAX_CHECK(s.mesh->rank() == 0, "the server runs on rank 0 (this is rank " << s.mesh->rank() << ")");
    std::string names;
    for (const auto& m : s.models) names += (names.empty() ? "" : ",") + m.name;
    s.mesh->check_same("the served models", names);
  }
  load_at_start(s.models, s.opt.memory_budget_bytes, s.opt.log);
  std::error_code ec;
  s.videos_dir = fs::path(s.opt.data_dir) / "videos";
  fs::create_directories(s.videos_dir, ec);
  VIDAX_CHECK(!ec, "cannot create the data folder " << s.videos_dir.string() << ": " << ec.message());
  s.store = std::make_unique<JobStore>((fs::path(s.opt.data_dir) / "jobs.sqlite").string());
  const int failed = s.store->fail_in_progress(
      "the server stopped while this job was running (killed or crashed); it was not resumed: submit it again");
  if (failed) s.log("marked " + std::to_string(failed) + " job(s) found in_progress at start as failed");
  // A killed writer's temporary files (io::PendingOutput names them *.partial-*).
  for (const auto& e : fs::directory_iterator(s.videos_dir, ec))
    if (e.path().filename().string().find(".partial-") != std::string::npos) fs::remove_all(e.path(), ec);
  const int64_t queued = s.store->count(Status::Queued);
  if (queued) s.log(std::to_string(queued) + " queued job(s) from before will run");
  s.routes();
}

Server::~Server() { stop(); }

std::vector<std::pair<std::string, std::string>> Server::routes() const { return impl_->route_list; }

int Server::bind() {
  Impl& s = *impl_;
  if (s.opt.port == 0) {
    s.port = s.http.bind_to_any_port(s.opt.host);
  } else {
    s.port = s.http.bind_to_port(s.opt.host, s.opt.port) ? s.opt.port : -1;
  }
  VIDAX_CHECK(s.port > 0, "cannot listen on " << s.opt.host << ":" << s.opt.port
                                              << " (in use, or not an address of this machine)");
  s.worker = std::thread([&s] { s.worker_loop(); });
  s.log("listening on http://" + s.opt.host + ":" + std::to_string(s.port));
  return s.port;
}

void Server::serve() { impl_->http.listen_after_bind(); }

int Server::start() {
  const int port = bind();
  impl_->serve_thread = std::thread([this] { serve(); });
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!impl_->http.is_running()) {
    VIDAX_CHECK(Clock::now() < deadline, "the HTTP server did not start listening on port " << port);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return port;
}

void Server::stop() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.stop_mu);
  if (s.stopped) return;
  s.stopped = true;
  s.stopping = true;
  s.log("stopping: no new requests; the running job stops at its next step");
  s.work_cv.notify_all();
  s.live_cv.notify_all();
  s.http.stop();
  if (s.serve_thread.joinable()) s.serve_thread.join();
  if (s.worker.joinable()) s.worker.join();
  s.stop_followers();  // when the worker never ran (it tells them itself when it did)
  s.log("stopped");
}

}  // namespace vidax::serve
