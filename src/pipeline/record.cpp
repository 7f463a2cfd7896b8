#include "pipeline/record.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/rng.h"
#include "io/checkpoint.h"
#include "io/output_target.h"
#include "io/video.h"
#include "parity/parity.h"
#include "pipeline/sampler.h"

namespace fs = std::filesystem;

namespace vidax::pipeline {

namespace {

std::string step_file(int step) {
  char b[32];
  std::snprintf(b, sizeof b, "step_%04d.safetensors", step);
  return b;
}

nlohmann::json file_ref(const std::string& file, const std::string& tensor) {
  return {{"file", file}, {"tensor", tensor}};
}

nlohmann::json shape_json(const Shape& s) {
  nlohmann::json j = nlohmann::json::array();
  for (int64_t d : s) j.push_back(d);
  return j;
}

}  // namespace

nlohmann::json request_to_json(const Request& r) {
  return {{"prompt", r.prompt},         {"negative_prompt", r.negative_prompt},
          {"frames", r.frames},         {"height", r.height},
          {"width", r.width},           {"steps", r.steps},
          {"seed", r.seed},             {"guidance", r.guidance},
          {"shift", r.shift},           {"sampler", r.sampler},
          {"cfg_from_step", r.cfg_from_step}, {"cfg_to_step", r.cfg_to_step},
          {"cfg_scale", r.cfg_scale}};
}

// ---- writing ---------------------------------------------------------------------

RecordWriter::RecordWriter(std::string dir) : dir_(std::move(dir)) {
  VIDAX_CHECK(!dir_.empty(), "--record: the folder name is empty");
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();  // "rec/" names rec
  std::error_code ec;
  const auto st = fs::symlink_status(dir_, ec);
  if (fs::exists(st)) {
    VIDAX_CHECK(fs::is_directory(st), "--record " << dir_ << ": exists and is not a folder; give a new folder name");
    VIDAX_CHECK(fs::is_empty(dir_, ec) && !ec,
                "--record " << dir_ << ": the folder exists and is not empty; a record is never overwritten "
                               "(remove it, or give a new folder name)");
  }
  const fs::path parent = fs::path(dir_).parent_path();
  VIDAX_CHECK(parent.empty() || fs::is_directory(parent, ec),
              "--record " << dir_ << ": the folder " << parent.string() << " does not exist");
  out_ = std::make_unique<io::PendingOutput>(dir_, io::OutputKind::Directory);
  fs::create_directory(out_->temp_path(), ec);
  VIDAX_CHECK(!ec, "--record " << dir_ << ": cannot create " << out_->temp_path() << ": " << ec.message());
}

RecordWriter::~RecordWriter() = default;

void RecordWriter::write(const std::string& file, const std::map<std::string, Tensor>& tensors) {
  std::map<std::string, Tensor> f32;
  for (const auto& [k, v] : tensors) f32[k] = v.contiguous().to(DType::F32);
  io::save_safetensors((fs::path(out_->temp_path()) / file).string(), f32, {{"format", kRecordFormat}});
}

void RecordWriter::attach(Events& ev) {
  auto prev_noise = ev.on_noise;
  ev.on_noise = [this, prev_noise](int step, const Tensor& n) {
    if (prev_noise) prev_noise(step, n);
    if (step == 0) {
      shape_ = n.shape();
      write("noise.safetensors", {{"noise", n}});
      have_noise_ = true;
    } else {
      VIDAX_CHECK(!pending_noise_.count(step), "record: the sampler drew noise twice during step " << step
                                                    << "; a record holds one draw per step");
      pending_noise_[step] = n.contiguous().to(DType::F32);
    }
  };
  auto prev_latent = ev.on_latent;
  ev.on_latent = [this, prev_latent](int step, const Tensor& x) {
    if (prev_latent) prev_latent(step, x);
    std::map<std::string, Tensor> t{{"latent", x}};
    nlohmann::json s{{"step", step}, {"latent", file_ref(step_file(step), "latent")}, {"noise", nullptr}};
    if (auto it = pending_noise_.find(step); it != pending_noise_.end()) {
      t["noise"] = it->second;
      s["noise"] = file_ref(step_file(step), "noise");
      pending_noise_.erase(it);
    }
    write(step_file(step), t);
    steps_.push_back(s);
  };
}

nlohmann::json RecordWriter::commit(const RecordHeader& h, const Result& res) {
  VIDAX_CHECK(have_noise_, "record " << dir_ << ": the run gave no initial noise (attach() before the run)");
  VIDAX_CHECK(steps_.size() == res.timesteps.size(),
              "record " << dir_ << ": " << steps_.size() << " steps recorded, the run had " << res.timesteps.size());
  write("final.safetensors", {{"latents", res.latents}});
  nlohmann::json steps = steps_;
  for (size_t i = 0; i < steps.size(); ++i) steps[i]["timestep"] = res.timesteps[i];
  nlohmann::json index{{"format", kRecordFormat},
                       {"format_version", kRecordFormatVersion},
                       {"producer", h.producer},
                       {"model", h.model},
                       {"family", h.family},
                       {"precision", h.precision},
                       {"request", h.request},
                       {"negative_prompt_used", res.negative_prompt},
                       {"noise_from", h.noise_from_seed ? "seed" : "file"},
                       {"timesteps", res.timesteps},
                       {"latent_shape", shape_json(shape_)},
                       {"noise", file_ref("noise.safetensors", "noise")},
                       {"steps", steps},
                       {"final", file_ref("final.safetensors", "latents")}};
  const std::string idx = (fs::path(out_->temp_path()) / kRecordIndex).string();
  {
    std::ofstream f(idx);
    f << index.dump(1) << "\n";
    f.flush();
    VIDAX_CHECK(f.good(), "record " << dir_ << ": cannot write " << idx);
  }
  out_->commit();
  return index;
}

// ---- reading ---------------------------------------------------------------------

namespace {

// A field of the index, of the type asked, or an error naming the record and the field.
const nlohmann::json& field(const nlohmann::json& j, const std::string& dir, const std::string& name,
                            nlohmann::json::value_t type, const char* what) {
  VIDAX_CHECK(j.is_object() && j.contains(name),
              "record " << dir << ": " << kRecordIndex << " has no '" << name << "' (" << what << ")");
  const nlohmann::json& v = j.at(name);
  const bool number = type == nlohmann::json::value_t::number_float;
  const bool integer = type == nlohmann::json::value_t::number_integer;
  const bool ok = number ? v.is_number() : integer ? v.is_number_integer() : v.type() == type;
  VIDAX_CHECK(ok, "record " << dir << ": " << kRecordIndex << ": '" << name << "' must be " << what << ", found "
                            << v.dump());
  return v;
}

Tensor load_ref(const std::string& dir, const nlohmann::json& ref, const std::string& what, const Shape& shape) {
  using V = nlohmann::json::value_t;
  const std::string file = field(ref, dir, "file", V::string, "a file name").get<std::string>();
  const std::string tensor = field(ref, dir, "tensor", V::string, "a tensor name").get<std::string>();
  VIDAX_CHECK(file.find('/') == std::string::npos && file != ".." && !file.empty(),
              "record " << dir << ": " << what << ": file '" << file << "' must be a name inside the record folder");
  const std::string path = (fs::path(dir) / file).string();
  VIDAX_CHECK(fs::is_regular_file(path), "record " << dir << ": " << what << ": no file " << path);
  io::Checkpoint c = io::Checkpoint::open(path);
  VIDAX_CHECK(c.contains(tensor), "record " << dir << ": " << what << ": " << file << " has no tensor '" << tensor
                                            << "'");
  Tensor t = c.get(tensor).contiguous().to(DType::F32).clone();
  if (t.shape().size() == shape.size() + 1 && t.shape()[0] == 1) t = t.reshape(shape);  // [1, z, F', h, w]
  VIDAX_CHECK(t.shape() == shape, "record " << dir << ": " << what << " (" << file << ":" << tensor << ") is "
                                            << shape_str(t.shape()) << ", the record's latent_shape is "
                                            << shape_str(shape));
  return t;
}

}  // namespace

Record read_record(const std::string& dir_in) {
  using V = nlohmann::json::value_t;
  Record r;
  r.dir = dir_in;
  const std::string& dir = r.dir;
  std::error_code ec;
  VIDAX_CHECK(fs::exists(fs::symlink_status(dir, ec)),
              "--replay " << dir << ": no such folder (a record made by vidax generate --record DIR or "
                                    "tools/golden/record_reference.py)");
  const fs::file_status st = fs::status(dir, ec);
  VIDAX_CHECK(!ec && fs::exists(st), "--replay " << dir << ": a symbolic link that cannot be followed: "
                                                 << (ec ? ec.message() : std::string("its target does not exist")));
  VIDAX_CHECK(fs::is_directory(st), "--replay " << dir << ": not a folder; a record is a folder holding "
                                                << kRecordIndex << " (vidax generate --record DIR)");
  const std::string idx = (fs::path(dir) / kRecordIndex).string();
  VIDAX_CHECK(fs::is_regular_file(idx), "--replay " << dir << ": no " << kRecordIndex << " in it; not a record");
  {
    std::ifstream f(idx);
    try {
      r.index = nlohmann::json::parse(f);
    } catch (const nlohmann::json::exception& e) {
      throw Error(msg() << "record " << dir << ": " << kRecordIndex << " is not valid JSON: " << e.what());
    }
  }
  const nlohmann::json& j = r.index;
  VIDAX_CHECK(j.is_object(), "record " << dir << ": " << kRecordIndex << " must be a JSON object");
  const std::string format = field(j, dir, "format", V::string, "\"vidax.record\"").get<std::string>();
  VIDAX_CHECK(format == kRecordFormat, "record " << dir << ": format '" << format << "', expected '" << kRecordFormat
                                                 << "'");
  const int64_t version = field(j, dir, "format_version", V::number_integer, "an integer").get<int64_t>();
  VIDAX_CHECK(version == kRecordFormatVersion, "record " << dir << ": format_version " << version
                                                         << "; this vidax reads version " << kRecordFormatVersion);
  r.header.producer = j.value("producer", nlohmann::json::object());
  r.header.model = field(j, dir, "model", V::string, "the model variant").get<std::string>();
  r.header.family = j.value("family", std::string());
  r.header.precision = field(j, dir, "precision", V::string, "fp32 or bf16").get<std::string>();
  r.header.request = field(j, dir, "request", V::object, "the request's settings");
  r.header.noise_from_seed = j.value("noise_from", std::string("seed")) == "seed";
  for (const char* k : {"prompt", "sampler"})
    (void)field(r.header.request, dir, k, V::string, "a string (in 'request')");
  for (const char* k : {"frames", "height", "width", "steps"})
    (void)field(r.header.request, dir, k, V::number_integer, "an integer (in 'request')");
  for (const char* k : {"guidance", "shift"}) (void)field(r.header.request, dir, k, V::number_float, "a number (in 'request')");
  VIDAX_CHECK(r.header.request.contains("seed") && r.header.request.at("seed").is_number_unsigned(),
              "record " << dir << ": 'request.seed' must be an integer 0..2^64-1");

  const nlohmann::json& ts = field(j, dir, "timesteps", V::array, "the list of the run's timesteps");
  for (const auto& t : ts) {
    VIDAX_CHECK(t.is_number(), "record " << dir << ": 'timesteps' holds " << t.dump() << ", not a number");
    r.timesteps.push_back(t.get<double>());
  }
  const nlohmann::json& shp = field(j, dir, "latent_shape", V::array, "the latent's shape, e.g. [16, 2, 4, 6]");
  for (const auto& d : shp) {
    VIDAX_CHECK(d.is_number_integer() && d.get<int64_t>() > 0,
                "record " << dir << ": 'latent_shape' holds " << d.dump() << ", not a positive integer");
    r.latent_shape.push_back(d.get<int64_t>());
  }
  r.noise = load_ref(dir, field(j, dir, "noise", V::object, "{file, tensor}"), "the initial noise", r.latent_shape);
  const nlohmann::json& steps = field(j, dir, "steps", V::array, "one entry per denoising step");
  VIDAX_CHECK(steps.size() == r.timesteps.size(),
              "record " << dir << ": " << steps.size() << " steps but " << r.timesteps.size() << " timesteps");
  const int64_t req_steps = r.header.request.at("steps").get<int64_t>();
  VIDAX_CHECK(static_cast<int64_t>(steps.size()) == req_steps,
              "record " << dir << ": " << steps.size() << " steps recorded, the request asks " << req_steps
                        << " (a record of an interrupted run?)");
  for (size_t i = 0; i < steps.size(); ++i) {
    const nlohmann::json& s = steps[i];
    const int step = static_cast<int>(field(s, dir, "step", V::number_integer, "the step number").get<int64_t>());
    VIDAX_CHECK(step == static_cast<int>(i) + 1,
                "record " << dir << ": steps[" << i << "] is step " << step << ", expected " << i + 1);
    const std::string what = "step " + std::to_string(step) + "'s latent";
    r.latents.push_back(load_ref(dir, field(s, dir, "latent", V::object, "{file, tensor}"), what, r.latent_shape));
    if (s.contains("noise") && !s.at("noise").is_null())
      r.step_noise[step] = load_ref(dir, s.at("noise"), "step " + std::to_string(step) + "'s noise", r.latent_shape);
  }
  r.final_latents = load_ref(dir, field(j, dir, "final", V::object, "{file, tensor}"), "the final latent",
                             r.latent_shape);
  return r;
}

Request record_request(const Record& rec, const std::string& default_negative_prompt) {
  Request r = request_from_json(rec.header.request, default_negative_prompt);
  r.cfg_from_step = rec.header.request.value("cfg_from_step", int64_t{0});
  r.cfg_to_step = rec.header.request.value("cfg_to_step", int64_t{-1});
  return r;
}

// ---- replaying -------------------------------------------------------------------

nlohmann::json ReplayReport::to_json() const {
  auto row = [](const StepError& e) {
    return nlohmann::json{{"step", e.step},       {"timestep", e.timestep}, {"max_abs", e.max_abs},
                          {"mean_abs", e.mean_abs}, {"rel_l2", e.rel_l2},   {"ok", e.ok}};
  };
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : this->steps) steps.push_back(row(s));
  return {{"tolerance", tolerance},
          {"metric", "rel_l2"},
          {"noise_matches_seed", noise_matches_seed},
          {"steps", steps},
          {"final", final ? row(*final) : nlohmann::json()},
          {"diverged_at", diverged_at == 0 ? nlohmann::json() : nlohmann::json(diverged_at)},
          {"ok", diverged_at == 0 && final && final->ok}};
}

