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
          {"cfg_scale", r.cfg_scale},
          {"fps", r.fps}};
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
  // Several streams (version 2).
  auto prev_snoise = ev.on_stream_noise;
  ev.on_stream_noise = [this, prev_snoise](const std::string& stream, const Tensor& drawn) {
    const Tensor used = prev_snoise ? prev_snoise(stream, drawn) : drawn;
    VIDAX_CHECK(!stream_noise_written_, "record: the run drew the " << stream
                                             << " noise after its first step; a record holds the initial draws only");
    for (const auto& [name, t] : stream_noise_)
      VIDAX_CHECK(name != stream, "record: the run drew the " << stream << " stream's noise twice; a record holds one "
                                                                   "initial draw per stream");
    stream_noise_.emplace_back(stream, used.contiguous().to(DType::F32));
    return used;
  };
  auto prev_slat = ev.on_stream_latents;
  ev.on_stream_latents = [this, prev_slat](int step, double timestep, const StreamTensors& lat) {
    if (prev_slat) prev_slat(step, timestep, lat);
    VIDAX_CHECK(!lat.empty(), "record: step " << step << " gave no stream latents");
    if (!stream_noise_written_) {
      std::map<std::string, Tensor> n(stream_noise_.begin(), stream_noise_.end());
      write("noise.safetensors", n);
      stream_noise_written_ = true;
      for (const auto& [name, t] : lat) stream_shapes_.emplace_back(name, Shape(t.shape()));
    }
    VIDAX_CHECK(lat.size() == stream_shapes_.size(), "record: step " << step << " gave " << lat.size()
                                                                      << " streams, the first step "
                                                                      << stream_shapes_.size());
    nlohmann::json refs = nlohmann::json::object();
    std::map<std::string, Tensor> t;
    for (size_t k = 0; k < lat.size(); ++k) {
      const auto& [name, x] = lat[k];
      VIDAX_CHECK(name == stream_shapes_[k].first && x.shape() == stream_shapes_[k].second,
                  "record: step " << step << "'s stream " << k << " is " << name << " " << shape_str(x.shape())
                                  << ", the first step's " << stream_shapes_[k].first << " "
                                  << shape_str(stream_shapes_[k].second));
      t[name] = x;
      refs[name] = file_ref(step_file(step), name);
    }
    write(step_file(step), t);
    steps_.push_back({{"step", step}, {"timestep", timestep}, {"latents", refs}, {"noise", nullptr}});
  };
  auto prev_sfinal = ev.on_stream_final;
  ev.on_stream_final = [this, prev_sfinal](const StreamTensors& lat) {
    if (prev_sfinal) prev_sfinal(lat);
    stream_final_.clear();
    for (const auto& [name, x] : lat) stream_final_.emplace_back(name, x.contiguous().to(DType::F32));
  };
}

