// A model part the engine loads from a checkpoint (a Wan DiT, the Wan VAE, the
// UMT5 encoder, ...): its expected parameters come from its config, its key
// maps are one table per checkpoint layout. Detection, config inference and
// strict loading work on any component the same way.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "translate/translate.h"

namespace vidax::translate {

using Json = nlohmann::json;

class Component {
 public:
  virtual ~Component() = default;
  virtual std::string name() const = 0;    // "wan2.1-dit"
  virtual std::string family() const = 0;  // "wan2.1"
  virtual std::vector<std::string> layouts() const = 0;  // the first is the engine's own ("original")
  // The config in the component's canonical (original init-arg) spelling.
  virtual Json default_config() const = 0;
  // Reads a config in any spelling the component knows (original init args,
  // diffusers/transformers config.json); nullopt when `j` is not its config.
  virtual std::optional<Json> read_config(const Json& j) const = 0;
  // Reads what the tensors' shapes tell (dims, layer count, variant features);
  // the rest comes from default_config().
  virtual Json infer_config(const TensorSource& src, const std::string& layout) const = 0;
  virtual ParamSpec params(const Json& config) const = 0;
  virtual KeyMap keymap(const std::string& layout, const Json& config) const = 0;
  // A published variant name ("t2v-1.3B") or "custom".
  virtual std::string variant(const Json& config) const = 0;
};

// Every component registered, in registration (= detection) order. The translator
// knows none by itself: each family and text encoder registers its own, from the
// top (engine::register_builtins); registering one twice is a no-op.
void register_component(const Component& c);
const std::vector<const Component*>& components();
const Component& component(const std::string& name);  // throws listing the known names

// How many keys of `src` a (component, layout) claims, with the default config.
struct Detection {
  const Component* comp = nullptr;
  std::string layout;
  size_t claimed = 0;  // keys the layout's map would consume
};
// The (component, layout) that claims the most keys; nullopt when none claims any.
std::optional<Detection> detect(const TensorSource& src,
                                const std::vector<const Component*>& candidates = components());

// A component matched against a source: layout, config and the strict plan.
struct Match {
  const Component* comp = nullptr;
  std::string layout;
  Json config;
  std::string config_origin;  // "given", "metadata", "inferred"
  ParamSpec spec;
  Plan plan;
};

// Chooses the layout (given, else the one of comp's layouts claiming most
// keys) and the config (given, else the source's __metadata__ "config" when it
// is this component's, else inferred from shapes), then plans.
Match match(const TensorSource& src, const Component& comp, const std::optional<Json>& config = std::nullopt,
            const std::string& layout = "");

// match() + check + materialize: the engine's name -> Tensor map.
std::map<std::string, Tensor> load(const TensorSource& src, const Component& comp, const Json& config,
                                   const TranslateOptions& opts = {});

// Shared helper for infer_config: the stored info of an engine parameter
// under `layout` (nullptr when absent).
const TensorInfo* find_param(const TensorSource& src, const KeyMap& map, const std::string& engine_name);

}  // namespace vidax::translate
