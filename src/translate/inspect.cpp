#include "translate/inspect.h"

#include "io/gguf.h"
#include "io/quant_policy.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace vidax::translate {

namespace fs = std::filesystem;

bool is_golden_io_key(const std::string& n) {
  return n.rfind("input.", 0) == 0 || n == "output" || n.rfind("output.", 0) == 0 || n.rfind("inter.", 0) == 0 ||
         n.rfind("scale.", 0) == 0;
}

namespace {

std::optional<Json> read_json_file(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  Json j = Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  VIDAX_CHECK(!j.is_discarded(), p.string() << ": not valid JSON");
  return j;
}

void count(Unit& u) {
  for (const auto& n : u.source->names()) {
    const TensorInfo* ti = u.source->find(n);
    DTypeStats& d = u.dtypes[ti->type_name()];  // a GGUF block type by its name (Q8_0, Q4_K)
    int64_t numel = shape_numel(ti->shape);
    uint64_t bytes = ti->nbytes();
    d.tensors++;
    d.parameters += numel;
    d.bytes += bytes;
    u.tensors++;
    u.parameters += numel;
    u.bytes += bytes;
  }
}

// Matches a group of tensors (one file, or one component's files) against the
// component that claims most of its keys. `dir` holds a config.json that may
// describe it.
Unit make_unit(std::string label, std::shared_ptr<const TensorSource> src, const fs::path& dir,
               const std::optional<Detection>& det) {
  Unit u;
  u.label = std::move(label);
  u.source = std::move(src);
  count(u);
  if (!det) return u;
  u.comp = det->comp;
  // Config: the file's own __metadata__.config (golden files) wins, then a
  // config.json beside it when it describes this component, else the shapes.
  std::optional<Json> cfg;
  bool meta_cfg = false;
  if (auto it = u.source->metadata().find("config"); it != u.source->metadata().end()) {
    Json j = Json::parse(it->second, nullptr, false);
    meta_cfg = !j.is_discarded() && u.comp->read_config(j).has_value();
  }
  std::string origin;
  if (!meta_cfg && !dir.empty()) {
    if (auto j = read_json_file(dir / "config.json"); j && u.comp->read_config(*j)) {
      cfg = *j;
      origin = (dir / "config.json").string();
    }
  }
  u.match = match(*u.source, *u.comp, cfg, det->layout);
  if (!origin.empty()) u.match.config_origin = origin;
  return u;
}

// A file, an index, or a folder of weight files (not recursive): each file is
// classified on its own, then the files of one (component, layout) are matched
// together (shards of one model).
void inspect_checkpoint(const std::string& path, std::vector<Unit>& units) {
  auto ckpt = CheckpointSource::open(path);
  std::shared_ptr<const TensorSource> all = ckpt;
  const fs::path dir = fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
  size_t golden = 0;
  if (all->metadata().count("kind")) {  // a golden file: keep only the parameters
    for (const auto& n : all->names()) golden += is_golden_io_key(n);
    all = std::make_shared<SubsetSource>(all, [](const std::string& n) { return !is_golden_io_key(n); });
  }
  std::map<std::string, std::vector<std::string>> by_file;
  for (const auto& n : all->names()) by_file[all->find(n)->file].push_back(n);
  if (by_file.empty()) {  // e.g. a golden file whose parameters the runner synthesizes
    Unit u;
    u.label = path;
    u.source = all;
    u.excluded_golden = golden;
    units.push_back(u);
    return;
  }
  // Group files by what they are. A file holding several components (LTX-2's single checkpoint: the
  // DiT, the VAEs, the vocoder under their prefixes) is split: the keys the first component's plan
  // leaves unused are detected again, and each further component (another one than those found in
  // the file) takes the keys its plan uses; keys no component takes stay with the first, unused.
  std::map<std::pair<std::string, std::string>, std::set<std::string>> groups;  // (component, layout) -> files
  std::map<std::pair<std::string, std::string>, std::set<std::string>> group_keys;  // -> its keys
  std::map<std::pair<std::string, std::string>, Detection> dets;
  std::vector<std::string> unknown;
  for (const auto& [file, names] : by_file) {
    std::set<std::string> left(names.begin(), names.end());
    std::optional<std::pair<std::string, std::string>> first;
    std::set<std::string> found;  // component names found in this file
    while (!left.empty()) {
      SubsetSource rest(all, [&](const std::string& n) { return left.count(n) > 0; }, file);
      auto d = detect(rest);
      if (!d || found.count(d->comp->name())) break;
      std::set<std::string> claimed;
      if (first) {  // a further component: only the keys its plan uses
        try {
          const Match m = match(rest, *d->comp, std::nullopt, d->layout);
          for (const auto& b : m.plan.bound) claimed.insert(b.keys.begin(), b.keys.end());
          claimed.insert(m.plan.ignored_keys.begin(), m.plan.ignored_keys.end());
        } catch (const Error&) {
          break;  // its config does not fit: leave the keys with the first component
        }
        if (claimed.empty()) break;
      } else {  // the first takes the whole file, minus what later components take
        claimed = left;
      }
      auto key = std::make_pair(d->comp->name(), d->layout);
      groups[key].insert(file);
      dets[key] = *d;
      found.insert(d->comp->name());
      if (!first) {
        first = key;
        // What the first one's plan leaves unused is looked at again.
        try {
          const Match m = match(rest, *d->comp, std::nullopt, d->layout);
          left = std::set<std::string>(m.plan.unused_keys.begin(), m.plan.unused_keys.end());
        } catch (const Error&) {
          left.clear();
        }
        group_keys[key].insert(claimed.begin(), claimed.end());
        continue;
      }
      for (const auto& k : claimed) {
        left.erase(k);
        group_keys[*first].erase(k);
        group_keys[key].insert(k);
      }
    }
    if (!first) unknown.push_back(file);
  }
  auto label_of = [&](const std::set<std::string>& files) {
    if (files.size() == 1) return *files.begin();
    return path + " (" + std::to_string(files.size()) + " files)";
  };
  for (const auto& [key, files] : groups) {
    const std::set<std::string>& keys = group_keys[key];
    auto src = std::make_shared<SubsetSource>(all, [&keys](const std::string& n) { return keys.count(n) > 0; },
                                              label_of(files));
    Unit u = make_unit(label_of(files), src, dir, dets[key]);
    u.excluded_golden = golden;
    units.push_back(std::move(u));
  }
  for (const auto& file : unknown) {
    auto src = std::make_shared<SubsetSource>(all, [&](const std::string& n) { return all->find(n)->file == file; },
                                              file);
    units.push_back(make_unit(file, src, {}, std::nullopt));
  }
}

Json stats_json(const std::map<std::string, DTypeStats>& d) {
  Json j = Json::object();
  for (const auto& [k, v] : d) j[k] = Json{{"tensors", v.tensors}, {"parameters", v.parameters}, {"bytes", v.bytes}};
  return j;
}

std::vector<std::string> missing_strings(const Plan& p) {
  std::vector<std::string> out;
  for (const auto& m : p.missing) out.push_back(m.param.name + " " + shape_str(m.param.shape));
  return out;
}

std::vector<std::string> mismatch_strings(const Plan& p) {
  std::vector<std::string> out;
  for (const auto& m : p.mismatches)
    out.push_back(m.param.name + " expects " + shape_str(m.param.shape) + ", '" + m.key + "' has " +
                  shape_str(m.found));
  return out;
}

std::vector<std::string> unmatched(const Unit& u) { return u.comp ? u.match.plan.unused_keys : u.source->names(); }

std::string human_bytes(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", b / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

// The unit that names the whole input: the DiT if there is one, else the first recognized.
const Unit* main_unit(const std::vector<Unit>& units) {
  const Unit* first = nullptr;
  for (const auto& u : units) {
    if (!u.comp) continue;
    if (u.comp->name().find("dit") != std::string::npos) return &u;
    if (!first) first = &u;
  }
  return first;
}

// NaN and Inf counts of n values of an IEEE-style format: exponent field all ones,
// mantissa zero (Inf) or not (NaN). One pass over the raw bits, vectorized by the
// compiler, threads over chunks.
template <class U>
void count_special(const U* p, int64_t n, U exp_mask, U man_mask, int64_t& nan, int64_t& inf) {
  int64_t a = 0, b = 0;
#pragma omp parallel for reduction(+ : a, b) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const U x = p[i];
    const bool special = (x & exp_mask) == exp_mask;
    a += special && (x & man_mask) != 0;
    b += special && (x & man_mask) == 0;
  }
  nan = a;
  inf = b;
}

void check_values(Unit& u) {
  u.values_checked = true;
  for (const auto& n : u.source->names()) {
    if (!dtype_is_float(u.source->find(n)->dtype)) continue;
    NonFinite f = count_non_finite(u.source->get(n));
    if (f.nan == 0 && f.inf == 0) continue;
    f.name = n;
    u.non_finite.push_back(std::move(f));
  }
}

// "name (3 NaN, 1 Inf)".
std::string non_finite_string(const NonFinite& f) {
  std::string s = f.name + " (";
  if (f.nan) s += std::to_string(f.nan) + " NaN";
  if (f.nan && f.inf) s += ", ";
  if (f.inf) s += std::to_string(f.inf) + " Inf";
  return s + ")";
}

}  // namespace