nlohmann::json RecordWriter::stream_index(const nlohmann::json& common) {
  VIDAX_CHECK(!have_noise_, "record " << dir_ << ": the run reported one latent and several streams; a record holds "
                                             "either");
  VIDAX_CHECK(stream_noise_written_, "record " << dir_ << ": the run reported no step (attach() before the run)");
  VIDAX_CHECK(stream_final_.size() == stream_shapes_.size(),
              "record " << dir_ << ": the run gave " << stream_final_.size() << " final stream latents for "
                        << stream_shapes_.size() << " streams");
  nlohmann::json streams = nlohmann::json::array(), noise = nlohmann::json::array(), fin = nlohmann::json::object();
  std::map<std::string, Tensor> f;
  for (size_t k = 0; k < stream_shapes_.size(); ++k) {
    const auto& [name, shape] = stream_shapes_[k];
    VIDAX_CHECK(stream_final_[k].first == name, "record " << dir_ << ": the final latents are in another order ("
                                                           << stream_final_[k].first << " where " << name << " was)");
    streams.push_back({{"name", name}, {"shape", shape_json(shape)},
                       {"final_shape", shape_json(stream_final_[k].second.shape())}});
    f[name] = stream_final_[k].second;
    fin[name] = file_ref("final.safetensors", name);
  }
  VIDAX_CHECK(stream_noise_.size() == stream_shapes_.size(),
              "record " << dir_ << ": the run drew " << stream_noise_.size() << " initial noise tensors for "
                        << stream_shapes_.size() << " streams (one each)");
  for (const auto& [name, t] : stream_noise_) {
    bool known = false;
    for (const auto& [n, shape] : stream_shapes_) known = known || (n == name && t.shape() == shape);
    VIDAX_CHECK(known, "record " << dir_ << ": the " << name << " noise " << shape_str(t.shape())
                                 << " is of no stream the steps reported");
    noise.push_back({{"stream", name}, {"file", "noise.safetensors"}, {"tensor", name}});
  }
  write("final.safetensors", f);
  nlohmann::json index = common;
  index["format_version"] = kRecordFormatVersionStreams;
  index["streams"] = streams;
  index["noise"] = noise;
  index["steps"] = steps_;
  index["final"] = fin;
  return index;
}

