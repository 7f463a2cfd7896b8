#include "parity/parity.h"

#include "io/quant_policy.h"

#include <cmath>
#include <mutex>
#include <set>

#include "core/error.h"

namespace vidax::parity {

namespace {
std::map<std::string, Runner>& registry() {
  static std::map<std::string, Runner> r;
  return r;
}
// The kinds whose runner merges Options::loras; the others refuse them rather than ignore them.
std::set<std::string>& lora_kinds() {
  static std::set<std::string> r;
  return r;
}
// The kinds whose parameters Options::quantize reaches.
std::set<std::string>& quantize_kinds() {
  static std::set<std::string> r;
  return r;
}
// The kinds whose runner runs on --device pjrt.
std::set<std::string>& pjrt_kinds() {
  static std::set<std::string> r;
  return r;
}
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
}  // namespace

void register_kind(const std::string& kind, Runner runner, bool takes_loras, bool takes_quantize, bool takes_pjrt) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[kind] = std::move(runner);
  if (takes_loras) lora_kinds().insert(kind);
  if (takes_quantize) quantize_kinds().insert(kind);
  if (takes_pjrt) pjrt_kinds().insert(kind);
}

std::vector<std::string> registered_kinds() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<std::string> out;
  for (auto& [k, _] : registry()) out.push_back(k);
  return out;
}

std::map<std::string, Tensor> Golden::with_prefix(const std::string& prefix) const {
  std::map<std::string, Tensor> out;
  for (const auto& n : file.names())
    if (starts_with(n, prefix)) out.emplace(n.substr(prefix.size()), file.get(n));
  return out;
}

Tensor Golden::input(const std::string& name) const {
  const std::string key = "input." + name;
  VIDAX_CHECK(file.contains(key), path << ": golden file of kind '" << kind << "' has no tensor '" << key << "'");
  return file.get(key);
}

double default_rtol(const std::string& precision) {
  if (precision == "fp32") return 1e-5;
  if (precision == "bf16") return 1e-2;
  throw Error(msg() << "unknown precision '" << precision << "' (expected fp32 or bf16)");
}

Comparison compare(const std::string& name, const Tensor& expected, const Tensor& got, double rtol) {
  Comparison c;
  c.name = name;
  if (expected.shape() != got.shape()) {
    c.status = Comparison::Status::Fail;
    c.note = "shape " + shape_str(got.shape()) + " != expected " + shape_str(expected.shape());
    c.max_abs = c.mean_abs = c.rel_l2 = INFINITY;
    return c;
  }
  const std::vector<double> e = expected.to_f64_vector(), g = got.to_f64_vector();
  double num = 0, den = 0, sum_abs = 0, max_abs = 0;
  bool nonfinite = false;
  for (size_t i = 0; i < e.size(); ++i) {
    const double d = g[i] - e[i];
    if (!std::isfinite(g[i]) && !(std::isnan(g[i]) && std::isnan(e[i]))) nonfinite = true;
    if (std::isnan(e[i]) && std::isnan(g[i])) continue;
    num += d * d;
    den += e[i] * e[i];
    sum_abs += std::fabs(d);
    max_abs = std::max(max_abs, std::fabs(d));
  }
  c.max_abs = max_abs;
  c.mean_abs = e.empty() ? 0 : sum_abs / static_cast<double>(e.size());
  // Relative L2; an all-zero reference compares the absolute L2 instead.
  c.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  const bool ok = !nonfinite && c.rel_l2 <= rtol;
  c.status = ok ? Comparison::Status::Ok : Comparison::Status::Fail;
  if (nonfinite) c.note = "non-finite values produced";
  return c;
}

std::string golden_precision(const Golden& g) {
  const auto& meta = g.file.metadata();
  auto it = meta.find("precision");
  if (it != meta.end()) return it->second;
  const std::string suffix = "_bf16.safetensors";
  if (g.path.size() >= suffix.size() && g.path.compare(g.path.size() - suffix.size(), suffix.size(), suffix) == 0)
    return "bf16";
  return "fp32";
}

