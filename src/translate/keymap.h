// Key maps as data: for one checkpoint layout, an ordered table of rules, each
// "engine parameter name pattern <- checkpoint key pattern(s), transform".
//
// The engine's parameter names are the official checkpoint names, so a map
// runs from the engine name to the key(s) a layout stores it under; that way
// one engine tensor can come from several keys (fused q/k/v) or several engine
// tensors from one key (a split), and every direction is one table row.
//
// Patterns are dotted names whose segments are literals, "{x}" (exactly one
// segment) or "{x*}" (one or more segments); a capture used on both sides is
// copied over: {"blocks.{i}.self_attn.q.{p}", {"blocks.{i}.attn1.to_q.{p}"}}.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::translate {

enum class Transform {
  Identity,   // same tensor (zero-copy)
  Transpose,  // swap dims a,b of the stored tensor (materializes)
  Reshape,    // same elements, the engine's shape (a view when contiguous)
  Concat,     // engine tensor = the keys concatenated along dim (fuse; materializes)
  Split,      // engine tensor = part `part` of `parts` equal chunks of the key along dim (a view)
  SwapHalves,  // engine tensor = the key with its two halves along dim swapped (materializes): diffusers'
               // AdaLayerNormContinuous stores [scale; shift] where the original stores [shift; scale]
};
const char* transform_name(Transform t);

struct Rule {
  std::string engine;                // engine-name pattern
  std::vector<std::string> keys;     // Identity/Transpose/Reshape/Split: alternatives (aliases), the first
                                     // present is used and every present one consumed; Concat: the parts
  Transform transform = Transform::Identity;
  int dim = 0;                       // Concat/Split/SwapHalves axis; Transpose: first axis
  int dim2 = 1;                      // Transpose: second axis
  int part = 0, parts = 1;           // Split
};

struct KeyMap {
  std::string layout;       // "original", "diffusers", "comfyui", ...
  std::vector<Rule> rules;  // first rule whose engine pattern matches wins
  // Key patterns the layout stores that the engine never reads (the Wan CLIP checkpoint's text
  // tower, read by the image encoder's visual tower only): consumed by name, listed in
  // Plan::ignored_keys, never a silent skip of anything else.
  std::vector<std::string> ignored;
};

// A rule resolved for one engine name: the concrete keys.
struct ResolvedRule {
  const Rule* rule;
  std::vector<std::string> keys;
};

// Matches `name` against `pattern`; fills captures. Exposed for tests.
bool match_pattern(const std::string& pattern, const std::string& name, std::map<std::string, std::string>* caps);
std::string substitute(const std::string& pattern, const std::map<std::string, std::string>& caps);

// The first rule of `map` matching engine name `name`, with its keys filled in.
std::optional<ResolvedRule> resolve(const KeyMap& map, const std::string& name);

// Builders for common table shapes.
Rule key_rule(std::string engine, std::string key);                 // Identity, one key
Rule alias_rule(std::string engine, std::vector<std::string> keys);  // Identity, first present
// Prefixes every rule's key patterns (e.g. ComfyUI's "model.diffusion_model.").
KeyMap with_key_prefix(KeyMap map, const std::string& prefix, const std::string& layout);

}  // namespace vidax::translate