nlohmann::json RecordWriter::commit(const RecordHeader& h, const Result& res) {
  VIDAX_CHECK(steps_.size() == res.timesteps.size(),
              "record " << dir_ << ": " << steps_.size() << " steps recorded, the run had " << res.timesteps.size());
  nlohmann::json index{{"format", kRecordFormat},
                       {"format_version", kRecordFormatVersion},
                       {"producer", h.producer},
                       {"model", h.model},
                       {"family", h.family},
                       {"precision", h.precision},
                       {"request", h.request},
                       {"negative_prompt_used", res.negative_prompt},
                       {"noise_from", h.noise_from_seed ? "seed" : "file"},
                       {"timesteps", res.timesteps}};
  if (!stream_shapes_.empty() || !stream_noise_.empty()) {
    index = stream_index(index);
  } else {
    VIDAX_CHECK(have_noise_, "record " << dir_ << ": the run gave no initial noise (attach() before the run)");
    write("final.safetensors", {{"latents", res.latents}});
    nlohmann::json steps = steps_;
    for (size_t i = 0; i < steps.size(); ++i) steps[i]["timestep"] = res.timesteps[i];
    index["latent_shape"] = shape_json(shape_);
    index["noise"] = file_ref("noise.safetensors", "noise");
    index["steps"] = steps;
    index["final"] = file_ref("final.safetensors", "latents");
  }
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

namespace {

Shape shape_of(const nlohmann::json& shp, const std::string& dir, const std::string& what) {
  VIDAX_CHECK(shp.is_array() && !shp.empty(), "record " << dir << ": " << what << " must be a shape, e.g. [44, 128], found "
                                                        << shp.dump());
  Shape s;
  for (const auto& d : shp) {
    VIDAX_CHECK(d.is_number_integer() && d.get<int64_t>() > 0,
                "record " << dir << ": " << what << " holds " << d.dump() << ", not a positive integer");
    s.push_back(d.get<int64_t>());
  }
  return s;
}

// The version-2 part of the index: the streams, the draws in order, each step's latents, the finals.
void read_streams(Record& r) {
  using V = nlohmann::json::value_t;
  const std::string& dir = r.dir;
  const nlohmann::json& j = r.index;
  const nlohmann::json& streams = field(j, dir, "streams", V::array, "the list of latent streams");
  VIDAX_CHECK(!streams.empty(), "record " << dir << ": 'streams' is empty");
  std::map<std::string, const RecordStream*> by_name;
  for (const auto& st : streams) {
    RecordStream rs;
    rs.name = field(st, dir, "name", V::string, "a stream name (in 'streams')").get<std::string>();
    VIDAX_CHECK(!rs.name.empty(), "record " << dir << ": a stream has an empty name");
    rs.shape = shape_of(field(st, dir, "shape", V::array, "a shape (in 'streams')"), dir, rs.name + "'s shape");
    rs.final_shape =
        shape_of(field(st, dir, "final_shape", V::array, "a shape (in 'streams')"), dir, rs.name + "'s final_shape");
    r.streams.push_back(rs);
  }
  for (const auto& st : r.streams) {
    VIDAX_CHECK(!by_name.count(st.name), "record " << dir << ": the stream '" << st.name << "' is listed twice");
    by_name[st.name] = &st;
  }
  auto stream = [&](const std::string& name, const std::string& what) -> const RecordStream& {
    auto it = by_name.find(name);
    VIDAX_CHECK(it != by_name.end(), "record " << dir << ": " << what << " names the stream '" << name
                                               << "', which 'streams' does not list (" << r.stream_names() << ")");
    return *it->second;
  };
  const nlohmann::json& noise = field(j, dir, "noise", V::array, "the initial draws, in order: [{stream, file, tensor}]");
  for (const auto& n : noise) {
    const std::string name = field(n, dir, "stream", V::string, "a stream name (in 'noise')").get<std::string>();
    const RecordStream& st = stream(name, "'noise'");
    for (const auto& [k, t] : r.stream_noise)
      VIDAX_CHECK(k != name, "record " << dir << ": 'noise' holds two draws of the stream '" << name << "'");
    r.stream_noise.emplace_back(name, load_ref(dir, n, "the " + name + " noise", st.shape));
  }
  VIDAX_CHECK(r.stream_noise.size() == r.streams.size(),
              "record " << dir << ": 'noise' holds " << r.stream_noise.size() << " draws for " << r.streams.size()
                        << " streams (one initial draw each)");
  // The latents of every stream, under their names.
  auto each_stream = [&](const nlohmann::json& refs, const std::string& what, bool final) {
    VIDAX_CHECK(refs.is_object(), "record " << dir << ": " << what << " must be {stream: {file, tensor}}, found "
                                            << refs.dump());
    std::map<std::string, Tensor> m;
    for (const auto& [name, ref] : refs.items()) {
      const RecordStream& st = stream(name, what);
      m[name] = load_ref(dir, ref, what + " (" + name + ")", final ? st.final_shape : st.shape);
    }
    for (const auto& st : r.streams)
      VIDAX_CHECK(m.count(st.name), "record " << dir << ": " << what << " has no '" << st.name << "' latent");
    return m;
  };
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
    VIDAX_CHECK(!s.contains("noise") || s.at("noise").is_null(),
                "record " << dir << ": step " << step << " holds a sampler draw; a record of several streams holds "
                                                         "the initial draws only");
    r.stream_latents.push_back(
        each_stream(field(s, dir, "latents", V::object, "{stream: {file, tensor}}"), "step " + std::to_string(step) + "'s latents", false));
  }
  r.stream_final = each_stream(field(j, dir, "final", V::object, "{stream: {file, tensor}}"), "the final latents", true);
}

}  // namespace

std::string Record::stream_names() const {
  if (streams.empty()) return "one latent";
  std::string s;
  for (const auto& st : streams) s += (s.empty() ? "" : ", ") + st.name;
  return s;
}

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
  VIDAX_CHECK(version == kRecordFormatVersion || version == kRecordFormatVersionStreams,
              "record " << dir << ": format_version " << version << "; this vidax reads version "
                        << kRecordFormatVersion << " (one latent) and " << kRecordFormatVersionStreams
                        << " (several streams)");
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
  if (version == kRecordFormatVersionStreams) {
    read_streams(r);
    return r;
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
  r.fps = rec.header.request.value("fps", 0.0);  // 0: the variant's (a record made before fps was kept)
  return r;
}

// ---- replaying -------------------------------------------------------------------