double default_replay_tolerance(const std::string& record_precision, const std::string& replay_precision) {
  const bool bf16 = record_precision == "bf16" || replay_precision == "bf16";
  return parity::default_rtol(bf16 ? "bf16" : "fp32");
}

namespace {
StepError measure(int step, double t, const Tensor& got, const Tensor& ref, double tol) {
  const parity::Comparison c = parity::compare("latent", ref, got, tol);
  StepError e;
  e.step = step;
  e.timestep = t;
  e.max_abs = c.max_abs;
  e.mean_abs = c.mean_abs;
  e.rel_l2 = c.rel_l2;
  e.ok = c.status == parity::Comparison::Status::Ok;
  return e;
}
}  // namespace

Replayer::Replayer(const Record& rec, Request& req, double tolerance) : rec_(rec) {
  VIDAX_CHECK(std::isfinite(tolerance) && tolerance >= 0,
              "--replay-tolerance " << tolerance << ": must be a finite number >= 0");
  report_.tolerance = tolerance;
  VIDAX_CHECK(static_cast<int64_t>(rec.timesteps.size()) == req.steps,
              "--replay " << rec.dir << ": the record has " << rec.timesteps.size() << " steps, the request "
                          << req.steps);
  const std::vector<double> ts = make_sampler(req.sampler, req.steps, req.shift)->timesteps();
  for (size_t i = 0; i < ts.size(); ++i)
    VIDAX_CHECK(ts[i] == rec.timesteps[i],
                "--replay " << rec.dir << ": step " << i + 1 << "'s timestep is " << ts[i] << " here (" << req.sampler
                            << ", " << req.steps << " steps, shift " << req.shift << ") but " << rec.timesteps[i]
                            << " in the record: the schedules differ");
  const Tensor seeded = draw_noise(req.seed, rec.noise.shape());
  report_.noise_matches_seed = seeded.to_f32_vector() == rec.noise.to_f32_vector();
  req.noise = rec.noise;
}

