#include "translate/component.h"

#include <mutex>
#include <set>

namespace vidax::translate {

namespace {
std::vector<const Component*>& registry() {
  static std::vector<const Component*> all;
  return all;
}
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

void register_component(const Component& c) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (const Component* r : registry())
    if (r->name() == c.name()) {
      VIDAX_CHECK(r == &c, "two translator components are named '" << c.name() << "'");
      return;
    }
  registry().push_back(&c);
}

const std::vector<const Component*>& components() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return registry();
}

const Component& component(const std::string& name) {
  std::string known;
  for (const auto* c : components()) {
    if (c->name() == name) return *c;
    known += (known.empty() ? "" : ", ") + c->name();
  }
  VIDAX_CHECK(!known.empty(), "unknown model component '" << name
                                   << "': no components are registered (call engine::register_builtins() first)");
  throw Error(msg() << "unknown model component '" << name << "' (known: " << known << ")");
}

// Keys of src that the layout's map names for some parameter of spec.
static size_t claimed_keys(const TensorSource& src, const ParamSpec& spec, const KeyMap& map) {
  std::set<std::string> hit;
  for (const auto& p : spec.params) {
    auto rr = resolve(map, p.name);
    if (!rr) continue;
    for (const auto& k : rr->keys)
      if (src.contains(k)) hit.insert(k);
  }
  return hit.size();
}

std::optional<Detection> detect(const TensorSource& src, const std::vector<const Component*>& candidates) {
  std::optional<Detection> best;
  size_t best_expected = 0;
  for (const auto* c : candidates) {
    const Json defaults = c->default_config();
    const ParamSpec default_spec = c->params(defaults);
    for (const auto& layout : c->layouts()) {
      // Claims counted with the config the file's shapes give (its biases, layer count), so that a
      // component is not out-claimed only because its defaults lack a feature the file has (a
      // Llama with attention biases taken for a Qwen2); the defaults where nothing can be inferred.
      Json cfg = defaults;
      ParamSpec spec = default_spec;
      try {
        Json inferred = c->infer_config(src, layout);
        ParamSpec s = c->params(inferred);
        cfg = std::move(inferred);
        spec = std::move(s);
      } catch (const Error&) {
      }
      size_t n = claimed_keys(src, spec, c->keymap(layout, cfg));
      // Most keys claimed wins; on a tie, the component expecting fewer
      // parameters (a decoder-only file is the VAE decoder, not a VAE missing half).
      size_t expected = spec.params.size();
      if (n > 0 && (!best || n > best->claimed || (n == best->claimed && expected < best_expected))) {
        best = Detection{c, layout, n};
        best_expected = expected;
      }
    }
  }
  return best;
}

Match match(const TensorSource& src, const Component& comp, const std::optional<Json>& config,
            const std::string& layout) {
  Match m;
  m.comp = &comp;
  m.layout = layout;
  if (m.layout.empty()) {
    auto d = detect(src, {&comp});
    m.layout = d ? d->layout : comp.layouts().front();
  } else {
    bool known = false;
    for (const auto& l : comp.layouts()) known |= l == m.layout;
    VIDAX_CHECK(known, comp.name() << " has no layout '" << m.layout << "'");
  }
  if (config) {
    auto c = comp.read_config(*config);
    VIDAX_CHECK(c, src.label() << ": the given config is not a " << comp.name() << " config: " << config->dump());
    m.config = *c;
    m.config_origin = "given";
  } else {
    auto it = src.metadata().find("config");
    std::optional<Json> c;
    if (it != src.metadata().end()) {
      Json j = Json::parse(it->second, nullptr, /*allow_exceptions=*/false);
      VIDAX_CHECK(!j.is_discarded(), src.label() << ": __metadata__.config is not valid JSON");
      c = comp.read_config(j);
    }
    if (c) {
      m.config = *c;
      m.config_origin = "metadata";
    } else {
      m.config = comp.infer_config(src, m.layout);
      m.config_origin = "inferred";
    }
  }
  m.spec = comp.params(m.config);
  m.plan = plan(src, m.spec, comp.keymap(m.layout, m.config));
  return m;
}

std::map<std::string, Tensor> load(const TensorSource& src, const Component& comp, const Json& config,
                                   const TranslateOptions& opts) {
  Match m = match(src, comp, config);
  return materialize(src, m.plan, opts);
}

const TensorInfo* find_param(const TensorSource& src, const KeyMap& map, const std::string& engine_name) {
  auto rr = resolve(map, engine_name);
  if (!rr) return nullptr;
  for (const auto& k : rr->keys)
    if (const TensorInfo* ti = src.find(k)) return ti;
  return nullptr;
}

}  // namespace vidax::translate