nlohmann::json ReplayReport::to_json() const {
  auto row = [](const StepError& e) {
    nlohmann::json j{{"step", e.step},       {"timestep", e.timestep}, {"max_abs", e.max_abs},
                     {"mean_abs", e.mean_abs}, {"rel_l2", e.rel_l2},   {"ok", e.ok}};
    if (!e.stream.empty()) j["stream"] = e.stream;
    return j;
  };
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : this->steps) steps.push_back(row(s));
  nlohmann::json j{{"tolerance", tolerance},
                   {"metric", "rel_l2"},
                   {"noise_matches_seed", noise_matches_seed},
                   {"steps", steps},
                   {"final", final ? row(*final) : nlohmann::json()},
                   {"diverged_at", diverged_at == 0 ? nlohmann::json() : nlohmann::json(diverged_at)},
                   {"ok", diverged_at == 0 && final && final->ok}};
  if (!finals.empty()) {
    nlohmann::json f = nlohmann::json::array();
    for (const auto& e : finals) f.push_back(row(e));
    j["finals"] = f;
  }
  return j;
}

double default_replay_tolerance(const std::string& record_precision, const std::string& replay_precision) {
  const bool bf16 = record_precision == "bf16" || replay_precision == "bf16";
  return parity::default_rtol(bf16 ? "bf16" : "fp32");
}