void Replayer::attach(Events& ev) {
  ev.replace_noise = [this](int step, const Shape& shape) {
    auto it = rec_.step_noise.find(step);
    VIDAX_CHECK(it != rec_.step_noise.end(),
                "--replay " << rec_.dir << ": the sampler draws noise during step " << step
                            << " but the record holds none for it (recorded with another sampler?)");
    VIDAX_CHECK(it->second.shape() == shape, "--replay " << rec_.dir << ": step " << step << "'s recorded noise is "
                                                         << shape_str(it->second.shape()) << ", the sampler draws "
                                                         << shape_str(shape));
    drawn_[step] = true;
    return it->second;
  };
  auto prev = ev.on_latent;
  ev.on_latent = [this, prev](int step, const Tensor& x) {
    if (prev) prev(step, x);
    VIDAX_CHECK(!rec_.step_noise.count(step) || drawn_.count(step),
                "--replay " << rec_.dir << ": the record holds noise for step " << step
                            << " but this run's sampler drew none (recorded with another sampler?)");
    const size_t i = static_cast<size_t>(step - 1);
    VIDAX_CHECK(i < rec_.latents.size(), "--replay " << rec_.dir << ": the run has more steps than the record");
    const StepError e = measure(step, rec_.timesteps[i], x, rec_.latents[i], report_.tolerance);
    report_.steps.push_back(e);
    if (!e.ok) {
      report_.diverged_at = step;
      throw ReplayDiverged(msg() << "replay diverged at step " << step << "/" << rec_.latents.size()
                                 << " (timestep " << e.timestep << "): latent rel_l2 " << e.rel_l2 << " > "
                                 << report_.tolerance << " (--replay-tolerance), max_abs " << e.max_abs
                                 << ", mean_abs " << e.mean_abs << " against " << rec_.dir);
    }
  };
}

void Replayer::finish(const Result& res) {
  report_.final = measure(0, 0, res.latents, rec_.final_latents, report_.tolerance);
}

}  // namespace vidax::pipeline