NonFinite count_non_finite(const Tensor& t) {
  NonFinite f;
  const Tensor c = t.contiguous();
  const int64_t n = c.numel();
  const void* p = c.data_ptr();
  switch (c.dtype()) {
    case DType::F64:
      count_special(static_cast<const uint64_t*>(p), n, uint64_t{0x7ff0000000000000}, uint64_t{0x000fffffffffffff},
                    f.nan, f.inf);
      break;
    case DType::F32:
      count_special(static_cast<const uint32_t*>(p), n, uint32_t{0x7f800000}, uint32_t{0x007fffff}, f.nan, f.inf);
      break;
    case DType::F16:
      count_special(static_cast<const uint16_t*>(p), n, uint16_t{0x7c00}, uint16_t{0x03ff}, f.nan, f.inf);
      break;
    case DType::BF16:
      count_special(static_cast<const uint16_t*>(p), n, uint16_t{0x7f80}, uint16_t{0x007f}, f.nan, f.inf);
      break;
    case DType::F8_E5M2:
      count_special(static_cast<const uint8_t*>(p), n, uint8_t{0x7c}, uint8_t{0x03}, f.nan, f.inf);
      break;
    case DType::F8_E4M3: {  // no Inf; NaN is S.1111.111 only
      const uint8_t* b = static_cast<const uint8_t*>(p);
      for (int64_t i = 0; i < n; ++i) f.nan += (b[i] & 0x7f) == 0x7f;
      break;
    }
    default: break;
  }
  return f;
}