namespace {
StepError measure(int step, double t, const Tensor& got, const Tensor& ref, double tol,
                  const std::string& stream = "") {
  const parity::Comparison c = parity::compare(stream.empty() ? "latent" : stream, ref, got, tol);
  StepError e;
  e.step = step;
  e.stream = stream;
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
  // Several streams: the family's own schedule is checked step by step (on_stream_latents' timestep),
  // and the recorded draws replace the run's own as it makes them (on_stream_noise).
  if (rec.has_streams()) return;
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

void Replayer::check_stream_set(const StreamTensors& got, const char* what) const {
  std::string names;
  for (const auto& [n, t] : got) names += (names.empty() ? "" : ", ") + n;
  bool same = got.size() == rec_.streams.size();
  for (size_t k = 0; same && k < got.size(); ++k) same = got[k].first == rec_.streams[k].name;
  VIDAX_CHECK(same, "--replay " << rec_.dir << ": the record holds the streams " << rec_.stream_names()
                                << " but this run's " << what << " are " << names
                                << " (a record of another model or pipeline)");
}

void Replayer::attach(Events& ev) {
  auto one_latent = [this](const char* what) {
    VIDAX_CHECK(!rec_.has_streams(), "--replay " << rec_.dir << ": the record holds the streams "
                                                 << rec_.stream_names() << " (format_version "
                                                 << kRecordFormatVersionStreams << ") but this run has one latent ("
                                                 << what << "; a record of another model or pipeline)");
  };
  auto several = [this](const std::string& names) {
    VIDAX_CHECK(rec_.has_streams(), "--replay " << rec_.dir << ": the record holds one latent (format_version "
                                                << kRecordFormatVersion << ") but this run has the streams " << names
                                                << " (a record of another model or pipeline)");
  };
  ev.on_stream_noise = [this, several](const std::string& stream, const Tensor& drawn) {
    several(stream);
    const size_t k = stream_draws_++;
    VIDAX_CHECK(k < rec_.stream_noise.size(), "--replay " << rec_.dir << ": the run draws a " << stream
                                                          << " noise beyond the record's " << rec_.stream_noise.size()
                                                          << " draws (" << rec_.stream_names() << ")");
    const auto& [name, t] = rec_.stream_noise[k];
    VIDAX_CHECK(name == stream, "--replay " << rec_.dir << ": draw " << k + 1 << " of this run is the " << stream
                                            << " noise, the record's is the " << name << " noise (streams "
                                            << rec_.stream_names() << ")");
    VIDAX_CHECK(t.shape() == drawn.shape(), "--replay " << rec_.dir << ": the recorded " << stream << " noise is "
                                                        << shape_str(t.shape()) << ", this run draws "
                                                        << shape_str(drawn.shape()));
    const bool same = drawn.contiguous().to(DType::F32).to_f32_vector() == t.to_f32_vector();
    report_.noise_matches_seed = (noise_checked_ ? report_.noise_matches_seed : true) && same;
    noise_checked_ = true;
    return t;
  };
  auto prev_slat = ev.on_stream_latents;
  ev.on_stream_latents = [this, prev_slat, several](int step, double timestep, const StreamTensors& lat) {
    if (prev_slat) prev_slat(step, timestep, lat);
    std::string names;
    for (const auto& [n, t] : lat) names += (names.empty() ? "" : ", ") + n;
    several(names);
    check_stream_set(lat, "latents");
    const size_t i = static_cast<size_t>(step - 1);
    VIDAX_CHECK(step >= 1 && i < rec_.stream_latents.size(),
                "--replay " << rec_.dir << ": the run has more steps than the record's " << rec_.stream_latents.size());
    VIDAX_CHECK(timestep == rec_.timesteps[i],
                "--replay " << rec_.dir << ": step " << step << "'s timestep is " << timestep << " here but "
                            << rec_.timesteps[i] << " in the record: the schedules differ");
    VIDAX_CHECK(stream_draws_ == rec_.stream_noise.size(),
                "--replay " << rec_.dir << ": the run took " << stream_draws_ << " of the record's "
                            << rec_.stream_noise.size() << " initial draws before its first step");
    std::optional<StepError> worst;
    for (const auto& [name, x] : lat) {
      report_.steps.push_back(measure(step, timestep, x, rec_.stream_latents[i].at(name), report_.tolerance, name));
      const StepError& e = report_.steps.back();
      if (!e.ok && (!worst || e.rel_l2 > worst->rel_l2)) worst = e;
    }
    if (worst) {
      report_.diverged_at = step;
      throw ReplayDiverged(msg() << "replay diverged at step " << step << "/" << rec_.stream_latents.size()
                                 << " (timestep " << worst->timestep << "): the " << worst->stream
                                 << " latent's rel_l2 " << worst->rel_l2 << " > " << report_.tolerance
                                 << " (--replay-tolerance), max_abs " << worst->max_abs << ", mean_abs "
                                 << worst->mean_abs << " against " << rec_.dir);
    }
  };
  auto prev_sfinal = ev.on_stream_final;
  ev.on_stream_final = [this, prev_sfinal, several](const StreamTensors& lat) {
    if (prev_sfinal) prev_sfinal(lat);
    std::string names;
    for (const auto& [n, t] : lat) names += (names.empty() ? "" : ", ") + n;
    several(names);
    check_stream_set(lat, "final latents");
    final_ = lat;
  };
  ev.replace_noise = [this, one_latent](int step, const Shape& shape) {
    one_latent("a sampler draw");
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
  ev.on_latent = [this, prev, one_latent](int step, const Tensor& x) {
    if (prev) prev(step, x);
    one_latent("its step latent");
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
  if (!rec_.has_streams()) {
    report_.final = measure(0, 0, res.latents, rec_.final_latents, report_.tolerance);
    return;
  }
  VIDAX_CHECK(report_.steps.size() == rec_.stream_latents.size() * rec_.streams.size(),
              "--replay " << rec_.dir << ": the run compared " << report_.steps.size() / rec_.streams.size()
                          << " of the record's " << rec_.stream_latents.size() << " steps");
  VIDAX_CHECK(!final_.empty(), "--replay " << rec_.dir << ": the run gave no final stream latents");
  report_.finals.clear();
  for (const auto& [name, x] : final_) {
    report_.finals.push_back(measure(0, 0, x, rec_.stream_final.at(name), report_.tolerance, name));
    if (!report_.final || report_.finals.back().rel_l2 > report_.final->rel_l2) report_.final = report_.finals.back();
  }
  for (const auto& e : report_.finals)
    if (!e.ok) report_.final = e;
}

}  // namespace vidax::pipeline
