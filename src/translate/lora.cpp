#include "translate/lora.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "backend/ops.h"
#include "core/error.h"

namespace vidax::translate {

namespace {

// ---- key anatomy ------------------------------------------------------------

// UpBias: PEFT's lora_bias (diffusers turns a ComfyUI diff_b into lora_B.bias): the bias
// moves by the low-rank pair's factor times it, as PEFT scales the whole lora_B output.
enum class Role { Down, Up, UpBias, Alpha, Diff, DiffB };

struct Suffix {
  const char* text;
  Role role;
};
// Longest first where one ends another (".diff_b" before ".diff").
const Suffix kSuffixes[] = {
    {".lora_down.weight", Role::Down}, {".lora_up.weight", Role::Up}, {".lora_A.weight", Role::Down},
    {".lora_B.weight", Role::Up},      {".lora_B.bias", Role::UpBias},
    {".alpha", Role::Alpha},           {".diff_b", Role::DiffB},
    {".diff", Role::Diff},
};

struct Prefix {
  const char* text;
  const char* format;
};
// The module naming of each format. kohya's names have no dots left, so it is told by its prefix alone.
const Prefix kPrefixes[] = {
    {"diffusion_model.", "comfyui"},
    {"model.diffusion_model.", "comfyui"},  // ComfyUI's full-model prefix, as some files save it
    {"lora_unet_", "kohya"},
    {"base_model.model.", "peft"},
    {"transformer.", "diffusers"},
};

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}
bool starts_with(const std::string& s, const std::string& pre) { return s.rfind(pre, 0) == 0; }

// The parts of one LoRA key; nullopt-like (empty format) when it fits no format.
struct KeyParts {
  std::string format, module;
  Role role = Role::Down;
};
bool split_key(const std::string& key, KeyParts* out) {
  for (const auto& s : kSuffixes) {
    if (!ends_with(key, s.text)) continue;
    const std::string stem = key.substr(0, key.size() - std::string(s.text).size());
    for (const auto& p : kPrefixes) {
      if (!starts_with(stem, p.text) || stem.size() == std::string(p.text).size()) continue;
      out->format = p.format;
      out->module = stem.substr(std::string(p.text).size());
      out->role = s.role;
      return true;
    }
    return false;
  }
  return false;
}

// The keys one module carries.
struct ModuleKeys {
  std::string down, up, up_bias, alpha, diff, diff_b;
  std::vector<std::string> all;
};

// ---- engine names -----------------------------------------------------------

// checkpoint key (in one layout) -> engine parameter, for the rules that store one
// engine tensor as one key's elements in order (Identity, Reshape); keys that another
// rule reads (Concat, Split: fused projections; Transpose) are kept apart so that a
// LoRA on them is named as unsupported, never applied the wrong way round or dropped.
struct ReverseIndex {
  std::map<std::string, std::string> param_of;
  std::map<std::string, std::string> fused;  // key -> "Concat into <param>" / "Split into <param>"
};

ReverseIndex reverse_index(const ParamSpec& spec, const KeyMap& map) {
  ReverseIndex r;
  for (const auto& p : spec.params) {
    auto res = resolve(map, p.name);
    if (!res) continue;
    const Transform t = res->rule->transform;
    for (const auto& k : res->keys) {
      if (t != Transform::Identity && t != Transform::Reshape) {
        r.fused[k] = std::string(transform_name(t)) + " into " + p.name;
      } else {
        r.param_of.emplace(k, p.name);
      }
    }
  }
  return r;
}

// The module a parameter key belongs to: the key without ".weight" / ".bias"
// (a bare parameter such as a modulation table is its own module).
std::string module_of(const std::string& key) {
  for (const char* s : {".weight", ".bias"})
    if (ends_with(key, s)) return key.substr(0, key.size() - std::string(s).size());
  return key;
}

std::string underscored(std::string s) {
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

// kohya module (underscores) -> module in the original layout, built from the engine's own
// names; an underscore form two modules share is ambiguous and never resolved.
struct UnderscoreIndex {
  std::map<std::string, std::string> module;
  std::set<std::string> ambiguous;
};
UnderscoreIndex underscore_index(const ReverseIndex& rev) {
  UnderscoreIndex u;
  for (const auto& [key, param] : rev.param_of) {
    const std::string m = module_of(key), us = underscored(m);
    auto [it, fresh] = u.module.emplace(us, m);
    if (!fresh && it->second != m) u.ambiguous.insert(us);
  }
  return u;
}

// ---- alpha of adapter-config formats ----------------------------------------

// PEFT's LoraConfig fields as diffusers stores them (__metadata__.lora_adapter_metadata, each
// field under the pipeline component's name: "transformer.lora_alpha") or as PEFT writes them
// (adapter_config.json): lora_alpha, alpha_pattern (module-name suffix -> alpha), use_rslora
// (factor alpha / sqrt(rank)); use_dora is refused (a DoRA magnitude is not a low-rank sum).
struct AdapterAlpha {
  bool present = false;
  double lora_alpha = 0;
  bool rslora = false;
  std::vector<std::pair<std::string, double>> pattern;
  std::optional<double> for_module(const std::string& module) const {
    for (const auto& [k, a] : pattern)
      if (module == k || ends_with(module, "." + k)) return a;
    if (present) return lora_alpha;
    return std::nullopt;
  }
};

AdapterAlpha read_adapter(const Json& raw, const std::string& where) {
  AdapterAlpha a;
  if (!raw.is_object()) return a;
  Json j = Json::object();
  for (const auto& [k, v] : raw.items()) j[starts_with(k, "transformer.") ? k.substr(12) : k] = v;
  try {
    if (j.contains("lora_alpha") && j["lora_alpha"].is_number()) {
      a.present = true;
      a.lora_alpha = j["lora_alpha"].get<double>();
    }
    if (j.contains("alpha_pattern") && j["alpha_pattern"].is_object())
      for (const auto& [k, v] : j["alpha_pattern"].items()) a.pattern.emplace_back(k, v.get<double>());
    a.rslora = j.contains("use_rslora") && j["use_rslora"].is_boolean() && j["use_rslora"].get<bool>();
  } catch (const Json::exception& e) {
    throw Error(msg() << where << ": lora_alpha / alpha_pattern are not numbers: " << e.what());
  }
  VIDAX_CHECK(!(j.contains("use_dora") && j["use_dora"].is_boolean() && j["use_dora"].get<bool>()),
              where << ": a DoRA adapter (use_dora): not supported, only plain LoRA sums");
  return a;
}

Json adapter_json(const TensorSource& lora) {
  const auto& meta = lora.metadata();
  auto it = meta.find("lora_adapter_metadata");
  if (it != meta.end()) {
    try {
      return Json::parse(it->second);
    } catch (const Json::exception& e) {
      throw Error(msg() << lora.label() << ": __metadata__.lora_adapter_metadata is not JSON: " << e.what());
    }
  }
  // PEFT's save_pretrained: adapter_model.safetensors next to adapter_config.json.
  namespace fs = std::filesystem;
  const fs::path cfg = fs::path(lora.label()).parent_path() / "adapter_config.json";
  if (fs::path(lora.label()).filename() == "adapter_model.safetensors" && fs::exists(cfg)) {
    std::ifstream f(cfg);
    try {
      return Json::parse(f);
    } catch (const Json::exception& e) {
      throw Error(msg() << cfg.string() << " is not JSON: " << e.what());
    }
  }
  return nullptr;
}

double scalar_of(const TensorSource& src, const std::string& key) {
  const Tensor t = src.get(key);
  VIDAX_CHECK(t.numel() == 1, src.label() << ": '" << key << "' should be one number, has shape " << shape_str(t.shape()));
  return t.to_f64_vector().at(0);
}

Shape trailing(const Shape& s) { return Shape(s.begin() + 1, s.end()); }

}  // namespace

LoraSpec parse_lora_spec(const std::string& arg) {
  LoraSpec s;
  s.path = arg;
  const size_t colon = arg.rfind(':');
  if (colon != std::string::npos && colon + 1 < arg.size()) {
    const std::string tail = arg.substr(colon + 1);
    char* end = nullptr;
    const double v = std::strtod(tail.c_str(), &end);
    if (end && *end == '\0') {  // a number: the scale; else ':' is part of the path
      VIDAX_CHECK(std::isfinite(v), "--lora " << arg << ": the scale " << tail << " is not finite");
      s.path = arg.substr(0, colon);
      s.scale = v;
    }
  }
  VIDAX_CHECK(!s.path.empty(), "--lora " << arg << ": no file named");
  return s;
}

LoraMode parse_lora_mode(const std::string& s) {
  if (s == "merge") return LoraMode::Merge;
  if (s == "runtime") return LoraMode::Runtime;
  if (s == "auto") return LoraMode::Auto;
  throw Error(msg() << "--lora-mode " << s << ": choose merge, runtime or auto");
}

const char* lora_mode_name(LoraMode m) {
  switch (m) {
    case LoraMode::Merge: return "merge";
    case LoraMode::Runtime: return "runtime";
    case LoraMode::Auto: return "auto";
  }
  return "?";
}

bool looks_like_lora(const TensorSource& src) {
  for (const auto& n : src.names()) {
    KeyParts k;
    if (split_key(n, &k)) return true;
  }
  return false;
}

namespace {

// shapes = false: names only (inspect_lora's first pass, before the config is known).
LoraPlan plan_impl(const TensorSource& lora, const Component& comp, const Json& config, bool shapes) {
  LoraPlan plan;
  plan.label = lora.label();

  // Group the keys by (format, module); keys of no format are unmatched.
  std::map<std::string, ModuleKeys> modules;
  std::set<std::string> formats;
  for (const auto& key : lora.names()) {
    KeyParts k;
    if (!split_key(key, &k)) {
      plan.unmatched.push_back(key);
      continue;
    }
    formats.insert(k.format);
    ModuleKeys& m = modules[k.module];
    m.all.push_back(key);
    std::string* slot = k.role == Role::Down     ? &m.down
                        : k.role == Role::Up     ? &m.up
                        : k.role == Role::UpBias ? &m.up_bias
                        : k.role == Role::Alpha  ? &m.alpha
                        : k.role == Role::Diff   ? &m.diff
                                                 : &m.diff_b;
    if (!slot->empty()) plan.problems.push_back("module " + k.module + " has both " + *slot + " and " + key);
    *slot = key;
  }
  if (formats.empty())
    throw Error(msg() << lora.label() << ": not a LoRA file: no key is diffusion_model.* / lora_unet_* / transformer.* / "
                      << "base_model.model.* ending in lora_down/lora_up/lora_A/lora_B/alpha/diff/diff_b ("
                      << lora.names().size() << " keys)");
  if (formats.size() > 1) {
    std::string list;
    for (const auto& f : formats) list += (list.empty() ? "" : ", ") + f;
    throw Error(msg() << lora.label() << ": keys of several LoRA formats in one file (" << list << ")");
  }
  plan.format = *formats.begin();
  const bool diffusers_names = plan.format == "diffusers" || plan.format == "peft";
  const std::vector<std::string> layouts = comp.layouts();
  plan.layout = diffusers_names ? "diffusers" : layouts.at(0);
  VIDAX_CHECK(std::find(layouts.begin(), layouts.end(), plan.layout) != layouts.end(),
              lora.label() << ": a " << plan.format << " LoRA names " << plan.layout << " modules, but " << comp.name()
                           << " has no " << plan.layout << " layout");

  const ParamSpec spec = comp.params(config);
  const ReverseIndex rev = reverse_index(spec, comp.keymap(plan.layout, config));
  const UnderscoreIndex us = plan.format == "kohya" ? underscore_index(rev) : UnderscoreIndex{};
  const AdapterAlpha adapter = diffusers_names ? read_adapter(adapter_json(lora), lora.label()) : AdapterAlpha{};

  std::set<std::string> targeted;
  auto unmatched = [&plan](const ModuleKeys& m) {
    for (const auto& k : m.all) plan.unmatched.push_back(k);
  };
  // The engine parameter stored under `key`, or "" (a fused key is a problem, named).
  auto param_for = [&](const std::string& key, const std::string& lora_key) -> std::string {
    if (auto it = rev.param_of.find(key); it != rev.param_of.end()) return it->second;
    if (auto it = rev.fused.find(key); it != rev.fused.end())
      plan.problems.push_back(lora_key + ": targets " + key + ", which the " + plan.layout + " layout reads as " +
                              it->second + " (a LoRA on a fused or split projection is not supported)");
    return "";
  };

  for (const auto& [file_module, m] : modules) {
    std::string module = file_module;
    if (plan.format == "kohya") {
      if (us.ambiguous.count(file_module)) {
        plan.problems.push_back("lora_unet_" + file_module + ": its underscore name fits several modules");
        continue;
      }
      auto it = us.module.find(file_module);
      if (it == us.module.end()) {
        unmatched(m);
        continue;
      }
      module = it->second;
    }
    if (!m.down.empty() || !m.up.empty()) {
      if (m.down.empty() || m.up.empty()) {
        plan.problems.push_back("module " + file_module + ": " + (m.down.empty() ? m.up : m.down) + " without its " +
                                (m.down.empty() ? "down (lora_down / lora_A)" : "up (lora_up / lora_B)"));
        continue;
      }
      const std::string param = param_for(module + ".weight", m.down);
      if (param.empty()) {
        for (const auto* k : {&m.down, &m.up, &m.alpha})
          if (!k->empty()) plan.unmatched.push_back(*k);
      } else {
        const ParamInfo* pi = spec.find(param);
        const TensorInfo* down = lora.find(m.down);
        const TensorInfo* up = lora.find(m.up);
        LoraTarget t;
        t.kind = LoraTarget::Kind::LowRank;
        t.module = file_module;
        t.param = param;
        t.down_key = m.down;
        t.up_key = m.up;
        // down [rank, in...] (a Conv3d's down has the kernel), up [out, rank, 1...].
        const bool shapes_ok = down->shape.size() >= 2 && up->shape.size() >= 2 && pi->shape.size() >= 2 &&
                               up->shape[1] == down->shape[0] && shape_numel(trailing(up->shape)) == up->shape[1] &&
                               up->shape[0] == pi->shape[0] &&
                               shape_numel(trailing(down->shape)) == shape_numel(trailing(pi->shape));
        if (!shapes_ok && (shapes || down->shape.size() < 2 || up->shape.size() < 2)) {
          plan.problems.push_back(m.down + " " + shape_str(down->shape) + " and " + m.up + " " + shape_str(up->shape) +
                                  " do not make " + param + " " + shape_str(pi->shape));
          continue;
        }
        t.rank = down->shape[0];
        if (!m.alpha.empty()) {
          t.alpha = scalar_of(lora, m.alpha);
          t.alpha_from = "key";
        } else if (auto a = adapter.for_module(file_module)) {
          t.alpha = *a;
          t.alpha_from = "metadata";
          t.rslora = adapter.rslora;
        } else {
          t.alpha = static_cast<double>(t.rank);
          t.alpha_from = "none (factor 1)";
        }
        plan.targets.push_back(t);
        targeted.insert(param);
      }
    } else if (!m.alpha.empty() || !m.up_bias.empty()) {
      plan.problems.push_back((m.alpha.empty() ? m.up_bias : m.alpha) + ": without lora_down / lora_up");
      continue;
    }
    auto add_diff = [&](const std::string& key, const std::vector<std::string>& candidates, double factor = 1.0) {
      std::string param;
      for (const auto& c : candidates)
        if (param.empty()) param = param_for(c, key);
      if (param.empty()) return false;
      const ParamInfo* pi = spec.find(param);
      const TensorInfo* d = lora.find(key);
      if (shapes && shape_numel(d->shape) != shape_numel(pi->shape)) {
        plan.problems.push_back(key + " " + shape_str(d->shape) + " does not fit " + param + " " + shape_str(pi->shape));
        return true;
      }
      LoraTarget t;
      t.kind = LoraTarget::Kind::Diff;
      t.module = file_module;
      t.param = param;
      t.diff_key = key;
      t.diff_factor = factor;
      plan.targets.push_back(t);
      targeted.insert(param);
      return true;
    };
    // diff: the module's weight, or the module itself when it is a bare parameter (modulation).
    if (!m.diff.empty() && !add_diff(m.diff, {module + ".weight", module})) plan.unmatched.push_back(m.diff);
    if (!m.diff_b.empty() && !add_diff(m.diff_b, {module + ".bias"})) plan.unmatched.push_back(m.diff_b);
    if (!m.up_bias.empty()) {
      const bool paired = !plan.targets.empty() && plan.targets.back().kind == LoraTarget::Kind::LowRank &&
                          plan.targets.back().down_key == m.down;
      if (!paired || !add_diff(m.up_bias, {module + ".bias"}, plan.targets.back().factor()))
        plan.unmatched.push_back(m.up_bias);
    }
  }
  std::sort(plan.unmatched.begin(), plan.unmatched.end());
  plan.unmatched.erase(std::unique(plan.unmatched.begin(), plan.unmatched.end()), plan.unmatched.end());
  for (const auto& p : spec.params) {
    const bool weight = p.shape.size() >= 2;
    (weight ? plan.weight_params : plan.other_params)++;
    if (targeted.count(p.name)) (weight ? plan.targeted_weights : plan.targeted_other)++;
  }
  return plan;
}

}  // namespace

LoraPlan plan_lora(const TensorSource& lora, const Component& comp, const Json& config) {
  return plan_impl(lora, comp, config, /*shapes=*/true);
}

std::string LoraPlan::summary() const {
  std::ostringstream o;
  std::map<int64_t, size_t> ranks;
  std::map<std::string, size_t> alphas;
  size_t low = 0, diff = 0;
  for (const auto& t : targets) {
    if (t.kind == LoraTarget::Kind::LowRank) {
      ++low;
      ranks[t.rank]++;
      std::ostringstream a;
      a << t.alpha << " (" << t.alpha_from << ")";
      alphas[a.str()]++;
    } else {
      ++diff;
    }
  }
  o << "format: " << format << " (module names of the " << layout << " layout)\n";
  o << "targets: " << targets.size() << " (" << low << " low-rank, " << diff << " full differences)\n";
  o << "rank:";
  for (const auto& [r, n] : ranks) o << " " << r << " x" << n;
  o << "\nalpha:";
  for (const auto& [a, n] : alphas) o << " " << a << " x" << n;
  o << "\ncoverage: " << targeted_weights << "/" << weight_params << " weights, " << targeted_other << "/"
    << other_params << " 1-D parameters (biases, gains)\n";
  return o.str();
}

void check_lora(const LoraPlan& p, const LoraOptions& opt) {
  std::ostringstream o;
  if (!p.problems.empty()) {
    o << p.label << ": " << p.problems.size() << " LoRA tensor(s) do not fit the model:";
    for (const auto& s : p.problems) o << "\n  " << s;
  }
  if (!p.unmatched.empty() && !opt.allow_unmatched) {
    if (!o.str().empty()) o << "\n";
    o << p.label << ": " << p.unmatched.size() << " LoRA key(s) (" << p.format
      << " format) change no parameter of the model (--lora-allow-unmatched proceeds without them):";
    for (const auto& k : p.unmatched) o << "\n  " << k;
  }
  if (!o.str().empty()) throw Error(o.str());
}

namespace {

// A LoRA none of whose keys changes `comp` but whose targets another family's component takes
// (a Wan LoRA given to LTX-2): refused naming both families, whatever --lora-allow-unmatched says.
void refuse_other_family(const TensorSource& lora, const LoraPlan& plan, const Component& comp) {
  if (!plan.targets.empty() || plan.unmatched.empty()) return;
  std::vector<const Component*> others;
  for (const Component* c : components())
    if (c->family() != comp.family()) others.push_back(c);
  if (others.empty()) return;
  std::optional<LoraInspection> found;
  try {
    found = inspect_lora(lora, others);
  } catch (const Error&) {
    return;  // no other family takes it either: the unmatched-key error names the keys
  }
  if (found->plan.targets.empty()) return;
  throw Error(msg() << lora.label() << ": a " << found->comp->family() << " LoRA (its " << found->plan.targets.size()
                    << " targets are " << found->comp->name() << " parameters), given to a " << comp.family()
                    << " model (" << comp.name() << "): none of its keys changes this model");
}

}  // namespace

std::vector<LoraPlan> apply_loras(std::map<std::string, Tensor>& params, const std::vector<LoraSpec>& loras,
                                  const Component& comp, const Json& config, const LoraOptions& opt,
                                  const std::function<void(const std::string&)>& warn, LoraDeltas* runtime) {
  VIDAX_CHECK(opt.mode == LoraMode::Merge || runtime,
              "apply_loras: --lora-mode " << lora_mode_name(opt.mode) << " needs a place for the runtime LoRAs");
  // Every file planned and checked first: a bad second LoRA stops the load before anything merges.
  std::vector<std::shared_ptr<CheckpointSource>> sources;
  std::vector<LoraPlan> plans;
  for (const auto& spec : loras) {
    sources.push_back(CheckpointSource::open(spec.path));
    plans.push_back(plan_lora(*sources.back(), comp, config));
    refuse_other_family(*sources.back(), plans.back(), comp);
    check_lora(plans.back(), opt);
  }
  // Then parameter by parameter: an fp32 copy, every LoRA's update added in order, one cast back.
  // Only one parameter's fp32 sum is alive at a time (the whole model's would double a bf16
  // model's memory); the merged tensors replace the (mapped) originals in the storage dtype.
  struct Update {
    const LoraTarget* target;
    size_t lora;
  };
  std::map<std::string, std::vector<Update>> by_param;
  for (size_t l = 0; l < plans.size(); ++l) {
    const LoraPlan& plan = plans[l];
    if (!plan.unmatched.empty() && warn) {
      std::string list;
      for (const auto& k : plan.unmatched) list += "\n  " + k;
      warn(loras[l].path + ": " + std::to_string(plan.unmatched.size()) + " LoRA key(s) change nothing:" + list);
    }
    for (const auto& t : plan.targets) {
      VIDAX_CHECK(params.count(t.param), loras[l].path << ": the model has no loaded parameter " << t.param);
      by_param[t.param].push_back({&t, l});
    }
  }
  for (const auto& [name, updates] : by_param) {
    Tensor& p = params.at(name);
    const Shape shape = p.shape();
    // Kept at run time: a Linear's weight (named *.weight, 2-D or a Conv3d kernel) the mode
    // asks for; its stored bytes are not touched. Everything else merges.
    const bool quantized = p.is_weight_only_quantized() || p.dtype() == DType::F8_E4M3 ||
                           p.dtype() == DType::F8_E5M2 || p.dtype() == DType::I8;
    const bool linear_weight = shape.size() >= 2 && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    const bool keep = linear_weight && (opt.mode == LoraMode::Runtime || (opt.mode == LoraMode::Auto && quantized));
    if (keep) {
      std::vector<LoraDelta>& out = (*runtime)[name];
      for (const auto& u : updates) {
        const LoraTarget& t = *u.target;
        const TensorSource& src = *sources[u.lora];
        const double s = loras[u.lora].scale * t.factor();
        LoraDelta d;
        d.label = loras[u.lora].path;
        if (t.kind == LoraTarget::Kind::LowRank) {
          d.up = ops::scale(src.get(t.up_key).to(DType::F32).reshape({shape[0], t.rank}), s);
          d.down = src.get(t.down_key).to(DType::F32).reshape({t.rank, -1}).contiguous();
        } else {
          d.up = ops::scale(src.get(t.diff_key).to(DType::F32).reshape({shape[0], -1}), s);
        }
        out.push_back(std::move(d));
        ++plans[u.lora].kept_runtime;
      }
      continue;
    }
    VIDAX_CHECK(!quantized, loras[updates.front().lora].path
                                << ": " << name << " is stored quantized ("
                                << (p.is_quantized() ? "block-quantized" : dtype_name(p.dtype()))
                                << "); merging would rewrite it: use --lora-mode runtime or auto (docs/lora.md)");
    for (const auto& u : updates) ++plans[u.lora].merged;
    Tensor sum = p.to(DType::F32).clone();
    for (const auto& u : updates) {
      const LoraTarget& t = *u.target;
      const TensorSource& src = *sources[u.lora];
      const double s = loras[u.lora].scale * t.factor();
      Tensor delta;
      if (t.kind == LoraTarget::Kind::LowRank) {
        const Tensor up = src.get(t.up_key).to(DType::F32);
        const Tensor down = src.get(t.down_key).to(DType::F32);
        delta = ops::matmul(up.reshape({up.size(0), t.rank}), down.reshape({t.rank, -1})).reshape(shape);
      } else {
        delta = src.get(t.diff_key).to(DType::F32).reshape(shape);
      }
      sum = ops::add(sum, ops::scale(delta, s));
    }
    p = sum.to(p.dtype());
  }
  return plans;
}

// ---- inspect ----------------------------------------------------------------

namespace {

// The largest "blocks.<i>" / "blocks_<i>" index in the file's keys, + 1 (0 when none).
int64_t block_count(const TensorSource& lora) {
  int64_t n = 0;
  for (const auto& key : lora.names())
    for (const char* pre : {"blocks.", "blocks_"}) {
      size_t at = key.find(pre);
      if (at == std::string::npos) continue;
      at += std::string(pre).size();
      size_t end = at;
      while (end < key.size() && std::isdigit(static_cast<unsigned char>(key[end]))) ++end;
      if (end > at) n = std::max<int64_t>(n, std::stoll(key.substr(at, end - at)) + 1);
    }
  return n;
}

// The shapes of the model parameters a plan's targets imply, under the plan's layout.
std::shared_ptr<MemorySource> implied_checkpoint(const TensorSource& lora, const LoraPlan& plan, const KeyMap& map) {
  auto src = std::make_shared<MemorySource>(lora.label());
  for (const auto& t : plan.targets) {
    auto res = resolve(map, t.param);
    if (!res || res->keys.empty()) continue;
    Shape shape;
    if (t.kind == LoraTarget::Kind::LowRank) {
      const Shape& down = lora.find(t.down_key)->shape;
      shape = {lora.find(t.up_key)->shape[0]};
      shape.insert(shape.end(), down.begin() + 1, down.end());
    } else {
      shape = lora.find(t.diff_key)->shape;
    }
    src->add(res->keys[0], DType::F32, shape);
  }
  return src;
}

}  // namespace

LoraInspection inspect_lora(const TensorSource& lora, const std::vector<const Component*>& candidates) {
  LoraInspection best;
  size_t best_targets = 0;
  std::string errors;
  for (const Component* c : candidates) {
    try {
      // Names first, with the default config widened to the file's block count; then the
      // config the implied shapes tell, and the plan against it.
      Json cfg = c->default_config();
      if (cfg.contains("num_layers")) cfg["num_layers"] = std::max<int64_t>(block_count(lora), 1);
      LoraPlan names = plan_impl(lora, *c, cfg, /*shapes=*/false);
      if (names.targets.size() <= best_targets) continue;
      auto implied = implied_checkpoint(lora, names, c->keymap(names.layout, cfg));
      Json inferred = c->infer_config(*implied, names.layout);
      if (inferred.contains("num_layers")) inferred["num_layers"] = cfg["num_layers"];
      best.comp = c;
      best.config = inferred;
      best.plan = plan_lora(lora, *c, inferred);
      best_targets = names.targets.size();
    } catch (const Error& e) {
      errors += std::string("\n  ") + c->name() + ": " + e.what();
    }
  }
  VIDAX_CHECK(best.comp, lora.label() << ": no component takes any of this LoRA's targets" << errors);
  return best;
}

std::string LoraInspection::to_text() const {
  std::ostringstream o;
  o << plan.label << ": LoRA for " << comp->name() << " (" << comp->variant(config) << "-shaped: config inferred from "
    << "the LoRA's shapes)\n";
  o << plan.summary();
  for (const auto& t : plan.targets) {
    o << "  " << t.param << " <- ";
    if (t.kind == LoraTarget::Kind::LowRank)
      o << t.up_key << " @ " << t.down_key << "  rank " << t.rank << ", alpha " << t.alpha << " (" << t.alpha_from
        << "), factor " << t.factor() << "\n";
    else
      o << t.diff_key << "  (full difference)\n";
  }
  if (!plan.unmatched.empty()) {
    o << "unmatched keys (" << plan.unmatched.size() << "):\n";
    for (const auto& k : plan.unmatched) o << "  " << k << "\n";
  }
  if (!plan.problems.empty()) {
    o << "problems (" << plan.problems.size() << "):\n";
    for (const auto& k : plan.problems) o << "  " << k << "\n";
  }
  o << (plan.unmatched.empty() && plan.problems.empty() ? "OK: every key applies\n" : "NOT OK\n");
  return o.str();
}

}  // namespace vidax::translate
