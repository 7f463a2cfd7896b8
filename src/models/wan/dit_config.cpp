#include "models/wan/dit_config.h"

#include "core/error.h"
#include "models/wan/checkpoint_keys.h"
#include "translate/config_fields.h"

namespace vidax::wan {

namespace {

// The model-defining fields, as the one config parser (models/wan/checkpoint_keys.h) reads them.
DiTConfig from_shape(const translate::wan::DitConfig& t) {
  DiTConfig c;
  c.model_type = t.model_type;
  c.patch_size = t.patch_size;
  c.text_len = t.text_len;
  c.in_dim = t.in_dim;
  c.dim = t.dim;
  c.ffn_dim = t.ffn_dim;
  c.freq_dim = t.freq_dim;
  c.text_dim = t.text_dim;
  c.out_dim = t.out_dim;
  c.num_heads = t.num_heads;
  c.num_layers = t.num_layers;
  c.qk_norm = t.qk_norm;
  c.cross_attn_norm = t.cross_attn_norm;
  c.eps = t.eps;
  c.vace_layers = t.vace_layers;
  c.vace_in_dim = t.vace_in_dim;
  return c;
}

int64_t read_int(const nlohmann::json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  VIDAX_CHECK(it->is_number_integer(), "Wan DiT config: field '" << key << "' has the wrong type (" << it->dump() << ")");
  return it->get<int64_t>();
}

}  // namespace

std::array<int64_t, 3> DiTConfig::rope_axis_dims() const {
  const int64_t d = head_dim();
  return {d - 4 * (d / 6), 2 * (d / 6), 2 * (d / 6)};
}

DiTConfig DiTConfig::from_json(const nlohmann::json& j) {
  DiTConfig c = from_shape(translate::wan::DitConfig::from_json(j));
  if (translate::wan::is_diffusers_dit_config(j)) {
    c.layout = DiTLayout::Diffusers;
    c.rope_max_seq_len = read_int(j, "rope_max_seq_len", c.rope_max_seq_len);
    c.image_dim = read_int(j, "image_dim", c.image_dim);
  } else {
    c.layout = DiTLayout::Original;
    if (j.contains("window_size") && j["window_size"].is_array()) {
      for (const auto& w : j["window_size"])
        VIDAX_CHECK(translate::strict_get<int64_t>(w, "window_size") == -1, "Wan DiT config: local attention window_size "
                                                << j["window_size"].dump() << " is not supported (only (-1, -1))");
    }
  }
  c.validate();
  return c;
}

DiTConfig DiTConfig::preset(const std::string& name) {
  if (name == "wan2.1-t2v-1.3b") return from_shape(translate::wan::DitConfig::t2v_1_3b());
  if (name == "wan2.1-t2v-14b") return from_shape(translate::wan::DitConfig::t2v_14b());
  throw Error(msg() << "unknown Wan DiT preset '" << name << "' (known: wan2.1-t2v-1.3b, wan2.1-t2v-14b)");
}

void DiTConfig::validate() const {
  VIDAX_CHECK(model_type == "t2v" || model_type == "i2v" || model_type == "flf2v" || model_type == "ti2v" ||
                  model_type == "vace",
              "Wan DiT: model_type '" << model_type << "' is not implemented (t2v, i2v, flf2v, ti2v, vace)");
  if (is_vace()) {
    VIDAX_CHECK(!vace_layers.empty() && vace_layers[0] == 0 && vace_in_dim > 0,
                "Wan DiT: a vace model needs vace_layers starting at 0 and vace_in_dim > 0");
    for (size_t i = 0; i < vace_layers.size(); ++i)
      VIDAX_CHECK(vace_layers[i] < num_layers && (i == 0 || vace_layers[i] > vace_layers[i - 1]),
                  "Wan DiT: vace_layers must be increasing layers of 0.." << num_layers - 1);
  } else {
    VIDAX_CHECK(vace_layers.empty() && vace_in_dim == 0, "Wan DiT: vace_layers / vace_in_dim on a " << model_type
                                                                                                 << " model");
  }
  // WanI2VCrossAttention splits the context at the hard-coded T5_CONTEXT_TOKEN_NUMBER = 512.
  VIDAX_CHECK(!has_image_input() || text_len == 512,
              "Wan DiT: " << model_type << " needs text_len 512 (the reference splits image and text rows at 512), got "
                          << text_len);
  VIDAX_CHECK(dim > 0 && num_heads > 0 && dim % num_heads == 0,
              "Wan DiT: dim " << dim << " is not a multiple of num_heads " << num_heads);
  VIDAX_CHECK(head_dim() % 2 == 0, "Wan DiT: head dim " << head_dim() << " must be even (RoPE pairs)");
  VIDAX_CHECK(freq_dim > 0 && freq_dim % 2 == 0, "Wan DiT: freq_dim " << freq_dim << " must be even");
  for (int64_t p : patch_size) VIDAX_CHECK(p >= 1, "Wan DiT: patch_size entries must be >= 1");
  VIDAX_CHECK(in_dim > 0 && out_dim > 0 && ffn_dim > 0 && text_dim > 0 && text_len > 0 && num_layers >= 0,
              "Wan DiT: sizes must be positive (in_dim " << in_dim << ", out_dim " << out_dim << ", ffn_dim "
                                                         << ffn_dim << ", text_dim " << text_dim << ", text_len "
                                                         << text_len << ", num_layers " << num_layers << ")");
  VIDAX_CHECK(eps > 0, "Wan DiT: eps must be > 0");
  VIDAX_CHECK(rope_max_seq_len > 0, "Wan DiT: rope_max_seq_len must be > 0");
}

nlohmann::json DiTConfig::to_json() const {
  nlohmann::json j = {{"model_type", model_type}, {"patch_size", patch_size}, {"text_len", text_len}, {"in_dim", in_dim},
          {"dim", dim}, {"ffn_dim", ffn_dim}, {"freq_dim", freq_dim}, {"text_dim", text_dim},
          {"out_dim", out_dim}, {"num_heads", num_heads}, {"num_layers", num_layers},
          {"window_size", {-1, -1}}, {"qk_norm", qk_norm}, {"cross_attn_norm", cross_attn_norm}, {"eps", eps}};
  if (is_vace()) {
    j["vace_layers"] = vace_layers;
    j["vace_in_dim"] = vace_in_dim;
  }
  return j;
}

}  // namespace vidax::wan