InspectReport inspect(const std::string& path, const InspectOptions& opts) {
  InspectReport r;
  r.path = path;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows links: a link to a checkpoint is fine
  VIDAX_CHECK(!ec || ec == std::errc::no_such_file_or_directory, path << ": " << ec.message());  // e.g. a link loop
  VIDAX_CHECK(fs::exists(st), path << ": no such file or directory");
  // Opening a FIFO blocks until a writer comes, and a device reads forever: only a
  // regular file or a folder can be a checkpoint.
  VIDAX_CHECK(fs::is_regular_file(st) || fs::is_directory(st),
              path << ": is " << (fs::is_fifo(st) ? "a FIFO (named pipe)" : fs::is_character_file(st) ? "a character device"
                                  : fs::is_block_file(st) ? "a block device" : fs::is_socket(st) ? "a socket"
                                                                                                   : "a special file")
                   << ", not a checkpoint file or folder");
  if (fs::is_directory(path) && fs::exists(fs::path(path) / "model_index.json")) {
    // diffusers pipeline: one folder per component (transformer/, vae/, text_encoder/, ...)
    std::vector<fs::path> subs;
    for (const auto& e : fs::directory_iterator(path))
      if (e.is_directory()) subs.push_back(e.path());
    std::sort(subs.begin(), subs.end());
    for (const auto& sub : subs) {
      bool has_weights = false;
      for (const auto& e : fs::directory_iterator(sub)) {
        const std::string n = e.path().filename().string();
        has_weights |= e.is_regular_file() && (n.ends_with(".safetensors") || n.ends_with(".pth") ||
                                               n.ends_with(".pt") || n.ends_with(".bin"));
      }
      if (has_weights) inspect_checkpoint(sub.string(), r.units);  // tokenizer/, scheduler/: no weights
    }
    VIDAX_CHECK(!r.units.empty(), path << ": a diffusers pipeline folder (model_index.json) without weight files");
  } else {
    inspect_checkpoint(path, r.units);
  }
  if (opts.check_values)
    for (Unit& u : r.units) check_values(u);
  return r;
}