Report run(const std::string& path, const Options& opt_in) {
  Golden g{path, io::Checkpoint::open(path), "", nlohmann::json::object()};
  const auto& meta = g.file.metadata();
  auto kit = meta.find("kind");
  VIDAX_CHECK(kit != meta.end(), path << ": not a golden file (no __metadata__.kind)");
  g.kind = kit->second;
  auto cit = meta.find("config");
  if (cit != meta.end()) {
    try {
      g.config = nlohmann::json::parse(cit->second);
    } catch (const std::exception& e) {
      throw Error(msg() << path << ": __metadata__.config is not valid JSON: " << e.what());
    }
  }
  Runner runner;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(g.kind);
    if (it == registry().end()) {
      std::string known;
      for (auto& [k, _] : registry()) known += (known.empty() ? "" : ", ") + k;
      // The registry starts empty: the kinds live above this layer and are registered from the top.
      if (known.empty()) known = "none registered; call engine::register_builtin_kinds() first";
      throw Error(msg() << path << ": unknown golden kind '" << g.kind << "' (known: " << known << ")");
    }
    runner = it->second;
    VIDAX_CHECK(opt_in.loras.empty() || lora_kinds().count(g.kind),
                path << ": --lora given, but kind '" << g.kind << "' does not take LoRAs (only the DiT kinds do)");
    VIDAX_CHECK(opt_in.quantize.empty() || quantize_kinds().count(g.kind),
                path << ": --quantize given, but kind '" << g.kind << "' has no weights it quantizes (wan.dit and t5.encoder do)");
    VIDAX_CHECK(opt_in.device.empty() || opt_in.device == "cpu" || (opt_in.device == "pjrt" && pjrt_kinds().count(g.kind)),
                path << ": --device " << opt_in.device << ": kind '" << g.kind << "' runs on "
                     << (pjrt_kinds().count(g.kind) ? "cpu or pjrt" : "the cpu only (docs/pjrt.md lists what runs on pjrt)"));
  }
  if (!opt_in.quantize.empty()) {
    QuantType q = QuantType::None;
    DType scaled = DType::F32;
    const bool is_scaled = io::scaled_type_from_name(opt_in.quantize, &scaled);
    VIDAX_CHECK(is_scaled || quant_from_name(opt_in.quantize, &q),
                "--quantize " << opt_in.quantize << ": not a GGUF block type (" << quant_names_list()
                              << ") nor fp8, fp8_e5m2, int8");
    // The golden's inputs, outputs and taps stay as they are; its parameters take the type.
    const auto keep = [](const std::string& n) {
      return starts_with(n, "input.") || n == "output" || starts_with(n, "output.") || starts_with(n, "inter.") ||
             starts_with(n, "scale.");
    };
    g.file = is_scaled ? g.file.scaled(scaled, keep) : g.file.quantized(q, keep);
  }
  Options opt = opt_in;
  if (opt.precision.empty()) opt.precision = golden_precision(g);
  const double rtol = opt.rtol >= 0 ? opt.rtol : default_rtol(opt.precision);
  Produced produced;
  try {
    produced = runner(g, opt);
  } catch (const nlohmann::json::exception& e) {
    // A runner reads the golden's config fields; a wrong type is the file's fault, named with it.
    throw Error(msg() << path << ": __metadata__.config has a field of the wrong type or a missing one: " << e.what());
  }

  Report rep;
  rep.kind = g.kind;
  rep.precision = opt.precision;
  rep.rtol = rtol;
  for (const auto& name : g.file.names()) {
    const bool is_output = name == "output" || starts_with(name, "output.");
    const bool is_inter = starts_with(name, "inter.");
    if (!is_output && !is_inter) continue;
    auto it = produced.find(name);
    if (it == produced.end()) {
      Comparison c;
      c.name = name;
      if (is_output) {
        c.status = Comparison::Status::Fail;
        c.note = "not produced by the engine";
        ++rep.compared;
      } else {
        c.status = Comparison::Status::Skip;
        c.note = "point not exposed by the engine";
      }
      rep.rows.push_back(c);
      continue;
    }
    Comparison c = compare(name, g.file.get(name), it->second, rtol);
    ++rep.compared;
    if (c.status == Comparison::Status::Ok) ++rep.passed;
    rep.rows.push_back(std::move(c));
  }
  return rep;
}

}  // namespace vidax::parity