bool InspectReport::values_ok() const {
  for (const auto& u : units)
    if (!u.non_finite.empty()) return false;
  return true;
}

bool InspectReport::complete() const {
  if (units.empty()) return false;
  for (const auto& u : units)
    if (!u.complete()) return false;
  return true;
}

Json InspectReport::to_json() const {
  Json j;
  j["path"] = path;
  const Unit* m = main_unit(units);
  j["family"] = m ? m->comp->family() : "unknown";
  j["variant"] = m ? m->comp->variant(m->match.config) : "unknown";
  std::set<std::string> layouts;
  size_t tensors = 0;
  int64_t parameters = 0;
  uint64_t bytes = 0;
  std::map<std::string, DTypeStats> dtypes;
  Json unmatched_all = Json::array(), missing_all = Json::array(), mismatch_all = Json::array();
  Json comps = Json::array();
  for (const auto& u : units) {
    Json c;
    c["source"] = u.label;
    c["component"] = u.comp ? u.comp->name() : "unknown";
    c["tensors"] = u.tensors;
    c["parameters"] = u.parameters;
    c["bytes"] = u.bytes;
    c["dtypes"] = stats_json(u.dtypes);
    c["unmatched_keys"] = unmatched(u);
    for (const auto& k : unmatched(u)) unmatched_all.push_back(k);
    if (u.comp) {
      c["family"] = u.comp->family();
      c["variant"] = u.comp->variant(u.match.config);
      c["layout"] = u.match.layout;
      c["config"] = u.match.config;
      c["config_origin"] = u.match.config_origin;
      c["engine_parameters"] = u.match.spec.parameter_count();
      c["engine_tensors"] = u.match.spec.params.size();
      c["missing_params"] = missing_strings(u.match.plan);
      c["shape_mismatches"] = mismatch_strings(u.match.plan);
      for (const auto& s : missing_strings(u.match.plan)) missing_all.push_back(s);
      for (const auto& s : mismatch_strings(u.match.plan)) mismatch_all.push_back(s);
      layouts.insert(u.match.layout);
    } else {
      c["missing_params"] = Json::array();
      c["shape_mismatches"] = Json::array();
    }
    if (u.excluded_golden) c["excluded_golden_tensors"] = u.excluded_golden;
    c["complete"] = u.complete();
    if (u.values_checked) {
      Json nf = Json::array();
      for (const auto& f : u.non_finite) nf.push_back(Json{{"name", f.name}, {"nan", f.nan}, {"inf", f.inf}});
      c["non_finite"] = nf;
    }
    comps.push_back(c);
    tensors += u.tensors;
    parameters += u.parameters;
    bytes += u.bytes;
    for (const auto& [k, v] : u.dtypes) {
      dtypes[k].tensors += v.tensors;
      dtypes[k].parameters += v.parameters;
      dtypes[k].bytes += v.bytes;
    }
  }
  j["layout"] = layouts.size() == 1 ? *layouts.begin() : layouts.empty() ? "unknown" : "mixed";
  j["tensors"] = tensors;
  j["parameters"] = parameters;
  j["bytes"] = bytes;
  j["dtypes"] = stats_json(dtypes);
  j["unmatched_keys"] = unmatched_all;
  j["missing_params"] = missing_all;
  j["shape_mismatches"] = mismatch_all;
  j["complete"] = complete();
  if (std::any_of(units.begin(), units.end(), [](const Unit& u) { return u.values_checked; }))
    j["values_finite"] = values_ok();
  j["components"] = comps;
  return j;
}

std::string InspectReport::to_text() const {
  std::ostringstream o;
  o << path << "\n";
  for (const auto& u : units) {
    o << "  " << u.label << "\n";
    if (u.comp) {
      o << "    " << u.comp->name() << " " << u.comp->variant(u.match.config) << ", layout " << u.match.layout
        << " (config " << u.match.config_origin << ")\n";
    } else if (u.tensors == 0) {
      o << "    holds no parameters\n";
    } else {
      o << "    not a known model component\n";
    }
    o << "    " << u.tensors << " tensors, " << u.parameters << " parameters, " << human_bytes(u.bytes) << ";";
    for (const auto& [k, v] : u.dtypes) o << " " << k << " x" << v.tensors;
    o << "\n";
    if (u.excluded_golden) o << "    (" << u.excluded_golden << " golden-file input/output tensors not counted)\n";
    if (u.complete()) {
      o << "    coverage: complete, " << u.match.spec.params.size() << "/" << u.match.spec.params.size()
        << " parameters filled, every key used\n";
    } else if (u.comp) {
      const Plan& p = u.match.plan;
      o << "    coverage: INCOMPLETE (" << p.bound.size() << "/" << u.match.spec.params.size()
        << " parameters filled)\n";
      std::istringstream lines(p.problems());
      for (std::string line; std::getline(lines, line);) o << "    " << line << "\n";
    } else if (u.tensors > 0) {
      o << "    coverage: none; keys:\n";
      for (const auto& k : u.source->names()) o << "      unused: " << k << "\n";
    }
    if (u.values_checked && u.non_finite.empty()) o << "    values: all finite\n";
    if (!u.non_finite.empty()) {
      // The first few by name: one bad tensor usually means a bad file.
      constexpr size_t kShown = 8;
      o << "    values: NON-FINITE in " << u.non_finite.size() << " tensor" << (u.non_finite.size() == 1 ? "" : "s")
        << ":\n";
      for (size_t i = 0; i < std::min(kShown, u.non_finite.size()); ++i)
        o << "      " << non_finite_string(u.non_finite[i]) << "\n";
      if (u.non_finite.size() > kShown) o << "      ... and " << u.non_finite.size() - kShown << " more\n";
    }
  }
  const bool checked = std::any_of(units.begin(), units.end(), [](const Unit& u) { return u.values_checked; });
  if (!complete()) o << "FAIL: incomplete coverage\n";
  if (!values_ok()) o << "FAIL: non-finite (NaN or Inf) weights\n";
  // Unchecked, say so: a NaN weight passes a header check (issue 16).
  if (ok())
    o << (checked ? "OK: full coverage, every value finite\n"
                  : "OK: full coverage (values not read; --check-values scans them for NaN and Inf)\n");
  return o.str();
}

std::map<std::string, Tensor> load_component(const std::string& path, const Component& comp,
                                             const std::optional<Json>& config, const TranslateOptions& opts) {
  InspectReport r = inspect(path);
  std::string found;
  for (const auto& u : r.units) {
    if (u.comp == &comp) {
      Match m = config ? match(*u.source, comp, config, u.match.layout) : u.match;
      return materialize(*u.source, m.plan, opts);
    }
    found += "\n  " + u.label + ": " + (u.comp ? u.comp->name() : "not a known component");
  }
  throw Error(msg() << path << ": no " << comp.name() << " found; it holds:" << found);
}

ConvertResult convert(const std::string& in, const std::string& out, const ConvertOptions& opts) {
  std::optional<DType> cast;
  QuantType qtype = QuantType::None;
  std::optional<DType> scaled;  // fp8 / fp8_e5m2 / int8: scaled weights in safetensors
  if (DType st; opts.dtype != "keep" && io::scaled_type_from_name(opts.dtype, &st)) {
    scaled = st;
    VIDAX_CHECK(!(out.size() >= 5 && out.compare(out.size() - 5, 5, ".gguf") == 0),
                "--dtype " << opts.dtype << ": scaled fp8/int8 weights are written as safetensors, not GGUF (" << out
                           << "); GGUF's types are " << quant_names_list());
  } else if (opts.dtype != "keep" && !quant_from_name(opts.dtype, &qtype)) {
    cast = dtype_parse(opts.dtype);
    VIDAX_CHECK(dtype_is_float(*cast), "--dtype " << opts.dtype << ": only floating-point, fp8, int8 or GGUF block targets ("
                                                  << quant_names_list() << ") are supported");
  }
  VIDAX_CHECK(opts.layout == "keep" || opts.layout == "engine",
              "--layout " << opts.layout << ": expected keep or engine");
  const bool gguf = qtype != QuantType::None ||
                    (out.size() >= 5 && out.compare(out.size() - 5, 5, ".gguf") == 0);
  ConvertResult res;
  res.format = gguf ? "gguf" : "safetensors";
  std::map<std::string, Tensor> tensors;
  auto ckpt = CheckpointSource::open(in);
  std::map<std::string, std::string> meta = ckpt->metadata();
  std::set<std::string> io_keys;  // a golden file's inputs and outputs: never quantized
  auto add = [&](const std::string& name, Tensor t) {
    if (cast && (t.is_weight_only_quantized() || dtype_is_float(t.dtype()))) t = t.to(*cast);
    // GGUF has no scaled fp8/int8 tensors: a scaled weight is widened (then quantized or kept f32).
    if (gguf && t.is_scaled()) t = t.to(DType::F32);
    VIDAX_CHECK(gguf || !t.is_quantized(), in << ": tensor '" << name << "' is " << t.str()
                                              << "; safetensors has no block types: pass --dtype f32, bf16 or f16 "
                                                 "to dequantize, or write a .gguf");
    tensors.emplace(name, std::move(t));
  };
  if (opts.layout == "keep") {
    for (const auto& n : ckpt->names()) add(n, ckpt->get(n));
  } else {
    InspectReport r = inspect(in);
    std::string found;
    for (const auto& u : r.units) found += "\n  " + u.label + ": " + (u.comp ? u.comp->name() : "unknown");
    VIDAX_CHECK(r.units.size() == 1 && r.units[0].comp,
                "--layout engine converts one model component; " << in << " holds:" << found);
    const Unit& u = r.units[0];
    TranslateOptions topts = opts.translate;
    topts.cast.reset();  // cast once, in add()
    for (auto& [name, t] : materialize(*u.source, u.match.plan, topts)) add(name, t);
    // A golden file keeps its inputs and outputs beside the renamed parameters.
    for (const auto& n : ckpt->names())
      if (is_golden_io_key(n) && meta.count("kind")) {
        add(n, ckpt->get(n));
        io_keys.insert(n);
      }
    meta["config"] = u.match.config.dump();  // the engine's (original) spelling, matching the names
    res.component = u.comp->name();
  }
  for (const auto& [name, t] : tensors)
    if (is_golden_io_key(name) && meta.count("kind")) io_keys.insert(name);
  res.tensors = tensors.size();
  if (!gguf) {
    // Scaled weights (fp8 / int8): each quantized as the writer reaches it, stored as its values
    // and `<name minus .weight>.scale_weight`; fp8 files carry ComfyUI's `scaled_fp8` marker.
    std::vector<io::TensorSpec> specs;
    std::map<std::string, std::function<Tensor()>> make;
    std::map<std::string, std::pair<Tensor, int>> done;  // a quantized weight, until both halves are written
    auto put = [&](const std::string& n, DType dt, const Shape& shape, std::function<Tensor()> f) {
      VIDAX_CHECK(!make.count(n), in << ": tensor '" << n << "' would be written twice (a scale_weight beside a "
                                     << "weight that is quantized too)");
      specs.push_back({n, dt, shape});
      make[n] = std::move(f);
      res.bytes += static_cast<uint64_t>(shape_numel(shape)) * dtype_size(dt);
    };
    for (const auto& [name, t] : tensors) {
      io::QuantDecision d;
      if (scaled) {
        d = io_keys.count(name) ? io::QuantDecision{false, "a golden file's input or output"}
                                : io::quant_decision(name, t.shape(), t.dtype(), *scaled);
        if (d.quantize && io::scale_name_for(name).empty()) d = {false, "its name does not end in .weight"};
        if (d.quantize && (t.is_scaled() || t.is_quantized())) d = {false, "already quantized"};
      }
      if (d.quantize) {
        const std::string sn = io::scale_name_for(name);
        auto get = [&done, v = t, type = *scaled, name](bool scale) {
          auto it = done.find(name);
          if (it == done.end()) it = done.emplace(name, std::make_pair(Tensor::quantize_scaled(v, type), 0)).first;
          Tensor r = scale ? it->second.first.weight_scale() : it->second.first.unscaled();
          if (++it->second.second == 2) done.erase(it);
          return r;
        };
        put(name, *scaled, t.shape(), [get]() { return get(false); });
        put(sn, DType::F32, *scaled == DType::I8 ? Shape{t.size(0)} : Shape{}, [get]() { return get(true); });
        ++res.quantized;
        continue;
      }
      if (scaled) res.kept_wide[d.reason].push_back(name + " (" + t.str().substr(0, t.str().find('[')) + ")");
      std::map<std::string, Tensor> parts;
      io::split_scaled(name, t, parts);
      for (auto& [pn, pt] : parts) put(pn, pt.dtype(), pt.shape(), [pt]() { return pt; });
    }
    if (scaled) {
      const std::string type_name = *scaled == DType::F8_E4M3 ? "fp8_e4m3fn" : *scaled == DType::F8_E5M2 ? "fp8_e5m2" : "int8";
      meta["vidax.quantized"] = type_name;
      if (*scaled != DType::I8 && res.quantized > 0 && !make.count("scaled_fp8"))
        put("scaled_fp8", *scaled, {0}, [type = *scaled]() { return Tensor::empty({0}, type); });
    }
    std::sort(specs.begin(), specs.end(), [](const io::TensorSpec& a, const io::TensorSpec& b) { return a.name < b.name; });
    res.tensors = specs.size();
    io::save_safetensors_streamed(out, specs, [&](const std::string& n) { return make.at(n)(); }, meta);
    return res;
  }
  // GGUF: one tensor at a time is quantized (or dequantized), when the writer reaches it.
  std::vector<io::GgufWriteTensor> list;
  for (const auto& [name, t] : tensors) {
    io::GgufWriteTensor w{name, t.shape(), t.dtype(), QuantType::None, nullptr};
    io::QuantDecision d;
    if (qtype != QuantType::None) {
      d = io_keys.count(name) ? io::QuantDecision{false, "a golden file's input or output"}
                              : io::quant_decision(name, t.shape(), t.dtype(), qtype);
    }
    if (d.quantize) {
      w.quant = qtype;
      w.make = [v = t, qtype]() { return Tensor::quantize(v, qtype); };
      ++res.quantized;
    } else if (t.is_quantized() && qtype != QuantType::None) {  // a block tensor that cannot take the type: f32
      w.dtype = DType::F32;
      w.make = [v = t]() { return v.to(DType::F32); };
    } else {
      w.quant = t.quant();
      w.make = [v = t]() { return v; };
    }
    if (!d.quantize && qtype != QuantType::None)
      res.kept_wide[d.reason].push_back(name + " (" + (w.quant != QuantType::None ? quant_name(w.quant) : dtype_name(w.dtype)) + ")");
    res.bytes += io::TensorInfo{name, w.dtype, w.shape, out, w.quant}.nbytes();
    list.push_back(std::move(w));
  }
  if (qtype != QuantType::None) meta["vidax.quantized"] = quant_name(qtype);
  io::write_gguf(out, list, meta);
  return res;
}

}  // namespace vidax::translate
